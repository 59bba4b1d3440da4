// What the wire fuzzer (wire_fuzz.cc) and its seed writer (wire_seeds.cc)
// agree on: the epoch inputs are decoded under and the node counts tried.
#pragma once

#include <array>
#include <cstdint>

namespace svm::wire {

inline constexpr uint32_t kFuzzEpoch = 1;
inline constexpr std::array<uint32_t, 3> kFuzzNodeCounts = {1, 3, 8};

}  // namespace svm::wire
