#include "libsvm/alloc/size_class.h"

#include <gtest/gtest.h>

namespace svm::alloc {
namespace {

TEST(SizeClass, EverySizeMapsToTheSmallestClassThatFits) {
  uint32_t c = 0;
  for (size_t n = 1; n <= kMaxSmall; ++n) {
    if (n > ClassSize(c)) ++c;
    ASSERT_EQ(SizeToClass(n), c) << "size " << n;
    ASSERT_GE(ClassSize(c), n);
    if (c > 0) {
      ASSERT_LT(ClassSize(c - 1), n);
    }
  }
  EXPECT_EQ(c, kNumClasses - 1);
  EXPECT_EQ(SizeToClass(0), 0u);
}

TEST(SizeClass, SizesAreMultiplesOf16AndWasteAtMostAQuarter) {
  for (uint32_t c = 0; c < kNumClasses; ++c) {
    EXPECT_EQ(ClassSize(c) % kMinAlign, 0u);
    if (c > 8) {
      EXPECT_LE(ClassSize(c) - ClassSize(c - 1), ClassSize(c - 1) / 4 + 16) << c;
    }
  }
}

TEST(SizeClass, PowerOfTwoAlignmentsHaveAClass) {
  // AlignedAlloc walks up from SizeToClass(size) to a class divisible by the
  // alignment; for every alignment up to a page one exists.
  for (size_t align = 16; align <= 4096; align *= 2) {
    uint32_t c = SizeToClass(align);
    while (c < kNumClasses && ClassSize(c) % align != 0) ++c;
    EXPECT_LT(c, kNumClasses) << align;
    EXPECT_EQ(ClassSize(c), align);
  }
}

}  // namespace
}  // namespace svm::alloc
