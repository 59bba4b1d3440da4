// The svm allocator (libsvm/alloc/) against glibc malloc, side by side in one
// run: malloc/free pairs and batches of mixed sizes, on 1 and 2 threads. The
// ratios svm/glibc per operation are printed at the end (goal: <= 2).
//
// Prints the build type, assert status and machine before the numbers, and
// warns when they would not be worth quoting.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "libsvm/alloc/heap.h"

#ifndef SVM_BUILD_TYPE
#define SVM_BUILD_TYPE "unknown"
#endif

namespace svm {
namespace {

constexpr size_t kRegion = size_t(4) << 30;
constexpr int kBatch = 64;
constexpr size_t kSizeMask = 4095;

alloc::Heap* g_heap = nullptr;
std::vector<size_t> g_sizes;  // kSizeMask + 1 mixed sizes

// Mostly small (what pthreads programs allocate per object), a few pages.
void MakeSizes() {
  std::mt19937 rng(42);
  for (size_t i = 0; i <= kSizeMask; ++i) {
    const uint32_t r = rng() % 100;
    g_sizes.push_back(r < 70 ? 8 + rng() % 248 : r < 95 ? 256 + rng() % 1792 : 2048 + rng() % 14336);
  }
}

struct Glibc {
  static void* Malloc(size_t n) { return std::malloc(n); }
  static void Free(void* p) { std::free(p); }
};
struct Svm {
  static void* Malloc(size_t n) { return g_heap->Malloc(n); }
  static void Free(void* p) { g_heap->Free(p); }
};

// One malloc and its free per operation.
template <typename A>
void BM_Pairs(benchmark::State& state) {
  size_t i = size_t(state.thread_index()) * 977;
  for (auto _ : state) {
    auto* p = static_cast<char*>(A::Malloc(g_sizes[i++ & kSizeMask]));
    benchmark::DoNotOptimize(p);
    *p = 1;
    A::Free(p);
  }
  state.SetItemsProcessed(state.iterations());
}

// kBatch mallocs, then their frees in a different order (every other one,
// then the rest): blocks live a while and free lists are not LIFO.
template <typename A>
void BM_Batch(benchmark::State& state) {
  size_t i = size_t(state.thread_index()) * 977;
  void* ps[kBatch];
  for (auto _ : state) {
    for (int k = 0; k < kBatch; ++k) {
      ps[k] = A::Malloc(g_sizes[i++ & kSizeMask]);
      *static_cast<char*>(ps[k]) = 1;
    }
    benchmark::DoNotOptimize(ps);
    for (int k = 0; k < kBatch; k += 2) A::Free(ps[k]);
    for (int k = 1; k < kBatch; k += 2) A::Free(ps[k]);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// Prints the usual table, remembering ns per malloc+free for the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred || r.iterations == 0) continue;
      auto it = r.counters.find("items_per_second");
      if (it != r.counters.end() && it->second.value > 0) ns_[r.benchmark_name()] = 1e9 / it->second.value;
    }
  }
  void PrintRatios() const {
    std::printf("\nsvm / glibc, time per malloc+free (same run; goal <= 2.0)\n");
    for (const auto& [name, ns] : ns_) {
      if (name.rfind("svm/", 0) != 0) continue;
      auto g = ns_.find("glibc/" + name.substr(4));
      if (g == ns_.end()) continue;
      std::printf("  %-28s svm %7.2f ns  glibc %7.2f ns  ratio %.2f\n", name.substr(4).c_str(), ns, g->second,
                  ns / g->second);
    }
  }

 private:
  std::map<std::string, double> ns_;
};

void Register() {
  for (int threads : {1, 2}) {
    benchmark::RegisterBenchmark("glibc/pairs", BM_Pairs<Glibc>)->Threads(threads)->UseRealTime();
    benchmark::RegisterBenchmark("svm/pairs", BM_Pairs<Svm>)->Threads(threads)->UseRealTime();
    benchmark::RegisterBenchmark("glibc/batch64", BM_Batch<Glibc>)->Threads(threads)->UseRealTime();
    benchmark::RegisterBenchmark("svm/batch64", BM_Batch<Svm>)->Threads(threads)->UseRealTime();
  }
}

void DescribeBuild() {
  benchmark::AddCustomContext("svm_build_type", SVM_BUILD_TYPE);
#ifdef NDEBUG
  const bool asserts = false;
#else
  const bool asserts = true;
#endif
#ifdef __OPTIMIZE__
  const bool optimized = true;
#else
  const bool optimized = false;
#endif
  benchmark::AddCustomContext("svm_asserts", asserts ? "enabled" : "disabled");
  benchmark::AddCustomContext("svm_optimized", optimized ? "yes" : "no");
  benchmark::AddCustomContext("svm_online_cpus", std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
  if (!optimized || asserts) {
    std::fprintf(stderr, "WARNING: %s%snumbers are not representative (build type %s)\n",
                 optimized ? "" : "not optimised; ", asserts ? "asserts enabled; " : "", SVM_BUILD_TYPE);
  }
}

}  // namespace
}  // namespace svm

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  void* region = mmap(nullptr, svm::kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  if (region == MAP_FAILED) {
    std::perror("mmap region");
    return 1;
  }
  svm::alloc::HeapOptions o;
  o.base = reinterpret_cast<uintptr_t>(region);
  o.size = svm::kRegion;
  svm::alloc::Heap heap(o);
  svm::g_heap = &heap;
  svm::MakeSizes();
  svm::DescribeBuild();
  svm::Register();
  svm::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
