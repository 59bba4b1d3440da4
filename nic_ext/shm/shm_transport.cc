// Shm transport, control path: the control file, the unix socket, the key
// proof and the offers that hand each peer our memory files.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <future>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/shm/shm_nic_impl.h"
#include "util/auth.h"
#include "util/coding.h"

namespace svm::nic {

uint32_t DefaultShmRingBytes(uint32_t num_nodes) {
  const uint64_t share = (uint64_t{8} << 20) / std::max(1u, num_nodes - 1);
  return uint32_t(std::clamp<uint64_t>(std::bit_floor(share), 64 << 10, 1 << 20));
}

namespace shm {

Status Sys(const char* what) { return Status::Unsupported(fmt::format("shm: {}: {}", what, std::strerror(errno))); }

namespace {

using svmd::NowMs;
using svmd::UniqueFd;

constexpr uint64_t kOfferMagic = 0x3152464f4d485353;  // "SSHMOFR1"
constexpr size_t kOfferHeader = 8 + 4 * 5 + 8;
constexpr size_t kOfferRegion = 4 + 8 + 8;
constexpr int64_t kHandshakeMs = 5'000;  // per connection, within the set-up deadline

// A big job's set-up is longer (runtime.cc), and so are its handshakes: on
// one loaded host hundreds of nodes shake hands at once.
int64_t HandshakeMs(const ShmOptions& o) { return std::max<int64_t>(kHandshakeMs, o.setup_timeout.count() / 8); }

size_t PageSize() { return size_t(sysconf(_SC_PAGESIZE)); }


// "unix:@NAME" <-> an abstract socket address.
Status ParseAddress(const std::string& s, sockaddr_un* a, socklen_t* len) {
  constexpr std::string_view kPrefix = "unix:@";
  if (s.rfind(kPrefix, 0) != 0 || s.size() == kPrefix.size() || s.size() - kPrefix.size() >= sizeof(a->sun_path))
    return Status::InvalidArgument(fmt::format("shm: address '{}' is not unix:@NAME", s));
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  const std::string name = s.substr(kPrefix.size());
  std::memcpy(a->sun_path + 1, name.data(), name.size());
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return Status::Ok();
}

// Waits for fd to become readable (or writable) until the deadline.
Status WaitFd(int fd, short events, int64_t deadline_ms, const char* what) {
  for (;;) {
    const int64_t left = deadline_ms - NowMs();
    if (left <= 0) return Status::Timeout(fmt::format("shm: {} timed out", what));
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, int(std::min<int64_t>(left, 1000)));
    if (r > 0) return Status::Ok();
    if (r < 0 && errno != EINTR) return Sys("poll");
  }
}

// Maps `length` bytes of file fd at `offset` (any alignment) read-write and
// shared; *base gets the first byte, *map/*map_len what to unmap.
Status MapFile(int fd, uint64_t offset, size_t length, uint8_t** base, void** map, size_t* map_len) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Sys("fstat of a peer's memory file");
  if (!S_ISREG(st.st_mode) || uint64_t(st.st_size) < offset || uint64_t(st.st_size) - offset < length)
    return Status::Malformed(fmt::format("shm: a peer's memory file ({} bytes) does not hold {} bytes at {}",
                                         st.st_size, length, offset));
  const uint64_t start = offset / PageSize() * PageSize();
  *map_len = size_t(offset - start) + length;
  *map = mmap(nullptr, *map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, off_t(start));
  if (*map == MAP_FAILED) return Sys("mmap of a peer's memory");
  (void)madvise(*map, *map_len, MADV_DONTDUMP);  // the peer's, and sparse: not in our core
  *base = static_cast<uint8_t*>(*map) + (offset - start);
  return Status::Ok();
}

}  // namespace

Layout Layout::For(uint32_t nodes, uint32_t ring_bytes) {
  Layout l;
  l.nodes = nodes;
  l.ring_bytes = ring_bytes;
  l.heads = sizeof(Bell);
  l.data = l.heads + sizeof(RingHead) * nodes;
  l.locks = l.data + size_t(ring_bytes) * nodes;
  l.abandoned = l.locks + sizeof(LockWord) * kMaxLocks;
  l.bytes = l.abandoned + sizeof(Abandoned) * kMaxAbandoned;
  return l;
}

ShmNicImpl::ShmNicImpl(const ShmOptions& o, SharedMemory control, UniqueFd listener, std::string address)
    : ShmNic(o.self, o.num_nodes, o.recv_policy),
      opt_(o),
      layout_(Layout::For(o.num_nodes, o.ring_bytes)),
      control_(std::move(control)),
      listener_(std::move(listener)),
      address_(std::move(address)),
      peers_(o.num_nodes),
      driver_(std::make_shared<Driver>(this, false)),
      recv_driver_(std::make_shared<Driver>(this, true)) {
  peers_[o.self].control = static_cast<uint8_t*>(control_.data());
}

ShmNicImpl::~ShmNicImpl() {
  Shutdown();
  for (Peer& p : peers_)
    for (auto [m, len] : p.maps) munmap(m, len);
}

Status ShmNicImpl::RegisterRegion(const MemoryRegion& r) {
  if (started_) return Status::InvalidArgument("RegisterRegion after Connect");
  if (r.fd < 0)
    return Status::InvalidArgument(fmt::format(
        "shm: region {} has no memory file (MemoryRegion::fd): peers map regions themselves", r.id));
  struct stat st {};
  if (fstat(r.fd, &st) != 0) return Sys("fstat of a region's memory file");
  if (uint64_t(st.st_size) < r.fd_offset || uint64_t(st.st_size) - r.fd_offset < r.length)
    return Status::InvalidArgument(fmt::format("shm: region {}'s file ({} bytes) does not hold {} bytes at {}",
                                               r.id, st.st_size, r.length, r.fd_offset));
  if (Status s = peers_[self()].regions.Add(r); !s.ok()) return s;
  own_.push_back(r);
  return Status::Ok();
}

Status ShmNicImpl::Connect(std::span<const std::string> addresses) {
  if (started_) return Status::InvalidArgument("Connect called twice");
  if (addresses.size() != num_nodes())
    return Status::InvalidArgument(fmt::format("Connect: {} addresses for {} nodes", addresses.size(), num_nodes()));
  started_ = true;
  const int64_t deadline = NowMs() + opt_.setup_timeout.count();
  auto accepted = std::async(std::launch::async, [this, deadline] { return AcceptAll(deadline); });
  Status st = Status::Ok();
  for (NodeId j = 0; j < self() && st.ok(); ++j) st = Dial(j, addresses[j], deadline);
  Status acc = accepted.get();
  if (st.ok()) st = acc;
  listener_.reset();
  if (st.ok()) st = WatchLinks();
  if (!st.ok()) return st;
  bell(self()).pollers.store(1, std::memory_order_seq_cst);  // the NIC thread, awake
  recv_queue().set_driver(recv_driver_);
  nic_thread_ = std::thread([this] { NicThread(); });
  return Status::Ok();
}

Status ShmNicImpl::WatchLinks() {
  links_epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  if (!links_epoll_.valid()) return Sys("epoll_create1");
  for (NodeId k = 0; k < num_nodes(); ++k) {
    if (k == self() || !peers_[k].link.valid()) continue;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = k;
    if (epoll_ctl(links_epoll_.get(), EPOLL_CTL_ADD, peers_[k].link.get(), &ev) != 0) return Sys("epoll_ctl");
  }
  return Status::Ok();
}

Status ShmNicImpl::Dial(NodeId peer, const std::string& address, int64_t deadline_ms) {
  sockaddr_un a{};
  socklen_t len = 0;
  if (Status s = ParseAddress(address, &a, &len); !s.ok()) return s;
  for (int backoff_ms = 1;; backoff_ms = std::min(backoff_ms * 2, 100)) {
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return Sys("socket");
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&a), len) == 0) {
      Offer o;
      Status s = Exchange(fd.get(), true, peer, std::min(deadline_ms, NowMs() + HandshakeMs(opt_)), &o);
      if (s.ok()) s = Adopt(o);
      if (!s.ok()) return s.code() == Status::Code::kAuthFailed
                              ? Status::AuthFailed(fmt::format("shm: node {} at {}: {}", peer, address, s.message()))
                              : Status::IoError(fmt::format("shm: node {} at {}: {}", peer, address, s.message()));
      peers_[peer].link = std::move(fd);
      return Status::Ok();
    }
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN) return Sys("connect");
    if (NowMs() + backoff_ms >= deadline_ms)
      return Status::Timeout(fmt::format("shm: node {} at {} does not answer", peer, address));
    usleep(useconds_t(backoff_ms) * 1000);
  }
}

// Serves every dial from nodes above us. Each connection is handled on its
// own thread, so a stranger that connects and stays silent delays nobody.
Status ShmNicImpl::AcceptAll(int64_t deadline_ms) {
  uint32_t want = num_nodes() - 1 - self();
  std::vector<std::future<Status>> pending;
  std::vector<std::shared_ptr<UniqueFd>> conns;  // adopted ones are moved out (invalid)
  std::mutex mu;
  uint32_t done = 0;
  auto count_done = [&] {
    std::lock_guard<std::mutex> l(mu);
    return done;
  };
  while (count_done() < want) {
    if (Status s = WaitFd(listener_.get(), POLLIN, std::min(deadline_ms, NowMs() + 5), "accept");
        !s.ok()) {
      if (NowMs() >= deadline_ms) {
        return Status::Timeout(fmt::format("shm: {} of {} nodes above {} did not connect in time",
                                           want - count_done(), want, self()));
      }
      continue;
    }
    int c = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    auto fd = std::make_shared<UniqueFd>(c);
    conns.push_back(fd);
    pending.push_back(std::async(std::launch::async, [this, fd, deadline_ms, &mu, &done] {
      Offer o;
      Status s = Exchange(fd->get(), false, kNoNode, std::min(deadline_ms, NowMs() + HandshakeMs(opt_)), &o);
      // Two connections may claim one node: adopt under mu.
      std::lock_guard<std::mutex> l(mu);
      if (s.ok()) s = Adopt(o);
      if (s.ok()) {
        peers_[o.node].link = std::move(*fd);
        ++done;
      } else {
        spdlog::error("shm: node {}: refused a connection: {}", self(), s.ToString());
      }
      return s;
    }));
  }
  {
    // Everyone is here: cut short the handshakes of whoever else connected.
    std::lock_guard<std::mutex> l(mu);
    for (auto& fd : conns)
      if (fd->valid()) shutdown(fd->get(), SHUT_RDWR);
  }
  for (auto& f : pending) f.wait();
  return Status::Ok();
}

// Proves the key, then swaps offers (both send first: they are small).
Status ShmNicImpl::Exchange(int fd, bool dialer, NodeId expected, int64_t deadline_ms, Offer* out) {
  static_assert(std::is_same_v<JobKey, svmd::Key>);
  if (Status s = svmd::Authenticate(fd, opt_.key, dialer ? svmd::AuthRole::kClient : svmd::AuthRole::kServer,
                                    deadline_ms);
      !s.ok())
    return s;
  if (Status s = SendOffer(fd); !s.ok()) return s;
  return ReceiveOffer(fd, deadline_ms, expected, out);
}

// Offer: magic u64 | epoch | node | nodes | ring_bytes | regions (u32 each) |
// control bytes u64 | per region: id u32, length u64, offset u64. Files:
// the control file, then one per region, as SCM_RIGHTS on the first byte.
Status ShmNicImpl::SendOffer(int fd) {
  std::vector<uint8_t> body;
  coding::Writer w(&body);
  w.PutU64(kOfferMagic);
  w.PutU32(opt_.epoch);
  w.PutU32(self());
  w.PutU32(num_nodes());
  w.PutU32(layout_.ring_bytes);
  w.PutU32(uint32_t(own_.size()));
  w.PutU64(control_.size());
  std::vector<int> files = {control_.fd()};
  for (const MemoryRegion& r : own_) {
    w.PutU32(r.id);
    w.PutU64(r.length);
    w.PutU64(r.fd_offset);
    files.push_back(r.fd);
  }
  std::vector<char> cbuf(CMSG_SPACE(sizeof(int) * files.size()));
  iovec iov{body.data(), body.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = cbuf.data();
  m.msg_controllen = cbuf.size();
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * files.size());
  std::memcpy(CMSG_DATA(c), files.data(), sizeof(int) * files.size());
  ssize_t n;
  do n = sendmsg(fd, &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Sys("sendmsg");
  if (size_t(n) < body.size()) return svmd::WriteAll(fd, body.data() + n, body.size() - size_t(n));
  return Status::Ok();
}

Status ShmNicImpl::ReceiveOffer(int fd, int64_t deadline_ms, NodeId expected, Offer* out) {
  std::vector<uint8_t> body(kOfferHeader + kOfferRegion * kMaxRegions);
  std::vector<char> cbuf(CMSG_SPACE(sizeof(int) * (kMaxRegions + 1)));
  std::vector<UniqueFd> files;
  size_t got = 0;
  // The files come with the first bytes; the rest is plain stream.
  while (got < kOfferHeader) {
    if (Status s = WaitFd(fd, POLLIN, deadline_ms, "offer"); !s.ok()) return s;
    iovec iov{body.data() + got, kOfferHeader - got};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf.data();
    m.msg_controllen = cbuf.size();
    ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Sys("recvmsg");
    if (n == 0) return Status::Closed("shm: the peer closed before its offer");
    if (m.msg_flags & MSG_CTRUNC) return Status::Malformed("shm: an offer with too many files");
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int f;
        std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        files.emplace_back(f);
      }
    }
    got += size_t(n);
  }
  coding::Reader r(std::span<const uint8_t>(body.data(), kOfferHeader));
  uint64_t magic = 0, control_bytes = 0;
  uint32_t epoch = 0, node = 0, nodes = 0, ring_bytes = 0, regions = 0;
  if (!r.GetU64(&magic) || !r.GetU32(&epoch) || !r.GetU32(&node) || !r.GetU32(&nodes) ||
      !r.GetU32(&ring_bytes) || !r.GetU32(&regions) || !r.GetU64(&control_bytes) || magic != kOfferMagic)
    return Status::Malformed("shm: not an offer");
  if (epoch != opt_.epoch) return Status::Malformed(fmt::format("shm: an offer of job epoch {}, not {}", epoch, opt_.epoch));
  if (nodes != num_nodes() || ring_bytes != layout_.ring_bytes || control_bytes != control_.size())
    return Status::Malformed(fmt::format("shm: an offer for {} nodes / {}-byte rings; this job has {} / {}", nodes,
                                         ring_bytes, num_nodes(), layout_.ring_bytes));
  const bool node_ok = expected != kNoNode ? node == expected : node > self() && node < num_nodes();
  if (!node_ok) return Status::Malformed(fmt::format("shm: an offer from node {} on this connection", node));
  if (regions > kMaxRegions || files.size() != regions + 1)
    return Status::Malformed(fmt::format("shm: an offer of {} regions with {} files", regions, files.size()));
  const size_t total = kOfferHeader + kOfferRegion * regions;
  if (Status s = svmd::ReadFull(fd, body.data() + got, total - got, deadline_ms); !s.ok()) return s;
  coding::Reader rr(std::span<const uint8_t>(body.data() + kOfferHeader, total - kOfferHeader));
  out->node = node;
  out->control_bytes = control_bytes;
  out->regions.resize(regions);
  for (Offer::Region& g : out->regions) {
    if (!rr.GetU32(&g.id) || !rr.GetU64(&g.length) || !rr.GetU64(&g.offset)) return Status::Malformed("shm: a short offer");
    if (g.length == 0 || g.length > SIZE_MAX)
      return Status::Malformed(fmt::format("shm: region {} of {} bytes", g.id, g.length));
  }
  out->files = std::move(files);
  return Status::Ok();
}

// Maps what the offer hands us. Until control is set the peer is not there.
Status ShmNicImpl::Adopt(const Offer& o) {
  Peer& p = peers_[o.node];
  if (p.control != nullptr) return Status::Malformed(fmt::format("shm: node {} connected twice", o.node));
  uint8_t* control = nullptr;
  void* map = nullptr;
  size_t map_len = 0;
  if (Status s = MapFile(o.files[0].get(), 0, o.control_bytes, &control, &map, &map_len); !s.ok()) return s;
  p.maps.emplace_back(map, map_len);
  for (size_t i = 0; i < o.regions.size(); ++i) {
    const Offer::Region& g = o.regions[i];
    uint8_t* base = nullptr;
    if (Status s = MapFile(o.files[i + 1].get(), g.offset, size_t(g.length), &base, &map, &map_len); !s.ok())
      return s;
    p.maps.emplace_back(map, map_len);
    if (Status s = p.regions.Add({g.id, base, size_t(g.length)}); !s.ok())
      return Status::Malformed(fmt::format("shm: node {}'s offer: {}", o.node, s.message()));
  }
  p.control = control;
  return Status::Ok();
}

}  // namespace shm

Status ShmNic::Create(const ShmOptions& options, std::unique_ptr<ShmNic>* out) {
  using shm::Sys;
  using svmd::UniqueFd;
  ShmOptions o = options;
  if (o.key == JobKey{}) return Status::InvalidArgument("shm: a job key is required");
  if (o.num_nodes == 0 || o.num_nodes > kMaxNodes || o.self >= o.num_nodes)
    return Status::InvalidArgument(fmt::format("shm: node {} of {} (at most {})", o.self, o.num_nodes, kMaxNodes));
  if (o.ring_bytes == 0) o.ring_bytes = DefaultShmRingBytes(o.num_nodes);
  if (!std::has_single_bit(o.ring_bytes) || o.ring_bytes < 4096)
    return Status::InvalidArgument(fmt::format("shm: ring of {} bytes (a power of two >= 4096)", o.ring_bytes));
  const shm::Layout layout = shm::Layout::For(o.num_nodes, o.ring_bytes);
  SharedMemory control;
  if (Status s = SharedMemory::Create("svm-shm-nic", layout.bytes, &control); !s.ok()) return s;
  UniqueFd l(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!l.valid()) return Sys("socket");
  // Autobind: the kernel picks an unused abstract name.
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (bind(l.get(), reinterpret_cast<sockaddr*>(&a), sizeof(sa_family_t)) != 0) return Sys("bind");
  if (listen(l.get(), 128) != 0) return Sys("listen");
  socklen_t len = sizeof(a);
  if (getsockname(l.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return Sys("getsockname");
  const size_t name_len = len - offsetof(sockaddr_un, sun_path) - 1;
  std::string address = "unix:@" + std::string(a.sun_path + 1, name_len);
  *out = std::make_unique<shm::ShmNicImpl>(o, std::move(control), std::move(l), std::move(address));
  return Status::Ok();
}

}  // namespace svm::nic
