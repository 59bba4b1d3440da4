#include "protocol/types.h"

#include <cstring>
#include <initializer_list>

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

const char* ToString(Mode m) {
  switch (m) {
    case Mode::kBase: return "base";
    case Mode::kDw: return "dw";
    case Mode::kRf: return "rf";
    case Mode::kDd: return "dd";
    case Mode::kNil: return "nil";
  }
  return "?";
}

bool ParseMode(const char* s, Mode* out) {
  for (Mode m : {Mode::kBase, Mode::kDw, Mode::kRf, Mode::kDd, Mode::kNil}) {
    if (std::strcmp(s, ToString(m)) == 0) {
      *out = m;
      return true;
    }
  }
  return false;
}

}  // namespace svm
