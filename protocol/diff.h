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
};

// FindRuns + EncodeRuns. Appends to *out.
EncodeResult Encode(std::span<const uint8_t> page, std::span<const uint8_t> twin,
                    std::vector<uint8_t>* out, Impl impl = Best());

// Checks that `encoded` is a well-formed diff for a page of page_size bytes.
Status Validate(std::span<const uint8_t> encoded, size_t page_size);

// Writes the runs of `encoded` into page. Validates first: on error, page is
// untouched.
Status Apply(std::span<const uint8_t> encoded, std::span<uint8_t> page);

}  // namespace svm::diff
