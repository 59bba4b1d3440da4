// Fragments: messages of any length over a transport whose SENDs are
// bounded (nic::kMaxMessage), so that no size limit is visible to the
// protocol (a barrier arrival may carry megabytes of write notices).
//
// A message longer than the limit travels as consecutive SENDs, each
//   u32 magic 'SVMF' | u32 total length | payload
// and the receiver joins them before handing the message on. SENDs are FIFO
// per pair of nodes, so one message per sender is being joined at a time.
// The magic differs from the wire header's ('SVM1'): a SEND is either a
// whole message or a fragment.
//
// Thread-safety: Reassembler is not thread-safe (the runtime feeds it under
// its dispatch lock).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "util/status.h"
#include "protocol/types.h"

namespace svm::rt {

inline constexpr uint32_t kFragmentMagic = 0x464d5653;  // "SVMF" read as little-endian bytes
inline constexpr size_t kFragmentHeader = 8;
// Largest message the receiver joins: a bound on what a peer can make it hold.
inline constexpr uint64_t kMaxJoined = uint64_t(1) << 31;

// The SENDs that carry bytes when a SEND holds at most max_send bytes: bytes
// itself if it fits, else fragments. REQUIRES: max_send > kFragmentHeader,
// bytes.size() <= kMaxJoined.
std::vector<std::vector<uint8_t>> Fragment(std::vector<uint8_t> bytes, size_t max_send);

class Reassembler {
 public:
  explicit Reassembler(uint32_t peers) : joining_(peers) {}

  // One SEND received from `from` (< peers). On return *whole is set when a
  // message is complete: then bytes holds all of it (a SEND that is not a
  // fragment is complete as it is). Malformed when the fragments do not add
  // up (the message being joined is dropped).
  Status Feed(NodeId from, std::vector<uint8_t>* bytes, bool* whole);

 private:
  struct Joining {
    uint64_t total = 0;
    std::vector<uint8_t> bytes;
  };
  std::vector<Joining> joining_;
};

}  // namespace svm::rt
