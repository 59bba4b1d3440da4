// Counter sanity: the Node's statistics agree with what the simulator saw.
#include <gtest/gtest.h>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_generator.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

uint64_t Episodes(const Program& p) {
  uint64_t n = 0;
  for (const Op& op : p.ops[0]) n += op.kind == OpKind::kBarrier;
  return n;
}

TEST(SimCounters, AgreeWithTheSimulation) {
  for (uint64_t seed = 1; seed <= Scaled(40); ++seed) {
    const HomePolicy home = static_cast<HomePolicy>(seed % 3);
    const CaseConfig c = Config(2 + seed % 7, 1 + seed % 4, 4 + seed % 5, seed, home);
    GenOptions o;
    o.nodes = c.nodes;
    o.threads = c.threads;
    o.pages = c.pages;
    const Program p = Generate(o, c.seed);
    const CaseResult r = RunCase(c);
    ASSERT_TRUE(r.ok) << r.message;
    const NodeStats& s = r.counters;
    // Every message a node counted was delivered, and nothing else.
    EXPECT_EQ(TotalMessages(s), r.messages) << ToFlags(c);
    // Every diff sent reached its home and was applied there.
    EXPECT_EQ(s.diffs, s.diffs_applied) << ToFlags(c);
    EXPECT_GT(s.diffs, 0u) << ToFlags(c);
    EXPECT_GE(s.diff_runs, s.diffs) << ToFlags(c);
    EXPECT_GE(s.diff_bytes, s.diff_runs) << ToFlags(c);
    // Each node took part in every barrier episode of the program.
    for (NodeId n = 0; n < c.nodes; ++n) {
      EXPECT_EQ(r.node_stats[n].barriers, Episodes(p)) << ToFlags(c) << " node " << n;
    }
    // Acquires: as many grants as the simulator saw, split local / remote.
    EXPECT_EQ(s.local_acquires + s.remote_acquires, r.lock_grants.size()) << ToFlags(c);
    EXPECT_GT(s.remote_acquires, 0u) << ToFlags(c);
    if (c.threads >= 2) {
      EXPECT_GT(s.local_acquires, 0u) << ToFlags(c);
    }
    EXPECT_GT(s.read_faults + s.write_faults, 0u);
    EXPECT_GT(s.fetches, 0u);
    EXPECT_GT(s.invalidations, 0u);
    EXPECT_GE(s.twins, 1u);
    // The final barrier is global: every node has applied every notice, so
    // the bins are collected.
    EXPECT_EQ(r.notices_held, 0u) << ToFlags(c);
  }
}

// A single node needs no messages at all.
TEST(SimCounters, OneNodeSendsNothing) {
  for (uint64_t seed = 1; seed <= Scaled(10); ++seed) {
    const CaseResult r = RunCase(Config(1, 4, 4, seed));
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_EQ(r.messages, 0u);
    EXPECT_EQ(r.counters.fetches, 0u);
    EXPECT_EQ(r.counters.remote_acquires, 0u);
    EXPECT_GT(r.counters.local_acquires, 0u);
  }
}

}  // namespace
}  // namespace svm::sim
