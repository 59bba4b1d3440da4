// The tcp frame codec: round trips, every truncation, every malformation.
#include "nic_ext/tcp/frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace svm::nic::frame {
namespace {

constexpr uint32_t kEpoch = 3;

std::vector<Frame> Samples(const std::vector<uint8_t>& data) {
  std::vector<Frame> v;
  Frame f;
  f.type = Type::kHello; f.node = 2; f.num_nodes = 4; v.push_back(f);
  f = {}; f.type = Type::kSend; f.data = data; v.push_back(f);
  f = {}; f.type = Type::kSend; v.push_back(f);  // empty SEND
  f = {}; f.type = Type::kWrite; f.req = 9; f.region = 1; f.offset = 1ull << 40; f.data = data; v.push_back(f);
  f = {}; f.type = Type::kWriteRuns; f.req = 17; f.region = 3; f.offset = 4096; f.data = data; v.push_back(f);
  f = {}; f.type = Type::kResponse; f.req = 18; f.op = Opcode::kWriteRuns;
  f.status = WcStatus::kRemoteInvalidRequest; v.push_back(f);
  f = {}; f.type = Type::kRead; f.req = 10; f.region = 2; f.offset = 64; f.length = 4096; v.push_back(f);
  f = {}; f.type = Type::kCas; f.req = 11; f.offset = 8; f.compare = 5; f.operand = 6; v.push_back(f);
  f = {}; f.type = Type::kFaa; f.req = 12; f.offset = 16; f.operand = ~0ull; v.push_back(f);
  f = {}; f.type = Type::kLock; f.req = 13; f.lock = 77; v.push_back(f);
  f = {}; f.type = Type::kUnlock; f.req = 14; f.lock = 78; v.push_back(f);
  f = {}; f.type = Type::kResponse; f.req = 15; f.op = Opcode::kRead; f.data = data; v.push_back(f);
  f = {}; f.type = Type::kResponse; f.req = 16; f.op = Opcode::kCas; f.value = 99;
  f.status = WcStatus::kRemoteAccessError; v.push_back(f);
  return v;
}

TEST(FrameTest, RoundTripsEveryTypeAndEveryPrefixNeedsMore) {
  std::vector<uint8_t> data = {1, 2, 3, 4, 5};
  for (const Frame& f : Samples(data)) {
    SCOPED_TRACE(ToString(f.type));
    std::vector<uint8_t> b;
    Encode(f, kEpoch, &b);
    Frame g;
    size_t used = 0;
    std::string err;
    ASSERT_EQ(Decode(b, kEpoch, &g, &used, &err), Decoded::kOk) << err;
    EXPECT_EQ(used, b.size());
    std::vector<uint8_t> again;
    Encode(g, kEpoch, &again);
    EXPECT_EQ(again, b);
    for (size_t n = 0; n < b.size(); ++n) {
      EXPECT_EQ(Decode({b.data(), n}, kEpoch, &g, &used, &err), Decoded::kNeedMore) << n;
    }
    // Followed by more bytes: only the first frame is consumed.
    b.push_back(0xee);
    ASSERT_EQ(Decode(b, kEpoch, &g, &used, &err), Decoded::kOk);
    EXPECT_EQ(used, b.size() - 1);
  }
}

TEST(FrameTest, GatheringEncodersMatchTheGenericOne) {
  uint8_t a[3] = {1, 2, 3}, c[2] = {4, 5};
  Sge sg[2] = {{a, 3}, {c, 2}};
  std::vector<uint8_t> joined = {1, 2, 3, 4, 5}, x, y;
  EncodeSend(kEpoch, sg, &x);
  Frame f;
  f.type = Type::kSend;
  f.data = joined;
  Encode(f, kEpoch, &y);
  EXPECT_EQ(x, y);
  x.clear(), y.clear();
  EncodeWrite(kEpoch, 4, 5, 6, sg, &x);
  f.type = Type::kWrite; f.req = 4; f.region = 5; f.offset = 6;
  Encode(f, kEpoch, &y);
  EXPECT_EQ(x, y);
}

std::vector<uint8_t> Encoded(const Frame& f) {
  std::vector<uint8_t> b;
  Encode(f, kEpoch, &b);
  return b;
}

Decoded DecodeOnly(const std::vector<uint8_t>& b, std::string* err) {
  Frame g;
  size_t used = 0;
  return Decode(b, kEpoch, &g, &used, err);
}

void SetLength(std::vector<uint8_t>* b, uint32_t len) { std::memcpy(b->data() + 8, &len, 4); }

TEST(FrameTest, RejectsBadHeaders) {
  Frame f;
  f.type = Type::kLock;
  const auto good = Encoded(f);
  struct Case {
    const char* what;
    size_t at;
    uint8_t value;
  } cases[] = {{"magic", 0, 'X'}, {"old version", 4, 1}, {"next version", 4, kVersion + 1},
               {"type 0", 5, 0}, {"type 200", 5, 200}, {"reserved", 6, 1}, {"epoch", 12, kEpoch + 1}};
  for (const auto& k : cases) {
    auto b = good;
    b[k.at] = k.value;
    std::string err;
    EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed) << k.what;
    EXPECT_FALSE(err.empty());
    // Detected from the header alone.
    b.resize(kHeaderBytes);
    EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed) << k.what;
  }
  auto b = good;
  b.resize(kHeaderBytes);
  SetLength(&b, kMaxBody + 1);
  std::string err;
  EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed);
}

TEST(FrameTest, RejectsBodiesOfTheWrongShape) {
  std::string err;
  for (Type t : {Type::kHello, Type::kRead, Type::kCas, Type::kFaa, Type::kLock, Type::kUnlock,
                 Type::kWrite, Type::kWriteRuns, Type::kResponse}) {
    Frame f;
    f.type = t;
    f.op = Opcode::kWrite;
    auto b = Encoded(f);
    const uint32_t len = static_cast<uint32_t>(b.size() - kHeaderBytes);
    if (t != Type::kWrite && t != Type::kWriteRuns && t != Type::kResponse) {  // fixed size: longer is bad
      auto longer = b;
      longer.push_back(0);
      SetLength(&longer, len + 1);
      EXPECT_EQ(DecodeOnly(longer, &err), Decoded::kMalformed) << ToString(t);
    }
    auto shorter = b;
    shorter.pop_back();
    SetLength(&shorter, len - 1);
    EXPECT_EQ(DecodeOnly(shorter, &err), Decoded::kMalformed) << ToString(t);
  }
  Frame r;
  r.type = Type::kRead;
  r.length = kMaxTransfer + 1;
  EXPECT_EQ(DecodeOnly(Encoded(r), &err), Decoded::kMalformed);

  uint8_t d[4] = {};
  Frame resp;
  resp.type = Type::kResponse;
  resp.op = Opcode::kCas;
  resp.data = d;  // only READ responses carry data
  EXPECT_EQ(DecodeOnly(Encoded(resp), &err), Decoded::kMalformed);
  resp.data = {};
  auto b = Encoded(resp);
  b[kHeaderBytes + 4] = 0;  // opcode SEND: never answered
  EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed);
  b[kHeaderBytes + 4] = 200;
  EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed);
  b = Encoded(resp);
  b[kHeaderBytes + 5] = 200;  // status
  EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed);
  b = Encoded(resp);
  b[kHeaderBytes + 6] = 1;  // reserved
  EXPECT_EQ(DecodeOnly(b, &err), Decoded::kMalformed);
}

// A small in-test fuzz pass (tests/fuzz/nic_frame_fuzz.cc goes further):
// mutated valid frames and random bytes never crash and never over-consume.
TEST(FrameTest, MutationsNeverMisbehave) {
  std::mt19937_64 rng(12345);
  std::vector<uint8_t> data(40, 0x5a);
  auto samples = Samples(data);
  for (int i = 0; i < 20000; ++i) {
    auto b = Encoded(samples[rng() % samples.size()]);
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) b.resize(rng() % (b.size() + 1));
    Frame g;
    size_t used = 0;
    std::string err;
    if (Decode(b, kEpoch, &g, &used, &err) == Decoded::kOk) {
      ASSERT_LE(used, b.size());
      ASSERT_TRUE(IsValid(g.type));
    }
  }
}

}  // namespace
}  // namespace svm::nic::frame
