#include "protocol/page_table.h"

#include <gtest/gtest.h>

#include <string>

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
  constexpr size_t kMany = 3 * PageTable<std::string>::kBlock;  // several blocks
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

}  // namespace
}  // namespace svm
