// SealedStream: the tcp NIC's sealing of one connection between hosts
// (util/seal.h, TcpOptions::seal). The NIC's frames are unchanged: what a
// connection would send is sealed into AES-GCM records at flush time, in the
// order it leaves, and what arrives is opened back into the frame stream
// before the frames are decoded. A record may hold several frames or part of
// one; the receiver only needs the byte stream back. A record that does not
// authenticate (altered, replayed, reordered, cut) ends the connection.
//
// Per record: one seal or open on a context made once per direction, straight
// into the caller's buffers (the ciphertext is the copy the plain NIC makes
// anyway); the buffers keep their capacity, so steady state allocates nothing.
//
// Thread-safety: none; the NIC guards it with the connection's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "util/seal.h"

namespace svm::nic {

class SealedStream {
 public:
  // Records carry at most this much plaintext (a full send buffer is cut).
  static constexpr size_t kChunk = 256 << 10;
  static constexpr size_t kMinRoom = 64 << 10;

  explicit SealedStream(std::unique_ptr<svmd::Seal> seal) : seal_(std::move(seal)) {
    rx_.resize(kChunk + svmd::kSealOverhead + kMinRoom);
  }

  // Seals *plain onto the wire and clears it.
  void Seal(std::vector<uint8_t>* plain) {
    for (size_t at = 0; at < plain->size(); at += kChunk)
      seal_->out.Append(plain->data() + at, std::min(kChunk, plain->size() - at), &wire_);
    plain->clear();
  }
  // Sealed bytes not yet handed to the kernel.
  std::vector<uint8_t>& wire() { return wire_; }

  // Room to receive into (at least kMinRoom, and the whole record in front).
  std::span<uint8_t> RecvRoom() {
    if (begin_ == end_) {
      begin_ = end_ = 0;
    } else if (rx_.size() - end_ < kMinRoom || need_ > rx_.size() - begin_) {
      std::memmove(rx_.data(), rx_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (need_ > rx_.size()) rx_.resize(need_ + kMinRoom);
    if (rx_.size() - end_ < kMinRoom) rx_.resize(end_ + kMinRoom);
    return {rx_.data() + end_, rx_.size() - end_};
  }
  void Received(size_t n) { end_ += n; }

  // True when a whole record is in front (*plain: its plaintext bytes);
  // false when more bytes are needed or on a bad header (*error).
  bool Front(size_t* plain, Status* error) {
    if (end_ - begin_ < svmd::kSealHeader) return false;
    size_t size = 0;
    if (*error = svmd::Opener::RecordSize(rx_.data() + begin_, kChunk, &size); !error->ok()) return false;
    need_ = size;
    *plain = size - svmd::kSealOverhead;
    return end_ - begin_ >= size;
  }
  // Opens the record in front into out (room for its plaintext) and drops it.
  Status OpenFront(uint8_t* out) {
    const size_t size = need_;
    Status s = seal_->in.Open(rx_.data() + begin_, size, out);
    begin_ += size;
    need_ = 0;
    return s;
  }

  // Setup (blocking hello exchange): one record of plain, and its opening.
  std::vector<uint8_t> SealOne(const std::vector<uint8_t>& plain) {
    std::vector<uint8_t> out;
    seal_->out.Append(plain.data(), plain.size(), &out);
    return out;
  }
  Status OpenOne(const std::vector<uint8_t>& rec, std::vector<uint8_t>* plain) {
    if (rec.size() < svmd::kSealOverhead) return Status::Malformed("short sealed record");
    plain->resize(rec.size() - svmd::kSealOverhead);
    return seal_->in.Open(rec.data(), rec.size(), plain->data());
  }

 private:
  std::unique_ptr<svmd::Seal> seal_;
  std::vector<uint8_t> wire_;
  std::vector<uint8_t> rx_;  // received, records not yet opened: [begin_, end_)
  size_t begin_ = 0, end_ = 0;
  size_t need_ = 0;  // size of the record in front, once its header is in
};

}  // namespace svm::nic
