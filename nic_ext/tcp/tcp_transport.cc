// Tcp transport, control path: listen, dial, key proof and hello exchange,
// NIC thread start and stop. Blocking sockets with poll() deadlines; no
// io_uring here.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <future>
#include <list>
#include <type_traits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/tcp/tcp_nic_impl.h"
#include "util/auth.h"

namespace svm::nic {
namespace {

struct HostPort {
  std::string host, port;
};

Status ParseHostPort(const std::string& s, HostPort* out) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 == s.size()) {
    return Status::InvalidArgument(fmt::format("address '{}' is not host:port", s));
  }
  out->host = s.substr(0, colon);
  out->port = s.substr(colon + 1);
  if (out->host.size() >= 2 && out->host.front() == '[' && out->host.back() == ']') {
    out->host = out->host.substr(1, out->host.size() - 2);
  }
  return Status::Ok();
}

Status Resolve(const std::string& address, addrinfo** out) {
  HostPort hp;
  if (Status s = ParseHostPort(address, &hp); !s.ok()) return s;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, out);
  if (rc != 0) {
    return Status::InvalidArgument(fmt::format("cannot resolve '{}': {}", address, gai_strerror(rc)));
  }
  return Status::Ok();
}

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1000));
}

// Reads or writes exactly n bytes before the deadline.
bool TransferAll(int fd, uint8_t* p, size_t n, bool write, Clock::time_point deadline) {
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    int pr = poll(&pfd, 1, MillisLeft(deadline));
    if (pr < 0 && errno != EINTR) return false;
    if (pr <= 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    ssize_t r = write ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                      : recv(fd, p, n, MSG_DONTWAIT);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

std::string Errno(const char* what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
    return fmt::format("[{}]:{}", host, ntohs(s6->sin6_port));
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
  inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
  return fmt::format("{}:{}", host, ntohs(s4->sin_port));
}

// The job-key proof (util/auth.h), before any NIC byte is sent or trusted.
Status ProveKey(int fd, const JobKey& key, bool dialer, bool want_seal, Clock::time_point deadline,
                std::unique_ptr<SealedStream>* sealed) {
  static_assert(std::is_same_v<JobKey, svmd::Key>);
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  const int64_t deadline_ms = svmd::NowMs() + std::max<int64_t>(0, left.count());
  const auto role = dialer ? svmd::AuthRole::kClient : svmd::AuthRole::kServer;
  svmd::AuthResult auth;
  Status s = svmd::Authenticate(fd, key, role, deadline_ms, want_seal, &auth);
  if (!s.ok()) return Status::InvalidArgument(fmt::format("authentication failed: {}", s.ToString()));
  sealed->reset();
  if (auth.sealed) {
    std::unique_ptr<svmd::Seal> seal;
    if (s = svmd::Seal::Make(auth.session, role, &seal); !s.ok()) return s;
    *sealed = std::make_unique<SealedStream>(std::move(seal));
  }
  return Status::Ok();
}

}  // namespace

Status TcpNic::Create(const TcpOptions& options, std::unique_ptr<TcpNic>* out) {
  auto nic = std::make_unique<TcpNicImpl>(options);
  if (Status s = nic->Init(); !s.ok()) return s;
  *out = std::move(nic);
  return Status::Ok();
}

TcpNicImpl::TcpNicImpl(const TcpOptions& o)
    : TcpNic(o.self, o.num_nodes, o.recv_policy),
      opt_(o),
      inject_(o.latency_ns != 0 || o.bandwidth_bytes_per_s != 0 || o.per_message_ns != 0),
      cq_driver_(std::make_shared<Driver>(this, false)),
      recv_driver_(std::make_shared<Driver>(this, true)) {}

TcpNicImpl::~TcpNicImpl() {
  Shutdown();
  for (Conn& c : conns_) {
    if (c.fd >= 0) close(c.fd);
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (inline_ring_ok_) io_uring_queue_exit(&inline_ring_);
}

Status TcpNicImpl::Init() {
  if (opt_.num_nodes == 0 || opt_.num_nodes > kMaxNodes || opt_.self >= opt_.num_nodes) {
    return Status::InvalidArgument(fmt::format("node {} of {} (at most {} nodes)", opt_.self,
                                               opt_.num_nodes, kMaxNodes));
  }
  if (opt_.key == JobKey{}) {
    return Status::InvalidArgument("no job key (TcpOptions::key is all zero)");
  }
  conns_.resize(opt_.num_nodes);
  for (NodeId i = 0; i < opt_.num_nodes; ++i) conns_[i].peer = i;
  slots_.resize(kMaxOutstanding);
  free_.reserve(kMaxOutstanding);
  for (uint32_t i = kMaxOutstanding; i-- > 0;) free_.push_back(i);

  addrinfo* ai = nullptr;
  if (Status s = Resolve(opt_.listen, &ai); !s.ok()) return s;
  Status st = Status::InvalidArgument(fmt::format("cannot listen on '{}'", opt_.listen));
  for (addrinfo* a = ai; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, static_cast<int>(kMaxNodes)) == 0) {
      listen_fd_ = fd;
      break;
    }
    st = Status::InvalidArgument(fmt::format("listen on '{}': {}", opt_.listen, std::strerror(errno)));
    close(fd);
  }
  freeaddrinfo(ai);
  if (listen_fd_ < 0) return st;

  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
    port = ntohs(s6->sin6_port);
    listen_address_ = fmt::format("[{}]:{}", host, port);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
    port = ntohs(s4->sin_port);
    listen_address_ = fmt::format("{}:{}", host, port);
  }

  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::Unsupported(Errno("eventfd"));
  int rc = io_uring_queue_init(kInlineRingEntries, &inline_ring_, 0);
  if (rc < 0) return Status::Unsupported(fmt::format("io_uring: {}", std::strerror(-rc)));
  inline_ring_ok_ = true;
  return Status::Ok();
}

Status TcpNicImpl::RegisterRegion(const MemoryRegion& r) {
  if (started_) return Status::InvalidArgument("RegisterRegion after Connect");
  return regions_.Add(r);
}

std::vector<uint8_t> TcpNicImpl::HelloBytes() const {
  frame::Frame mine;
  mine.type = frame::Type::kHello;
  mine.node = self();
  mine.num_nodes = num_nodes();
  std::vector<uint8_t> out;
  frame::Encode(mine, opt_.epoch, &out);
  return out;
}

Status TcpNicImpl::CheckHello(std::span<const uint8_t> in, bool dialer, NodeId expect, NodeId* peer) const {
  frame::Frame f;
  size_t used = 0;
  std::string error;
  if (frame::Decode(in, opt_.epoch, &f, &used, &error) != frame::Decoded::kOk ||
      f.type != frame::Type::kHello) {
    return Status::Malformed(fmt::format("bad hello: {}", error.empty() ? "not a hello" : error));
  }
  if (f.num_nodes != num_nodes() || f.node >= num_nodes() ||
      (dialer ? f.node != expect : f.node <= self() || conns_[f.node].fd >= 0)) {
    return Status::Malformed(fmt::format("hello from node {} of {} unexpected at node {} of {}",
                                         f.node, f.num_nodes, self(), num_nodes()));
  }
  *peer = f.node;
  return Status::Ok();
}

Status TcpNicImpl::ExchangeHello(int fd, bool dialer, NodeId expect, NodeId* peer, Clock::time_point deadline,
                                 std::unique_ptr<SealedStream>* sealed) {
  if (Status s = ProveKey(fd, opt_.key, dialer, opt_.seal, deadline, sealed); !s.ok()) return s;
  std::vector<uint8_t> out = HelloBytes();
  const size_t hello_bytes = out.size();
  if (*sealed) out = (*sealed)->SealOne(out);
  if (dialer && !TransferAll(fd, out.data(), out.size(), true, deadline)) {
    return Status::InvalidArgument(Errno("sending hello"));
  }
  std::vector<uint8_t> in(out.size());
  if (!TransferAll(fd, in.data(), in.size(), false, deadline)) {
    return Status::InvalidArgument("no hello from the peer");
  }
  if (*sealed) {
    std::vector<uint8_t> plain;
    if (Status s = (*sealed)->OpenOne(in, &plain); !s.ok())
      return Status::InvalidArgument(fmt::format("sealed hello: {}", s.ToString()));
    in = std::move(plain);
  }
  if (in.size() != hello_bytes) return Status::Malformed("bad hello size");
  if (Status s = CheckHello(in, dialer, expect, peer); !s.ok()) return s;
  if (!dialer && !TransferAll(fd, out.data(), out.size(), true, deadline)) {
    return Status::InvalidArgument(Errno("answering hello"));
  }
  return Status::Ok();
}

Status TcpNicImpl::Dial(NodeId peer, const std::string& address, Clock::time_point deadline) {
  addrinfo* ai = nullptr;
  if (Status s = Resolve(address, &ai); !s.ok()) return s;
  std::string last = "timed out";
  while (Clock::now() < deadline) {
    for (addrinfo* a = ai; a != nullptr; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        last = Errno("connect");
        close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      NodeId got = 0;
      std::unique_ptr<SealedStream> sealed;
      Status s = ExchangeHello(fd, true, peer, &got, deadline, &sealed);
      if (!s.ok()) {
        close(fd);
        freeaddrinfo(ai);
        spdlog::error("nic {}: connection to node {} at {} refused: {}", self(), peer, address,
                      s.ToString());
        return Status::InvalidArgument(fmt::format("node {} -> {} ({}): {}", self(), peer, address,
                                                   s.ToString()));
      }
      conns_[peer].fd = fd;
      conns_[peer].sealed = std::move(sealed);
      freeaddrinfo(ai);
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the peer is not listening yet
  }
  freeaddrinfo(ai);
  return Status::InvalidArgument(fmt::format("node {} cannot reach node {} at {}: {}", self(), peer,
                                             address, last));
}

// Every dialler is served at once (one poll loop), so a connection that
// stays silent or fails the proof costs only its own deadline, never the
// real peers' start-up. At most kMaxWaitingAccepts wait; the oldest makes
// room for a newcomer.
Status TcpNicImpl::AcceptPeers(Clock::time_point deadline) {
  struct Waiting {
    int fd = -1;
    std::string peer;
    Clock::time_point deadline;
    svmd::ServerHandshake auth;
    std::vector<uint8_t> hello;  // sealed when `sealed` is set
    size_t have = 0;
    std::unique_ptr<SealedStream> sealed;
  };
  std::list<Waiting> waiting;  // accept order, which is deadline order
  const std::vector<uint8_t> mine = HelloBytes();
  auto drop = [&](std::list<Waiting>::iterator it, const std::string& why) {
    spdlog::error("nic {}: refusing a connection from {}: {}", self(), it->peer, why);
    close(it->fd);
    return waiting.erase(it);
  };
  // Reads what w still wants: Ok and *peer set once its hello is in and answered.
  auto advance = [&](Waiting& w, bool* ready, NodeId* peer) -> Status {
    *ready = false;
    for (;;) {
      uint8_t buf[256];
      const size_t want = !w.auth.done() ? w.auth.Wanted() : w.hello.size() - w.have;
      ssize_t r = recv(w.fd, buf, std::min(want, sizeof buf), MSG_DONTWAIT);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::Ok();
      if (r <= 0) return Status::InvalidArgument(r == 0 ? "closed by the peer" : Errno("recv"));
      if (!w.auth.done()) {
        if (Status s = w.auth.Feed(w.fd, buf, size_t(r)); !s.ok())
          return Status::InvalidArgument(fmt::format("authentication failed: {}", s.ToString()));
        if (w.auth.done() && w.auth.sealed()) {
          std::unique_ptr<svmd::Seal> seal;
          if (Status s = svmd::Seal::Make(w.auth.session(), svmd::AuthRole::kServer, &seal); !s.ok()) return s;
          w.sealed = std::make_unique<SealedStream>(std::move(seal));
          w.hello.resize(mine.size() + svmd::kSealOverhead);
        }
        continue;
      }
      std::memcpy(w.hello.data() + w.have, buf, size_t(r));
      w.have += size_t(r);
      if (w.have < w.hello.size()) continue;
      std::vector<uint8_t> answer = mine;
      if (w.sealed) {
        std::vector<uint8_t> plain;
        if (Status s = w.sealed->OpenOne(w.hello, &plain); !s.ok())
          return Status::InvalidArgument(fmt::format("sealed hello: {}", s.ToString()));
        w.hello = std::move(plain);
        answer = w.sealed->SealOne(mine);
      }
      if (Status s = CheckHello(w.hello, false, 0, peer); !s.ok()) return s;
      if (!TransferAll(w.fd, answer.data(), answer.size(), true, w.deadline))
        return Status::InvalidArgument(Errno("answering hello"));
      *ready = true;
      return Status::Ok();
    }
  };

  uint32_t missing = num_nodes() - 1 - self();
  std::vector<pollfd> fds;
  std::vector<std::list<Waiting>::iterator> who;
  while (missing > 0) {
    const auto now = Clock::now();
    while (!waiting.empty() && waiting.front().deadline <= now) drop(waiting.begin(), "no hello in time");
    if (now >= deadline) {
      while (!waiting.empty()) drop(waiting.begin(), "start-up is over");
      return Status::InvalidArgument(fmt::format("node {}: {} peers never dialled in", self(), missing));
    }
    fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
    who.clear();
    for (auto it = waiting.begin(); it != waiting.end(); ++it) {
      fds.push_back(pollfd{it->fd, POLLIN, 0});
      who.push_back(it);
    }
    const int pr = poll(fds.data(), fds.size(),
                        MillisLeft(waiting.empty() ? deadline : std::min(deadline, waiting.front().deadline)));
    if (pr <= 0) continue;
    for (size_t i = 0; i < who.size(); ++i) {
      if (!fds[i + 1].revents) continue;
      auto it = who[i];
      bool ready = false;
      NodeId peer = 0;
      if (Status s = advance(*it, &ready, &peer); !s.ok()) {
        drop(it, s.ToString());
        continue;
      }
      if (!ready) continue;
      conns_[peer].fd = it->fd;
      conns_[peer].sealed = std::move(it->sealed);
      waiting.erase(it);
      --missing;
    }
    if (!fds[0].revents) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (waiting.size() >= kMaxWaitingAccepts) drop(waiting.begin(), "too many connections in the handshake");
    Waiting w;
    w.fd = fd;
    w.peer = PeerName(fd);
    w.deadline = std::min(deadline, Clock::now() + kHandshakeTimeout);
    w.hello.resize(mine.size());
    if (Status s = w.auth.Start(fd, opt_.key, opt_.seal); !s.ok()) {
      spdlog::error("nic {}: refusing a connection from {}: {}", self(), w.peer, s.ToString());
      close(fd);
      continue;
    }
    waiting.push_back(std::move(w));
  }
  if (!waiting.empty())
    spdlog::warn("nic {}: every peer is connected; closing {} connections still in the handshake", self(),
                 waiting.size());
  for (Waiting& w : waiting) close(w.fd);
  return Status::Ok();
}

Status TcpNicImpl::Connect(std::span<const std::string> addresses) {
  if (started_) return Status::InvalidArgument("Connect called twice");
  if (addresses.size() != num_nodes()) {
    return Status::InvalidArgument(fmt::format("{} addresses for {} nodes", addresses.size(), num_nodes()));
  }
  const auto deadline = Clock::now() + opt_.setup_timeout;
  for (NodeId j = 0; j < self(); ++j) {
    if (Status s = Dial(j, addresses[j], deadline); !s.ok()) return s;
  }
  if (Status s = AcceptPeers(deadline); !s.ok()) return s;
  // Every peer is here: later diallers are strangers, refused by the kernel.
  close(listen_fd_);
  listen_fd_ = -1;
  for (Conn& c : conns_) {
    c.alive = true;
    if (c.fd >= 0) c.rx.resize(kRxInitialBytes);
  }

  std::promise<Status> ready;
  auto ready_f = ready.get_future();
  thread_ = std::thread([this, &ready] {
    pthread_setname_np(pthread_self(), "svm-nic-tcp");
    // The ring is made here so that this thread is its single issuer.
    int rc = io_uring_queue_init(kRingEntries, &ring_,
                                 IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    if (rc == -EINVAL) rc = io_uring_queue_init(kRingEntries, &ring_, 0);
    if (rc < 0) {
      ready.set_value(Status::Unsupported(fmt::format("io_uring: {}", std::strerror(-rc))));
      return;
    }
    ring_ok_ = true;
    ready.set_value(Status::Ok());
    Loop_nt();
    io_uring_queue_exit(&ring_);
  });
  Status s = ready_f.get();
  started_ = true;
  // Injected delays are timed by the NIC thread alone: no driving then.
  if (s.ok() && !inject_) recv_queue().set_driver(recv_driver_);
  if (!s.ok()) {
    thread_.join();
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    return s;
  }
  return Status::Ok();
}

void TcpNicImpl::Shutdown() {
  cq_driver_->Retire();  // waits out a Drive in progress
  recv_driver_->Retire();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  uint64_t one = 1;
  ssize_t w = write(wake_fd_, &one, sizeof one);
  (void)w;
  thread_.join();
}

}  // namespace svm::nic
