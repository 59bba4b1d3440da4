// svmd::Status: the outcome of a control-path operation, as a value.
//
// The control path (launcher, daemon, node-side client) reports failures that
// the pure protocol layer never sees: I/O errors, refused authentication,
// peers that went away. Success is one enum; a failure carries a message that
// names what was wrong. Copyable; no shared state.
#pragma once

#include <string>
#include <string_view>

namespace svm::svmd {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kIoError, kAuthFailed, kProtocolError, kTimeout, kClosed };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string_view m) { return {Code::kInvalidArgument, m}; }
  static Status IoError(std::string_view m) { return {Code::kIoError, m}; }
  // IoError with strerror(err) appended: "what: No such file or directory".
  static Status Errno(std::string_view what, int err);
  static Status AuthFailed(std::string_view m) { return {Code::kAuthFailed, m}; }
  static Status ProtocolError(std::string_view m) { return {Code::kProtocolError, m}; }
  static Status Timeout(std::string_view m) { return {Code::kTimeout, m}; }
  // The peer closed the connection in an orderly way.
  static Status Closed(std::string_view m) { return {Code::kClosed, m}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code c, std::string_view m) : code_(c), message_(m) {}
  Code code_ = Code::kOk;
  std::string message_;
};

const char* ToString(Status::Code code);

}  // namespace svm::svmd
