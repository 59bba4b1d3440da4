// Two Heap objects on one region play two nodes: blocks freed by the node
// that does not own them go through the remote_free hook, and become
// reusable only once the owner calls FreeLocal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "libsvm/alloc/heap.h"
#include "tests/alloc/test_region.h"

namespace svm::alloc {
namespace {

using testing::Check;
using testing::Fill;
using testing::TestRegion;

constexpr size_t kMiB = size_t(1) << 20;

// What the runtime would batch into messages.
struct Outbox {
  std::mutex mu;
  std::vector<std::pair<uint32_t, void*>> sent;
  static void Hook(void* ctx, uint32_t owner, void* p) {
    auto* o = static_cast<Outbox*>(ctx);
    std::lock_guard<std::mutex> g(o->mu);
    o->sent.push_back({owner, p});
  }
};

class TwoNodes : public ::testing::Test {
 protected:
  TwoNodes() : region_(1024 * kMiB) {}
  void SetUp() override {
    ASSERT_TRUE(region_.ok());
    for (uint32_t n = 0; n < 2; ++n) {
      HeapOptions o = region_.Options(2, n);
      o.remote_free = &Outbox::Hook;
      o.remote_free_ctx = &out_[n];
      node_[n] = std::make_unique<Heap>(o);
    }
  }
  // The owner's message handler.
  void Deliver(uint32_t from) {
    for (auto& [owner, p] : out_[from].sent) node_[owner]->FreeLocal(p);
    out_[from].sent.clear();
  }
  TestRegion region_;
  Outbox out_[2];
  std::unique_ptr<Heap> node_[2];
};

TEST_F(TwoNodes, EachNodeAllocatesInItsOwnSlice) {
  for (uint32_t n = 0; n < 2; ++n) {
    for (size_t size : {size_t(8), size_t(5000), size_t(3 * kMiB)}) {
      void* p = node_[n]->Malloc(size);
      EXPECT_EQ(node_[0]->Owner(p), n);
      EXPECT_EQ(node_[1]->Owner(p), n);
      node_[n]->Free(p);
    }
  }
  EXPECT_TRUE(out_[0].sent.empty() && out_[1].sent.empty());
}

TEST_F(TwoNodes, SmallFreeCrossesThroughTheHook) {
  Heap& a = *node_[0];
  Heap& b = *node_[1];
  void* p = b.Malloc(48);
  EXPECT_EQ(a.UsableSize(p), 48u);  // from the address alone
  a.Free(p);
  ASSERT_EQ(out_[0].sent.size(), 1u);
  EXPECT_EQ(out_[0].sent[0].first, 1u);
  EXPECT_EQ(out_[0].sent[0].second, p);
  void* q = b.Malloc(48);
  EXPECT_NE(q, p);  // not reusable yet
  Deliver(0);
  EXPECT_EQ(b.Malloc(48), p);  // reusable after FreeLocal
  b.Free(p);
  b.Free(q);
}

TEST_F(TwoNodes, LargeBlockSizeComesFromItsHeader) {
  Heap& a = *node_[0];
  Heap& b = *node_[1];
  void* p = b.Malloc(3 * kMiB + 5);
  EXPECT_EQ(a.UsableSize(p), b.UsableSize(p));
  EXPECT_GE(a.UsableSize(p), 3 * kMiB + 5);
  Fill(p, 3 * kMiB + 5, 3);
  void* q = a.Realloc(p, 4 * kMiB);  // moves into node 0's slice
  EXPECT_EQ(a.Owner(q), 0u);
  EXPECT_TRUE(Check(q, 3 * kMiB + 5, 3));
  ASSERT_EQ(out_[0].sent.size(), 1u);
  EXPECT_EQ(b.TEST_LargeLiveBlocks(), 1u);
  Deliver(0);
  EXPECT_EQ(b.TEST_LargeLiveBlocks(), 0u);
  a.Free(q);
}

TEST_F(TwoNodes, ReallocOfARemoteBlock) {
  Heap& a = *node_[0];
  Heap& b = *node_[1];
  char* p = static_cast<char*>(b.Malloc(100));
  Fill(p, 100, 9);
  EXPECT_EQ(a.Realloc(p, 90), p);  // shrink within the class: in place
  EXPECT_TRUE(out_[0].sent.empty());
  void* q = a.Realloc(p, 1000);
  EXPECT_EQ(a.Owner(q), 0u);
  EXPECT_TRUE(Check(q, 90, 9));
  EXPECT_EQ(out_[0].sent.size(), 1u);
  Deliver(0);
  a.Free(q);
}

TEST_F(TwoNodes, CrossFreesFromManyThreads) {
  // Node 1 allocates, node 0's threads free; node 1 receives the batch.
  Heap& a = *node_[0];
  Heap& b = *node_[1];
  std::vector<void*> ps;
  for (int i = 0; i < 4000; ++i) {
    const size_t n = size_t(16 + (i * 37) % 3000);
    void* p = b.Malloc(n);
    Fill(p, n, uint32_t(i));
    ps.push_back(p);
  }
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (size_t i = size_t(t); i < ps.size(); i += 4) {
        const size_t n = size_t(16 + (i * 37) % 3000);
        EXPECT_TRUE(Check(ps[i], n, uint32_t(i)));
        a.Free(ps[i]);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(out_[0].sent.size(), ps.size());
  Deliver(0);
  // Every freed block is handed out again: allocating the same sizes twice
  // over reaches all of them (a thread cache may hold a few fresh blocks
  // from before, handed out first).
  std::vector<void*> again;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 4000; ++i) again.push_back(b.Malloc(size_t(16 + (i * 37) % 3000)));
  std::sort(again.begin(), again.end());
  size_t reused = 0;
  for (void* p : ps) reused += std::binary_search(again.begin(), again.end(), p);
  EXPECT_EQ(reused, ps.size());
  for (void* p : again) b.Free(p);
}

TEST_F(TwoNodes, FreeLocalOfAnotherNodesBlockDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  void* p = node_[1]->Malloc(32);
  EXPECT_DEATH(node_[0]->FreeLocal(p), "FreeLocal\\(\\): block not in this node's slice");
  EXPECT_DEATH(node_[0]->Free(static_cast<char*>(p) + 8), "free\\(\\): invalid pointer");
}

TEST(RemoteFreeNoHook, IsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TestRegion region(64 * kMiB);
  Heap a(region.Options(2, 0)), b(region.Options(2, 1));
  void* p = b.Malloc(32);
  EXPECT_DEATH(a.Free(p), "no remote_free hook");
}

}  // namespace
}  // namespace svm::alloc
