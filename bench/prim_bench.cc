// Fault round trips of each FaultTrap backend (libsvm/prim/), measured side
// by side in one run, with ratios printed at the end:
//
//   BM_Fault/B       a bare fault: read a "none" page -> OnFault ->
//                    Protect(read) -> the read completes. The frame exists
//                    (a page fetched earlier and dropped: uffd MINOR fault).
//   BM_WriteFault/B  the local write fault of HLRC: write a "read" page ->
//                    OnFault copies the 4 KiB twin and Protect(read-write).
//   BM_Protect/B     Protect(read-write) of a mapped read page, no fault: the
//                    part of a write fault that is the protection change.
//   BM_TwinCopy      the 4 KiB twin copy alone.
//
// Pages are re-armed in batches (one Protect over all pages, not timed).
// Prints the build type, assert status, kernel and CPU count first.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libsvm/prim/fault.h"

#ifndef SVM_BUILD_TYPE
#define SVM_BUILD_TYPE "unknown"
#endif

namespace svm::prim {
namespace {

constexpr size_t kPages = 1024;

class BenchHandler : public FaultHandler {
 public:
  void OnFault(PageId page, Access access) override {
    if (twin && access == Access::kWrite) {
      std::memcpy(twins.get() + (page % kPages) * page_size, region->ProtoPage(page), page_size);
    }
    if (trap->Protect(page, 1, access == Access::kWrite ? Prot::kReadWrite : Prot::kRead) != 0) {
      static const char msg[] = "prim_bench: Protect failed in OnFault\n";
      (void)!write(2, msg, sizeof(msg) - 1);
      abort();
    }
  }
  Region* region = nullptr;
  FaultTrap* trap = nullptr;
  bool twin = false;
  size_t page_size = 0;
  std::unique_ptr<char[]> twins;
};

struct Setup {
  std::unique_ptr<Region> region;
  std::unique_ptr<FaultTrap> trap;
  BenchHandler handler;

  // Returns false (and marks the benchmark skipped) if the backend cannot run.
  bool Open(benchmark::State& state, Backend b, bool twin) {
    Status s = Region::Create({0, kPages * size_t(getpagesize()), "svm-bench"}, &region);
    if (s.ok()) {
      // Every frame exists, as for pages fetched earlier.
      std::memset(region->proto(), 1, region->size());
      handler.region = region.get();
      handler.twin = twin;
      handler.page_size = region->page_size();
      handler.twins.reset(new char[kPages * region->page_size()]);
      std::memset(handler.twins.get(), 0, kPages * region->page_size());
      s = FaultTrap::Open(b, region.get(), &handler, &trap);
    }
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return false;
    }
    handler.trap = trap.get();
    return true;
  }
};

void Rearm(benchmark::State& state, FaultTrap* trap, Prot prot) {
  state.PauseTiming();
  if (prot != Prot::kNone) trap->Protect(0, kPages, Prot::kNone);
  if (trap->Protect(0, kPages, prot) != 0) abort();
  // Touch the read pages so that every one is mapped (uffd: CONTINUE done).
  if (prot == Prot::kRead) Prefault(trap->region().app(), trap->region().size(), Access::kRead);
  state.ResumeTiming();
}

void BM_Fault(benchmark::State& state, Backend b) {
  Setup s;
  if (!s.Open(state, b, false)) return;
  size_t i = kPages;
  for (auto _ : state) {
    if (i == kPages) {
      Rearm(state, s.trap.get(), Prot::kNone);
      i = 0;
    }
    // A plain load: DoNotOptimize(lvalue) may store the value back (a
    // read-write asm operand), which would add a write fault.
    char c = *reinterpret_cast<volatile char*>(s.region->AppPage(i++));
    benchmark::DoNotOptimize(c);
  }
  state.counters["faults"] = double(s.trap->stats().faults);
}

void BM_WriteFault(benchmark::State& state, Backend b) {
  Setup s;
  if (!s.Open(state, b, true)) return;
  size_t i = kPages;
  for (auto _ : state) {
    if (i == kPages) {
      Rearm(state, s.trap.get(), Prot::kRead);
      i = 0;
    }
    *reinterpret_cast<volatile char*>(s.region->AppPage(i++)) = 2;
  }
  state.counters["faults"] = double(s.trap->stats().faults);
}

void BM_Protect(benchmark::State& state, Backend b) {
  Setup s;
  if (!s.Open(state, b, false)) return;
  size_t i = kPages;
  for (auto _ : state) {
    if (i == kPages) {
      Rearm(state, s.trap.get(), Prot::kRead);
      i = 0;
    }
    s.trap->Protect(i++, 1, Prot::kReadWrite);
  }
}

// Installing runs of pages fetched from elsewhere whose frames do not exist
// yet (a cold remote fault's last step): written through the protocol view
// (zero-filled first, by a page fault or MADV_POPULATE_WRITE for a run) and
// Protect()ed read, or FaultTrap::Fill (uffd: UFFDIO_COPY). Frames are
// punched out between batches.
void BM_Install(benchmark::State& state, Backend b, bool fill) {
  Setup s;
  if (!s.Open(state, b, false)) return;
  const size_t run = size_t(state.range(0)), page = s.region->page_size();
  std::vector<char> src(run * page, 3);
  size_t i = kPages;
  for (auto _ : state) {
    if (i + run > kPages) {
      state.PauseTiming();
      if (s.trap->Protect(0, kPages, Prot::kNone) != 0 ||
          fallocate(s.region->fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, off_t(s.region->size())) != 0)
        abort();
      state.ResumeTiming();
      i = 0;
    }
    if (fill) {
      if (s.trap->Fill(i, run, src.data(), Prot::kRead) != run) {
        state.SkipWithError("Fill installed fewer pages than asked");
        break;
      }
    } else {
      if (run > 1) (void)madvise(s.region->ProtoPage(i), run * page, 23 /* MADV_POPULATE_WRITE */);
      std::memcpy(s.region->ProtoPage(i), src.data(), run * page);
      if (s.trap->Protect(i, run, Prot::kRead) != 0) abort();
    }
    i += run;
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(run));
}

void BM_TwinCopy(benchmark::State& state) {
  const size_t page = size_t(getpagesize());
  std::unique_ptr<char[]> src(new char[page]), dst(new char[page]);
  std::memset(src.get(), 1, page);
  for (auto _ : state) {
    benchmark::DoNotOptimize(src.get());
    std::memcpy(dst.get(), src.get(), page);
    benchmark::ClobberMemory();
  }
}

// Prints the usual table, remembering each result for the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred && r.iterations > 0) {
        // The fastest repetition: other load on the machine only adds time.
        const double t = r.real_accumulated_time / double(r.iterations) * 1e6;
        const std::string& args = r.run_name.args;
        auto [it, fresh] = us.emplace(r.run_name.function_name + (args.empty() ? "" : "/" + args), t);
        if (!fresh && t < it->second) it->second = t;
      }
    }
  }
  std::map<std::string, double> us;
};

void PrintHeader() {
  utsname u{};
  uname(&u);
#ifdef NDEBUG
  const char* asserts = "off";
#else
  const char* asserts = "ON (numbers not worth quoting)";
#endif
  std::printf("prim_bench: build %s, asserts %s, kernel %s %s, %ld CPUs\n", SVM_BUILD_TYPE, asserts,
              u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN));
  for (Backend b : kAllBackends) {
    Status s = Probe(b);
    std::printf("  backend %-11s %s\n", ToString(b), s.ok() ? "available" : s.ToString().c_str());
  }
  if (std::strcmp(SVM_BUILD_TYPE, "Debug") == 0) std::printf("WARNING: debug build\n");
  std::fflush(stdout);
}

}  // namespace
}  // namespace svm::prim

int main(int argc, char** argv) {
  using namespace svm::prim;
  PrintHeader();
  for (Backend b : kAllBackends) {
    const std::string n = ToString(b);
    benchmark::RegisterBenchmark(("BM_Fault/" + n).c_str(), BM_Fault, b);
    benchmark::RegisterBenchmark(("BM_WriteFault/" + n).c_str(), BM_WriteFault, b);
    benchmark::RegisterBenchmark(("BM_Protect/" + n).c_str(), BM_Protect, b);
  }
  for (bool fill : {false, true})
    benchmark::RegisterBenchmark(fill ? "BM_Install/uffd/fill" : "BM_Install/uffd/write", BM_Install,
                                 Backend::kUffd, fill)
        ->Arg(1)
        ->Arg(16);
  benchmark::RegisterBenchmark("BM_TwinCopy", BM_TwinCopy);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  auto get = [&](const std::string& k) {
    auto it = reporter.us.find(k);
    return it == reporter.us.end() ? 0.0 : it->second;
  };
  const double twin = get("BM_TwinCopy");
  const double uffd_fault = get("BM_Fault/uffd");
  std::printf("\nratios (per operation, same run; fastest of the repetitions)\n");
  std::printf("  %-12s %10s %12s %10s %12s %14s\n", "backend", "fault us", "wr-fault us",
              "protect us", "wr/fault", "fault/uffd");
  for (Backend b : kAllBackends) {
    const std::string n = ToString(b);
    const double f = get("BM_Fault/" + n), w = get("BM_WriteFault/" + n),
                 p = get("BM_Protect/" + n);
    if (f == 0) continue;
    std::printf("  %-12s %10.2f %12.2f %10.2f %12.2f %14.2f\n", n.c_str(), f, w, p, w / f,
                uffd_fault > 0 ? f / uffd_fault : 0.0);
  }
  std::printf("  twin copy (4 KiB memcpy): %.3f us\n", twin);
  for (int run : {1, 16}) {
    const double w = get("BM_Install/uffd/write/" + std::to_string(run)) / run,
                 f = get("BM_Install/uffd/fill/" + std::to_string(run)) / run;
    if (w > 0 && f > 0)
      std::printf("  fresh page installed, runs of %2d: written %.2f us, filled %.2f us a page (%.2fx)\n", run, w,
                  f, f / w);
  }
  benchmark::Shutdown();
  return 0;
}
