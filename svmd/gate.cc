#include "svmd/gate.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <vector>

namespace svm::svmd {
namespace {

// One waiting connection: the key proof, then the first frame's header,
// then its body.
struct Waiting {
  UniqueFd fd;
  std::string peer;
  int64_t deadline = 0;
  ServerHandshake auth;
  std::string frame;  // bytes of the first frame so far
  size_t frame_need = kFrameHeader;
};

// Refusals are logged, but a flood must not flood the log: the first few
// of every 10 s, then one line with the count.
class RefusalLog {
 public:
  void Refused(const std::string& what, const std::string& peer, const std::string& why) {
    const int64_t now = NowMs();
    if (now >= window_end_) {
      if (hidden_ > 0) spdlog::warn("refused {} more {}s in the last 10 s", hidden_, what);
      window_end_ = now + 10000;
      shown_ = hidden_ = 0;
    }
    if (shown_ < 5) {
      ++shown_;
      spdlog::warn("refused {} from {}: {}", what, peer, why);
    } else {
      ++hidden_;
    }
  }

 private:
  int64_t window_end_ = 0;
  int shown_ = 0;
  uint64_t hidden_ = 0;
};

// Reads what w still wants; Ok(false) while more is needed, Ok(true) when
// its first frame is complete.
Status Advance(Waiting& w, const GateOptions& opt, bool* complete) {
  *complete = false;
  for (;;) {
    uint8_t buf[4096];
    const size_t want = !w.auth.done() ? w.auth.Wanted() : w.frame_need - w.frame.size();
    ssize_t r = ::recv(w.fd.get(), buf, std::min(want, sizeof(buf)), MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::Ok();
    if (r < 0) return Status::Errno("recv", errno);
    if (r == 0) return Status::Closed("closed by the peer");
    if (!w.auth.done()) {
      if (Status s = w.auth.Feed(w.fd.get(), buf, size_t(r)); !s.ok()) return s;
      continue;
    }
    if (w.frame.empty() && w.auth.sealed()) w.frame_need = kSealHeader;
    w.frame.append(reinterpret_cast<const char*>(buf), size_t(r));
    if (w.frame.size() < w.frame_need) continue;
    if (w.auth.sealed()) {  // one record holds the first frame
      if (w.frame_need == kSealHeader) {
        size_t size = 0;
        if (Status s = Opener::RecordSize(reinterpret_cast<const uint8_t*>(w.frame.data()),
                                          kFrameHeader + size_t(opt.max_first_body), &size);
            !s.ok())
          return Status::Malformed("first record too long");
        w.frame_need = size;
        continue;
      }
      *complete = true;
      return Status::Ok();
    }
    if (w.frame_need == kFrameHeader) {
      uint32_t len = 0;
      if (Status s = FrameBodyLength(w.frame, &len); !s.ok()) return s;
      if (len > opt.max_first_body) return Status::Malformed("first frame too long: " + std::to_string(len));
      w.frame_need += len;
      if (len > 0) continue;
    }
    *complete = true;
    return Status::Ok();
  }
}

}  // namespace

Status Gate::Start(UniqueFd listen_fd, GateOptions options, OnAdmit on_admit) {
  stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_fd_.valid()) return Status::Errno("eventfd", errno);
  SetNonblocking(listen_fd.get(), true);
  listen_fd_ = std::move(listen_fd);
  opt_ = std::move(options);
  on_admit_ = std::move(on_admit);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Gate::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  ssize_t w = ::write(stop_fd_.get(), &one, sizeof(one));
  (void)w;
  thread_.join();
  listen_fd_.reset();
}

void Gate::Loop() {
  std::list<Waiting> waiting;  // in accept order, which is deadline order
  RefusalLog log;
  int64_t accept_paused_until = 0;  // out of descriptors: retry later
  std::vector<pollfd> fds;
  std::vector<std::list<Waiting>::iterator> who;
  auto refuse = [&](std::list<Waiting>::iterator it, const std::string& why) {
    ++refused_;
    log.Refused(opt_.what, it->peer, why);
    return waiting.erase(it);
  };
  for (;;) {
    const int64_t now = NowMs();
    while (!waiting.empty() && waiting.front().deadline <= now) refuse(waiting.begin(), "timed out");
    fds.clear();
    who.clear();
    fds.push_back({stop_fd_.get(), POLLIN, 0});
    fds.push_back({now >= accept_paused_until ? listen_fd_.get() : -1, POLLIN, 0});
    for (auto it = waiting.begin(); it != waiting.end(); ++it) {
      fds.push_back({it->fd.get(), POLLIN, 0});
      who.push_back(it);
    }
    int64_t next = waiting.empty() ? now + 1000 : waiting.front().deadline;
    if (accept_paused_until > now) next = std::min(next, accept_paused_until);
    int rc = ::poll(fds.data(), fds.size(), int(std::clamp<int64_t>(next - now, 0, 1000)));
    if (rc < 0 && errno != EINTR) {
      spdlog::error("{} gate: poll: {}", opt_.what, std::strerror(errno));
      return;
    }
    if (rc <= 0) continue;
    if (fds[0].revents) return;
    for (size_t i = 0; i < who.size(); ++i) {
      if (!fds[i + 2].revents) continue;
      auto it = who[i];
      bool complete = false;
      Status s = Advance(*it, opt_, &complete);
      if (!s.ok()) {
        refuse(it, s.ToString());
        continue;
      }
      if (!complete) continue;
      Admitted a;
      a.peer = it->peer;
      a.session = it->auth.session();
      FrameReader reader;
      if (it->auth.sealed()) {
        std::unique_ptr<Seal> seal;
        if (Status s = Seal::Make(a.session, AuthRole::kServer, &seal); !s.ok()) {
          refuse(it, s.ToString());
          continue;
        }
        a.seal = std::move(seal);
        reader.set_opener(&a.seal->in);
      }
      reader.Append(it->frame.data(), it->frame.size());
      Status err;
      if (!reader.Next(&a.first, &err)) {  // FrameBodyLength / the opener checked it
        refuse(it, err.ok() ? "the first record is not a whole frame" : err.ToString());
        continue;
      }
      SetNonblocking(it->fd.get(), false);
      a.fd = std::move(it->fd);
      waiting.erase(it);
      on_admit_(std::move(a));
    }
    if (fds[1].revents) {
      for (;;) {
        int c = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) {
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // Make room for the newcomers at the oldest's expense, and breathe.
            if (!waiting.empty()) refuse(waiting.begin(), "dropped: out of descriptors");
            accept_paused_until = NowMs() + 50;
          }
          break;  // EAGAIN, ECONNABORTED, ...: next round
        }
        if (waiting.size() >= opt_.max_pending)
          refuse(waiting.begin(), "dropped: " + std::to_string(opt_.max_pending) + " connections waiting");
        Waiting w;
        w.fd.reset(c);
        w.peer = PeerString(c);
        w.deadline = NowMs() + opt_.deadline_ms;
        if (Status s = w.auth.Start(c, opt_.key, opt_.want_seal); !s.ok()) {
          ++refused_;
          log.Refused(opt_.what, w.peer, s.ToString());
          continue;
        }
        waiting.push_back(std::move(w));
      }
    }
  }
}

}  // namespace svm::svmd
