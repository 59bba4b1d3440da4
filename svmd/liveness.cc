#include "svmd/liveness.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

unsigned long StatFlags(std::string_view stat) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may
  // hold spaces and parentheses, so count fields after the last ')'.
  const size_t rp = stat.rfind(')');
  if (rp == std::string_view::npos) return 0;
  std::string_view rest = stat.substr(rp + 1);
  for (int field = 3; field <= 9; ++field) {
    const size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return 0;
    rest.remove_prefix(start);
    const size_t end = std::min(rest.find(' '), rest.size());
    if (field == 9) return std::strtoul(std::string(rest.substr(0, end)).c_str(), nullptr, 10);
    rest.remove_prefix(end);
  }
  return 0;
}

bool DumpingCore(pid_t pid) {
  constexpr unsigned long kPfDumpcore = 0x200;  // include/linux/sched.h
  char dir[64];
  std::snprintf(dir, sizeof(dir), "/proc/%d/task", int(pid));
  DIR* d = opendir(dir);
  if (!d) return false;
  bool dumping = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[sizeof(dir) + sizeof(e->d_name) + 8], buf[512] = {};
    std::snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
    FILE* f = std::fopen(path, "r");
    if (!f) continue;
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    if (StatFlags(std::string_view(buf, n)) & kPfDumpcore) {
      dumping = true;
      break;
    }
  }
  closedir(d);
  return dumping;
}

std::string DescribeSilence(pid_t pid) {
  if (DumpingCore(pid)) return "crashed and is writing a core dump";
  switch (ProcessState(pid)) {
    case 'T':
    case 't': return "stopped (SIGSTOP, or a debugger)";
    case 'D': return "stuck in the kernel (state D)";
    default: return "not answering (cut off, or starved of CPU)";
  }
}

}  // namespace svm::svmd
