// Every work request kind, on every backend that runs here (fake, tcp, shm,
// ofi over the tcp and shm providers), with
// 2..4 nodes in this process. No timing assertions: waits are bounded by
// generous timeouts only.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "tests/nic/nic_cluster.h"
#include "util/coding.h"

namespace svm::nic::testing {
namespace {

struct Param {
  Backend backend;
  uint32_t nodes;
};

std::string Name(const ::testing::TestParamInfo<Param>& p) {
  return std::string(ToString(p.param.backend)) + "_" + std::to_string(p.param.nodes);
}

class TransportTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (std::string why = OfiSkipReason(GetParam().backend); !why.empty()) GTEST_SKIP() << why;
    c_ = std::make_unique<Cluster>(GetParam().backend, GetParam().nodes);
    if (::testing::Test::HasFailure()) GTEST_FAIL() << "the cluster did not come up";
  }
  uint32_t n() const { return GetParam().nodes; }
  std::unique_ptr<Cluster> c_;
};

TEST_P(TransportTest, SendGatherListArrivesWhole) {
  Cluster& c = *c_;
  CompletionQueue cq;
  char a[] = "hello ", b[] = "world";
  Sge sg[2] = {{a, 6}, {b, 5}};
  for (NodeId to = 0; to < n(); ++to) {  // including this node itself
    Completion done = PostWait(c[0], cq, WorkRequest::Send(to, sg, 40 + to));
    EXPECT_EQ(done.status, WcStatus::kSuccess);
    EXPECT_EQ(done.wr_id, 40u + to);
    EXPECT_EQ(done.byte_len, 11u);
    Message m = WaitMessage(c[to]);
    EXPECT_EQ(m.from, 0u);
    EXPECT_EQ(std::string(m.bytes.begin(), m.bytes.end()), "hello world");
  }
}

TEST_P(TransportTest, SendsAreFifoPerPair) {
  Cluster& c = *c_;
  constexpr uint32_t kCount = 500;
  std::vector<std::thread> senders;
  for (NodeId from = 1; from < n(); ++from) {
    senders.emplace_back([&, from] {
      CompletionQueue cq;
      for (uint32_t i = 0; i < kCount; ++i) {
        uint32_t v[2] = {from, i};
        WorkRequest wr = WorkRequest::Send(0, std::vector<Sge>{{v, sizeof v}});
        wr.signaled = false;
        ASSERT_TRUE(c[from].Post(&cq, {&wr, 1}).ok());
      }
    });
  }
  std::vector<uint32_t> next(n(), 0);
  for (uint32_t got = 0; got < kCount * (n() - 1); ++got) {
    Message m = WaitMessage(c[0]);
    ASSERT_EQ(m.bytes.size(), 8u);
    uint32_t v[2];
    std::memcpy(v, m.bytes.data(), 8);
    ASSERT_EQ(v[0], m.from);
    ASSERT_EQ(v[1], next[m.from]) << "from node " << m.from;
    ++next[m.from];
  }
  for (auto& t : senders) t.join();
}

TEST_P(TransportTest, WriteThenReadWithGatherAndScatter) {
  Cluster& c = *c_;
  CompletionQueue cq;
  const NodeId peer = n() - 1;
  std::vector<uint8_t> x(3000), y(1096);
  std::iota(x.begin(), x.end(), uint8_t{1});
  std::iota(y.begin(), y.end(), uint8_t{7});
  Sge gather[2] = {{x.data(), 3000}, {y.data(), 1096}};
  Completion w = PostWait(c[0], cq, WorkRequest::Write(peer, kRegion, 4096, gather, 1));
  EXPECT_EQ(w.status, WcStatus::kSuccess);
  EXPECT_EQ(w.op, Opcode::kWrite);
  EXPECT_EQ(w.byte_len, 4096u);
  EXPECT_EQ(std::memcmp(c.bytes(peer) + 4096, x.data(), 3000), 0);
  EXPECT_EQ(std::memcmp(c.bytes(peer) + 4096 + 3000, y.data(), 1096), 0);

  std::vector<uint8_t> p(100), q(3996);
  Sge scatter[2] = {{p.data(), 100}, {q.data(), 3996}};
  Completion r = PostWait(c[0], cq, WorkRequest::Read(peer, kRegion, 4096, scatter, 2));
  EXPECT_EQ(r.status, WcStatus::kSuccess);
  EXPECT_EQ(r.op, Opcode::kRead);
  EXPECT_EQ(std::memcmp(p.data(), x.data(), 100), 0);
  EXPECT_EQ(std::memcmp(q.data(), x.data() + 100, 2900), 0);
  EXPECT_EQ(std::memcmp(q.data() + 2900, y.data(), 1096), 0);
}

TEST_P(TransportTest, WritesAndReadsToEveryNodeIncludingSelf) {
  Cluster& c = *c_;
  CompletionQueue cq;
  for (NodeId from = 0; from < n(); ++from) {
    for (NodeId to = 0; to < n(); ++to) {
      uint64_t v = 1000 * from + to, got = 0;
      Sge s{&v, 8}, d{&got, 8};
      uint64_t off = 8 * from;
      // Posted together: FIFO per pair makes the READ see the WRITE.
      WorkRequest wrs[2] = {WorkRequest::Write(to, kRegion, off, {&s, 1}, 1),
                            WorkRequest::Read(to, kRegion, off, {&d, 1}, 2)};
      ASSERT_TRUE(c[from].Post(&cq, wrs).ok());
      Completion a = WaitOne(cq), b = WaitOne(cq);
      EXPECT_EQ(a.wr_id, 1u);
      EXPECT_EQ(b.wr_id, 2u);
      EXPECT_EQ(a.status, WcStatus::kSuccess);
      EXPECT_EQ(b.status, WcStatus::kSuccess);
      EXPECT_EQ(got, v);
    }
  }
}

// One Post mixing WRITEs, runs of READs (ofi issues those together), a bad
// READ among them and a CAS: completions come in posting order with their
// own status, and every READ sees exactly the WRITEs posted before it.
TEST_P(TransportTest, MixedBurstsCompleteInPostingOrder) {
  Cluster& c = *c_;
  CompletionQueue cq;
  const NodeId peer = n() - 1;
  const size_t len = c.mem[peer].size() * 8;
  for (uint64_t round = 1; round <= 20; ++round) {
    uint64_t a = round, b = 100 + round, far = 0;
    std::array<uint64_t, 7> got{};
    uint8_t split[2][4];
    Sge wa{&a, 8}, wb{&b, 8}, wf{&far, 8};
    Sge r[7];
    for (size_t i = 0; i < got.size(); ++i) r[i] = {&got[i], 8};
    Sge scatter[2] = {{split[0], 4}, {split[1], 4}};
    std::vector<WorkRequest> wrs = {
        WorkRequest::Write(peer, kRegion, 0, {&wa, 1}),        // 1
        WorkRequest::Write(peer, kRegion, 4096, {&wf, 1}),     // 2
        WorkRequest::Read(peer, kRegion, 0, {&r[0], 1}),       // 3: a
        WorkRequest::Read(peer, kRegion, 4096, {&r[1], 1}),    // 4: far (0)
        WorkRequest::Read(peer, kRegion, len - 4, {&r[2], 1}), // 5: past the end
        WorkRequest::Read(peer, kRegion, 0, scatter, 2),       // 6: a, scattered
        WorkRequest::Write(peer, kRegion, 0, {&wb, 1}),        // 7
        WorkRequest::Read(peer, kRegion, 0, {&r[3], 1}),       // 8: b
        WorkRequest::Cas(peer, kRegion, 0, b, a),              // 9: b -> a
        WorkRequest::Read(peer, kRegion, 0, {&r[4], 1}),       // 10: a
    };
    for (size_t i = 0; i < wrs.size(); ++i) wrs[i].wr_id = i + 1;
    ASSERT_TRUE(c[0].Post(&cq, wrs).ok());
    for (size_t i = 0; i < wrs.size(); ++i) {
      Completion done = WaitOne(cq);
      ASSERT_EQ(done.wr_id, i + 1) << "round " << round;
      EXPECT_EQ(done.status, i + 1 == 5 ? WcStatus::kRemoteAccessError : WcStatus::kSuccess) << i + 1;
      if (i + 1 == 9) {
        EXPECT_EQ(done.value, b);
      }
    }
    EXPECT_EQ(got[0], a);
    EXPECT_EQ(got[1], 0u);
    uint64_t joined;
    std::memcpy(&joined, split, 8);
    EXPECT_EQ(joined, a);
    EXPECT_EQ(got[3], b);
    EXPECT_EQ(got[4], a);
  }
}

TEST_P(TransportTest, SendAfterWriteSeesTheData) {
  Cluster& c = *c_;
  CompletionQueue cq;
  uint64_t v = 0xfeedface;
  Sge s{&v, 8};
  char note = 'n';
  Sge m{&note, 1};
  WorkRequest wrs[2] = {WorkRequest::Write(1, kRegion, 64, {&s, 1}), WorkRequest::Send(1, {&m, 1})};
  wrs[0].signaled = wrs[1].signaled = false;
  ASSERT_TRUE(c[0].Post(&cq, wrs).ok());
  WaitMessage(c[1]);
  uint64_t seen;
  std::memcpy(&seen, c.bytes(1) + 64, 8);
  EXPECT_EQ(seen, v);
  // Unsignaled successes complete silently: the next completion is this FAA's,
  // which (FIFO) also means the WRITE is done and cq may go away.
  EXPECT_EQ(PostWait(c[0], cq, WorkRequest::Faa(1, kRegion, 0, 1, 5)).wr_id, 5u);
  EXPECT_EQ(cq.size(), 0u);
}

TEST_P(TransportTest, OutOfBoundsAccessesCompleteWithAnError) {
  Cluster& c = *c_;
  CompletionQueue cq;
  const size_t len = c.mem[1].size() * 8;
  uint8_t buf[16] = {};
  Sge s{buf, 16};
  struct Case {
    const char* what;
    WorkRequest wr;
  } cases[] = {
      {"read past end", WorkRequest::Read(1, kRegion, len - 8, {&s, 1})},
      {"write past end", WorkRequest::Write(1, kRegion, len - 8, {&s, 1})},
      {"read huge offset", WorkRequest::Read(1, kRegion, ~uint64_t{0} - 4, {&s, 1})},
      {"read unknown region", WorkRequest::Read(1, kRegion + 1, 0, {&s, 1})},
      {"write unknown region", WorkRequest::Write(1, 63, 0, {&s, 1})},
      {"cas past end", WorkRequest::Cas(1, kRegion, len, 0, 1)},
      {"cas misaligned", WorkRequest::Cas(1, kRegion, 4, 0, 1)},
      {"faa past end", WorkRequest::Faa(1, kRegion, len - 4, 1)},
      {"faa unknown region", WorkRequest::Faa(1, 7, 0, 1)},
  };
  for (auto& k : cases) {
    k.wr.signaled = false;  // errors complete anyway
    Completion done = PostWait(c[0], cq, k.wr);
    EXPECT_EQ(done.status, WcStatus::kRemoteAccessError) << k.what;
  }
  // The endpoint still works afterwards.
  Completion ok = PostWait(c[0], cq, WorkRequest::Read(1, kRegion, len - 16, {&s, 1}));
  EXPECT_EQ(ok.status, WcStatus::kSuccess);
}

TEST_P(TransportTest, InvalidRequestsAreRefusedAtPost) {
  Cluster& c = *c_;
  CompletionQueue cq;
  uint8_t b[8];
  Sge s{b, 8};
  WorkRequest bad_peer = WorkRequest::Read(n(), kRegion, 0, {&s, 1});
  EXPECT_FALSE(c[0].Post(&cq, {&bad_peer, 1}).ok());
  WorkRequest bad_lock = WorkRequest::Lock(1, kMaxLocks);
  EXPECT_FALSE(c[0].Post(&cq, {&bad_lock, 1}).ok());
  WorkRequest too_many = WorkRequest::Send(1, {&s, 1});
  too_many.num_sge = kMaxSge + 1;
  EXPECT_FALSE(c[0].Post(&cq, {&too_many, 1}).ok());
  EXPECT_EQ(cq.size(), 0u);
}

// WRITE_RUNS (a direct diff in one request): each run lands at the WR's
// offset plus its own, the bytes between runs stay as they were (another
// node may have written them); an encoding gathered from pieces is one
// encoding.
std::vector<uint8_t> EncodeRuns(std::initializer_list<std::pair<uint32_t, std::vector<uint8_t>>> runs) {
  std::vector<uint8_t> out;
  for (const auto& [off, bytes] : runs) {
    uint8_t h[kRunHeaderBytes];
    coding::EncodeFixed(h, off);
    coding::EncodeFixed(h + 4, uint32_t(bytes.size()));
    out.insert(out.end(), h, h + sizeof h);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

TEST_P(TransportTest, WriteRunsScatterWithoutTouchingTheGaps) {
  Cluster& c = *c_;
  CompletionQueue cq;
  std::vector<uint8_t> runs = EncodeRuns({{4, {1, 2, 3}}, {10, {9}}, {12, {5, 6}}});
  Sge all{runs.data(), uint32_t(runs.size())};
  WorkRequest wr = WorkRequest::WriteRuns(1, kRegion, 64, {&all, 1}, 7);
  // Every backend here offers it (verbs, which does not, is not among them).
  ASSERT_TRUE(c[0].Supports(Opcode::kWriteRuns));
  const uint8_t want[16] = {0x77, 0x77, 0x77, 0x77, 1, 2, 3, 0x77, 0x77, 0x77, 9, 0x77, 5, 6, 0x77, 0x77};
  for (NodeId to : {NodeId{1}, NodeId{0}}) {
    auto* target = reinterpret_cast<uint8_t*>(c.mem[to].data()) + 64;
    std::memset(target, 0x77, 16);
    wr.peer = to;
    Completion done = PostWait(c[0], cq, wr);
    EXPECT_EQ(done.status, WcStatus::kSuccess) << "to node " << to;
    EXPECT_EQ(done.op, Opcode::kWriteRuns);
    EXPECT_EQ(done.byte_len, runs.size());
    EXPECT_EQ(std::memcmp(target, want, sizeof want), 0) << "to node " << to;
  }
  // The same encoding in three pieces, split inside a header and a run.
  auto* target = reinterpret_cast<uint8_t*>(c.mem[1].data()) + 64;
  std::memset(target, 0x77, 16);
  const Sge pieces[] = {{runs.data(), 5}, {runs.data() + 5, 5}, {runs.data() + 10, uint32_t(runs.size() - 10)}};
  WorkRequest gathered = WorkRequest::WriteRuns(1, kRegion, 64, pieces);
  EXPECT_EQ(PostWait(c[0], cq, gathered).status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(target, want, sizeof want), 0);
}

// A masked block (a direct diff of scattered writes) where the NIC stores
// them: the selected bytes land, the block's others stay as they were.
// Elsewhere (ofi) it is refused and nothing is stored.
TEST_P(TransportTest, WriteRunsCarryAMaskedBlockWhereTheNicStoresThem) {
  Cluster& c = *c_;
  CompletionQueue cq;
  std::vector<uint8_t> block(kRunHeaderBytes + 2 * 8 + 128, 5);
  coding::EncodeFixed<uint32_t>(block.data(), 64);
  coding::EncodeFixed<uint32_t>(block.data() + 4, kMaskedRuns | 128);
  coding::EncodeFixed<uint64_t>(block.data() + 8, 0x8001);           // bytes 0 and 15
  coding::EncodeFixed<uint64_t>(block.data() + 16, uint64_t{1} << 63);  // byte 127
  Sge all{block.data(), uint32_t(block.size())};
  const WorkRequest wr = WorkRequest::WriteRuns(1, kRegion, 128, {&all, 1});
  auto* target = reinterpret_cast<uint8_t*>(c.mem[1].data()) + 192;
  std::memset(target, 0x77, 128);
  const Completion done = PostWait(c[0], cq, wr);
  if (!c[0].StoresMaskedBlocks()) {
    EXPECT_EQ(done.status, WcStatus::kRemoteInvalidRequest);
    EXPECT_EQ(std::count(target, target + 128, 0x77), 128);
    return;
  }
  EXPECT_EQ(done.status, WcStatus::kSuccess);
  EXPECT_EQ(target[0], 5);
  EXPECT_EQ(target[15], 5);
  EXPECT_EQ(target[127], 5);
  EXPECT_EQ(std::count(target, target + 128, 0x77), 125);
}

// All or none: a run outside the region or a malformed encoding anywhere in
// the request stores nothing, and the endpoint goes on working.
TEST_P(TransportTest, WriteRunsAreAllOrNone) {
  Cluster& c = *c_;
  ASSERT_TRUE(c[0].Supports(Opcode::kWriteRuns));
  CompletionQueue cq;
  const uint32_t len = uint32_t(c.mem[1].size() * 8);
  auto* target = reinterpret_cast<uint8_t*>(c.mem[1].data());
  std::vector<uint8_t> truncated = EncodeRuns({{0, {1}}, {8, {2, 3}}});
  truncated.pop_back();
  std::vector<uint8_t> short_header = EncodeRuns({{0, {1}}});
  short_header.insert(short_header.end(), {8, 0, 0, 0});
  struct Case {
    const char* what;
    std::vector<uint8_t> runs;
    uint64_t offset;
    RegionId region;
    WcStatus want;
  } cases[] = {
      {"last run past the end", EncodeRuns({{0, {1}}, {len - 1, {2, 3}}}), 0, kRegion, WcStatus::kRemoteAccessError},
      {"offset past the end", EncodeRuns({{0, {1}}}), len, kRegion, WcStatus::kRemoteAccessError},
      {"huge offset", EncodeRuns({{0, {1}}, {16, {1}}}), ~uint64_t{0} - 4, kRegion, WcStatus::kRemoteAccessError},
      {"unknown region", EncodeRuns({{0, {1}}}), 0, kRegion + 1, WcStatus::kRemoteAccessError},
      {"empty run", EncodeRuns({{0, {1}}, {8, {}}}), 0, kRegion, WcStatus::kRemoteInvalidRequest},
      {"run longer than its bytes", truncated, 0, kRegion, WcStatus::kRemoteInvalidRequest},
      {"header cut short", short_header, 0, kRegion, WcStatus::kRemoteInvalidRequest},
  };
  for (const Case& k : cases) {
    std::memset(target, 0x77, 32);
    Sge s{const_cast<uint8_t*>(k.runs.data()), uint32_t(k.runs.size())};
    WorkRequest wr = WorkRequest::WriteRuns(1, k.region, k.offset, {&s, 1});
    wr.signaled = false;  // errors complete anyway
    EXPECT_EQ(PostWait(c[0], cq, wr).status, k.want) << k.what;
    EXPECT_EQ(target[0], 0x77) << k.what << ": a refused request stored a run";
  }
  std::vector<uint8_t> ok = EncodeRuns({{len - 2, {4, 5}}});
  Sge s{ok.data(), uint32_t(ok.size())};
  EXPECT_EQ(PostWait(c[0], cq, WorkRequest::WriteRuns(1, kRegion, 0, {&s, 1})).status, WcStatus::kSuccess);
  EXPECT_EQ(target[len - 1], 5);
}

TEST_P(TransportTest, CasAndFaa) {
  Cluster& c = *c_;
  CompletionQueue cq;
  Completion a = PostWait(c[0], cq, WorkRequest::Cas(1, kRegion, 0, 0, 42));
  EXPECT_EQ(a.status, WcStatus::kSuccess);
  EXPECT_EQ(a.op, Opcode::kCas);
  EXPECT_EQ(a.value, 0u);  // succeeded
  Completion b = PostWait(c[0], cq, WorkRequest::Cas(1, kRegion, 0, 0, 7));
  EXPECT_EQ(b.value, 42u);  // failed: the word was 42
  EXPECT_EQ(c.mem[1][0], 42u);
  Completion f = PostWait(c[0], cq, WorkRequest::Faa(1, kRegion, 0, 8));
  EXPECT_EQ(f.value, 42u);
  EXPECT_EQ(c.mem[1][0], 50u);
}

TEST_P(TransportTest, ConcurrentFaaFromEveryNodeSumsUp) {
  Cluster& c = *c_;
  constexpr int kAdds = 200;
  std::vector<std::thread> threads;
  for (NodeId from = 0; from < n(); ++from) {
    threads.emplace_back([&, from] {
      CompletionQueue cq;
      for (int i = 0; i < kAdds; ++i) {
        WorkRequest wr = WorkRequest::Faa(0, kRegion, 8, 1);
        wr.signaled = (i == kAdds - 1);
        ASSERT_TRUE(c[from].Post(&cq, {&wr, 1}).ok());
      }
      EXPECT_EQ(WaitOne(cq).status, WcStatus::kSuccess);  // the last one: all done (FIFO)
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::atomic_ref<uint64_t>(c.mem[0][1]).load(), uint64_t(kAdds) * n());
}

// A counter on node 0 is incremented with a non-atomic READ + WRITE, under a
// NIC lock held at node 0, by two threads on every node.
TEST_P(TransportTest, LocksGiveMutualExclusionUnderContention) {
  Cluster& c = *c_;
  constexpr int kRounds = 40;
  constexpr LockNo kLock = 17;
  std::atomic<int> inside{0}, overlaps{0};
  std::vector<std::thread> threads;
  for (NodeId from = 0; from < n(); ++from) {
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, from] {
        CompletionQueue cq;
        for (int i = 0; i < kRounds; ++i) {
          Completion l = PostWait(c[from], cq, WorkRequest::Lock(0, kLock, 1));
          ASSERT_EQ(l.status, WcStatus::kSuccess);
          ASSERT_EQ(l.op, Opcode::kLock);
          // Each request is granted in turn, even two of one node's.
          if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
          uint64_t v = 0;
          Sge s{&v, 8};
          ASSERT_EQ(PostWait(c[from], cq, WorkRequest::Read(0, kRegion, 16, {&s, 1})).status,
                    WcStatus::kSuccess);
          ++v;
          ASSERT_EQ(PostWait(c[from], cq, WorkRequest::Write(0, kRegion, 16, {&s, 1})).status,
                    WcStatus::kSuccess);
          inside.fetch_sub(1);
          ASSERT_EQ(PostWait(c[from], cq, WorkRequest::Unlock(0, kLock, 2)).status,
                    WcStatus::kSuccess);
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(c.mem[0][2], uint64_t(kRounds) * 2 * n());
}

TEST_P(TransportTest, LockGrantsAreFifo) {
  Cluster& c = *c_;
  const NodeId home = n() - 1;
  CompletionQueue cq0;
  ASSERT_EQ(PostWait(c[0], cq0, WorkRequest::Lock(home, 5)).status, WcStatus::kSuccess);
  // Every other node queues, one after the other (each request is known to
  // have reached the home before the next is posted: a FAA behind it on the
  // same pair completes first).
  std::vector<std::unique_ptr<CompletionQueue>> cqs;
  for (NodeId i = 1; i < n(); ++i) {
    cqs.push_back(std::make_unique<CompletionQueue>());
    WorkRequest wrs[2] = {WorkRequest::Lock(home, 5, i), WorkRequest::Faa(home, kRegion, 0, 1)};
    ASSERT_TRUE(c[i].Post(cqs.back().get(), wrs).ok());
    EXPECT_EQ(WaitOne(*cqs.back()).op, Opcode::kFaa);
  }
  // Node 0 too, behind them.
  WorkRequest again = WorkRequest::Lock(home, 5, 99);
  ASSERT_TRUE(c[0].Post(&cq0, {&again, 1}).ok());
  ASSERT_EQ(PostWait(c[0], cq0, WorkRequest::Faa(home, kRegion, 0, 1)).op, Opcode::kFaa);
  ASSERT_EQ(PostWait(c[0], cq0, WorkRequest::Unlock(home, 5)).status, WcStatus::kSuccess);
  for (NodeId i = 1; i < n(); ++i) {
    Completion g = WaitOne(*cqs[i - 1]);
    EXPECT_EQ(g.op, Opcode::kLock);
    EXPECT_EQ(g.wr_id, i);
    EXPECT_EQ(g.status, WcStatus::kSuccess);
    // Nobody else was granted meanwhile.
    for (NodeId j = i + 1; j < n(); ++j) EXPECT_EQ(cqs[j - 1]->size(), 0u);
    EXPECT_EQ(cq0.size(), 0u);
    ASSERT_EQ(PostWait(c[i], *cqs[i - 1], WorkRequest::Unlock(home, 5)).status, WcStatus::kSuccess);
  }
  Completion last = WaitOne(cq0);
  EXPECT_EQ(last.wr_id, 99u);
  EXPECT_EQ(PostWait(c[0], cq0, WorkRequest::Unlock(home, 5)).status, WcStatus::kSuccess);
}

TEST_P(TransportTest, UnlockByNonOwnerFails) {
  Cluster& c = *c_;
  CompletionQueue cq;
  EXPECT_EQ(PostWait(c[0], cq, WorkRequest::Unlock(1, 3)).status, WcStatus::kRemoteInvalidRequest);
  ASSERT_EQ(PostWait(c[0], cq, WorkRequest::Lock(1, 3)).status, WcStatus::kSuccess);
  NodeId other = n() > 2 ? 2 : 1;
  EXPECT_EQ(PostWait(c[other], cq, WorkRequest::Unlock(1, 3)).status,
            WcStatus::kRemoteInvalidRequest);
  EXPECT_EQ(PostWait(c[0], cq, WorkRequest::Unlock(1, 3)).status, WcStatus::kSuccess);
}

TEST_P(TransportTest, ShutdownFlushesWaitersAndLaterPosts) {
  Cluster& c = *c_;
  CompletionQueue cq0, cq1;
  ASSERT_EQ(PostWait(c[0], cq0, WorkRequest::Lock(0, 1)).status, WcStatus::kSuccess);
  WorkRequest wait = WorkRequest::Lock(0, 1, 7);
  ASSERT_TRUE(c[1].Post(&cq1, {&wait, 1}).ok());
  ASSERT_EQ(PostWait(c[1], cq1, WorkRequest::Faa(0, kRegion, 0, 1)).op, Opcode::kFaa);
  c[0].Shutdown();
  Completion flushed = WaitOne(cq1);
  EXPECT_EQ(flushed.wr_id, 7u);
  EXPECT_EQ(flushed.status, WcStatus::kFlushed);
  // Posting to the node that is gone completes kFlushed (once the loss is seen).
  uint64_t v = 0;
  Sge s{&v, 8};
  Completion r = PostWait(c[1], cq1, WorkRequest::Read(0, kRegion, 0, {&s, 1}));
  EXPECT_EQ(r.status, WcStatus::kFlushed);
  // And the survivor still talks to the others.
  if (n() > 2) {
    EXPECT_EQ(PostWait(c[1], cq1, WorkRequest::Read(2, kRegion, 0, {&s, 1})).status, WcStatus::kSuccess);
  }
  c[0].Shutdown();  // idempotent
}

INSTANTIATE_TEST_SUITE_P(Backends, TransportTest,
                         ::testing::Values(Param{Backend::kFake, 2}, Param{Backend::kFake, 4},
                                           Param{Backend::kTcp, 2}, Param{Backend::kTcp, 3},
                                           Param{Backend::kTcp, 4}, Param{Backend::kTcpSealed, 3},
                                           Param{Backend::kShm, 2},
                                           Param{Backend::kShm, 3}, Param{Backend::kShm, 4},
                                           Param{Backend::kOfiTcp, 2}, Param{Backend::kOfiTcp, 4},
                                           Param{Backend::kOfiShm, 2}, Param{Backend::kOfiShm, 3}),
                         Name);

}  // namespace
}  // namespace svm::nic::testing
