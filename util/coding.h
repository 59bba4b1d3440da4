// Coding: the one place where integers become bytes and bytes become integers.
//
// Fixed-width unsigned integers, little-endian, and byte strings prefixed by a
// u32 length. Writer appends to a std::vector<uint8_t>. Reader walks a span
// and never reads past its end: a getter that would do so returns false,
// leaves its output and the position untouched, and marks the Reader failed.
// Failure is sticky (every later getter fails too), so a run of reads may be
// checked once at the end.
//
// Both are small views over memory they do not own; neither is thread-safe.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace svm::coding {

// Raw little-endian stores and loads. REQUIRES: sizeof(T) bytes at p.
template <typename T>
void EncodeFixed(uint8_t* p, T v) {
  static_assert(std::is_unsigned_v<T>);
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

template <typename T>
T DecodeFixed(const uint8_t* p) {
  static_assert(std::is_unsigned_v<T>);
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | (static_cast<T>(p[i]) << (8 * i)));
  return v;
}

class Writer {
 public:
  // REQUIRES: *out outlives the Writer. Bytes already in *out are kept.
  explicit Writer(std::vector<uint8_t>* out) : out_(out) {}

  void PutU8(uint8_t v) { out_->push_back(v); }
  void PutU16(uint16_t v) { Put(v); }
  void PutU32(uint32_t v) { Put(v); }
  void PutU64(uint64_t v) { Put(v); }
  void PutBytes(std::span<const uint8_t> b) { out_->insert(out_->end(), b.begin(), b.end()); }
  // u32 length, then the bytes. REQUIRES: b.size() <= UINT32_MAX.
  void PutLengthPrefixed(std::span<const uint8_t> b) {
    assert(b.size() <= UINT32_MAX);
    PutU32(static_cast<uint32_t>(b.size()));
    PutBytes(b);
  }

  // Overwrites the 4 bytes at offset `at` of the whole output vector.
  // REQUIRES: at + 4 <= size().
  void PatchU32(size_t at, uint32_t v) {
    assert(at + 4 <= out_->size());
    EncodeFixed(out_->data() + at, v);
  }

  // Size of the whole output vector (not just what this Writer appended).
  size_t size() const { return out_->size(); }

 private:
  template <typename T>
  void Put(T v) {
    size_t at = out_->size();
    out_->resize(at + sizeof(T));
    EncodeFixed(out_->data() + at, v);
  }

  std::vector<uint8_t>* out_;
};

class Reader {
 public:
  // The bytes must outlive the Reader and any span GetBytes hands out.
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}

  [[nodiscard]] bool GetU8(uint8_t* v) { return Get(v); }
  [[nodiscard]] bool GetU16(uint16_t* v) { return Get(v); }
  [[nodiscard]] bool GetU32(uint32_t* v) { return Get(v); }
  [[nodiscard]] bool GetU64(uint64_t* v) { return Get(v); }

  // The next n bytes, as a view into the input.
  [[nodiscard]] bool GetBytes(size_t n, std::span<const uint8_t>* out) {
    if (!Ensure(n)) return false;
    *out = in_.subspan(pos_, n);
    pos_ += n;
    return true;
  }

  // A u32 length, then that many bytes (as a view). Fails, consuming nothing,
  // when the length exceeds what remains.
  [[nodiscard]] bool GetLengthPrefixed(std::span<const uint8_t>* out) {
    if (!Ensure(4)) return false;
    uint32_t n = DecodeFixed<uint32_t>(in_.data() + pos_);
    if (n > remaining() - 4) return Fail();
    pos_ += 4;
    return GetBytes(n, out);
  }

  // Whether `count` items of at least `item_bytes` each could still follow.
  // Check this before allocating room for a count read from the input.
  // REQUIRES: item_bytes > 0.
  bool CanHold(uint64_t count, size_t item_bytes) const {
    assert(item_bytes > 0);
    return !failed_ && count <= remaining() / item_bytes;
  }

  size_t remaining() const { return in_.size() - pos_; }
  size_t position() const { return pos_; }
  bool failed() const { return failed_; }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }
  bool Ensure(size_t n) { return (!failed_ && n <= remaining()) || Fail(); }

  template <typename T>
  bool Get(T* v) {
    if (!Ensure(sizeof(T))) return false;
    *v = DecodeFixed<T>(in_.data() + pos_);
    pos_ += sizeof(T);
    return true;
  }

  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace svm::coding
