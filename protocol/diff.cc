// Scalar reference implementation, the encoding, validation and dispatch.
// The AVX2 / AVX-512 run finders live in diff_avx2.cc / diff_avx512.cc.
#include "protocol/diff.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "protocol/diff_simd.h"
#include "util/masked_store.h"

namespace svm::diff {
namespace {

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// True if some byte of v is zero (exact as a yes/no answer).
bool HasZeroByte(uint64_t v) {
  return ((v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull) != 0;
}

uint32_t LoadLE32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

uint64_t LoadLE64(const uint8_t* p) {
  return uint64_t{LoadLE32(p)} | uint64_t{LoadLE32(p + 4)} << 32;
}

void StoreLE32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

// push_back, but growing to kFirstRuns at once: a page with one run usually
// has several, and Encode starts from an empty vector each time.
constexpr size_t kFirstRuns = 32;
void Append(std::vector<Run>* runs, Run run) {
  if (runs->size() == runs->capacity()) {
    runs->reserve(std::max(kFirstRuns, 2 * runs->capacity()));
  }
  runs->push_back(run);
}

void StoreHeader(uint8_t* p, const Run& r) {
  StoreLE32(p, r.offset);
  StoreLE32(p + 4, r.length);
}

// Copies n <= kShortCopy bytes with at most two fixed-size moves each way,
// writing exactly [to, to + n): Apply may not touch bytes outside a run.
constexpr size_t kShortCopy = 16;
void CopyShort(uint8_t* to, const uint8_t* from, size_t n) {
  if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, from, 8);
    std::memcpy(&b, from + n - 8, 8);
    std::memcpy(to, &a, 8);
    std::memcpy(to + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, from, 4);
    std::memcpy(&b, from + n - 4, 4);
    std::memcpy(to, &a, 4);
    std::memcpy(to + n - 4, &b, 4);
  } else if (n >= 2) {
    uint16_t a, b;
    std::memcpy(&a, from, 2);
    std::memcpy(&b, from + n - 2, 2);
    std::memcpy(to, &a, 2);
    std::memcpy(to + n - 2, &b, 2);
  } else if (n == 1) {
    *to = *from;
  }
}

// Average run length from which EncodeRuns appends instead of writing in place.
constexpr size_t kLongRun = 256;

uint32_t Ctz(uint64_t x) { return static_cast<uint32_t>(__builtin_ctzll(x)); }

Impl Choose() {
  if (Supported(Impl::kAvx512)) return Impl::kAvx512;
  if (Supported(Impl::kAvx2)) return Impl::kAvx2;
  return Impl::kScalar;
}

Status Bad(size_t at, const char* what) {
  return Status::Malformed("diff: " + std::string(what) + " at byte " + std::to_string(at));
}

}  // namespace

namespace internal {

void RunCursor::Edges(uint64_t diff, uint64_t edges, uint32_t base) {
  // An edge where the byte differs starts a run; one where it is equal ends
  // the run before it. They alternate, so the k-th end closes the k-th start,
  // or, if a run was open on entry, the first end closes that one.
  uint64_t starts = edges & diff;
  uint64_t ends = edges & ~diff;
  // Room for every run this block closes, so the loop below never grows.
  const size_t need = runs_->size() + static_cast<size_t>(__builtin_popcountll(ends));
  if (need > runs_->capacity()) runs_->reserve(std::max({kFirstRuns, need, 2 * runs_->capacity()}));
  if (open_) {
    assert(ends != 0);
    runs_->push_back(Run{start_, base + Ctz(ends) - start_});
    ends &= ends - 1;
  }
  while (ends != 0) {
    const uint32_t start = base + Ctz(starts), end = base + Ctz(ends);
    runs_->push_back(Run{start, end - start});
    starts &= starts - 1;
    ends &= ends - 1;
  }
  if (starts != 0) start_ = base + Ctz(starts);  // left open into the next block
}

void RunCursor::Finish(uint32_t end) {
  if (open_) Append(runs_, Run{start_, end - start_});
  open_ = 0;
}

// The reference: skips equal (or all-different) words 8 bytes at a time and
// settles each edge a byte at a time. Deliberately shares nothing with the
// mask-based finders, so the tests compare two independent derivations.
void FindRunsScalar(const uint8_t* page, const uint8_t* twin, size_t n,
                    std::vector<Run>* runs) {
  size_t i = 0;
  while (i < n) {
    while (i + 8 <= n && Load64(page + i) == Load64(twin + i)) i += 8;
    while (i < n && page[i] == twin[i]) ++i;
    if (i == n) break;
    const size_t start = i;
    while (i + 8 <= n && !HasZeroByte(Load64(page + i) ^ Load64(twin + i))) i += 8;
    while (i < n && page[i] != twin[i]) ++i;
    Append(runs, Run{static_cast<uint32_t>(start), static_cast<uint32_t>(i - start)});
  }
}

MaskCounts BlockMasksScalar(const uint8_t* page, const uint8_t* twin, size_t n, uint64_t* masks) {
  MaskCounts counts;
  for (size_t k = 0; k < n / kBlockBytes; ++k)
    counts.Block(masks[k] = ScalarMask(page + k * kBlockBytes, twin + k * kBlockBytes, kBlockBytes), k);
  return counts;
}

}  // namespace internal

const char* ToString(Impl impl) {
  switch (impl) {
    case Impl::kScalar: return "scalar";
    case Impl::kAvx2: return "avx2";
    case Impl::kAvx512: return "avx512";
  }
  return "unknown";
}

bool Supported(Impl impl) {
  switch (impl) {
    case Impl::kScalar: return true;
    // __builtin_cpu_supports also checks that the OS saves the vector state.
    case Impl::kAvx2: return __builtin_cpu_supports("avx2");
    case Impl::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }
  return false;
}

Impl Best() {
  static const Impl best = Choose();  // thread-safe initialisation
  return best;
}

void FindRuns(std::span<const uint8_t> page, std::span<const uint8_t> twin,
              std::vector<Run>* runs, Impl impl) {
  assert(page.size() == twin.size());
  assert(page.size() <= UINT32_MAX);  // offsets are u32 on the wire
  assert(Supported(impl));
  switch (impl) {
    case Impl::kAvx512:
      return internal::FindRunsAvx512(page.data(), twin.data(), page.size(), runs);
    case Impl::kAvx2:
      return internal::FindRunsAvx2(page.data(), twin.data(), page.size(), runs);
    case Impl::kScalar:
      break;
  }
  internal::FindRunsScalar(page.data(), twin.data(), page.size(), runs);
}

size_t EncodedSize(std::span<const Run> runs) {
  size_t n = 0;
  for (const Run& r : runs) n += kRunHeaderBytes + r.length;
  return n;
}

void EncodeRuns(std::span<const uint8_t> page, std::span<const Run> runs,
                std::vector<uint8_t>* out) {
  size_t payload = 0;
  for (const Run& r : runs) {
    assert(r.length > 0 && size_t{r.offset} + r.length <= page.size());
    payload += r.length;
  }
  if (runs.empty()) return;
  const size_t old = out->size();
  const size_t bytes = runs.size() * kRunHeaderBytes + payload;
  if (payload >= kLongRun * runs.size()) {
    // Long runs: append piece by piece, so no zero-fill pass goes before the copy.
    out->reserve(old + bytes);
    for (const Run& r : runs) {
      uint8_t header[kRunHeaderBytes];
      StoreHeader(header, r);
      out->insert(out->end(), header, header + kRunHeaderBytes);
      out->insert(out->end(), page.data() + r.offset, page.data() + r.offset + r.length);
    }
    return;
  }
  // Short runs: write in place. A run of up to kShortCopy bytes is copied as
  // one fixed-size move when the page has that many bytes there; the excess
  // lands in the slack or under the next header, which overwrites it.
  out->resize(old + bytes + kShortCopy);
  uint8_t* w = out->data() + old;
  for (const Run& r : runs) {
    StoreHeader(w, r);
    const uint8_t* from = page.data() + r.offset;
    if (r.length <= kShortCopy && page.size() - r.offset >= kShortCopy) {
      std::memcpy(w + kRunHeaderBytes, from, kShortCopy);
    } else {
      std::memcpy(w + kRunHeaderBytes, from, r.length);
    }
    w += kRunHeaderBytes + r.length;
  }
  out->resize(old + bytes);
}

namespace {

internal::MaskCounts BlockMasks(std::span<const uint8_t> page, std::span<const uint8_t> twin, uint64_t* masks,
                                Impl impl) {
  switch (impl) {
    case Impl::kAvx512: return internal::BlockMasksAvx512(page.data(), twin.data(), page.size(), masks);
    case Impl::kAvx2: return internal::BlockMasksAvx2(page.data(), twin.data(), page.size(), masks);
    case Impl::kScalar: break;
  }
  return internal::BlockMasksScalar(page.data(), twin.data(), page.size(), masks);
}

// The page's block masks, then whichever of a masked block and the runs
// (found from the same masks) is smaller.
EncodeResult EncodeSmallest(std::span<const uint8_t> page, std::span<const uint8_t> twin,
                            std::vector<uint8_t>* out, Impl impl) {
  constexpr size_t kGrain = kMaskedGrain;
  const size_t blocks = page.size() / kGrain;
  uint64_t on_stack[1024];
  std::vector<uint64_t> on_heap;
  uint64_t* masks = on_stack;
  if (blocks > std::size(on_stack)) {  // pages over 64 KiB
    on_heap.resize(blocks);
    masks = on_heap.data();
  }
  const internal::MaskCounts counts = BlockMasks(page, twin, masks, impl);
  EncodeResult result;
  result.runs = counts.runs;
  result.bytes = counts.bytes;
  if (result.runs == 0) return result;
  const size_t first = counts.first, last = counts.last;
  const size_t span = last - first + 1;
  const size_t masked_bytes = kRunHeaderBytes + span * (sizeof(uint64_t) + kGrain);
  if (masked_bytes < result.runs * kRunHeaderBytes + result.bytes) {
    result.masked = true;
    // The bytes appended, not written over a zero-fill.
    out->reserve(out->size() + masked_bytes);
    const size_t old = out->size();
    out->resize(old + kRunHeaderBytes + span * sizeof(uint64_t));
    uint8_t* w = out->data() + old;
    StoreLE32(w, static_cast<uint32_t>(first * kGrain));
    StoreLE32(w + 4, kMasked | static_cast<uint32_t>(span * kGrain));
    w += kRunHeaderBytes;
    for (size_t k = first; k <= last; ++k, w += sizeof(uint64_t)) {
      for (size_t b = 0; b < sizeof(uint64_t); ++b) w[b] = static_cast<uint8_t>(masks[k] >> (8 * b));
    }
    out->insert(out->end(), page.data() + first * kGrain, page.data() + (last + 1) * kGrain);
    return result;
  }
  std::vector<Run> runs;
  runs.reserve(result.runs);
  internal::RunCursor cursor(&runs);
  for (size_t k = first; k <= last; ++k) cursor.Block(masks[k], static_cast<uint32_t>(k * kGrain));
  cursor.Finish(static_cast<uint32_t>((last + 1) * kGrain));
  EncodeRuns(page, runs, out);
  return result;
}

}  // namespace

EncodeResult Encode(std::span<const uint8_t> page, std::span<const uint8_t> twin,
                    std::vector<uint8_t>* out, Impl impl, Form form) {
  assert(page.size() == twin.size() && Supported(impl));
  // A block covers whole 64-byte blocks of the page; offsets are u32.
  if (form == Form::kSmallest && page.size() % kMaskedGrain == 0 && page.size() < kMasked)
    return EncodeSmallest(page, twin, out, impl);
  std::vector<Run> runs;
  FindRuns(page, twin, &runs, impl);
  EncodeRuns(page, runs, out);
  EncodeResult result;
  result.runs = runs.size();
  for (const Run& r : runs) result.bytes += r.length;
  return result;
}

namespace {

// A masked block, alone in `encoded` (its header read already).
Status ValidateMasked(std::span<const uint8_t> encoded, uint64_t offset, uint64_t length, size_t page_size) {
  constexpr size_t kGrain = kMaskedGrain;
  if (length == 0 || length % kGrain != 0 || offset % kGrain != 0)
    return Bad(0, "masked block not of whole 64-byte blocks");
  if (offset + length > page_size) {
    return Status::OutOfRange("diff: masked block [" + std::to_string(offset) + ", " +
                              std::to_string(offset + length) + ") past page of " +
                              std::to_string(page_size) + " bytes");
  }
  const size_t blocks = length / kGrain;
  if (encoded.size() != kRunHeaderBytes + blocks * (sizeof(uint64_t) + kGrain))
    return Bad(encoded.size(), "masked block of the wrong size (or not alone)");
  const uint8_t* masks = encoded.data() + kRunHeaderBytes;
  if (LoadLE64(masks) == 0 || LoadLE64(masks + (blocks - 1) * sizeof(uint64_t)) == 0)
    return Bad(kRunHeaderBytes, "masked block with an empty first or last block");
  return Status::Ok();
}

}  // namespace

Status Validate(std::span<const uint8_t> encoded, size_t page_size) {
  const size_t size = encoded.size();
  size_t pos = 0;
  bool first = true;
  uint64_t prev_offset = 0, prev_end = 0;
  while (pos < size) {
    if (size - pos < kRunHeaderBytes) return Bad(pos, "truncated run header");
    const uint64_t offset = LoadLE32(encoded.data() + pos);
    const uint64_t length = LoadLE32(encoded.data() + pos + 4);
    if (length & kMasked) {
      if (pos != 0) return Bad(pos, "masked block after runs");
      return ValidateMasked(encoded, offset, length & ~uint64_t{kMasked}, page_size);
    }
    if (length == 0) return Bad(pos, "zero-length run");
    // Both are < 2^32, so the sum cannot wrap in 64 bits.
    if (offset + length > page_size) {
      return Status::OutOfRange("diff: run [" + std::to_string(offset) + ", " +
                                std::to_string(offset + length) + ") past page of " +
                                std::to_string(page_size) + " bytes");
    }
    if (!first) {
      if (offset <= prev_offset) return Bad(pos, "run offsets not increasing");
      if (offset < prev_end) return Bad(pos, "overlapping runs");
      // Touching runs would be one run: the encoder never splits a run.
      if (offset == prev_end) return Bad(pos, "touching runs");
    }
    if (size - pos - kRunHeaderBytes < length) return Bad(pos, "truncated run payload");
    pos += kRunHeaderBytes + length;
    first = false;
    prev_offset = offset;
    prev_end = offset + length;
  }
  return Status::Ok();
}

Status Apply(std::span<const uint8_t> encoded, std::span<uint8_t> page, Impl impl) {
  if (Status s = Validate(encoded, page.size()); !s.ok()) return s;
  if (!encoded.empty() && (LoadLE32(encoded.data() + 4) & kMasked)) {
    const uint32_t length = LoadLE32(encoded.data() + 4) & ~kMasked;
    const size_t blocks = length / kMaskedGrain;
    uint8_t* to = page.data() + LoadLE32(encoded.data());
    const uint8_t* masks = encoded.data() + kRunHeaderBytes;
    const uint8_t* from = masks + blocks * sizeof(uint64_t);
    if (impl == Impl::kAvx512) {
      util::StoreMaskedAvx512(to, masks, from, blocks);
    } else {
      util::StoreMaskedScalar(to, masks, from, blocks);
    }
    return Status::Ok();
  }
  size_t pos = 0;
  while (pos < encoded.size()) {
    const uint32_t offset = LoadLE32(encoded.data() + pos);
    const uint32_t length = LoadLE32(encoded.data() + pos + 4);
    const uint8_t* from = encoded.data() + pos + kRunHeaderBytes;
    if (length <= kShortCopy) {
      CopyShort(page.data() + offset, from, length);
    } else {
      std::memcpy(page.data() + offset, from, length);
    }
    pos += kRunHeaderBytes + length;
  }
  return Status::Ok();
}

}  // namespace svm::diff
