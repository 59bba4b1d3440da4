// Private to protocol/diff*.cc: the per-implementation run finders and the
// mask-to-runs step they share.
//
// A finder looks at the page in 64-byte blocks and turns each into a mask
// with bit i set when byte i differs. RunCursor turns the masks, fed in page
// order, into runs, carrying a run that is still open across block edges.
// Not thread-safe (a cursor belongs to one call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/diff.h"

namespace svm::diff::internal {

inline constexpr size_t kBlockBytes = 64;
static_assert(kBlockBytes == kMaskedGrain);  // a block's mask is a masked block's mask word
// The SIMD finders first test a group of blocks at once: in most groups no
// run starts or ends, and one test settles them.
inline constexpr size_t kGroupBytes = 4 * kBlockBytes;

class RunCursor {
 public:
  explicit RunCursor(std::vector<Run>* runs) : runs_(runs) {}

  // True while the last byte fed differed (a run is open).
  bool open() const { return open_ != 0; }

  // Feeds the mask of the block starting at `base`. Bits past the end of the
  // page must be 0 (they read as "equal" and close an open run there).
  void Block(uint64_t diff, uint32_t base) {
    // A set bit of `edges` is where a run starts or ends.
    const uint64_t edges = diff ^ ((diff << 1) | open_);
    if (edges != 0) Edges(diff, edges, base);  // else nothing starts or ends here
    open_ = diff >> 63;
  }

  // Closes a run still open at the end of the page.
  void Finish(uint32_t end);

 private:
  // Out of line (diff.cc), so Block stays small enough to inline into the
  // SIMD loops, and compiled for the baseline ISA.
  void Edges(uint64_t diff, uint64_t edges, uint32_t base);

  std::vector<Run>* runs_;
  uint32_t start_ = 0;
  uint64_t open_ = 0;  // 0 or 1, so it can be or-ed into a shifted mask
};

// Mask of the first n bytes (n <= 64), one byte at a time; for page tails.
inline uint64_t ScalarMask(const uint8_t* page, const uint8_t* twin, size_t n) {
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) m |= uint64_t{page[i] != twin[i]} << i;
  return m;
}

// What a page's block masks say: its runs, changed bytes, and the first
// and last blocks with a change (first > last when none).
struct MaskCounts {
  size_t runs = 0;
  size_t bytes = 0;
  size_t first = SIZE_MAX;
  size_t last = 0;
  uint64_t open = 0;  // the last block fed ends inside a run

  // Inlined into the SIMD callers, whose targets include POPCNT (the
  // baseline's popcount is a dozen instructions).
  void Block(uint64_t m, size_t k) {
    runs += size_t(__builtin_popcountll(m & ~((m << 1) | open)));
    bytes += size_t(__builtin_popcountll(m));
    open = m >> 63;
    if (m != 0) {
      if (first == SIZE_MAX) first = k;
      last = k;
    }
  }
};

// Each writes masks[k] = the mask of block k of page[0, n) against twin and
// counts them. REQUIRES: n % kBlockBytes == 0. The SIMD ones: the CPU
// supports their ISA.
MaskCounts BlockMasksScalar(const uint8_t* page, const uint8_t* twin, size_t n, uint64_t* masks);
MaskCounts BlockMasksAvx2(const uint8_t* page, const uint8_t* twin, size_t n, uint64_t* masks);
MaskCounts BlockMasksAvx512(const uint8_t* page, const uint8_t* twin, size_t n, uint64_t* masks);

// Each appends to *runs the runs in which page[0, n) differs from twin[0, n).
// REQUIRES: n <= UINT32_MAX. The SIMD ones: the CPU supports their ISA.
void FindRunsScalar(const uint8_t* page, const uint8_t* twin, size_t n,
                    std::vector<Run>* runs);
void FindRunsAvx2(const uint8_t* page, const uint8_t* twin, size_t n,
                  std::vector<Run>* runs);
void FindRunsAvx512(const uint8_t* page, const uint8_t* twin, size_t n,
                    std::vector<Run>* runs);

}  // namespace svm::diff::internal
