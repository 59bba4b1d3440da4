#include "libsvm/entry.h"

#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ios>

#include "libsvm/alloc/bootstrap.h"
#include "libsvm/alloc/heap.h"
#include "libsvm/next_symbol.h"
#include "libsvm/stats.h"
#include "libsvm/runtime.h"
#include "libsvm/stacks.h"
#include "libsvm/thread_state.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
}

namespace svm::rt {
namespace {

// The standard streams' buffers are libstdc++'s private data, which the
// program's constructors set up (with GCC 12, every file that includes
// <iostream> has an ios_base::Init). Only node 0 runs them, so on the other
// nodes std::cout wrote through an unset buffer and crashed. This one runs
// on every node, when libsvm loads.
std::ios_base::Init g_iostreams;

// The shared heap once the runtime is up; until then nullptr.
alloc::Heap* g_heap = nullptr;
// Set when start-up begins: from then on private memory comes from glibc.
std::atomic<bool> g_glibc{false};
MainFn g_main = nullptr;


bool ToHeap() { return t_app && !t_in_runtime; }
bool InHeap(const void* p) { return g_heap && g_heap->Contains(p); }

// Counted for the thread the runtime serves (stats::Counter::kRuntimeAllocs).
void CountRuntimeAlloc() {
  if (!t_in_runtime) return;
  if (stats::ThreadStats* st = stats::Current()) st->Count(stats::Counter::kRuntimeAllocs);
}

void* PrivateMalloc(size_t n) {
  CountRuntimeAlloc();
  return g_glibc.load(std::memory_order_relaxed) ? __libc_malloc(n) : alloc::BootstrapMalloc(n);
}

void* PrivateAligned(size_t align, size_t n) {
  CountRuntimeAlloc();
  return g_glibc.load(std::memory_order_relaxed) ? __libc_memalign(align, n)
                                                 : alloc::BootstrapMalloc(n, align);
}

void* Failed(void* p) {
  if (!p) errno = ENOMEM;
  return p;
}

// The shared heap could not give n bytes: ENOMEM, and the first time a line
// saying which limit was hit and how to raise it (no allocation here).
void* HeapFailed(void* p, size_t n) {
  if (p) return p;
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    const alloc::Layout& l = g_heap->layout();
    char msg[320];
    const int len = snprintf(msg, sizeof(msg),
                             "svm: out of shared memory: an allocation of %zu bytes does not fit in "
                             "what is left of the job's shared heap (--region-size %zu MiB, all "
                             "nodes together); raise --region-size\n",
                             n, l.size() >> 20);
    if (len > 0) (void)!write(2, msg, std::min<size_t>(size_t(len), sizeof(msg) - 1));
  }
  errno = ENOMEM;
  return nullptr;
}

// Moves a block to where the caller's allocations belong.
void* Move(void* p, size_t old_size, size_t n) {
  void* q = Malloc(n);
  if (q) {
    memcpy(q, p, std::min(old_size, n));
    Free(p);
  }
  return q;
}

int RunMain(int argc, char** argv, char** envp) { ExitJob(g_main(argc, argv, envp)); }

// A copy of a null-terminated array of strings in one block of the shared
// heap (malloc from a program thread), or `v` itself if it does not fit.
char** SharedStrings(char** v) {
  size_t n = 0, bytes = 0;
  for (; v[n] != nullptr; ++n) bytes += strlen(v[n]) + 1;
  auto* copy = static_cast<char**>(malloc((n + 1) * sizeof(char*) + bytes));
  if (copy == nullptr) return v;
  char* text = reinterpret_cast<char*>(copy + n + 1);
  for (size_t i = 0; i < n; ++i) {
    const size_t len = strlen(v[i]) + 1;
    memcpy(text, v[i], len);
    copy[i] = text;
    text += len;
  }
  copy[n] = nullptr;
  return copy;
}

// libc's mapped range (its loadable segments), found when libsvm loads.
struct Span {
  uintptr_t lo = 0, hi = 0;
};
Span g_libc;

int FindLibc(dl_phdr_info* info, size_t, void* out) {
  const auto at = reinterpret_cast<uintptr_t>(&__libc_free);
  Span s{UINTPTR_MAX, 0};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    s.lo = std::min<uintptr_t>(s.lo, info->dlpi_addr + ph.p_vaddr);
    s.hi = std::max<uintptr_t>(s.hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (at < s.lo || at >= s.hi) return 0;
  *static_cast<Span*>(out) = s;
  return 1;
}
__attribute__((constructor)) void LocateLibc() { dl_iterate_phdr(FindLibc, &g_libc); }

}  // namespace

int StartMain(MainFn main, int argc, char** argv, void (*init)(), void (*fini)(),
              void (*rtld_fini)(), void* stack_end) {
  using StartFn = int (*)(MainFn, int, char**, void (*)(), void (*)(), void (*)(), void*);
  static StartFn real = NextSymbol<StartFn>("__libc_start_main");
  g_glibc.store(true);
  Runtime::StartOrDie();
  Runtime* rt = Runtime::Get();
  // Not in Start: stdout is the program's (a shared global), read by a fault
  // that needs the handler running.
  if (rt->options().nodes > 1) setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach svmrun whole
  if (rt->self() != 0) rt->Serve();
  Runtime::AdoptMainThread();
  g_main = main;
  // main runs on a stack in node 0's window (stacks.h): the program's
  // constructors, main and exit, all from here on.
  static struct {
    StartFn real;
    int argc;
    char** argv;
    void (*init)(), (*fini)(), (*rtld_fini)();
    void* stack_end;
  } start{real, argc, argv, init, fini, rtld_fini, stack_end};
  auto enter = [] {
    t_app = true;  // the program's constructors allocate in the shared heap too
    // argv and the environment lie in the process's first stack, private to
    // node 0: a thread on another node that read one of their strings (a
    // file name main kept in a global, getenv's result) read its own
    // process's memory there. main gets them in the shared heap.
    if (Runtime::Get()->options().nodes > 1) {
      start.argv = SharedStrings(start.argv);
      environ = SharedStrings(environ);
    }
    start.real(RunMain, start.argc, start.argv, start.init, start.fini, start.rtld_fini, start.stack_end);
  };
  const size_t size = MainStackSize();
  void* stack = NewStack(size);
  if (stack == nullptr) enter();  // no window (one node, or no room): main's own stack; no return
  static ucontext_t here, there;
  getcontext(&there);
  there.uc_stack.ss_sp = stack;
  there.uc_stack.ss_size = size;
  there.uc_link = nullptr;
  makecontext(&there, static_cast<void (*)()>(enter), 0);
  swapcontext(&here, &there);
  __builtin_unreachable();  // the program ends in exit
}

void UseSharedHeap(alloc::Heap* heap) { g_heap = heap; }

void ExitJob(int status) {
  using ExitFn = void (*)(int);
  static ExitFn real = NextSymbol<ExitFn>("exit");
  if (Runtime* rt = Runtime::Get()) {
    RuntimeScope scope;
    rt->PrepareExit(status);
  }
  t_app = false;  // exit handlers (libraries' included) use private memory and glibc locks
  real(status);
  _exit(status);  // not reached
}

pid_t Fork() {
  if (Runtime::Get() && t_app) {
    static const char kMsg[] =
        "svm: fork() inside a job is not supported (the child would share this node's "
        "memory without a runtime); use posix_spawn, system or popen\n";
    (void)!write(2, kMsg, sizeof(kMsg) - 1);
    errno = ENOSYS;
    return -1;
  }
  using ForkFn = pid_t (*)();
  static ForkFn real = NextSymbol<ForkFn>("fork");
  return real();
}

void* Malloc(size_t n) {
  if (__builtin_expect(ToHeap(), 1)) return HeapFailed(g_heap->Malloc(n), n);
  return Failed(PrivateMalloc(n));
}

void* ReadyForLibc(void* p, size_t n, const void* caller) {
  const auto at = reinterpret_cast<uintptr_t>(caller);
  if (__builtin_expect(at >= g_libc.lo && at < g_libc.hi, 0) && ToHeap() && InHeap(p))
    Runtime::Get()->PrepareBuffer(p, n, Access::kWrite);
  return p;
}

void Free(void* p) {
  if (p == nullptr) return;
  if (InHeap(p)) return g_heap->Free(p);
  if (alloc::IsBootstrap(p)) return alloc::BootstrapFree(p);
  __libc_free(p);
}

void* Calloc(size_t n, size_t size) {
  if (ToHeap()) return HeapFailed(g_heap->Calloc(n, size), size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
  CountRuntimeAlloc();
  if (g_glibc.load(std::memory_order_relaxed)) return Failed(__libc_calloc(n, size));
  return Failed(alloc::BootstrapCalloc(n, size));
}

void* Realloc(void* p, size_t n) {
  if (p == nullptr) return Malloc(n);
  if (InHeap(p)) {
    if (ToHeap() || n == 0) {
      void* q = g_heap->Realloc(p, n);
      return n == 0 ? q : HeapFailed(q, n);  // realloc(p, 0) frees
    }
    return Failed(Move(p, g_heap->UsableSize(p), n));
  }
  if (alloc::IsBootstrap(p)) {
    if (!g_glibc.load(std::memory_order_relaxed)) return Failed(alloc::BootstrapRealloc(p, n));
    if (n == 0) return alloc::BootstrapFree(p), nullptr;
    return Failed(Move(p, alloc::BootstrapUsableSize(p), n));
  }
  CountRuntimeAlloc();
  return Failed(__libc_realloc(p, n));
}

void* ReallocArray(void* p, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Realloc(p, bytes);
}

int PosixMemalign(void** out, size_t align, size_t n) {
  if (ToHeap()) {
    const int err = g_heap->PosixMemalign(out, align, n);
    if (err == ENOMEM) HeapFailed(nullptr, n);
    return err;
  }
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = PrivateAligned(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

void* AlignedAlloc(size_t align, size_t n) {
  if ((align & (align - 1)) != 0 || align == 0) {
    errno = EINVAL;
    return nullptr;
  }
  if (ToHeap()) return HeapFailed(g_heap->AlignedAlloc(align, n), n);
  return Failed(PrivateAligned(align, n));
}

void* Memalign(size_t align, size_t n) {
  if (ToHeap()) return HeapFailed(g_heap->Memalign(align, n), n);
  return Failed(PrivateAligned(std::max<size_t>(align, 16), n));
}

void* Valloc(size_t n) {
  if (ToHeap()) return HeapFailed(g_heap->Valloc(n), n);
  return Failed(g_glibc.load() ? __libc_valloc(n) : alloc::BootstrapMalloc(n, 4096));
}

void* Pvalloc(size_t n) {
  if (ToHeap()) return HeapFailed(g_heap->Pvalloc(n), n);
  return Failed(g_glibc.load() ? __libc_pvalloc(n)
                               : alloc::BootstrapMalloc((n + 4095) & ~size_t(4095), 4096));
}

SVM_NEXT_FN(real_usable_size, size_t (*)(void*), "malloc_usable_size");
SVM_NEXT_FN(real_create, int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*),
            "pthread_create");
SVM_NEXT_FN(real_join, int (*)(pthread_t, void**), "pthread_join");
SVM_NEXT_FN(real_detach, int (*)(pthread_t), "pthread_detach");
SVM_NEXT_FN(real_self, pthread_t (*)(), "pthread_self");
SVM_NEXT_FN(real_pthread_exit, void (*)(void*), "pthread_exit");

size_t UsableSize(void* p) {
  if (p == nullptr) return 0;
  if (InHeap(p) || alloc::IsBootstrap(p)) return (g_heap ? *g_heap : alloc::Heap::Bootstrap()).UsableSize(p);
  return real_usable_size.get()(p);
}

int ThreadCreate(pthread_t* t, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  if (Runtime* rt = Runtime::Get(); rt && ToHeap()) {
    uint64_t h = 0;
    int err = rt->CreateThread(&h, attr, start, arg);
    if (err == 0) *t = pthread_t(h);
    return err;
  }
  return real_create.get()(t, attr, start, arg);
}

int ThreadJoin(pthread_t t, void** value) {
  if (IsHandle(uint64_t(t))) return Runtime::Get()->JoinThread(uint64_t(t), value);
  return real_join.get()(t, value);
}

int ThreadDetach(pthread_t t) {
  if (IsHandle(uint64_t(t))) return Runtime::Get()->DetachThread(uint64_t(t));
  return real_detach.get()(t);
}

pthread_t ThreadSelf() {
  if (uint64_t h = Runtime::CurrentHandle()) return pthread_t(h);
  return real_self.get()();
}

void ThreadExit(void* value) {
  Runtime::SetExitValue(value);
  real_pthread_exit.get()(value);
  __builtin_unreachable();
}

int NodeIdOfCaller() { return Runtime::Get() ? int(Runtime::Get()->self()) : 0; }
int NodeCount() { return Runtime::Get() ? int(Runtime::Get()->options().nodes) : 1; }

}  // namespace svm::rt
