// An 8 GiB block on a lazily committed region: the allocator writes one
// header page and never touches the rest (mincore proves it).
#include <gtest/gtest.h>

#include <cstring>

#include "libsvm/alloc/heap.h"
#include "tests/alloc/test_region.h"

namespace svm::alloc {
namespace {

using testing::ResidentPages;
using testing::TestRegion;

constexpr size_t kGiB = size_t(1) << 30;

TEST(Sparse, EightGiBTouchesOnlyTheHeaderPage) {
  TestRegion region(16 * kGiB);
  if (!region.ok()) GTEST_SKIP() << "cannot reserve 16 GiB of address space";
  Heap h(region.Options());
  const size_t before = ResidentPages(reinterpret_cast<void*>(region.base()), region.size());

  auto* p = static_cast<char*>(h.Calloc(1, 8 * kGiB));  // fresh: no memset
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(h.UsableSize(p), 8 * kGiB);
  EXPECT_LE(ResidentPages(p - 4096, 8 * kGiB + 4096), 1u);  // the header page
  p[0] = 1;
  p[4 * kGiB] = 2;
  p[8 * kGiB - 1] = 3;
  EXPECT_EQ(p[1], 0);
  EXPECT_EQ(p[8 * kGiB - 2], 0);
  EXPECT_LE(ResidentPages(p - 4096, 8 * kGiB + 4096), 4u);

  h.Free(p);
  auto* q = static_cast<char*>(h.Malloc(8 * kGiB));  // reuses the extent
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q[4 * kGiB], 2);
  h.Free(q);
  // A second 8 GiB block does not fit beside the first in 16 GiB.
  void* a = h.Malloc(8 * kGiB);
  EXPECT_EQ(h.Malloc(8 * kGiB), nullptr);
  h.Free(a);
  const size_t after = ResidentPages(reinterpret_cast<void*>(region.base()), region.size());
  EXPECT_LE(after - before, 8u);
}

}  // namespace
}  // namespace svm::alloc
