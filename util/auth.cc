#include "util/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace svm::svmd {
namespace {

constexpr char kMagic[4] = {'S', 'V', 'M', 'A'};
constexpr uint8_t kVersion = 1;
constexpr size_t kHelloBytes = 8 + kKeyBytes;
constexpr char kProofLabel[] = "svm-auth-1";
constexpr char kSessionLabel[] = "svm-session-1";

Key Proof(const Key& key, AuthRole who, const Key& nc, const Key& ns) {
  std::vector<uint8_t> m(kProofLabel, kProofLabel + sizeof(kProofLabel) - 1);
  m.push_back(uint8_t(who));
  m.insert(m.end(), nc.begin(), nc.end());
  m.insert(m.end(), ns.begin(), ns.end());
  return Hmac(key, m.data(), m.size());
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
  Key mine;
  Status s = GenerateKey(&mine);
  if (!s.ok()) return s;
  uint8_t hello[kHelloBytes] = {};
  std::memcpy(hello, kMagic, 4);
  hello[4] = kVersion;
  hello[5] = uint8_t(role);
  std::memcpy(hello + 8, mine.data(), kKeyBytes);
  if (s = WriteAll(fd, hello, sizeof(hello)); !s.ok()) return s;

  uint8_t peer[kHelloBytes];
  if (s = ReadFull(fd, peer, sizeof(peer), deadline_ms); !s.ok()) return s;
  if (std::memcmp(peer, kMagic, 4) != 0) return Status::Malformed("peer is not an svm endpoint (bad magic)");
  if (peer[4] != kVersion)
    return Status::Malformed("peer speaks auth version " + std::to_string(peer[4]));
  AuthRole peer_role = role == AuthRole::kClient ? AuthRole::kServer : AuthRole::kClient;
  if (peer[5] != uint8_t(peer_role)) return Status::Malformed("peer claims the wrong role");
  Key theirs;
  std::memcpy(theirs.data(), peer + 8, kKeyBytes);
  if (theirs == mine) return Status::AuthFailed("peer echoed our nonce");

  const Key& nc = role == AuthRole::kClient ? mine : theirs;
  const Key& ns = role == AuthRole::kClient ? theirs : mine;
  Key my_proof = Proof(key, role, nc, ns);
  Key expected = Proof(key, peer_role, nc, ns);
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
  if (session) {
    std::vector<uint8_t> m(kSessionLabel, kSessionLabel + sizeof(kSessionLabel) - 1);
    m.insert(m.end(), nc.begin(), nc.end());
    m.insert(m.end(), ns.begin(), ns.end());
    *session = Hmac(key, m.data(), m.size());
  }
  return Status::Ok();
}

}  // namespace svm::svmd
