// LocalNode: one node process started on this host (by svmrun for a local
// job, or by svmd for its share of a remote one).
//
// Launch: fork + exec with address randomisation off
// (personality(ADDR_NO_RANDOMIZE)), the node in its own process group,
// PR_SET_PDEATHSIG(SIGKILL) so it never outlives its launcher, default signal
// dispositions and mask, stdout/stderr on pipes that the launcher splits into
// lines, and stdin from a pipe (node 0) or /dev/null, optionally bound to a
// set of CPUs. Exit is watched through a pidfd. Teardown signals the whole
// group. Not thread-safe: one owner.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/net.h"
#include "util/status.h"

namespace svm::svmd {

// Splits a byte stream into lines ("...\n"); overlong lines are cut at kMax.
class LineSplitter {
 public:
  static constexpr size_t kMax = 64 * 1024;
  using Sink = std::function<void(std::string_view line)>;  // includes the '\n'
  void Feed(const char* p, size_t n, const Sink& sink);
  void Flush(const Sink& sink);  // a last line without '\n' gets one

 private:
  std::string partial_;
};

enum class NodeState { kStarting, kRunning, kExited, kFinished };
const char* ToString(NodeState s);

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0]: program as resolved by ResolveProgram
  std::vector<std::string> env;   // the complete environment
  std::string cwd;                // empty: the launcher's
  bool stdin_pipe = false;        // true: stdin is a pipe (stdin_fd()); else /dev/null
  int inherit_fd = -1;            // one more descriptor the node keeps (SVM_KEY_FD)
  std::optional<cpu_set_t> cpus;  // bind the node to these; none: the launcher's
};

// cpus dealt out to `count` node processes: a contiguous share each while
// there are enough (the first ones get one more when they do not divide
// evenly), else one CPU each, in turn.
std::vector<std::vector<int>> DealCpus(const std::vector<int>& cpus, uint32_t count);
// DealCpus over the CPUs this process may run on (--pin node).
Status CpuShares(uint32_t count, std::vector<cpu_set_t>* shares);
// What `count` node processes started here learn of their host:
// SVM_HOST_NODES=count, SVM_HOST_CPUS=the CPUs this process may run on,
// and for pinned nodes SVM_HOST_WAKE_NS=what waking a thread on another
// of them costs (MeasureWakeUpNs). The nodes' spin policy weighs them
// (libsvm/options.h ShouldSpin).
std::vector<std::string> HostEnv(uint32_t count, bool pinned);

class LocalNode {
 public:
  // stream is 1 (stdout) or 2 (stderr).
  using OutputSink = std::function<void(uint32_t node, int stream, std::string_view line)>;

  LocalNode(uint32_t id, OutputSink sink) : id_(id), sink_(std::move(sink)) {}
  ~LocalNode();  // SIGKILLs the group and reaps if still running
  LocalNode(const LocalNode&) = delete;
  LocalNode& operator=(const LocalNode&) = delete;

  // Forks and execs. A failed exec (no such program, ...) returns an error
  // and leaves the node kFinished with exit status 127.
  Status Start(const SpawnSpec& spec);

  // Descriptors to poll for reading (pidfd, stdout, stderr; -1 when closed).
  int pidfd() const { return pidfd_.get(); }
  int out_fd() const { return out_.get(); }
  int err_fd() const { return err_.get(); }
  int stdin_fd() const { return in_.get(); }
  void CloseStdin() { in_.reset(); }

  // Call when out_fd/err_fd is readable (or hung up).
  void ReadOutput(int fd);
  // Call when the pidfd is readable: reaps, then SIGKILLs leftovers of the
  // group so the pipes reach EOF.
  void Reap();
  // Signals the node's process group (no-op once finished).
  void Signal(int sig);

  uint32_t id() const { return id_; }
  pid_t pid() const { return pid_; }
  NodeState state() const { return state_; }
  bool exited() const { return state_ == NodeState::kExited || state_ == NodeState::kFinished; }
  // Exited and both output pipes drained.
  bool finished() const { return state_ == NodeState::kFinished; }
  // Valid once exited(): raw wait status (WIFEXITED/WIFSIGNALED).
  int wait_status() const { return wait_status_; }

 private:
  void MaybeFinish();

  uint32_t id_;
  OutputSink sink_;
  pid_t pid_ = -1;
  NodeState state_ = NodeState::kStarting;
  int wait_status_ = 0;
  UniqueFd pidfd_, out_, err_, in_;
  LineSplitter out_lines_, err_lines_;
};

// Program lookup as a shell does: a name with '/' is taken relative to cwd,
// otherwise searched in PATH. Fails unless it is an executable file.
Status ResolveProgram(const std::string& program, const std::string& cwd, std::string* path);
// This process's environment minus SVM_*, LD_PRELOAD and LD_BIND_NOW.
std::vector<std::string> CleanEnvironment();
// "SIGKILL" for 9; "signal 77" for unknown numbers.
std::string SignalName(int sig);
// Human form of a wait status: "exited with status 3", "killed by signal 9 (SIGKILL)".
std::string DescribeWaitStatus(int ws);

}  // namespace svm::svmd
