#include "util/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace svm::svmd {
namespace {

constexpr char kMagic[4] = {'S', 'V', 'M', 'A'};
constexpr uint8_t kVersion = 2;
constexpr uint8_t kFlagSeal = 1;
constexpr size_t kHelloBytes = 8 + kKeyBytes;
constexpr char kProofLabel[] = "svm-auth-2";
constexpr char kSessionLabel[] = "svm-session-1";

Key Proof(const Key& key, AuthRole who, const Key& nc, const Key& ns, uint8_t fc, uint8_t fs) {
  std::vector<uint8_t> m(kProofLabel, kProofLabel + sizeof(kProofLabel) - 1);
  m.push_back(uint8_t(who));
  m.insert(m.end(), nc.begin(), nc.end());
  m.insert(m.end(), ns.begin(), ns.end());
  m.push_back(fc);
  m.push_back(fs);
  return Hmac(key, m.data(), m.size());
}

Key SessionSecret(const Key& key, const Key& nc, const Key& ns) {
  std::vector<uint8_t> m(kSessionLabel, kSessionLabel + sizeof(kSessionLabel) - 1);
  m.insert(m.end(), nc.begin(), nc.end());
  m.insert(m.end(), ns.begin(), ns.end());
  return Hmac(key, m.data(), m.size());
}

void FillHello(uint8_t* hello, AuthRole role, const Key& nonce, uint8_t flags) {
  std::memset(hello, 0, kHelloBytes);
  std::memcpy(hello, kMagic, 4);
  hello[4] = kVersion;
  hello[5] = uint8_t(role);
  hello[6] = flags;
  std::memcpy(hello + 8, nonce.data(), kKeyBytes);
}

Status CheckHello(const uint8_t* peer, AuthRole peer_role) {
  if (std::memcmp(peer, kMagic, 4) != 0) return Status::Malformed("peer is not an svm endpoint (bad magic)");
  if (peer[4] != kVersion)
    return Status::Malformed("peer speaks auth version " + std::to_string(peer[4]));
  if (peer[5] != uint8_t(peer_role)) return Status::Malformed("peer claims the wrong role");
  if ((peer[6] & ~kFlagSeal) != 0 || peer[7] != 0) return Status::Malformed("peer sets unknown flags");
  return Status::Ok();
}

// All of n bytes at once on a non-blocking send, or an error.
Status SendNow(int fd, const void* p, size_t n) {
  ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w == ssize_t(n)) return Status::Ok();
  if (w < 0) return Status::Errno("send", errno);
  return Status::IoError("send: socket buffer full");
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const char* ToString(AuthRole r) { return r == AuthRole::kClient ? "client" : "server"; }

Key Hmac(const Key& key, const void* data, size_t n) {
  Key out{};
  unsigned len = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), static_cast<const unsigned char*>(data), n,
       out.data(), &len);
  return out;
}

Key Xor(const Key& a, const Key& b) {
  Key r;
  for (size_t i = 0; i < r.size(); ++i) r[i] = a[i] ^ b[i];
  return r;
}

Status GenerateKey(Key* key) {
  size_t got = 0;
  while (got < key->size()) {
    ssize_t r = getrandom(key->data() + got, key->size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::Errno("getrandom", errno);
    }
    got += size_t(r);
  }
  return Status::Ok();
}

Status LoadKeyFromFd(int fd, Key* key) {
  Status s = ReadFull(fd, key->data(), key->size(), NowMs() + 10000);
  if (!s.ok()) return Status::IoError("reading the job key from fd " + std::to_string(fd) + ": " +
                                      s.message());
  return Status::Ok();
}

Status LoadKeyFromFile(const std::string& path, Key* key) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Status::Errno("key file " + path, errno);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Status::Errno("key file " + path, errno);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("key file " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
    return Status::InvalidArgument("key file " + path + " has mode " + mode +
                                   ": it must not be accessible by group or others (chmod 600)");
  }
  char buf[256];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n < 0) return Status::Errno("key file " + path, errno);
  if (n == ssize_t(kKeyBytes)) {
    std::memcpy(key->data(), buf, kKeyBytes);
    return Status::Ok();
  }
  // Hex form: 64 digits, then only whitespace.
  size_t len = size_t(n);
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ')) --len;
  if (len == 2 * kKeyBytes) {
    bool ok = true;
    for (size_t i = 0; i < kKeyBytes && ok; ++i) {
      int hi = HexVal(buf[2 * i]), lo = HexVal(buf[2 * i + 1]);
      ok = hi >= 0 && lo >= 0;
      (*key)[i] = uint8_t(hi << 4 | lo);
    }
    if (ok) return Status::Ok();
  }
  return Status::InvalidArgument("key file " + path +
                                 " must hold 32 raw bytes or 64 hex digits");
}

Status WriteKeyFile(const std::string& path, const Key& key) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Status::Errno("create key file " + path, errno);
  fchmod(fd.get(), 0600);
  return WriteAll(fd.get(), key.data(), key.size());
}

Status Authenticate(int fd, const Key& key, AuthRole role, int64_t deadline_ms, Key* session) {
  AuthResult r;
  Status s = Authenticate(fd, key, role, deadline_ms, false, &r);
  if (s.ok() && session) *session = r.session;
  return s;
}

Status Authenticate(int fd, const Key& key, AuthRole role, int64_t deadline_ms, bool want_seal,
                    AuthResult* result) {
  Key mine;
  Status s = GenerateKey(&mine);
  if (!s.ok()) return s;
  const uint8_t my_flags = want_seal ? kFlagSeal : 0;
  uint8_t hello[kHelloBytes];
  FillHello(hello, role, mine, my_flags);
  if (s = WriteAll(fd, hello, sizeof(hello)); !s.ok()) return s;

  uint8_t peer[kHelloBytes];
  if (s = ReadFull(fd, peer, sizeof(peer), deadline_ms); !s.ok()) return s;
  AuthRole peer_role = role == AuthRole::kClient ? AuthRole::kServer : AuthRole::kClient;
  if (s = CheckHello(peer, peer_role); !s.ok()) return s;
  Key theirs;
  std::memcpy(theirs.data(), peer + 8, kKeyBytes);
  if (theirs == mine) return Status::AuthFailed("peer echoed our nonce");

  const Key& nc = role == AuthRole::kClient ? mine : theirs;
  const Key& ns = role == AuthRole::kClient ? theirs : mine;
  const uint8_t fc = role == AuthRole::kClient ? my_flags : peer[6];
  const uint8_t fs = role == AuthRole::kClient ? peer[6] : my_flags;
  Key my_proof = Proof(key, role, nc, ns, fc, fs);
  Key expected = Proof(key, peer_role, nc, ns, fc, fs);
  Key got;
  if (role == AuthRole::kClient) {
    if (s = WriteAll(fd, my_proof.data(), my_proof.size()); !s.ok()) return s;
    s = ReadFull(fd, got.data(), got.size(), deadline_ms);
    if (s.code() == Status::Code::kClosed)
      return Status::AuthFailed("the server refused our key (connection closed)");
    if (!s.ok()) return s;
    if (CRYPTO_memcmp(got.data(), expected.data(), got.size()) != 0)
      return Status::AuthFailed("the server did not prove the key");
  } else {
    if (s = ReadFull(fd, got.data(), got.size(), deadline_ms); !s.ok()) return s;
    if (CRYPTO_memcmp(got.data(), expected.data(), got.size()) != 0)
      return Status::AuthFailed("the client did not prove the key");
    if (s = WriteAll(fd, my_proof.data(), my_proof.size()); !s.ok()) return s;
  }
  result->session = SessionSecret(key, nc, ns);
  result->sealed = ((fc | fs) & kFlagSeal) != 0;
  return Status::Ok();
}

Status ServerHandshake::Start(int fd, const Key& key, bool want_seal) {
  key_ = key;
  flags_ = want_seal ? kFlagSeal : 0;
  if (Status s = GenerateKey(&mine_); !s.ok()) return s;
  uint8_t hello[kHelloBytes];
  FillHello(hello, AuthRole::kServer, mine_, flags_);
  need_ = kHelloBytes;
  return SendNow(fd, hello, sizeof(hello));
}

Status ServerHandshake::Feed(int fd, const uint8_t* p, size_t n) {
  if (done_ || n > Wanted()) return Status::Malformed("handshake: more bytes than asked for");
  std::memcpy(buf_ + have_, p, n);
  have_ += n;
  if (have_ < need_) return Status::Ok();
  if (!hello_seen_) {
    if (Status s = CheckHello(buf_, AuthRole::kClient); !s.ok()) return s;
    std::memcpy(theirs_.data(), buf_ + 8, kKeyBytes);
    peer_flags_ = buf_[6];
    if (theirs_ == mine_) return Status::AuthFailed("peer echoed our nonce");
    hello_seen_ = true;
    have_ = 0;
    need_ = kKeyBytes;
    return Status::Ok();
  }
  const Key expected = Proof(key_, AuthRole::kClient, theirs_, mine_, peer_flags_, flags_);
  if (CRYPTO_memcmp(buf_, expected.data(), kKeyBytes) != 0)
    return Status::AuthFailed("the client did not prove the key");
  const Key proof = Proof(key_, AuthRole::kServer, theirs_, mine_, peer_flags_, flags_);
  if (Status s = SendNow(fd, proof.data(), proof.size()); !s.ok()) return s;
  session_ = SessionSecret(key_, theirs_, mine_);
  sealed_ = ((flags_ | peer_flags_) & kFlagSeal) != 0;
  done_ = true;
  return Status::Ok();
}

}  // namespace svm::svmd
