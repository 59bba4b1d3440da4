#include "protocol/status.h"

namespace svm {

const char* ToString(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "ok";
    case Status::Code::kMalformed: return "malformed";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kUnsupported: return "unsupported";
    case Status::Code::kOutOfRange: return "out of range";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(svm::ToString(code_)) + ": " + message_;
}

}  // namespace svm
