// libsvm's per-thread time accounting (libsvm/stats.h): categories and phases.
#include "libsvm/stats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

namespace svm::rt::stats {
namespace {

void BusyFor(int64_t ns) {
  const int64_t end = NowNs() + ns;
  while (NowNs() < end) {
  }
}

// The record of the program thread numbered `number`, as the report has it.
nlohmann::json Record(uint64_t number) {
  const nlohmann::json report = nlohmann::json::parse(ReportJson(0, NodeStats{}));
  for (const nlohmann::json& t : report["threads"])
    if (t["kind"] == "app" && t["thread"] == number) return t;
  ADD_FAILURE() << "no record of thread " << number;
  return {};
}

uint64_t Sum(const nlohmann::json& times) {
  uint64_t s = 0;
  for (auto it = times.begin(); it != times.end(); ++it) s += it.value().get<uint64_t>();
  return s;
}

constexpr int64_t kMs = 1'000'000;

// A fault's delivery by the kernel is claimed from the category the thread
// was in before (ClaimEarlier): all of it when there was as much.
TEST(ThreadStatsTest, ClaimEarlierTakesFromTheCategoryBefore) {
  Enable();
  std::thread([] {
    RegisterThread(ThreadKind::kApp, 0, 101);
    BusyFor(2 * kMs);
    {
      Scope fault(Category::kDataProtocol);
      fault.ClaimEarlier(kMs);
    }
    EndThread();
  }).join();
  const nlohmann::json t = Record(101);
  EXPECT_GE(t["time_ns"]["data_protocol"].get<uint64_t>(), uint64_t(kMs));
  EXPECT_GE(t["time_ns"]["compute"].get<uint64_t>(), uint64_t(kMs));
  EXPECT_LE(Sum(t["time_ns"]), t["elapsed_ns"].get<uint64_t>() + 1000);
}

// ... but never across a phase's beginning: a phase that began just before
// a fault must not see its compute go below zero (it wrapped to 1.8e13 ms
// in a stats_loop report).
TEST(ThreadStatsTest, ClaimEarlierStopsAtThePhaseBoundary) {
  Enable();
  std::thread([] {
    RegisterThread(ThreadKind::kApp, 0, 102);
    BusyFor(2 * kMs);  // compute before the phase
    PhaseBegin("p");
    BusyFor(kMs / 10);
    {
      Scope fault(Category::kDataProtocol);
      fault.ClaimEarlier(kMs);  // more than the phase has computed
      BusyFor(kMs / 10);
    }
    PhaseEnd("p");
    EndThread();
  }).join();
  const nlohmann::json t = Record(102);
  ASSERT_EQ(t["phases"].size(), 1u);
  const nlohmann::json& p = t["phases"][0]["time_ns"];
  const uint64_t phase_total = Sum(p);
  EXPECT_LE(p["compute"].get<uint64_t>(), phase_total);
  EXPECT_GE(phase_total, uint64_t(kMs / 5));
  EXPECT_LE(phase_total, t["elapsed_ns"].get<uint64_t>());
  // The whole thread kept its compute before the phase.
  EXPECT_GE(t["time_ns"]["compute"].get<uint64_t>(), uint64_t(2 * kMs));
  EXPECT_EQ(t["time_ns"]["data_protocol"], p["data_protocol"]);
}

}  // namespace
}  // namespace svm::rt::stats
