#include "control/control_client.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "control/frame.h"

namespace svm::svmd {
namespace {

Status EnvU32(const char* name, bool required, uint32_t* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    if (required) return Status::InvalidArgument(std::string(name) + " is not set (not started by svmrun?)");
    return Status::Ok();
  }
  std::string_view s(v);
  uint32_t x = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec != std::errc() || end != s.data() + s.size())
    return Status::InvalidArgument(std::string(name) + "='" + v + "' is not a number");
  *out = x;
  return Status::Ok();
}

}  // namespace

Status ControlConfig::FromEnv(ControlConfig* out) {
  ControlConfig c;
  Status s;
  if (s = EnvU32("SVM_NODE_ID", true, &c.node_id); !s.ok()) return s;
  if (s = EnvU32("SVM_NODES", true, &c.nodes); !s.ok()) return s;
  if (s = EnvU32("SVM_JOB_EPOCH", true, &c.epoch); !s.ok()) return s;
  if (c.nodes == 0 || c.node_id >= c.nodes)
    return Status::InvalidArgument("SVM_NODE_ID must be below SVM_NODES");
  const char* ctl = std::getenv("SVM_CONTROL");
  if (ctl == nullptr) return Status::InvalidArgument("SVM_CONTROL is not set (not started by svmrun?)");
  if (s = ParseHostPort(ctl, &c.control_host, &c.control_port); !s.ok()) return s;
  if (const char* lt = std::getenv("SVM_LIVENESS_TIMEOUT"); lt != nullptr && *lt) {
    char* end = nullptr;
    const double secs = std::strtod(lt, &end);
    if (end == lt || *end != '\0' || !(secs >= 0) || secs > 1e7)
      return Status::InvalidArgument(std::string("SVM_LIVENESS_TIMEOUT='") + lt + "' is not a number of seconds");
    c.liveness_ms = int64_t(secs * 1000);
    // A node cut off from svmrun before it joins ends within the timeout too.
    if (c.liveness_ms > 0) c.connect_timeout_ms = std::clamp(c.liveness_ms, kMinConnectMs, c.connect_timeout_ms);
  }
  if (const char* seal = std::getenv("SVM_SEAL"); seal != nullptr) c.seal = std::string_view(seal) == "1";
  uint32_t key_fd = UINT32_MAX;
  if (s = EnvU32("SVM_KEY_FD", false, &key_fd); !s.ok()) return s;
  if (key_fd != UINT32_MAX) {
    s = LoadKeyFromFd(int(key_fd), &c.key);
    ::close(int(key_fd));
    if (!s.ok()) return s;
  } else if (const char* kf = std::getenv("SVM_KEY_FILE"); kf != nullptr && *kf) {
    if (s = LoadKeyFromFile(kf, &c.key); !s.ok()) return s;
  } else {
    return Status::InvalidArgument("neither SVM_KEY_FD nor SVM_KEY_FILE is set: no job key");
  }
  *out = std::move(c);
  return Status::Ok();
}

ControlClient::ControlClient() = default;

ControlClient::~ControlClient() {
  stopping_ = true;
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
}

Status ControlClient::Rendezvous(const ControlConfig& cfg, std::string my_nic_address,
                                 std::vector<std::string>* peers) {
  if (fd_.valid()) return Status::InvalidArgument("Rendezvous called twice");
  cfg_ = cfg;
  std::string where = cfg.control_host + ":" + std::to_string(cfg.control_port);
  UniqueFd fd;
  auto silent = [&](const Status& s) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.3g", double(cfg.connect_timeout_ms) / 1000);
    return Status::Timeout("svmrun's control socket " + where + " did not answer within " + secs +
                           " s (cut off?): " + std::string(s.message()));
  };
  Status s = Connect(cfg.control_host, cfg.control_port, NowMs() + cfg.connect_timeout_ms, &fd);
  if (s.code() == Status::Code::kTimeout) return silent(s);
  if (!s.ok()) return s;
  AuthResult auth;
  if (s = Authenticate(fd.get(), cfg.key, AuthRole::kClient, NowMs() + cfg.connect_timeout_ms, cfg.seal, &auth);
      !s.ok()) {
    if (s.code() == Status::Code::kAuthFailed) return Status::AuthFailed("control " + where + ": " + s.message());
    return s.code() == Status::Code::kTimeout ? silent(s) : s;
  }
  if (auth.sealed) {
    if (s = Seal::Make(auth.session, AuthRole::kClient, &seal_); !s.ok()) return s;
  }
  Sealer* out = seal_ ? &seal_->out : nullptr;
  Opener* in = seal_ ? &seal_->in : nullptr;
  HelloMsg hello{cfg.node_id, std::move(my_nic_address)};
  if (s = SendFrame(fd.get(), MsgType::kHello, cfg.epoch, Encode(hello), out); !s.ok()) return s;
  int64_t deadline = cfg.rendezvous_timeout_ms > 0 ? NowMs() + cfg.rendezvous_timeout_ms : kNoDeadline;
  Frame f;
  bool pinged = false;
  for (;;) {
    const int64_t silence =
        cfg.liveness_ms > 0 ? NowMs() + cfg.liveness_ms + (pinged ? 0 : kFirstPingGraceMs) : kNoDeadline;
    if (s = RecvFrame(fd.get(), std::min(deadline, silence), &f, in); !s.ok()) {
      if (s.code() == Status::Code::kTimeout && silence < deadline)
        return Status::Timeout("no word from svmrun during rendezvous (stopped or cut off?)");
      return s;
    }
    if (f.epoch != cfg.epoch) return Status::Malformed("control: frame from another job (epoch)");
    if (f.type == MsgType::kTerminate) return Status::Closed("svmrun ended the job during rendezvous");
    if (f.type == MsgType::kPing) {
      if (s = SendFrame(fd.get(), MsgType::kPong, cfg.epoch, "", out); !s.ok()) return s;
      pinged = true;
      continue;
    }
    if (f.type != MsgType::kPeers)
      return Status::Malformed(std::string("control: unexpected ") + ToString(f.type));
    break;
  }
  std::vector<std::string> list;
  if (s = DecodeStrings(f.body, MsgType::kPeers, &list); !s.ok()) return s;
  if (list.size() != cfg.nodes)
    return Status::Malformed("PEERS lists " + std::to_string(list.size()) + " nodes, expected " +
                                 std::to_string(cfg.nodes));
  event_fd_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!event_fd_.valid()) return Status::Errno("eventfd", errno);
  fd_ = std::move(fd);
  *peers = std::move(list);
  reader_ = std::thread([this] { ReaderLoop(); });
  return Status::Ok();
}

Status ControlClient::Send(MsgType t, std::string_view body) {
  std::lock_guard<std::mutex> l(send_mu_);
  return SendFrame(fd_.get(), t, cfg_.epoch, body, seal_ ? &seal_->out : nullptr);
}

void ControlClient::ReaderLoop() {
  for (;;) {
    Frame f;
    Status s = RecvFrame(fd_.get(), cfg_.liveness_ms > 0 ? NowMs() + cfg_.liveness_ms : kNoDeadline, &f,
                         seal_ ? &seal_->in : nullptr);
    if (!s.ok() && s.code() == Status::Code::kTimeout && !stopping_) {
      std::string line = "svm: node " + std::to_string(cfg_.node_id) + ": no word from svmrun for " +
                         std::to_string(cfg_.liveness_ms) + " ms (stopped or cut off?); leaving the job\n";
      (void)!::write(2, line.data(), line.size());
      ::_exit(kLostSvmrunStatus);
    }
    if (!s.ok()) {
      MarkTerminated(stopping_ ? "client closed"
                     : s.code() == Status::Code::kTimeout
                         ? "no word from svmrun for " + std::to_string(cfg_.liveness_ms) +
                               " ms (stopped or cut off?)"
                         : "control connection lost: " + s.ToString());
      return;
    }
    if (f.type == MsgType::kTerminate) {
      MarkTerminated("TERMINATE from svmrun");
      return;
    }
    if (f.type == MsgType::kPing) {
      (void)Send(MsgType::kPong, "");
      continue;
    }
    // Anything else after PEERS is ignored (forward compatibility).
  }
}

void ControlClient::MarkTerminated(const std::string& why) {
  std::function<void()> cb;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (terminated_) return;
    reason_ = why;
    terminated_ = true;
    cb = callback_;
  }
  cv_.notify_all();
  uint64_t one = 1;
  ssize_t r = ::write(event_fd_.get(), &one, sizeof(one));
  (void)r;
  if (cb && !stopping_) cb();
}

std::string ControlClient::TerminateReason() const {
  std::lock_guard<std::mutex> l(mu_);
  return reason_;
}

void ControlClient::OnTerminate(std::function<void()> cb) {
  bool now;
  {
    std::lock_guard<std::mutex> l(mu_);
    callback_ = cb;
    now = terminated_;
  }
  if (now && cb) cb();
}

Status ControlClient::ReportExit(int status, int64_t wait_ms) {
  if (!fd_.valid()) return Status::InvalidArgument("ReportExit before Rendezvous");
  Status s = Send(MsgType::kExit, EncodeI32(status));
  if (!s.ok()) return s;
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_for(l, std::chrono::milliseconds(wait_ms), [this] { return terminated_.load(); }))
    return Status::Timeout("svmrun did not acknowledge EXIT");
  return Status::Ok();
}

ControlClient& DefaultControlClient() {
  static ControlClient* client = new ControlClient();
  return *client;
}
Status Rendezvous(const ControlConfig& cfg, std::string my_nic_address,
                  std::vector<std::string>* peers) {
  return DefaultControlClient().Rendezvous(cfg, std::move(my_nic_address), peers);
}
Status ReportExit(int status) { return DefaultControlClient().ReportExit(status); }
int TerminateFd() { return DefaultControlClient().TerminateFd(); }
void OnTerminate(std::function<void()> cb) { DefaultControlClient().OnTerminate(std::move(cb)); }

}  // namespace svm::svmd
