#include "libsvm/log.h"

#include <unistd.h>

#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace svm::rt {
namespace {

class FdSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    const char* p = buf.data();
    size_t left = buf.size();
    while (left > 0) {
      ssize_t n = ::write(2, p, left);
      if (n <= 0) return;
      p += n;
      left -= size_t(n);
    }
  }
  void flush_() override {}
};

}  // namespace

void InitLogging(const std::string& level, NodeId node) {
  auto logger = std::make_shared<spdlog::logger>("svm", std::make_shared<FdSink>());
  logger->set_pattern(fmt::format("[svm n{}] %l: %v", node));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace svm::rt
