#include "libsvm/alloc/layout.h"

#include <gtest/gtest.h>

namespace svm::alloc {
namespace {

constexpr uintptr_t kBase = uintptr_t(1) << 40;
constexpr size_t kGiB = size_t(1) << 30;

TEST(Layout, SmallAreasThenOneLargeArea) {
  Layout l;
  ASSERT_EQ(Layout::Compute(kBase, 64 * kGiB, 4, &l), nullptr);
  EXPECT_LE(4 * l.small_size, l.size() / 4);
  EXPECT_GT(4 * l.small_size, l.size() / 8);
  EXPECT_EQ(l.small_size, size_t(kNumClasses) << l.class_shift);
  for (uint32_t n = 0; n < 4; ++n) {
    EXPECT_EQ(l.SmallOwner(l.SmallBase(n)), n);
    EXPECT_EQ(l.SmallOwner(l.SmallBase(n) + l.small_size - 1), n);
    EXPECT_TRUE(l.InSmall(l.SmallBase(n) + l.small_size - 1));
    for (uint32_t c = 0; c < kNumClasses; ++c)
      EXPECT_EQ((l.ClassBase(n, c) - l.SmallBase(n)) >> l.class_shift, c);
  }
  // The large area is the rest, shared by every node.
  EXPECT_EQ(l.large_base, l.SmallBase(4));
  EXPECT_FALSE(l.InSmall(l.large_base));
  EXPECT_EQ(l.large_base + l.LargeSize(), kBase + 64 * kGiB);
  EXPECT_GT(l.LargeSize(), 48 * kGiB);
  EXPECT_EQ(l.chunk, size_t(64) << 20);
  EXPECT_TRUE(l.Contains(kBase));
  EXPECT_FALSE(l.Contains(kBase - 1));
  EXPECT_FALSE(l.Contains(kBase + 64 * kGiB));
}

TEST(Layout, UnevenSizesArePageAligned) {
  Layout l;
  ASSERT_EQ(Layout::Compute(kBase, 3 * kGiB + 12345, 3, &l), nullptr);
  EXPECT_EQ(l.end % 4096, 0u);
  EXPECT_EQ(l.large_base % 4096, 0u);
  EXPECT_EQ(l.chunk % 4096, 0u);
  EXPECT_FALSE(l.Contains(kBase + 3 * kGiB + 12288));  // the ragged tail is not used
  EXPECT_TRUE(l.Contains(kBase + 3 * kGiB + 12287));
}

// A small region still gives each node several chunks' worth.
TEST(Layout, ChunksFitSmallRegions) {
  Layout l;
  ASSERT_EQ(Layout::Compute(kBase, 64 << 20, 2, &l), nullptr);
  EXPECT_GE(l.LargeSize() / l.chunk, 16u);
}

TEST(Layout, HugeSlicesCapTheClassSpan) {
  Layout l;
  ASSERT_EQ(Layout::Compute(kBase, size_t(1) << 46, 1, &l), nullptr);
  EXPECT_EQ(l.class_shift, 32u);
}

TEST(Layout, RejectsUnusableRegions) {
  Layout l;
  EXPECT_NE(Layout::Compute(kBase, 64 * kGiB, 0, &l), nullptr);
  EXPECT_NE(Layout::Compute(kBase + 8, 64 * kGiB, 1, &l), nullptr);
  EXPECT_NE(Layout::Compute(kBase, 8 << 20, 1, &l), nullptr);  // too small
  EXPECT_NE(Layout::Compute(~uintptr_t(0) & ~uintptr_t(4095), kGiB, 1, &l), nullptr);
}

}  // namespace
}  // namespace svm::alloc
