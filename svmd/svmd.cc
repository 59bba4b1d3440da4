// svmd: the per-host daemon. `svmd --listen ADDR:PORT --key-file FILE`.
//
// Connections wait at the gate (gate.h: one thread for all of them, a
// deadline each, a cap on how many wait) until they prove the admin key
// (auth.h; a wrong key is refused and logged) and send their first frame.
// Each admitted connection from svmrun is then a Session on its own thread
// (at most kMaxSessions):
//   kAwaitingJob -> kRunning -> kTearingDown -> kClosed
// It receives one JOB (the nodes to start here, argv, env, the job key wrapped
// with the connection's session secret), starts the nodes (local_node.h),
// hands them the job key through a pipe (SVM_KEY_FD), forwards their output
// line by line and their exit statuses, feeds STDIN to the --stdin node(s),
// answers PING, obeys KILL, and kills every node of the job if svmrun goes
// away or falls silent (liveness.h). `svmd --agent` runs one such Session on
// a connection it makes back to svmrun (agent.h). SIGINT/SIGTERM end all sessions and svmd.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <mutex>
#include <system_error>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <thread>

#include "util/auth.h"
#include "control/frame.h"
#include "svmd/gate.h"
#include "svmd/job_dir.h"
#include "svmd/liveness.h"
#include "svmd/local_node.h"
#include "util/net.h"
#include "svmd/agent.h"
#include "svmd/launch.h"
#include "svmd/options.h"
#include "svmd/preflight.h"

namespace svm::svmd {
namespace {

constexpr int64_t kHandshakeMs = 10000;  // from accept to the JOB frame
constexpr int64_t kJobWaitMs = 30000;    // --agent: from calling back to the JOB frame
constexpr int64_t kGraceMs = 2000;
constexpr size_t kMaxSessions = 64;

enum class SessionState { kAwaitingJob, kRunning, kTearingDown, kClosed };
const char* ToString(SessionState s) {
  switch (s) {
    case SessionState::kAwaitingJob: return "awaiting-job";
    case SessionState::kRunning: return "running";
    case SessionState::kTearingDown: return "tearing-down";
    case SessionState::kClosed: return "closed";
  }
  return "?";
}

class Session {
 public:
  Session(int id, Admitted a, int stop_fd)
      : id_(id),
        conn_(std::move(a.fd)),
        session_key_(a.session),
        first_(std::move(a.first)),
        stop_fd_(stop_fd),
        peer_(std::move(a.peer)),
        seal_(std::move(a.seal)) {
    in_.set_opener(seal_ ? &seal_->in : nullptr);
  }
  // An agent's session (svmd --agent): the connection to svmrun is made
  // and authenticated already, with this session secret; the JOB is still
  // to come.
  Session(UniqueFd conn, const Key& session, std::shared_ptr<Seal> seal, int stop_fd)
      : id_(1),
        conn_(std::move(conn)),
        session_key_(session),
        stop_fd_(stop_fd),
        peer_(PeerString(conn_.get())),
        seal_(std::move(seal)) {
    in_.set_opener(seal_ ? &seal_->in : nullptr);
    await_job_ = true;
  }
  ~Session() { Cleanup(); }
  void Run();
  bool done() const { return done_; }

 private:
  void SetState(SessionState s) {
    spdlog::debug("session {}: {} -> {}", id_, ToString(state_), ToString(s));
    state_ = s;
  }
  Status StartJob(const Frame& f, const Key& session);
  void Loop();
  void OnConn();
  void BeginTeardown(const std::string& why);
  void Send(MsgType t, std::string_view body);
  void Cleanup();
  void SendStats(uint32_t node);
  // Liveness of the nodes from /proc: svmrun cannot ping a node that has not
  // joined yet, and a stopped node answers nothing anyway.
  void CheckNodes();

  int id_;
  UniqueFd conn_;
  Key session_key_;
  Frame first_;
  int stop_fd_;
  std::string peer_;
  std::shared_ptr<Seal> seal_;  // set when svmrun asked for sealing
  SessionState state_ = SessionState::kAwaitingJob;
  std::atomic<bool> done_{false};
  uint32_t epoch_ = 0;
  std::string dir_;  // --stats only: the nodes' reports (job_dir.h)
  bool stats_ = false;  // the job runs with --stats
  std::vector<std::unique_ptr<LocalNode>> nodes_;
  std::vector<bool> reported_;
  std::vector<int64_t> unresponsive_since_;  // per node: when /proc first said it cannot answer; 0: it can
  std::vector<std::pair<LocalNode*, std::string>> stdin_;  // the nodes STDIN feeds, bytes pending each
  bool stdin_eof_ = false;
  bool conn_ok_ = true;
  int64_t kill_at_ = 0;
  int64_t liveness_ms_ = 0, last_heard_ = 0;  // liveness.h: svmrun pings
  bool pinged_ = false;  // until the first PING, kFirstPingGraceMs more
  FrameReader in_;
  bool await_job_ = false;  // --agent: the JOB comes on the session's own connection
};

void Session::Send(MsgType t, std::string_view body) {
  if (!conn_ok_) return;
  if (!SendFrame(conn_.get(), t, epoch_, body, seal_ ? &seal_->out : nullptr).ok()) {
    conn_ok_ = false;
    BeginTeardown("svmrun connection lost");
  }
}

void Session::Run() {
  Frame& f = first_;
  Status s;
  if (await_job_) s = RecvFrame(conn_.get(), NowMs() + kJobWaitMs, &f, seal_ ? &seal_->in : nullptr);
  if (s.ok() && f.type != MsgType::kJob) s = Status::Malformed(std::string("expected JOB, got ") + ToString(f.type));
  if (s.ok()) s = StartJob(f, session_key_);
  if (!s.ok()) {
    spdlog::error("session {} from {}: {}", id_, peer_, s.ToString());
    Send(MsgType::kJobError, EncodeStrings({s.message()}));
  } else {
    Loop();
  }
  Cleanup();
  SetState(SessionState::kClosed);
  spdlog::info("session {}: closed", id_);
  done_ = true;
}

Status Session::StartJob(const Frame& f, const Key& session) {
  JobRequest req;
  Status s = Decode(f.body, &req);
  if (!s.ok()) return s;
  epoch_ = f.epoch;
  Key job_key = Xor(req.wrapped_key, session);
  std::string cwd = req.cwd;
  struct stat st;
  if (cwd.empty() || ::stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    spdlog::warn("session {}: directory '{}' does not exist here; nodes start in svmd's", id_, cwd);
    cwd.clear();
  }
  std::string program;
  if (s = ResolveProgram(req.argv[0], cwd.empty() ? std::filesystem::current_path().string() : cwd, &program);
      !s.ok())
    return s;
  const bool runtime = std::any_of(req.env.begin(), req.env.end(),
                                   [](const std::string& e) { return e.starts_with("LD_PRELOAD="); });
  if (runtime) {
    if (s = CheckDynamic(program); !s.ok()) return s;
  }

  for (const std::string& e : req.env) {
    if (!e.starts_with("SVM_LIVENESS_TIMEOUT=")) continue;
    char* end = nullptr;
    const double secs = std::strtod(e.c_str() + 21, &end);
    if (*end == '\0' && secs >= 0 && secs <= 1e7) liveness_ms_ = LivenessMs(secs);
  }
  last_heard_ = NowMs();
  std::string ids;
  for (uint32_t id : req.node_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  spdlog::info("session {} from {}: job epoch {}, nodes [{}] of {}, program {}", id_, peer_, epoch_, ids,
               req.nodes_total, program);
  auto sink = [this](uint32_t node, int stream, std::string_view line) {
    OutputMsg m{node, uint8_t(stream), std::string(line)};
    Send(MsgType::kOutput, Encode(m));
  };
  // The user's environment (svmrun's, sent in the JOB) over this host's.
  std::vector<std::string> base = CleanEnvironment(), env;
  for (const auto& e : req.env)
    if (e.find('=') != std::string::npos) env.push_back(e);
  OverlayEnvironment(env, &base);
  // --stats: the nodes write their reports here; each goes back to svmrun
  // when its node ends (NODE_STATS before NODE_EXIT).
  stats_ = std::any_of(req.env.begin(), req.env.end(),
                       [](const std::string& e) { return e.starts_with("SVM_STATS="); });
  if (stats_) {
    if (s = MakeJobDir("svmd-job", &dir_); !s.ok()) return s;
    base.push_back("SVM_STATS_DIR=" + dir_);
  }
  base.push_back("SVM_CONTROL=" + req.control);
  const bool pinned = std::find(req.env.begin(), req.env.end(), "SVM_PIN=node") != req.env.end();
  OverlayEnvironment(HostEnv(uint32_t(req.node_ids.size()), pinned), &base);
  std::vector<cpu_set_t> shares;
  if (pinned) {
    if (s = CpuShares(uint32_t(req.node_ids.size()), &shares); !s.ok()) return s;
  }
  Encoder pids;
  pids.U32(uint32_t(req.node_ids.size()));
  for (size_t k = 0; k < req.node_ids.size(); ++k) {
    const uint32_t id = req.node_ids[k];
    SpawnSpec spec;
    if (!shares.empty()) spec.cpus = shares[k];
    spec.argv = req.argv;
    spec.argv[0] = program;
    spec.env = base;
    spec.env.push_back("SVM_NODE_ID=" + std::to_string(id));
    spec.cwd = cwd;
    spec.stdin_pipe = req.stdin_node == id || req.stdin_node == kStdinAll;
    // The job key reaches the node through a pipe, as svmrun's own nodes
    // get it: no file to leave behind if svmd is killed.
    int kp[2];
    if (pipe2(kp, O_CLOEXEC) != 0) return Status::Errno("pipe", errno);
    UniqueFd key_r(kp[0]), key_w(kp[1]);
    if (s = WriteAll(key_w.get(), job_key.data(), job_key.size()); !s.ok()) return s;
    key_w.reset();
    spec.env.push_back("SVM_KEY_FD=" + std::to_string(key_r.get()));
    spec.inherit_fd = key_r.get();
    auto node = std::make_unique<LocalNode>(id, sink);
    if (s = node->Start(spec); !s.ok()) return Status::InvalidArgument("node " + std::to_string(id) + ": " + s.message());
    spdlog::info("session {}: node {} is pid {}", id_, id, node->pid());
    if (spec.stdin_pipe) {
      SetNonblocking(node->stdin_fd(), true);
      stdin_.push_back({node.get(), ""});
    }
    pids.Str(std::to_string(node->pid()));
    nodes_.push_back(std::move(node));
  }
  reported_.assign(nodes_.size(), false);
  SetState(SessionState::kRunning);
  Send(MsgType::kJobStarted, pids.bytes());
  return Status::Ok();
}

void Session::BeginTeardown(const std::string& why) {
  if (state_ == SessionState::kTearingDown) return;
  spdlog::info("session {}: tearing down: {}", id_, why);
  SetState(SessionState::kTearingDown);
  for (auto& n : nodes_) n->Signal(SIGTERM);
  kill_at_ = NowMs() + kGraceMs;
}

void Session::OnConn() {
  char buf[65536];
  for (;;) {
    ssize_t r = ::recv(conn_.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      in_.Append(buf, size_t(r));
      last_heard_ = NowMs();
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) break;
    conn_ok_ = false;
    BeginTeardown("svmrun disconnected");
    return;
  }
  Frame f;
  Status err;
  while (in_.Next(&f, &err)) {
    if (f.epoch != epoch_) {
      err = Status::Malformed("wrong epoch");
      break;
    }
    if (f.type == MsgType::kPing) {
      if (!pinged_)
        spdlog::info("session {}: first ping from svmrun (every host started; its silence is now timed)", id_);
      pinged_ = true;
      Send(MsgType::kPong, "");
    } else if (f.type == MsgType::kStdin) {
      for (auto& [node, pending] : stdin_) pending += f.body;
    } else if (f.type == MsgType::kStdinEof) {
      stdin_eof_ = true;
    } else if (f.type == MsgType::kKill) {
      int32_t sig = 0;
      if (err = DecodeI32(f.body, f.type, &sig); !err.ok()) break;
      if (sig <= 0 || sig >= NSIG) {
        err = Status::Malformed("KILL: bad signal");
        break;
      }
      spdlog::info("session {}: KILL {}", id_, SignalName(sig));
      for (auto& n : nodes_) n->Signal(sig);
      if (sig != SIGKILL && !kill_at_) kill_at_ = NowMs() + kGraceMs;
    } else {
      err = Status::Malformed(std::string("unexpected ") + ToString(f.type));
      break;
    }
  }
  if (!err.ok()) {
    spdlog::error("session {}: {}; dropping svmrun", id_, err.ToString());
    conn_ok_ = false;
    BeginTeardown("malformed input from svmrun");
  }
}

void Session::Loop() {
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->finished() && !reported_[i]) {
        reported_[i] = true;
        int ws = nodes_[i]->wait_status();
        NodeExitMsg m;
        m.node = nodes_[i]->id();
        m.kind = WIFSIGNALED(ws) ? ExitKind::kSignaled : ExitKind::kExited;
        m.value = WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws);
        spdlog::info("session {}: node {} {}", id_, m.node, DescribeWaitStatus(ws));
        if (stats_) SendStats(m.node);
        Send(MsgType::kNodeExit, Encode(m));
      }
      all &= nodes_[i]->finished();
    }
    if (all && !conn_ok_) return;
    CheckNodes();
    for (auto& [node, pending] : stdin_)
      if (node->stdin_fd() >= 0 && pending.empty() && stdin_eof_) node->CloseStdin();

    std::vector<pollfd> fds;
    std::vector<std::pair<LocalNode*, int>> who;  // (node, 0 pidfd / 1 output / 2 stdin), or null
    fds.push_back({stop_fd_, POLLIN, 0});
    who.push_back({nullptr, -1});
    if (conn_ok_) {
      fds.push_back({conn_.get(), POLLIN, 0});
      who.push_back({nullptr, -2});
    }
    for (auto& n : nodes_) {
      for (int fd : {n->pidfd(), n->out_fd(), n->err_fd()}) {
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        who.push_back({n.get(), fd == n->pidfd() ? 0 : 1});
      }
    }
    for (auto& [node, pending] : stdin_) {
      if (node->stdin_fd() >= 0 && !pending.empty()) {
        fds.push_back({node->stdin_fd(), POLLOUT, 0});
        who.push_back({node, 2});
      }
    }
    int64_t now = NowMs();
    const int64_t allowed = liveness_ms_ + (pinged_ ? 0 : kFirstPingGraceMs);
    if (conn_ok_ && liveness_ms_ && now - last_heard_ >= allowed) {
      conn_ok_ = false;
      BeginTeardown("no word from svmrun for " + std::to_string(liveness_ms_) + " ms (stopped or cut off?)");
    }
    int64_t wake = now + 1000;
    if (kill_at_) wake = std::min(wake, kill_at_);
    if (conn_ok_ && liveness_ms_) wake = std::min(wake, last_heard_ + allowed);
    int timeout = int(std::max<int64_t>(0, wake - now));
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) return;
    for (size_t i = 0; rc > 0 && i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto [node, kind] = who[i];
      if (kind == -1) {
        BeginTeardown("svmd is stopping");
        conn_ok_ = false;
      } else if (kind == -2) {
        OnConn();
      } else if (kind == 0) {
        node->Reap();
      } else if (kind == 1) {
        node->ReadOutput(fds[i].fd);
      } else if (kind == 2) {
        LocalNode* target = node;
        std::string& pending =
            std::find_if(stdin_.begin(), stdin_.end(), [target](const auto& p) { return p.first == target; })->second;
        ssize_t w = ::write(fds[i].fd, pending.data(), pending.size());
        if (w > 0) pending.erase(0, size_t(w));
        else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          pending.clear();
          node->CloseStdin();
        }
      }
    }
    if (kill_at_ && NowMs() >= kill_at_) {
      kill_at_ = 0;
      for (auto& n : nodes_) n->Signal(SIGKILL);
    }
  }
}

void Session::CheckNodes() {
  if (!liveness_ms_ || kill_at_) return;
  unresponsive_since_.resize(nodes_.size(), 0);
  const int64_t now = NowMs();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->finished() || reported_[i]) continue;
    if (!CannotAnswer(nodes_[i]->pid())) {
      unresponsive_since_[i] = 0;
    } else if (!unresponsive_since_[i]) {
      unresponsive_since_[i] = now;
    } else if (now - unresponsive_since_[i] >= liveness_ms_) {
      char secs[32];
      snprintf(secs, sizeof(secs), "%g", double(liveness_ms_) / 1000);
      NodeExitMsg m;
      m.node = nodes_[i]->id();
      m.kind = ExitKind::kUnresponsive;
      m.message = "pid " + std::to_string(nodes_[i]->pid()) + " " + DescribeSilence(nodes_[i]->pid()) + " for " +
                  secs + " s (--liveness-timeout)";
      spdlog::warn("session {}: node {}: {}; killing it", id_, m.node, m.message);
      nodes_[i]->Signal(SIGKILL);
      reported_[i] = true;
      Send(MsgType::kNodeExit, Encode(m));
    }
  }
}

// The node's report, if it wrote one (a killed node may not have).
void Session::SendStats(uint32_t node) {
  const std::string path = dir_ + "/node-" + std::to_string(node) + ".json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  NodeStatsMsg m{node, std::string(std::istreambuf_iterator<char>(in), {})};
  ::unlink(path.c_str());
  if (m.json.size() + 64 > kMaxBody) {
    spdlog::warn("session {}: node {}'s statistics ({} bytes) are too large to send", id_, node, m.json.size());
    return;
  }
  Send(MsgType::kNodeStats, Encode(m));
}

void Session::Cleanup() {
  nodes_.clear();  // SIGKILLs and reaps whatever still runs
  stdin_.clear();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);  // reports of nodes that never ended
  }
  dir_.clear();
}

// SIGINT, SIGTERM and SIGHUP blocked and read from the returned signalfd (the
// main loop's way to stop); SIGPIPE ignored (a peer gone is a send error).
UniqueFd StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return UniqueFd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

// svmd --agent: one session on a connection it makes itself; ends with the
// job (svmrun closing the connection) or on SIGINT/SIGTERM/SIGHUP.
int RunAgent(const AgentArgs& args, const std::string& level) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  spdlog::set_default_logger(spdlog::stderr_color_mt("svmd"));
  spdlog::set_pattern(std::string("svmd --agent on ") + host + ": %v");
  spdlog::set_level(spdlog::level::from_str(level));
  UniqueFd sfd = StopSignals();
  UniqueFd stop(eventfd(0, EFD_CLOEXEC));
  UniqueFd conn;
  Key session;
  std::shared_ptr<Seal> seal;
  Status s = ConnectAgent(args, 0, &conn, &session, &seal);
  if (!s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  // The job's stdin comes in STDIN frames; ours was the key's pipe.
  if (int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC); null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  Session job(std::move(conn), session, std::move(seal), stop.get());
  std::thread t([&job] { job.Run(); });
  while (!job.done()) {
    pollfd p{sfd.get(), POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) {
      signalfd_siginfo si;
      if (::read(sfd.get(), &si, sizeof(si)) == sizeof(si)) {
        spdlog::info("caught {}; ending the job here", SignalName(int(si.ssi_signo)));
        uint64_t one = 1;
        ssize_t w = ::write(stop.get(), &one, sizeof(one));
        (void)w;
      }
    }
  }
  t.join();
  return 0;
}

int Main(int argc, char** argv) {
  std::string listen = "0.0.0.0:7117", key_file, level = "info";
  CLI::App app{"svmd: the svm per-host daemon; starts the nodes of jobs sent by svmrun", "svmd"};
  app.set_version_flag("--version", std::string("svmd ") + SVM_VERSION + " (commit " SVM_GIT_COMMIT ")");
  app.add_option("--listen", listen,
                 "address and port to listen on (port 0 picks one; [::]:PORT: IPv6 and IPv4; [ADDR]:PORT for IPv6)")
      ->capture_default_str()
      ->type_name("ADDR:PORT");
  app.add_option("--key-file", key_file, "0600 file holding the key shared with svmrun users (required unless --agent)")
      ->type_name("FILE");
  std::vector<std::string> levels;
  for (const Choice& c : kLogLevels) levels.push_back(c.name);
  app.add_option("--log-level", level, "log level")->capture_default_str()->check(CLI::IsMember(levels));
  bool agent = false;
  AgentArgs agent_args;
  app.add_flag("--agent", agent,
               "serve one job for svmrun's ssh/slurm launcher: read the job key from stdin, connect back to "
               "svmrun, exit with the job");
  app.add_option("--connect", agent_args.connect_host,
                 "--agent: svmrun's address (default: SSH_CONNECTION's client, else SLURM_LAUNCH_NODE_IPADDR)")
      ->type_name("HOST");
  app.add_option("--connect-port", agent_args.connect_port, "--agent: svmrun's port")->type_name("PORT");
  app.add_option("--index", agent_args.index, "--agent: this host's index in svmrun's host list")->type_name("N");
  CLI11_PARSE(app, argc, argv);
  if (agent) return RunAgent(agent_args, level);
  if (key_file.empty()) {
    std::fprintf(stderr, "svmd: --key-file is required (or --agent)\n");
    return 2;
  }

  spdlog::set_default_logger(spdlog::stderr_color_mt("svmd"));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] svmd[%P] %l: %v");
  spdlog::set_level(spdlog::level::from_str(level));
  Key admin;
  Status s = LoadKeyFromFile(key_file, &admin);
  if (!s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }
  std::string host;
  uint16_t port = 0, bound = 0;
  if (s = ParseHostPort(listen, &host, &port); !s.ok()) {
    spdlog::error("--listen: {}", s.message());
    return 2;
  }
  UniqueFd sfd = StopSignals();
  UniqueFd stop(eventfd(0, EFD_CLOEXEC));
  UniqueFd lfd;
  if (s = Listen(host, port, &lfd, &bound); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }

  struct Running {
    std::unique_ptr<Session> session;
    std::thread thread;
  };
  std::list<Running> sessions;
  std::mutex admitted_mu;
  std::deque<Admitted> admitted;  // GUARDED_BY(admitted_mu)
  UniqueFd admitted_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  Gate gate;
  GateOptions go;
  go.key = admin;
  go.what = "connection";
  go.deadline_ms = kHandshakeMs;
  s = gate.Start(std::move(lfd), go, [&](Admitted a) {
    std::lock_guard<std::mutex> l(admitted_mu);
    admitted.push_back(std::move(a));
    uint64_t one = 1;
    ssize_t w = ::write(admitted_fd.get(), &one, sizeof(one));
    (void)w;
  });
  if (!s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  std::printf("svmd: listening on %s\n", JoinHostPort(host, bound).c_str());
  std::fflush(stdout);
  spdlog::info("listening on {}", JoinHostPort(host, bound));
  int next_id = 1;
  for (;;) {
    pollfd p[2] = {{admitted_fd.get(), POLLIN, 0}, {sfd.get(), POLLIN, 0}};
    int rc = ::poll(p, 2, 1000);
    if (rc < 0 && errno != EINTR) break;
    if (p[1].revents) {
      signalfd_siginfo si;
      ssize_t r = ::read(sfd.get(), &si, sizeof(si));
      (void)r;
      spdlog::info("caught {}; stopping", SignalName(int(si.ssi_signo)));
      break;
    }
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (it->session->done()) {
        it->thread.join();
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
    if (p[0].revents) {
      uint64_t v;
      ssize_t r = ::read(admitted_fd.get(), &v, sizeof(v));
      (void)r;
      std::deque<Admitted> got;
      {
        std::lock_guard<std::mutex> l(admitted_mu);
        got.swap(admitted);
      }
      for (Admitted& a : got) {
        if (sessions.size() >= kMaxSessions) {
          spdlog::warn("refused a job from {}: {} jobs running", a.peer, kMaxSessions);
          (void)SendFrame(a.fd.get(), MsgType::kJobError, a.first.epoch,
                          EncodeStrings({"svmd runs " + std::to_string(kMaxSessions) + " jobs already"}),
                          a.seal ? &a.seal->out : nullptr);
          continue;
        }
        auto sess = std::make_unique<Session>(next_id++, std::move(a), stop.get());
        Session* raw = sess.get();
        try {
          sessions.push_back(Running{std::move(sess), std::thread([raw] { raw->Run(); })});
        } catch (const std::system_error& e) {  // out of threads: this job fails, svmd goes on
          spdlog::error("cannot start a session: {}", e.what());
        }
      }
    }
  }
  gate.Stop();
  uint64_t one = 1;
  ssize_t w = ::write(stop.get(), &one, sizeof(one));
  (void)w;
  for (auto& r : sessions) r.thread.join();
  sessions.clear();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace svm::svmd

int main(int argc, char** argv) { return svm::svmd::Main(argc, argv); }
