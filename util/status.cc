#include "util/status.h"

#include <cstring>

namespace svm {

const char* ToString(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "ok";
    case Status::Code::kMalformed: return "malformed";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kUnsupported: return "unsupported";
    case Status::Code::kOutOfRange: return "out of range";
    case Status::Code::kIoError: return "I/O error";
    case Status::Code::kAuthFailed: return "authentication failed";
    case Status::Code::kTimeout: return "timeout";
    case Status::Code::kClosed: return "connection closed";
  }
  return "unknown";
}

Status Status::Errno(std::string_view what, int err) {
  std::string m(what);
  m += ": ";
  m += std::strerror(err);
  return IoError(m);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(svm::ToString(code_)) + ": " + message_;
}

}  // namespace svm
