// Status: the outcome of an operation that can fail, as a value; one type for
// the whole project (protocol, NIC, runtime and the control path).
//
// Success costs nothing but an enum; failures carry a short message that
// names what was wrong. Copyable, movable; not thread-safe beyond that.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace svm {

class Status {
 public:
  enum class Code {
    kOk,
    kMalformed,        // bytes from a peer that break the format or the protocol
    kInvalidArgument,
    kUnsupported,
    kOutOfRange,
    kIoError,          // a system call failed
    kAuthFailed,       // a peer failed (or refused) the job key's proof
    kTimeout,
    kClosed,           // the peer closed the connection in an orderly way
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status Malformed(std::string_view msg) { return {Code::kMalformed, msg}; }
  static Status InvalidArgument(std::string_view msg) { return {Code::kInvalidArgument, msg}; }
  static Status Unsupported(std::string_view msg) { return {Code::kUnsupported, msg}; }
  static Status OutOfRange(std::string_view msg) { return {Code::kOutOfRange, msg}; }
  static Status IoError(std::string_view msg) { return {Code::kIoError, msg}; }
  // IoError with strerror(err) appended: "what: No such file or directory".
  static Status Errno(std::string_view what, int err);
  static Status AuthFailed(std::string_view msg) { return {Code::kAuthFailed, msg}; }
  static Status Timeout(std::string_view msg) { return {Code::kTimeout, msg}; }
  static Status Closed(std::string_view msg) { return {Code::kClosed, msg}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string_view msg) : code_(code), message_(msg) {}

  Code code_ = Code::kOk;
  std::string message_;
};

const char* ToString(Status::Code code);

}  // namespace svm
