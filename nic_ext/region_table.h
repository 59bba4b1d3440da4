// RegionTable: the registered memory regions of one node, and the bounds check
// every remote access goes through (the software equivalent of an rkey check).
//
// Filled on the control path (Add), then only read. Reads are thread-safe once
// filling is over.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "nic_ext/transport.h"

namespace svm::nic {

class RegionTable {
 public:
  // REQUIRES: r.id < kMaxRegions, r.length > 0, r.base != nullptr, id unused.
  Status Add(const MemoryRegion& r);

  // The local address of bytes [offset, offset + len) of region `id`, or
  // nullptr when the region is unknown or the range leaves it. len may be 0.
  uint8_t* Find(RegionId id, uint64_t offset, uint64_t len) const {
    if (id >= kMaxRegions || !used_[id]) return nullptr;
    const MemoryRegion& r = regions_[id];
    if (offset > r.length || len > r.length - offset) return nullptr;
    return static_cast<uint8_t*>(r.base) + offset;
  }

  // The 8-byte word at `offset` of region `id` for CAS/FAA, or nullptr when it
  // is out of bounds or not 8-byte aligned in memory.
  uint64_t* FindWord(RegionId id, uint64_t offset) const {
    uint8_t* p = Find(id, offset, kAtomicBytes);
    if (p == nullptr || reinterpret_cast<uintptr_t>(p) % kAtomicBytes != 0) return nullptr;
    return reinterpret_cast<uint64_t*>(p);
  }

  // Serves READ, WRITE, WRITE_RUNS, CAS or FAA against this table's memory
  // on the calling thread (backends whose initiator can reach the target's
  // memory: fake, shm). Fills c->status, c->byte_len and c->value.
  // REQUIRES: wr.op is one of those five and wr passed Nic::Validate.
  void Serve(const WorkRequest& wr, Completion* c) const;

  // Stores the encoded runs (Opcode::kWriteRuns) at `offset` + each run's
  // offset in region `id`: all, or none with the status that refuses them.
  WcStatus StoreRuns(RegionId id, uint64_t offset, std::span<const uint8_t> runs) const;

  const MemoryRegion* Get(RegionId id) const {
    return id < kMaxRegions && used_[id] ? &regions_[id] : nullptr;
  }

 private:
  std::array<MemoryRegion, kMaxRegions> regions_{};
  std::array<bool, kMaxRegions> used_{};
};

}  // namespace svm::nic
