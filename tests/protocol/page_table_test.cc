#include "protocol/page_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace svm {
namespace {

TEST(PageTable, EntriesAreMadeOnFirstUseWithTheirArguments) {
  PageTable<std::string> t;
  EXPECT_EQ(t.Find(7), nullptr);
  std::string& e = t.Get(7, 3, 'x');
  EXPECT_EQ(e, "xxx");
  EXPECT_EQ(t.Find(7), &e);
  EXPECT_EQ(&t.Get(7, 1, 'y'), &e);  // made once: later arguments are unused
  EXPECT_EQ(e, "xxx");
  EXPECT_EQ(t.Find(6), nullptr);     // a neighbour in the same chunk
  EXPECT_EQ(t.size(), 1u);
}

// Entries never move: references taken early hold after many more are made,
// across chunks, far apart and in any order.
TEST(PageTable, EntriesStayWhereTheyWereMade) {
  PageTable<std::string> t;
  const PageId far = (PageId(1) << 40) + 5;
  std::string& first = t.Get(0, "first");
  std::string& last = t.Get(far, "far");
  constexpr size_t kMany = 20 * PageTable<std::string>::kBlock;  // blocks of 1, 2, 4, 8 and 16 kBlock
  for (PageId p = 1; p < 3 * kMany; p += 3) t.Get(p, std::to_string(p));
  EXPECT_EQ(t.size(), 2 + kMany);
  EXPECT_EQ(&t.At(0), &first);
  EXPECT_EQ(&t.At(far), &last);
  EXPECT_EQ(t.At(far), "far");
  EXPECT_EQ(t.At(1 + 3 * 400), std::to_string(1 + 3 * 400));
  EXPECT_EQ(t.Find(2), nullptr);
  EXPECT_EQ(t.Find(far - 1), nullptr);
  EXPECT_EQ(t.Find(far + PageTable<std::string>::kChunk), nullptr);
}

// Chunks are made in blocks (kChunkBlock, then twice as many each time)
// and found through leaves of kLeaf chunks: pages on both sides of leaf and
// chunk-block edges, and in leaves visited out of order, keep their own
// entries.
TEST(PageTable, PagesAcrossLeavesAndChunkBlocks) {
  using Table = PageTable<PageId>;
  constexpr PageId kLeafPages = PageId(Table::kLeaf) * Table::kChunk;
  constexpr PageId kBlockPages = PageId(Table::kChunkBlock) * Table::kChunk;
  Table t;
  std::vector<PageId> pages;
  for (PageId leaf : {PageId(3), PageId(0), PageId(1), PageId(7)}) {
    for (PageId off : {PageId(0), PageId(1), kBlockPages - 1, kBlockPages, 3 * kBlockPages - 1, 3 * kBlockPages,
                       kLeafPages - 1})
      pages.push_back(leaf * kLeafPages + off);
  }
  for (PageId p : pages) t.Get(p, p * 3);
  for (PageId p = 2 * kLeafPages - 2 * kBlockPages; p < 2 * kLeafPages + 2 * kBlockPages; p += 17) {
    pages.push_back(p);
    t.Get(p, p * 3);
  }
  EXPECT_EQ(t.size(), pages.size());
  for (PageId p : pages) {
    ASSERT_NE(t.Find(p), nullptr) << p;
    EXPECT_EQ(t.At(p), p * 3) << p;
  }
  EXPECT_EQ(t.Find(2), nullptr);
  EXPECT_EQ(t.Find(kLeafPages - 2), nullptr);
  EXPECT_EQ(t.Find(5 * kLeafPages), nullptr);
  EXPECT_EQ(t.Find(7 * kLeafPages + 2), nullptr);
}

}  // namespace
}  // namespace svm
