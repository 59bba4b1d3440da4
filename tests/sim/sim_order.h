// OrderChecker: the synchronisation order of a simulated execution, checked.
//
// Tracks happens-before among the simulated threads with vector clocks built
// from what the protocol actually did: a release orders the releaser before
// the next acquirer of the lock; a barrier orders every arrival before every
// departure. From that it checks
//  1. mutual exclusion: a lock is granted only when no simulated thread holds
//     it;
//  2. barriers: a thread passes a barrier episode only after all `total`
//     participants arrived at it (an arrival joins the barrier's episode
//     still filling: a thread may sit episodes out);
//  3. data-race freedom of the program as executed: every access to a
//     variable is ordered after the previous conflicting accesses. A race is
//     a fault of the program (generator or scenario), not of the protocol,
//     and makes the value check meaningless.
// Signal/Await create no edge. Each method returns an empty string when all is
// well, else what went wrong. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "protocol/types.h"

namespace svm::sim {

class OrderChecker {
 public:
  OrderChecker(uint32_t threads_per_node, uint32_t total_threads, size_t vars);

  std::string Acquired(uint32_t g, LockId l);
  std::string Released(uint32_t g, LockId l);
  // Thread g reaches barrier b of `total` threads: it joins b's episode that
  // is still filling (a thread need not take part in every episode).
  void BarrierArrived(uint32_t g, BarrierId b, uint32_t total);
  std::string BarrierPassed(uint32_t g, BarrierId b, uint32_t total);
  std::string Accessed(uint32_t g, uint32_t var, bool write);

 private:
  using Clock = std::vector<uint32_t>;
  struct Episode {
    Clock clock;
    uint32_t arrived = 0;
  };
  struct VarState {
    uint32_t writer = UINT32_MAX;  // thread of the last write
    uint32_t write_time = 0;       // its clock entry at that write
    Clock reads;                   // per thread: clock entry at its last read since
  };
  static void Join(Clock& into, const Clock& from);
  std::string Name(uint32_t g) const;

  uint32_t per_node_;
  uint32_t threads_;
  std::vector<Clock> clock_;  // by thread
  std::map<LockId, Clock> lock_clock_;
  std::map<LockId, uint32_t> holder_;
  std::map<std::pair<BarrierId, uint64_t>, Episode> episodes_;
  std::map<BarrierId, uint64_t> filling_;               // by barrier: the episode arrivals join
  std::vector<std::map<BarrierId, uint64_t>> joined_;  // by thread: the episode it waits in
  std::vector<VarState> vars_;
};

}  // namespace svm::sim
