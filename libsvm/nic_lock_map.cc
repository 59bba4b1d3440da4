#include "libsvm/nic_lock_map.h"

#include <cassert>

#include <fmt/format.h>

namespace svm::rt {

NicLockMap::NicLockMap(uint32_t table_words) : mask_(table_words - 1) {
  assert(table_words != 0 && (table_words & mask_) == 0 && table_words <= nic::kMaxLocks);
}

nic::LockNo NicLockMap::Slot(LockId l) const {
  uint64_t x = l;  // splitmix64's finaliser: lock addresses differ in few bits
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return nic::LockNo(x & mask_);
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
