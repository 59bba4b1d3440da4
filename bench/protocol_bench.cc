// Micro-benchmarks of the protocol's per-page and per-synchronization steps,
// with memcpy of one 4 KiB page measured in the same run as the yardstick
// (scripts/bench-ratios prints every result as a multiple of it).
//
// Prints the build type, assert status and the diff ISA before the numbers,
// and warns when they would not be worth quoting.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "protocol/diff.h"
#include "protocol/vector_time.h"
#include "protocol/interval_log.h"
#include "protocol/wire.h"

#ifndef SVM_BUILD_TYPE
#define SVM_BUILD_TYPE "unknown"
#endif

namespace svm {
namespace {

constexpr size_t kPage = 4096;

// A page-aligned page, as the runtime's pages and twins are.
struct alignas(kPage) Page {
  uint8_t b[kPage];
  std::span<uint8_t> span() { return b; }
};

std::unique_ptr<Page> NewPage(uint8_t fill) {
  auto p = std::make_unique<Page>();
  std::memset(p->b, fill, kPage);
  return p;
}

void BM_Memcpy(benchmark::State& state) {
  auto src = NewPage(1), dst = NewPage(0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(src->b);
    std::memcpy(dst->b, src->b, kPage);
    benchmark::DoNotOptimize(dst->b);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

// What a write fault costs before the write: a twin allocated and filled.
void BM_TwinCopy(benchmark::State& state) {
  auto src = NewPage(1);
  for (auto _ : state) {
    std::unique_ptr<uint8_t[]> twin(new uint8_t[kPage]);
    benchmark::DoNotOptimize(src->b);
    std::memcpy(twin.get(), src->b, kPage);
    benchmark::DoNotOptimize(twin.get());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

enum class Pattern { kIdentical, kSparse8, kScattered, kAlternate, kFull };
constexpr Pattern kPatterns[] = {Pattern::kIdentical, Pattern::kSparse8, Pattern::kScattered,
                                 Pattern::kAlternate, Pattern::kFull};

const char* Name(Pattern p) {
  switch (p) {
    case Pattern::kIdentical: return "identical";
    case Pattern::kSparse8: return "sparse8";      // 8 runs of 16 bytes
    case Pattern::kScattered: return "scattered";  // 3 bytes of every 8 (radix's keys)
    case Pattern::kAlternate: return "alternate";  // every other byte differs
    case Pattern::kFull: return "full";            // every byte differs
  }
  return "?";
}

// A twin of random bytes and a page that differs from it as `p` says.
void MakePair(Pattern p, Page* page, Page* twin) {
  std::mt19937_64 rng(42);
  for (auto& x : twin->b) x = static_cast<uint8_t>(rng());
  std::memcpy(page->b, twin->b, kPage);
  switch (p) {
    case Pattern::kIdentical: break;
    case Pattern::kSparse8:
      for (size_t r = 0; r < 8; ++r) {  // one run in each 512-byte eighth
        const size_t at = r * 512 + rng() % (512 - 16);
        for (size_t i = at; i < at + 16; ++i) page->b[i] ^= 0xff;
      }
      break;
    case Pattern::kScattered:
      for (size_t i = 0; i < kPage; i += 8) page->b[i] ^= 0xff, page->b[i + 1] ^= 0xff, page->b[i + 2] ^= 0xff;
      break;
    case Pattern::kAlternate:
      for (size_t i = 0; i < kPage; i += 2) page->b[i] ^= 0xff;
      break;
    case Pattern::kFull:
      for (auto& x : page->b) x ^= 0xff;
      break;
  }
}

// FindRuns alone, into a reused vector.
void BM_DiffFind(benchmark::State& state, diff::Impl impl, Pattern p) {
  auto page = NewPage(0), twin = NewPage(0);
  MakePair(p, page.get(), twin.get());
  std::vector<diff::Run> runs;
  for (auto _ : state) {
    runs.clear();
    diff::FindRuns(page->span(), twin->span(), &runs, impl);
    benchmark::DoNotOptimize(runs.data());
  }
  state.counters["runs"] = static_cast<double>(runs.size());
  state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

// Creating a diff: find the runs and encode them, into a reused buffer.
void BM_DiffCreate(benchmark::State& state, diff::Impl impl, Pattern p, diff::Form form) {
  auto page = NewPage(0), twin = NewPage(0);
  MakePair(p, page.get(), twin.get());
  std::vector<uint8_t> out;
  for (auto _ : state) {
    out.clear();
    diff::Encode(page->span(), twin->span(), &out, impl, form);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["encoded_bytes"] = static_cast<double>(out.size());
  state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

// Applying a diff (validation included) made by the given implementation.
void BM_DiffApply(benchmark::State& state, diff::Impl impl, Pattern p, diff::Form form) {
  auto page = NewPage(0), twin = NewPage(0);
  MakePair(p, page.get(), twin.get());
  std::vector<uint8_t> encoded;
  diff::Encode(page->span(), twin->span(), &encoded, impl, form);
  for (auto _ : state) {
    benchmark::DoNotOptimize(encoded.data());
    const Status s = diff::Apply(encoded, twin->span(), impl);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(twin->b);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

// Merging two vector times of 64 nodes (entrywise max). Merge lives in
// another translation unit, so it is not hoisted out of the loop; after the
// first round it changes nothing but still reads and writes every entry.
void BM_VectorMerge(benchmark::State& state) {
  const size_t nodes = static_cast<size_t>(state.range(0));
  std::mt19937 rng(1);
  VectorTime a(nodes), b(nodes);
  for (NodeId n = 0; n < nodes; ++n) {
    a[n] = rng() % 1000;
    b[n] = rng() % 1000;
  }
  for (auto _ : state) {
    a.Merge(b);
    benchmark::DoNotOptimize(a.entries().data());
    benchmark::ClobberMemory();
  }
}

// Write notices a lock acquirer lacks: 64 nodes with 16 intervals each held
// (4 pages per notice); the acquirer is one interval behind on 8 of them.
void BM_WriteNoticeLookup(benchmark::State& state) {
  constexpr size_t kNodes = 64, kIntervals = 16, kBehind = 8;
  IntervalLog log(kNodes);
  for (IntervalId i = 1; i <= kIntervals; ++i) {
    for (NodeId n = 0; n < kNodes; ++n) {
      WriteNotice w{n, i, {PageId{i}, PageId{i + 100}, PageId{n}, PageId{n + 1000}}};
      if (Status s = log.Add(std::move(w)); !s.ok()) {
        state.SkipWithError(s.ToString().c_str());
        return;
      }
    }
  }
  VectorTime have = log.known();
  for (NodeId n = 0; n < kBehind; ++n) have[n * (kNodes / kBehind)] -= 1;
  std::vector<WriteNotice> out;
  for (auto _ : state) {
    out.clear();
    log.Missing(have, &out);
    benchmark::DoNotOptimize(out.data());
  }
  if (out.size() != kBehind) state.SkipWithError("unexpected number of notices");
  state.counters["notices"] = static_cast<double>(out.size());
}

// A received page reply of `pages` pages (4 nodes) taken apart: decoded
// into a reused message (its data copied out of the bytes), or as a view
// (Node::Receive: the pages stay in the bytes until installed).
void BM_PageReplyDecode(benchmark::State& state, bool view) {
  constexpr uint32_t kNodes = 4;
  const auto pages = size_t(state.range(0));
  PageReply reply;
  reply.page = 8;
  reply.versions.assign(pages, VectorTime(kNodes));
  reply.data.assign(pages * kPage, 0x5a);
  const std::vector<uint8_t> bytes = wire::Encode(reply, 1);
  Message msg;
  PageReply head;
  std::span<const uint8_t> data;
  for (auto _ : state) {
    const Status st = view ? wire::DecodePageReplyView(bytes, 1, kNodes, &head, &data)
                           : wire::DecodeReusing(bytes, 1, kNodes, &msg);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    benchmark::DoNotOptimize(msg);
    benchmark::DoNotOptimize(data);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * pages * kPage));
}

void Register() {
  benchmark::RegisterBenchmark("memcpy/4096", BM_Memcpy);
  benchmark::RegisterBenchmark("twin_copy/4096", BM_TwinCopy);
  for (diff::Impl impl : {diff::Impl::kScalar, diff::Impl::kAvx2, diff::Impl::kAvx512}) {
    if (!diff::Supported(impl)) {
      std::fprintf(stderr, "skipped diff/%s [CPU lacks it]\n", diff::ToString(impl));
      continue;
    }
    const std::string suffix = std::string(diff::ToString(impl)) + "/";
    for (Pattern p : kPatterns) {
      benchmark::RegisterBenchmark(("diff_find/" + suffix + Name(p)).c_str(), BM_DiffFind, impl, p);
      // diff_create / diff_apply: runs only (what the NIC stores); *_smallest:
      // runs or a masked block, whichever is smaller (what messages carry).
      for (const auto& [tag, form] : {std::pair{"", diff::Form::kRuns}, {"_smallest", diff::Form::kSmallest}}) {
        benchmark::RegisterBenchmark(("diff_create" + std::string(tag) + "/" + suffix + Name(p)).c_str(),
                                     BM_DiffCreate, impl, p, form);
        benchmark::RegisterBenchmark(("diff_apply" + std::string(tag) + "/" + suffix + Name(p)).c_str(),
                                     BM_DiffApply, impl, p, form);
      }
    }
  }
  benchmark::RegisterBenchmark("vector_merge", BM_VectorMerge)->Arg(64);
  benchmark::RegisterBenchmark("write_notice_lookup/64", BM_WriteNoticeLookup);
  for (const auto& [name, view] : {std::pair{"page_reply_decode/copy", false}, {"page_reply_decode/view", true}})
    benchmark::RegisterBenchmark(name, BM_PageReplyDecode, view)->Arg(1)->Arg(64);
}

// Build and machine facts, in the report's context (console and JSON), and a
// warning on stderr before any number when they make the numbers suspect.
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
  benchmark::AddCustomContext("svm_diff_best", diff::ToString(diff::Best()));
  std::string isa;
  for (diff::Impl impl : {diff::Impl::kScalar, diff::Impl::kAvx2, diff::Impl::kAvx512}) {
    if (diff::Supported(impl)) isa += std::string(isa.empty() ? "" : ",") + diff::ToString(impl);
  }
  benchmark::AddCustomContext("svm_diff_supported", isa);
  std::string warning;
  if (!optimized) warning += "not optimised; ";
  if (asserts) warning += "asserts enabled; ";
  if (!warning.empty()) {
    warning += "numbers are not representative";
    benchmark::AddCustomContext("svm_warning", warning);
    std::fprintf(stderr, "WARNING: %s (build type %s)\n", warning.c_str(), SVM_BUILD_TYPE);
  }
}

}  // namespace
}  // namespace svm

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  svm::DescribeBuild();
  svm::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
