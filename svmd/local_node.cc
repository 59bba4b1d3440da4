#include "svmd/local_node.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <poll.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "svmd/liveness.h"
#include "svmd/wake_probe.h"

extern char** environ;

namespace svm::svmd {
namespace {

// How often a launch that waits for its child's exec looks whether the
// child was stopped before it.
constexpr int kExecLookMs = 20;

}  // namespace

void LineSplitter::Feed(const char* p, size_t n, const Sink& sink) {
  while (n > 0) {
    const char* nl = static_cast<const char*>(memchr(p, '\n', n));
    size_t take = nl ? size_t(nl - p) + 1 : n;
    size_t room = kMax - partial_.size();  // partial_ never reaches kMax
    if (take > room) {
      take = room;
      nl = nullptr;
    }
    partial_.append(p, take);
    p += take;
    n -= take;
    if (nl) {
      sink(partial_);
      partial_.clear();
    } else if (partial_.size() >= kMax) {
      partial_.push_back('\n');
      sink(partial_);
      partial_.clear();
    }
  }
}

void LineSplitter::Flush(const Sink& sink) {
  if (partial_.empty()) return;
  partial_.push_back('\n');
  sink(partial_);
  partial_.clear();
}

const char* ToString(NodeState s) {
  switch (s) {
    case NodeState::kStarting: return "starting";
    case NodeState::kRunning: return "running";
    case NodeState::kExited: return "exited";
    case NodeState::kFinished: return "finished";
  }
  return "?";
}

LocalNode::~LocalNode() {
  if (pid_ > 0 && !exited()) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int ws;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
  }
}

std::vector<std::vector<int>> DealCpus(const std::vector<int>& cpus, uint32_t count) {
  std::vector<std::vector<int>> shares(count);
  if (cpus.empty() || count == 0) return shares;
  if (count >= cpus.size()) {
    for (uint32_t i = 0; i < count; ++i) shares[i].push_back(cpus[i % cpus.size()]);
  } else {
    for (size_t k = 0; k < cpus.size(); ++k) shares[k * count / cpus.size()].push_back(cpus[k]);
  }
  return shares;
}

Status CpuShares(uint32_t count, std::vector<cpu_set_t>* shares) {
  cpu_set_t mine;
  if (::sched_getaffinity(0, sizeof(mine), &mine) != 0) return Status::Errno("sched_getaffinity", errno);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  shares->clear();
  for (const std::vector<int>& share : DealCpus(cpus, count)) {
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c : share) CPU_SET(c, &s);
    shares->push_back(s);
  }
  return Status::Ok();
}

std::vector<std::string> HostEnv(uint32_t count, bool pinned) {
  cpu_set_t mine;
  const int cpus = ::sched_getaffinity(0, sizeof(mine), &mine) == 0 ? CPU_COUNT(&mine) : 0;
  std::vector<std::string> e = {"SVM_HOST_NODES=" + std::to_string(count)};
  if (cpus > 0) e.push_back("SVM_HOST_CPUS=" + std::to_string(cpus));
  // Only pinned nodes weigh it (a few ms, so not for every job, nor for a
  // launcher that starts none here).
  if (pinned && count > 0 && cpus > 1) {
    if (const uint64_t ns = MeasureWakeUpNs(mine); ns > 0) e.push_back("SVM_HOST_WAKE_NS=" + std::to_string(ns));
  }
  return e;
}

Status LocalNode::Start(const SpawnSpec& spec) {
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int outp[2], errp[2], inp[2] = {-1, -1}, report[2];
  if (pipe2(outp, O_CLOEXEC) != 0) return Status::Errno("pipe", errno);
  UniqueFd out_r(outp[0]), out_w(outp[1]);
  if (pipe2(errp, O_CLOEXEC) != 0) return Status::Errno("pipe", errno);
  UniqueFd err_r(errp[0]), err_w(errp[1]);
  UniqueFd in_r, in_w;
  if (spec.stdin_pipe) {
    if (pipe2(inp, O_CLOEXEC) != 0) return Status::Errno("pipe", errno);
    in_r.reset(inp[0]);
    in_w.reset(inp[1]);
  } else {
    in_r.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  if (pipe2(report, O_CLOEXEC) != 0) return Status::Errno("pipe", errno);
  UniqueFd rep_r(report[0]), rep_w(report[1]);
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  int keep = spec.inherit_fd;
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return Status::Errno("fork", errno);
  if (pid == 0) {
    int err = 0;
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the launcher already died
    int pers = ::personality(0xffffffff);
    if (pers != -1) ::personality(static_cast<unsigned long>(pers) | ADDR_NO_RANDOMIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) ::sigaction(s, &sa, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(in_r.get(), 0) < 0 || ::dup2(out_w.get(), 1) < 0 || ::dup2(err_w.get(), 2) < 0) err = errno;
    if (err == 0 && keep >= 0) {
      int fl = ::fcntl(keep, F_GETFD);
      if (fl < 0 || ::fcntl(keep, F_SETFD, fl & ~FD_CLOEXEC) < 0) err = errno;
    }
    if (err == 0 && cwd != nullptr && ::chdir(cwd) != 0) err = errno;
    if (err == 0 && spec.cpus && ::sched_setaffinity(0, sizeof(cpu_set_t), &*spec.cpus) != 0) err = errno;
    if (err == 0) {
      ::execve(argv[0], argv.data(), envp.data());
      err = errno;
    }
    ssize_t w = ::write(rep_w.get(), &err, sizeof(err));
    (void)w;
    ::_exit(127);
  }
  pid_ = pid;
  ::setpgid(pid, pid);  // also here, so the group exists before any kill(-pid)
  rep_w.reset();
  out_w.reset();
  err_w.reset();
  in_r.reset();
  // The report pipe closes at the child's exec, or brings the errno that
  // stopped it. A child stopped before its exec (SIGSTOP, a debugger) would
  // hold this read, and the whole launcher, for ever: stop waiting then, and
  // let the job's liveness check see the stopped node.
  int child_err = 0;
  ssize_t r = 0;
  for (;;) {
    pollfd p{rep_r.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, kExecLookMs);
    if (ready < 0 && errno != EINTR) return Status::Errno("poll", errno);
    if (ready > 0) {
      while ((r = ::read(rep_r.get(), &child_err, sizeof(child_err))) < 0 && errno == EINTR) {
      }
      break;
    }
    // Stopped only: a child in state D (loading the program) still execs
    // or reports why not.
    const char state = ready == 0 ? ProcessState(pid) : 0;
    if (state == 'T' || state == 't') break;
  }
  pidfd_.reset(int(::syscall(SYS_pidfd_open, pid, 0)));
  if (r > 0) {
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    wait_status_ = 127 << 8;
    state_ = NodeState::kFinished;
    pidfd_.reset();
    return Status::Errno("cannot execute " + spec.argv[0], child_err);
  }
  if (!pidfd_.valid()) {
    Status s = Status::Errno("pidfd_open", errno);
    Signal(SIGKILL);
    return s;
  }
  SetNonblocking(out_r.get(), true);
  SetNonblocking(err_r.get(), true);
  out_ = std::move(out_r);
  err_ = std::move(err_r);
  in_ = std::move(in_w);
  state_ = NodeState::kRunning;
  return Status::Ok();
}

void LocalNode::ReadOutput(int fd) {
  UniqueFd* which = fd == out_.get() ? &out_ : fd == err_.get() ? &err_ : nullptr;
  if (which == nullptr || fd < 0) return;
  int stream = which == &out_ ? 1 : 2;
  LineSplitter& lines = stream == 1 ? out_lines_ : err_lines_;
  auto sink = [&](std::string_view line) { sink_(id_, stream, line); };
  char buf[65536];
  for (int rounds = 0; rounds < 16; ++rounds) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      lines.Feed(buf, size_t(n), sink);
      continue;
    }
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0 && errno == EAGAIN) return;
    lines.Flush(sink);  // EOF or error
    which->reset();
    MaybeFinish();
    return;
  }
}

void LocalNode::Reap() {
  if (exited() || pid_ <= 0) return;
  int ws = 0;
  pid_t r = ::waitpid(pid_, &ws, WNOHANG);
  if (r != pid_) return;
  wait_status_ = ws;
  state_ = NodeState::kExited;
  pidfd_.reset();
  ::kill(-pid_, SIGKILL);  // stragglers of the group would hold the pipes open
  MaybeFinish();
}

void LocalNode::Signal(int sig) {
  if (pid_ <= 0 || exited()) return;
  ::kill(-pid_, sig);
  ::kill(pid_, sig);
}

void LocalNode::MaybeFinish() {
  if (state_ == NodeState::kExited && !out_.valid() && !err_.valid()) state_ = NodeState::kFinished;
}

Status ResolveProgram(const std::string& program, const std::string& cwd, std::string* path) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.empty()) return Status::InvalidArgument("no program given");
  if (program.find('/') != std::string::npos) {
    std::string p = program[0] == '/' || cwd.empty() ? program : cwd + "/" + program;
    if (!executable(p)) return Status::InvalidArgument(program + ": not an executable file");
    *path = p;
    return Status::Ok();
  }
  const char* env = std::getenv("PATH");
  std::string dirs = env ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string p = dir + "/" + program;
    if (executable(p)) {
      *path = p;
      return Status::Ok();
    }
    start = end + 1;
  }
  return Status::InvalidArgument(program + ": command not found in PATH");
}

std::vector<std::string> CleanEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view v(*e);
    if (v.starts_with("SVM_") || v.starts_with("LD_PRELOAD=") || v.starts_with("LD_BIND_NOW=")) continue;
    out.emplace_back(v);
  }
  return out;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

std::string DescribeWaitStatus(int ws) {
  if (WIFEXITED(ws)) return "exited with status " + std::to_string(WEXITSTATUS(ws));
  if (WIFSIGNALED(ws))
    return "killed by signal " + std::to_string(WTERMSIG(ws)) + " (" + SignalName(WTERMSIG(ws)) + ")";
  return "ended with wait status " + std::to_string(ws);
}

}  // namespace svm::svmd
