// The backend-independent pieces: LockTable, RegionTable, WaitQueue, Validate,
// and the received messages' BufferPool.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "nic_ext/lock_table.h"
#include "nic_ext/queue.h"
#include "nic_ext/region_table.h"
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
