// Messages longer than a SEND travel as fragments and are joined in order.
#include "libsvm/fragment.h"

#include <gtest/gtest.h>

#include <numeric>

#include "util/coding.h"

namespace svm::rt {
namespace {

std::vector<uint8_t> Bytes(size_t n) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), uint8_t(7));
  return v;
}

TEST(Fragment, ShortMessageGoesWhole) {
  auto sends = Fragment(Bytes(100), 100);
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends[0], Bytes(100));
  Reassembler r(2);
  bool whole = false;
  ASSERT_TRUE(r.Feed(1, &sends[0], &whole).ok());
  EXPECT_TRUE(whole);
  EXPECT_EQ(sends[0], Bytes(100));
}

TEST(Fragment, LongMessageIsSplitAndJoined) {
  const std::vector<uint8_t> msg = Bytes(1000);
  auto sends = Fragment(msg, 108);  // 100 payload bytes a fragment
  ASSERT_EQ(sends.size(), 10u);
  for (const auto& f : sends) EXPECT_LE(f.size(), 108u);
  Reassembler r(3);
  for (size_t i = 0; i < sends.size(); ++i) {
    // Another sender's whole message in between does not disturb the join.
    std::vector<uint8_t> other = Bytes(10);
    bool other_whole = false;
    ASSERT_TRUE(r.Feed(0, &other, &other_whole).ok());
    EXPECT_TRUE(other_whole);
    bool whole = false;
    ASSERT_TRUE(r.Feed(2, &sends[i], &whole).ok());
    EXPECT_EQ(whole, i + 1 == sends.size()) << i;
    if (whole) {
      EXPECT_EQ(sends[i], msg);
    }
  }
}

TEST(Fragment, FragmentsThatDoNotAddUpAreMalformed) {
  auto sends = Fragment(Bytes(300), 108);
  ASSERT_EQ(sends.size(), 3u);
  Reassembler r(2);
  bool whole = false;
  ASSERT_TRUE(r.Feed(1, &sends[0], &whole).ok());
  // A whole message in the middle of a fragmented one.
  std::vector<uint8_t> stray = Bytes(20);
  EXPECT_EQ(r.Feed(1, &stray, &whole).code(), Status::Code::kMalformed);
  // A fragment naming another total.
  auto a = Fragment(Bytes(300), 108), b = Fragment(Bytes(500), 108);
  ASSERT_TRUE(r.Feed(1, &a[0], &whole).ok());
  EXPECT_EQ(r.Feed(1, &b[1], &whole).code(), Status::Code::kMalformed);
  // A claimed length beyond what a peer may make us hold.
  std::vector<uint8_t> huge(16);
  coding::EncodeFixed<uint32_t>(huge.data(), kFragmentMagic);
  coding::EncodeFixed<uint32_t>(huge.data() + 4, 0xffffffffu);
  EXPECT_EQ(r.Feed(1, &huge, &whole).code(), Status::Code::kMalformed);
  // After all that, a clean message still joins.
  auto c = Fragment(Bytes(250), 108);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_TRUE(r.Feed(1, &c[i], &whole).ok());
  EXPECT_TRUE(whole);
  EXPECT_EQ(c.back(), Bytes(250));
  EXPECT_EQ(r.Feed(5, &c.back(), &whole).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace svm::rt
