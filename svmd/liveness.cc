#include "svmd/liveness.h"

#include <dirent.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace svm::svmd {

int64_t LivenessMs(double seconds) { return seconds > 0 ? int64_t(std::ceil(seconds * 1000)) : 0; }

std::string LivenessEnv(double seconds) {
  char b[64];
  std::snprintf(b, sizeof(b), "SVM_LIVENESS_TIMEOUT=%g", seconds);
  return b;
}

namespace {

// A /proc stat file's line (cut at 511 bytes, enough for the fields read
// here); empty if it cannot be read.
std::string ReadStat(const char* path) {
  char buf[512];
  FILE* f = std::fopen(path, "r");
  if (!f) return {};
  const size_t n = std::fread(buf, 1, sizeof(buf), f);
  std::fclose(f);
  return std::string(buf, n);
}

}  // namespace

char ProcessState(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
  const std::string stat = ReadStat(path);
  const size_t rp = stat.rfind(')');
  return rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 1] == ' ' ? stat[rp + 2] : 0;
}

unsigned long StatFlags(std::string_view stat) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may
  // hold spaces and parentheses, so the fields are read after the last ')'.
  const size_t rp = stat.rfind(')');
  if (rp == std::string_view::npos) return 0;
  const std::string rest(stat.substr(rp + 1));
  unsigned long flags = 0;
  return std::sscanf(rest.c_str(), " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 ? flags : 0;
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
    char path[sizeof(dir) + sizeof(e->d_name) + 8];
    std::snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
    if (StatFlags(ReadStat(path)) & kPfDumpcore) {
      dumping = true;
      break;
    }
  }
  closedir(d);
  return dumping;
}

bool CannotAnswer(pid_t pid) { return Unresponsive(ProcessState(pid)) && !DumpingCore(pid); }

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
