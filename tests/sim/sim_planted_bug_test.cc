// Planted bugs prove the checker can fail. For each svm::PlantedBug and each
// mode: the targeted scenario that exposes it (if it has one) fails with the
// bug and passes without, and among the first seeds of a random
// configuration suited to it, one fails with the bug while all of them pass
// with kNone. Every bug applies to every mode: in rf and later,
// kNoVersionWait installs a remote read's old copy instead of reading again,
// and kUnsafeFetch overwrites a dirty page with it.
#include <gtest/gtest.h>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_scenarios.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

constexpr Mode kModes[] = {Mode::kBase, Mode::kDw, Mode::kRf, Mode::kDd, Mode::kNil};

CaseResult RunNamed(Mode mode, const std::string& scenario, uint64_t seed, PlantedBug bug) {
  CaseConfig c;
  c.mode = mode;
  c.scenario = scenario;
  c.seed = seed;
  c.planted_bug = bug;
  return RunCase(c);
}

// The targeted scenario catches the bug on every schedule seed tried.
void ExpectScenarioCatches(Mode mode, const std::string& scenario, PlantedBug bug) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const CaseResult clean = RunNamed(mode, scenario, seed, PlantedBug::kNone);
    ASSERT_TRUE(clean.ok) << clean.message;
    const CaseResult buggy = RunNamed(mode, scenario, seed, bug);
    EXPECT_FALSE(buggy.ok) << scenario << " seed " << seed << " mode " << ToString(mode)
                           << " missed " << ToString(bug);
    EXPECT_TRUE(IsDataFailure(buggy.failure)) << buggy.message;
  }
}

// Random programs on `base` catch the bug within `within` seeds (so the first
// failing seed is reported), and those seeds pass without the bug.
void ExpectSweepCatches(Mode mode, CaseConfig base, PlantedBug bug, uint64_t within) {
  base.mode = mode;
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
  std::printf("%s (%s) first caught at seed %lu:\n%s\n", ToString(bug), ToString(mode),
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
  for (Mode mode : kModes) {
    ExpectScenarioCatches(mode, "stale-read-copy", PlantedBug::kSkipInvalidation);
    ExpectSweepCatches(mode, Config(3, 2, 4, 0), PlantedBug::kSkipInvalidation, 10);
    ExpectSweepCatches(mode, Config(8, 1, 6, 0, HomePolicy::kFirstTouch),
                       PlantedBug::kSkipInvalidation, 10);
  }
}

TEST(SimPlantedBug, NoVersionWait) {
  for (Mode mode : kModes) {
    ExpectScenarioCatches(mode, "fetch-before-diff", PlantedBug::kNoVersionWait);
    ExpectSweepCatches(mode, Config(4, 2, 6, 0), PlantedBug::kNoVersionWait, 40);
  }
}

TEST(SimPlantedBug, UnsafeFetch) {
  for (Mode mode : kModes) {
    ExpectScenarioCatches(mode, "safe-fetch", PlantedBug::kUnsafeFetch);
    ExpectSweepCatches(mode, Config(2, 2, 4, 0), PlantedBug::kUnsafeFetch, 10);
    ExpectSweepCatches(mode, Config(6, 3, 8, 0, HomePolicy::kBlock), PlantedBug::kUnsafeFetch, 10);
  }
}

// Writes found by scans: a copy dropped by two notices in one acquire was
// compared with its twin before it was unmapped; a write racing with the
// unmapping (World::BeforeProtect) was lost.
TEST(SimPlantedBug, EarlyDropCheck) {
  for (Mode mode : kModes) {
    CaseConfig c = Config(4, 2, 3, 0);
    c.scan_writes = true;
    ExpectSweepCatches(mode, c, PlantedBug::kEarlyDropCheck, 60);
  }
}

// A mark counts the copies of a page, and a home stops tracking a page
// nobody holds: a copy that gave its mark back while held leaves the home's
// later writes unannounced to it.
TEST(SimPlantedBug, MarkDroppedAtInstall) {
  for (Mode mode : kModes) {
    ExpectScenarioCatches(mode, "first-fetch-while-home-writes", PlantedBug::kMarkDroppedAtInstall);
    ExpectSweepCatches(mode, Config(3, 2, 4, 0), PlantedBug::kMarkDroppedAtInstall, 20);
  }
}

}  // namespace
}  // namespace svm::sim
