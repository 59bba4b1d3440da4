// Shm transport: the NIC of nodes that share one host (DESIGN.md, nic_ext/ `shm`).
//
// One-sided by construction. Each node's registered regions are memory files
// (MemoryRegion::fd) that every peer maps at Connect; READ and WRITE are
// copies, CAS and FAA atomics on the peer's words, LOCK and UNLOCK a ticket
// lock in the target's lock table: all run on the posting thread, and no
// thread of the target takes part. SENDs travel through one shared-memory ring
// per ordered pair of nodes (the receiver's memory, the sender's bytes); a
// full ring keeps the rest of a message in the sender's backlog (the ring's
// space is the credit). The receiving node drains its rings from whichever of
// its threads waits on a queue (QueueDriver), or from its NIC thread, which
// sleeps on a futex that senders ring only while nobody polls.
//
// Set-up: each node listens on an abstract unix socket ("unix:@NAME" is its
// address); node i dials every j < i. Each connection proves the job key
// (util/auth.h), then both sides send their offer: the epoch, the node ids,
// the region table and the memory files (SCM_RIGHTS). The connections stay
// open: a peer whose socket closes is gone, as is one that shut down.
//
// Memory is protected by the host: only processes that proved the key get a
// descriptor, and nothing on the wire leaves the host.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "nic_ext/transport.h"

namespace svm::nic {

struct ShmOptions {
  JobKey key{};  // required, as for tcp
  NodeId self = 0;
  uint32_t num_nodes = 1;
  uint32_t epoch = 0;      // job epoch; a peer of another epoch is refused
  WaitPolicy recv_policy;  // for recv_queue()
  std::chrono::milliseconds setup_timeout{20'000};
  // Bytes of each pair's message ring (a power of two); 0 picks by job size.
  uint32_t ring_bytes = 0;
  // The NIC thread polls this long after its last work before it sleeps.
  std::chrono::nanoseconds nic_spin{5'000};
};

// The ring size Create picks for ring_bytes 0: 8 MiB per node over its peers,
// between 64 KiB and 1 MiB.
uint32_t DefaultShmRingBytes(uint32_t num_nodes);

class ShmNic : public Nic {
 public:
  // Creates the NIC's shared control block and listens.
  static Status Create(const ShmOptions& options, std::unique_ptr<ShmNic>* out);

  // "unix:@NAME", the address peers dial.
  virtual std::string listen_address() const = 0;

  // What the datapath did, for tests and benchmarks: the proof that a READ
  // needs no thread of its target.
  struct Counters {
    uint64_t remote_ops = 0;  // READ/WRITE/WRITE_RUNS/CAS/FAA run on the posting thread
    uint64_t sends = 0;
    uint64_t wakeups = 0;     // futex wakes this node sent to peers
    uint64_t drained = 0;     // messages this node took from its rings
  };
  virtual Counters counters() const = 0;

 protected:
  using Nic::Nic;
};

}  // namespace svm::nic
