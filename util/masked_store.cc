#include "util/masked_store.h"

#include <immintrin.h>

#include <cstring>

namespace svm::util {

namespace {
uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int b = 7; b >= 0; --b) v = v << 8 | p[b];
  return v;
}
}  // namespace

bool HasAvx512Bw() {
  // __builtin_cpu_supports also checks that the OS saves the vector state.
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return has;
}

void StoreMaskedScalar(uint8_t* to, const uint8_t* masks, const uint8_t* from, size_t blocks) {
  for (size_t k = 0; k < blocks; ++k) {
    for (uint64_t m = LoadLE64(masks + 8 * k); m != 0; m &= m - 1) {
      const size_t i = k * 64 + size_t(__builtin_ctzll(m));
      to[i] = from[i];
    }
  }
}

// A masked store writes only the bytes its mask selects (architecturally no
// read-modify-write of the others), as a run's copy does.
__attribute__((target("avx512f,avx512bw"))) void StoreMaskedAvx512(uint8_t* to, const uint8_t* masks,
                                                                   const uint8_t* from, size_t blocks) {
  for (size_t k = 0; k < blocks; ++k) {
    uint64_t m;  // little-endian, as x86 loads it
    std::memcpy(&m, masks + 8 * k, sizeof m);
    _mm512_mask_storeu_epi8(to + k * 64, m, _mm512_loadu_si512(from + k * 64));
  }
}

void StoreMasked(uint8_t* to, const uint8_t* masks, const uint8_t* from, size_t blocks) {
  if (HasAvx512Bw()) {
    StoreMaskedAvx512(to, masks, from, blocks);
  } else {
    StoreMaskedScalar(to, masks, from, blocks);
  }
}

}  // namespace svm::util
