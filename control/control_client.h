// svm_control: the node side of the job's control connection.
//
// A node (the libsvm runtime, or tests/launch/fake_node) calls Rendezvous()
// once at start-up: it connects to svmrun's control socket (SVM_CONTROL),
// proves the job key (auth.h), sends HELLO{node id, NIC address} and blocks
// until svmrun sends PEERS, the NIC address of every node. Afterwards a
// reader thread watches the connection: a TERMINATE from svmrun, or the
// connection dropping (svmrun gone), makes TerminateFd() readable and runs
// the OnTerminate callback once. ReportExit() tells svmrun that the program
// called exit(status): svmrun ends the whole job with that status.
//
// Thread-safety: Rendezvous once, from one thread; afterwards ReportExit,
// TerminateRequested and TerminateFd may be called from any thread. The
// callback runs on the reader thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "control/frame.h"
#include "util/auth.h"
#include "util/net.h"
#include "util/status.h"

namespace svm::svmd {

// A node whose runtime could not start (or join the job) exits with this
// status; svmrun ends the job with it (svmd/README.md, "Exit status").
inline constexpr int kStartupFailedStatus = 125;
// A node that lost svmrun (silent past the liveness timeout) leaves at once
// with this status: nobody is left to report to, and its peers leave too.
inline constexpr int kLostSvmrunStatus = 255;
// svmrun pings only once every host of the job has started: until the first
// PING the silence allowed is this much longer.
inline constexpr int64_t kFirstPingGraceMs = 30000;
// A node's connection to svmrun (connect and handshake) waits at most the
// liveness timeout, but never less than this: a loaded host may take
// seconds to accept.
inline constexpr int64_t kMinConnectMs = 5000;

struct ControlConfig {
  uint32_t node_id = 0;
  uint32_t nodes = 1;
  std::string control_host;  // svmrun's control socket
  uint16_t control_port = 0;
  Key key{};                 // the job key
  uint32_t epoch = 0;        // SVM_JOB_EPOCH
  int64_t connect_timeout_ms = 30000;  // FromEnv: the liveness timeout, kMinConnectMs at least
  int64_t rendezvous_timeout_ms = 0;  // 0: wait for PEERS until TERMINATE or a drop
  // svmrun pings; silence this long (from the connection on, rendezvous
  // included) means svmrun is stopped or cut off: after PEERS the process
  // says so on stderr and _exits kLostSvmrunStatus (Rendezvous returns
  // kTimeout). 0: never.
  int64_t liveness_ms = 0;
  // Ask for the connection to be sealed (util/seal.h; SVM_SEAL=1): svmrun
  // sets it for jobs whose hosts talk over a network. svmrun may ask too.
  bool seal = false;

  // Reads SVM_NODE_ID, SVM_NODES, SVM_CONTROL, SVM_JOB_EPOCH,
  // SVM_LIVENESS_TIMEOUT (seconds, as svmrun's flag), SVM_SEAL and the key from
  // SVM_KEY_FD (an inherited descriptor; read and closed) or SVM_KEY_FILE (a
  // 0600 file). Call once per process: the key descriptor is consumed.
  static Status FromEnv(ControlConfig* out);
};

class ControlClient {
 public:
  ControlClient();
  ~ControlClient();  // closes the connection and joins the reader
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // On success *peers has `nodes` NIC addresses, indexed by node id.
  Status Rendezvous(const ControlConfig& cfg, std::string my_nic_address,
                    std::vector<std::string>* peers);
  // Sends EXIT{status} and waits (up to wait_ms) for svmrun's TERMINATE.
  // REQUIRES: Rendezvous succeeded.
  Status ReportExit(int status, int64_t wait_ms = 5000);

  // Readable (eventfd) once TERMINATE arrived or the connection dropped;
  // -1 before Rendezvous.
  int TerminateFd() const { return event_fd_.get(); }
  bool TerminateRequested() const { return terminated_.load(); }
  // Why the watch ended: "TERMINATE from svmrun" or the connection error.
  std::string TerminateReason() const;
  // Runs cb (on the reader thread) when the watch ends; at once if it has.
  void OnTerminate(std::function<void()> cb);
  // The connected control socket (-1 before Rendezvous), e.g. for LocalIp().
  int fd() const { return fd_.get(); }

 private:
  void ReaderLoop();
  void MarkTerminated(const std::string& why);
  Status Send(MsgType t, std::string_view body);

  ControlConfig cfg_;
  UniqueFd fd_;
  std::unique_ptr<Seal> seal_;  // set when the connection is sealed
  std::mutex send_mu_;  // the reader (PONG) and ReportExit both send
  UniqueFd event_fd_;
  std::thread reader_;
  std::atomic<bool> terminated_{false};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string reason_;                // GUARDED_BY(mu_)
  std::function<void()> callback_;    // GUARDED_BY(mu_)
};

// The process-wide client that the runtime uses (never destroyed).
ControlClient& DefaultControlClient();
Status Rendezvous(const ControlConfig& cfg, std::string my_nic_address,
                  std::vector<std::string>* peers);
Status ReportExit(int status);
int TerminateFd();
void OnTerminate(std::function<void()> cb);

}  // namespace svm::svmd
