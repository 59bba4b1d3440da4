// Gate: where strangers wait. It owns a listening socket and, on one thread,
// takes each connection through the key proof (util/auth.h) and its first
// control frame, with a deadline per connection and a cap on how many wait
// at once (the oldest is dropped to make room). Only connections that proved
// the key and sent a well-formed frame reach the owner, through a callback
// on the gate's thread. Nothing a stranger sends can do more than cost one
// slot until its deadline: the gate holds no thread, no memory beyond a
// frame's header and never aborts.
//
// svmrun admits its nodes' control connections here (first frame HELLO),
// svmd the connections of svmrun (JOB).
//
// Thread-safety: Start and Stop from the owner's thread; the callback runs
// on the gate's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "control/frame.h"
#include "util/auth.h"
#include "util/net.h"

namespace svm::svmd {

struct Admitted {
  UniqueFd fd;  // blocking again
  std::string peer;
  Key session{};  // auth.h's per-connection secret
  Frame first;    // its first frame (any type; the owner checks it)
  // Set when the connection is sealed (either end asked for it): what
  // follows the first frame goes through it (util/seal.h).
  std::shared_ptr<Seal> seal;
};

struct GateOptions {
  Key key{};
  std::string what = "connection";  // for log lines: "control connection"
  size_t max_pending = 256;
  int64_t deadline_ms = 10000;  // from accept to the first frame
  // Body bytes accepted in the first frame (a HELLO is small; a JOB is not).
  uint32_t max_first_body = kMaxBody;
  // This end asks for sealing (the peer may ask for it too).
  bool want_seal = false;
};

class Gate {
 public:
  using OnAdmit = std::function<void(Admitted)>;
  Gate() = default;
  ~Gate() { Stop(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Takes listen_fd (a listening socket) and starts the thread.
  Status Start(UniqueFd listen_fd, GateOptions options, OnAdmit on_admit);
  // Closes the listener and every waiting connection; joins the thread.
  void Stop();

  // Connections refused so far (wrong key, garbage, deadline, overflow).
  uint64_t refused() const { return refused_.load(); }

 private:
  void Loop();

  UniqueFd listen_fd_, stop_fd_;
  GateOptions opt_;
  OnAdmit on_admit_;
  std::thread thread_;
  std::atomic<uint64_t> refused_{0};
};

}  // namespace svm::svmd
