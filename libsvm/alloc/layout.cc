#include "libsvm/alloc/layout.h"

#include <bit>

#include "libsvm/alloc/os.h"

namespace svm::alloc {

const char* Layout::Compute(uintptr_t base, size_t size, uint32_t nodes, Layout* out) {
  if (nodes == 0) return "zero nodes";
  if (base == 0 || base % kPage != 0) return "region base not page-aligned";
  if (base + size < base) return "region wraps the address space";
  Layout l;
  l.base = base;
  l.size = size;
  l.nodes = nodes;
  l.slice_size = AlignDown(size / nodes, kPage);
  // The small area takes at most a quarter of the slice; each class gets a
  // power-of-two sub-area so that address -> class is one shift.
  const uint64_t per_class = l.slice_size / 4 / kNumClasses;
  if (per_class < kMaxSmall) return "slice too small (need >= 11.5 MiB per node)";
  l.class_shift = uint32_t(std::bit_width(per_class) - 1);
  if (l.class_shift > 32) l.class_shift = 32;
  l.small_size = size_t(kNumClasses) << l.class_shift;
  *out = l;
  return nullptr;
}

}  // namespace svm::alloc
