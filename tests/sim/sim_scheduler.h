// Scheduler: the seeded choice of what happens next in a simulated job.
//
// At each step it picks uniformly among the runnable simulated threads, the
// non-empty, non-delayed network pairs and the nodes worth polling (modes
// dw..nil), so thread steps, deliveries and polls interleave at random; a
// delayed pair is picked only when nothing else can happen. The runnable set is a vector kept in a deterministic order
// (it depends only on the sequence of SetRunnable/ClearRunnable calls), and
// the only randomness is one std::mt19937_64: the same seed and the same
// calls give the same choices. Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tests/sim/sim_network.h"

namespace svm::sim {

class Scheduler {
 public:
  Scheduler(uint64_t seed, uint32_t threads);

  void SetRunnable(uint32_t g);    // no-op if already runnable
  void ClearRunnable(uint32_t g);  // no-op if not runnable
  bool runnable(uint32_t g) const { return slot_[g] != kNoSlot; }
  size_t runnable_count() const { return runnable_.size(); }

  struct Choice {
    enum class Kind : uint8_t { kThread, kDeliver, kPoll, kNothing };
    Kind kind = Kind::kNothing;
    uint32_t thread = 0;  // kThread
    Pair pair;            // kDeliver
    NodeId node = 0;      // kPoll
  };
  // kNothing: no thread is runnable, no event is in flight and no node is
  // worth polling.
  Choice Next(const SimNetwork& network, std::span<const NodeId> polls = {});

 private:
  static constexpr size_t kNoSlot = SIZE_MAX;

  std::mt19937_64 rng_;
  std::vector<uint32_t> runnable_;
  std::vector<size_t> slot_;  // by thread: position in runnable_
};

}  // namespace svm::sim
