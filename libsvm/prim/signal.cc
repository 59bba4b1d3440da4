#include "libsvm/prim/signal.h"

#include "libsvm/prim/fault.h"

#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "libsvm/prim/maps.h"

namespace svm::prim {
namespace {

constexpr int kMaxTargets = 16;

struct Slot {
  std::atomic<SignalTarget*> target{nullptr};
  std::atomic<int> signo{0};
  std::atomic<uintptr_t> lo{0}, hi{0};
};
Slot g_slots[kMaxTargets];

// The disposition before ours, per signal we handle (SIGSEGV, SIGBUS).
struct Previous {
  bool installed = false;
  struct sigaction action {};
};
Previous g_prev_segv, g_prev_bus;
std::mutex g_install_mu;

Previous* PreviousFor(int signo) {
  return signo == SIGSEGV ? &g_prev_segv : signo == SIGBUS ? &g_prev_bus : nullptr;
}

// Faults of each signal being handled on this thread ([0] SIGSEGV, [1]
// SIGBUS). Another of the same signal meanwhile (svm's own code, or the
// handler chained to, touching a protected page or crashing) dies as it
// did while the handler blocked its signal, but says so first: the kernel
// kills with no word.
thread_local int t_depth[2] __attribute__((tls_model("initial-exec"))) = {0, 0};

int& Depth(int signo) { return t_depth[signo == SIGBUS ? 1 : 0]; }

// A line built without malloc, for signal context.
class Line {
 public:
  Line& operator<<(const char* s) {
    while (*s != '\0' && n_ + 1 < sizeof(buf_)) buf_[n_++] = *s++;
    return *this;
  }
  Line& Hex(uintptr_t v) {
    char d[2 + 2 * sizeof(v)];
    int i = int(sizeof(d));
    do d[--i] = "0123456789abcdef"[v & 15]; while ((v >>= 4) != 0);
    d[--i] = 'x';
    d[--i] = '0';
    for (; i < int(sizeof(d)) && n_ + 1 < sizeof(buf_); ++i) buf_[n_++] = d[i];
    return *this;
  }
  void Write() {
    buf_[n_++] = '\n';
    (void)!write(2, buf_, n_);
  }

 private:
  char buf_[1024];
  size_t n_ = 0;
};

std::atomic<size_t (*)(uintptr_t, char*, size_t)> g_fatal_note{nullptr};

const char* Cause(int signo, int code) {
  if (signo == SIGSEGV && code == SEGV_MAPERR) return "no mapping at the address";
  if (signo == SIGSEGV && code == SEGV_ACCERR) return "the mapping forbids the access";
  if (signo == SIGBUS && code == BUS_ADRERR) return "no page behind the address";
  return "a fault";
}

// Where a fatal fault happened, for the user and for us: the kernel's
// default action prints nothing, and the core file is often not kept.
void ReportFatal(int signo, const siginfo_t* info, const void* ucontext, bool nested) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  Line l;
  l << "svm: " << (signo == SIGSEGV ? "SIGSEGV" : "SIGBUS") << " (" << Cause(signo, info->si_code)
    << ") at ";
  l.Hex(addr);
  if (nested) l << ", inside svm's handler of another fault";
#if defined(__x86_64__)
  const uintptr_t pc = uintptr_t(static_cast<const ucontext_t*>(ucontext)->uc_mcontext.gregs[REG_RIP]);
  l << ", pc ";
  l.Hex(pc);
  char where[512];
  if (FindMapping(pc, where, sizeof(where)) > 0) l << " in [" << where << "]";
#else
  (void)ucontext;
#endif
  char what[512];
  if (FindMapping(addr, what, sizeof(what)) > 0) l << "; the address is in [" << what << "]";
  if (auto note = g_fatal_note.load(std::memory_order_acquire); note != nullptr && note(addr, what, sizeof(what)) > 0)
    l << what;
  l.Write();
}

void RestoreDefault(int signo) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signo, &dfl, nullptr);
}

// Hands a signal we do not own to whoever had it before.
void Chain(int signo, siginfo_t* info, void* uc) {
  const struct sigaction& prev = PreviousFor(signo)->action;
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(signo, info, uc);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(signo);
    return;
  }
  // Default action: restore it and let the signal happen again. A fault
  // re-executes the instruction on return and dies of the same signal; a
  // signal sent by kill/raise (si_code <= 0) is sent again.
  RestoreDefault(signo);
  if (info->si_code <= 0) raise(signo);
  else ReportFatal(signo, info, uc, false);
}

void OnSignal(int signo, siginfo_t* info, void* uc) {
  const int saved_errno = errno;
  int& depth = Depth(signo);
  if (info->si_code > 0) {  // raised by the kernel for a fault
    if (depth > 0) {
      ReportFatal(signo, info, uc, true);
      RestoreDefault(signo);
      return;  // the fault happens again and kills
    }
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Slot& s : g_slots) {
      SignalTarget* t = s.target.load(std::memory_order_acquire);
      if (t == nullptr || s.signo.load(std::memory_order_relaxed) != signo) continue;
      if (addr >= s.lo.load(std::memory_order_relaxed) &&
          addr < s.hi.load(std::memory_order_relaxed)) {
        ++depth;
        t->OnSignal(addr, uc);
        --depth;
        errno = saved_errno;
        return;
      }
    }
  }
  ++depth;
  Chain(signo, info, uc);
  --depth;
  errno = saved_errno;
}

// Installs OnSignal for both fault signals, whichever the trap uses: a
// crash of the other one (a SIGSEGV under uffd) then says where it
// happened too (Chain). REQUIRES: g_install_mu held.
int InstallLocked() {
  for (int sig : {SIGSEGV, SIGBUS}) {
    Previous* p = PreviousFor(sig);
    if (p->installed) continue;
    struct sigaction sa {};
    sa.sa_sigaction = OnSignal;
    sigemptyset(&sa.sa_mask);
    // SA_ONSTACK: a fault on a thread stack that lives in the region can
    // still be handled when the thread has an alternate signal stack.
    // SA_NODEFER: a fault inside the handler reaches it (Depth) and is
    // reported, where a blocked signal would kill with no word.
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
    if (sigaction(sig, &sa, &p->action) != 0) return -errno;
    p->installed = true;
  }
  return 0;
}

}  // namespace

int AddSignalTarget(int signo, uintptr_t lo, uintptr_t hi, SignalTarget* target) {
  Previous* prev = PreviousFor(signo);
  if (prev == nullptr) return -EINVAL;
  std::lock_guard<std::mutex> lock(g_install_mu);
  int slot = -1;
  for (int i = 0; i < kMaxTargets; ++i) {
    if (g_slots[i].target.load(std::memory_order_relaxed) == nullptr) {
      slot = i;
      break;
    }
  }
  if (slot < 0) return -ENOSPC;
  if (int err = InstallLocked(); err != 0) return err;
  Slot& s = g_slots[slot];
  s.signo.store(signo, std::memory_order_relaxed);
  s.lo.store(lo, std::memory_order_relaxed);
  s.hi.store(hi, std::memory_order_relaxed);
  s.target.store(target, std::memory_order_release);
  return slot;
}

void SetFatalFaultNote(size_t (*note)(uintptr_t addr, char* buf, size_t n)) {
  g_fatal_note.store(note, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_install_mu);
  (void)InstallLocked();  // without a trap (one node, uffd-thread) too
}

void RemoveSignalTarget(int slot) {
  if (slot < 0 || slot >= kMaxTargets) return;
  std::lock_guard<std::mutex> lock(g_install_mu);
  g_slots[slot].target.store(nullptr, std::memory_order_release);
}

FaultKind DecodeFault(const void* ucontext) {
#if defined(__x86_64__)
  // The x86 page-fault error code: bit 0 set = protection violation on a
  // present page, bit 1 set = write. The kernel copies it into the signal
  // frame for SIGSEGV and for the SIGBUS of a userfaultfd fault alike.
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const auto err = uc->uc_mcontext.gregs[REG_ERR];
  return {int((err >> 1) & 1), int(err & 1)};
#else
  (void)ucontext;
  return {-1, -1};
#endif
}

}  // namespace svm::prim
