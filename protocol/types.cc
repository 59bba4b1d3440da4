#include "protocol/types.h"

namespace svm {

const char* ToString(Access a) {
  switch (a) {
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
  }
  return "?";
}

const char* ToString(Prot p) {
  switch (p) {
    case Prot::kNone: return "none";
    case Prot::kRead: return "read";
    case Prot::kReadWrite: return "read-write";
  }
  return "?";
}

}  // namespace svm
