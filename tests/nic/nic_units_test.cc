// The backend-independent pieces: LockTable, RegionTable, the WRITE_RUNS
// encoding (runs.h), WaitQueue, Validate, and the received messages'
// BufferPool.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <thread>
#include <vector>

#include "nic_ext/lock_table.h"
#include "nic_ext/queue.h"
#include "nic_ext/region_table.h"
#include "nic_ext/runs.h"
#include "util/coding.h"
#include "util/buffer_pool.h"

namespace svm::nic {
namespace {

struct Req {
  NodeId node = 0;
  int tag = 0;
};

// A received message gets the kept buffer that fits it best, so a page run
// does not grow a lock message's buffer (an allocation and a copy).
TEST(BufferPoolTest, TakesTheSmallestBufferThatFitsElseTheLargest) {
  BufferPool pool(8, 1 << 20);
  for (size_t cap : {64u, 65536u, 4096u, 256u}) {
    std::vector<uint8_t> b;
    b.reserve(cap);
    pool.Give(std::move(b));
  }
  EXPECT_EQ(pool.Take(3000).capacity(), 4096u);
  EXPECT_EQ(pool.Take(100).capacity(), 256u);
  EXPECT_EQ(pool.Take(1 << 19).capacity(), 65536u);  // none fits: the largest
  EXPECT_EQ(pool.Take(0).capacity(), 64u);
  EXPECT_EQ(pool.Take(0).capacity(), 0u);  // empty
  std::vector<uint8_t> big;
  big.reserve(2 << 20);
  pool.Give(std::move(big));  // over max_bytes: not kept
  EXPECT_EQ(pool.Take(0).capacity(), 0u);
}

TEST(LockTableTest, GrantsInFifoOrderAndOnlyOwnersRelease) {
  LockTable<Req> t;
  EXPECT_EQ(t.Acquire(1, {0, 1}), LockTable<Req>::Result::kGranted);
  EXPECT_EQ(t.Acquire(1, {2, 2}), LockTable<Req>::Result::kQueued);
  EXPECT_EQ(t.Acquire(1, {1, 3}), LockTable<Req>::Result::kQueued);
  EXPECT_EQ(t.Acquire(2, {1, 4}), LockTable<Req>::Result::kGranted);  // other lock: independent
  EXPECT_EQ(t.waiters(1), 2u);
  bool passed = false;
  Req next;
  EXPECT_FALSE(t.Release(1, 2, &passed, &next));  // node 2 waits, does not hold
  EXPECT_TRUE(t.Release(1, 0, &passed, &next));
  EXPECT_TRUE(passed);
  EXPECT_EQ(next.tag, 2);
  EXPECT_TRUE(t.Release(1, 2, &passed, &next));
  EXPECT_EQ(next.tag, 3);
  EXPECT_TRUE(t.Release(1, 1, &passed, &next));
  EXPECT_FALSE(passed);
  EXPECT_FALSE(t.held(1));
  EXPECT_FALSE(t.Release(1, 1, &passed, &next));  // free: nobody may release
}

TEST(LockTableTest, DropNodePassesItsLocksOnAndForgetsItsWaits) {
  LockTable<Req> t;
  t.Acquire(1, {3, 1});
  t.Acquire(1, {4, 2});
  t.Acquire(1, {5, 3});
  t.Acquire(2, {5, 4});
  t.Acquire(2, {3, 5});
  t.Acquire(2, {4, 6});
  std::vector<std::pair<LockNo, Req>> grants;
  t.DropNode(3, &grants);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].first, 1u);
  EXPECT_EQ(grants[0].second.tag, 2);
  EXPECT_EQ(t.waiters(2), 1u);  // node 3's wait on lock 2 is gone
  std::vector<Req> waiting;
  t.Clear(&waiting);
  EXPECT_EQ(waiting.size(), 2u);
}

TEST(RegionTableTest, BoundsChecks) {
  alignas(8) uint8_t mem[64];
  RegionTable t;
  EXPECT_TRUE(t.Add({2, mem, 64}).ok());
  EXPECT_FALSE(t.Add({2, mem, 64}).ok());
  EXPECT_FALSE(t.Add({kMaxRegions, mem, 64}).ok());
  EXPECT_FALSE(t.Add({3, mem, 0}).ok());
  EXPECT_EQ(t.Find(2, 0, 64), mem);
  EXPECT_EQ(t.Find(2, 64, 0), mem + 64);
  EXPECT_EQ(t.Find(2, 60, 8), nullptr);
  EXPECT_EQ(t.Find(2, 65, 0), nullptr);
  EXPECT_EQ(t.Find(2, ~uint64_t{0}, 2), nullptr);
  EXPECT_EQ(t.Find(2, 8, ~uint64_t{0}), nullptr);
  EXPECT_EQ(t.Find(1, 0, 1), nullptr);
  EXPECT_EQ(t.Find(kMaxRegions + 5, 0, 1), nullptr);
  EXPECT_NE(t.FindWord(2, 56), nullptr);
  EXPECT_EQ(t.FindWord(2, 60), nullptr);
  EXPECT_EQ(t.FindWord(2, 4), nullptr);
}

// u32 offset | u32 length | bytes, as protocol/diff.h encodes a run.
void AppendRun(std::vector<uint8_t>* out, uint32_t offset, uint32_t length, uint8_t fill) {
  uint8_t h[kRunHeaderBytes];
  coding::EncodeFixed<uint32_t>(h, offset);
  coding::EncodeFixed<uint32_t>(h + 4, length);
  out->insert(out->end(), h, h + sizeof h);
  out->insert(out->end(), length, fill);
}

TEST(RunsTest, CheckRunsJudgesTheWholeEncodingBeforeAnythingIsStored) {
  const auto in64 = [](uint64_t at, uint64_t len) { return at + len <= 64; };
  std::vector<uint8_t> runs;
  EXPECT_EQ(CheckRuns(runs, 0, in64), WcStatus::kSuccess);  // no change at all
  AppendRun(&runs, 0, 4, 1);
  AppendRun(&runs, 60, 4, 2);
  EXPECT_EQ(CheckRuns(runs, 0, in64), WcStatus::kSuccess);
  EXPECT_EQ(CheckRuns(runs, 1, in64), WcStatus::kRemoteAccessError);  // the last run leaves
  EXPECT_EQ(CheckRuns(runs, UINT64_MAX - 30, in64), WcStatus::kRemoteAccessError);  // overflows
  // A malformed tail outranks a run that does not fit before it.
  std::vector<uint8_t> bad = runs;
  bad.push_back(0);
  EXPECT_EQ(CheckRuns(bad, 1, in64), WcStatus::kRemoteInvalidRequest);  // truncated header
  bad = runs;
  AppendRun(&bad, 8, 0, 0);
  EXPECT_EQ(CheckRuns(bad, 1, in64), WcStatus::kRemoteInvalidRequest);  // empty run
  bad = runs;
  bad.resize(bad.size() - 1);
  EXPECT_EQ(CheckRuns(bad, 0, in64), WcStatus::kRemoteInvalidRequest);  // truncated payload
  // The check sees each run's address and length once, in order.
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  CheckRuns(runs, 100, [&](uint64_t at, uint64_t len) {
    seen.emplace_back(at, len);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, uint64_t>>{{100, 4}, {160, 4}}));
}

TEST(RunsTest, NextRunWalksACheckedEncoding) {
  std::vector<uint8_t> runs;
  AppendRun(&runs, 3, 2, 7);
  AppendRun(&runs, 40, 1, 9);
  size_t at = 0;
  const nic::Run a = NextRun(runs, &at);
  EXPECT_EQ(a.offset, 3u);
  EXPECT_EQ(std::vector<uint8_t>(a.bytes.begin(), a.bytes.end()), (std::vector<uint8_t>{7, 7}));
  EXPECT_EQ(at, kRunHeaderBytes + 2);
  const nic::Run b = NextRun(runs, &at);
  EXPECT_EQ(b.offset, 40u);
  EXPECT_EQ(std::vector<uint8_t>(b.bytes.begin(), b.bytes.end()), (std::vector<uint8_t>{9}));
  EXPECT_EQ(at, runs.size());
}

TEST(RegionTableTest, StoreRunsStoresAllOrNone) {
  std::array<uint8_t, 64> mem{};
  RegionTable t;
  ASSERT_TRUE(t.Add({1, mem.data(), mem.size()}).ok());
  std::vector<uint8_t> runs;
  AppendRun(&runs, 0, 2, 5);
  AppendRun(&runs, 10, 3, 6);
  EXPECT_EQ(t.StoreRuns(1, 52, runs), WcStatus::kRemoteAccessError);  // 62..64 leaves the region
  EXPECT_EQ(mem, (std::array<uint8_t, 64>{}));
  EXPECT_EQ(t.StoreRuns(2, 0, runs), WcStatus::kRemoteAccessError);  // unknown region
  EXPECT_EQ(t.StoreRuns(1, 8, runs), WcStatus::kSuccess);
  std::array<uint8_t, 64> want{};
  want[8] = want[9] = 5;
  want[18] = want[19] = want[20] = 6;
  EXPECT_EQ(mem, want);
}

// A masked block (u32 offset | u32 kMaskedRuns | length | masks | bytes):
// one mask word a 64-byte block, each byte of the block `fill`.
std::vector<uint8_t> MaskedBlock(uint32_t offset, uint32_t length, std::vector<uint64_t> masks, uint8_t fill) {
  std::vector<uint8_t> out(kRunHeaderBytes + masks.size() * 8);
  coding::EncodeFixed<uint32_t>(out.data(), offset);
  coding::EncodeFixed<uint32_t>(out.data() + 4, kMaskedRuns | length);
  for (size_t k = 0; k < masks.size(); ++k) coding::EncodeFixed<uint64_t>(out.data() + kRunHeaderBytes + 8 * k, masks[k]);
  out.insert(out.end(), length, fill);
  return out;
}

TEST(RunsTest, CheckRunsJudgesAMaskedBlock) {
  const auto in256 = [](uint64_t at, uint64_t len) { return at + len <= 256; };
  EXPECT_EQ(CheckRuns(MaskedBlock(64, 128, {1, 2}, 7), 0, in256), WcStatus::kSuccess);
  EXPECT_EQ(CheckRuns(MaskedBlock(64, 128, {1, 2}, 7), 128, in256), WcStatus::kRemoteAccessError);
  EXPECT_EQ(CheckRuns(MaskedBlock(64, 128, {1, 2}, 7), UINT64_MAX - 30, in256), WcStatus::kRemoteAccessError);  // overflows
  for (const auto& bad : {MaskedBlock(8, 64, {1}, 7), MaskedBlock(0, 100, {1, 1}, 7), MaskedBlock(0, 0, {}, 7),
                          MaskedBlock(0, 128, {0, 1}, 7), MaskedBlock(0, 128, {1, 0}, 7),
                          MaskedBlock(0, 128, {1}, 7)}) {
    EXPECT_EQ(CheckRuns(bad, 0, in256), WcStatus::kRemoteInvalidRequest);
  }
  std::vector<uint8_t> trailing = MaskedBlock(0, 64, {1}, 7);
  trailing.push_back(0);
  EXPECT_EQ(CheckRuns(trailing, 0, in256), WcStatus::kRemoteInvalidRequest);
  std::vector<uint8_t> after_run;
  AppendRun(&after_run, 0, 1, 1);
  const std::vector<uint8_t> block = MaskedBlock(64, 64, {1}, 7);
  after_run.insert(after_run.end(), block.begin(), block.end());
  EXPECT_EQ(CheckRuns(after_run, 0, in256), WcStatus::kRemoteInvalidRequest);
  EXPECT_TRUE(IsMasked(block));
  EXPECT_FALSE(IsMasked(after_run));
}

// Only the bytes the masks select change: the block's others keep what
// another writer put there.
TEST(RegionTableTest, StoreRunsStoresAMaskedBlocksSelectedBytes) {
  std::array<uint8_t, 256> mem{};
  mem.fill(0x11);
  RegionTable t;
  ASSERT_TRUE(t.Add({1, mem.data(), mem.size()}).ok());
  const std::vector<uint8_t> block = MaskedBlock(64, 128, {0b101, uint64_t{1} << 63}, 9);
  EXPECT_EQ(t.StoreRuns(1, 128, block), WcStatus::kRemoteAccessError);  // 192 + 128 leaves the region
  EXPECT_EQ(std::count(mem.begin(), mem.end(), 0x11), 256);
  ASSERT_EQ(t.StoreRuns(1, 0, block), WcStatus::kSuccess);
  std::array<uint8_t, 256> want;
  want.fill(0x11);
  want[64] = want[66] = want[64 + 127] = 9;
  EXPECT_EQ(mem, want);
}

// Where a NIC lacks WRITE_RUNS the runtime posts the runs as a WRITE each:
// served by the target, they store what WRITE_RUNS stores.
TEST(RunsTest, RunWritesStoreWhatWriteRunsStores) {
  std::vector<uint8_t> runs;
  AppendRun(&runs, 0, 3, 4);
  AppendRun(&runs, 17, 1, 5);
  AppendRun(&runs, 40, 24, 6);
  std::array<uint8_t, 128> by_runs{}, by_writes{};
  RegionTable a, b;
  ASSERT_TRUE(a.Add({3, by_runs.data(), by_runs.size()}).ok());
  ASSERT_TRUE(b.Add({3, by_writes.data(), by_writes.size()}).ok());
  ASSERT_EQ(a.StoreRuns(3, 64, runs), WcStatus::kSuccess);
  std::vector<WorkRequest> writes;
  AppendRunWrites(runs, 1, 3, 64, &writes);
  ASSERT_EQ(writes.size(), 3u);
  for (const WorkRequest& w : writes) {
    EXPECT_EQ(w.op, Opcode::kWrite);
    EXPECT_EQ(w.peer, 1u);
    Completion c;
    b.Serve(w, &c);
    EXPECT_EQ(c.status, WcStatus::kSuccess);
  }
  EXPECT_EQ(writes[1].offset, 64u + 17);
  EXPECT_EQ(writes[2].Bytes(), 24u);
  EXPECT_EQ(by_writes, by_runs);
}

// A NIC that moves nothing: what every backend's Post checks first.
class ValidateOnlyNic final : public Nic {
 public:
  explicit ValidateOnlyNic(bool runs) : Nic(0, 2, WaitPolicy{}), runs_(runs) {}
  Status RegisterRegion(const MemoryRegion&) override { return Status::Ok(); }
  Status Connect(std::span<const std::string>) override { return Status::Ok(); }
  Status Post(CompletionQueue*, std::span<const WorkRequest> wrs) override {
    for (const WorkRequest& wr : wrs) {
      if (Status s = Validate(wr); !s.ok()) return s;
    }
    return Status::Ok();
  }
  bool Supports(Opcode op) const override { return runs_ ? IsValid(op) : Nic::Supports(op); }
  void Shutdown() override {}

 private:
  const bool runs_;
};

TEST(ValidateTest, RefusesWhatNoBackendMayTakeAndWhatThisOneDoesNotOffer) {
  CompletionQueue cq;
  uint8_t buf[16] = {};
  const Sge one{buf, sizeof buf};
  const WorkRequest runs = WorkRequest::WriteRuns(1, 0, 0, {&one, 1});
  ValidateOnlyNic plain(false), with_runs(true);
  const Status refused = plain.Post(&cq, {&runs, 1});
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.ToString().find("WRITE_RUNS: not offered by this NIC"), std::string::npos) << refused.ToString();
  EXPECT_TRUE(with_runs.Post(&cq, {&runs, 1}).ok());
  EXPECT_TRUE(plain.Post(&cq, std::vector<WorkRequest>{WorkRequest::Write(1, 0, 0, {&one, 1}),
                                                       WorkRequest::Read(0, 0, 0, {&one, 1})}).ok());

  std::vector<WorkRequest> bad;
  bad.push_back(WorkRequest::Write(2, 0, 0, {&one, 1}));  // no node 2 of 2
  WorkRequest w = WorkRequest::Write(1, 0, 0, {&one, 1});
  w.num_sge = kMaxSge + 1;
  bad.push_back(w);
  w = WorkRequest::Write(1, 0, 0, {&one, 1});
  w.sge[0].addr = nullptr;
  bad.push_back(w);
  w = WorkRequest::Read(1, 0, 0, {&one, 1});
  w.sge[0].length = kMaxTransfer + 1;
  bad.push_back(w);
  w = WorkRequest::Cas(1, 0, 0, 1, 2);
  w.num_sge = 1;
  w.sge[0] = one;
  bad.push_back(w);
  bad.push_back(WorkRequest::Lock(1, kMaxLocks));
  w = WorkRequest::Send(1, {&one, 1});
  w.op = static_cast<Opcode>(99);
  bad.push_back(w);
  for (const WorkRequest& b : bad) EXPECT_FALSE(with_runs.Post(&cq, {&b, 1}).ok()) << ToString(b.op);
}

TEST(WaitQueueTest, PollWaitAndTimeoutInBothModes) {
  for (WaitMode mode : {WaitMode::kAdaptive, WaitMode::kBusyPoll}) {
    WaitQueue<int> q({mode});
    int out[4];
    EXPECT_EQ(q.Poll(out), 0u);
    EXPECT_EQ(q.Wait(out, std::chrono::milliseconds(1)), 0u);
    q.Push(1);
    q.Push(2);
    EXPECT_EQ(q.Poll(out), 2u);
    EXPECT_EQ(out[1], 2);
    std::thread t([&] {
      for (int i = 0; i < 1000; ++i) q.Push(i);
    });
    int got = 0, expect = 0;
    while (got < 1000) {
      size_t n = q.Wait(out, std::chrono::seconds(30));
      ASSERT_GT(n, 0u);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expect++);
      got += static_cast<int>(n);
    }
    t.join();
  }
}

// The ring grows while its items wrap around its end, and keeps items that
// own memory (a Message's bytes) whole and in order.
TEST(WaitQueueTest, ItemsStayInOrderAcrossGrowthOfAWrappedRing) {
  WaitQueue<std::vector<int>> q;
  std::vector<int> out[64];
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 5 + 7 * round; ++i, ++next_in) q.Push(std::vector<int>(3, next_in));
    const size_t n = q.Poll({out, size_t(3 + 4 * round)});  // leave some: the next pushes wrap
    for (size_t i = 0; i < n; ++i, ++next_out) ASSERT_EQ(out[i], std::vector<int>(3, next_out));
  }
  while (const size_t n = q.Poll(out))
    for (size_t i = 0; i < n; ++i, ++next_out) ASSERT_EQ(out[i], std::vector<int>(3, next_out));
  EXPECT_EQ(next_out, next_in);
  EXPECT_EQ(q.size(), 0u);
}

TEST(WaitQueueTest, SleepingWaiterIsWoken) {
  WaitQueue<int> q;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin
    q.Push(7);
  });
  int v = 0;
  EXPECT_EQ(q.Wait({&v, 1}, std::chrono::seconds(30)), 1u);
  EXPECT_EQ(v, 7);
  t.join();
}

// A consumer asked to stop is not left asleep for its whole timeout (the
// runtime's handler thread at exit), and later waits return at once.
TEST(WaitQueueTest, StopWaitsWakesASleeperWithoutAnItem) {
  WaitQueue<int> q;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin
    q.StopWaits();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(q.WaitReady(std::chrono::seconds(60)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  t.join();
  int v = 0;
  EXPECT_EQ(q.Wait({&v, 1}, std::chrono::seconds(60)), 0u);
  q.Push(3);  // items still come through
  EXPECT_EQ(q.Wait({&v, 1}, std::chrono::seconds(60)), 1u);
  EXPECT_EQ(v, 3);
}

// Counts the drives of a waiter's spin, and how it left (got an item or not).
class CountingDriver final : public QueueDriver {
 public:
  bool Drive() override {
    drives.fetch_add(1);
    return false;
  }
  void Leave(bool got) override { (got ? left_with : left_without).fetch_add(1); }
  std::atomic<int> drives{0}, left_with{0}, left_without{0};
};

// A wait told not to spin (the runtime's handler while an application
// thread spins on the same queue) does not drive and sleeps until the push.
TEST(WaitQueueTest, WaitReadyDoesNotSpinWhileItMayNot) {
  WaitQueue<int> q;
  auto driver = std::make_shared<CountingDriver>();
  q.set_driver(driver);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    q.Push(1);
  });
  EXPECT_TRUE(q.WaitReady(std::chrono::seconds(30), [] { return false; }));
  t.join();
  EXPECT_EQ(driver->drives.load(), 0);
  int v = 0;
  EXPECT_EQ(q.Poll({&v, 1}), 1u);
  // Allowed to spin, the same wait drives; told to stop while it spins, it
  // stops (and leaves as a waiter without an item), then sleeps on.
  std::atomic<bool> other_spins{false};
  std::thread u([&] {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    other_spins = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // well past the spin
    q.Push(2);
  });
  EXPECT_TRUE(q.WaitReady(std::chrono::seconds(30), [&] { return !other_spins.load(); }));
  u.join();
  EXPECT_GT(driver->drives.load(), 0);
  EXPECT_EQ(driver->left_with.load(), 0);
  EXPECT_EQ(driver->left_without.load(), 1);
}

// Pushes made while a thread watches the queue leave its sleepers asleep
// (the watcher takes the items); one left when the watch ends wakes a
// sleeper then, so nothing waits for the sleeper's timeout.
TEST(WaitQueueTest, AWatchEndingWithItemsLeftWakesASleeper) {
  WaitQueue<int> q;
  std::atomic<bool> asleep{false};
  std::thread sleeper([&] {
    asleep = true;
    EXPECT_TRUE(q.WaitReady(std::chrono::seconds(60), [] { return false; }));
  });
  while (!asleep) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // asleep by now, most likely
  const auto start = std::chrono::steady_clock::now();
  {
    WaitQueue<int>::Watch watch(&q);
    EXPECT_TRUE(q.watched());
    q.Push(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(q.watched());
  sleeper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // A watch that ends with nothing left wakes nobody and needs nobody.
  int v = 0;
  EXPECT_EQ(q.Poll({&v, 1}), 1u);
  { WaitQueue<int>::Watch watch(&q); }
  EXPECT_EQ(q.size(), 0u);
}

}  // namespace
}  // namespace svm::nic
