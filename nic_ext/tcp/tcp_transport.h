// Tcp transport: a software NIC over TCP (DESIGN.md, nic_ext/ `tcp`).
//
// One NIC thread per node serves READ, WRITE, CAS, FAA and the lock table
// straight from registered memory (never calling the protocol), delivers
// SENDs to the receive queue and turns responses into completions. Socket
// I/O goes through io_uring; the wire format is frame.h. Endpoints are a full
// mesh of TCP connections (TCP_NODELAY), node i dialling every j < i. Each
// connection first proves the job key (util/auth.h: mutual HMAC-SHA256
// challenge-response, the dialler in the client role), then exchanges hellos
// naming both nodes and the job epoch. A peer that fails the proof never gets
// a NIC byte: the connection is closed and an spdlog error logged, and the
// acceptor goes on accepting until its setup deadline. With `seal`, everything
// after the proof (hellos included) travels in AES-GCM records keyed from the
// proof; a record that does not authenticate drops its connection as a
// malformed frame does. A malformed
// frame drops its connection with an spdlog error: the WRs pending on it
// complete kFlushed and the locks the peer held pass on.
//
// Injection knobs model a slower network for parameter studies. They act at
// the receiving NIC: a frame becomes visible latency_ns after its last byte
// arrived, behind earlier frames of the connection at bandwidth bytes/s, and
// the NIC thread spends per_message_ns handling each frame.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "nic_ext/transport.h"

namespace svm::nic {

struct TcpOptions {
  JobKey key{};                        // required; see JobKey
  NodeId self = 0;
  uint32_t num_nodes = 1;
  std::string listen = "127.0.0.1:0";  // host:port to bind; port 0 picks one
  uint32_t epoch = 0;                  // job epoch; frames of another epoch are malformed
  WaitPolicy recv_policy;              // for recv_queue()
  std::chrono::milliseconds setup_timeout{20'000};
  std::chrono::nanoseconds nic_spin{0};  // NIC thread polls its ring this long before sleeping
  // Seal every connection with AES-GCM after the key proof (util/seal.h;
  // sealed_stream.h): svmrun asks for it when the nodes are on several hosts.
  bool seal = false;
  // Injection, 0 = off.
  uint64_t latency_ns = 0;
  uint64_t bandwidth_bytes_per_s = 0;
  uint64_t per_message_ns = 0;
};

class TcpNic : public Nic {
 public:
  // Binds and listens on options.listen. Connect later dials the peers.
  static Status Create(const TcpOptions& options, std::unique_ptr<TcpNic>* out);

  // "host:port" actually bound (the port resolved when 0 was asked for).
  virtual std::string listen_address() const = 0;

 protected:
  using Nic::Nic;
};

}  // namespace svm::nic
