// The checker's own tests: the shadow memory, the order checker, and the
// World reporting what a broken program or schedule looks like.
#include <gtest/gtest.h>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_order.h"
#include "tests/sim/sim_shadow.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

TEST(ShadowMemory, TracksWritesAndExplainsStaleReads) {
  ProgramBuilder b(2, 1, 1);
  const uint32_t v = b.AddVar(10, 4);
  const Program p = b.Take();
  ShadowMemory shadow(p);
  const uint8_t zeros[4] = {0, 0, 0, 0};
  EXPECT_TRUE(shadow.Matches(10, zeros));
  shadow.Write(v, 10, 4, 0x11223344, 0, 3);
  shadow.Write(v, 10, 4, 0x55667788, 1, 7);
  const uint8_t now[4] = {0x88, 0x77, 0x66, 0x55};
  const uint8_t old[4] = {0x44, 0x33, 0x22, 0x11};
  EXPECT_TRUE(shadow.Matches(10, now));
  EXPECT_FALSE(shadow.Matches(10, old));
  const std::string why = shadow.Explain(v, 10, old);
  EXPECT_NE(why.find("last written by n1.t0 op 7"), std::string::npos) << why;
  EXPECT_NE(why.find("matches the write by n0.t0 op 3, 1 write(s) stale"), std::string::npos)
      << why;
  EXPECT_NE(shadow.Explain(v, 10, zeros).find("initial zeros"), std::string::npos);
  EXPECT_EQ(shadow.VarAt(9), -1);
  EXPECT_EQ(shadow.VarAt(13), 0);
}

TEST(ShadowMemory, PiecesOfAVariable) {
  ProgramBuilder b(1, 1, 2);
  const uint32_t v = b.AddVar(4094, 4);  // crosses the page boundary
  ShadowMemory shadow(b.program());
  shadow.Write(v, 4096, 2, 0xaabbccdd, 0, 0);  // the upper two bytes only
  const uint8_t lo[2] = {0, 0};
  const uint8_t hi[2] = {0xbb, 0xaa};
  EXPECT_TRUE(shadow.Matches(4094, lo));
  EXPECT_TRUE(shadow.Matches(4096, hi));
}

TEST(OrderChecker, LockOrdersAccesses) {
  OrderChecker oc(1, 2, 1);
  EXPECT_EQ(oc.Acquired(0, 7), "");
  EXPECT_EQ(oc.Accessed(0, 0, true), "");
  EXPECT_EQ(oc.Released(0, 7), "");
  EXPECT_EQ(oc.Acquired(1, 7), "");
  EXPECT_EQ(oc.Accessed(1, 0, false), "");
  EXPECT_EQ(oc.Accessed(1, 0, true), "");
  EXPECT_EQ(oc.Released(1, 7), "");
}

TEST(OrderChecker, ReportsRaces) {
  OrderChecker oc(1, 2, 2);
  EXPECT_EQ(oc.Accessed(0, 0, true), "");
  EXPECT_NE(oc.Accessed(1, 0, false), "");  // write -> read, unordered
  EXPECT_EQ(oc.Accessed(0, 1, false), "");
  EXPECT_NE(oc.Accessed(1, 1, true), "");  // read -> write, unordered
}

TEST(OrderChecker, AccessAfterReleaseIsNotCovered) {
  OrderChecker oc(1, 2, 1);
  EXPECT_EQ(oc.Acquired(0, 7), "");
  EXPECT_EQ(oc.Released(0, 7), "");
  EXPECT_EQ(oc.Accessed(0, 0, true), "");  // after its release: not ordered
  EXPECT_EQ(oc.Acquired(1, 7), "");
  EXPECT_NE(oc.Accessed(1, 0, false), "");
}

TEST(OrderChecker, MutualExclusionAndBarriers) {
  OrderChecker oc(2, 4, 1);
  EXPECT_EQ(oc.Acquired(0, 7), "");
  EXPECT_NE(oc.Acquired(3, 7), "");
  EXPECT_NE(oc.Released(2, 7), "");
  oc.BarrierArrived(0, 1, 4);
  oc.BarrierArrived(1, 1, 4);
  oc.BarrierArrived(2, 1, 4);
  EXPECT_NE(oc.BarrierPassed(0, 1, 4), "");  // one arrival missing
  OrderChecker ok(2, 2, 1);
  EXPECT_EQ(ok.Accessed(0, 0, true), "");
  ok.BarrierArrived(0, 1, 2);
  ok.BarrierArrived(1, 1, 2);
  EXPECT_EQ(ok.BarrierPassed(0, 1, 2), "");
  EXPECT_EQ(ok.BarrierPassed(1, 1, 2), "");
  EXPECT_EQ(ok.Accessed(1, 0, false), "");  // ordered by the barrier
  // The next episode of the same barrier starts afresh.
  ok.BarrierArrived(0, 1, 2);
  EXPECT_NE(ok.BarrierPassed(0, 1, 2), "");
  // A thread that sat an episode out joins the one filling when it comes.
  OrderChecker some(1, 3, 1);
  some.BarrierArrived(0, 1, 2);
  some.BarrierArrived(1, 1, 2);
  EXPECT_EQ(some.BarrierPassed(0, 1, 2), "");
  EXPECT_EQ(some.BarrierPassed(1, 1, 2), "");
  for (uint32_t g = 0; g < 3; ++g) some.BarrierArrived(g, 1, 3);
  for (uint32_t g = 0; g < 3; ++g) EXPECT_EQ(some.BarrierPassed(g, 1, 3), "") << g;
}

// Signal/Await order the schedule but are no synchronisation: a program that
// relies on them for data is racy, and the World says so instead of blaming
// the protocol.
TEST(World, ReportsARacyProgram) {
  ProgramBuilder b(2, 1, 2);
  const uint32_t x = b.AddVar(4096 + 8, 4);
  b.Write(b.G(0, 0), x);
  b.Signal(b.G(0, 0), 1);
  b.Await(b.G(1, 0), 1);
  b.Read(b.G(1, 0), x);
  b.FinalCheck(9);
  const CaseResult r = RunProgram(Config(2, 1, 2, 1), b.program());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, Failure::kRace) << r.message;
}

TEST(World, ReportsDeadlockWithSeed) {
  ProgramBuilder b(2, 1, 1);
  b.Await(b.G(1, 0), 42);  // never signalled
  CaseConfig c = Config(2, 1, 1, 77);
  const CaseResult r = RunProgram(c, b.program());
  EXPECT_EQ(r.failure, Failure::kDeadlock) << r.message;
  EXPECT_NE(r.message.find("--seed 77"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("n1.t0 op 0 Await(42): awaiting"), std::string::npos) << r.message;
}

// dw and later: a node that waits for deposits that never come can only be
// polled, and a poll with nothing new is no progress: the run ends as a
// deadlock naming the waiting nodes, long before the step limit.
TEST(World, ReportsNodesStuckWaitingForDeposits) {
  for (Mode mode : {Mode::kDw, Mode::kNil}) {
    CaseConfig c = Config(3, 2, 4, 8);
    c.mode = mode;
    c.lose_deposits_of = 1;
    const CaseResult r = RunCase(c);
    EXPECT_EQ(r.failure, Failure::kDeadlock) << r.message;
    EXPECT_NE(r.message.find("waiting for deposits or diffs:"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("--lose-deposits-of 1"), std::string::npos) << r.message;
    EXPECT_LT(r.steps, 20000u);
    c.lose_deposits_of = kNoNode;
    EXPECT_TRUE(RunCase(c).ok);
  }
}

TEST(World, RejectsAnInvalidProgram) {
  ProgramBuilder b(2, 1, 1);
  b.Acquire(b.G(0, 0), 5);  // never released
  const CaseResult r = RunProgram(Config(2, 1, 1, 1), b.program());
  EXPECT_EQ(r.failure, Failure::kBadProgram) << r.message;
}

TEST(World, RejectsMisusedThreadLives) {
  auto bad = [](auto&& build) {
    ProgramBuilder b(2, 2, 1);
    build(b);
    return RunProgram(Config(2, 2, 1, 1), b.program()).failure == Failure::kBadProgram;
  };
  EXPECT_TRUE(bad([](ProgramBuilder& b) {
    b.Exit(0);
    b.Signal(0, 1);  // after its Exit
  }));
  EXPECT_TRUE(bad([](ProgramBuilder& b) {
    b.Spawn(0, 3);
    b.Spawn(1, 3);  // spawned twice
  }));
  EXPECT_TRUE(bad([](ProgramBuilder& b) { b.Spawn(2, 2); }));
  EXPECT_TRUE(bad([](ProgramBuilder& b) { b.Join(0, 1); }));  // 1 never exits
  EXPECT_FALSE(bad([](ProgramBuilder& b) {
    b.Exit(1);
    b.Join(0, 1);
    b.Spawn(0, 3);
  }));
}

// A thread named by a Spawn does not run before it; one never spawned is a
// deadlock that says so.
TEST(World, ThreadNeverSpawnedIsADeadlock) {
  ProgramBuilder c(2, 1, 1);
  c.Await(c.G(0, 0), 9);
  c.Spawn(c.G(0, 0), c.G(1, 0));
  c.Read(c.G(1, 0), c.AddVar(8, 4));
  const CaseResult r = RunProgram(Config(2, 1, 1, 3), c.program());
  EXPECT_EQ(r.failure, Failure::kDeadlock) << r.message;
  EXPECT_NE(r.message.find("n1.t0 op 0 Read(var 0 @0x8 len 4): not spawned"), std::string::npos)
      << r.message;
}

TEST(World, StepLimitCatchesNonTermination) {
  CaseConfig c = Config(2, 2, 4, 5);
  c.max_steps = 50;
  const CaseResult r = RunCase(c);
  EXPECT_EQ(r.failure, Failure::kStepLimit) << r.message;
  EXPECT_NE(r.message.find("--max-steps 50"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace svm::sim
