// Identifiers shared by every protocol component (the ids themselves are
// util/ids.h: the communication layer names nodes too), lock ids that name
// their home, accesses, protections and modes.
#pragma once

#include <cstdint>

#include "util/ids.h"

namespace svm {

// Lock ids with the top bit set name their home node (bits 48..62): the
// runtime's own locks, which should live where their first user is. Program
// locks are addresses, always below 2^47.
inline constexpr LockId kPinnedLockBit = 1ull << 63;
inline constexpr LockId PinnedLock(NodeId home, uint64_t key) {
  return kPinnedLockBit | (LockId(home & 0x7fff) << 48) | (key & 0xffffffffffffull);
}
inline constexpr bool IsPinnedLock(LockId l) { return (l & kPinnedLockBit) != 0; }
inline constexpr NodeId PinnedLockHome(LockId l) { return NodeId((l >> 48) & 0x7fff); }

// Most pages one fetch asks for (a page run: the faulting page and those
// after it with the same home, NodeConfig::max_run).
inline constexpr uint32_t kMaxPageRun = 64;
// Longest step between a run's pages (a strided run: a column of a
// row-major matrix, rows of up to 2 MiB).
inline constexpr uint32_t kMaxPageStride = 512;

// What an access wants from a page.
enum class Access : uint8_t { kRead, kWrite };

// Protection of a page in the application's view.
enum class Prot : uint8_t { kNone, kRead, kReadWrite };

// Protocol mode (DESIGN.md, "Modes"), cumulative: each moves one more kind of
// work from the home's handler onto the NIC's one-sided operations.
//   base: everything by messages served by the handler;
//   dw:   write notices deposited eagerly (remote WRITE), grants carry only
//         timestamps;
//   rf:   + pages fetched by remote READ of version and page, retried if stale;
//   dd:   + diffs written straight into the home frame, version set remotely;
//   nil:  + locks held at the NIC (lock word carries the timestamp).
enum class Mode : uint8_t { kBase, kDw, kRf, kDd, kNil };
inline constexpr bool DepositsNotices(Mode m) { return m >= Mode::kDw; }
inline constexpr bool ReadsRemotely(Mode m) { return m >= Mode::kRf; }
inline constexpr bool DiffsDirectly(Mode m) { return m >= Mode::kDd; }
inline constexpr bool LocksAtNic(Mode m) { return m >= Mode::kNil; }
// Parses "base", "dw", "rf", "dd", "nil"; false if s is none of them.
bool ParseMode(const char* s, Mode* out);

const char* ToString(Access a);
const char* ToString(Prot p);
const char* ToString(Mode m);

}  // namespace svm
