#include "libsvm/alloc/page_heap.h"

#include <gtest/gtest.h>

#include <vector>

#include "libsvm/alloc/layout.h"
#include "tests/alloc/test_region.h"

namespace svm::alloc {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

class PageHeapTest : public ::testing::Test {
 protected:
  PageHeapTest() : region_(64 * kMiB), heap_(3) { heap_.Add(region_.base(), region_.size()); }
  testing::TestRegion region_;
  PageHeap heap_;
};

TEST_F(PageHeapTest, BlocksHaveHeadersAndDoNotOverlap) {
  bool fresh = false;
  std::vector<std::pair<uintptr_t, size_t>> blocks;
  for (size_t n : {size_t(1), size_t(4096), size_t(4097), size_t(100000), size_t(3 * kMiB)}) {
    auto p = reinterpret_cast<uintptr_t>(heap_.Allocate(n, kPage, &fresh));
    ASSERT_NE(p, 0u);
    EXPECT_TRUE(fresh);
    EXPECT_EQ(p % kPage, 0u);
    EXPECT_EQ(HeaderOf(p)->check, kLargeMagic ^ p);
    EXPECT_EQ(HeaderOf(p)->usable, AlignUp(n, kPage));
    EXPECT_EQ(HeaderOf(p)->owner, 3u);
    EXPECT_EQ(heap_.LiveSize(p), AlignUp(n, kPage));
    for (auto& [q, m] : blocks) EXPECT_TRUE(p >= q + m + kPage || p + n + kPage <= q);
    blocks.push_back({p, AlignUp(n, kPage)});
  }
  for (auto& [p, n] : blocks) EXPECT_EQ(heap_.Free(p), n);
  EXPECT_EQ(heap_.Free(blocks[0].first), 0u);  // not live any more
  EXPECT_EQ(heap_.LiveBlocks(), 0u);
}

TEST_F(PageHeapTest, FreedNeighboursCoalesce) {
  bool fresh;
  auto a = reinterpret_cast<uintptr_t>(heap_.Allocate(kMiB, kPage, &fresh));
  auto b = reinterpret_cast<uintptr_t>(heap_.Allocate(kMiB, kPage, &fresh));
  auto c = reinterpret_cast<uintptr_t>(heap_.Allocate(kMiB, kPage, &fresh));
  heap_.Free(a);
  heap_.Free(c);
  heap_.Free(b);
  // One extent now: a 3 MiB block fits exactly where a was, not fresh.
  auto d = reinterpret_cast<uintptr_t>(heap_.Allocate(3 * kMiB + 2 * kPage, kPage, &fresh));
  EXPECT_EQ(d, a);
  EXPECT_FALSE(fresh);
}

TEST_F(PageHeapTest, AlignedBlocksReturnTheirSlack) {
  bool fresh;
  std::vector<uintptr_t> ps;
  for (size_t align = kPage; align <= 4 * kMiB; align *= 2) {
    auto p = reinterpret_cast<uintptr_t>(heap_.Allocate(5000, align, &fresh));
    ASSERT_NE(p, 0u);
    EXPECT_EQ(p % align, 0u);
    ps.push_back(p);
  }
  for (uintptr_t p : ps) heap_.Free(p);
  EXPECT_EQ(heap_.LiveBlocks(), 0u);
  // Everything is one free extent again.
  auto all = reinterpret_cast<uintptr_t>(heap_.Allocate(heap_.FreeBytes() - kPage, kPage, &fresh));
  EXPECT_EQ(all, region_.base() + kPage);
}

TEST_F(PageHeapTest, ResizeInPlace) {
  bool fresh;
  auto a = reinterpret_cast<uintptr_t>(heap_.Allocate(kMiB, kPage, &fresh));
  EXPECT_TRUE(heap_.Resize(a, 2 * kMiB));  // at the top: grows
  EXPECT_EQ(HeaderOf(a)->usable, 2 * kMiB);
  auto b = reinterpret_cast<uintptr_t>(heap_.Allocate(kPage, kPage, &fresh));
  EXPECT_FALSE(heap_.Resize(a, 3 * kMiB));  // b is in the way
  EXPECT_TRUE(heap_.Resize(a, kMiB / 2));   // shrink frees the tail
  EXPECT_TRUE(heap_.Resize(a, kMiB));       // and it can grow back
  EXPECT_EQ(heap_.LiveSize(a), kMiB);
  heap_.Free(a);
  heap_.Free(b);
}

TEST_F(PageHeapTest, OutOfSpaceIsNull) {
  bool fresh;
  EXPECT_EQ(heap_.Allocate(64 * kMiB, kPage, &fresh), nullptr);  // header page too
  EXPECT_EQ(heap_.Allocate(SIZE_MAX, kPage, &fresh), nullptr);
  EXPECT_EQ(heap_.Allocate(kPage, size_t(1) << 40, &fresh), nullptr);
  EXPECT_NE(heap_.Allocate(64 * kMiB - kPage, kPage, &fresh), nullptr);
  EXPECT_EQ(heap_.Allocate(1, kPage, &fresh), nullptr);
}

// Chunks arrive as the node claims them: one that continues a free extent
// joins it; others stay apart. Freshness is per page ever handed out.
TEST(PageHeapChunks, ChunksJoinWhenAdjacentAndStayFreshUntilUsed) {
  testing::TestRegion region(16 * kMiB);
  ASSERT_TRUE(region.ok());
  const uintptr_t b = region.base();
  PageHeap h(0);
  bool fresh = false;
  EXPECT_EQ(h.Allocate(kPage, kPage, &fresh), nullptr);  // nothing added yet
  h.Add(b, 2 * kMiB);
  h.Add(b + 4 * kMiB, 2 * kMiB);
  EXPECT_EQ(h.FreeBytes(), 4 * kMiB);
  EXPECT_EQ(h.Allocate(3 * kMiB, kPage, &fresh), nullptr);  // no extent holds it
  h.Add(b + 2 * kMiB, 2 * kMiB);                           // now one 6 MiB extent
  auto p = reinterpret_cast<uintptr_t>(h.Allocate(3 * kMiB, kPage, &fresh));
  EXPECT_EQ(p, b + kPage);
  EXPECT_TRUE(fresh);
  h.Free(p);
  auto q = reinterpret_cast<uintptr_t>(h.Allocate(kMiB, kPage, &fresh));
  EXPECT_EQ(q, p);
  EXPECT_FALSE(fresh);  // handed out before
  // Blocks after it are fresh once they lie beyond the first block.
  std::vector<uintptr_t> more;
  for (int i = 0; i < 4; ++i) {
    more.push_back(reinterpret_cast<uintptr_t>(h.Allocate(kMiB, kPage, &fresh)));
    EXPECT_EQ(fresh, more.back() >= p + 3 * kMiB) << i;
  }
  EXPECT_GE(more.back(), p + 3 * kMiB);
  h.Free(q);
  for (uintptr_t m : more) h.Free(m);
  EXPECT_EQ(h.FreeBytes(), 6 * kMiB);
}

// Under first touch a read of the page after a fresh block homes it at
// the allocating node, ending a sweep's claims ahead at the block's end
// (HeapOptions::mark_block_ends). That page is the next block's header.
TEST(PageHeapMarks, FreshBlocksMarkThePageAfterThemWhereTheNextHeaderGoes) {
  testing::TestRegion region(16 * kMiB);
  ASSERT_TRUE(region.ok());
  PageHeap plain(0);
  PageHeap marking(0, /*mark_ends=*/true);
  plain.Add(region.base(), 8 * kMiB);
  marking.Add(region.base() + 8 * kMiB, 8 * kMiB);
  bool fresh;
  auto p = reinterpret_cast<uintptr_t>(plain.Allocate(100000, kPage, &fresh));
  const uintptr_t p_end = p + AlignUp(100000, kPage);
  EXPECT_EQ(testing::ResidentPages(reinterpret_cast<void*>(p_end), kPage), 0u);

  auto a = reinterpret_cast<uintptr_t>(marking.Allocate(100000, kPage, &fresh));
  ASSERT_TRUE(fresh);
  const uintptr_t a_end = a + AlignUp(100000, kPage);
  EXPECT_EQ(testing::ResidentPages(reinterpret_cast<void*>(a_end), kPage), 1u);
  EXPECT_EQ(testing::ResidentPages(reinterpret_cast<void*>(a_end + kPage), kPage), 0u);
  auto b = reinterpret_cast<uintptr_t>(marking.Allocate(3 * kPage, kPage, &fresh));
  EXPECT_EQ(b, a_end + kPage);  // its header on the page marked
  EXPECT_EQ(testing::ResidentPages(reinterpret_cast<void*>(b + 3 * kPage), kPage), 1u);

  // A block that ends its extent reads nothing past it.
  const size_t left = marking.FreeBytes();
  auto c = reinterpret_cast<uintptr_t>(marking.Allocate(left - kPage, kPage, &fresh));
  ASSERT_NE(c, 0u);
  EXPECT_EQ(c + left - kPage, region.base() + 16 * kMiB);
  EXPECT_EQ(marking.FreeBytes(), 0u);
}

}  // namespace
}  // namespace svm::alloc
