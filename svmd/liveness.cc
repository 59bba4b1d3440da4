#include "svmd/liveness.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace svm::svmd {

int64_t LivenessMs(double seconds) { return seconds > 0 ? int64_t(std::ceil(seconds * 1000)) : 0; }

std::string LivenessEnv(double seconds) {
  char b[64];
  std::snprintf(b, sizeof(b), "SVM_LIVENESS_TIMEOUT=%g", seconds);
  return b;
}

char ProcessState(pid_t pid) {
  char path[64], buf[512] = {};
  std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* rp = n > 0 ? std::strrchr(buf, ')') : nullptr;
  return rp && rp[1] == ' ' ? rp[2] : 0;
}

std::string DescribeSilence(pid_t pid) {
  switch (ProcessState(pid)) {
    case 'T':
    case 't': return "stopped (SIGSTOP, or a debugger)";
    case 'D': return "stuck in the kernel (state D)";
    default: return "not answering (cut off, or starved of CPU)";
  }
}

}  // namespace svm::svmd
