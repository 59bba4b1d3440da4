// IntervalLog: the bins. Adds, lookups, gaps, duplicates and garbage collection.
#include "protocol/interval_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace svm {
namespace {

using Triple = std::tuple<NodeId, IntervalId, PageId>;

VectorTime V(std::vector<IntervalId> t) { return VectorTime(std::move(t)); }

std::vector<WriteNotice> MissingOf(const IntervalLog& log, const VectorTime& have) {
  std::vector<WriteNotice> out;
  log.Missing(have, &out);
  return out;
}

std::vector<Triple> PagesOf(const IntervalLog& log, const VectorTime& from, const VectorTime& to) {
  std::vector<Triple> out;
  log.ForEachPage(from, to, [&](NodeId n, IntervalId i, PageId p) { out.emplace_back(n, i, p); });
  return out;
}

TEST(IntervalLogTest, StartsEmpty) {
  IntervalLog log(3);
  EXPECT_EQ(log.known(), VectorTime(3));
  EXPECT_EQ(log.floor(), VectorTime(3));
  EXPECT_EQ(log.held(), 0u);
  EXPECT_TRUE(MissingOf(log, VectorTime(3)).empty());
  EXPECT_TRUE(PagesOf(log, VectorTime(3), VectorTime(3)).empty());
}

TEST(IntervalLogTest, AddInOrder) {
  IntervalLog log(2);
  ASSERT_TRUE(log.Add({0, 1, {10, 11}}).ok());
  ASSERT_TRUE(log.Add({1, 1, {20}}).ok());
  ASSERT_TRUE(log.Add({0, 2, {}}).ok());  // an interval may write nothing
  EXPECT_EQ(log.known(), V({2, 1}));
  EXPECT_EQ(log.held(), 3u);
  const std::vector<WriteNotice> want = {{0, 1, {10, 11}}, {0, 2, {}}, {1, 1, {20}}};
  EXPECT_EQ(MissingOf(log, VectorTime(2)), want);
}

TEST(IntervalLogTest, DuplicatesAreIgnored) {
  IntervalLog log(2);
  ASSERT_TRUE(log.Add({1, 1, {7}}).ok());
  ASSERT_TRUE(log.Add({1, 2, {8}}).ok());
  // A repeat (even with other pages) neither grows the log nor replaces it.
  EXPECT_TRUE(log.Add({1, 1, {99}}).ok());
  EXPECT_TRUE(log.Add({1, 2, {8}}).ok());
  EXPECT_EQ(log.known(), V({0, 2}));
  EXPECT_EQ(log.held(), 2u);
  const std::vector<WriteNotice> want = {{1, 1, {7}}, {1, 2, {8}}};
  EXPECT_EQ(MissingOf(log, VectorTime(2)), want);
}

TEST(IntervalLogTest, GapIsRejectedAndNothingRecorded) {
  IntervalLog log(2);
  ASSERT_TRUE(log.Add({0, 1, {1}}).ok());
  const Status s = log.Add({0, 3, {3}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gap"), std::string::npos) << s.ToString();
  EXPECT_FALSE(log.Add({1, 2, {3}}).ok());  // node 1 has none yet
  EXPECT_EQ(log.known(), V({1, 0}));
  EXPECT_EQ(log.held(), 1u);
  // Filling the gap in order works.
  EXPECT_TRUE(log.Add({0, 2, {2}}).ok());
  EXPECT_TRUE(log.Add({0, 3, {3}}).ok());
  EXPECT_EQ(log.known(), V({3, 0}));
}

TEST(IntervalLogTest, BadNodeAndIntervalZeroAreRejected) {
  IntervalLog log(2);
  EXPECT_EQ(log.Add({2, 1, {1}}).code(), Status::Code::kOutOfRange);
  EXPECT_EQ(log.Add({kNoNode, 1, {1}}).code(), Status::Code::kOutOfRange);
  EXPECT_EQ(log.Add({0, 0, {1}}).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(log.known(), VectorTime(2));
  EXPECT_EQ(log.held(), 0u);
}

TEST(IntervalLogTest, MissingReturnsOnlyWhatIsBeyondHave) {
  IntervalLog log(3);
  for (IntervalId i = 1; i <= 4; ++i) ASSERT_TRUE(log.Add({0, i, {i}}).ok());
  for (IntervalId i = 1; i <= 2; ++i) ASSERT_TRUE(log.Add({2, i, {100 + i}}).ok());
  // have is ahead of known for node 1 and equal for node 2: nothing from them.
  const std::vector<WriteNotice> want = {{0, 3, {3}}, {0, 4, {4}}};
  EXPECT_EQ(MissingOf(log, V({2, 5, 2})), want);
  EXPECT_TRUE(MissingOf(log, V({4, 0, 2})).empty());
  // Missing appends; it does not clear what the caller already had.
  std::vector<WriteNotice> out = {{1, 9, {9}}};
  log.Missing(V({3, 0, 1}), &out);
  const std::vector<WriteNotice> appended = {{1, 9, {9}}, {0, 4, {4}}, {2, 2, {102}}};
  EXPECT_EQ(out, appended);
}

TEST(IntervalLogTest, ForEachPageVisitsHalfOpenRange) {
  IntervalLog log(2);
  ASSERT_TRUE(log.Add({0, 1, {1, 2}}).ok());
  ASSERT_TRUE(log.Add({0, 2, {3}}).ok());
  ASSERT_TRUE(log.Add({0, 3, {4, 5}}).ok());
  ASSERT_TRUE(log.Add({1, 1, {6}}).ok());
  const std::vector<Triple> want = {{0, 2, 3}, {0, 3, 4}, {0, 3, 5}, {1, 1, 6}};
  EXPECT_EQ(PagesOf(log, V({1, 0}), V({3, 1})), want);
  // `to` below known stops early; from == to visits nothing.
  const std::vector<Triple> first = {{0, 1, 1}, {0, 1, 2}};
  EXPECT_EQ(PagesOf(log, V({0, 1}), V({1, 1})), first);
  EXPECT_TRUE(PagesOf(log, V({2, 1}), V({2, 1})).empty());
}

TEST(IntervalLogTest, CollectGarbageRaisesFloor) {
  IntervalLog log(3);
  for (IntervalId i = 1; i <= 5; ++i) ASSERT_TRUE(log.Add({0, i, {i}}).ok());
  for (IntervalId i = 1; i <= 2; ++i) ASSERT_TRUE(log.Add({1, i, {10 + i}}).ok());
  ASSERT_EQ(log.held(), 7u);

  // Clamped to known for node 1; node 2 has nothing.
  log.CollectGarbage(V({3, 9, 4}));
  EXPECT_EQ(log.floor(), V({3, 2, 0}));
  EXPECT_EQ(log.known(), V({5, 2, 0}));
  EXPECT_EQ(log.held(), 2u);
  const std::vector<WriteNotice> want = {{0, 4, {4}}, {0, 5, {5}}};
  EXPECT_EQ(MissingOf(log, log.floor()), want);
  const std::vector<Triple> pages = {{0, 5, 5}};
  EXPECT_EQ(PagesOf(log, V({4, 2, 0}), log.known()), pages);

  // Collecting below the floor changes nothing.
  log.CollectGarbage(V({1, 1, 0}));
  EXPECT_EQ(log.floor(), V({3, 2, 0}));
  EXPECT_EQ(log.held(), 2u);

  // Collected intervals are still known: re-adding them is a no-op.
  EXPECT_TRUE(log.Add({0, 2, {2}}).ok());
  EXPECT_EQ(log.held(), 2u);
  // And numbering continues past the floor.
  EXPECT_TRUE(log.Add({1, 3, {13}}).ok());
  EXPECT_TRUE(log.Add({2, 1, {21}}).ok());
  const std::vector<WriteNotice> after = {{0, 5, {5}}, {1, 3, {13}}, {2, 1, {21}}};
  EXPECT_EQ(MissingOf(log, V({4, 2, 0})), after);

  // Collecting everything empties the log.
  log.CollectGarbage(log.known());
  EXPECT_EQ(log.held(), 0u);
  EXPECT_EQ(log.floor(), log.known());
  EXPECT_TRUE(MissingOf(log, log.floor()).empty());
}

#if GTEST_HAS_DEATH_TEST && !defined(NDEBUG)
TEST(IntervalLogDeathTest, MissingBelowFloor) {
  IntervalLog log(1);
  ASSERT_TRUE(log.Add({0, 1, {1}}).ok());
  ASSERT_TRUE(log.Add({0, 2, {2}}).ok());
  log.CollectGarbage(V({1}));
  std::vector<WriteNotice> out;
  EXPECT_DEATH(log.Missing(V({0}), &out), "Covers\\(floor_\\)");
}
#endif

// A long run shaped like an application: several nodes close intervals in a
// random interleaving, and at each barrier the log drops what every node had
// applied by the barrier before (so one barrier epoch stays held). Checks that
// held() stays bounded and that Missing and ForEachPage stay exact against a
// full history kept on the side.
TEST(IntervalLogTest, LongRunWithBarrierGarbageCollection) {
  constexpr uint32_t kSeed = 20240611;
  constexpr size_t kNodes = 5;
  constexpr size_t kIntervals = 100000;
  constexpr size_t kMaxEpoch = 1500;  // intervals between two barriers, at most
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::mt19937 rng(kSeed);

  IntervalLog log(kNodes);
  std::vector<std::vector<std::vector<PageId>>> history(kNodes);  // [m][i - 1]
  VectorTime known(kNodes), prev_barrier(kNodes);
  // at_floor: how many were added by the barrier whose time is the floor.
  size_t added = 0, at_floor = 0, at_prev_barrier = 0, next_barrier = 1000, max_held = 0;

  auto random_have = [&] {
    VectorTime have(kNodes);
    for (NodeId m = 0; m < kNodes; ++m)
      have[m] = log.floor()[m] + rng() % (known[m] - log.floor()[m] + 2);  // may exceed known
    return have;
  };

  while (added < kIntervals) {
    // Skewed writers: the last node closes intervals most often.
    const NodeId m = std::min<NodeId>(rng() % (kNodes + 2), kNodes - 1);
    std::vector<PageId> pages(rng() % 4);
    for (PageId& p : pages) p = rng() % 512;
    history[m].push_back(pages);
    ASSERT_TRUE(log.Add({m, ++known[m], pages}).ok());
    ++added;

    // Duplicates and gaps arrive now and then; neither may change anything.
    if (rng() % 50 == 0 && known[m] > 1) {
      const IntervalId old = 1 + rng() % (known[m] - 1);
      ASSERT_TRUE(log.Add({m, old, {9999}}).ok());
      ASSERT_FALSE(log.Add({m, known[m] + 2, {9999}}).ok());
    }
    ASSERT_EQ(log.known(), known);
    ASSERT_EQ(log.held(), added - at_floor);
    max_held = std::max(max_held, log.held());

    if (added % 211 == 0) {
      const VectorTime have = random_have();
      std::vector<WriteNotice> want;
      for (NodeId n = 0; n < kNodes; ++n)
        for (IntervalId i = have[n] + 1; i <= known[n]; ++i)
          want.push_back({n, i, history[n][i - 1]});
      ASSERT_EQ(MissingOf(log, have), want) << "have " << have.ToString();

      VectorTime from = log.floor(), to = log.floor();
      for (NodeId n = 0; n < kNodes; ++n) {
        to[n] += rng() % (known[n] - to[n] + 1);
        from[n] += rng() % (to[n] - from[n] + 1);
      }
      std::vector<Triple> pages_want;
      for (NodeId n = 0; n < kNodes; ++n)
        for (IntervalId i = from[n] + 1; i <= to[n]; ++i)
          for (PageId p : history[n][i - 1]) pages_want.emplace_back(n, i, p);
      ASSERT_EQ(PagesOf(log, from, to), pages_want);
    }

    if (added == next_barrier) {
      log.CollectGarbage(prev_barrier);
      ASSERT_EQ(log.floor(), prev_barrier);
      ASSERT_EQ(log.held(), added - at_prev_barrier);
      at_floor = at_prev_barrier;
      prev_barrier = known;
      at_prev_barrier = added;
      next_barrier = added + 500 + rng() % (kMaxEpoch - 500 + 1);
    }
  }
  // One epoch is held after a barrier, and at most one more accrues before the next.
  EXPECT_LE(max_held, 2 * kMaxEpoch);
  EXPECT_GT(log.floor()[0], 0u);
}

}  // namespace
}  // namespace svm
