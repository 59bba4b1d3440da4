#include "libsvm/alloc/layout.h"

#include <gtest/gtest.h>

namespace svm::alloc {
namespace {

constexpr uintptr_t kBase = uintptr_t(1) << 40;
constexpr size_t kGiB = size_t(1) << 30;

TEST(Layout, SlicesAndClassSubAreas) {
  Layout l;
  ASSERT_EQ(Layout::Compute(kBase, 64 * kGiB, 4, &l), nullptr);
  EXPECT_EQ(l.slice_size, 16 * kGiB);
  EXPECT_LE(l.small_size, l.slice_size / 4);
  EXPECT_GT(l.small_size, l.slice_size / 8);
  EXPECT_EQ(l.small_size, size_t(kNumClasses) << l.class_shift);
  for (uint32_t n = 0; n < 4; ++n) {
    EXPECT_EQ(l.Owner(l.SliceBase(n)), n);
    EXPECT_EQ(l.Owner(l.SliceEnd(n) - 1), n);
    for (uint32_t c = 0; c < kNumClasses; ++c)
      EXPECT_EQ((l.ClassBase(n, c) - l.SliceBase(n)) >> l.class_shift, c);
  }
  EXPECT_TRUE(l.Contains(kBase));
  EXPECT_FALSE(l.Contains(kBase - 1));
  EXPECT_FALSE(l.Contains(kBase + 64 * kGiB));
}

TEST(Layout, UnevenSizesArePageAligned) {
  Layout l;
  ASSERT_EQ(Layout::Compute(kBase, 3 * kGiB + 12345, 3, &l), nullptr);
  EXPECT_EQ(l.slice_size % 4096, 0u);
  EXPECT_FALSE(l.Contains(l.SliceEnd(2)));  // the ragged tail is not used
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
