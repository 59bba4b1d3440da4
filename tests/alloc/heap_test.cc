#include "libsvm/alloc/heap.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "tests/alloc/test_region.h"

namespace svm::alloc {
namespace {

using testing::Check;
using testing::Fill;
using testing::TestRegion;

constexpr size_t kMiB = size_t(1) << 20;

class HeapTest : public ::testing::Test {
 protected:
  HeapTest() : region_(256 * kMiB) {}
  void SetUp() override {
    ASSERT_TRUE(region_.ok());
    heap_ = std::make_unique<Heap>(region_.Options());
  }
  TestRegion region_;
  std::unique_ptr<Heap> heap_;
};

const size_t kSizes[] = {0,    1,    8,     15,    16,    17,    100,   128,   129,    1000,  4096,
                         4097, 9999, 32768, 65535, 65536, 65537, 70000, 131072, 1000000};

TEST_F(HeapTest, UsableSizeCoversRequestAndBlocksAreDistinct) {
  Heap& h = *heap_;
  std::vector<void*> ps;
  for (int round = 0; round < 3; ++round) {
    for (size_t n : kSizes) {
      void* p = h.Malloc(n);
      ASSERT_NE(p, nullptr) << n;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
      EXPECT_GE(h.UsableSize(p), n);
      EXPECT_EQ(h.Owner(p), 0u);
      if (n <= kMaxSmall) {
        EXPECT_EQ(h.UsableSize(p), ClassSize(SizeToClass(n)));
      }
      Fill(p, h.UsableSize(p), uint32_t(ps.size()));
      ps.push_back(p);
    }
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_TRUE(Check(ps[i], h.UsableSize(ps[i]), uint32_t(i))) << "block " << i << " overwritten";
    h.Free(ps[i]);
  }
  h.Free(nullptr);
  EXPECT_EQ(h.UsableSize(nullptr), 0u);
  EXPECT_EQ(h.Owner(&ps), kNoOwner);
}

TEST_F(HeapTest, FreedBlocksAreReused) {
  Heap& h = *heap_;
  void* a = h.Malloc(40);
  h.Free(a);
  EXPECT_EQ(h.Malloc(40), a);  // LIFO thread cache
  void* big = h.Malloc(300000);
  h.Free(big);
  EXPECT_EQ(h.Malloc(300000), big);
  EXPECT_EQ(h.TEST_LargeLiveBlocks(), 1u);
}

TEST_F(HeapTest, AlignmentForEveryPowerOfTwoUpTo64K) {
  Heap& h = *heap_;
  for (size_t align = 1; align <= 64 * 1024; align *= 2) {
    for (size_t n : {size_t(1), size_t(24), size_t(align), size_t(3000), size_t(100000)}) {
      void* p = h.AlignedAlloc(align, n);
      ASSERT_NE(p, nullptr) << align << " " << n;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align << " " << n;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
      EXPECT_GE(h.UsableSize(p), n);
      std::memset(p, 0x5a, n);
      void* q = nullptr;
      if (align >= sizeof(void*)) {
        ASSERT_EQ(h.PosixMemalign(&q, align, n), 0);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % align, 0u);
        h.Free(q);
      }
      q = h.Memalign(align, n);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % align, 0u);
      h.Free(q);
      h.Free(p);
    }
  }
}

TEST_F(HeapTest, AlignedAllocEdgeCases) {
  Heap& h = *heap_;
  EXPECT_EQ(h.AlignedAlloc(0, 16), nullptr);
  EXPECT_EQ(h.AlignedAlloc(48, 16), nullptr);
  void* q = reinterpret_cast<void*>(1);
  EXPECT_EQ(h.PosixMemalign(&q, 4, 16), EINVAL);
  EXPECT_EQ(h.PosixMemalign(&q, 24, 16), EINVAL);
  EXPECT_EQ(h.PosixMemalign(&q, 64, size_t(1) << 40), ENOMEM);
  EXPECT_EQ(q, reinterpret_cast<void*>(1));
  void* m = h.Memalign(48, 10);  // rounded up to 64, like glibc
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m) % 64, 0u);
  void* v = h.Valloc(10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v) % 4096, 0u);
  void* pv = h.Pvalloc(0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pv) % 4096, 0u);
  EXPECT_GE(h.UsableSize(pv), 4096u);
  void* big = h.AlignedAlloc(1 << 20, 5000);  // larger than any class
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % (1 << 20), 0u);
  for (void* p : {m, v, pv, big}) h.Free(p);
}

TEST_F(HeapTest, ReallocGrowsAndShrinksKeepingContents) {
  Heap& h = *heap_;
  size_t n = 1;
  void* p = h.Malloc(n);
  Fill(p, n, 7);
  // Growth through every regime: small classes, small -> large, large in
  // place (nothing after it) and large moved.
  while (n < 4 * kMiB) {
    const size_t m = n * 2 + 3;
    void* q = h.Realloc(p, m);
    ASSERT_NE(q, nullptr);
    ASSERT_TRUE(Check(q, n, 7)) << n << " -> " << m;
    Fill(q, m, 7);
    p = q;
    n = m;
  }
  void* blocker = h.Malloc(100000);  // forces the next large growth to move
  void* q = h.Realloc(p, n * 2);
  ASSERT_TRUE(Check(q, n, 7));
  p = q;
  while (n > 1) {
    const size_t m = n / 3;
    q = h.Realloc(p, m);
    ASSERT_NE(q, nullptr);
    ASSERT_GE(h.UsableSize(q), m);
    ASSERT_TRUE(Check(q, m, 7)) << n << " -> " << m;
    p = q;
    n = m;
  }
  EXPECT_EQ(h.Realloc(p, 0), nullptr);  // glibc: frees
  void* r = h.Realloc(nullptr, 100);
  EXPECT_GE(h.UsableSize(r), 100u);
  h.Free(r);
  h.Free(blocker);
  EXPECT_EQ(h.TEST_LargeLiveBlocks(), 0u);
}

TEST_F(HeapTest, ReallocShrinkInPlaceReleasesLargeTail) {
  Heap& h = *heap_;
  void* p = h.Malloc(1 * kMiB);
  void* q = h.Realloc(p, 512 * 1024);
  EXPECT_EQ(p, q);
  EXPECT_EQ(h.UsableSize(q), 512u * 1024);
  void* r = h.Realloc(q, 1 * kMiB);  // grows back into the freed tail
  EXPECT_EQ(r, q);
  h.Free(r);
}

TEST_F(HeapTest, CallocZeroesFreshAndReusedBlocks) {
  Heap& h = *heap_;
  std::vector<std::pair<void*, size_t>> ps;
  for (size_t n : kSizes) {
    void* p = h.Malloc(n);
    std::memset(p, 0xab, h.UsableSize(p));
    ps.push_back({p, n});
  }
  for (auto& [p, n] : ps) h.Free(p);
  for (int round = 0; round < 2; ++round) {
    for (size_t n : kSizes) {
      auto* p = static_cast<unsigned char*>(h.Calloc(1, n));
      ASSERT_NE(p, nullptr);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 0) << "size " << n << " byte " << i;
      std::memset(p, 0xcd, n);
      h.Free(p);
    }
  }
  EXPECT_EQ(h.Calloc(SIZE_MAX / 2, 4), nullptr);
  EXPECT_EQ(h.Calloc(size_t(1) << 33, size_t(1) << 33), nullptr);
  void* z = h.Calloc(0, 5);
  EXPECT_NE(z, nullptr);
  h.Free(z);
}

TEST(HeapOom, ReturnsNullAndRecovers) {
  TestRegion region(64 * kMiB);
  ASSERT_TRUE(region.ok());
  Heap h(region.Options());
  EXPECT_EQ(h.Malloc(size_t(1) << 30), nullptr);
  EXPECT_EQ(h.Malloc(SIZE_MAX), nullptr);
  EXPECT_EQ(h.Malloc(SIZE_MAX - 4096), nullptr);
  EXPECT_EQ(h.Calloc(1, SIZE_MAX), nullptr);
  EXPECT_EQ(h.AlignedAlloc(4096, SIZE_MAX - 100), nullptr);
  EXPECT_EQ(h.AlignedAlloc(size_t(1) << 40, 16), nullptr);
  void* p = h.Malloc(16);
  EXPECT_EQ(h.Realloc(p, SIZE_MAX), nullptr);  // p untouched
  h.Free(p);

  std::vector<void*> big;
  while (void* b = h.Malloc(kMiB)) big.push_back(b);
  EXPECT_GT(big.size(), 30u);
  for (void* b : big) h.Free(b);
  big.clear();
  while (void* b = h.Malloc(kMiB)) big.push_back(b);  // all of it again
  EXPECT_GT(big.size(), 30u);
  for (void* b : big) h.Free(b);

  // Small blocks: the class runs out, then larger classes, then pages.
  std::vector<void*> small;
  while (void* s = h.Malloc(16)) small.push_back(s);
  EXPECT_GT(small.size(), h.layout().ClassSpan() / 16);
  for (void* s : small) h.Free(s);
  EXPECT_NE(h.Malloc(16), nullptr);
}

TEST(HeapOptions, RejectsBadOptions) {
  TestRegion region(64 * kMiB);
  HeapOptions o = region.Options(2, 2);
  EXPECT_NE(Heap::CheckOptions(o), nullptr);
  o = region.Options(8, 0);  // 8 MiB a node: too small
  EXPECT_NE(Heap::CheckOptions(o), nullptr);
  EXPECT_EQ(Heap::CheckOptions(region.Options(2, 1)), nullptr);
  o = region.Options(2, 1);
  o.claim = nullptr;  // several nodes must share one break
  EXPECT_NE(Heap::CheckOptions(o), nullptr);
}

TEST(HeapDeathTest, InvalidFreeIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TestRegion region(64 * kMiB);
  Heap h(region.Options());
  int on_stack = 0;
  EXPECT_DEATH(h.Free(&on_stack), "free\\(\\): invalid pointer");
  void* glibc = std::malloc(32);
  EXPECT_DEATH(h.Free(glibc), "free\\(\\): invalid pointer");
  std::free(glibc);
  char* p = static_cast<char*>(h.Malloc(64));
  EXPECT_DEATH(h.Free(p + 16), "free\\(\\): invalid pointer");
  char* big = static_cast<char*>(h.Malloc(200000));
  EXPECT_DEATH(h.Free(big + 4096), "free\\(\\): invalid pointer");
  EXPECT_DEATH(
      {
        h.Free(big);
        h.Free(big);
      },
      "free\\(\\): invalid pointer");
  EXPECT_DEATH(h.UsableSize(&on_stack), "malloc_usable_size\\(\\): invalid pointer");
  EXPECT_DEATH(h.FreeLocal(&on_stack), "FreeLocal");
  // A well-formed address that was never handed out is caught when the
  // thread cache gives it back.
  EXPECT_DEATH(
      {
        h.Free(reinterpret_cast<char*>(h.layout().ClassBase(0, 3)) + 64 * 1000);
        h.TEST_FlushThreadCache();
      },
      "never allocated");
}

TEST(HeapThreads, ExitedThreadsGiveTheirCachesBack) {
  TestRegion region(64 * kMiB);
  Heap h(region.Options());
  // Each thread takes a batch into its cache; 200 threads would exhaust the
  // 16-byte class (16384 blocks) many times over if exits leaked caches.
  for (int t = 0; t < 200; ++t) {
    std::thread th([&h] {
      std::vector<void*> v;
      for (int i = 0; i < 1000; ++i) v.push_back(h.Malloc(16));
      for (void* p : v) h.Free(p);
    });
    th.join();
  }
  void* p = h.Malloc(16);
  ASSERT_NE(p, nullptr);
  EXPECT_LT(reinterpret_cast<uintptr_t>(p), h.layout().ClassBase(0, 1));  // still class 0
}

}  // namespace
}  // namespace svm::alloc
