// svmrun: launches a job of N nodes: locally, through svmd daemons, or
// through host agents it starts over ssh or with srun (launch.h).
//
// Life of a job (JobPhase): kStarting (options checked, nodes launched) ->
// kRunning (rendezvous, stdio, exits) -> kTearingDown (a node failed, the
// program called exit(), a signal or --timeout: TERMINATE, then SIGTERM,
// then SIGKILL) -> kDone (every node reaped, every output drained).
// The exit status is the program's: the status a node reported with EXIT,
// else the first failure (128+signal for a killed node), else 0.
// Single-threaded event loop, plus the gate's thread (gate.h: strangers
// prove the job key and say HELLO there, or AGENT_HELLO for a host agent
// of ssh/slurm) and a stdin-forwarding thread.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "util/auth.h"
#include "control/frame.h"
#include "svmd/gate.h"
#include "svmd/job_dir.h"
#include "svmd/liveness.h"
#include "svmd/launch.h"
#include "svmd/local_node.h"
#include "util/net.h"
#include "svmd/options.h"
#include "svmd/preflight.h"
#ifdef SVM_HAVE_VERBS
#include "nic_ext/verbs/verbs_transport.h"
#endif
#include "svmd/stats_report.h"

namespace svm::svmd {
namespace {

constexpr int64_t kHandshakeMs = 10000;
constexpr int64_t kGraceMs = 2000;        // TERMINATE -> SIGTERM -> SIGKILL
constexpr int64_t kControlLossMs = 3000;  // a dropped control link, process still alive
constexpr int64_t kAgentStartMs = 60000;  // ssh/srun until every host's agent called back
constexpr int kLostStatus = 255;          // launcher-detected failure (lost node or host)

enum class JobPhase { kStarting, kRunning, kTearingDown, kDone };
const char* ToString(JobPhase p) {
  switch (p) {
    case JobPhase::kStarting: return "starting";
    case JobPhase::kRunning: return "running";
    case JobPhase::kTearingDown: return "tearing-down";
    case JobPhase::kDone: return "done";
  }
  return "?";
}

enum class HostState { kConnecting, kStarted, kClosed };
const char* ToString(HostState s) {
  switch (s) {
    case HostState::kConnecting: return "connecting";
    case HostState::kStarted: return "started";
    case HostState::kClosed: return "closed";
  }
  return "?";
}

struct Node {
  uint32_t id = 0;
  int host = -1;  // -1: local; else index into hosts_
  std::unique_ptr<LocalNode> local;
  UniqueFd control;
  std::shared_ptr<Seal> seal;  // set when the connection is sealed
  FrameReader control_in;
  bool helloed = false;
  std::string nic;
  bool exited = false;
  int64_t control_lost_at = 0;  // 0: not lost
  int64_t last_heard = 0;       // NowMs of its last control bytes (liveness.h)
  int64_t unresponsive_since = 0;  // before HELLO: since when /proc says it cannot answer
  bool dumping_core = false;       // said once: it crashed and writes its core
  std::string where() const;
};

struct Host {
  std::string spec, name;
  std::string what = "svmd at";  // for messages: "svmd at" or "the agent on"
  uint16_t port = kDefaultSvmdPort;
  UniqueFd fd;
  Key session{};  // an agent's connection secret
  std::shared_ptr<Seal> seal;  // set when the connection is sealed
  FrameReader in;
  std::mutex send_mu;  // main thread and stdin thread both send
  HostState state = HostState::kConnecting;
  int64_t last_heard = 0;  // NowMs of its last bytes (liveness.h)
  std::vector<uint32_t> nodes;
  Status Send(MsgType t, uint32_t epoch, std::string_view body) {
    std::lock_guard<std::mutex> l(send_mu);
    if (!fd.valid()) return Status::Closed("host closed");
    return SendFrame(fd.get(), t, epoch, body, seal ? &seal->out : nullptr);
  }
  void SetSeal(std::shared_ptr<Seal> s) {
    seal = std::move(s);
    in.set_opener(seal ? &seal->in : nullptr);
  }
};

struct Pending {  // an authenticated control connection and its HELLO
  UniqueFd fd;
  HelloMsg hello;
  std::shared_ptr<Seal> seal;
};
struct PendingAgent {  // a host agent that proved the job key (AGENT_HELLO)
  UniqueFd fd;
  AgentHelloMsg hello;
  Key session;
  std::shared_ptr<Seal> seal;
};
// A process that starts host agents (ssh to one host, or srun), and what it
// said: kept quiet until its agents call back, then forwarded.
struct Starter {
  AgentLaunch launch;
  std::unique_ptr<LocalNode> proc;
  std::vector<std::string> lines;  // stderr/stdout while starting
  bool started = false;            // its agents called back
};

class Job {
 public:
  Job(Options o, LaunchPlan plan, std::string preload, std::string program, Key admin_key)
      : o_(std::move(o)), plan_(std::move(plan)), preload_(std::move(preload)), program_(std::move(program)),
        admin_key_(admin_key) {}
  int Run();

 private:
  Status Setup();
  Status StartRemote();
  Status StartAgents();
  Status AwaitAgents(int64_t deadline);
  Status SendJob(Host& h, const Key& session);
  Status StartLocal();
  bool ReadsStdin(uint32_t node) const;
  std::vector<std::string> CommonEnv(bool local) const;
  void Admit(Admitted a);  // on the gate's thread
  void StdinLoop(std::vector<int> local_fds, std::vector<int> hosts);
  void Loop();
  void OnPending();
  void OnControl(Node& n);
  void OnHost(size_t h);
  void OnSignal();
  void NodeExited(Node& n, ExitKind kind, int value, const std::string& msg);
  void Teardown(int status, const std::string& why, bool graceful);
  void CheckTimers();
  // Pings what has not spoken lately and ends the job on a silence
  // (liveness.h); the time it next needs to run.
  int64_t CheckLiveness(int64_t now);
  void CloseHost(Host& h);
  void SignalAll(int sig);
  void Emit(uint32_t node, int stream, std::string_view line);
  // A job of several runtime nodes: each node joins (HELLO) before its
  // program runs, and node 0 runs main.
  bool RuntimeJob() const { return preload_ != "none" && o_.nodes > 1; }
  // Traffic between hosts is sealed (util/seal.h) unless --insecure-network.
  bool Sealed() const { return plan_.launcher != Launcher::kLocal && !o_.insecure_network; }
  Status SendTo(Node& n, MsgType t, std::string_view body) {
    return SendFrame(n.control.get(), t, epoch_, body, n.seal ? &n.seal->out : nullptr);
  }
  bool AllDone() const;
  void Shutdown();
  // started_ns: steady_clock (CLOCK_MONOTONIC, as the nodes' records) when
  // the nodes had been started.
  void ReportStats(int64_t started_ns, int64_t elapsed_ns);
  // A remote node's report (from its svmd) joins the local ones' directory.
  void SaveRemoteStats(const NodeStatsMsg& m);

  Options o_;
  LaunchPlan plan_;
  std::string preload_, program_;
  Key admin_key_;
  Key key_{};
  uint32_t epoch_ = 0;
  std::string cwd_;
  std::string stats_dir_;  // --stats: where the local nodes write their reports
  JobPhase phase_ = JobPhase::kStarting;
  int status_ = 0;
  bool have_status_ = false;
  bool peers_sent_ = false;
  int64_t timeout_at_ = 0, term_at_ = 0, kill_at_ = 0;
  int64_t liveness_ms_ = 0, ping_at_ = 0, next_liveness_ = 0;
  int64_t give_up_at_ = 0;  // hosts that never confirmed their nodes' end are let go
  std::vector<Node> nodes_;
  std::vector<std::unique_ptr<Host>> hosts_;
  UniqueFd listen_fd_, signal_fd_, pending_fd_, stop_fd_;
  uint16_t control_port_ = 0;
  Gate gate_;
  std::thread stdin_thread_;
  std::mutex mu_;
  std::deque<Pending> pending_;      // GUARDED_BY(mu_)
  std::deque<PendingAgent> agents_;  // GUARDED_BY(mu_)
  std::vector<Starter> starters_;
};

std::string Node::where() const { return local ? "pid " + std::to_string(local->pid()) : "remote"; }

std::string FormatSeconds(double s) {
  char b[32];
  snprintf(b, sizeof(b), "%g", s);
  return b;
}

std::string Hex(uint64_t v) {
  char b[32];
  snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::vector<std::string> Job::CommonEnv(bool local) const {
  std::vector<std::string> e = {
      "SVM_NODES=" + std::to_string(o_.nodes),
      "SVM_THREADS_PER_NODE=" + std::to_string(o_.threads_per_node),
      "SVM_PLACE=" + o_.place,
      "SVM_MODE=" + o_.mode,
      "SVM_FAULT=" + o_.fault,
      "SVM_WRITES=" + o_.writes,
      "SVM_TRANSPORT=" + o_.transport,
      "SVM_OFI_PROVIDER=" + o_.ofi_provider,
      "SVM_REGION_BASE=" + Hex(o_.region_base),
      "SVM_REGION_SIZE=" + std::to_string(o_.region_size),
      "SVM_HOME=" + o_.home,
      "SVM_PAGE_RUN=" + std::to_string(o_.page_run),
      "SVM_BARRIER_FANOUT=" + std::to_string(o_.barrier_fanout),
      "SVM_LOG_LEVEL=" + o_.log_level,
      "SVM_JOB_EPOCH=" + std::to_string(epoch_),
      // The same names and syntax as svmrun's twins (util/units.h).
      "SVM_NET_LATENCY=" + std::to_string(o_.net_latency_ns) + "ns",
      "SVM_NET_BANDWIDTH=" + std::to_string(o_.net_bandwidth) + "B",
      "SVM_PIN=" + o_.pin,  // for svmd, which binds its nodes as svmrun binds local ones
      "SVM_SPIN=" + o_.spin,
      LivenessEnv(o_.liveness_timeout_s),
      std::string("SVM_SEAL=") + (Sealed() ? "1" : "0"),
      "SVM_STALL_REPORT=" + FormatSeconds(o_.stall_report_s),
      "LD_BIND_NOW=1",
  };
  if (local) e.push_back("SVM_CONTROL=127.0.0.1:" + std::to_string(control_port_));
  // The nodes' environment is cleaned of SVM_*; these runtime knobs (no
  // svmrun flag) are the user's to set, and reach every node alike.
  for (const char* knob : {"SVM_SHOW_STATS", "SVM_NOTICE_RING", "SVM_MAX_SEND", "SVM_SHARE_GLOBALS",
                           "SVM_VERBOSE", "SVM_START_DELAY"})
    if (const char* v = getenv(knob)) e.push_back(std::string(knob) + "=" + v);
  if (preload_ != "none") e.push_back("LD_PRELOAD=" + preload_);
  return e;
}

Status Job::Setup() {
  Status s = GenerateKey(&key_);
  if (!s.ok()) return s;
  Key e;
  if (s = GenerateKey(&e); !s.ok()) return s;
  epoch_ = uint32_t(e[0]) | uint32_t(e[1]) << 8 | uint32_t(e[2]) << 16 | uint32_t(e[3]) << 24;
  cwd_ = std::filesystem::current_path().string();
  if (!o_.stats.empty() && o_.stats[0] != '/') o_.stats = cwd_ + "/" + o_.stats;
  if (!o_.stats.empty()) {
    // Each local node writes node-<id>.json here at the end of the job.
    if (s = MakeJobDir("svm-stats", &stats_dir_); !s.ok()) return s;
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts
  signal_fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_.valid()) return Status::Errno("signalfd", errno);
  ::signal(SIGPIPE, SIG_IGN);
  pending_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  stop_fd_.reset(eventfd(0, EFD_CLOEXEC));
  if (!pending_fd_.valid() || !stop_fd_.valid()) return Status::Errno("eventfd", errno);

  // Remote nodes and agents call back from other hosts: every address,
  // IPv6 and IPv4.
  s = Listen(plan_.launcher == Launcher::kLocal ? "127.0.0.1" : "", 0, &listen_fd_, &control_port_);
  if (!s.ok()) return s;
  nodes_.resize(o_.nodes);
  for (uint32_t i = 0; i < o_.nodes; ++i) {
    nodes_[i].id = i;
    nodes_[i].host = plan_.node_host[i];
  }
  const bool agents = plan_.launcher == Launcher::kSsh || plan_.launcher == Launcher::kSlurm;
  for (const LaunchHost& lh : plan_.hosts) {
    auto h = std::make_unique<Host>();
    h->name = lh.name;
    h->port = lh.port;
    h->spec = agents ? lh.name : JoinHostPort(lh.name, lh.port);
    if (agents) h->what = "the agent on";
    h->nodes = lh.nodes;
    hosts_.push_back(std::move(h));
  }
  liveness_ms_ = LivenessMs(o_.liveness_timeout_s);
  if (!o_.timeout_s) return Status::Ok();
  timeout_at_ = NowMs() + int64_t(std::ceil(o_.timeout_s * 1000));
  return Status::Ok();
}

Status Job::StartRemote() {
  for (auto& hp : hosts_) {
    Host& h = *hp;
    if (h.nodes.empty()) continue;
    std::string who = "host " + h.name + ":" + std::to_string(h.port);
    Status s = Connect(h.name, h.port, NowMs() + kHandshakeMs, &h.fd);
    if (!s.ok()) return Status::IoError(who + ": " + s.message());
    AuthResult auth;
    s = Authenticate(h.fd.get(), admin_key_, AuthRole::kClient, NowMs() + kHandshakeMs, Sealed(), &auth);
    if (!s.ok()) return Status::AuthFailed(who + ": " + s.ToString());
    if (auth.sealed) {
      std::unique_ptr<Seal> seal;
      if (s = Seal::Make(auth.session, AuthRole::kClient, &seal); !s.ok()) return s;
      h.SetSeal(std::move(seal));
    }
    if (s = SendJob(h, auth.session); !s.ok()) return s;
  }
  return Status::Ok();
}

// JOB to an svmd or agent; returns once it started the host's nodes.
Status Job::SendJob(Host& h, const Key& session) {
  const std::string who = "host " + h.spec;
  JobRequest req;
  req.wrapped_key = Xor(key_, session);
  req.nodes_total = o_.nodes;
  req.node_ids = h.nodes;
  req.argv = o_.program;
  if (!program_.empty()) req.argv[0] = program_;
  // The user's environment, then the job's settings over it.
  Status s = ExportedEnvironment(CleanEnvironment(), o_.env, getenv, &req.env);
  if (!s.ok()) return s;
  OverlayEnvironment(CommonEnv(false), &req.env);
  if (!o_.stats.empty()) req.env.push_back("SVM_STATS=" + o_.stats);
  req.cwd = cwd_;
  req.control = JoinHostPort(LocalIp(h.fd.get()), control_port_);
  req.stdin_node = o_.stdin_target == "all" ? kStdinAll
                   : o_.stdin_target == "none" ? kStdinNone
                                               : uint32_t(std::stoul(o_.stdin_target));
  if (s = h.Send(MsgType::kJob, epoch_, Encode(req)); !s.ok()) return Status::IoError(who + ": " + s.message());
  Frame f;
  if (s = RecvFrame(h.fd.get(), NowMs() + 30000, &f, h.seal ? &h.seal->in : nullptr); !s.ok())
    return Status::IoError(who + ": no answer to JOB: " + s.message());
  if (f.type == MsgType::kJobError) {
    std::vector<std::string> m;
    DecodeStrings(f.body, f.type, &m);
    return Status::InvalidArgument(who + " refused the job: " + (m.empty() ? "?" : m[0]));
  }
  if (f.type != MsgType::kJobStarted) return Status::Malformed(who + ": unexpected " + ToString(f.type));
  h.state = HostState::kStarted;
  h.last_heard = NowMs();
  SetNonblocking(h.fd.get(), false);
  spdlog::info("{}: {} nodes {}..{}", who, ToString(h.state), h.nodes.front(), h.nodes.back());
  return Status::Ok();
}

std::string ExeDir();

// ssh/srun start an agent on each host; each reads the job key from its
// stdin pipe and calls back (AGENT_HELLO); then each gets its JOB.
Status Job::StartAgents() {
  const AgentSpec spec{ExeDir() + "/svmd", control_port_, o_.log_level};
  std::vector<AgentLaunch> launches;
  Status s = plan_.launcher == Launcher::kSsh ? SshLaunches(plan_, o_.ssh, spec, &launches)
                                              : SlurmLaunches(plan_, spec, &launches);
  if (!s.ok()) return s;
  starters_.resize(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    Starter& st = starters_[i];
    st.launch = std::move(launches[i]);
    SpawnSpec sp;
    sp.argv = st.launch.argv;
    if (s = ResolveProgram(sp.argv[0], cwd_, &sp.argv[0]); !s.ok())
      return Status::InvalidArgument("--launcher " + std::string(ToString(plan_.launcher)) + ": " + s.message());
    sp.env = CleanEnvironment();
    sp.stdin_pipe = true;
    st.proc = std::make_unique<LocalNode>(uint32_t(i), [this](uint32_t k, int stream, std::string_view line) {
      Starter& me = starters_[k];
      if (me.started) WriteAll(stream == 2 ? 2 : 1, line.data(), line.size());
      else me.lines.emplace_back(line.substr(0, line.find_last_not_of("\r\n") + 1));
    });
    if (s = st.proc->Start(sp); !s.ok()) return Status::InvalidArgument(st.launch.what + ": " + s.message());
    // The key, on the pipe only: ssh and srun hand it to the agents' stdin.
    s = WriteAll(st.proc->stdin_fd(), key_.data(), key_.size());
    st.proc->CloseStdin();
    if (!s.ok()) spdlog::debug("{}: key: {}", st.launch.what, s.message());
    spdlog::debug("{}: pid {}", st.launch.what, st.proc->pid());
  }
  if (s = AwaitAgents(NowMs() + kAgentStartMs); !s.ok()) return s;
  for (auto& hp : hosts_) {
    if (hp->nodes.empty()) continue;
    if (s = SendJob(*hp, hp->session); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Job::AwaitAgents(int64_t deadline) {
  // The hosts among `of` whose agent has not called back, "a,b".
  auto missing = [this](const std::vector<size_t>& of) {
    std::string names;
    for (size_t h : of)
      if (!hosts_[h]->fd.valid()) names += (names.empty() ? "" : ",") + hosts_[h]->name;
    return names;
  };
  std::vector<size_t> all;
  for (size_t h = 0; h < hosts_.size(); ++h)
    if (!hosts_[h]->nodes.empty()) all.push_back(h);
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (PendingAgent& a : agents_) {
        size_t h = hosts_.size();
        for (size_t k : all)
          if (a.hello.index == UINT32_MAX ? hosts_[k]->name == a.hello.hostname : a.hello.index == k) h = k;
        if (h == hosts_.size() || hosts_[h]->fd.valid()) {
          spdlog::warn("dropped agent connection from {} ({}): {}", PeerString(a.fd.get()), a.hello.hostname,
                       h == hosts_.size() ? "not one of the job's hosts" : "that host has one already");
          continue;
        }
        spdlog::debug("agent for host {} is {} at {}", hosts_[h]->name, a.hello.hostname, PeerString(a.fd.get()));
        hosts_[h]->fd = std::move(a.fd);
        hosts_[h]->session = a.session;
        hosts_[h]->SetSeal(std::move(a.seal));
      }
      agents_.clear();
    }
    if (missing(all).empty()) break;
    // srun says at once which node it could not launch on, but takes its
    // time to end the step (and the others never see their key: srun
    // forwards stdin only once every task runs).
    for (Starter& st : starters_) {
      for (const std::string& line : st.lines) {
        const size_t at = line.find("failed on node ");
        if (st.launch.what != "srun" || at == std::string::npos) continue;
        const std::string host = line.substr(at + 15, line.find(':', at + 15) - at - 15);
        return Status::IoError("cannot start the nodes on host " + host + ": " + line);
      }
    }
    // A starter that ended before all its agents called back failed them.
    for (Starter& st : starters_) {
      if (!st.proc->finished() || missing(st.launch.hosts).empty()) continue;
      const std::string names = missing(st.launch.hosts);
      std::string why = st.launch.what + " " + DescribeWaitStatus(st.proc->wait_status());
      for (auto it = st.lines.rbegin(); it != st.lines.rend(); ++it)
        if (!it->empty()) {
          why += ": " + *it;
          break;
        }
      const char* hosts = names.find(',') == std::string::npos ? "host " : "hosts ";
      return Status::IoError("cannot start the nodes on " + std::string(hosts) + names + ": " + why);
    }
    const int64_t now = NowMs();
    if (now >= deadline)
      return Status::Timeout("cannot start the nodes on hosts " + missing(all) + ": no agent called back within " +
                             std::to_string(kAgentStartMs / 1000) + " s");
    std::vector<pollfd> fds = {{signal_fd_.get(), POLLIN, 0}, {pending_fd_.get(), POLLIN, 0}};
    for (Starter& st : starters_)
      for (int fd : {st.proc->pidfd(), st.proc->out_fd(), st.proc->err_fd()})
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), int(std::min<int64_t>(deadline - now, 1000))) < 0 && errno != EINTR)
      return Status::Errno("poll", errno);
    if (fds[0].revents) {
      signalfd_siginfo si;
      if (::read(signal_fd_.get(), &si, sizeof(si)) == sizeof(si))
        return Status::IoError("caught " + SignalName(int(si.ssi_signo)) + " while starting the nodes");
    }
    if (fds[1].revents) {
      uint64_t v;
      ssize_t r = ::read(pending_fd_.get(), &v, sizeof(v));
      (void)r;
    }
    for (Starter& st : starters_) {
      if (st.proc->pidfd() >= 0) st.proc->Reap();  // no-op while it runs
      for (int fd : {st.proc->out_fd(), st.proc->err_fd()}) {
        pollfd p{fd, POLLIN, 0};
        if (fd >= 0 && ::poll(&p, 1, 0) > 0) st.proc->ReadOutput(fd);
      }
    }
  }
  for (Starter& st : starters_) {
    st.started = true;
    for (const std::string& line : st.lines) spdlog::debug("{}: {}", st.launch.what, line);
    st.lines.clear();
  }
  return Status::Ok();
}

Status Job::StartLocal() {
  auto sink = [this](uint32_t node, int stream, std::string_view line) { Emit(node, stream, line); };
  std::vector<cpu_set_t> shares;
  const auto local = std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.host < 0; });
  if (o_.pin == "node") {
    if (Status s = CpuShares(uint32_t(local), &shares); !s.ok()) return s;
  }
  const std::vector<std::string> host = HostEnv(uint32_t(local), o_.pin == "node");
  size_t next_share = 0;
  for (Node& n : nodes_) {
    if (n.host >= 0) continue;
    SpawnSpec spec;
    if (!shares.empty()) spec.cpus = shares[next_share++];
    spec.argv = o_.program;
    spec.argv[0] = program_;
    spec.env = CleanEnvironment();
    if (Status s = ApplyExports(o_.env, getenv, &spec.env); !s.ok()) return s;
    OverlayEnvironment(CommonEnv(true), &spec.env);
    OverlayEnvironment(host, &spec.env);
    spec.env.push_back("SVM_NODE_ID=" + std::to_string(n.id));
    if (n.id == 0 && !o_.stats.empty()) spec.env.push_back("SVM_STATS=" + o_.stats);
    if (!stats_dir_.empty()) spec.env.push_back("SVM_STATS_DIR=" + stats_dir_);
    int kp[2];
    if (pipe2(kp, O_CLOEXEC) != 0) return Status::Errno("pipe", errno);
    UniqueFd key_r(kp[0]), key_w(kp[1]);
    if (Status s = WriteAll(key_w.get(), key_.data(), key_.size()); !s.ok()) return s;
    key_w.reset();
    spec.env.push_back("SVM_KEY_FD=" + std::to_string(key_r.get()));
    spec.inherit_fd = key_r.get();
    spec.stdin_pipe = ReadsStdin(n.id);
    n.local = std::make_unique<LocalNode>(n.id, sink);
    Status s = n.local->Start(spec);
    if (!s.ok()) return Status::InvalidArgument("node " + std::to_string(n.id) + ": " + s.message());
    spdlog::debug("node {}: pid {}", n.id, n.local->pid());
  }
  return Status::Ok();
}

void Job::Admit(Admitted a) {
  const Frame& f = a.first;
  HelloMsg hello;
  Status s;
  if (f.type == MsgType::kAgentHello) {
    // A host agent calling back (ssh/slurm); it knows the key, not the epoch.
    PendingAgent pa{std::move(a.fd), {}, a.session, a.seal};
    if (plan_.launcher != Launcher::kSsh && plan_.launcher != Launcher::kSlurm)
      s = Status::Malformed("AGENT_HELLO, but this job has no agents");
    else
      s = Decode(f.body, &pa.hello);
    if (!s.ok()) {
      spdlog::warn("dropped agent connection from {}: {}", a.peer, s.ToString());
      return;
    }
    std::lock_guard<std::mutex> l(mu_);
    agents_.push_back(std::move(pa));
    uint64_t one = 1;
    ssize_t w = ::write(pending_fd_.get(), &one, sizeof(one));
    (void)w;
    return;
  }
  if (f.epoch != epoch_) s = Status::Malformed("wrong job epoch");
  else if (f.type != MsgType::kHello) s = Status::Malformed(std::string("expected HELLO, got ") + ToString(f.type));
  else s = Decode(f.body, &hello);
  if (!s.ok()) {
    spdlog::warn("dropped control connection from {}: {}", a.peer, s.ToString());
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  pending_.push_back(Pending{std::move(a.fd), std::move(hello), std::move(a.seal)});
  uint64_t one = 1;
  ssize_t w = ::write(pending_fd_.get(), &one, sizeof(one));
  (void)w;
}

bool Job::ReadsStdin(uint32_t node) const {
  return o_.stdin_target == "all" || o_.stdin_target == std::to_string(node);
}

void Job::StdinLoop(std::vector<int> local_fds, std::vector<int> hosts) {
  std::vector<UniqueFd> sinks;
  for (int fd : local_fds) sinks.emplace_back(fd);
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{0, POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents) return;
    ssize_t n = (p[0].revents & POLLNVAL) ? 0 : ::read(0, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    bool anyone = false;  // a node that is gone reads no more
    for (UniqueFd& sink : sinks)
      if (sink.valid() && !WriteAll(sink.get(), buf, size_t(n)).ok()) sink.reset();
    for (int& h : hosts)
      if (h >= 0 && !hosts_[size_t(h)]->Send(MsgType::kStdin, epoch_, std::string_view(buf, size_t(n))).ok()) h = -1;
    for (UniqueFd& sink : sinks) anyone |= sink.valid();
    for (int h : hosts) anyone |= h >= 0;
    if (!anyone) return;
  }
  for (int h : hosts)
    if (h >= 0) hosts_[size_t(h)]->Send(MsgType::kStdinEof, epoch_, "");
}

void Job::Emit(uint32_t node, int stream, std::string_view line) {
  int fd = stream == 2 ? 2 : 1;
  if (o_.tag_output) {
    std::string s = "[n" + std::to_string(node) + "] ";
    s.append(line);
    WriteAll(fd, s.data(), s.size());
  } else {
    WriteAll(fd, line.data(), line.size());
  }
}

void Job::SignalAll(int sig) {
  for (Node& n : nodes_)
    if (n.local && !n.local->exited()) n.local->Signal(sig);
  for (auto& h : hosts_)
    if (h->state == HostState::kStarted) h->Send(MsgType::kKill, epoch_, EncodeI32(sig));
}

void Job::Teardown(int status, const std::string& why, bool graceful) {
  if (phase_ == JobPhase::kTearingDown || phase_ == JobPhase::kDone) return;
  phase_ = JobPhase::kTearingDown;
  if (!have_status_) {
    status_ = status;
    have_status_ = true;
  }
  if (!why.empty()) spdlog::error("{}", why);
  for (Node& n : nodes_)
    if (n.control.valid()) SendTo(n, MsgType::kTerminate, "");
  int64_t now = NowMs();
  if (graceful) {
    term_at_ = now + kGraceMs;
    kill_at_ = now + 2 * kGraceMs;
  } else {
    SignalAll(SIGTERM);
    term_at_ = 0;
    kill_at_ = now + kGraceMs;
  }
}

void Job::NodeExited(Node& n, ExitKind kind, int value, const std::string& msg) {
  if (n.exited) return;
  n.exited = true;
  n.control_lost_at = 0;
  spdlog::debug("node {}: {} {}", n.id, ToString(kind), value);
  if (phase_ != JobPhase::kRunning) return;  // a victim of the teardown
  bool others = false;
  for (const Node& m : nodes_) others |= !m.exited;
  std::string host = n.host >= 0 ? " on " + hosts_[size_t(n.host)]->name : "";
  const std::string who = "node " + std::to_string(n.id) + host;
  if (RuntimeJob() && kind == ExitKind::kExited && !n.helloed) {
    // Its runtime said why (kStartupFailedStatus), or never ran: the
    // program ran alone, without svm.
    Teardown(kStartupFailedStatus,
             value == kStartupFailedStatus
                 ? who + ": the svm runtime failed to start (see above); ending the job"
                 : who + " ended (status " + std::to_string(value) +
                       ") without joining the job: the svm runtime did not run in it (LD_PRELOAD "
                       "not honoured: a statically linked or setuid program, or a wrapper that "
                       "clears the environment?)",
             false);
    return;
  }
  switch (kind) {
    case ExitKind::kStartFailed:
      Teardown(127, "node " + std::to_string(n.id) + host + ": " + msg, false);
      return;
    case ExitKind::kUnresponsive:  // svmd saw it in /proc, joined or not
      Teardown(kLostStatus, who + ": " + msg + "; ending the job", false);
      return;
    case ExitKind::kSignaled:
      Teardown(128 + value,
               "node " + std::to_string(n.id) + " (" + n.where() + host + ") was killed by signal " +
                   std::to_string(value) + " (" + SignalName(value) + ")" +
                   (others ? "; ending the job" : ""),
               false);
      return;
    case ExitKind::kExited:
      // Graceful: the others get TERMINATE and a grace period to finish.
      if (value != 0) {
        Teardown(value,
                 others ? "node " + std::to_string(n.id) + host + " exited with status " +
                              std::to_string(value) + "; ending the job"
                        : "",
                 true);
      } else if (RuntimeJob() && others) {
        // Without exit() (_exit, a wrapper's own exit...): the program is
        // over on node 0, a node is missing anywhere else.
        if (n.id == 0) {
          spdlog::info("node 0 ended without exit() (status 0); ending the job");
          Teardown(0, "", true);
        } else {
          Teardown(kLostStatus, who + " ended (status 0) while the job ran; ending the job", false);
        }
      }
      return;
  }
}

void Job::OnPending() {
  uint64_t v;
  ssize_t r = ::read(pending_fd_.get(), &v, sizeof(v));
  (void)r;
  std::deque<Pending> got;
  {
    std::lock_guard<std::mutex> l(mu_);
    got.swap(pending_);
  }
  for (Pending& p : got) {
    uint32_t id = p.hello.node;
    if (id >= nodes_.size() || nodes_[id].helloed) {
      spdlog::warn("dropped control connection from {}: HELLO for node {} ({})", PeerString(p.fd.get()), id,
                   id >= nodes_.size() ? "no such node" : "already connected");
      continue;
    }
    Node& n = nodes_[id];
    n.control = std::move(p.fd);
    n.seal = std::move(p.seal);
    n.control_in.set_opener(n.seal ? &n.seal->in : nullptr);
    SetNonblocking(n.control.get(), true);
    n.helloed = true;
    n.last_heard = NowMs();
    n.nic = p.hello.nic_address;
    spdlog::debug("node {}: HELLO, NIC address {}", id, n.nic);
    if (phase_ != JobPhase::kRunning) SendTo(n, MsgType::kTerminate, "");
  }
  bool all = true;
  for (const Node& n : nodes_) all &= n.helloed;
  if (all && !peers_sent_ && phase_ == JobPhase::kRunning) {
    peers_sent_ = true;
    std::vector<std::string> addrs;
    for (const Node& n : nodes_) addrs.push_back(n.nic);
    std::string body = EncodeStrings(addrs);
    for (Node& n : nodes_)
      if (n.control.valid()) SendTo(n, MsgType::kPeers, body);
    spdlog::info("rendezvous complete: {} nodes", nodes_.size());
  }
}

void Job::OnControl(Node& n) {
  char buf[4096];
  for (;;) {
    ssize_t r = ::recv(n.control.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      n.control_in.Append(buf, size_t(r));
      n.last_heard = NowMs();
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) break;
    // EOF or error: the node's runtime is gone; its process may follow.
    n.control.reset();
    if (!n.exited) n.control_lost_at = NowMs() + kControlLossMs;
    break;
  }
  Frame f;
  Status err;
  while (n.control_in.Next(&f, &err)) {
    if (f.epoch != epoch_) {
      err = Status::Malformed("wrong epoch");
      break;
    }
    if (f.type == MsgType::kPong) continue;
    if (f.type == MsgType::kExit) {
      int32_t st = 0;
      if (err = DecodeI32(f.body, f.type, &st); !err.ok()) break;
      spdlog::info("node {} reported exit({})", n.id, st);
      if (phase_ == JobPhase::kRunning) {
        status_ = st & 0xff;
        have_status_ = true;
        Teardown(status_, "", true);
      } else if (n.control.valid()) {
        SendTo(n, MsgType::kTerminate, "");
      }
    } else {
      err = Status::Malformed(std::string("unexpected ") + ToString(f.type) + " from a node");
      break;
    }
  }
  if (!err.ok()) {
    spdlog::error("node {}: control connection: {}", n.id, err.ToString());
    n.control.reset();
    if (!n.exited) n.control_lost_at = NowMs();
  }
}

void Job::OnHost(size_t hi) {
  Host& h = *hosts_[hi];
  char buf[65536];
  bool closed = false;
  for (;;) {
    ssize_t r = ::recv(h.fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      h.in.Append(buf, size_t(r));
      h.last_heard = NowMs();
      if (r < ssize_t(sizeof(buf))) break;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) break;
    closed = true;
    break;
  }
  Frame f;
  Status err;
  while (h.in.Next(&f, &err)) {
    if (f.type == MsgType::kPong) continue;
    if (f.type == MsgType::kOutput) {
      OutputMsg m;
      if (err = Decode(f.body, &m); !err.ok()) break;
      if (m.node < nodes_.size()) Emit(m.node, m.stream, m.data);
    } else if (f.type == MsgType::kNodeStats) {
      NodeStatsMsg m;
      if (err = Decode(f.body, &m); !err.ok()) break;
      if (m.node >= nodes_.size() || nodes_[m.node].host != int(hi)) {
        err = Status::Malformed("NODE_STATS for a node not on this host");
        break;
      }
      SaveRemoteStats(m);
    } else if (f.type == MsgType::kNodeExit) {
      NodeExitMsg m;
      if (err = Decode(f.body, &m); !err.ok()) break;
      if (m.node >= nodes_.size() || nodes_[m.node].host != int(hi)) {
        err = Status::Malformed("NODE_EXIT for a node not on this host");
        break;
      }
      NodeExited(nodes_[m.node], m.kind, m.value, m.message);
    } else {
      err = Status::Malformed(std::string("unexpected ") + ToString(f.type));
      break;
    }
  }
  if (!err.ok() || closed) {
    bool lost = false;
    for (uint32_t id : h.nodes) lost |= !nodes_[id].exited;
    CloseHost(h);
    if (lost && phase_ == JobPhase::kRunning)
      Teardown(kLostStatus, "lost connection to " + h.what + " " + h.spec + (err.ok() ? "" : ": " + err.ToString()),
               false);
  }
}

void Job::CloseHost(Host& h) {
  {
    std::lock_guard<std::mutex> l(h.send_mu);
    h.state = HostState::kClosed;
    h.fd.reset();
  }
  for (uint32_t id : h.nodes) nodes_[id].exited = true;
}

int64_t Job::CheckLiveness(int64_t now) {
  if (!liveness_ms_ || phase_ != JobPhase::kRunning) return 0;
  if (now >= ping_at_) {
    for (Node& n : nodes_)
      if (n.helloed && n.control.valid() && !n.exited) SendTo(n, MsgType::kPing, "");
    for (auto& h : hosts_)
      if (h->state == HostState::kStarted) h->Send(MsgType::kPing, epoch_, "");
    ping_at_ = now + std::max<int64_t>(1, liveness_ms_ / kPingDivisor);
  }
  int64_t next = ping_at_;
  char secs[32];
  snprintf(secs, sizeof(secs), "%g", double(liveness_ms_) / 1000);
  for (auto& hp : hosts_) {
    Host& h = *hp;
    if (h.state != HostState::kStarted) continue;
    if (now - h.last_heard >= liveness_ms_) {
      CloseHost(h);  // nothing more is expected from it
      Teardown(kLostStatus,
               h.what + " " + h.spec + ": no answer for " + std::string(secs) +
                   " s (stopped, cut off, or stuck; --liveness-timeout); ending the job",
               false);
      return 0;
    }
    next = std::min(next, h.last_heard + liveness_ms_);
  }
  for (Node& n : nodes_) {
    if (n.local && !n.helloed && !n.exited) {
      // Not pingable yet: whether it could answer at all, from /proc.
      if (!CannotAnswer(n.local->pid())) {
        n.unresponsive_since = 0;
      } else if (!n.unresponsive_since) {
        n.unresponsive_since = now;
      } else if (now - n.unresponsive_since >= liveness_ms_) {
        const std::string why = DescribeSilence(n.local->pid());
        n.local->Signal(SIGKILL);
        Teardown(kLostStatus,
                 "node " + std::to_string(n.id) + " (" + n.where() + ") before joining the job: " + why + " for " +
                     std::string(secs) + " s (--liveness-timeout); ending the job",
                 false);
        return 0;
      }
      continue;
    }
    if (!n.helloed || !n.control.valid() || n.exited) continue;
    if (now - n.last_heard >= liveness_ms_) {
      if (n.local && DumpingCore(n.local->pid())) {
        // It crashed: its death is reported when the core is written.
        if (!n.dumping_core)
          spdlog::warn("node {} ({}) crashed and is writing a core dump; waiting for it", n.id, n.where());
        n.dumping_core = true;
        next = std::min(next, now + liveness_ms_ / kPingDivisor);
        continue;
      }
      const std::string host = n.host >= 0 ? " on " + hosts_[size_t(n.host)]->name : "";
      const std::string why = n.local ? DescribeSilence(n.local->pid()) : "not answering (stopped, cut off, or stuck)";
      if (n.local) n.local->Signal(SIGKILL);  // it cannot take a TERMINATE or a SIGTERM now
      Teardown(kLostStatus,
               "node " + std::to_string(n.id) + " (" + n.where() + host + "): no answer for " + std::string(secs) + " s: " +
                   why + " (--liveness-timeout); ending the job",
               false);
      return 0;
    }
    next = std::min(next, n.last_heard + liveness_ms_);
  }
  return next;
}

void Job::OnSignal() {
  signalfd_siginfo si;
  while (::read(signal_fd_.get(), &si, sizeof(si)) == sizeof(si)) {
    int sig = int(si.ssi_signo);
    if (phase_ == JobPhase::kRunning) {
      Teardown(128 + sig, "caught " + SignalName(sig) + "; ending the job", false);
    } else if (phase_ == JobPhase::kTearingDown) {
      spdlog::error("caught {} again; killing the job now", SignalName(sig));
      SignalAll(SIGKILL);
      kill_at_ = 0;
    }
  }
}

void Job::CheckTimers() {
  int64_t now = NowMs();
  if (phase_ == JobPhase::kRunning && timeout_at_ && now >= timeout_at_) {
    char t[32];
    snprintf(t, sizeof(t), "%g", o_.timeout_s);
    Teardown(124, std::string("job timed out after ") + t + " s (--timeout); ending it", false);
  }
  next_liveness_ = CheckLiveness(now);
  if (phase_ == JobPhase::kRunning) {
    for (Node& n : nodes_) {
      if (n.control_lost_at && !n.exited && now >= n.control_lost_at) {
        Teardown(kLostStatus, "node " + std::to_string(n.id) + ": control connection lost", false);
        break;
      }
    }
  }
  if (phase_ == JobPhase::kTearingDown) {
    if (term_at_ && now >= term_at_) {
      term_at_ = 0;
      SignalAll(SIGTERM);
    }
    if (kill_at_ && now >= kill_at_) {
      kill_at_ = 0;
      spdlog::info("grace period over: SIGKILL");
      SignalAll(SIGKILL);
      give_up_at_ = now + kGraceMs;
    }
    if (give_up_at_ && now >= give_up_at_) {
      give_up_at_ = 0;
      for (auto& h : hosts_) {
        if (h->state != HostState::kStarted) continue;
        spdlog::error("svmd at {} did not confirm the end of its nodes; giving up on it", h->spec);
        CloseHost(*h);
      }
    }
  }
}

bool Job::AllDone() const {
  for (const Node& n : nodes_) {
    if (n.local ? !n.local->finished() : !n.exited) return false;
  }
  return true;
}

void Job::Loop() {
  std::vector<pollfd> fds;
  std::vector<std::function<void(short)>> handlers;
  while (!AllDone()) {
    fds.clear();
    handlers.clear();
    auto add = [&](int fd, std::function<void(short)> h) {
      if (fd < 0) return;
      fds.push_back({fd, POLLIN, 0});
      handlers.push_back(std::move(h));
    };
    add(signal_fd_.get(), [this](short) { OnSignal(); });
    add(pending_fd_.get(), [this](short) { OnPending(); });
    for (Node& n : nodes_) {
      add(n.control.get(), [this, &n](short) { OnControl(n); });
      if (!n.local) continue;
      LocalNode* ln = n.local.get();
      add(ln->pidfd(), [this, &n, ln](short) {
        ln->Reap();
        if (!ln->exited()) return;
        int ws = ln->wait_status();
        if (WIFSIGNALED(ws)) NodeExited(n, ExitKind::kSignaled, WTERMSIG(ws), "");
        else NodeExited(n, ExitKind::kExited, WEXITSTATUS(ws), "");
      });
      add(ln->out_fd(), [ln](short) { ln->ReadOutput(ln->out_fd()); });
      add(ln->err_fd(), [ln](short) { ln->ReadOutput(ln->err_fd()); });
    }
    for (size_t i = 0; i < hosts_.size(); ++i)
      if (hosts_[i]->state == HostState::kStarted) add(hosts_[i]->fd.get(), [this, i](short) { OnHost(i); });
    // ssh/srun: their output (the agents' logs) and exit; the agents'
    // connections, not these processes, say whether a host is alive.
    for (Starter& st : starters_) {
      LocalNode* p = st.proc.get();
      add(p->pidfd(), [p](short) { p->Reap(); });
      add(p->out_fd(), [p](short) { p->ReadOutput(p->out_fd()); });
      add(p->err_fd(), [p](short) { p->ReadOutput(p->err_fd()); });
    }

    int64_t now = NowMs(), next = now + 1000;
    for (int64_t t : {timeout_at_, term_at_, kill_at_, next_liveness_, give_up_at_})
      if (t) next = std::min(next, t);
    for (const Node& n : nodes_)
      if (n.control_lost_at && !n.exited) next = std::min(next, n.control_lost_at);
    int rc = ::poll(fds.data(), fds.size(), int(std::max<int64_t>(0, next - now)));
    if (rc < 0 && errno != EINTR) {
      spdlog::error("poll: {}", strerror(errno));
      break;
    }
    for (size_t i = 0; rc > 0 && i < fds.size(); ++i)
      if (fds[i].revents) handlers[i](fds[i].revents);
    CheckTimers();
  }
}

void Job::Shutdown() {
  phase_ = JobPhase::kDone;
  uint64_t one = 1;
  ssize_t w = ::write(stop_fd_.get(), &one, sizeof(one));
  (void)w;
  gate_.Stop();
  listen_fd_.reset();
  if (stdin_thread_.joinable()) stdin_thread_.join();
  for (Node& n : nodes_) n.control.reset();
  for (auto& h : hosts_) {
    std::lock_guard<std::mutex> l(h->send_mu);
    h->fd.reset();
  }
  // Agents leave once their connection closes, and ssh/srun with them.
  const int64_t until = NowMs() + kGraceMs;
  for (Starter& st : starters_)
    if (!st.started && !st.proc->exited()) st.proc->Signal(SIGTERM);  // the job did not start: srun ends its step
  for (Starter& st : starters_) {
    while (st.proc->state() != NodeState::kStarting && !st.proc->finished() && NowMs() < until) {
      std::vector<pollfd> fds;
      for (int fd : {st.proc->pidfd(), st.proc->out_fd(), st.proc->err_fd()})
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), int(std::max<int64_t>(1, until - NowMs()))) <= 0) break;
      if (st.proc->pidfd() >= 0) st.proc->Reap();
      for (int fd : {st.proc->out_fd(), st.proc->err_fd()})
        if (fd >= 0) st.proc->ReadOutput(fd);
    }
  }
  starters_.clear();  // SIGKILLs what is left
  nodes_.clear();  // reaps anything left (never expected here)
  if (!stats_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(stats_dir_, ec);
  }
}

// Merges the nodes' reports (written before they exited) into --stats FILE
// and prints the summary. Nodes on other hosts write none yet.
void Job::SaveRemoteStats(const NodeStatsMsg& m) {
  if (stats_dir_.empty()) return;
  const std::string path = stats_dir_ + "/node-" + std::to_string(m.node) + ".json";
  FILE* f = fopen(path.c_str(), "w");
  bool ok = f && fwrite(m.json.data(), 1, m.json.size(), f) == m.json.size();
  if (f) ok = fclose(f) == 0 && ok;
  if (!ok) spdlog::warn("statistics of node {}: cannot write {}: {}", m.node, path, strerror(errno));
}

void Job::ReportStats(int64_t started_ns, int64_t elapsed_ns) {
  if (stats_dir_.empty()) return;
  std::vector<nlohmann::json> reports;
  std::vector<uint32_t> missing;
  Status s = ReadNodeReports(stats_dir_, o_.nodes, &reports, &missing);
  nlohmann::json merged;
  if (s.ok()) s = MergeStats(reports, o_.nodes, missing, elapsed_ns, &merged);
  if (!s.ok()) {
    spdlog::error("statistics: {}", s.message());
    return;
  }
  merged["job"] = JobConfig(o_, program_);
  // Comparable with the threads' start_ns/end_ns where they ran on this
  // host: svm-plot splits the job's elapsed time into start-up, the
  // program's threads and teardown.
  merged["start_ns"] = started_ns;
  const std::string text = FormatStatsSummary(merged);
  WriteAll(2, text.data(), text.size());
  const std::string tmp = o_.stats + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  const std::string body = merged.dump(1) + "\n";
  bool ok = f && fwrite(body.data(), 1, body.size(), f) == body.size();
  if (f) ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp.c_str(), o_.stats.c_str()) != 0)
    spdlog::error("--stats {}: cannot write: {}", o_.stats, strerror(errno));
}

int Job::Run() {
  Status s = Setup();
  bool gate_failed = false;
  if (s.ok()) {
    // Strangers wait at the gate from the start: the agents call back
    // while the job starts, the nodes once it runs.
    GateOptions gate;
    gate.key = key_;
    gate.what = "control connection";
    gate.deadline_ms = kHandshakeMs;
    gate.max_first_body = 64 * 1024;  // a HELLO or AGENT_HELLO: an id and an address or name
    gate.want_seal = Sealed();
    s = gate_.Start(std::move(listen_fd_), gate, [this](Admitted a) { Admit(std::move(a)); });
    gate_failed = !s.ok();
  }
  if (s.ok() && plan_.launcher == Launcher::kSvmd) s = StartRemote();
  if (s.ok() && (plan_.launcher == Launcher::kSsh || plan_.launcher == Launcher::kSlurm)) s = StartAgents();
  if (s.ok()) s = StartLocal();
  if (!s.ok()) {
    spdlog::error("{}", s.message());
    Shutdown();
    if (gate_failed) return kStartupFailedStatus;
    if (s.message().find("statically linked") != std::string::npos) return kCannotRunStatus;
    return s.code() == Status::Code::kInvalidArgument && s.message().find("cannot execute") != std::string::npos
               ? 127
               : 1;
  }
  phase_ = JobPhase::kRunning;
  spdlog::debug("job epoch {} phase {}: {} nodes, control port {}", epoch_, ToString(phase_), o_.nodes,
                control_port_);
  // stdin goes to the --stdin node(s), wherever they run.
  std::vector<int> local_fds, hosts;
  for (Node& n : nodes_) {
    if (!ReadsStdin(n.id)) continue;
    if (n.local && n.local->stdin_fd() >= 0) {
      int fd = ::dup(n.local->stdin_fd());
      SetCloexec(fd, true);
      n.local->CloseStdin();
      local_fds.push_back(fd);
    } else if (n.host >= 0 && std::find(hosts.begin(), hosts.end(), n.host) == hosts.end()) {
      hosts.push_back(n.host);
    }
  }
  if (!local_fds.empty() || !hosts.empty())
    stdin_thread_ = std::thread([this, local_fds, hosts] { StdinLoop(local_fds, hosts); });
  // Liveness counts from here: the svmds and agents have waited for the
  // others' start.
  for (auto& h : hosts_) h->last_heard = NowMs();
  next_liveness_ = NowMs();
  const auto started = std::chrono::steady_clock::now();
  OnPending();  // HELLOs that came while the agents were awaited
  Loop();
  ReportStats(std::chrono::duration_cast<std::chrono::nanoseconds>(started.time_since_epoch()).count(),
              std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                    started)
                  .count());
  Shutdown();
  spdlog::debug("job done, status {}", status_);
  return status_;
}

std::string ExeDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path().string();
}

// The runtime library: --preload, else found from svmrun's own directory:
// installed (bin/ -> lib/svm/), or in the build tree (svmd/ -> libsvm/).
Status FindPreload(const std::string& given, std::string* out) {
  if (given == "none") {
    *out = "none";
    return Status::Ok();
  }
  std::vector<std::string> candidates;
  if (!given.empty()) {
    candidates.push_back(given);
  } else {
    std::string dir = ExeDir();
    candidates = {dir + "/" SVM_PRELOAD_FROM_BINDIR "/libsvm.so", dir + "/../libsvm/libsvm.so"};
  }
  for (const auto& c : candidates) {
    if (::access(c.c_str(), R_OK) == 0) {
      *out = std::filesystem::weakly_canonical(c).string();
      return Status::Ok();
    }
  }
  if (!given.empty())
    return Status::InvalidArgument("--preload " + given + ": no such readable file");
  return Status::InvalidArgument("the runtime library libsvm.so was not found (looked for " + candidates[0] +
                                 " and " + candidates[1] +
                                 "); build libsvm, pass --preload PATH, or --preload none to run a "
                                 "plain program without the runtime");
}

// auto: shm when every node runs on this host (its one-sided operations need
// no remote thread), tcp for --hosts or when a network is modelled (the
// latency and bandwidth knobs live in the tcp NIC).
Status ResolveTransport(Options* o) {
  const bool modelled = o->net_latency_ns != 0 || o->net_bandwidth != 0;
  if (o->transport == "auto") o->transport = o->hosts.empty() && !modelled ? "shm" : "tcp";
  if (o->transport == "shm" && !o->hosts.empty())
    return Status::InvalidArgument("--transport shm: nodes on other hosts (--hosts) need tcp or verbs");
  if (o->transport == "shm" && modelled)
    return Status::InvalidArgument("--net-latency and --net-bandwidth model a network in the tcp NIC; "
                                   "they need --transport tcp");
  return Status::Ok();
}

// What this host can tell of the transport before anything starts: verbs
// needs an RDMA device (a local job's nodes run here; for --hosts each node
// checks on its own host). 2 with one line, like a bad flag.
Status CheckTransport(const Options& o) {
#ifdef SVM_HAVE_VERBS
  if (o.transport == "verbs" && o.hosts.empty()) {
    if (Status s = nic::ProbeRdmaDevice(); !s.ok())
      return Status::Unsupported("--transport verbs: " + s.message() +
                                 " on this host (libibverbs lists none); use --transport tcp");
  }
#else
  (void)o;
#endif
  return Status::Ok();
}

int Main(int argc, char** argv) {
  Options o;
  int exit_now = -1;
  ParseCommandLine(argc, argv, &o, &exit_now);
  if (exit_now >= 0) return exit_now;
  spdlog::set_default_logger(spdlog::stderr_color_mt("svmrun"));
  spdlog::set_pattern("svmrun: %v");
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  std::string preload, program;
  Status s = FindPreload(o.preload, &preload);
  if (!s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }
  LaunchPlan plan;
  if (s = MakeLaunchPlan(&o, getenv, &plan); !s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }
  if (o.stdin_target != "all" && o.stdin_target != "none" && std::stoul(o.stdin_target) >= o.nodes) {
    spdlog::error("--stdin {}: the job has nodes 0..{}", o.stdin_target, o.nodes - 1);
    return 2;
  }
  if (std::vector<std::string> scratch; !(s = ApplyExports(o.env, getenv, &scratch)).ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }
  spdlog::debug("launcher {}: {} nodes on {} hosts", ToString(plan.launcher), o.nodes, plan.hosts.size());
  if (plan.launcher == Launcher::kSsh || plan.launcher == Launcher::kSlurm) {
    o.hosts.clear();  // for the statistics' job record
    for (const LaunchHost& h : plan.hosts)
      if (!h.nodes.empty()) o.hosts.push_back(h.name);
  }
  if (Status t = ResolveTransport(&o); !t.ok()) {
    spdlog::error("{}", t.message());
    return 2;
  }
  if (Status t = CheckTransport(o); !t.ok()) {
    spdlog::error("{}", t.message());
    return 2;
  }
  if (Status t = CheckLimits(o, preload != "none"); !t.ok()) {
    spdlog::error("{}", t.message());
    return 2;
  }
  Key admin{};
  if (plan.launcher != Launcher::kLocal) {
    // The nodes run the program at the path it has here.
    if (!ResolveProgram(o.program[0], std::filesystem::current_path().string(), &program).ok()) program.clear();
  }
  if (plan.launcher == Launcher::kSvmd) {
    if (o.key_file.empty()) {
      spdlog::error("--launcher svmd needs --key-file (or SVM_KEY_FILE): the key shared with the svmds");
      return 2;
    }
    if (s = LoadKeyFromFile(o.key_file, &admin); !s.ok()) {
      spdlog::error("{}", s.message());
      return 2;
    }
  } else if (plan.launcher == Launcher::kLocal) {
    // A local job with more application threads than this host's CPUs
    // still runs, but its threads take turns: say so before timings mislead.
    cpu_set_t cpus;
    const uint64_t threads = uint64_t(o.nodes) * o.threads_per_node;
    if (::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && threads > uint64_t(CPU_COUNT(&cpus)))
      spdlog::warn("{} nodes x {} threads = {} application threads on {} CPUs: oversubscribed, they will "
                   "take turns (timings suffer)",
                   o.nodes, o.threads_per_node, threads, CPU_COUNT(&cpus));
    s = ResolveProgram(o.program[0], std::filesystem::current_path().string(), &program);
    if (!s.ok()) {
      spdlog::error("{}", s.message());
      return 127;
    }
    if (preload != "none") {
      if (s = CheckDynamic(program); !s.ok()) {
        std::fprintf(stderr, "svm: %s\n", s.message().c_str());
        return kCannotRunStatus;
      }
    }
  }
  Job job(std::move(o), std::move(plan), preload, program, admin);
  int rc = job.Run();
  spdlog::shutdown();
  return rc;
}

}  // namespace
}  // namespace svm::svmd

int main(int argc, char** argv) { return svm::svmd::Main(argc, argv); }
