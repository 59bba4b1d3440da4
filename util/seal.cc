#include "util/seal.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <cstring>
#include <string_view>

namespace svm::svmd {
namespace {

constexpr std::string_view kSalt = "svm-seal-1";
constexpr size_t kNonceBytes = 12;

// The key for what `sender` sends on this connection.
Status DeriveKey(const Key& session, AuthRole sender, Key* out) {
  const std::string_view info = sender == AuthRole::kClient ? "client to server" : "server to client";
  EVP_PKEY_CTX* p = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t len = out->size();
  const bool ok = p != nullptr && EVP_PKEY_derive_init(p) > 0 && EVP_PKEY_CTX_set_hkdf_md(p, EVP_sha256()) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_salt(p, reinterpret_cast<const unsigned char*>(kSalt.data()),
                                              int(kSalt.size())) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_key(p, session.data(), int(session.size())) > 0 &&
                  EVP_PKEY_CTX_add1_hkdf_info(p, reinterpret_cast<const unsigned char*>(info.data()),
                                              int(info.size())) > 0 &&
                  EVP_PKEY_derive(p, out->data(), &len) > 0 && len == out->size();
  EVP_PKEY_CTX_free(p);
  return ok ? Status::Ok() : Status::Unsupported("HKDF-SHA256 is not available in this OpenSSL");
}

void Nonce(uint64_t counter, uint8_t* nonce) {
  std::memset(nonce, 0, 4);
  for (int i = 0; i < 8; ++i) nonce[4 + i] = uint8_t(counter >> (8 * i));
}

Status MakeContext(const Key& session, AuthRole sender, bool encrypt, EVP_CIPHER_CTX** ctx) {
  Key key;
  if (Status s = DeriveKey(session, sender, &key); !s.ok()) return s;
  EVP_CIPHER_CTX_free(*ctx);
  *ctx = EVP_CIPHER_CTX_new();
  const int ok = *ctx != nullptr &&
                 (encrypt ? EVP_EncryptInit_ex(*ctx, EVP_aes_256_gcm(), nullptr, key.data(), nullptr)
                          : EVP_DecryptInit_ex(*ctx, EVP_aes_256_gcm(), nullptr, key.data(), nullptr));
  OPENSSL_cleanse(key.data(), key.size());
  return ok > 0 ? Status::Ok() : Status::Unsupported("AES-256-GCM is not available in this OpenSSL");
}

AuthRole Peer(AuthRole me) { return me == AuthRole::kClient ? AuthRole::kServer : AuthRole::kClient; }

}  // namespace

Sealer::~Sealer() { EVP_CIPHER_CTX_free(ctx_); }

Status Sealer::Init(const Key& session, AuthRole me) {
  counter_ = 0;
  return MakeContext(session, me, true, &ctx_);
}

void Sealer::SealTo(const uint8_t* plain, size_t n, uint8_t* out) {
  uint8_t nonce[kNonceBytes];
  // 2^64 records cannot be sent: a nonce is never reused.
  Nonce(counter_++, nonce);
  for (size_t i = 0; i < kSealHeader; ++i) out[i] = uint8_t(uint32_t(n) >> (8 * i));
  int len = 0, tail = 0;
  EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce);
  EVP_EncryptUpdate(ctx_, nullptr, &len, out, int(kSealHeader));
  if (n > 0) EVP_EncryptUpdate(ctx_, out + kSealHeader, &len, plain, int(n));
  EVP_EncryptFinal_ex(ctx_, out + kSealHeader + n, &tail);
  EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, int(kSealTag), out + kSealHeader + n);
}

Opener::~Opener() { EVP_CIPHER_CTX_free(ctx_); }

Status Opener::Init(const Key& session, AuthRole me) {
  counter_ = 0;
  failed_ = false;
  return MakeContext(session, Peer(me), false, &ctx_);
}

Status Opener::RecordSize(const uint8_t* header, size_t max_plain, size_t* size) {
  uint32_t n = 0;
  for (size_t i = 0; i < kSealHeader; ++i) n |= uint32_t(header[i]) << (8 * i);
  if (n > max_plain)
    return Status::Malformed("sealed record of " + std::to_string(n) + " bytes (at most " +
                             std::to_string(max_plain) + ")");
  *size = kSealOverhead + n;
  return Status::Ok();
}

Status Opener::Open(const uint8_t* rec, size_t size, uint8_t* out) {
  if (failed_) return Status::AuthFailed("the stream failed to authenticate earlier");
  size_t want = 0;
  if (size < kSealOverhead || !RecordSize(rec, kMaxSealedPlain, &want).ok() || want != size) {
    failed_ = true;
    return Status::Malformed("sealed record size does not match its header");
  }
  const size_t n = size - kSealOverhead;
  uint8_t nonce[kNonceBytes];
  Nonce(counter_, nonce);
  int len = 0, tail = 0;
  uint8_t tag[kSealTag];
  std::memcpy(tag, rec + kSealHeader + n, kSealTag);
  bool ok = EVP_DecryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) > 0 &&
            EVP_DecryptUpdate(ctx_, nullptr, &len, rec, int(kSealHeader)) > 0 &&
            (n == 0 || EVP_DecryptUpdate(ctx_, out, &len, rec + kSealHeader, int(n)) > 0) &&
            EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_TAG, int(kSealTag), tag) > 0 &&
            EVP_DecryptFinal_ex(ctx_, out + n, &tail) > 0;
  if (!ok) {
    failed_ = true;
    return Status::AuthFailed("sealed record " + std::to_string(counter_) +
                              " does not authenticate: altered, replayed, reordered or cut in flight");
  }
  ++counter_;
  return Status::Ok();
}

Status Seal::Make(const Key& session, AuthRole me, std::unique_ptr<Seal>* seal) {
  auto s = std::make_unique<Seal>();
  if (Status st = s->out.Init(session, me); !st.ok()) return st;
  if (Status st = s->in.Init(session, me); !st.ok()) return st;
  *seal = std::move(s);
  return Status::Ok();
}

}  // namespace svm::svmd
