// The gather list of a WRITE_RUNS (Opcode::kWriteRuns), read in one place:
// by the targets that store runs (RegionTable), by the ofi backend that
// turns them into RMA writes, and by the runtime's WRITE a run where a NIC
// lacks WRITE_RUNS. The encoding is protocol/diff.h's:
//   u32 offset | u32 length | length bytes     (little-endian, a run)
// or, where the NIC stores masked blocks (Nic::StoresMaskedBlocks), one
// masked block alone:
//   u32 offset | u32 (kMaskedRuns | length) | length / 8 bytes of mask | length bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nic_ext/transport.h"
#include "util/coding.h"

namespace svm::nic {

struct Run {
  uint32_t offset;  // from the WR's offset
  std::span<const uint8_t> bytes;
};

// The run at *at of an encoding that CheckRuns accepted; *at moves past it.
inline Run NextRun(std::span<const uint8_t> runs, size_t* at) {
  const uint32_t offset = coding::DecodeFixed<uint32_t>(runs.data() + *at);
  const uint32_t length = coding::DecodeFixed<uint32_t>(runs.data() + *at + 4);
  const Run r{offset, runs.subspan(*at + kRunHeaderBytes, length)};
  *at += kRunHeaderBytes + length;
  return r;
}

// A masked block: where it goes and what it holds.
struct MaskedBlock {
  uint32_t offset;  // from the WR's offset
  uint32_t length;  // a multiple of 64
  const uint8_t* masks;  // length / 64 little-endian u64
  const uint8_t* bytes;  // length
};

inline bool IsMasked(std::span<const uint8_t> runs) {
  return runs.size() >= kRunHeaderBytes && (coding::DecodeFixed<uint32_t>(runs.data() + 4) & kMaskedRuns) != 0;
}

// The block of an encoding that CheckRuns accepted and IsMasked.
inline MaskedBlock TheMaskedBlock(std::span<const uint8_t> runs) {
  const uint32_t length = coding::DecodeFixed<uint32_t>(runs.data() + 4) & ~kMaskedRuns;
  const uint8_t* masks = runs.data() + kRunHeaderBytes;
  return {coding::DecodeFixed<uint32_t>(runs.data()), length, masks, masks + length / 64 * sizeof(uint64_t)};
}

// The verdict on an encoding before any of it is stored at `base` + each
// run's offset: kRemoteInvalidRequest when it is malformed anywhere (a
// truncated header or run, an empty run, a masked block not alone or not
// of whole 64-byte blocks, or with an empty first or last block), else
// kRemoteAccessError when fits(address, length) is false for some run (or
// the block) or its address overflows, else kSuccess. A malformed tail
// outranks an earlier run that does not fit.
template <typename Fits>
WcStatus CheckRuns(std::span<const uint8_t> runs, uint64_t base, Fits fits) {
  if (IsMasked(runs)) {
    const uint32_t offset = coding::DecodeFixed<uint32_t>(runs.data());
    const uint32_t length = coding::DecodeFixed<uint32_t>(runs.data() + 4) & ~kMaskedRuns;
    if (length == 0 || length % 64 != 0 || offset % 64 != 0 ||
        runs.size() != kRunHeaderBytes + length / 64 * (sizeof(uint64_t) + 64))
      return WcStatus::kRemoteInvalidRequest;
    const MaskedBlock b = TheMaskedBlock(runs);
    if (coding::DecodeFixed<uint64_t>(b.masks) == 0 ||
        coding::DecodeFixed<uint64_t>(b.masks + (length / 64 - 1) * sizeof(uint64_t)) == 0)
      return WcStatus::kRemoteInvalidRequest;
    if (base > UINT64_MAX - offset || !fits(base + offset, uint64_t{length})) return WcStatus::kRemoteAccessError;
    return WcStatus::kSuccess;
  }
  WcStatus verdict = WcStatus::kSuccess;
  for (size_t at = 0; at != runs.size();) {
    if (runs.size() - at < kRunHeaderBytes) return WcStatus::kRemoteInvalidRequest;
    const uint32_t length = coding::DecodeFixed<uint32_t>(runs.data() + at + 4);
    if (length == 0 || (length & kMaskedRuns) || runs.size() - at - kRunHeaderBytes < length)
      return WcStatus::kRemoteInvalidRequest;  // a masked block only alone
    const Run r = NextRun(runs, &at);
    if (base > UINT64_MAX - r.offset || !fits(base + r.offset, uint64_t{length})) {
      verdict = WcStatus::kRemoteAccessError;
    }
  }
  return verdict;
}

// The runs as a WRITE each, to `offset` + each run's offset of `region` at
// `peer`, appended to *out: for a NIC without WRITE_RUNS (Nic::Supports).
// Their gather lists point into `runs`, which must outlive them.
// REQUIRES: CheckRuns accepted runs; !IsMasked(runs).
inline void AppendRunWrites(std::span<const uint8_t> runs, NodeId peer, RegionId region, uint64_t offset,
                            std::vector<WorkRequest>* out) {
  for (size_t at = 0; at != runs.size();) {
    const Run r = NextRun(runs, &at);
    const Sge bytes{const_cast<uint8_t*>(r.bytes.data()), static_cast<uint32_t>(r.bytes.size())};
    out->push_back(WorkRequest::Write(peer, region, offset + r.offset, {&bytes, 1}));
  }
}

}  // namespace svm::nic
