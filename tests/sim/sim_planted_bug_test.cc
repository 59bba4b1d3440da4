// Planted bugs prove the checker can fail. For each svm::PlantedBug: the
// targeted scenario that exposes it fails with the bug and passes without,
// and among the first seeds of a random configuration suited to it, one
// fails with the bug while all of them pass with kNone.
#include <gtest/gtest.h>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_scenarios.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

CaseResult RunNamed(const std::string& scenario, uint64_t seed, PlantedBug bug) {
  CaseConfig c;
  c.scenario = scenario;
  c.seed = seed;
  c.planted_bug = bug;
  return RunCase(c);
}

// The targeted scenario catches the bug on every schedule seed tried.
void ExpectScenarioCatches(const std::string& scenario, PlantedBug bug) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const CaseResult clean = RunNamed(scenario, seed, PlantedBug::kNone);
    ASSERT_TRUE(clean.ok) << clean.message;
    const CaseResult buggy = RunNamed(scenario, seed, bug);
    EXPECT_FALSE(buggy.ok) << scenario << " seed " << seed << " missed " << ToString(bug);
    EXPECT_TRUE(IsDataFailure(buggy.failure)) << buggy.message;
  }
}

// Random programs on `base` catch the bug within `within` seeds (so the first
// failing seed is reported), and those seeds pass without the bug.
void ExpectSweepCatches(CaseConfig base, PlantedBug bug, uint64_t within) {
  uint64_t first_caught = 0;
  std::string example;
  for (uint64_t seed = 1; seed <= within && first_caught == 0; ++seed) {
    base.seed = seed;
    base.planted_bug = bug;
    const CaseResult buggy = RunCase(base);
    if (!buggy.ok) {
      first_caught = seed;
      example = buggy.message;
      EXPECT_TRUE(IsDataFailure(buggy.failure)) << buggy.message;
    }
  }
  ASSERT_NE(first_caught, 0u) << ToString(bug) << " went unnoticed for " << within << " seeds of "
                              << ToFlags(base);
  std::printf("%s first caught at seed %lu:\n%s\n", ToString(bug),
              static_cast<unsigned long>(first_caught),
              example.substr(0, example.find('\n')).c_str());
  for (uint64_t seed = 1; seed <= first_caught; ++seed) {
    base.seed = seed;
    base.planted_bug = PlantedBug::kNone;
    const CaseResult clean = RunCase(base);
    EXPECT_TRUE(clean.ok) << clean.message;
  }
}

TEST(SimPlantedBug, SkipInvalidation) {
  ExpectScenarioCatches("stale-read-copy", PlantedBug::kSkipInvalidation);
  ExpectSweepCatches(Config(3, 2, 4, 0), PlantedBug::kSkipInvalidation, 10);
  ExpectSweepCatches(Config(8, 1, 6, 0, HomePolicy::kFirstTouch), PlantedBug::kSkipInvalidation,
                     10);
}

TEST(SimPlantedBug, NoVersionWait) {
  ExpectScenarioCatches("fetch-before-diff", PlantedBug::kNoVersionWait);
  ExpectSweepCatches(Config(4, 2, 6, 0), PlantedBug::kNoVersionWait, 40);
}

TEST(SimPlantedBug, UnsafeFetch) {
  ExpectScenarioCatches("safe-fetch", PlantedBug::kUnsafeFetch);
  ExpectSweepCatches(Config(2, 2, 4, 0), PlantedBug::kUnsafeFetch, 10);
  ExpectSweepCatches(Config(6, 3, 8, 0, HomePolicy::kBlock), PlantedBug::kUnsafeFetch, 10);
}

}  // namespace
}  // namespace svm::sim
