// Twins and byte-exact diffs.
//
// A diff lists the runs of bytes in which a page differs from its twin. A run
// is a maximal stretch of differing bytes: never an unchanged byte, because a
// neighbouring byte may belong to another node's writes (two nodes may write
// neighbouring bytes of one word between synchronizations).
//
// Encoded form (little-endian), a sequence of runs, each:
//   u32 offset | u32 length | length bytes
// Offsets strictly increase; runs neither overlap nor touch; length >= 1;
// offset + length <= page size. The empty sequence means "no change".
//
// Or, for scattered writes (radix's keys: ~3 bytes a run, 8 of header), one
// masked block alone (Form::kSmallest, where it is the smaller):
//   u32 offset | u32 (kMasked | length) | length / 8 bytes of mask | length bytes
// offset and length multiples of 64, length >= 64, offset + length <= page
// size, the block's first and last 64-bit mask words not zero. Bit i of mask
// byte j says byte 8j + i of the block changed; the block's other bytes are
// carried but never applied, so neighbouring writers still merge.
//
// Several implementations find runs (scalar reference, AVX2, AVX-512); all
// produce byte-identical output. Best() picks one at run time from what the
// CPU supports. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "util/status.h"

namespace svm::diff {

enum class Impl : uint8_t { kScalar, kAvx2, kAvx512 };
const char* ToString(Impl impl);
bool Supported(Impl impl);
Impl Best();

struct Run {
  uint32_t offset;
  uint32_t length;
  friend bool operator==(const Run&, const Run&) = default;
};

inline constexpr size_t kRunHeaderBytes = 8;
inline constexpr uint32_t kMasked = uint32_t{1} << 31;  // in a header's length
inline constexpr size_t kMaskedGrain = 64;               // bytes a mask word covers

// What Encode may write: runs only (what a NIC's WRITE_RUNS stores), or the
// smaller of the runs and a masked block.
enum class Form : uint8_t { kRuns, kSmallest };

// Appends to *runs the runs in which page differs from twin.
// REQUIRES: page.size() == twin.size(); Supported(impl).
void FindRuns(std::span<const uint8_t> page, std::span<const uint8_t> twin,
              std::vector<Run>* runs, Impl impl = Best());

// Encoded size of the given runs.
size_t EncodedSize(std::span<const Run> runs);

// Appends the encoding of runs, with their bytes taken from page, to *out.
void EncodeRuns(std::span<const uint8_t> page, std::span<const Run> runs,
                std::vector<uint8_t>* out);

struct EncodeResult {
  size_t runs = 0;   // number of runs
  size_t bytes = 0;  // changed bytes (payload, not counting headers)
  bool masked = false;  // written as a masked block
};

// FindRuns + EncodeRuns, or (Form::kSmallest) a masked block where that is
// smaller and the page a whole number of 64-byte blocks. Appends to *out.
EncodeResult Encode(std::span<const uint8_t> page, std::span<const uint8_t> twin,
                    std::vector<uint8_t>* out, Impl impl = Best(), Form form = Form::kRuns);

// Checks that `encoded` is a well-formed diff for a page of page_size bytes.
Status Validate(std::span<const uint8_t> encoded, size_t page_size);

// Writes the runs (or the masked block's changed bytes) of `encoded` into
// page, and no other byte. Validates first: on error, page is untouched.
Status Apply(std::span<const uint8_t> encoded, std::span<uint8_t> page, Impl impl = Best());

}  // namespace svm::diff
