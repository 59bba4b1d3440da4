#include "libsvm/nic_lock_map.h"

#include <cassert>

#include <fmt/format.h>

namespace svm::rt {

NicLockMap::NicLockMap(uint32_t table_words) : mask_(table_words - 1) {
  assert(table_words != 0 && (table_words & mask_) == 0 && table_words <= nic::kMaxLocks);
}

// Locks near each other in memory (an array of them) get numbers near each
// other, so a node's first uses touch few pages of the home's claim and
// tail tables: hashed apart, each lock's first use faulted in a page of
// each (shmem allocation at the home, a mapping at the user), 2-3 us of
// every nil acquire in water-nsquared. Ranges a table's span apart (thread
// stacks lie 8 MiB apart) start at hashed offsets, so their locks do not
// all probe from the same word. The second 4-byte lock of a word (an array
// of pthread_spinlock_t) starts half a table away: beside its neighbour it
// would take the next lock's word, and linear probing would walk such an
// array lock by lock (n^2 / 4 remote CASes for n locks).
nic::LockNo NicLockMap::Slot(LockId l) const {
  const uint64_t word = l / sizeof(uint64_t);
  uint64_t x = word / (uint64_t(mask_) + 1);  // splitmix64's finaliser of the range
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  const uint64_t half = (l & 4) != 0 ? (uint64_t(mask_) + 1) / 2 : 0;
  return nic::LockNo((word + x + half) & mask_);
}

NicLockMap::Claim NicLockMap::Start(LockId l) const { return Claim{l, Slot(l), 0}; }

nic::WorkRequest NicLockMap::ClaimRequest(NodeId home, nic::RegionId region, const Claim& c) const {
  return nic::WorkRequest::Cas(home, region, uint64_t(c.no) * sizeof(uint64_t), 0, c.lock + 1);
}

Status NicLockMap::OnClaimed(Claim* c, uint64_t old, bool* done) const {
  *done = old == 0 || old == c->lock + 1;
  if (*done) return Status::Ok();
  if (++c->probes > mask_)
    return Status::OutOfRange(
        fmt::format("more than {} distinct locks at one node's NIC (lock {:#x})", table_words(), c->lock));
  c->no = nic::LockNo((c->no + 1) & mask_);
  return Status::Ok();
}

}  // namespace svm::rt
