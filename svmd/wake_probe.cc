#include "svmd/wake_probe.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace svm::svmd {
namespace {

using Clock = std::chrono::steady_clock;

// The turn counter: the pinger makes it odd, the ponger even again.
struct Table {
  std::atomic<uint32_t> turn{0};
  std::atomic<bool> stop{false};
  Clock::time_point deadline;
};

void Wake(std::atomic<uint32_t>* w) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Sleeps until t->turn == want; false when the probe is out of time. The
// futex waits are bounded so that a lost peer cannot hang the launcher.
bool AwaitTurn(Table* t, uint32_t want) {
  const timespec slice = {0, 5'000'000};
  for (uint32_t seen; (seen = t->turn.load(std::memory_order_acquire)) != want;) {
    if (t->stop.load(std::memory_order_relaxed) || Clock::now() > t->deadline) {
      t->stop.store(true, std::memory_order_relaxed);
      return false;
    }
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&t->turn), FUTEX_WAIT_PRIVATE, seen, &slice, nullptr, 0);
  }
  return true;
}

void Bind(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

}  // namespace

uint64_t MeasureWakeUpNs(const cpu_set_t& cpus, int rounds, uint64_t budget_ns) {
  int pair[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &cpus)) pair[found++] = c;
  if (found < 2 || rounds <= 0) return 0;

  constexpr int kWarmUp = 3;  // the first turns include the threads' start
  constexpr auto kSettle = std::chrono::microseconds(100);
  Table t;
  t.deadline = Clock::now() + std::chrono::nanoseconds(budget_ns);
  const uint32_t turns = uint32_t(kWarmUp + rounds);
  std::vector<uint64_t> one_way;
  one_way.reserve(turns);

  std::thread ponger([&] {
    Bind(pair[1]);
    for (uint32_t k = 0; k < turns; ++k) {
      if (!AwaitTurn(&t, 2 * k + 1)) return;
      t.turn.store(2 * k + 2, std::memory_order_release);
      Wake(&t.turn);
    }
  });
  std::thread pinger([&] {
    Bind(pair[0]);
    for (uint32_t k = 0; k < turns; ++k) {
      // Time for the ponger to fall asleep: a turn it finds without
      // sleeping would measure a store, not a wake-up.
      std::this_thread::sleep_for(kSettle);
      const Clock::time_point start = Clock::now();
      t.turn.store(2 * k + 1, std::memory_order_release);
      Wake(&t.turn);
      if (!AwaitTurn(&t, 2 * k + 2)) return;
      const auto round_trip = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
      if (k >= kWarmUp) one_way.push_back(uint64_t(round_trip.count()) / 2);
    }
  });
  pinger.join();
  ponger.join();
  if (t.stop.load() || one_way.empty()) return 0;
  std::nth_element(one_way.begin(), one_way.begin() + one_way.size() / 2, one_way.end());
  return std::max<uint64_t>(1, one_way[one_way.size() / 2]);
}

}  // namespace svm::svmd
