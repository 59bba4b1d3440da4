#include "tests/sim/sim_order.h"

#include <algorithm>

namespace svm::sim {

OrderChecker::OrderChecker(uint32_t threads_per_node, uint32_t total_threads, size_t vars)
    : per_node_(threads_per_node),
      threads_(total_threads),
      clock_(total_threads, Clock(total_threads, 0)),
      joined_(total_threads),
      vars_(vars) {
  for (uint32_t g = 0; g < threads_; ++g) clock_[g][g] = 1;
  for (auto& v : vars_) v.reads.assign(threads_, 0);
}

void OrderChecker::Join(Clock& into, const Clock& from) {
  for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}

std::string OrderChecker::Name(uint32_t g) const {
  return "n" + std::to_string(g / per_node_) + ".t" + std::to_string(g % per_node_);
}

std::string OrderChecker::Acquired(uint32_t g, LockId l) {
  auto [it, fresh] = holder_.emplace(l, g);
  if (!fresh) {
    return "mutual exclusion violated: lock " + std::to_string(l) + " granted to " + Name(g) +
           " while " + Name(it->second) + " holds it";
  }
  auto lc = lock_clock_.find(l);
  if (lc != lock_clock_.end()) Join(clock_[g], lc->second);
  return {};
}

std::string OrderChecker::Released(uint32_t g, LockId l) {
  auto it = holder_.find(l);
  if (it == holder_.end() || it->second != g) {
    return "lock " + std::to_string(l) + " released by " + Name(g) + ", which does not hold it";
  }
  holder_.erase(it);
  lock_clock_[l] = clock_[g];
  ++clock_[g][g];
  return {};
}

void OrderChecker::BarrierArrived(uint32_t g, BarrierId b, uint32_t total) {
  uint64_t& filling = filling_[b];
  joined_[g][b] = filling;
  Episode& e = episodes_[{b, filling}];
  if (e.clock.empty()) e.clock.assign(threads_, 0);
  Join(e.clock, clock_[g]);
  if (++e.arrived == total) ++filling;
  ++clock_[g][g];
}

std::string OrderChecker::BarrierPassed(uint32_t g, BarrierId b, uint32_t total) {
  const uint64_t episode = joined_[g].at(b);
  const Episode& e = episodes_[{b, episode}];
  if (e.arrived != total) {
    return "barrier " + std::to_string(b) + " episode " + std::to_string(episode) + " let " +
           Name(g) + " pass after " + std::to_string(e.arrived) + " of " + std::to_string(total) +
           " arrivals";
  }
  Join(clock_[g], e.clock);
  return {};
}

std::string OrderChecker::Accessed(uint32_t g, uint32_t var, bool write) {
  VarState& v = vars_[var];
  const Clock& c = clock_[g];
  if (v.writer != UINT32_MAX && v.writer != g && c[v.writer] < v.write_time) {
    return std::string("data race in the program: ") + (write ? "write" : "read") +
           " of variable " + std::to_string(var) + " by " + Name(g) +
           " is not ordered after the write by " + Name(v.writer);
  }
  if (!write) {
    v.reads[g] = c[g];
    return {};
  }
  for (uint32_t h = 0; h < threads_; ++h) {
    if (h != g && v.reads[h] != 0 && c[h] < v.reads[h]) {
      return "data race in the program: write of variable " + std::to_string(var) + " by " +
             Name(g) + " is not ordered after the read by " + Name(h);
    }
  }
  v.writer = g;
  v.write_time = c[g];
  std::fill(v.reads.begin(), v.reads.end(), 0);
  return {};
}

}  // namespace svm::sim
