// AVX-512BW run finder: one compare-to-mask per 64-byte block, and a masked
// load for a tail shorter than a block. Compiled with a target attribute, not
// global flags, and called only when Supported(Impl::kAvx512).
#include <immintrin.h>

#include <cassert>

#include "protocol/diff_simd.h"

#define SVM_AVX512 __attribute__((target("avx512f,avx512bw")))

namespace svm::diff::internal {
namespace {

// Bit i set when byte i of the 64-byte block differs.
SVM_AVX512 inline uint64_t DiffMask(const uint8_t* page, const uint8_t* twin) {
  return _mm512_cmpneq_epu8_mask(_mm512_loadu_si512(page), _mm512_loadu_si512(twin));
}

}  // namespace

SVM_AVX512 void FindRunsAvx512(const uint8_t* page, const uint8_t* twin, size_t n,
                               std::vector<Run>* runs) {
  assert(n <= UINT32_MAX);
  static_assert(kGroupBytes == 4 * kBlockBytes);
  RunCursor cursor(runs);
  size_t i = 0;
  // Fast path: a group where nothing starts or ends (all equal outside a run,
  // or all different inside one) costs one test of its four masks.
  for (; i + kGroupBytes <= n; i += kGroupBytes) {
    const uint64_t m0 = DiffMask(page + i, twin + i);
    const uint64_t m1 = DiffMask(page + i + 64, twin + i + 64);
    const uint64_t m2 = DiffMask(page + i + 128, twin + i + 128);
    const uint64_t m3 = DiffMask(page + i + 192, twin + i + 192);
    if (cursor.open() ? (m0 & m1 & m2 & m3) == ~uint64_t{0} : (m0 | m1 | m2 | m3) == 0) continue;
    cursor.Block(m0, static_cast<uint32_t>(i));
    cursor.Block(m1, static_cast<uint32_t>(i + 64));
    cursor.Block(m2, static_cast<uint32_t>(i + 128));
    cursor.Block(m3, static_cast<uint32_t>(i + 192));
  }
  for (; i + kBlockBytes <= n; i += kBlockBytes) {
    cursor.Block(DiffMask(page + i, twin + i), static_cast<uint32_t>(i));
  }
  if (i < n) {
    // Masked-off bytes are not read (no fault past the page) and compare
    // equal, so their bits are 0 as Block requires.
    const __mmask64 tail = (uint64_t{1} << (n - i)) - 1;
    cursor.Block(_mm512_cmpneq_epu8_mask(_mm512_maskz_loadu_epi8(tail, page + i),
                                         _mm512_maskz_loadu_epi8(tail, twin + i)),
                 static_cast<uint32_t>(i));
  }
  cursor.Finish(static_cast<uint32_t>(n));
}

__attribute__((target("avx512f,avx512bw,popcnt"))) MaskCounts BlockMasksAvx512(const uint8_t* page,
                                                                               const uint8_t* twin, size_t n,
                                                                               uint64_t* masks) {
  MaskCounts counts;
  for (size_t k = 0; k < n / kBlockBytes; ++k)
    counts.Block(masks[k] = DiffMask(page + k * kBlockBytes, twin + k * kBlockBytes), k);
  return counts;
}

}  // namespace svm::diff::internal
