#include "libsvm/alloc/layout.h"

#include <algorithm>
#include <bit>

#include "libsvm/alloc/os.h"

namespace svm::alloc {

namespace {
constexpr size_t kMaxChunk = size_t(64) << 20;
constexpr size_t kMinChunk = 64 * kPage;
}  // namespace

const char* Layout::Compute(uintptr_t base, size_t size, uint32_t nodes, Layout* out) {
  if (nodes == 0) return "zero nodes";
  if (base == 0 || base % kPage != 0) return "region base not page-aligned";
  size = AlignDown(size, kPage);
  if (base + size < base) return "region wraps the address space";
  Layout l;
  l.base = base;
  l.end = base + size;
  l.nodes = nodes;
  // The small areas take at most a quarter of the region; each class gets a
  // power-of-two sub-area so that address -> class is one shift.
  const uint64_t per_class = size / nodes / 4 / kNumClasses;
  if (per_class < kMaxSmall) return "region too small (need >= 11.5 MiB per node)";
  l.class_shift = uint32_t(std::bit_width(per_class) - 1);
  if (l.class_shift > 32) l.class_shift = 32;
  l.small_size = size_t(kNumClasses) << l.class_shift;
  l.large_base = base + size_t(nodes) * l.small_size;
  // Small enough that every node can hold a few chunks of a small region.
  l.chunk = std::clamp(AlignDown(l.LargeSize() / (8 * size_t(nodes)), kPage), kMinChunk, kMaxChunk);
  *out = l;
  return nullptr;
}

}  // namespace svm::alloc
