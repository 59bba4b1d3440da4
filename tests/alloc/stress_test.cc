// Many threads x many sizes, every block filled with a pattern that is
// checked before it is freed; a quarter of the blocks are freed by another
// thread. Seeded; the seed is printed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "libsvm/alloc/heap.h"
#include "tests/alloc/test_region.h"

namespace svm::alloc {
namespace {

using testing::Check;
using testing::Fill;
using testing::TestRegion;

struct Block {
  void* p;
  size_t n;
  uint32_t seed;
};

size_t RandomSize(std::mt19937& rng) {
  const uint32_t r = rng() % 100;
  if (r < 60) return rng() % 128;
  if (r < 90) return rng() % 4096;
  if (r < 99) return rng() % 70000;
  return rng() % 600000;
}

TEST(Stress, ThreadsTimesSizesWithContentChecks) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  TestRegion region(size_t(1) << 30);
  ASSERT_TRUE(region.ok());
  Heap h(region.Options());
  constexpr int kThreads = 6;
  constexpr int kOps = 20000;
  std::mutex handoff_mu;
  std::vector<Block> handoff;  // blocks another thread will free
  std::atomic<int> bad{0};

  auto worker = [&](int t) {
    std::mt19937 rng(seed + uint32_t(t));
    std::vector<Block> live;
    for (int i = 0; i < kOps; ++i) {
      const uint32_t op = rng() % 10;
      if (op < 5 || live.empty()) {
        const size_t n = RandomSize(rng);
        const uint32_t s = rng();
        void* p;
        switch (rng() % 8) {
          case 0: p = h.Calloc(1, n); break;
          case 1: p = h.AlignedAlloc(size_t(1) << (rng() % 13), n); break;
          default: p = h.Malloc(n);
        }
        if (p == nullptr || h.UsableSize(p) < n) {
          bad++;
          continue;
        }
        Fill(p, n, s);
        live.push_back({p, n, s});
      } else if (op < 6) {
        Block& b = live[rng() % live.size()];
        const size_t m = RandomSize(rng);
        void* q = h.Realloc(b.p, m + 1);
        if (q == nullptr || !Check(q, std::min(b.n, m + 1), b.seed)) bad++;
        Fill(q, m + 1, b.seed);
        b.p = q;
        b.n = m + 1;
      } else {
        const size_t k = rng() % live.size();
        Block b = live[k];
        live[k] = live.back();
        live.pop_back();
        if (!Check(b.p, b.n, b.seed)) bad++;
        if (op == 9) {
          std::lock_guard<std::mutex> g(handoff_mu);
          handoff.push_back(b);
        } else {
          h.Free(b.p);
        }
      }
      if (i % 64 == 0) {
        std::vector<Block> mine;
        {
          std::lock_guard<std::mutex> g(handoff_mu);
          mine.swap(handoff);
        }
        for (Block& b : mine) {
          if (!Check(b.p, b.n, b.seed)) bad++;
          h.Free(b.p);
        }
      }
    }
    for (Block& b : live) {
      if (!Check(b.p, b.n, b.seed)) bad++;
      h.Free(b.p);
    }
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) ts.emplace_back(worker, t);
  for (auto& t : ts) t.join();
  for (Block& b : handoff) h.Free(b.p);
  EXPECT_EQ(bad.load(), 0) << "seed " << seed;
  EXPECT_EQ(h.TEST_LargeLiveBlocks(), 0u);
}

}  // namespace
}  // namespace svm::alloc
