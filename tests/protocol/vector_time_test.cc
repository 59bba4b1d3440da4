// VectorTime: the partial order of vector clocks and merge as its join.
#include "protocol/vector_time.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace svm {
namespace {

VectorTime V(std::vector<IntervalId> t) { return VectorTime(std::move(t)); }

// Small entries, so equal and comparable pairs come up often.
VectorTime Random(std::mt19937& rng, size_t n, IntervalId max = 3) {
  std::uniform_int_distribution<IntervalId> d(0, max);
  VectorTime v(n);
  for (NodeId i = 0; i < n; ++i) v[i] = d(rng);
  return v;
}

TEST(VectorTimeTest, ConstructionAndAccess) {
  VectorTime z(3);
  EXPECT_EQ(z.size(), 3u);
  EXPECT_EQ(z, V({0, 0, 0}));
  z[1] = 7;
  EXPECT_EQ(z[1], 7u);
  EXPECT_EQ(std::vector<IntervalId>(z.entries().begin(), z.entries().end()),
            (std::vector<IntervalId>{0, 7, 0}));
  EXPECT_EQ(VectorTime().size(), 0u);
}

// Up to kInline entries live in the object (no heap allocation); more go to
// the heap and behave the same.
TEST(VectorTimeTest, SmallVectorsLiveInTheObject) {
  for (size_t n : {size_t(1), VectorTime::kInline, VectorTime::kInline + 1, size_t(256)}) {
    VectorTime v(n);
    v[NodeId(n - 1)] = 5;
    const auto* at = reinterpret_cast<const char*>(v.entries().data());
    const auto* self = reinterpret_cast<const char*>(&v);
    EXPECT_EQ(at >= self && at < self + sizeof(v), n <= VectorTime::kInline) << n;
    VectorTime copy = v;
    EXPECT_EQ(copy, v);
    copy.Merge(VectorTime(n));
    EXPECT_EQ(copy[NodeId(n - 1)], 5u);
    v.Reset(n);
    EXPECT_EQ(v, VectorTime(n));
  }
}

TEST(VectorTimeTest, ExamplesOfEachRelation) {
  const VectorTime a = V({1, 2, 3});
  EXPECT_TRUE(a.Covers(a));
  EXPECT_FALSE(a.HappenedBefore(a));
  EXPECT_FALSE(a.ConcurrentWith(a));

  const VectorTime b = V({1, 3, 3});
  EXPECT_TRUE(b.Covers(a));
  EXPECT_FALSE(a.Covers(b));
  EXPECT_TRUE(a.HappenedBefore(b));
  EXPECT_FALSE(b.HappenedBefore(a));
  EXPECT_FALSE(a.ConcurrentWith(b));

  const VectorTime c = V({2, 0, 3});
  EXPECT_TRUE(a.ConcurrentWith(c));
  EXPECT_TRUE(c.ConcurrentWith(a));
  EXPECT_FALSE(a.HappenedBefore(c));
  EXPECT_FALSE(c.HappenedBefore(a));
}

TEST(VectorTimeTest, EmptyVectorsAreEqual) {
  const VectorTime e;
  EXPECT_TRUE(e.Covers(e));
  EXPECT_FALSE(e.HappenedBefore(e));
  EXPECT_FALSE(e.ConcurrentWith(e));
}

TEST(VectorTimeTest, MergeTakesEntrywiseMax) {
  VectorTime a = V({1, 5, 0, 2});
  a.Merge(V({3, 4, 0, 2}));
  EXPECT_EQ(a, V({3, 5, 0, 2}));
}

// Meet (a barrier subtree's floor) is the greatest lower bound.
TEST(VectorTimeTest, MeetTakesEntrywiseMin) {
  VectorTime a = V({1, 5, 0, 2});
  const VectorTime b = V({3, 4, 0, 2});
  a.Meet(b);
  EXPECT_EQ(a, V({1, 4, 0, 2}));
  EXPECT_TRUE(b.Covers(a));
  EXPECT_TRUE(V({1, 5, 0, 2}).Covers(a));
}

TEST(VectorTimeTest, ToString) {
  EXPECT_EQ(V({1, 0, 42}).ToString(), "<1,0,42>");
  EXPECT_EQ(V({7}).ToString(), "<7>");
  EXPECT_EQ(VectorTime().ToString(), "<>");
  EXPECT_EQ(V({UINT32_MAX}).ToString(), "<4294967295>");
}

// Covers is a partial order; exactly one of ==, <, >, || holds for any pair.
TEST(VectorTimeTest, RandomizedPartialOrder) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const size_t n = 1 + seed % 5;
    const VectorTime a = Random(rng, n), b = Random(rng, n), c = Random(rng, n);

    EXPECT_TRUE(a.Covers(a));                                  // reflexive
    if (a.Covers(b) && b.Covers(a)) { EXPECT_EQ(a, b); }           // antisymmetric
    if (c.Covers(b) && b.Covers(a)) { EXPECT_TRUE(c.Covers(a)); }  // transitive

    const int relations = (a == b) + a.HappenedBefore(b) + b.HappenedBefore(a) +
                          a.ConcurrentWith(b);
    EXPECT_EQ(relations, 1) << a.ToString() << " vs " << b.ToString();
    EXPECT_EQ(a.HappenedBefore(b), b.Covers(a) && a != b);
    EXPECT_EQ(a.ConcurrentWith(b), b.ConcurrentWith(a));
    if (a.HappenedBefore(b) && b.HappenedBefore(c)) { EXPECT_TRUE(a.HappenedBefore(c)); }
  }
}

// Merge is the least upper bound: an upper bound, and lowering any entry of it
// loses that property; any other upper bound covers it.
TEST(VectorTimeTest, RandomizedMergeIsLeastUpperBound) {
  for (uint32_t seed = 1; seed <= 500; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const size_t n = 1 + seed % 6;
    const VectorTime a = Random(rng, n), b = Random(rng, n), c = Random(rng, n);
    VectorTime m = a;
    m.Merge(b);

    EXPECT_TRUE(m.Covers(a));
    EXPECT_TRUE(m.Covers(b));
    for (NodeId i = 0; i < n; ++i) {
      if (m[i] == 0) continue;
      VectorTime lower = m;
      --lower[i];
      EXPECT_FALSE(lower.Covers(a) && lower.Covers(b)) << "entry " << i;
    }
    if (c.Covers(a) && c.Covers(b)) { EXPECT_TRUE(c.Covers(m)); }

    VectorTime ba = b;  // commutative
    ba.Merge(a);
    EXPECT_EQ(ba, m);
    VectorTime mm = m;  // idempotent
    mm.Merge(m);
    EXPECT_EQ(mm, m);
    VectorTime left = m, bc = b;  // associative
    left.Merge(c);
    bc.Merge(c);
    VectorTime right = a;
    right.Merge(bc);
    EXPECT_EQ(left, right);
    EXPECT_EQ(m == b, b.Covers(a));  // absorbs what it covers
  }
}

}  // namespace
}  // namespace svm
