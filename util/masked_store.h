// Stores only the bytes a mask selects: the step that applies a masked block
// (protocol/diff.h), at a home's handler or at the NIC that stores a direct
// diff (nic_ext/runs.h). Thread-safe: no state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace svm::util {

// Stores the bytes of from[0, 64 * blocks) whose bits are set in `masks`
// (a little-endian u64 for each 64-byte block: bit i, byte i) at `to`, and
// no other byte: a neighbouring byte another thread writes meanwhile keeps
// its value. AVX-512 masked stores where the CPU has them, else a store a
// byte.
void StoreMasked(uint8_t* to, const uint8_t* masks, const uint8_t* from, size_t blocks);

// The two ways, for tests and benchmarks. REQUIRES (Avx512): HasAvx512Bw().
void StoreMaskedScalar(uint8_t* to, const uint8_t* masks, const uint8_t* from, size_t blocks);
void StoreMaskedAvx512(uint8_t* to, const uint8_t* masks, const uint8_t* from, size_t blocks);
bool HasAvx512Bw();

}  // namespace svm::util
