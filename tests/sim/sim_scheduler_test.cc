#include "tests/sim/sim_scheduler.h"

#include <gtest/gtest.h>

#include <map>

namespace svm::sim {
namespace {

using Kind = Scheduler::Choice::Kind;

TEST(Scheduler, NothingWhenIdle) {
  Scheduler s(1, 4);
  SimNetwork net(2);
  EXPECT_EQ(s.Next(net).kind, Kind::kNothing);
}

TEST(Scheduler, PicksAmongThreadsAndPairs) {
  Scheduler s(7, 4);
  SimNetwork net(3);
  s.SetRunnable(1);
  s.SetRunnable(3);
  s.SetRunnable(3);  // no-op
  net.Send(0, 2, {1});
  std::map<int, int> seen;
  for (int i = 0; i < 3000; ++i) {
    const Scheduler::Choice c = s.Next(net);
    seen[c.kind == Kind::kThread ? static_cast<int>(c.thread)
                                 : 100 + static_cast<int>(c.pair.from)]++;
  }
  ASSERT_EQ(seen.size(), 3u);  // threads 1 and 3 and the pair from node 0
  for (const auto& [what, n] : seen) EXPECT_GT(n, 800) << what;  // about 1000 each
  s.ClearRunnable(1);
  s.ClearRunnable(1);  // no-op
  EXPECT_FALSE(s.runnable(1));
  EXPECT_TRUE(s.runnable(3));
  EXPECT_EQ(s.runnable_count(), 1u);
}

TEST(Scheduler, DelayedPairOnlyWhenNothingElse) {
  Scheduler s(3, 2);
  SimNetwork net(2);
  net.SetDelayed(0, 1, true);
  net.Send(0, 1, {1});
  s.SetRunnable(0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.Next(net).kind, Kind::kThread);
  s.ClearRunnable(0);
  const Scheduler::Choice c = s.Next(net);
  EXPECT_EQ(c.kind, Kind::kDeliver);
  EXPECT_EQ(c.pair.from, 0u);
}

TEST(Scheduler, SameSeedSameChoices) {
  auto run = [](uint64_t seed) {
    Scheduler s(seed, 8);
    SimNetwork net(4);
    for (uint32_t g = 0; g < 8; ++g) s.SetRunnable(g);
    net.Send(1, 2, {0});
    net.Send(3, 0, {0});
    std::vector<uint32_t> picks;
    for (int i = 0; i < 50; ++i) {
      const Scheduler::Choice c = s.Next(net);
      picks.push_back(c.kind == Kind::kThread ? c.thread : 100 + c.pair.from);
    }
    return picks;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

}  // namespace
}  // namespace svm::sim
