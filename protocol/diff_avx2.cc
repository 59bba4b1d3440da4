// AVX2 run finder: 64-byte blocks as two 32-byte compares turned into a mask.
// Compiled with a target attribute, not global flags, and called only when
// Supported(Impl::kAvx2).
#include <immintrin.h>

#include <cassert>

#include "protocol/diff_simd.h"

#define SVM_AVX2 __attribute__((target("avx2")))

namespace svm::diff::internal {
namespace {

SVM_AVX2 inline __m256i Load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

SVM_AVX2 inline __m256i Eq(const uint8_t* page, const uint8_t* twin, size_t at) {
  return _mm256_cmpeq_epi8(Load(page + at), Load(twin + at));
}

// Whether a group of kGroupBytes is all equal; one test, no masks.
SVM_AVX2 inline bool AllEqual(const uint8_t* page, const uint8_t* twin) {
  __m256i x = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (size_t at = 0; at < kGroupBytes; at += 32) {
    x = _mm256_or_si256(x, _mm256_xor_si256(Load(page + at), Load(twin + at)));
  }
  return _mm256_testz_si256(x, x);
}

// Whether every byte of a group of kGroupBytes differs.
SVM_AVX2 inline bool AllDiffer(const uint8_t* page, const uint8_t* twin) {
  __m256i eq = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (size_t at = 0; at < kGroupBytes; at += 32) eq = _mm256_or_si256(eq, Eq(page, twin, at));
  return _mm256_testz_si256(eq, eq);
}

// Bit i set when byte i of the 64-byte block differs.
SVM_AVX2 inline uint64_t DiffMask(const uint8_t* page, const uint8_t* twin) {
  const uint32_t eq0 = static_cast<uint32_t>(_mm256_movemask_epi8(Eq(page, twin, 0)));
  const uint32_t eq1 = static_cast<uint32_t>(_mm256_movemask_epi8(Eq(page, twin, 32)));
  return ~(uint64_t{eq1} << 32 | eq0);
}

}  // namespace

SVM_AVX2 void FindRunsAvx2(const uint8_t* page, const uint8_t* twin, size_t n,
                           std::vector<Run>* runs) {
  assert(n <= UINT32_MAX);
  RunCursor cursor(runs);
  size_t i = 0;
  // Fast path: a group where nothing starts or ends (all equal outside a run,
  // or all different inside one) costs one test.
  for (; i + kGroupBytes <= n; i += kGroupBytes) {
    if (cursor.open() ? AllDiffer(page + i, twin + i) : AllEqual(page + i, twin + i)) continue;
    for (size_t b = i; b < i + kGroupBytes; b += kBlockBytes) {
      cursor.Block(DiffMask(page + b, twin + b), static_cast<uint32_t>(b));
    }
  }
  for (; i + kBlockBytes <= n; i += kBlockBytes) {
    cursor.Block(DiffMask(page + i, twin + i), static_cast<uint32_t>(i));
  }
  if (i < n) {
    cursor.Block(ScalarMask(page + i, twin + i, n - i), static_cast<uint32_t>(i));
  }
  cursor.Finish(static_cast<uint32_t>(n));
}

__attribute__((target("avx2,popcnt"))) MaskCounts BlockMasksAvx2(const uint8_t* page, const uint8_t* twin,
                                                                   size_t n, uint64_t* masks) {
  MaskCounts counts;
  for (size_t k = 0; k < n / kBlockBytes; ++k)
    counts.Block(masks[k] = DiffMask(page + k * kBlockBytes, twin + k * kBlockBytes), k);
  return counts;
}

}  // namespace svm::diff::internal
