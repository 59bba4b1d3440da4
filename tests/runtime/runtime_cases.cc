// runtime_cases: runs the tests/runtime programs under svmrun and checks
// their exact output and exit status, in the style of the kernel's
// userfaultfd selftests: a case table, probes that turn a missing kernel
// feature into "skip" with its reason, one line per case, a summary line and
// a matching exit status.
//
//   runtime_cases --svmrun PATH --preload PATH --bin DIR [-l] [-f FILTER]...
//                 [--full] [--timeout SEC] [--transport NAME [--ofi-provider NAME]]
//   runtime_cases --machine-check BACKEND
//   runtime_cases --ofi-check PROVIDER
//
// --machine-check only asks whether this machine offers the fault backend
// (a kernel feature): exit 0 if so, else 77 with the reason (tests/splash2
// skips on that, and on nothing else). --ofi-check asks the same of a
// libfabric provider ("" = any) for --transport ofi.
//
// A case is a program with arguments and the exact lines it must print (in
// any order: lines of different nodes interleave), run at every point of its
// matrix: nodes x threads-per-node x fault backend x protocol mode. Runtime
// cases (suite "runtime") run on the default backend (uffd) in mode base,
// and at 2 nodes x 2 threads in rf and nil (suites "runtime-rf",
// "runtime-nil"; --full: every mode, nodes and threads);
// litmus cases on all three backends in base (suite "litmus"), and again in
// each other mode (suites "litmus-dw", "litmus-rf", "litmus-dd",
// "litmus-nil"). The conformance cases (suite "posix": one per family of the
// pthreads API, and system calls on shared memory; issue 13) run natively
// (point "native": the program alone, no svmrun) and at 2 and 4 nodes x 1
// thread on a covering matrix: on each shape every mode and every backend
// at least once (PosixPoints), and once at 2 nodes x 2 threads; --full:
// every mode x backend on both shapes. Each point is named "suite/case/nNtT/fault"; -f keeps the
// points whose name contains FILTER (several -f: any of them), -l lists them.
//
// The reduced matrix (default; --full lifts it): the few cases that are
// slow by construction (10^5 lock acquisitions, an 8 GiB region) run on
// fewer points (Case::reduced), and not in the other modes; the other modes
// run every other litmus case at 2 and 4 nodes x 2 threads on uffd, and rf
// and nil also at 2 nodes x 2 threads on mprotect and uffd-thread (Matrix).
//
// --transport (and --ofi-provider) reach svmrun on every point that runs
// under it; with ofi, a provider this machine lacks skips everything (77).
//
// Exit status: 0 when nothing failed and something passed, 77 when every
// selected point was skipped (ctest's SKIP_RETURN_CODE), 1 on a failure,
// 2 on bad usage (also when a filter selects nothing).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "libsvm/prim/fault.h"
#ifdef SVM_HAVE_OFI
#include "nic_ext/ofi/ofi_transport.h"
#endif

namespace {

namespace fs = std::filesystem;
using Lines = std::vector<std::string>;

// One point of a case's matrix.
struct Point {
  int nodes = 1;  // 0: native, without svm
  int tpn = 1;
  svm::prim::Backend fault = svm::prim::Backend::kUffd;
  std::string mode = "base";
  int workers() const { return nodes * tpn; }
};

enum class Suite { kRuntime, kLitmus, kPosix };

struct Case {
  Suite suite = Suite::kRuntime;
  std::string name;
  std::string program;
  // Program arguments; "{P}" becomes the worker count, "{dir}" a fresh
  // temporary directory.
  std::vector<std::string> args;
  // The lines the program prints at a point, compared as a sorted list.
  std::function<Lines(const Point&)> expect;
  int status = 0;                 // svmrun's exit status
  std::vector<std::string> flags;  // extra svmrun flags ("{regionG}": see below)
  std::string input;               // svmrun's stdin
  std::vector<std::string> stderr_has;  // lines that must appear on stderr
  int stderr_from_nodes = 0;            // ... in runs of at least this many nodes (0: native too)
  // Points to run when the matrix is reduced (nullptr: all).
  std::function<bool(const Point&)> reduced;
  // One-sided modes whose reduced matrix (uffd only) runs such a case too.
  std::vector<std::string> reduced_modes;
  // Address space the case needs reserved, in GiB per node (probe).
  size_t reserve_gib_per_node = 0;
  // Seconds a point may run, if more than --timeout.
  int timeout_s = 0;
  // The points to run instead of the matrix (full or reduced), if any.
  std::vector<Point> only;
};

std::string Str(long v) { return std::to_string(v); }

// Sum of f(i) for workers 1..P-1 (the created threads).
long SumCreated(const Point& p, long (*f)(long)) {
  long s = 0;
  for (long i = 1; i < p.workers(); ++i) s += f(i);
  return s;
}

// The nodes of workers 0..P-1 under svm's placement: block puts threads
// [k*T, (k+1)*T) on node k; cyclic puts thread i on node i % N.
std::string Placement(const Point& p, bool cyclic) {
  std::string s = "placement";
  for (int i = 0; i < p.workers(); ++i)
    s += " " + Str(cyclic ? i % p.nodes : (i / p.tpn) % p.nodes);
  return s;
}

// Acquisitions of one mutex in all, split over the workers: 10^5 at every
// point. One node: 0.05 s. Across nodes most acquisitions are local
// hand-offs (a node passes the lock among its own threads up to
// Node::kMaxLocalBypasses times before a waiting remote one); a transfer
// between nodes costs 0.3-0.7 ms here. 4 nodes x 2 threads: 0.3-1 s when
// the workers hardly overlap, ~7 s when they all contend (about 8000
// transfers). With 1 thread per node (--full only) there is no local
// hand-off: contended, every acquisition is a transfer, ~60 s on 4 nodes.
constexpr long kLockTotal = 100000;

std::vector<Case> Cases() {
  using B = svm::prim::Backend;
  std::vector<Case> c;
  auto rt = [&](std::string name, std::string prog, std::vector<std::string> args,
                std::function<Lines(const Point&)> expect) -> Case& {
    Case k;
    k.suite = Suite::kRuntime;
    k.name = std::move(name);
    k.program = std::move(prog);
    k.args = std::move(args);
    k.expect = std::move(expect);
    c.push_back(std::move(k));
    return c.back();
  };
  auto litmus = [&](std::string name, std::string prog, std::vector<std::string> args,
                    std::function<Lines(const Point&)> expect) -> Case& {
    Case k;
    k.suite = Suite::kLitmus;
    k.name = std::move(name);
    k.program = std::move(prog);
    k.args = std::move(args);
    k.expect = std::move(expect);
    c.push_back(std::move(k));
    return c.back();
  };

  // ---- Runtime I: the program's view of threads, processes and memory ----
  rt("placement-block", "placement", {"{P}"},
     [](const Point& p) { return Lines{Placement(p, false)}; })
      .flags = {"--place", "block"};
  rt("placement-cyclic", "placement", {"{P}"},
     [](const Point& p) { return Lines{Placement(p, true)}; })
      .flags = {"--place", "cyclic"};
  rt("join", "threads", {"join", "{P}"}, [](const Point& p) {
    return Lines{"join " + Str(SumCreated(p, [](long i) { return i * 1000 + 7; }))};
  });
  rt("pthread-exit", "threads", {"exit", "{P}"}, [](const Point& p) {
    return Lines{"exit " + Str(SumCreated(p, [](long i) { return i * 3 + 1; }))};
  });
  rt("thread-names", "threads", {"names", "{P}"},
     [](const Point& p) { return Lines{"names " + Str(p.workers() - 1)}; });
  rt("detach", "threads", {"detach", "{P}"}, [](const Point& p) {
    return Lines{"detach " + Str(SumCreated(p, [](long i) { return i * i + 5; }))};
  });
  rt("exit-main", "exitcode", {"main", "{P}", "3"}, [](const Point&) { return Lines{}; }).status = 3;
  rt("exit-remote", "exitcode", {"remote", "{P}", "7"}, [](const Point& p) {
    return Lines{"worker " + Str(p.workers() - 1) + " exits with 7"};
  }).status = 7;
  {
    std::string in = "first-line\n";
    for (int k = 1; k <= 100; ++k) in += std::to_string(k) + "\n";
    rt("stdio", "stdio", {"{P}"}, [](const Point& p) {
      Lines l{"stdin first-line count 100 sum 5050"};
      for (int i = 0; i < p.workers(); ++i) l.push_back("worker " + Str(i) + " of " + Str(p.workers()));
      return l;
    }).input = in;
  }
  rt("malloc", "malloc", {"{P}"}, [](const Point& p) { return Lines{"malloc " + Str(p.workers())}; });
  // A pointer to main's stack used on another node ends the job with a
  // line saying so (libsvm/stacks.h); on main's node it works.
  rt("stack-across-nodes", "stack_across", {}, [](const Point&) { return Lines{}; });
  c.back().status = 128 + SIGSEGV;
  c.back().stderr_has = {"that is a stack address of node 0"};
  c.back().only = {Point{2, 1, B::kUffd, "base"}, Point{2, 1, B::kMprotect, "base"},
                   Point{2, 1, B::kUffdThread, "base"}, Point{2, 1, B::kUffd, "nil"}};
  rt("stack-same-node", "stack_across", {}, [](const Point&) { return Lines{"stack_across 42"}; })
      .only = {Point{1, 2, B::kUffd, "base"}, Point{2, 2, B::kUffd, "base"}};
  rt("cxx", "cxx", {"{P}"}, [](const Point& p) {
    // Each add is the label's 6 bytes and the table's size, 6.
    Lines l{"cxx counter " + Str(12L * 1000 * (p.workers() - 1)) + " inits 1 onces " +
            Str(p.workers() > 1 ? 1 : 0)};
    for (int i = 1; i < p.workers(); ++i) l.push_back("cxx worker " + Str(i));
    return l;
  });
  rt("signals", "signals", {}, [](const Point&) { return Lines{"signals default"}; });
  // A futex wait on shared memory cannot be woken from another node: said
  // once on stderr, where a program would otherwise hang without a word
  // (not for a private word; the program checks that and the "once").
  rt("futex-shared", "futex_shared", {}, [](const Point&) {
    return Lines{"futex_shared EAGAIN private quiet, again quiet"};
  }).stderr_has = {"svm: a futex wait on shared memory at"};
  c.back().only = {Point{2, 1, B::kUffd, "base"}, Point{2, 1, B::kMprotect, "base"}, Point{2, 1, B::kUffd, "nil"}};
  rt("fork", "fork", {}, [](const Point&) {
    return Lines{"fork refused", "child ran: no job", "system 0"};
  });
  {
    // The shared heap's first failure says which limit was hit, once.
    Case& c = rt("oom", "oom", {"{P}"}, [](const Point&) { return Lines{"oom ok"}; });
    c.flags = {"--region-size", "1G"};
    c.stderr_has = {"svm: out of shared memory: an allocation of 4294967296 bytes does not fit"};
  }
  rt("globals", "globals", {"{P}"}, [](const Point&) {
    long s = 0;
    for (long k = 0; k < 6000; ++k) s += (k * 7 + 1) + k * k;
    return Lines{"globals " + Str(s + 42 + 5 + 15)};
  });

  // ---- Runtime II: litmus tests, all fault backends ----
  litmus("mp-mutex", "mp_mutex", {"{P}", "3"},
         [](const Point& p) { return Lines{"mp_mutex " + Str(3L * 3000 * p.workers())}; });
  litmus("mp-barrier", "mp_barrier", {"{P}", "4"}, [](const Point&) { return Lines{"mp_barrier 8"}; });
  litmus("mp-cond", "mp_cond", {"{P}", "3"},
         [](const Point& p) { return Lines{"mp_cond " + Str(3L * (p.workers() - 1))}; });
  litmus("mp-sem", "mp_sem", {"{P}", "3"},
         [](const Point& p) { return Lines{"mp_sem " + Str(3L * p.workers())}; });
  litmus("cond-signal", "cond_signal", {"{P}"}, [](const Point&) { return Lines{"cond_signal ok"}; });
  litmus("mp-join", "mp_join", {"{P}"}, [](const Point& p) {
    long in = 0;
    for (long k = 0; k < 20000; ++k) in += k % 97 + 1;
    return Lines{"mp_join " + Str(in * p.workers())};
  });
  litmus("false-sharing", "false_sharing", {"{P}", "4"}, [](const Point& p) {
    const long bytes = 3 * 4096 + 123, w = p.workers();
    long s = 0;
    for (long k = 0; k < bytes; ++k) s += (unsigned char)(3 * 7 + k * 13 + k % w + 1);
    return Lines{"false_sharing " + Str(s)};
  });
  litmus("lock-chain", "lock_chain", {"{P}", "3"}, [](const Point& p) {
    const long hops = 3L * p.workers();
    return Lines{"lock_chain " + Str(hops * (hops + 1) / 2)};
  });
  litmus("prodcons", "prodcons", {"{P}", "100"}, [](const Point& p) {
    const long threads = p.workers() == 1 ? 2 : p.workers();
    long count = 0, sum = 0;
    for (long i = 0; i < threads; i += 2)
      for (long s = 0; s < 100; ++s, ++count) sum += i * 1000003 + s * 7;
    return Lines{"prodcons " + Str(count) + " " + Str(sum)};
  });
  litmus("counter", "counter", {"{P}", "500"},
         [](const Point& p) { return Lines{"counter " + Str(500L * p.workers())}; });
  // Many locks over one page, several notices for it in one acquire: a
  // copy dropped twice in one batch was compared with its twin before it
  // was unmapped, and a write landing in between was lost.
  litmus("hashed-locks", "hashed_locks", {"{P}", "6"}, [](const Point& p) {
    const long w = p.workers();
    return Lines{"hashed_locks " + Str(6L * 400 * w * (w + 1) / 2)};
  });
  litmus("syscalls", "syscalls", {"{P}", "{dir}"}, [](const Point&) {
    const long sz = 5 * 4096 + 321;
    return Lines{"syscalls " + Str(6 * sz + 24000)};
  });
  // Default flags: the default region is sparse and gives each node's heap
  // slice 64 GiB, enough for 30 GiB reserved by malloc and touched here and
  // there (a third-party ocean code does this through lazy commit).
  for (const char* gib : {"8", "30"}) {
    Case& s = litmus(std::string("sparse-") + gib + "g", "sparse", {"{P}", gib},
                     [](const Point&) { return Lines{"sparse 6"}; });
    s.reserve_gib_per_node = 64;
    if (std::string(gib) == "30") {
      s.reduced = [](const Point& p) { return p.nodes == 4 && p.tpn == 1; };
      s.reduced_modes = {"nil"};
    }
  }
  {
    // Issue 16: the heap is the job's: node 0 (main) allocates 5 GiB of an
    // 8 GiB region, more than its share on 2 and 4 nodes.
    Case& h = litmus("heap-beyond-share", "sparse", {"{P}", "5"}, [](const Point&) { return Lines{"sparse 6"}; });
    h.flags = {"--region-size", "8G"};
    h.reduced = [](const Point& p) { return p.nodes == 4 && p.tpn == 1; };
    h.reduced_modes = {"nil"};
  }
  {
    // Issue 16: a barrier after one byte written in each of many pages, its
    // arrivals and releases naming them all (scripts/big-memory: 300 K pages).
    Case& m = litmus("many-pages", "many_pages", {"{P}", "10000"},
                     [](const Point&) { return Lines{"many_pages 10000"}; });
    m.reduced = [](const Point& p) { return p.nodes == 4 && p.tpn == 1; };
    m.reduced_modes = {"nil"};
  }
  {
    // 300 MiB of globals: 1200 probes, one every 64 pages.
    Case& b = litmus("big-bss", "big_bss", {"{P}"}, [](const Point&) { return Lines{"big_bss 1200"}; });
    b.reduced = [](const Point& p) { return p.nodes == 4 && p.tpn == 1; };
    b.reduced_modes = {"nil"};
  }
  {
    Case& l = litmus("lock-1e5", "counter", {"{P}", "{lock_iters}"}, [](const Point& p) {
      return Lines{"counter " + Str(kLockTotal / p.workers() * p.workers())};
    });
    // The reduced matrix runs
    // the 1- and 4-node points with 2 threads per node on each backend.
    l.reduced = [](const Point& p) { return p.tpn == 2 && p.nodes != 2; };
    l.timeout_s = 180;  // 4 nodes x 1 thread, contended: ~60 s (kLockTotal)
  }
  {
    // Issue 17: a job of many nodes x 1 thread on this host (lock, barriers,
    // pages with many writers), in base and nil; the resident memory per
    // node goes to stderr. 64 nodes: ~3 s; 256 nodes take 35 s to minutes on
    // 2 loaded cores (starting 256 processes, 32 K handshakes), too long for
    // CI: scripts/bench-scale runs them.
    Case& s = litmus("scale", "scale", {"{P}", "1"}, [](const Point& p) {
      const long w = p.workers();
      return Lines{"scale " + Str(w) + " counter " + Str(2 * w) + " table " + Str(w * (w + 1))};
    });
    s.only = {Point{64, 1, B::kUffd, "base"}, Point{64, 1, B::kUffd, "nil"}};
    s.stderr_has = {"scale: resident memory per worker: max"};
    s.timeout_s = 300;
  }
  litmus("mutex-kinds", "mutex_kinds", {"{P}"}, [](const Point& p) {
    const long w = p.workers();
    return Lines{"mutex_kinds " + Str(20 * w) + " " + Str(20 * w) + " " + Str(100 * w)};
  });
  litmus("once", "once", {"{P}"}, [](const Point&) { return Lines{"once 1"}; });
  {
    // A one-node job synchronises through glibc, whose process-shared
    // objects are that already: nothing to say there.
    Case& c = litmus("pshared", "pshared", {"{P}", "100"}, [](const Point& p) {
      return Lines{"pshared " + Str(100L * p.workers()) + " " + Str(p.workers())};
    });
    c.stderr_has = {"process-shared mutex", "process-shared barrier", "process-shared semaphore"};
    c.stderr_from_nodes = 2;
  }
  // Two threads on two nodes each hold a lock and try the other's: both
  // tries fail (they deadlocked while a try of a remote lock waited for it).
  litmus("trylock-cross", "trylock_cross", {}, [](const Point&) {
    return Lines{"trylock_cross mutex EBUSY EBUSY spin EBUSY EBUSY rwlock EBUSY EBUSY free ok"};
  }).only = {Point{2, 1, B::kUffd, "base"}, Point{2, 1, B::kMprotect, "base"}, Point{1, 2, B::kUffd, "base"},
             Point{2, 1, B::kUffd, "dw"},   Point{2, 1, B::kUffd, "rf"},       Point{2, 1, B::kUffd, "dd"},
             Point{2, 1, B::kUffd, "nil"}};
  litmus("rwlock", "rwlock", {"{P}", "200"}, [](const Point& p) {
    return Lines{"rwlock " + Str(50L * p.workers()) + " " + Str(150L * p.workers())};
  });
  // ---- Conformance: the pthreads API and system calls (doc/pthreads.md) ----
  // One case per family; "issue13-N-..." are the regression tests of the
  // issue's failure N (each failed on the code before the fix).
  auto posix = [&](std::string name, std::string prog) -> Case& {
    Case k;
    k.suite = Suite::kPosix;
    k.name = name;
    k.program = prog;
    k.args = {"{P}"};
    k.expect = [prog](const Point&) { return Lines{prog + " ok"}; };
    c.push_back(std::move(k));
    return c.back();
  };
  posix("issue13-1-mutex-timedlock", "posix_mutex");
  posix("issue13-2-rwlock-timed", "posix_rwlock");
  posix("cond-sem-clocks", "posix_cond_sem");
  posix("issue13-5-tsd", "posix_tsd");
  posix("issue13-6-pthread-t", "posix_handles");
  posix("c11-threads", "posix_c11");
  posix("issue13-3-proc-read", "posix_proc");
  posix("issue13-4-syscalls", "posix_syscalls");
  posix("issue13-4-syscalls-fortify", "posix_syscalls_fortify");
  posix("libc-files", "posix_libc_files");
  (void)B::kUffd;
  return c;
}

const char* SuiteName(Suite s) {
  return s == Suite::kRuntime ? "runtime" : s == Suite::kLitmus ? "litmus" : "posix";
}

std::string PointName(const Case& c, const Point& p) {
  if (p.nodes == 0) return std::string(SuiteName(c.suite)) + "/" + c.name + "/native";
  const std::string suite = std::string(SuiteName(c.suite)) + (p.mode == "base" ? "" : "-" + p.mode);
  return suite + "/" + c.name + "/n" + Str(p.nodes) + "t" + Str(p.tpn) + "/" +
         svm::prim::ToString(p.fault);
}

// The conformance suite's covering matrix: per shape, (mode, backend) pairs
// in which every mode and every backend appears; the two shapes pair them
// differently.
std::vector<Point> PosixPoints(bool full) {
  using B = svm::prim::Backend;
  const char* modes[] = {"base", "dw", "rf", "dd", "nil"};
  const B backends[] = {B::kUffd, B::kUffdThread, B::kMprotect};
  // 2 nodes x 2 threads once: threads that share a node (local handles,
  // keys, hand-offs).
  std::vector<Point> out{Point{0, 1, B::kUffd, "native"}, Point{2, 2, B::kUffd, "base"}};
  for (int n : {2, 4})
    for (int m = 0; m < 5; ++m) {
      if (full) {
        for (B b : backends) out.push_back(Point{n, 1, b, modes[m]});
      } else {
        out.push_back(Point{n, 1, backends[(m + (n == 4 ? 2 : 0)) % 3], modes[m]});
      }
    }
  return out;
}

std::vector<Point> Matrix(const Case& c, bool full) {
  if (c.suite == Suite::kPosix) return PosixPoints(full);
  if (!c.only.empty()) return c.only;
  std::vector<Point> out;
  std::vector<svm::prim::Backend> faults{svm::prim::Backend::kUffd};
  if (c.suite == Suite::kLitmus) faults.assign(std::begin(svm::prim::kAllBackends), std::end(svm::prim::kAllBackends));
  for (svm::prim::Backend f : faults)
    for (int n : {1, 2, 4})
      for (int t : {1, 2}) {
        Point p{n, t, f};
        if (!full && c.reduced && !c.reduced(p)) continue;
        out.push_back(p);
      }
  if (c.suite == Suite::kRuntime) {
    // The runtime's own machinery (threads, exit, globals' frames, stdio)
    // under the one-sided modes: rf and nil at 2 nodes x 2 threads.
    for (const char* mode : {"dw", "rf", "dd", "nil"}) {
      if (full) {
        for (int n : {1, 2, 4})
          for (int t : {1, 2}) out.push_back(Point{n, t, svm::prim::Backend::kUffd, mode});
      } else if (std::string(mode) == "rf" || std::string(mode) == "nil") {
        out.push_back(Point{2, 2, svm::prim::Backend::kUffd, mode});
      }
    }
    return out;
  }
  for (const char* mode : {"dw", "rf", "dd", "nil"}) {
    if (full) {
      for (svm::prim::Backend f : faults)
        for (int n : {1, 2, 4})
          for (int t : {1, 2}) out.push_back(Point{n, t, f, mode});
      continue;
    }
    if (c.reduced && std::find(c.reduced_modes.begin(), c.reduced_modes.end(), mode) !=
                         c.reduced_modes.end()) {
      for (int n : {1, 2, 4})
        for (int t : {1, 2})
          if (Point p{n, t, svm::prim::Backend::kUffd, mode}; c.reduced(p)) out.push_back(p);
      continue;
    }
    if (c.reduced || c.reserve_gib_per_node) continue;  // slow by construction
    for (int n : {2, 4}) out.push_back(Point{n, 2, svm::prim::Backend::kUffd, mode});
    if (std::string(mode) == "rf" || std::string(mode) == "nil") {
      out.push_back(Point{2, 2, svm::prim::Backend::kMprotect, mode});
      out.push_back(Point{2, 2, svm::prim::Backend::kUffdThread, mode});
    }
  }
  return out;
}

struct Config {
  std::string svmrun, preload, bin;
  std::vector<std::string> filters;
  bool list = false, full = false;
  int timeout_s = 60;
  std::string transport, ofi_provider;  // "": svmrun's defaults
};

// Why a point cannot run on this machine, or nullopt.
std::optional<std::string> Probe(const Case& c, const Point& p) {
  if (p.nodes == 0) return std::nullopt;  // native
  static std::map<int, std::optional<std::string>> backends;
  auto it = backends.find(int(p.fault));
  if (it == backends.end()) {
    svm::Status st = svm::prim::Probe(p.fault);
    it = backends.emplace(int(p.fault), st.ok() ? std::nullopt : std::optional(st.message())).first;
  }
  if (it->second) return std::string(svm::prim::ToString(p.fault)) + " unavailable: " + *it->second;
  if (c.reserve_gib_per_node) {
    const size_t bytes = (c.reserve_gib_per_node * size_t(p.nodes)) << 30;
    void* m = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return "cannot reserve " + Str(long(bytes >> 30)) + " GiB of address space";
    munmap(m, bytes);
  }
  return std::nullopt;
}

std::string Expand(const std::string& s, const Point& p, const std::string& dir) {
  if (s == "{P}") return Str(p.nodes == 0 ? 4 : p.workers());
  if (s == "{dir}") return dir;
  if (s == "{lock_iters}") return Str(kLockTotal / p.workers());
  return s;
}

std::string ReadAll(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Lines SplitLines(const std::string& s) {
  Lines out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Outcome {
  bool ok = false;
  std::string why;
};

// Runs one point: svmrun with stdout and stderr in files of a scratch
// directory, stdin from a file.
Outcome RunPoint(const Config& cfg, const Case& c, const Point& p) {
  const int timeout_s = std::max(cfg.timeout_s, c.timeout_s);
  char tmpl[] = "/tmp/svm-runtime-XXXXXX";
  if (!mkdtemp(tmpl)) return {false, std::string("mkdtemp: ") + strerror(errno)};
  const fs::path scratch = tmpl;
  const fs::path data = scratch / "data";
  fs::create_directory(data);
  {
    std::ofstream(scratch / "stdin") << c.input;
  }
  std::vector<std::string> argv;
  if (p.nodes > 0) {
    argv = {cfg.svmrun,          "-n",        Str(p.nodes),
            "-t",                Str(p.tpn), "--fault",
            svm::prim::ToString(p.fault), "--timeout", Str(timeout_s),
            "--preload",         cfg.preload, "--mode", p.mode};
    for (const std::string& f : c.flags) argv.push_back(Expand(f, p, data));
    if (!cfg.transport.empty()) argv.insert(argv.end(), {"--transport", cfg.transport});
    if (!cfg.ofi_provider.empty()) argv.insert(argv.end(), {"--ofi-provider", cfg.ofi_provider});
    argv.push_back("--");
  }
  argv.push_back(cfg.bin + "/" + c.program);
  for (const std::string& a : c.args) argv.push_back(Expand(a, p, data));

  const pid_t pid = fork();
  if (pid < 0) return {false, std::string("fork: ") + strerror(errno)};
  if (pid == 0) {
    const int in = open((scratch / "stdin").c_str(), O_RDONLY);
    const int out = open((scratch / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open((scratch / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    // svmrun reads SVM_* twins of its flags: only ours count. The runtime
    // knobs svmrun passes on to the nodes (no flag), and SVM_SPIN (--spin's
    // twin), stay: tests set them.
    const std::vector<std::string> knobs = {"SVM_SHOW_STATS", "SVM_NOTICE_RING", "SVM_MAX_SEND",
                                            "SVM_SHARE_GLOBALS", "SVM_VERBOSE", "SVM_SPIN",
                                            "SVM_START_DELAY"};
    std::vector<std::string> names;
    for (char** e = environ; *e; ++e)
      if (strncmp(*e, "SVM_", 4) == 0 && strchr(*e, '=')) names.emplace_back(*e, size_t(strchr(*e, '=') - *e));
    for (const std::string& n : names)
      if (std::find(knobs.begin(), knobs.end(), n) == knobs.end()) unsetenv(n.c_str());
    std::vector<char*> av;
    for (std::string& a : argv) av.push_back(a.data());
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(126);
  }
  // svmrun's --timeout ends a hung job; this is the backstop if svmrun hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 30);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const std::string out = ReadAll(scratch / "stdout"), err = ReadAll(scratch / "stderr");
  fs::remove_all(scratch);

  Outcome o;
  const int status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  Lines got = SplitLines(out), want = c.expect(p);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  if (status == 124) {
    o.why = "timed out after " + Str(timeout_s) + " s";
  } else if (status != c.status) {
    o.why = "exit status " + Str(status) + ", want " + Str(c.status);
  } else if (got != want) {
    o.why = "output differs";
  } else if (auto missing = std::find_if(c.stderr_has.begin(), c.stderr_has.end(),
                                         [&](const std::string& s) {
                                           return p.nodes >= c.stderr_from_nodes &&
                                                  err.find(s) == std::string::npos;
                                         });
             missing != c.stderr_has.end()) {
    o.why = "stderr lacks \"" + *missing + "\"";
  } else {
    o.ok = true;
    return o;
  }
  std::string detail = "\n    command:";
  for (const std::string& a : argv) detail += " " + a;
  detail += "\n    want:";
  for (const std::string& l : want) detail += "\n      " + l;
  detail += "\n    stdout:";
  for (const std::string& l : SplitLines(out)) detail += "\n      " + l;
  detail += "\n    stderr:";
  Lines el = SplitLines(err);
  for (size_t i = el.size() > 20 ? el.size() - 20 : 0; i < el.size(); ++i) detail += "\n      " + el[i];
  o.why += detail;
  return o;
}

int Usage(const char* me) {
  fprintf(stderr,
          "usage: %s --svmrun PATH --preload PATH --bin DIR [-l] [-f FILTER]... [--full] "
          "[--timeout SEC] [--transport NAME [--ofi-provider NAME]]\n       %s --machine-check uffd|uffd-thread|mprotect\n",
          me, me);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--machine-check") == 0) {
    svm::prim::Backend b;
    if (!svm::prim::ParseBackend(argv[2], &b)) return Usage(argv[0]);
    const svm::Status st = svm::prim::Probe(b);
    if (st.ok()) return 0;
    printf("skipped [%s unavailable: %s]\n", argv[2], st.message().c_str());
    return 77;
  }
  if (argc == 3 && strcmp(argv[1], "--ofi-check") == 0) {
#ifdef SVM_HAVE_OFI
    const svm::Status st = svm::nic::ProbeOfi(argv[2]);
    if (st.ok()) return 0;
    printf("skipped [--transport ofi unavailable: %s]\n", st.message().c_str());
#else
    printf("skipped [--transport ofi: libfabric was not found at build time]\n");
#endif
    return 77;
  }
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--svmrun") cfg.svmrun = value();
    else if (a == "--preload") cfg.preload = value();
    else if (a == "--bin") cfg.bin = value();
    else if (a == "-f") cfg.filters.push_back(value());
    else if (a == "-l") cfg.list = true;
    else if (a == "--full") cfg.full = true;
    else if (a == "--timeout") cfg.timeout_s = atoi(value().c_str());
    else if (a == "--transport") cfg.transport = value();
    else if (a == "--ofi-provider") cfg.ofi_provider = value();
    else return Usage(argv[0]);
  }
  if (cfg.transport == "ofi" && !cfg.list) {
#ifdef SVM_HAVE_OFI
    if (const svm::Status st = svm::nic::ProbeOfi(cfg.ofi_provider); !st.ok()) {
      printf("skipped [--transport ofi unavailable: %s]\n", st.message().c_str());
      return 77;
    }
#else
    printf("skipped [--transport ofi: libfabric was not found at build time]\n");
    return 77;
#endif
  }
  if (!cfg.list && (cfg.svmrun.empty() || cfg.preload.empty() || cfg.bin.empty())) return Usage(argv[0]);
  setvbuf(stdout, nullptr, _IOLBF, 0);

  int passed = 0, failed = 0, skipped = 0, selected = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const Case& c : Cases()) {
    for (const Point& p : Matrix(c, cfg.full)) {
      const std::string name = PointName(c, p);
      if (!cfg.filters.empty() &&
          std::none_of(cfg.filters.begin(), cfg.filters.end(),
                       [&](const std::string& f) { return name.find(f) != std::string::npos; }))
        continue;
      ++selected;
      if (cfg.list) {
        printf("%s\n", name.c_str());
        continue;
      }
      if (std::optional<std::string> why = Probe(c, p)) {
        ++skipped;
        printf("[skip] %-44s %s\n", name.c_str(), why->c_str());
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      const Outcome o = RunPoint(cfg, c, p);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (o.ok) {
        ++passed;
        printf("[ ok ] %-44s %6.2fs\n", name.c_str(), s);
      } else {
        ++failed;
        printf("[FAIL] %-44s %6.2fs %s\n", name.c_str(), s, o.why.c_str());
      }
    }
  }
  if (selected == 0) {
    fprintf(stderr, "runtime_cases: no case matches the filter\n");
    return 2;
  }
  if (cfg.list) return 0;
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("runtime_cases: %d passed, %d failed, %d skipped in %.1fs\n", passed, failed, skipped, total);
  if (failed) return 1;
  return passed == 0 ? 77 : 0;
}
