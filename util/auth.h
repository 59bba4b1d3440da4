// Job-key authentication: HMAC-SHA256 challenge-response over a connected fd.
//
// Every control connection (node -> svmrun, svmrun -> svmd) and every NIC
// connection between nodes proves knowledge of a 256-bit key before any other
// byte is trusted. Both sides prove it (mutual), with fresh nonces from both
// sides, so a recorded exchange cannot be replayed and a proof cannot be
// reflected back. The exchange (all sizes in bytes):
//
//   both -> : hello  = "SVMA" | u8 version=2 | u8 role ('C'/'S') | u8 flags | u8 0 | nonce[32]
//   C -> S  : proof_c = HMAC(key, "svm-auth-2" | 'C' | nonce_c | nonce_s | flags_c | flags_s)
//   S       : verifies proof_c (constant-time); on mismatch closes, sends nothing
//   S -> C  : proof_s = HMAC(key, "svm-auth-2" | 'S' | nonce_c | nonce_s | flags_c | flags_s)
//   C       : verifies proof_s
//
// flags bit 0: this end wants the rest of the connection sealed (seal.h).
// It is sealed when either end wants it; both flags are proven, so a man in
// the middle who clears one fails the proof instead of turning sealing off.
//
// A client with the wrong key therefore never gets a byte past the server's
// hello. Both sides may derive a per-connection session secret
// HMAC(key, "svm-session-1" | nonce_c | nonce_s), used to wrap secrets sent
// over the connection (svmrun hands the job key to svmd this way).
// Thread-safe: no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "util/net.h"
#include "util/status.h"

namespace svm::svmd {

inline constexpr size_t kKeyBytes = 32;
using Key = std::array<uint8_t, kKeyBytes>;

enum class AuthRole : uint8_t { kClient = 'C', kServer = 'S' };
const char* ToString(AuthRole r);

// Fills *key from the kernel's random source.
Status GenerateKey(Key* key);
// Reads exactly 32 bytes from fd (the SVM_KEY_FD convention). Does not close fd.
Status LoadKeyFromFd(int fd, Key* key);
// Loads a key file: 32 raw bytes, or 64 hex digits (optionally newline).
// Refuses anything but a regular file with no group/other permission bits.
Status LoadKeyFromFile(const std::string& path, Key* key);
// Creates path (must not exist) with mode 0600 holding the 32 raw bytes.
Status WriteKeyFile(const std::string& path, const Key& key);

// Runs the exchange above on a connected, blocking fd. kAuthFailed when the
// peer does not prove the key; other codes for I/O, timeouts or garbage.
// *session (optional) gets the per-connection session secret.
Status Authenticate(int fd, const Key& key, AuthRole role, int64_t deadline_ms,
                    Key* session = nullptr);

// The same, saying whether this end wants sealing; *sealed: whether the
// connection is to be sealed (either end wanted it).
struct AuthResult {
  Key session{};
  bool sealed = false;
};
Status Authenticate(int fd, const Key& key, AuthRole role, int64_t deadline_ms, bool want_seal,
                    AuthResult* result);

// The server side of the same exchange, for an event loop that owns many
// sockets at once: Start sends the hello, then Feed takes what the client
// sent, at most Wanted() bytes at a time (so nothing past the handshake is
// consumed). Never blocks: the server's 40 + 32 bytes fit any fresh socket's
// send buffer, and a socket that cannot take them is refused.
class ServerHandshake {
 public:
  Status Start(int fd, const Key& key, bool want_seal = false);
  size_t Wanted() const { return need_ - have_; }
  // Ok while the exchange goes on or once done(); kAuthFailed for a wrong
  // proof, kMalformed for garbage.
  Status Feed(int fd, const uint8_t* p, size_t n);
  bool done() const { return done_; }
  const Key& session() const { return session_; }
  // Once done(): whether the connection is to be sealed (seal.h).
  bool sealed() const { return sealed_; }

 private:
  Key key_{}, mine_{}, theirs_{}, session_{};
  uint8_t buf_[8 + kKeyBytes] = {};
  size_t have_ = 0, need_ = 0;
  uint8_t flags_ = 0, peer_flags_ = 0;
  bool hello_seen_ = false, done_ = false, sealed_ = false;
};

// HMAC-SHA256(key, data).
Key Hmac(const Key& key, const void* data, size_t n);
// XOR of a and b (wrapping a secret with a session secret; self-inverse).
Key Xor(const Key& a, const Key& b);

}  // namespace svm::svmd
