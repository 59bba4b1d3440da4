// Unit tests of the sealing layer (util/seal.h) and of its use by the
// handshake (the seal flag is proven) and the control framing: a record
// altered, replayed, reordered, dropped or cut never opens, and nothing
// after the first failure does.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "control/frame.h"
#include "util/auth.h"
#include "util/seal.h"

namespace svm::svmd {
namespace {

struct Ends {
  std::unique_ptr<Seal> client, server;
  Ends() {
    Key session;
    EXPECT_TRUE(GenerateKey(&session).ok());
    EXPECT_TRUE(Seal::Make(session, AuthRole::kClient, &client).ok());
    EXPECT_TRUE(Seal::Make(session, AuthRole::kServer, &server).ok());
  }
};

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
  return v;
}

std::vector<uint8_t> SealOne(Sealer& s, const std::vector<uint8_t>& plain) {
  std::vector<uint8_t> rec;
  s.Append(plain.data(), plain.size(), &rec);
  return rec;
}

// Opens rec as a whole record (the opener checks its header against its size).
Status OpenOne(Opener& o, const std::vector<uint8_t>& rec, std::vector<uint8_t>* plain) {
  plain->resize(rec.size() >= kSealOverhead ? rec.size() - kSealOverhead : 0);
  return o.Open(rec.data(), rec.size(), plain->data());
}

TEST(Seal, RoundTripsBothDirectionsAndHidesThePlaintext) {
  Ends e;
  for (size_t n : {size_t(0), size_t(1), size_t(4096), size_t(100000)}) {
    const auto plain = Bytes(n, uint8_t(n));
    auto rec = SealOne(e.client->out, plain);
    ASSERT_EQ(rec.size(), n + kSealOverhead);
    if (n >= 4096) {  // no 16-byte run of the plaintext shows
      EXPECT_EQ(std::search(rec.begin(), rec.end(), plain.begin() + 100, plain.begin() + 116), rec.end());
    }
    std::vector<uint8_t> got;
    ASSERT_TRUE(OpenOne(e.server->in, rec, &got).ok());
    EXPECT_EQ(got, plain);
    rec = SealOne(e.server->out, plain);
    ASSERT_TRUE(OpenOne(e.client->in, rec, &got).ok());
    EXPECT_EQ(got, plain);
  }
}

TEST(Seal, DirectionsHaveTheirOwnKeys) {
  Ends e;
  // A record reflected back to its sender does not open.
  auto rec = SealOne(e.client->out, Bytes(64, 1));
  std::vector<uint8_t> got;
  EXPECT_EQ(OpenOne(e.client->in, rec, &got).code(), Status::Code::kAuthFailed);
}

TEST(Seal, SameBytesSealDifferentlyEachTime) {
  Ends e;
  const auto plain = Bytes(256, 3);
  EXPECT_NE(SealOne(e.client->out, plain), SealOne(e.client->out, plain));
}

TEST(Seal, EveryFlippedBitIsRefused) {
  const auto plain = Bytes(48, 9);
  std::vector<uint8_t> rec;
  {
    Ends probe;
    rec = SealOne(probe.client->out, plain);
  }
  for (size_t bit = 0; bit < rec.size() * 8; bit += 3) {
    Ends e;
    auto r = SealOne(e.client->out, plain);
    r[bit / 8] ^= uint8_t(1u << (bit % 8));
    std::vector<uint8_t> got;
    Status s = OpenOne(e.server->in, r, &got);
    EXPECT_FALSE(s.ok()) << "bit " << bit;
    // After a failure the opener refuses even a good record.
    auto good = SealOne(e.client->out, plain);
    EXPECT_FALSE(OpenOne(e.server->in, good, &got).ok()) << "bit " << bit;
  }
}

TEST(Seal, ReplayIsRefused) {
  Ends e;
  auto rec = SealOne(e.client->out, Bytes(100, 5));
  std::vector<uint8_t> got;
  ASSERT_TRUE(OpenOne(e.server->in, rec, &got).ok());
  EXPECT_EQ(OpenOne(e.server->in, rec, &got).code(), Status::Code::kAuthFailed);
}

TEST(Seal, ReorderIsRefused) {
  Ends e;
  auto first = SealOne(e.client->out, Bytes(100, 1));
  auto second = SealOne(e.client->out, Bytes(100, 2));
  std::vector<uint8_t> got;
  EXPECT_EQ(OpenOne(e.server->in, second, &got).code(), Status::Code::kAuthFailed);
  EXPECT_FALSE(OpenOne(e.server->in, first, &got).ok());
}

TEST(Seal, DroppedRecordIsNoticedAtTheNext) {
  Ends e;
  SealOne(e.client->out, Bytes(100, 1));  // lost in flight
  auto next = SealOne(e.client->out, Bytes(100, 2));
  std::vector<uint8_t> got;
  EXPECT_EQ(OpenOne(e.server->in, next, &got).code(), Status::Code::kAuthFailed);
}

TEST(Seal, TruncatedOrExtendedRecordIsRefused) {
  for (int delta : {-1, -16, -20, +1}) {
    Ends e;
    auto rec = SealOne(e.client->out, Bytes(100, 4));
    if (delta < 0) {
      rec.resize(rec.size() + delta);
    } else {
      rec.push_back(0);
    }
    std::vector<uint8_t> got(rec.size());
    // The header no longer matches the record: refused before any crypto.
    EXPECT_FALSE(e.server->in.Open(rec.data(), rec.size(), got.data()).ok()) << delta;
  }
  // A header that shortens the record (and the tag cut to match) fails the tag.
  Ends e;
  auto rec = SealOne(e.client->out, Bytes(100, 4));
  rec[0] = 90;
  rec.resize(90 + kSealOverhead);
  std::vector<uint8_t> got;
  EXPECT_EQ(OpenOne(e.server->in, rec, &got).code(), Status::Code::kAuthFailed);
}

TEST(Seal, OversizedHeaderIsMalformed) {
  uint8_t h[4] = {0xff, 0xff, 0xff, 0x7f};
  size_t size = 0;
  EXPECT_EQ(Opener::RecordSize(h, kMaxSealedPlain, &size).code(), Status::Code::kMalformed);
}

struct Pair {
  UniqueFd a, b;
  Pair() {
    int fds[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

// Sealing is on when either end asks, and both ends agree.
TEST(Seal, HandshakeAgreesOnSealing) {
  Key k;
  ASSERT_TRUE(GenerateKey(&k).ok());
  for (int want = 0; want < 4; ++want) {
    Pair p;
    AuthResult rc, rs;
    Status server;
    std::thread t([&] { server = Authenticate(p.b.get(), k, AuthRole::kServer, NowMs() + 10000, want & 2, &rs); });
    Status client = Authenticate(p.a.get(), k, AuthRole::kClient, NowMs() + 10000, want & 1, &rc);
    t.join();
    ASSERT_TRUE(client.ok()) << client.ToString();
    ASSERT_TRUE(server.ok()) << server.ToString();
    EXPECT_EQ(rc.sealed, want != 0);
    EXPECT_EQ(rs.sealed, want != 0);
    EXPECT_EQ(rc.session, rs.session);
  }
}

// A man in the middle who clears the client's seal flag in its hello makes
// the proofs disagree: the handshake fails instead of going on in clear.
TEST(Seal, ClearedSealFlagFailsTheProof) {
  Key k;
  ASSERT_TRUE(GenerateKey(&k).ok());
  Pair client_side, server_side;
  AuthResult rc, rs;
  Status client, server;
  std::thread c([&] {
    client = Authenticate(client_side.a.get(), k, AuthRole::kClient, NowMs() + 5000, true, &rc);
  });
  std::thread s([&] {
    server = Authenticate(server_side.b.get(), k, AuthRole::kServer, NowMs() + 5000, false, &rs);
  });
  // The middle: forward both ways, clearing flags byte 6 of the client's hello.
  uint8_t hello[40];
  ASSERT_TRUE(ReadFull(client_side.b.get(), hello, sizeof(hello), NowMs() + 5000).ok());
  ASSERT_EQ(hello[6], 1);
  hello[6] = 0;
  ASSERT_TRUE(WriteAll(server_side.a.get(), hello, sizeof(hello)).ok());
  ASSERT_TRUE(ReadFull(server_side.a.get(), hello, sizeof(hello), NowMs() + 5000).ok());
  ASSERT_TRUE(WriteAll(client_side.b.get(), hello, sizeof(hello)).ok());
  uint8_t proof[32];
  ASSERT_TRUE(ReadFull(client_side.b.get(), proof, sizeof(proof), NowMs() + 5000).ok());
  ASSERT_TRUE(WriteAll(server_side.a.get(), proof, sizeof(proof)).ok());
  s.join();
  server_side.a.reset();  // the server closed; so does the middle
  client_side.b.reset();
  c.join();
  EXPECT_EQ(server.code(), Status::Code::kAuthFailed) << server.ToString();
  EXPECT_FALSE(client.ok());
}

TEST(Seal, ControlFramesTravelSealed) {
  Ends e;
  Pair p;
  const std::string body = "page contents 0123456789abcdef page contents";
  ASSERT_TRUE(SendFrame(p.a.get(), MsgType::kStdin, 7, body, &e.client->out).ok());
  ASSERT_TRUE(SendFrame(p.a.get(), MsgType::kStdin, 7, body, &e.client->out).ok());
  // On the wire: no plaintext.
  std::string wire(2 * (kFrameHeader + body.size() + kSealOverhead), '\0');
  ASSERT_TRUE(ReadFull(p.b.get(), wire.data(), wire.size(), NowMs() + 5000).ok());
  EXPECT_EQ(wire.find("page contents"), std::string::npos);
  // A reader fed byte by byte gets both frames back.
  FrameReader r;
  r.set_opener(&e.server->in);
  std::vector<Frame> got;
  Status err;
  for (char ch : wire) {
    r.Append(&ch, 1);
    Frame f;
    while (r.Next(&f, &err)) got.push_back(f);
    ASSERT_TRUE(err.ok()) << err.ToString();
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].body, body);
  EXPECT_EQ(got[1].epoch, 7u);
  // A third frame with one bit flipped: the reader reports it, no frame.
  std::string third;
  e.client->out.Append(EncodeFrame(MsgType::kStdin, 7, body).data(), kFrameHeader + body.size(), &third);
  third[kSealHeader + 20] ^= 4;
  r.Append(third.data(), third.size());
  Frame f;
  EXPECT_FALSE(r.Next(&f, &err));
  EXPECT_EQ(err.code(), Status::Code::kAuthFailed) << err.ToString();
}

TEST(Seal, RecvFrameRefusesATamperedRecord) {
  Ends e;
  Pair p;
  std::string rec;
  const std::string frame = EncodeFrame(MsgType::kPing, 1, "");
  e.client->out.Append(frame.data(), frame.size(), &rec);
  rec.back() ^= 0x80;  // the tag
  ASSERT_TRUE(WriteAll(p.a.get(), rec.data(), rec.size()).ok());
  Frame f;
  EXPECT_EQ(RecvFrame(p.b.get(), NowMs() + 5000, &f, &e.server->in).code(), Status::Code::kAuthFailed);
}

}  // namespace
}  // namespace svm::svmd
