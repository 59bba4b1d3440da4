// Size classes of the small-block allocator.
//
// 44 classes: 16..128 bytes in steps of 16, then four classes per doubling
// (2^b * 5/4, 6/4, 7/4, 8/4) up to 64 KiB. Every class size is a multiple of
// 16, and the size of class c is a multiple of 2^k whenever it is at least
// 4 * 2^k, so a block at offset i * size inside an aligned sub-area is
// aligned to the largest power of two dividing size (AlignedAlloc relies on
// this). Pure constexpr arithmetic; no state.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace svm::alloc {

inline constexpr size_t kMinAlign = 16;
inline constexpr size_t kMaxSmall = 64 * 1024;  // larger requests are page-granular
inline constexpr uint32_t kNumClasses = 44;

// REQUIRES: size <= kMaxSmall. Size 0 maps to class 0.
constexpr uint32_t SizeToClass(size_t size) {
  if (size <= 128) return size == 0 ? 0 : uint32_t((size - 1) >> 4);
  const uint32_t b = 63 - uint32_t(std::countl_zero(uint64_t(size - 1)));  // 2^b < size <= 2^(b+1)
  return 8 + (b - 7) * 4 + uint32_t(((size - 1) - (size_t(1) << b)) >> (b - 2));
}

constexpr size_t ClassSize(uint32_t c) {
  if (c < 8) return size_t(c + 1) * 16;
  const uint32_t b = 7 + (c - 8) / 4;
  return (size_t(1) << b) + size_t((c - 8) % 4 + 1) * (size_t(1) << (b - 2));
}

static_assert(ClassSize(0) == 16 && ClassSize(7) == 128 && ClassSize(8) == 160);
static_assert(ClassSize(kNumClasses - 1) == kMaxSmall);
static_assert(SizeToClass(kMaxSmall) == kNumClasses - 1);
static_assert(SizeToClass(129) == 8 && SizeToClass(256) == 11 && SizeToClass(257) == 12);

}  // namespace svm::alloc
