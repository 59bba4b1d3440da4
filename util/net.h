// Small socket and descriptor helpers for the control path (TCP over IPv4
// or IPv6; host names resolve to either).
//
// Every call that can block takes a deadline (monotonic milliseconds from
// NowMs(), or kNoDeadline). Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "util/status.h"

namespace svm::svmd {

inline constexpr int64_t kNoDeadline = INT64_MAX;

int64_t NowMs();  // CLOCK_MONOTONIC in milliseconds

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "host:port" -> host, port. The host may be a name, a dotted IPv4 address
// or an IPv6 address in brackets ("[fd00::1]:7117"; *host gets it bare).
Status ParseHostPort(std::string_view s, std::string* host, uint16_t* port);
// As ParseHostPort, the port optional ("h", "h:1", "[v6]:1", "[v6]", "v6").
Status ParseHostMaybePort(std::string_view s, uint16_t default_port, std::string* host, uint16_t* port);
// host:port, with brackets around an IPv6 host.
std::string JoinHostPort(const std::string& host, uint16_t port);

// Listens on host:port (port 0 picks one); *bound_port gets the real port.
// host "" or "*": every address, IPv6 and IPv4 on one dual-stack socket
// where the kernel has IPv6, else IPv4 only.
Status Listen(const std::string& host, uint16_t port, UniqueFd* fd, uint16_t* bound_port);
// Connects to host:port (each address of a name in turn), giving up at the
// deadline. Sets TCP_NODELAY.
Status Connect(const std::string& host, uint16_t port, int64_t deadline_ms, UniqueFd* fd);

// Local / remote address of a connected socket as "a.b.c.d" or "fd00::1" /
// "a.b.c.d:port" or "[fd00::1]:port" (IPv4-mapped IPv6 shown as IPv4).
std::string LocalIp(int fd);
std::string PeerString(int fd);
// The local address this host would use to reach `host` (no packet sent).
Status LocalIpToward(const std::string& host, std::string* ip);

// Writes all of [data, data+n) (EINTR and short writes handled; SIGPIPE never
// raised on sockets).
Status WriteAll(int fd, const void* data, size_t n);
// Reads exactly n bytes unless EOF (kClosed), an error, or the deadline.
Status ReadFull(int fd, void* data, size_t n, int64_t deadline_ms);

void SetCloexec(int fd, bool on);
void SetNonblocking(int fd, bool on);

}  // namespace svm::svmd
