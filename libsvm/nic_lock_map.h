// NicLockMap: program lock ids (addresses) -> NIC lock numbers, without
// collisions (mode nil).
//
// A NIC's lock table takes numbers below nic::kMaxLocks; program locks are
// 64-bit addresses. Two locks sharing a number would deadlock a thread that
// holds one and takes the other, so each home keeps an open-addressing claim
// table in exported memory: word i holds LockId + 1 of the lock that owns
// number i, or 0. A node maps lock l by claiming, with remote CAS(0 -> l + 1)
// at l's home, the first word from Slot(l) on (linear probing) that is free
// or already holds l + 1. Claims are never undone, so every node that maps l
// finds the same number, and the answer may be cached for good.
//
// This class is the probing logic only (the runtime posts the CASes and runs
// the state machine, onesided.cc). Immutable; thread-safe.
#pragma once

#include <cstdint>

#include "nic_ext/transport.h"
#include "util/status.h"

namespace svm::rt {

class NicLockMap {
 public:
  // REQUIRES: table_words is a power of two, at most nic::kMaxLocks.
  explicit NicLockMap(uint32_t table_words = nic::kMaxLocks);

  uint32_t table_words() const { return mask_ + 1; }
  size_t table_bytes() const { return size_t(table_words()) * sizeof(uint64_t); }

  // One lock's claim in progress.
  struct Claim {
    LockId lock = 0;
    nic::LockNo no = 0;   // the word being tried
    uint32_t probes = 0;  // words found taken so far
  };
  Claim Start(LockId l) const;
  // The CAS that tries c.no at `home`, whose claim table is `region`.
  nic::WorkRequest ClaimRequest(NodeId home, nic::RegionId region, const Claim& c) const;
  // After that CAS returned `old`: *done when c.no is now c.lock's number;
  // otherwise c moves on to the next word. OutOfRange when every word is
  // taken by other locks (the home's table is full).
  Status OnClaimed(Claim* c, uint64_t old, bool* done) const;

  nic::LockNo Slot(LockId l) const;

 private:
  uint32_t mask_;
};

}  // namespace svm::rt
