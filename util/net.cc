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
#include <charconv>
#include <cstring>

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
  unsigned p = 0;
  std::string_view ps = s.substr(colon + 1);
  auto [end, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
  if (ec != std::errc() || end != ps.data() + ps.size() || p > 65535)
    return Status::InvalidArgument("'" + std::string(s) + "': bad port");
  *host = std::string(s.substr(0, colon));
  *port = uint16_t(p);
  return Status::Ok();
}

static Status Resolve(const std::string& host, uint16_t port, sockaddr_in* out) {
  std::memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  out->sin_port = htons(port);
  if (host.empty() || host == "*") {
    out->sin_addr.s_addr = htonl(INADDR_ANY);
    return Status::Ok();
  }
  if (inet_pton(AF_INET, host.c_str(), &out->sin_addr) == 1) return Status::Ok();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  out->sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return Status::Ok();
}

Status Listen(const std::string& host, uint16_t port, UniqueFd* fd, uint16_t* bound_port) {
  sockaddr_in sa;
  Status s = Resolve(host, port, &sa);
  if (!s.ok()) return s;
  UniqueFd f(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!f.valid()) return Status::Errno("socket", errno);
  int one = 1;
  setsockopt(f.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(f.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    return Status::Errno("bind " + host + ":" + std::to_string(port), errno);
  if (::listen(f.get(), 128) != 0) return Status::Errno("listen", errno);
  socklen_t len = sizeof(sa);
  getsockname(f.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  if (bound_port) *bound_port = ntohs(sa.sin_port);
  *fd = std::move(f);
  return Status::Ok();
}

Status Connect(const std::string& host, uint16_t port, int64_t deadline_ms, UniqueFd* fd) {
  sockaddr_in sa;
  Status s = Resolve(host, port, &sa);
  if (!s.ok()) return s;
  std::string what = "connect to " + host + ":" + std::to_string(port);
  UniqueFd f(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!f.valid()) return Status::Errno("socket", errno);
  if (::connect(f.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
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
  SetNonblocking(f.get(), false);
  int one = 1;
  setsockopt(f.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  *fd = std::move(f);
  return Status::Ok();
}

std::string LocalIp(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  char buf[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof(buf));
  return buf;
}

std::string PeerString(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  char buf[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(ntohs(sa.sin_port));
}

Status LocalIpToward(const std::string& host, std::string* ip) {
  sockaddr_in sa;
  Status s = Resolve(host, 9, &sa);
  if (!s.ok()) return s;
  UniqueFd f(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!f.valid()) return Status::Errno("socket", errno);
  if (::connect(f.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    return Status::Errno("route to " + host, errno);
  *ip = LocalIp(f.get());
  return Status::Ok();
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
