#include "tests/sim/sim_scheduler.h"

namespace svm::sim {

Scheduler::Scheduler(uint64_t seed, uint32_t threads) : rng_(seed), slot_(threads, kNoSlot) {}

void Scheduler::SetRunnable(uint32_t g) {
  if (slot_[g] != kNoSlot) return;
  slot_[g] = runnable_.size();
  runnable_.push_back(g);
}

void Scheduler::ClearRunnable(uint32_t g) {
  const size_t pos = slot_[g];
  if (pos == kNoSlot) return;
  runnable_[pos] = runnable_.back();
  slot_[runnable_[pos]] = pos;
  runnable_.pop_back();
  slot_[g] = kNoSlot;
}

Scheduler::Choice Scheduler::Next(const SimNetwork& network, std::span<const NodeId> polls) {
  Choice c;
  const size_t r = runnable_.size();
  const size_t m = network.ready_count();
  if (r + m + polls.size() > 0) {
    const size_t pick = rng_() % (r + m + polls.size());
    if (pick < r) {
      c.kind = Choice::Kind::kThread;
      c.thread = runnable_[pick];
    } else if (pick < r + m) {
      c.kind = Choice::Kind::kDeliver;
      c.pair = network.ready(pick - r);
    } else {
      c.kind = Choice::Kind::kPoll;
      c.node = polls[pick - r - m];
    }
  } else if (network.delayed_count() > 0) {
    c.kind = Choice::Kind::kDeliver;
    c.pair = network.delayed(rng_() % network.delayed_count());
  }
  return c;
}

}  // namespace svm::sim
