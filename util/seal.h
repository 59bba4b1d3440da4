// Sealing: AES-256-GCM records over a byte stream, after the key proof.
//
// Between hosts, what follows the handshake (auth.h) is sealed when both ends
// agreed to it in the handshake (the flag is part of the proof, so a man in
// the middle cannot turn it off). Each end derives two keys from the
// connection's session secret with HKDF-SHA256, one per direction (client to
// server, server to client), so no key ever seals in both directions. A
// record on the wire is
//
//   u32 length (ciphertext bytes, little-endian) | ciphertext | tag[16]
//
// sealed with the length as additional data and the nonce 0^4 | u64 counter:
// the counter numbers the records of one direction from 0 and is never sent,
// so each end knows which record comes next. A record altered, truncated,
// replayed, reordered or dropped in flight fails to open, and the opener
// refuses everything after its first failure: the connection must be closed.
// A record's length is not secret.
//
// Cost per record: one EVP context per direction, made once and reused (only
// the nonce changes); sealing and opening write straight into the caller's
// buffer, so a record costs no allocation.
//
// Thread-safety: a Sealer or Opener is one direction of one connection; the
// caller serializes its use (sealing order is wire order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/auth.h"
#include "util/status.h"

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;

namespace svm::svmd {

inline constexpr size_t kSealHeader = 4;
inline constexpr size_t kSealTag = 16;
inline constexpr size_t kSealOverhead = kSealHeader + kSealTag;
// Plaintext bytes in one record at most (a control frame's largest body fits).
inline constexpr uint32_t kMaxSealedPlain = (4u << 20) + 4096;

// Sends: seals records in order.
class Sealer {
 public:
  Sealer() = default;
  ~Sealer();
  Sealer(const Sealer&) = delete;
  Sealer& operator=(const Sealer&) = delete;

  // Keys this end's sending direction; `me` is this end's role in the handshake.
  Status Init(const Key& session, AuthRole me);
  // Writes the record sealing plain[0, n) to out (n + kSealOverhead bytes;
  // out must not overlap plain). REQUIRES: Init succeeded, n <= kMaxSealedPlain.
  void SealTo(const uint8_t* plain, size_t n, uint8_t* out);
  // Appends one record holding plain[0, n) to *out.
  template <typename Buffer>
  void Append(const void* plain, size_t n, Buffer* out) {
    const size_t at = out->size();
    out->resize(at + n + kSealOverhead);
    SealTo(static_cast<const uint8_t*>(plain), n, reinterpret_cast<uint8_t*>(out->data()) + at);
  }
  uint64_t records() const { return counter_; }

 private:
  EVP_CIPHER_CTX* ctx_ = nullptr;
  uint64_t counter_ = 0;
};

// Receives: opens records in order.
class Opener {
 public:
  Opener() = default;
  ~Opener();
  Opener(const Opener&) = delete;
  Opener& operator=(const Opener&) = delete;

  // Keys the peer's sending direction; `me` is this end's role.
  Status Init(const Key& session, AuthRole me);
  // The whole size of the record whose kSealHeader-byte header is at
  // `header`, or Malformed when it announces more than max_plain bytes.
  static Status RecordSize(const uint8_t* header, size_t max_plain, size_t* size);
  // Opens the whole record rec[0, size) (size from RecordSize) into out,
  // which has room for size - kSealOverhead bytes. AuthFailed when it does
  // not authenticate; from then on every Open fails.
  Status Open(const uint8_t* rec, size_t size, uint8_t* out);
  uint64_t records() const { return counter_; }

 private:
  EVP_CIPHER_CTX* ctx_ = nullptr;
  uint64_t counter_ = 0;
  bool failed_ = false;
};

// Both directions of one connection.
struct Seal {
  Sealer out;
  Opener in;
  // Keys both directions from the handshake's session secret.
  static Status Make(const Key& session, AuthRole me, std::unique_ptr<Seal>* seal);
};

}  // namespace svm::svmd
