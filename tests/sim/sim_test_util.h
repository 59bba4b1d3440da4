// Helpers shared by the simulator's tests (header only: not part of svm_sim).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/sim/sim_case.h"

namespace svm::sim {

// SVM_SIM_SCALE multiplies the number of cases a test runs (default 1; the
// sanitizer build uses e.g. 0.05). Never below 1 case.
inline double SimScale() {
  const char* s = std::getenv("SVM_SIM_SCALE");
  if (s == nullptr) return 1.0;
  const double v = std::strtod(s, nullptr);
  return v > 0 ? v : 1.0;
}

inline uint64_t Scaled(uint64_t cases) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(cases * SimScale())));
}

inline CaseConfig Config(uint32_t nodes, uint32_t threads, uint64_t pages, uint64_t seed,
                         HomePolicy home = HomePolicy::kCyclic) {
  CaseConfig c;
  c.nodes = nodes;
  c.threads = threads;
  c.pages = pages;
  c.seed = seed;
  c.home_policy = home;
  return c;
}

}  // namespace svm::sim
