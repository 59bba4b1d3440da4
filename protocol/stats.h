// Counters a Node keeps about its own protocol activity. Plain integers,
// written only from inside the Node (so under the same serialisation).
#pragma once

#include <array>
#include <cstdint>

#include "protocol/messages.h"

namespace svm {

// What a handler invocation served (the "interrupts" later modes remove).
enum class HandlerKind : uint8_t { kFetch, kDiff, kLock, kNotice, kBarrier, kDirectory, kRuntime };
inline constexpr size_t kHandlerKindCount = 7;
const char* ToString(HandlerKind k);
HandlerKind HandlerKindOf(MessageType t);

struct NodeStats {
  uint64_t read_faults = 0;
  uint64_t write_faults = 0;
  uint64_t fetches = 0;         // page requests sent (rf: remote reads included)
  uint64_t pages_fetched = 0;   // pages that arrived (a run counts each)
  uint64_t pages_ahead = 0;     // ... of which fetched ahead of a fault
  uint64_t pages_strided = 0;   // ... of those, along a thread's stride
  uint64_t ahead_used = 0;      // pages fetched ahead and touched here
  uint64_t ahead_unused = 0;    // ... and dropped untouched
  uint64_t pages_written_ahead = 0;  // tracked home pages opened for writing ahead of a fault
  uint64_t fetch_retries = 0;   // replies too old for what was needed by then
  uint64_t safe_fetches = 0;    // fetches merged into a dirty page via its twin
  uint64_t pages_filled = 0;    // fetched pages installed by Host::Fill
  uint64_t twins = 0;
  uint64_t write_scans = 0;     // scan_writes: Host::FindWritten calls
  uint64_t pages_found_written = 0;  // ... pages they (or a dropped copy's twin) showed written
  uint64_t diffs = 0;           // diffs sent (dd: direct diffs included)
  uint64_t diff_bytes = 0;      // changed bytes sent in diffs
  uint64_t diff_runs = 0;
  uint64_t masked_diffs = 0;    // ... sent as a masked block (diff.h)
  uint64_t diffs_applied = 0;   // at this node, as a home
  uint64_t intervals = 0;       // intervals closed
  uint64_t invalidations = 0;   // pages invalidated by write notices
  uint64_t local_acquires = 0;  // lock acquires served without a message
  uint64_t remote_acquires = 0;
  uint64_t barriers = 0;        // barrier episodes this node took part in
  uint64_t notices_collected = 0;  // intervals dropped from the bins (garbage)
  uint64_t gathers_given_up = 0;   // barrier arrivals reported on a timeout (ReportGathered)
  uint64_t protections = 0;     // Host::Protect calls (each a run of pages)
  uint64_t untracked_pages = 0;  // home pages first touched with no other holder
  uint64_t tracked_pages = 0;    // ... of which another node fetched one later
  uint64_t untracked_again = 0;  // tracked home pages left with no copy elsewhere
  uint64_t marks_dropped = 0;    // copies gone from here, their marks given back
  uint64_t remote_reads = 0;    // rf: fetches done as Host::ReadPage
  uint64_t direct_diffs = 0;    // dd: diffs done as Host::WriteDiff
  uint64_t notices_deposited = 0;  // dw: own notices deposited at the peers
  uint64_t notices_taken = 0;      // dw: peers' notices taken from deposits
  uint64_t home_claims = 0;     // rf and up, first touch: Host::ClaimHome calls
  uint64_t nic_locks = 0;       // nil: Host::NicLockTail calls (ownership crossing nodes)
  uint64_t polls = 0;           // Node::Poll calls
  std::array<uint64_t, kMessageTypeCount + 1> messages_sent{};  // by MessageType
  std::array<uint64_t, kMessageTypeCount + 1> bytes_sent{};
  std::array<uint64_t, kHandlerKindCount> handler{};            // by HandlerKind
};

}  // namespace svm
