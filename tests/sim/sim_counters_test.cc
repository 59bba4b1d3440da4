// Counter sanity: the Node's statistics agree with what the simulator saw, in
// every mode; and each mode's row of DESIGN.md "Modes" holds: the handler
// kinds it offloads never run, and the one-sided work shows in its counters.
#include <algorithm>
#include <gtest/gtest.h>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_generator.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

// The barrier episodes node n's threads take part in.
uint64_t Episodes(const Program& p, NodeId n) {
  uint64_t count = 0;
  for (const Program::Episode& e : p.BarrierEpisodes())
    count += std::any_of(e.threads.begin(), e.threads.end(), [&](uint32_t g) { return g / p.threads == n; });
  return count;
}

constexpr Mode kModes[] = {Mode::kBase, Mode::kDw, Mode::kRf, Mode::kDd, Mode::kNil};

uint64_t Handled(const NodeStats& s, HandlerKind k) { return s.handler[static_cast<size_t>(k)]; }
uint64_t Sent(const NodeStats& s, MessageType t) { return s.messages_sent[static_cast<size_t>(t)]; }

TEST(SimCounters, AgreeWithTheSimulation) {
  for (Mode mode : kModes) {
    for (uint64_t seed = 1; seed <= Scaled(40); ++seed) {
      const HomePolicy home = static_cast<HomePolicy>(seed % 3);
      CaseConfig c = Config(2 + seed % 7, 1 + seed % 4, 4 + seed % 5, seed, home);
      c.mode = mode;
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
      // Every diff sent reached its home and was applied there (dd: by the
      // home's NIC, so no handler counted it).
      EXPECT_EQ(s.diffs, s.diffs_applied + s.direct_diffs) << ToFlags(c);
      EXPECT_GT(s.diffs, 0u) << ToFlags(c);
      EXPECT_GE(s.diff_runs, s.diffs) << ToFlags(c);
      EXPECT_GE(s.diff_bytes, s.diff_runs) << ToFlags(c);
      // Each node took part in every barrier episode its threads met.
      for (NodeId n = 0; n < c.nodes; ++n) {
        EXPECT_EQ(r.node_stats[n].barriers, Episodes(p, n)) << ToFlags(c) << " node " << n;
      }
      // Acquires: as many grants as the simulator saw, split local / remote.
      EXPECT_EQ(s.local_acquires + s.remote_acquires, r.lock_grants.size()) << ToFlags(c);
      EXPECT_GT(s.remote_acquires, 0u) << ToFlags(c);
      // Every mode keeps an idle token where it was last used (nil too).
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
      EXPECT_GT(s.notices_collected, 0u) << ToFlags(c);
    }
  }
}

// With claim_by_cas off (the tcp transport) first-touch homes are claimed by
// messages in every mode, never by CAS, and the data stays right.
TEST(SimCounters, ClaimsByMessageWhereCasIsOff) {
  for (Mode mode : {Mode::kRf, Mode::kDd, Mode::kNil}) {
    NodeStats sum;
    for (uint64_t seed = 1; seed <= std::max<uint64_t>(Scaled(20), 8); ++seed) {
      CaseConfig c = Config(2 + seed % 5, 1 + seed % 3, 4 + seed % 5, seed, HomePolicy::kFirstTouch);
      c.mode = mode;
      c.claim_by_cas = false;
      c.max_run = seed % 2 == 0 ? 4 : 1;
      const CaseResult r = RunCase(c);
      ASSERT_TRUE(r.ok) << r.message;
      EXPECT_EQ(r.counters.home_claims, 0u) << ToFlags(c);
      AddStats(&sum, r.counters);
    }
    SCOPED_TRACE(ToString(mode));
    EXPECT_GT(Sent(sum, MessageType::kHomeClaim), 0u);
    EXPECT_EQ(Sent(sum, MessageType::kHomeReply), Sent(sum, MessageType::kHomeClaim));
    EXPECT_GT(Handled(sum, HandlerKind::kDirectory), 0u);
  }
}

// Offloaded work never reaches a handler: rf and later serve no fetch, dd and
// later apply no diff, nil serves no (program) lock; notices are deposited
// from dw on and never ride on a message.
TEST(SimCounters, OffloadedKindsHaveNoHandler) {
  for (Mode mode : kModes) {
    NodeStats sum;
    uint64_t nic_ops = 0, polls = 0;
    // Not fewer than 10 cases, even scaled down: whether a case ever polls
    // depends on its schedule, and the sums below must show every kind.
    for (uint64_t seed = 1; seed <= std::max<uint64_t>(Scaled(30), 10); ++seed) {
      const HomePolicy home = static_cast<HomePolicy>(seed % 3);
      CaseConfig c = Config(2 + seed % 7, 1 + seed % 4, 4 + seed % 5, seed, home);
      c.mode = mode;
      c.record_deliveries = true;
      const CaseResult r = RunCase(c);
      ASSERT_TRUE(r.ok) << r.message;
      const NodeStats& s = r.counters;
      if (DepositsNotices(mode)) {
        // One deposit per interval closed (every case has >= 2 nodes), and
        // no message carried a notice.
        EXPECT_EQ(s.notices_deposited, s.intervals) << ToFlags(c);
        for (const DeliveryRecord& d : r.deliveries) EXPECT_EQ(d.notices, 0u) << ToFlags(c);
      }
      if (ReadsRemotely(mode)) {
        EXPECT_EQ(s.remote_reads, s.fetches) << ToFlags(c);
      }
      if (DiffsDirectly(mode)) {
        EXPECT_EQ(s.direct_diffs, s.diffs) << ToFlags(c);
      }
      if (LocksAtNic(mode)) {
        EXPECT_EQ(s.nic_locks, s.remote_acquires) << ToFlags(c);
      }
      // First touch from rf on: claims are CASes at the manager, never
      // messages (every case has >= 2 nodes).
      if (home == HomePolicy::kFirstTouch && ReadsRemotely(mode)) {
        EXPECT_GT(s.home_claims, 0u) << ToFlags(c);
        EXPECT_EQ(Sent(s, MessageType::kHomeClaim) + Sent(s, MessageType::kHomeReply), 0u) << ToFlags(c);
      } else {
        EXPECT_EQ(s.home_claims, 0u) << ToFlags(c);
      }
      AddStats(&sum, s);
      nic_ops += r.nic_ops;
      polls += r.polls;
    }
    SCOPED_TRACE(ToString(mode));
    EXPECT_EQ(Handled(sum, HandlerKind::kFetch) == 0, ReadsRemotely(mode));
    EXPECT_EQ(Handled(sum, HandlerKind::kDiff) == 0, DiffsDirectly(mode));

    EXPECT_EQ(Sent(sum, MessageType::kFetchRequest) == 0, ReadsRemotely(mode));
    EXPECT_EQ(Sent(sum, MessageType::kDiff) == 0, DiffsDirectly(mode));
    // nil: no home forwards: each swap of a tail word sends one request,
    // straight to the holder, which grants it.
    EXPECT_GT(Handled(sum, HandlerKind::kLock), 0u);
    if (LocksAtNic(mode)) {
      EXPECT_EQ(Sent(sum, MessageType::kLockRequest), sum.nic_locks);
      EXPECT_EQ(Sent(sum, MessageType::kLockGrant), sum.nic_locks);
    } else {
      EXPECT_GE(Sent(sum, MessageType::kLockRequest), Sent(sum, MessageType::kLockGrant));
    }
    EXPECT_EQ(Handled(sum, HandlerKind::kNotice), 0u);
    // Barriers stay messages in every mode; first-touch home claims up to dw.
    EXPECT_GT(Handled(sum, HandlerKind::kBarrier), 0u);
    EXPECT_EQ(Handled(sum, HandlerKind::kDirectory) > 0, !ReadsRemotely(mode));
    EXPECT_EQ(sum.home_claims > 0, ReadsRemotely(mode));
    // The one-sided work shows, and only in the modes that do it.
    EXPECT_EQ(sum.notices_deposited > 0, DepositsNotices(mode));
    EXPECT_EQ(sum.notices_taken > 0, DepositsNotices(mode));
    EXPECT_EQ(sum.polls > 0, DepositsNotices(mode));
    EXPECT_EQ(polls, sum.polls);
    EXPECT_EQ(sum.remote_reads > 0, ReadsRemotely(mode));
    EXPECT_EQ(sum.direct_diffs > 0, DiffsDirectly(mode));
    EXPECT_EQ(sum.diffs_applied > 0, !DiffsDirectly(mode));
    EXPECT_EQ(sum.nic_locks > 0, LocksAtNic(mode));
    EXPECT_EQ(nic_ops > 0, DepositsNotices(mode));
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
