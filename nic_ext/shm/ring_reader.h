// RingReader: the shm transport's decoder of one sender's ring (a byte
// stream of [u32 length][bytes] messages in shared memory that the sender
// writes and this node reads). The sender is another process: its bytes and
// its tail are not trusted. Read consumes [head, tail), copying out across
// the ring's wrap, and delivers each whole message; a length above
// kMaxMessage or more than a ring outstanding ends the reading (the caller
// cuts the sender off). Messages may span calls (a partial one is kept).
//
// Thread-safety: one reader per ring, serialized by the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "nic_ext/transport.h"
#include "util/coding.h"

namespace svm::nic {

class RingReader {
 public:
  static constexpr uint32_t kLengthBytes = 4;
  enum class Result { kOk, kTooMuch, kTooLong };

  // ring: `size` bytes (a power of two). deliver(Message&&) gets each whole
  // message. On kTooMuch / kTooLong nothing more can be read from this ring.
  template <typename Deliver>
  Result Read(const uint8_t* ring, uint32_t size, uint64_t* head, uint64_t tail, NodeId from, Deliver&& deliver) {
    return Read(ring, size, head, tail, from, deliver, [](size_t) { return std::vector<uint8_t>(); });
  }
  // As above; storage(length) gives each message's buffer (empty, maybe
  // with capacity to reuse).
  template <typename Deliver, typename Storage>
  Result Read(const uint8_t* ring, uint32_t size, uint64_t* head, uint64_t tail, NodeId from, Deliver&& deliver,
              Storage&& storage) {
    if (tail - *head > size) return Result::kTooMuch;
    while (*head != tail) {
      if (length_got_ < kLengthBytes) {
        const size_t n = size_t(std::min<uint64_t>(kLengthBytes - length_got_, tail - *head));
        CopyOut(length_ + length_got_, ring, size, *head, n);
        *head += n;
        length_got_ += uint32_t(n);
        if (length_got_ < kLengthBytes) break;
        want_ = coding::DecodeFixed<uint32_t>(length_);
        if (want_ > kMaxMessage) return Result::kTooLong;
        partial_.from = from;
        partial_.bytes = storage(want_);
        partial_.bytes.reserve(want_);
      }
      const size_t have = partial_.bytes.size();
      const size_t n = size_t(std::min<uint64_t>(want_ - have, tail - *head));
      partial_.bytes.resize(have + n);
      CopyOut(partial_.bytes.data() + have, ring, size, *head, n);
      *head += n;
      if (partial_.bytes.size() == want_) {
        deliver(std::move(partial_));
        partial_ = Message{};
        length_got_ = 0;
      }
    }
    return Result::kOk;
  }
  // The length of the message being assembled (once its length is in).
  uint32_t want() const { return want_; }

  static void CopyOut(uint8_t* dst, const uint8_t* ring, uint32_t size, uint64_t pos, size_t n) {
    if (n == 0) return;  // dst may be null (an empty message)
    const size_t at = pos & (size - 1), first = std::min<size_t>(n, size - at);
    std::memcpy(dst, ring + at, first);
    std::memcpy(dst + first, ring, n - first);
  }

 private:
  uint8_t length_[kLengthBytes] = {};
  uint32_t length_got_ = 0;
  uint32_t want_ = 0;
  Message partial_;
};

}  // namespace svm::nic
