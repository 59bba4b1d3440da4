// Replaying one case from the environment, and the replay parameters
// themselves: what a failure prints must parse back to the same case, and the
// same case must run the same way twice.
//
//   SVM_SIM_SEED=17 SVM_SIM_NODES=4 SVM_SIM_THREADS=2 SVM_SIM_PAGES=6
//   SVM_SIM_HOME=cyclic build/tests/sim_replay_test --gtest_filter=SimReplay.FromEnv
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <sstream>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

std::vector<std::string> Split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool SameStats(const NodeStats& a, const NodeStats& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;  // plain integers, no padding
}

TEST(SimReplay, FromEnv) {
  CaseConfig c;
  Status error;
  // Without SVM_SIM_SEED a fixed case runs instead of a skip: in CI a skip
  // stands only for something the machine lacks.
  if (!ConfigFromEnv(&c, &error)) c = Config(3, 2, 4, 1);
  ASSERT_TRUE(error.ok()) << error.ToString();
  c.trace = std::getenv("SVM_SIM_TRACE") != nullptr;
  const CaseResult r = RunCase(c);
  EXPECT_TRUE(r.ok) << r.message;
  std::printf("%s: %s, %lu steps\n", ToFlags(c).c_str(), r.ok ? "ok" : ToString(r.failure),
              static_cast<unsigned long>(r.steps));
}

TEST(SimReplay, FlagsRoundTrip) {
  CaseConfig c = Config(7, 3, 5, 99, HomePolicy::kFirstTouch);
  c.schedule_seed = 12345;
  c.planted_bug = PlantedBug::kUnsafeFetch;
  c.mode = Mode::kDd;
  c.ops = 77;
  c.cyclic_block = 2;
  c.delayed = {{0, 2}, {3, 1}};
  std::vector<std::string> args = Split(ToFlags(c));
  ASSERT_EQ(args.front(), "sim_replay");
  args.erase(args.begin());
  CaseConfig d;
  ASSERT_TRUE(ParseFlags(args, &d).ok());
  EXPECT_EQ(ToFlags(d), ToFlags(c));
  EXPECT_EQ(d.planted_bug, PlantedBug::kUnsafeFetch);
  EXPECT_EQ(d.mode, Mode::kDd);
  EXPECT_EQ(d.home_policy, HomePolicy::kFirstTouch);
  ASSERT_EQ(d.delayed.size(), 2u);
  EXPECT_EQ(d.delayed[1].from, 3u);
}

TEST(SimReplay, BadFlagsAreNamed) {
  CaseConfig c;
  Status s = ParseFlags({"--nodes", "x"}, &c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nodes"), std::string::npos);
  EXPECT_FALSE(ParseFlags({"--colour", "1"}, &c).ok());
  EXPECT_FALSE(ParseFlags({"--home", "nowhere"}, &c).ok());
  EXPECT_FALSE(ParseFlags({"--bug", "bogus"}, &c).ok());
  EXPECT_FALSE(ParseFlags({"--mode", "fast"}, &c).ok());
}

// A scenario's flags keep the mode too.
TEST(SimReplay, ScenarioFlagsKeepTheMode) {
  CaseConfig c;
  c.scenario = "safe-fetch";
  c.mode = Mode::kNil;
  std::vector<std::string> args = Split(ToFlags(c));
  args.erase(args.begin());
  CaseConfig d;
  ASSERT_TRUE(ParseFlags(args, &d).ok());
  EXPECT_EQ(d.mode, Mode::kNil);
  EXPECT_NE(ToEnv(c).find("SVM_SIM_MODE=nil"), std::string::npos);
}

// Same parameters, same run: steps, messages and every counter agree.
TEST(SimReplay, SameSeedSameRun) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    CaseConfig c = Config(5, 3, 6, seed, HomePolicy::kFirstTouch);
    c.mode = static_cast<Mode>(seed - 1);  // one run per mode
    if (seed == 3) c.delayed = {{1, 0}, {2, 4}};  // slow reads and delayed pairs
    const CaseResult a = RunCase(c);
    const CaseResult b = RunCase(c);
    ASSERT_TRUE(a.ok) << a.message;
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.messages, b.messages);
    EXPECT_EQ(a.nic_ops, b.nic_ops);
    EXPECT_EQ(a.polls, b.polls);
    EXPECT_EQ(a.reads_checked, b.reads_checked);
    ASSERT_EQ(a.node_stats.size(), b.node_stats.size());
    for (size_t n = 0; n < a.node_stats.size(); ++n) {
      EXPECT_TRUE(SameStats(a.node_stats[n], b.node_stats[n])) << "node " << n;
    }
  }
}

// The schedule seed alone changes the interleaving of the same program.
TEST(SimReplay, ScheduleSeedChangesTheSchedule) {
  CaseConfig c = Config(4, 2, 6, 11);
  std::set<uint64_t> steps;
  for (uint64_t s = 1; s <= 5; ++s) {
    c.schedule_seed = s;
    const CaseResult r = RunCase(c);
    ASSERT_TRUE(r.ok) << r.message;
    steps.insert(r.steps);
  }
  EXPECT_GT(steps.size(), 1u);
}

}  // namespace
}  // namespace svm::sim
