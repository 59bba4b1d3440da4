#include "util/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

namespace svm::svmd {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status ParseHostPort(std::string_view s, std::string* host, uint16_t* port) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size())
    return Status::InvalidArgument("'" + std::string(s) + "' is not HOST:PORT");
  std::string_view h = s.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']')
      return Status::InvalidArgument("'" + std::string(s) + "': unbalanced [ ] around the address");
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string_view::npos) {
    return Status::InvalidArgument("'" + std::string(s) + "': write an IPv6 address with a port as [ADDR]:PORT");
  }
  unsigned p = 0;
  std::string_view ps = s.substr(colon + 1);
  auto [end, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
  if (ec != std::errc() || end != ps.data() + ps.size() || p > 65535)
    return Status::InvalidArgument("'" + std::string(s) + "': bad port");
  *host = std::string(h);
  *port = uint16_t(p);
  return Status::Ok();
}

Status ParseHostMaybePort(std::string_view s, uint16_t default_port, std::string* host, uint16_t* port) {
  if (s.empty()) return Status::InvalidArgument("empty host name");
  const size_t colons = size_t(std::count(s.begin(), s.end(), ':'));
  if (s.front() == '[' && s.back() == ']') {  // [v6] without a port
    *host = std::string(s.substr(1, s.size() - 2));
    *port = default_port;
    return host->empty() ? Status::InvalidArgument("empty host name") : Status::Ok();
  }
  if (colons == 0 || (colons > 1 && s.front() != '[')) {  // a name, dotted IPv4 or bare IPv6
    *host = std::string(s);
    *port = default_port;
    return Status::Ok();
  }
  return ParseHostPort(s, host, port);
}

std::string JoinHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

namespace {

// Every address of host (a name, IPv4 or IPv6 literal); "" or "*": the
// wildcard, IPv6 first (dual-stack) then IPv4.
Status Resolve(const std::string& host, uint16_t port, int socktype, std::vector<sockaddr_storage>* out,
               std::vector<socklen_t>* lens) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  const bool wildcard = host.empty() || host == "*";
  if (wildcard) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(wildcard ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr)
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  for (addrinfo* a = res; a; a = a->ai_next) {
    sockaddr_storage ss{};
    std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
    out->push_back(ss);
    lens->push_back(a->ai_addrlen);
  }
  freeaddrinfo(res);
  if (wildcard) {  // AF_INET6 first: one dual-stack socket takes both
    std::vector<size_t> order(out->size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto v6 = [&](size_t i) { return (*out)[i].ss_family == AF_INET6; };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v6(a) && !v6(b); });
    std::vector<sockaddr_storage> o2;
    std::vector<socklen_t> l2;
    for (size_t i : order) {
      o2.push_back((*out)[i]);
      l2.push_back((*lens)[i]);
    }
    *out = std::move(o2);
    *lens = std::move(l2);
  }
  return Status::Ok();
}

// "a.b.c.d" or "v6" (an IPv4-mapped IPv6 address as its IPv4 form); port too.
std::string AddressString(const sockaddr_storage& ss, uint16_t* port) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* s4 = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &s4->sin_addr, buf, sizeof(buf));
    if (port) *port = ntohs(s4->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], buf, sizeof(buf));
    else inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof(buf));
    if (port) *port = ntohs(s6->sin6_port);
  }
  return buf;
}

}  // namespace

Status Listen(const std::string& host, uint16_t port, UniqueFd* fd, uint16_t* bound_port) {
  std::vector<sockaddr_storage> addrs;
  std::vector<socklen_t> lens;
  Status s = Resolve(host, port, SOCK_STREAM, &addrs, &lens);
  if (!s.ok()) return s;
  Status last;
  for (size_t i = 0; i < addrs.size(); ++i) {
    UniqueFd f(::socket(addrs[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!f.valid()) {
      last = Status::Errno("socket", errno);
      continue;  // e.g. no IPv6 in this kernel: the IPv4 wildcard next
    }
    int one = 1, zero = 0;
    setsockopt(f.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addrs[i].ss_family == AF_INET6) setsockopt(f.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (::bind(f.get(), reinterpret_cast<sockaddr*>(&addrs[i]), lens[i]) != 0) {
      last = Status::Errno("bind " + JoinHostPort(host, port), errno);
      continue;
    }
    if (::listen(f.get(), 128) != 0) return Status::Errno("listen", errno);
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    getsockname(f.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    if (bound_port) AddressString(sa, bound_port);
    *fd = std::move(f);
    return Status::Ok();
  }
  return last;
}

namespace {

Status ConnectOne(const sockaddr_storage& sa, socklen_t salen, const std::string& what, int64_t deadline_ms,
                  UniqueFd* fd) {
  UniqueFd f(::socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!f.valid()) return Status::Errno("socket", errno);
  if (::connect(f.get(), reinterpret_cast<const sockaddr*>(&sa), salen) != 0) {
    if (errno != EINPROGRESS) return Status::Errno(what, errno);
    for (;;) {
      int64_t left = deadline_ms == kNoDeadline ? -1 : deadline_ms - NowMs();
      if (deadline_ms != kNoDeadline && left <= 0) return Status::Timeout(what + ": timed out");
      pollfd p{f.get(), POLLOUT, 0};
      int rc = ::poll(&p, 1, left < 0 ? -1 : int(std::min<int64_t>(left, 1 << 30)));
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) return Status::Errno(what, errno);
      if (rc == 0) continue;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(f.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return Status::Errno(what, err);
      break;
    }
  }
  *fd = std::move(f);
  return Status::Ok();
}

}  // namespace

Status Connect(const std::string& host, uint16_t port, int64_t deadline_ms, UniqueFd* fd) {
  std::vector<sockaddr_storage> addrs;
  std::vector<socklen_t> lens;
  Status s = Resolve(host, port, SOCK_STREAM, &addrs, &lens);
  if (!s.ok()) return s;
  const std::string what = "connect to " + JoinHostPort(host, port);
  UniqueFd f;
  for (size_t i = 0; i < addrs.size(); ++i) {  // each address of a name in turn
    s = ConnectOne(addrs[i], lens[i], what, deadline_ms, &f);
    if (s.ok() || s.code() == Status::Code::kTimeout) break;
  }
  if (!s.ok()) return s;
  SetNonblocking(f.get(), false);
  int one = 1;
  setsockopt(f.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  *fd = std::move(f);
  return Status::Ok();
}

std::string LocalIp(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  return AddressString(sa, nullptr);
}

std::string PeerString(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  uint16_t port = 0;
  const std::string ip = AddressString(sa, &port);
  return JoinHostPort(ip, port);
}

Status LocalIpToward(const std::string& host, std::string* ip) {
  std::vector<sockaddr_storage> addrs;
  std::vector<socklen_t> lens;
  Status s = Resolve(host, 9, SOCK_DGRAM, &addrs, &lens);
  if (!s.ok()) return s;
  for (size_t i = 0; i < addrs.size(); ++i) {
    UniqueFd f(::socket(addrs[i].ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!f.valid()) {
      s = Status::Errno("socket", errno);
      continue;
    }
    if (::connect(f.get(), reinterpret_cast<sockaddr*>(&addrs[i]), lens[i]) != 0) {
      s = Status::Errno("route to " + host, errno);
      continue;
    }
    *ip = LocalIp(f.get());
    return Status::Ok();
  }
  return s;
}

Status WriteAll(int fd, const void* data, size_t n) {
  struct stat st;
  bool sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = sock ? ::send(fd, p, n, MSG_NOSIGNAL) : ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd pf{fd, POLLOUT, 0};
        ::poll(&pf, 1, -1);
        continue;
      }
      return Status::Errno("write", errno);
    }
    p += w;
    n -= size_t(w);
  }
  return Status::Ok();
}

Status ReadFull(int fd, void* data, size_t n, int64_t deadline_ms) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    int64_t left = deadline_ms == kNoDeadline ? -1 : deadline_ms - NowMs();
    if (deadline_ms != kNoDeadline && left <= 0) return Status::Timeout("read timed out");
    pollfd pf{fd, POLLIN, 0};
    int rc = ::poll(&pf, 1, left < 0 ? -1 : int(std::min<int64_t>(left, 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Status::Errno("poll", errno);
    if (rc == 0) continue;
    ssize_t r = ::read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::Errno("read", errno);
    }
    if (r == 0) return Status::Closed("peer closed the connection");
    p += r;
    n -= size_t(r);
  }
  return Status::Ok();
}

void SetCloexec(int fd, bool on) {
  int fl = fcntl(fd, F_GETFD);
  if (fl >= 0) fcntl(fd, F_SETFD, on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC));
}

void SetNonblocking(int fd, bool on) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

}  // namespace svm::svmd
