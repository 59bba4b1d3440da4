// NoticeRings over the fake NIC: several nodes in this process, each with its
// rings, depositing write notices by remote WRITE. Waits are bounded by
// generous timeouts only; nothing depends on timing.
#include "libsvm/notice_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "nic_ext/fake/fake_transport.h"

namespace svm::rt {
namespace {

using namespace std::chrono_literals;

constexpr nic::RegionId kDeposit = 5, kHeads = 6;

struct Cluster {
  Cluster(uint32_t nodes, uint32_t ring_bytes, std::chrono::milliseconds timeout = 60'000ms) {
    auto fabric = nic::MakeFakeFabric(nodes);
    for (NodeId i = 0; i < nodes; ++i) {
      nics.push_back(nic::MakeFakeNic(fabric, i));
      NoticeRingOptions o;
      o.self = i;
      o.nodes = nodes;
      o.ring_bytes = ring_bytes;
      o.deposit_region = kDeposit;
      o.heads_region = kHeads;
      o.full_timeout = timeout;
      rings.push_back(std::make_unique<NoticeRings>(o, nics.back().get()));
      EXPECT_TRUE(nics[i]->RegisterRegion(rings[i]->DepositRegion()).ok());
      EXPECT_TRUE(nics[i]->RegisterRegion(rings[i]->HeadsRegion()).ok());
    }
    for (auto& n : nics) EXPECT_TRUE(n->Connect({}).ok());
  }
  ~Cluster() {
    for (auto& n : nics) n->Shutdown();
  }
  NoticeRings& operator[](NodeId i) { return *rings[i]; }
  std::vector<std::unique_ptr<nic::Nic>> nics;
  std::vector<std::unique_ptr<NoticeRings>> rings;
};

WriteNotice Notice(NodeId node, IntervalId interval, size_t pages) {
  WriteNotice n{node, interval, {}};
  for (size_t i = 0; i < pages; ++i) n.pages.push_back(PageId(interval) * 1000003 + i * 7 + node);
  return n;
}

// Takes from r until `count` notices arrived (or 30 s passed).
std::vector<WriteNotice> TakeAll(NoticeRings& r, size_t count) {
  std::vector<WriteNotice> got;
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (got.size() < count && std::chrono::steady_clock::now() < until) {
    r.Take(&got);
    if (got.size() < count) std::this_thread::yield();
  }
  return got;
}

TEST(NoticeRings, EncodingRoundTripsAndRejectsBadLengths) {
  WriteNotice n = Notice(2, 9, 5), back;
  std::vector<uint8_t> b = EncodeNotice(n);
  ASSERT_TRUE(DecodeNotice(b, 3, &back).ok());
  EXPECT_EQ(back, n);
  EXPECT_FALSE(DecodeNotice(b, 2, &back).ok());  // node 2 of 2 nodes
  b.pop_back();
  EXPECT_FALSE(DecodeNotice(b, 3, &back).ok());
  EXPECT_FALSE(DecodeNotice({1, 2, 3}, 3, &back).ok());
}

TEST(NoticeRings, EveryOtherNodeGetsEachNoticeInOrder) {
  Cluster c(3, 4096);
  for (NodeId w = 0; w < 3; ++w)
    for (IntervalId i = 1; i <= 5; ++i) ASSERT_TRUE(c[w].Deposit(Notice(w, i, i)).ok());
  for (NodeId t = 0; t < 3; ++t) {
    std::vector<WriteNotice> got;
    c[t].Take(&got);
    ASSERT_EQ(got.size(), 10u) << "at node " << t;
    // Per writer, in deposit order; never one's own.
    IntervalId next[3] = {1, 1, 1};
    for (const WriteNotice& n : got) {
      ASSERT_NE(n.node, t);
      EXPECT_EQ(n, Notice(n.node, next[n.node], next[n.node]));
      ++next[n.node];
    }
    got.clear();
    c[t].Take(&got);
    EXPECT_TRUE(got.empty());
  }
}

// Many small records through a ring of 128 bytes: records and their payloads
// wrap around its end again and again.
TEST(NoticeRings, WrapsAround) {
  Cluster c(2, 128);
  std::vector<WriteNotice> got;
  for (IntervalId i = 1; i <= 300; ++i) {
    ASSERT_TRUE(c[0].Deposit(Notice(0, i, i % 5)).ok());  // 12..44 payload bytes
    c[1].Take(&got);
  }
  ASSERT_EQ(got.size(), 300u);
  for (IntervalId i = 1; i <= 300; ++i) EXPECT_EQ(got[i - 1], Notice(0, i, i % 5)) << i;
  EXPECT_EQ(c[0].full_waits(), 0u);  // drained after each
}

// A notice of 812 bytes through a ring of 128: cut into fragments while the
// target drains concurrently, reassembled there.
TEST(NoticeRings, NoticeLargerThanTheRing) {
  Cluster c(2, 128);
  std::atomic<bool> done{false};
  std::vector<WriteNotice> got;
  std::thread target([&] {
    while (!done.load()) {
      c[1].Drain();
      std::this_thread::yield();
    }
  });
  for (IntervalId i = 1; i <= 20; ++i) ASSERT_TRUE(c[0].Deposit(Notice(0, i, 100 + i)).ok());
  done = true;
  target.join();
  c[1].Take(&got);
  ASSERT_EQ(got.size(), 20u);
  for (IntervalId i = 1; i <= 20; ++i) EXPECT_EQ(got[i - 1], Notice(0, i, 100 + i));
  EXPECT_GT(c[0].records_sent(), 20u * 812 / 120);
}

// A writer facing a full ring waits, and overwrites nothing the target has
// not taken; once the target drains, it carries on.
TEST(NoticeRings, WriterWaitsForSpace) {
  Cluster c(2, 256);
  std::atomic<int> deposited{0};
  std::thread writer([&] {
    for (IntervalId i = 1; i <= 50; ++i) {
      ASSERT_TRUE(c[0].Deposit(Notice(0, i, 3)).ok());
      deposited = int(i);
    }
  });
  // 50 notices of 48-byte records need 2400 bytes; the ring holds 256.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (c[0].full_waits() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_GT(c[0].full_waits(), 0u);
  std::this_thread::sleep_for(20ms);
  EXPECT_LT(deposited.load(), 50);
  EXPECT_LE(deposited.load(), 256 / 48);
  std::vector<WriteNotice> got = TakeAll(c[1], 50);
  writer.join();
  ASSERT_EQ(got.size(), 50u);
  for (IntervalId i = 1; i <= 50; ++i) EXPECT_EQ(got[i - 1], Notice(0, i, 3));
}

// Two nodes depositing to each other, rings full both ways, and nobody else
// draining: each drains its own rings while it waits for space, so both make
// progress. A writer that is done keeps draining until the other is (in the
// runtime, the handler thread's idle drain).
TEST(NoticeRings, MutualDepositsWithFullRingsFinish) {
  Cluster c(2, 128);
  std::atomic<int> finished{0};
  auto writer = [&](NodeId self) {
    for (IntervalId i = 1; i <= 30; ++i) ASSERT_TRUE(c[self].Deposit(Notice(self, i, 40)).ok());
    ++finished;
    while (finished.load() < 2) c[self].Drain();
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  std::vector<WriteNotice> got0 = TakeAll(c[0], 30), got1 = TakeAll(c[1], 30);
  ASSERT_EQ(got0.size(), 30u);
  ASSERT_EQ(got1.size(), 30u);
  for (IntervalId i = 1; i <= 30; ++i) {
    EXPECT_EQ(got0[i - 1], Notice(1, i, 40));
    EXPECT_EQ(got1[i - 1], Notice(0, i, 40));
  }
  EXPECT_GT(c[0].full_waits() + c[1].full_waits(), 0u);
}

TEST(NoticeRings, RingThatStaysFullIsAnError) {
  Cluster c(2, 64, 50ms);
  Status st;
  for (IntervalId i = 1; i <= 10 && st.ok(); ++i) st = c[0].Deposit(Notice(0, i, 2));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("stayed full"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace svm::rt
