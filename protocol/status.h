// Status: the outcome of an operation that can fail, as a value.
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
  enum class Code { kOk, kMalformed, kInvalidArgument, kUnsupported, kOutOfRange };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status Malformed(std::string_view msg) { return {Code::kMalformed, msg}; }
  static Status InvalidArgument(std::string_view msg) { return {Code::kInvalidArgument, msg}; }
  static Status Unsupported(std::string_view msg) { return {Code::kUnsupported, msg}; }
  static Status OutOfRange(std::string_view msg) { return {Code::kOutOfRange, msg}; }

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
