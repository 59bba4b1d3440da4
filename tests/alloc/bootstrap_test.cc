#include "libsvm/alloc/bootstrap.h"

#include <gtest/gtest.h>

#include <cstring>

#include "libsvm/alloc/heap.h"
#include "tests/alloc/test_region.h"

namespace svm::alloc {
namespace {

using testing::Check;
using testing::Fill;

TEST(Bootstrap, TheBootstrapHeapServesFromTheArena) {
  Heap& boot = Heap::Bootstrap();
  void* p = boot.Malloc(100);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(IsBootstrap(p));
  EXPECT_GE(boot.UsableSize(p), 100u);
  auto* z = static_cast<unsigned char*>(boot.Calloc(10, 10));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(z[i], 0);
  void* a = boot.AlignedAlloc(256, 10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  EXPECT_TRUE(IsBootstrap(a));
  Fill(p, 100, 1);
  void* q = boot.Realloc(p, 5000);
  EXPECT_TRUE(IsBootstrap(q));
  EXPECT_TRUE(Check(q, 100, 1));
  boot.Free(q);
  boot.Free(a);
  boot.Free(z);
}

TEST(Bootstrap, NewestBlockFreeRollsBack) {
  const size_t before = BootstrapBytesUsed();
  void* p = BootstrapMalloc(1000);
  EXPECT_GT(BootstrapBytesUsed(), before);
  BootstrapFree(p);
  EXPECT_LE(BootstrapBytesUsed(), before + 16);
  EXPECT_EQ(BootstrapMalloc(kBootstrapBytes), nullptr);  // full: nullptr, no crash
  EXPECT_EQ(BootstrapMalloc(SIZE_MAX), nullptr);
}

TEST(Bootstrap, PointersFromBeforeInitWorkWithTheRealHeap) {
  // Made before the runtime is up...
  Heap& boot = Heap::Bootstrap();
  void* keep = boot.Malloc(64);
  Fill(keep, 64, 2);
  void* grow = boot.Malloc(200);
  Fill(grow, 200, 3);
  void* gone = boot.Malloc(30);
  void* aligned = boot.AlignedAlloc(64, 64);
  // ...used after it.
  testing::TestRegion region(64 << 20);
  ASSERT_TRUE(region.ok());
  Heap h(region.Options());
  EXPECT_GE(h.UsableSize(keep), 64u);
  EXPECT_EQ(h.Owner(keep), kNoOwner);
  void* g2 = h.Realloc(grow, 100000);
  ASSERT_NE(g2, nullptr);
  EXPECT_FALSE(IsBootstrap(g2));
  EXPECT_EQ(h.Owner(g2), 0u);
  EXPECT_TRUE(Check(g2, 200, 3));
  h.Free(gone);
  h.Free(aligned);
  EXPECT_TRUE(Check(keep, 64, 2));
  void* k2 = h.Realloc(keep, 32);  // shrinking may stay in the arena
  EXPECT_TRUE(Check(k2, 32, 2));
  h.Free(k2);
  h.Free(g2);
}

TEST(BootstrapDeathTest, DoubleFreeIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  void* p = BootstrapMalloc(64);
  void* q = BootstrapMalloc(64);  // p is not the newest: stays marked dead
  BootstrapFree(p);
  EXPECT_DEATH(BootstrapFree(p), "invalid or double-freed bootstrap pointer");
  EXPECT_DEATH(BootstrapFree(static_cast<char*>(q) + 16), "bootstrap pointer");
  BootstrapFree(q);
}

}  // namespace
}  // namespace svm::alloc
