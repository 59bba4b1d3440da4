// Tests of the wire codecs (protocol/wire.h) and the byte helpers under them
// (util/coding.h).
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "util/coding.h"
#include "protocol/stats.h"

namespace svm::wire {
namespace {

constexpr uint32_t kEpoch = 7;
constexpr uint32_t kNodes = 3;

using Bytes = std::vector<uint8_t>;

VectorTime Vt(std::vector<IntervalId> entries) { return VectorTime(std::move(entries)); }

// At least two messages of every type, for kNodes nodes: one representative,
// one at the edges (empty lists, zero and maximal values).
std::vector<Message> Samples() {
  Bytes page(4096);
  for (size_t i = 0; i < page.size(); ++i) page[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<WriteNotice> notices = {
      {0, 1, {1, 2, 3}},
      {2, 9, {}},
      {1, UINT32_MAX, {UINT64_MAX, 0}},
  };
  return {
      FetchRequest{42, Vt({1, 0, 5})},
      FetchRequest{UINT64_MAX, Vt({UINT32_MAX, 0, 0}), kMaxPageRun},
      FetchRequest{8, Vt({0, 1, 0}), 16, kMaxPageStride},
      FetchRequest{8, Vt({0, 1, 0}), kMaxPageRun, 1, UINT64_MAX},
      PageReply{7, {Vt({3, 2, 1})}, page},
      PageReply{0, {Vt({0, 0, 0})}, {}},
      PageReply{9, {Vt({3, 2, 1}), Vt({0, 0, 4})}, Bytes(2 * page.size(), 0x11)},
      PageReply{9, {Vt({3, 2, 1}), Vt({0, 0, 4})}, Bytes(2 * page.size(), 0x12), 16},
      DiffMessage{9, 4, {0, 0, 0, 0, 3, 0, 0, 0, 0xaa, 0xbb, 0xcc}},
      DiffMessage{UINT64_MAX, UINT32_MAX, {}},
      LockRequest{0xdeadbeef, 2, false, Vt({1, 2, 3})},
      LockRequest{UINT64_MAX, 0, true, Vt({0, 0, 0})},
      LockGrant{5, Vt({4, 4, 4}), notices},
      LockGrant{0, Vt({0, 0, 0}), {}},
      BarrierArrive{1, 2, 8, Vt({3, 1, 2}), {{1, 3, {10, 11}}}, Vt({2, 0, 2}), 1},
      BarrierArrive{UINT64_MAX, UINT32_MAX, UINT32_MAX, Vt({0, 0, 0}), {}, Vt({0, 0, 0}), UINT32_MAX},
      BarrierRelease{2, Vt({9, 9, 9}), true, notices, true, UINT64_MAX},
      BarrierRelease{0, Vt({0, 0, 0}), false, {}},
      HomeClaim{123},
      HomeClaim{UINT64_MAX, kMaxPageRun - 1},
      HomeReply{123, 2, kMaxPageRun - 1},
      HomeReply{0, 0},
      SpawnRequest{0x5356000100000002, 0x401136, 0x7fffffffe000},
      SpawnReply{1, 11},
      JoinRequest{UINT64_MAX},
      JoinReply{2, UINT64_MAX},
      DetachRequest{3},
      RemoteFree{{0x600000000000, 0x600000001040}},
      RemoteFree{{}},
      SyncWake{0x200000001000},
      MarksDropped{{3, UINT64_MAX}},
  };
}

std::string Name(const Message& m) { return ToString(TypeOf(m)); }

Status DecodeBytes(const Bytes& b, uint32_t epoch = kEpoch, uint32_t nodes = kNodes,
                   Message* out = nullptr) {
  Message scratch;
  return Decode(b, epoch, nodes, out ? out : &scratch);
}

// A whole message with the given header fields and body written by `body`;
// the length field says exactly how many body bytes follow.
Bytes Raw(MessageType type, const std::function<void(coding::Writer&)>& body,
          uint32_t epoch = kEpoch) {
  Bytes out;
  coding::Writer w(&out);
  w.PutU32(kMagic);
  w.PutU16(kVersion);
  w.PutU16(static_cast<uint16_t>(type));
  w.PutU32(0);
  w.PutU32(epoch);
  body(w);
  w.PatchU32(8, static_cast<uint32_t>(out.size() - kHeaderBytes));
  return out;
}

void SetLength(Bytes* b, uint32_t length) { coding::EncodeFixed(b->data() + 8, length); }

TEST(Wire, SamplesCoverEveryType) {
  std::set<MessageType> seen;
  for (const Message& m : Samples()) seen.insert(TypeOf(m));
  EXPECT_EQ(seen.size(), kMessageTypeCount);
}

TEST(Wire, RoundTripEveryType) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    Bytes b = Encode(m, kEpoch);
    Header h;
    ASSERT_TRUE(DecodeHeader(b, &h).ok());
    EXPECT_EQ(h.version, kVersion);
    EXPECT_EQ(h.type, TypeOf(m));
    EXPECT_EQ(h.length, b.size() - kHeaderBytes);
    EXPECT_EQ(h.epoch, kEpoch);
    Message got;
    Status s = DecodeBytes(b, kEpoch, kNodes, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(got == m);
    EXPECT_EQ(Encode(got, kEpoch), b);  // one encoding per message
  }
}

TEST(Wire, RoundTripEpochAndNodeExtremes) {
  for (uint32_t nodes : {0u, 1u, kMaxNodes}) {
    SCOPED_TRACE(nodes);
    VectorTime v(nodes);
    if (nodes > 0) v[nodes - 1] = UINT32_MAX;
    std::vector<WriteNotice> notices;
    if (nodes > 0) notices.push_back({nodes - 1, 1, {5}});
    for (const Message& m : std::vector<Message>{FetchRequest{1, v}, LockGrant{2, v, notices}}) {
      for (uint32_t epoch : {0u, UINT32_MAX}) {
        Message got;
        Status s = DecodeBytes(Encode(m, epoch), epoch, nodes, &got);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_TRUE(got == m);
      }
    }
  }
}

TEST(Wire, EncodeAppends) {
  Bytes out = {0xee, 0xee};
  Message a = HomeClaim{1};
  Message b = HomeReply{2, 1};
  Encode(a, kEpoch, &out);
  size_t mid = out.size();
  Encode(b, kEpoch, &out);
  EXPECT_EQ(out[0], 0xee);
  EXPECT_EQ(Bytes(out.begin() + 2, out.begin() + mid), Encode(a, kEpoch));
  Message got;
  ASSERT_TRUE(Decode(std::span(out).subspan(mid), kEpoch, kNodes, &got).ok());
  EXPECT_TRUE(got == b);
}

TEST(Wire, GoldenHomeReply) {
  Bytes want = {
      0x53, 0x56, 0x4d, 0x31,  // magic "SVM1"
      0x05, 0x00,              // version 5
      0x09, 0x00,              // type home-reply
      0x10, 0x00, 0x00, 0x00,  // body length 16
      0x07, 0x00, 0x00, 0x00,  // epoch 7
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // page
      0x02, 0x00, 0x00, 0x00,                          // home
      0x05, 0x00, 0x00, 0x00,                          // same
  };
  EXPECT_EQ(Encode(HomeReply{0x0102030405060708, 2, 5}, 7), want);
}

TEST(Wire, GoldenHomeClaim) {
  Bytes want = {
      0x53, 0x56, 0x4d, 0x31, 0x05, 0x00, 0x08, 0x00,  // magic, version, home-claim
      0x0c, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,  // body length 12, epoch 7
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // page
      0x3f, 0x00, 0x00, 0x00,                          // ahead
  };
  EXPECT_EQ(Encode(HomeClaim{0x0102030405060708, 63}, 7), want);
}

TEST(Wire, GoldenLockRequest) {
  Bytes want = {
      0x53, 0x56, 0x4d, 0x31, 0x05, 0x00, 0x04, 0x00,  // magic, version, lock-request
      0x1d, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,  // body length 29, epoch 7
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // lock
      0x01, 0x00, 0x00, 0x00,                          // requester
      0x01,                                            // forwarded
      0x03, 0x00, 0x00, 0x00,                          // known: 3 entries
      0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
  };
  EXPECT_EQ(Encode(LockRequest{0x1122334455667788, 1, true, Vt({5, 0, 2})}, 7), want);
}

TEST(Wire, GoldenLockGrantWithNotice) {
  Bytes want = {
      0x53, 0x56, 0x4d, 0x31, 0x05, 0x00, 0x05, 0x00,  // magic, version, lock-grant
      0x38, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,  // body length 56, epoch 7
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // lock
      0x03, 0x00, 0x00, 0x00,                          // timestamp: 3 entries
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x01, 0x00, 0x00, 0x00,                          // 1 notice
      0x00, 0x00, 0x00, 0x00,                          //   node 0
      0x01, 0x00, 0x00, 0x00,                          //   interval 1
      0x02, 0x00, 0x00, 0x00,                          //   2 pages
      0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   page 0x10
      0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   page 0x11
  };
  EXPECT_EQ(Encode(LockGrant{1, Vt({1, 0, 0}), {{0, 1, {0x10, 0x11}}}}, 7), want);
}

// DecodeReusing into one Message, message after message in every order of
// types, decodes what Decode does; the page reply's storage is kept (the
// fault path allocates nothing per reply), and truncations are refused.
TEST(Wire, DecodeReusingMatchesDecodeAndKeepsStorage) {
  const std::vector<Message> samples = Samples();
  Message scratch;
  for (int round = 0; round < 2; ++round) {
    for (const Message& m : samples) {
      SCOPED_TRACE(Name(m));
      const Bytes b = Encode(m, kEpoch);
      ASSERT_TRUE(DecodeReusing(b, kEpoch, kNodes, &scratch).ok());
      EXPECT_TRUE(scratch == m);
      const Bytes cut(b.begin(), b.end() - 1);
      Message failed = scratch;
      EXPECT_FALSE(DecodeReusing(cut, kEpoch, kNodes, &failed).ok());
    }
  }
  PageReply big{4, {VectorTime(std::vector<IntervalId>{1, 2, 3}), VectorTime(std::vector<IntervalId>{4, 5, 6})},
                Bytes(2 * 4096, 0xab)};
  ASSERT_TRUE(DecodeReusing(Encode(Message(big), kEpoch), kEpoch, kNodes, &scratch).ok());
  const uint8_t* data = std::get<PageReply>(scratch).data.data();
  const IntervalId* time = std::get<PageReply>(scratch).versions[1].entries().data();
  big.data.assign(4096, 0xcd);  // a shorter reply after a longer one
  big.versions[1][2] = 9;
  ASSERT_TRUE(DecodeReusing(Encode(Message(big), kEpoch), kEpoch, kNodes, &scratch).ok());
  EXPECT_TRUE(scratch == Message(big));
  EXPECT_EQ(std::get<PageReply>(scratch).data.data(), data);
  EXPECT_EQ(std::get<PageReply>(scratch).versions[1].entries().data(), time);
}

// A home encodes its replies from the frames; the bytes are those of the
// PageReply with the frames copied together.
TEST(Wire, PageReplyFromFramesEncodesAsThePageReply) {
  for (size_t pages : {0, 1, 3}) {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<std::span<const uint8_t>> views;
    PageReply reply{77, {}, {}, 3};
    for (size_t i = 0; i < pages; ++i) {
      frames.emplace_back(4096, uint8_t(0x10 + i));
      frames.back()[i] = 0xee;
      reply.data.insert(reply.data.end(), frames.back().begin(), frames.back().end());
      reply.versions.push_back(VectorTime(std::vector<IntervalId>{uint32_t(i), 2, 3}));
    }
    for (const auto& f : frames) views.emplace_back(f);
    std::vector<uint8_t> out = {1, 2};  // appended to what is there
    EncodePageReply(77, 3, reply.versions, views, kEpoch, &out);
    std::vector<uint8_t> want = {1, 2};
    Encode(Message(reply), kEpoch, &want);
    EXPECT_EQ(out, want) << pages;
  }
}

// A page reply decoded without copying its data: the same head as Decode's,
// the data a view of the bytes; the head's own data untouched. Anything
// else, or a page reply cut short, is refused.
TEST(Wire, PageReplyViewDecodesAsDecodeWithoutCopying) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    const Bytes b = Encode(m, kEpoch);
    PageReply head;
    head.data = {9, 9};
    std::span<const uint8_t> data;
    const Status st = DecodePageReplyView(b, kEpoch, kNodes, &head, &data);
    const auto* reply = std::get_if<PageReply>(&m);
    if (reply == nullptr) {
      EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(head.page, reply->page);
    EXPECT_EQ(head.stride, reply->stride);
    EXPECT_EQ(head.versions, reply->versions);
    EXPECT_EQ(Bytes(data.begin(), data.end()), reply->data);
    EXPECT_TRUE(data.empty() || (data.data() >= b.data() && data.data() + data.size() <= b.data() + b.size()));
    EXPECT_EQ(head.data, (Bytes{9, 9}));
    for (size_t n = 0; n < b.size(); ++n)
      EXPECT_FALSE(DecodePageReplyView(std::span(b.data(), n), kEpoch, kNodes, &head, &data).ok()) << n;
  }
}

TEST(Wire, EveryTruncationRejected) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    Bytes b = Encode(m, kEpoch);
    for (size_t n = 0; n < b.size(); ++n) {
      Bytes cut(b.begin(), b.begin() + n);
      EXPECT_FALSE(DecodeBytes(cut).ok()) << "prefix " << n;
      // Also with the length field fixed up, so that the body's own bounds
      // checks (not the length check) must catch it.
      if (n >= kHeaderBytes) {
        SetLength(&cut, static_cast<uint32_t>(n - kHeaderBytes));
        EXPECT_FALSE(DecodeBytes(cut).ok()) << "body prefix " << n;
      }
    }
  }
}

TEST(Wire, TrailingBytesRejected) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    Bytes b = Encode(m, kEpoch);
    b.push_back(0);
    EXPECT_FALSE(DecodeBytes(b).ok());  // length field disagrees
    SetLength(&b, static_cast<uint32_t>(b.size() - kHeaderBytes));
    Status s = DecodeBytes(b);  // length agrees; the body has a spare byte
    EXPECT_EQ(s.code(), Status::Code::kMalformed) << s.ToString();
  }
}

TEST(Wire, HeaderByteCorruptionRejected) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    const Bytes b = Encode(m, kEpoch);
    for (size_t i = 0; i < kHeaderBytes; ++i) {
      for (uint8_t x : {0x01, 0x02, 0x80, 0xff}) {
        Bytes c = b;
        c[i] ^= x;
        Message out = HomeClaim{999};
        const bool ok = DecodeBytes(c, kEpoch, kNodes, &out).ok();
        if (ok && (i == 6 || i == 7)) {
          // Types whose bodies share a layout (e.g. join and detach requests)
          // cannot be told apart without a checksum; TCP guards integrity.
          EXPECT_NE(TypeOf(out), TypeOf(m)) << "byte " << i << " ^ " << +x;
          continue;
        }
        EXPECT_FALSE(ok) << "byte " << i << " ^ " << +x;
        EXPECT_TRUE(out == Message(HomeClaim{999}));  // untouched on failure
      }
    }
  }
}

TEST(Wire, HeaderErrors) {
  Bytes b = Encode(HomeClaim{1}, kEpoch);
  Header h;
  EXPECT_EQ(DecodeHeader(std::span(b).first(kHeaderBytes - 1), &h).code(),
            Status::Code::kMalformed);
  EXPECT_TRUE(DecodeHeader(std::span(b).first(kHeaderBytes), &h).ok());

  Bytes v = b;
  v[4] = kVersion + 1;
  EXPECT_EQ(DecodeHeader(v, &h).code(), Status::Code::kUnsupported);

  for (uint16_t type : {uint16_t{0}, uint16_t{kMessageTypeCount + 1}, uint16_t{0xffff}}) {
    Bytes t = b;
    coding::EncodeFixed(t.data() + 6, type);
    EXPECT_EQ(DecodeHeader(t, &h).code(), Status::Code::kMalformed) << type;
  }

  Bytes l = b;
  SetLength(&l, kMaxBodyBytes);
  ASSERT_TRUE(DecodeHeader(l, &h).ok());
  EXPECT_EQ(h.length, kMaxBodyBytes);
  SetLength(&l, kMaxBodyBytes + 1);
  EXPECT_EQ(DecodeHeader(l, &h).code(), Status::Code::kOutOfRange);
  SetLength(&l, UINT32_MAX);
  EXPECT_EQ(DecodeHeader(l, &h).code(), Status::Code::kOutOfRange);
}

TEST(Wire, WrongEpochRejected) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    Bytes b = Encode(m, kEpoch);
    EXPECT_FALSE(DecodeBytes(b, kEpoch + 1).ok());
    EXPECT_FALSE(DecodeBytes(b, 0).ok());
    EXPECT_FALSE(DecodeBytes(Encode(m, UINT32_MAX), kEpoch).ok());
  }
}

TEST(Wire, WrongNodeCountRejected) {
  for (const Message& m : Samples()) {
    SCOPED_TRACE(Name(m));
    Bytes b = Encode(m, kEpoch);
    const MessageType t = TypeOf(m);
    bool has_vector = IsProtocolMessage(t) && t != MessageType::kDiff && t != MessageType::kHomeClaim &&
                      t != MessageType::kHomeReply && t != MessageType::kMarksDropped;
    const auto* reply = std::get_if<HomeReply>(&m);
    if (has_vector) {
      EXPECT_FALSE(DecodeBytes(b, kEpoch, kNodes + 1).ok());
    }
    if (has_vector || (reply && reply->home == kNodes - 1)) {
      EXPECT_FALSE(DecodeBytes(b, kEpoch, kNodes - 1).ok());
    }
  }
  // The vector bound applies before anything else.
  Status s = DecodeBytes(Encode(HomeClaim{1}, kEpoch), kEpoch, kMaxNodes + 1);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
}

TEST(Wire, NodeIdsBounded) {
  EXPECT_FALSE(DecodeBytes(Encode(HomeReply{1, kNodes}, kEpoch)).ok());
  EXPECT_FALSE(DecodeBytes(Encode(LockRequest{1, kNodes, false, Vt({0, 0, 0})}, kEpoch)).ok());
  EXPECT_FALSE(DecodeBytes(Encode(LockGrant{1, Vt({0, 0, 0}), {{kNodes, 1, {}}}}, kEpoch)).ok());
  EXPECT_FALSE(
      DecodeBytes(Encode(BarrierArrive{1, 1, 1, Vt({0, 0, 0}), {{UINT32_MAX, 1, {}}}, Vt({0, 0, 0}), 1},
                         kEpoch))
          .ok());
  EXPECT_FALSE(
      DecodeBytes(Encode(BarrierRelease{1, Vt({0, 0, 0}), false, {{0, 1, {}}, {kNodes, 2, {}}}},
                         kEpoch))
          .ok());
}

TEST(Wire, BoolsMustBeZeroOrOne) {
  // LockRequest: forwarded is at body offset 12.
  Bytes lr = Encode(LockRequest{1, 0, true, Vt({0, 0, 0})}, kEpoch);
  ASSERT_EQ(lr[kHeaderBytes + 12], 1);
  for (uint8_t v : {2, 0x80, 0xff}) {
    lr[kHeaderBytes + 12] = v;
    EXPECT_FALSE(DecodeBytes(lr).ok()) << +v;
  }
  // BarrierRelease: collect after barrier and the vector.
  Bytes br = Encode(BarrierRelease{1, Vt({0, 0, 0}), true, {}}, kEpoch);
  size_t collect = kHeaderBytes + 8 + 4 + 4 * kNodes;
  ASSERT_EQ(br[collect], 1);
  br[collect] = 3;
  EXPECT_FALSE(DecodeBytes(br).ok());
}

TEST(Wire, OversizedVectorCountsRejected) {
  // A vector of kMaxNodes + 1 entries, all present, against a job of
  // kMaxNodes nodes.
  Bytes big = Raw(MessageType::kFetchRequest, [](coding::Writer& w) {
    w.PutU64(1);
    w.PutU32(kMaxNodes + 1);
    for (uint32_t i = 0; i <= kMaxNodes; ++i) w.PutU32(0);
  });
  EXPECT_FALSE(DecodeBytes(big, kEpoch, kMaxNodes).ok());
  // A huge count with nothing behind it.
  for (uint32_t count : {kNodes + 1, kMaxNodes, UINT32_MAX}) {
    Bytes b = Raw(MessageType::kFetchRequest, [count](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(count);
      w.PutU32(0);
    });
    EXPECT_FALSE(DecodeBytes(b).ok()) << count;
  }
}

// A page run is 1..kMaxPageRun pages, asked for and answered.
TEST(Wire, PageRunCountsBounded) {
  auto vector = [](coding::Writer& w) {
    w.PutU32(kNodes);
    for (uint32_t i = 0; i < kNodes; ++i) w.PutU32(0);
  };
  for (uint32_t count : {0u, 1u, kMaxPageRun, kMaxPageRun + 1, UINT32_MAX}) {
    const bool valid = count >= 1 && count <= kMaxPageRun;
    Bytes fetch = Raw(MessageType::kFetchRequest, [&](coding::Writer& w) {
      w.PutU64(1);
      vector(w);
      w.PutU32(count);
      w.PutU32(1);
      w.PutU64(0);
    });
    EXPECT_EQ(DecodeBytes(fetch).ok(), valid) << count;
    Bytes reply = Raw(MessageType::kPageReply, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(1);
      w.PutU32(count);
      for (uint32_t i = 0; i < std::min(count, kMaxPageRun + 1); ++i) vector(w);
      w.PutU32(0);
    });
    EXPECT_EQ(DecodeBytes(reply).ok(), valid) << count;
  }
}

// A home claim asks for fewer pages ahead than a run, and a reply names
// fewer pages with the same home.
TEST(Wire, HomeClaimSpansBounded) {
  for (uint32_t n : {0u, kMaxPageRun - 1, kMaxPageRun, UINT32_MAX}) {
    const bool valid = n < kMaxPageRun;
    Bytes claim = Raw(MessageType::kHomeClaim, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(n);
    });
    EXPECT_EQ(DecodeBytes(claim).ok(), valid) << n;
    Bytes reply = Raw(MessageType::kHomeReply, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(0);
      w.PutU32(n);
    });
    EXPECT_EQ(DecodeBytes(reply).ok(), valid) << n;
  }
}

// A run's pages are 1..kMaxPageStride apart, asked for and answered.
TEST(Wire, PageRunStridesBounded) {
  for (uint32_t stride : {0u, 1u, 2u, kMaxPageStride, kMaxPageStride + 1, UINT32_MAX}) {
    const bool valid = stride >= 1 && stride <= kMaxPageStride;
    Bytes fetch = Raw(MessageType::kFetchRequest, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(kNodes);
      for (uint32_t i = 0; i < kNodes; ++i) w.PutU32(0);
      w.PutU32(2);
      w.PutU32(stride);
      w.PutU64(0);
    });
    EXPECT_EQ(DecodeBytes(fetch).ok(), valid) << stride;
    Bytes reply = Raw(MessageType::kPageReply, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(stride);
      w.PutU32(1);
      w.PutU32(kNodes);
      for (uint32_t i = 0; i < kNodes; ++i) w.PutU32(0);
      w.PutU32(0);
    });
    EXPECT_EQ(DecodeBytes(reply).ok(), valid) << stride;
  }
}

TEST(Wire, OversizedListCountsRejected) {
  auto vector = [](coding::Writer& w) {
    w.PutU32(kNodes);
    for (uint32_t i = 0; i < kNodes; ++i) w.PutU32(0);
  };
  for (uint32_t count : {1u, 2u, 0x10000u, UINT32_MAX}) {
    SCOPED_TRACE(count);
    // Notice count: one notice (12 bytes) fits only if count == 1.
    Bytes notices = Raw(MessageType::kLockGrant, [&](coding::Writer& w) {
      w.PutU64(1);
      vector(w);
      w.PutU32(count);
      w.PutU32(0);
      w.PutU32(1);
      w.PutU32(0);
    });
    EXPECT_EQ(DecodeBytes(notices).ok(), count == 1);
    // Page count: one page follows.
    Bytes pages = Raw(MessageType::kBarrierRelease, [&](coding::Writer& w) {
      w.PutU64(1);
      vector(w);
      w.PutU8(0);
      w.PutU32(1);
      w.PutU32(0);
      w.PutU32(1);
      w.PutU32(count);
      w.PutU64(5);
      w.PutU8(0);   // serial
      w.PutU64(1);  // covers
    });
    EXPECT_EQ(DecodeBytes(pages).ok(), count == 1);
    // Byte string length: one byte follows.
    Bytes data = Raw(MessageType::kPageReply, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(1);  // stride
      w.PutU32(1);  // one version
      vector(w);
      w.PutU32(count);
      w.PutU8(0xab);
    });
    EXPECT_EQ(DecodeBytes(data).ok(), count == 1);
    Bytes runs = Raw(MessageType::kDiff, [&](coding::Writer& w) {
      w.PutU64(1);
      w.PutU32(1);
      w.PutU32(count);
      w.PutU8(0xab);
    });
    EXPECT_EQ(DecodeBytes(runs).ok(), count == 1);
  }
}

// Random corruptions of valid encodings: decoding must never misbehave (the
// sanitizer build checks that), and whatever decodes must re-encode to the
// very same bytes.
TEST(Wire, RandomCorruptionsDecodeCanonicallyOrFail) {
  std::mt19937 rng(12345);
  std::vector<Message> samples = Samples();
  int decoded = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes b = Encode(samples[rng() % samples.size()], kEpoch);
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0: b[at] = static_cast<uint8_t>(rng()); break;
        case 1: b.erase(b.begin() + static_cast<std::ptrdiff_t>(at)); break;
        case 2: b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng())); break;
      }
      if (b.empty()) b.push_back(0);
    }
    if (rng() % 2 && b.size() >= kHeaderBytes)
      SetLength(&b, static_cast<uint32_t>(b.size() - kHeaderBytes));
    Message m;
    if (!DecodeBytes(b, kEpoch, kNodes, &m).ok()) continue;
    ++decoded;
    ASSERT_EQ(Encode(m, kEpoch), b) << "iteration " << iter;
  }
  EXPECT_GT(decoded, 0);
}

TEST(MessageType, ToStringAndIsValid) {
  std::set<std::string> names;
  for (uint16_t code = 1; code <= kMessageTypeCount; ++code) {
    auto t = static_cast<MessageType>(code);
    EXPECT_TRUE(IsValid(t));
    EXPECT_STRNE(ToString(t), "?");
    names.insert(ToString(t));
  }
  EXPECT_EQ(names.size(), kMessageTypeCount);
  EXPECT_FALSE(IsValid(static_cast<MessageType>(0)));
  EXPECT_FALSE(IsValid(static_cast<MessageType>(kMessageTypeCount + 1)));
  EXPECT_STREQ(ToString(static_cast<MessageType>(0)), "?");
  EXPECT_STREQ(ToString(MessageType::kLockGrant), "lock-grant");
}

TEST(HandlerKind, OfMessageType) {
  EXPECT_EQ(HandlerKindOf(MessageType::kFetchRequest), HandlerKind::kFetch);
  EXPECT_EQ(HandlerKindOf(MessageType::kPageReply), HandlerKind::kFetch);
  EXPECT_EQ(HandlerKindOf(MessageType::kDiff), HandlerKind::kDiff);
  EXPECT_EQ(HandlerKindOf(MessageType::kLockRequest), HandlerKind::kLock);
  EXPECT_EQ(HandlerKindOf(MessageType::kLockGrant), HandlerKind::kLock);
  EXPECT_EQ(HandlerKindOf(MessageType::kBarrierArrive), HandlerKind::kBarrier);
  EXPECT_EQ(HandlerKindOf(MessageType::kBarrierRelease), HandlerKind::kBarrier);
  EXPECT_EQ(HandlerKindOf(MessageType::kHomeClaim), HandlerKind::kDirectory);
  EXPECT_EQ(HandlerKindOf(MessageType::kHomeReply), HandlerKind::kDirectory);
  std::set<std::string> names;
  for (size_t k = 0; k < kHandlerKindCount; ++k) names.insert(ToString(static_cast<HandlerKind>(k)));
  EXPECT_EQ(names.size(), kHandlerKindCount);
  EXPECT_EQ(names.count("?"), 0u);
}

TEST(Coding, FixedWidthLittleEndian) {
  Bytes out;
  coding::Writer w(&out);
  w.PutU8(0x01);
  w.PutU16(0x0302);
  w.PutU32(0x07060504);
  w.PutU64(0x0f0e0d0c0b0a0908);
  w.PutLengthPrefixed(Bytes{0xaa, 0xbb});
  EXPECT_EQ(out, (Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 2, 0, 0, 0, 0xaa, 0xbb}));

  coding::Reader r(out);
  uint8_t a;
  uint16_t b;
  uint32_t c;
  uint64_t d;
  std::span<const uint8_t> s;
  ASSERT_TRUE(r.GetU8(&a) && r.GetU16(&b) && r.GetU32(&c) && r.GetU64(&d));
  ASSERT_TRUE(r.GetLengthPrefixed(&s));
  EXPECT_EQ(a, 0x01);
  EXPECT_EQ(b, 0x0302);
  EXPECT_EQ(c, 0x07060504u);
  EXPECT_EQ(d, 0x0f0e0d0c0b0a0908u);
  EXPECT_EQ(Bytes(s.begin(), s.end()), (Bytes{0xaa, 0xbb}));
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_FALSE(r.failed());
}

TEST(Coding, ReaderNeverReadsPastTheEnd) {
  Bytes in = {1, 2, 3};
  coding::Reader r(in);
  uint32_t v = 99;
  EXPECT_FALSE(r.GetU32(&v));
  EXPECT_EQ(v, 99u);              // output untouched
  EXPECT_EQ(r.position(), 0u);    // nothing consumed
  EXPECT_TRUE(r.failed());
  uint8_t b = 0;
  EXPECT_FALSE(r.GetU8(&b));      // sticky, although a byte remains
  EXPECT_FALSE(r.CanHold(0, 1));
}

TEST(Coding, LengthPrefixBeyondInputConsumesNothing) {
  Bytes in = {5, 0, 0, 0, 1, 2, 3, 4};  // says 5 bytes, 4 follow
  coding::Reader r(in);
  std::span<const uint8_t> s;
  EXPECT_FALSE(r.GetLengthPrefixed(&s));
  EXPECT_EQ(r.position(), 0u);
  EXPECT_TRUE(r.failed());

  Bytes huge = {0xff, 0xff, 0xff, 0xff};
  coding::Reader h(huge);
  EXPECT_FALSE(h.GetLengthPrefixed(&s));
}

TEST(Coding, CanHold) {
  Bytes in(24);
  coding::Reader r(in);
  EXPECT_TRUE(r.CanHold(3, 8));
  EXPECT_FALSE(r.CanHold(4, 8));
  EXPECT_FALSE(r.CanHold(UINT64_MAX, 1));
  EXPECT_TRUE(r.CanHold(0, 1000));
}

}  // namespace
}  // namespace svm::wire
