// BitFlipProxy: a man in the middle for tests of authenticated traffic. It
// listens on `listen_ip`, and for the first connection it accepts dials
// `target` ("ip:port"), forwards both ways, and flips `mask` in the byte
// that lies `flip_at` bytes into what the target sends.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace svm::test_util {

class BitFlipProxy {
 public:
  BitFlipProxy(const std::string& listen_ip, const std::string& target, size_t flip_at, uint8_t mask)
      : target_(target), flip_at_(flip_at), mask_(mask) {
    listen_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    socklen_t len = sizeof a;
    if (inet_pton(AF_INET, listen_ip.c_str(), &a.sin_addr) != 1 ||
        bind(listen_, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(listen_, 4) != 0 ||
        getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;  // ok() is false
    }
    address_ = listen_ip + ":" + std::to_string(ntohs(a.sin_port));
    thread_ = std::thread([this] { Run(); });
  }
  ~BitFlipProxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(listen_);
  }
  BitFlipProxy(const BitFlipProxy&) = delete;
  BitFlipProxy& operator=(const BitFlipProxy&) = delete;

  bool ok() const { return !address_.empty(); }
  const std::string& address() const { return address_; }  // where to connect instead of the target
  bool flipped() const { return flipped_; }

 private:
  static int Dial(const std::string& address) {
    const size_t colon = address.rfind(':');
    addrinfo hints{}, *ai = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints, &ai) != 0)
      return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
  }

  void Run() {
    pollfd l{listen_, POLLIN, 0};
    while (!stop_ && poll(&l, 1, 100) <= 0) {
    }
    if (stop_) return;
    const int down = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    const int up = Dial(target_);
    size_t from_up = 0;
    uint8_t buf[65536];
    while (!stop_ && down >= 0 && up >= 0) {
      pollfd p[2] = {{down, POLLIN, 0}, {up, POLLIN, 0}};
      if (poll(p, 2, 100) <= 0) continue;
      if (p[0].revents) {
        ssize_t r = recv(down, buf, sizeof buf, 0);
        if (r <= 0 || send(up, buf, size_t(r), MSG_NOSIGNAL) != r) break;
      }
      if (p[1].revents) {
        ssize_t r = recv(up, buf, sizeof buf, 0);
        if (r <= 0) break;
        if (from_up <= flip_at_ && flip_at_ < from_up + size_t(r)) {
          buf[flip_at_ - from_up] ^= mask_;
          flipped_ = true;
        }
        from_up += size_t(r);
        if (send(down, buf, size_t(r), MSG_NOSIGNAL) != r) break;
      }
    }
    if (down >= 0) close(down);
    if (up >= 0) close(up);
  }

  const std::string target_;
  const size_t flip_at_;
  const uint8_t mask_;
  std::string address_;
  int listen_ = -1;
  std::atomic<bool> stop_{false}, flipped_{false};
  std::thread thread_;
};

}  // namespace svm::test_util
