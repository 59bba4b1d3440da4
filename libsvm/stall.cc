#include "libsvm/stall.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace svm::rt {
namespace {

constexpr int kSamples = 5;
constexpr uintptr_t kLoopBytes = 256;  // a tight loop's pcs lie within this
constexpr size_t kRegs = 32;

// One sample of a thread's context, written by the signal handler.
struct Sample {
  std::atomic<pid_t> tid{0};
  std::atomic<int> done{0};
  uintptr_t pc = 0;
  uintptr_t regs[kRegs] = {};
  size_t nregs = 0;
};
Sample g_sample;

int SampleSignal() { return SIGRTMAX - 2; }

void OnSample(int, siginfo_t*, void* ctx) {
  if (pid_t(syscall(SYS_gettid)) != g_sample.tid.load(std::memory_order_acquire)) return;
  const auto* uc = static_cast<const ucontext_t*>(ctx);
#if defined(__x86_64__)
  g_sample.pc = uintptr_t(uc->uc_mcontext.gregs[REG_RIP]);
  const int gprs[] = {REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP, REG_R8,
                      REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
  g_sample.nregs = 0;
  for (int r : gprs) g_sample.regs[g_sample.nregs++] = uintptr_t(uc->uc_mcontext.gregs[r]);
#elif defined(__aarch64__)
  g_sample.pc = uintptr_t(uc->uc_mcontext.pc);
  g_sample.nregs = 31;
  for (size_t r = 0; r < 31; ++r) g_sample.regs[r] = uintptr_t(uc->uc_mcontext.regs[r]);
#else
  (void)uc;
#endif
  g_sample.done.store(1, std::memory_order_release);
}

struct TaskStat {
  char state = '?';
  uint64_t faults = 0;  // minor + major
  uint64_t utime = 0, stime = 0;  // clock ticks
};

bool ReadStat(pid_t tid, TaskStat* out) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", int(tid));
  FILE* f = fopen(path, "re");
  if (!f) return false;
  char buf[1024];
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the name may hold spaces and parentheses
  if (!p) return false;
  unsigned long long minflt = 0, majflt = 0, utime = 0, stime = 0;
  // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  if (sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %llu %*u %llu %*u %llu %llu", &out->state, &minflt, &majflt, &utime,
             &stime) != 5)
    return false;
  out->faults = minflt + majflt;
  out->utime = utime;
  out->stime = stime;
  return true;
}

std::vector<pid_t> Tasks() {
  std::vector<pid_t> tids;
  DIR* d = opendir("/proc/self/task");
  if (!d) return tids;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') tids.push_back(pid_t(atoi(e->d_name)));
  closedir(d);
  return tids;
}

// Samples tid's context once (false: it did not answer in time).
bool TakeSample(pid_t tid, uintptr_t* pc, std::vector<uintptr_t>* regs) {
  g_sample.done.store(0, std::memory_order_relaxed);
  g_sample.tid.store(tid, std::memory_order_release);
  if (syscall(SYS_tgkill, getpid(), tid, SampleSignal()) != 0) return false;
  for (int i = 0; i < 2000 && !g_sample.done.load(std::memory_order_acquire); ++i) usleep(500);
  g_sample.tid.store(0, std::memory_order_release);
  if (!g_sample.done.load(std::memory_order_acquire)) return false;
  *pc = g_sample.pc;
  regs->assign(g_sample.regs, g_sample.regs + g_sample.nregs);
  return true;
}

struct Track {
  TaskStat base;
  int64_t since_ns = 0;
};

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool InLibsvm(uintptr_t pc) {
  Dl_info self{}, at{};
  return dladdr(reinterpret_cast<void*>(&StartStallReport), &self) != 0 &&
         dladdr(reinterpret_cast<void*>(pc), &at) != 0 && at.dli_fbase == self.dli_fbase;
}

std::string Where(uintptr_t pc) {
  Dl_info at{};
  if (dladdr(reinterpret_cast<void*>(pc), &at) == 0 || at.dli_fname == nullptr) return "";
  char buf[512];
  if (at.dli_sname != nullptr)
    snprintf(buf, sizeof(buf), " (%s+0x%lx in %s)", at.dli_sname, (unsigned long)(pc - uintptr_t(at.dli_saddr)),
             at.dli_fname);
  else
    snprintf(buf, sizeof(buf), " (offset 0x%lx in %s)", (unsigned long)(pc - uintptr_t(at.dli_fbase)), at.dli_fname);
  return buf;
}

// A line about tid if it spins on one address of shared memory; "" if not.
std::string Diagnose(pid_t tid, const StallOptions& o) {
  std::vector<uintptr_t> common;
  uintptr_t lo_pc = UINTPTR_MAX, hi_pc = 0, pc = 0;
  for (int s = 0; s < kSamples; ++s) {
    std::vector<uintptr_t> regs;
    if (!TakeSample(tid, &pc, &regs)) return "";
    if (InLibsvm(pc)) return "";  // the runtime's own waits
    lo_pc = std::min(lo_pc, pc);
    hi_pc = std::max(hi_pc, pc);
    std::vector<uintptr_t> shared;
    for (uintptr_t r : regs)
      if (r >= o.shared_lo && r < o.shared_hi) shared.push_back(r);
    if (s == 0) {
      common = shared;
    } else {
      std::vector<uintptr_t> keep;
      for (uintptr_t r : common)
        for (uintptr_t q : shared)
          if (q == r) keep.push_back(r);
      common.swap(keep);
    }
    usleep(2000);
  }
  if (hi_pc - lo_pc > kLoopBytes || common.empty()) return "";
  const uintptr_t addr = common.front(), page = addr & ~uintptr_t(4095);
  char line[512];
  snprintf(line, sizeof(line), "  thread %d spins at pc 0x%lx%s on shared page 0x%lx (address 0x%lx)\n", int(tid),
           (unsigned long)pc, Where(pc).c_str(), (unsigned long)page, (unsigned long)addr);
  return line;
}

void Watch(StallOptions o) {
  pthread_setname_np(pthread_self(), "svm-stall");
  const int64_t window_ns = int64_t(o.seconds * 1e9);
  const int64_t period_ns = std::max<int64_t>(50'000'000, window_ns / 4);
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  const pid_t self = pid_t(syscall(SYS_gettid));
  // The watchdog's own thread never takes the sampling signal.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SampleSignal());
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::map<pid_t, Track> tracks;
  bool installed = false;
  for (;;) {
    const timespec nap{period_ns / 1'000'000'000, period_ns % 1'000'000'000};
    nanosleep(&nap, nullptr);
    const int64_t now = NowNs();
    std::map<pid_t, Track> next;
    std::vector<pid_t> suspects;
    for (pid_t tid : Tasks()) {
      if (tid == self) continue;
      TaskStat st;
      if (!ReadStat(tid, &st)) continue;
      auto it = tracks.find(tid);
      Track t = it != tracks.end() ? it->second : Track{st, now};
      // Protocol progress (a fault, a syscall) or a rest: the window starts over.
      if (st.state != 'R' || st.stime != t.base.stime || st.faults != t.base.faults) t = Track{st, now};
      const int64_t spun_ns = now - t.since_ns;
      const double user_s = double(st.utime - t.base.utime) / double(ticks_per_s);
      // Runnable at every look and burning user time (on a loaded host only
      // part of a core): it never blocked.
      if (spun_ns >= window_ns && user_s > 0) suspects.push_back(tid);
      next[tid] = t;
    }
    tracks.swap(next);
    if (suspects.empty()) continue;
    // The sampling signal is taken only once there is a suspect, and kept (a
    // late one must not meet the default action, which ends the process).
    if (!installed) {
      struct sigaction sa {};
      sa.sa_sigaction = OnSample;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(SampleSignal(), &sa, nullptr);
      installed = true;
    }
    std::string lines;
    for (pid_t tid : suspects) lines += Diagnose(tid, o);
    if (lines.empty()) continue;
    char head[256];
    snprintf(head, sizeof(head),
             "svm: node %u: no protocol progress for %g s while threads run in the program:\n", o.node,
             o.seconds);
    std::string msg = head + lines +
                      "  a flag polled on shared memory without svm synchronization never sees another node's "
                      "write (C11 atomics and volatile spins are not supported): use a mutex, condition variable, "
                      "semaphore or barrier (--stall-report)\n";
    (void)!write(2, msg.data(), msg.size());
    return;  // once
  }
}

}  // namespace

void StartStallReport(const StallOptions& o) {
  if (o.seconds <= 0 || o.shared_hi <= o.shared_lo) return;
  std::thread(Watch, o).detach();
}

}  // namespace svm::rt
