// Hand-driven checks of svm::Node with a tiny in-process cluster. The broad,
// randomised checking lives in tests/sim; these pin down single behaviours.
#include "protocol/node.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>

#include "protocol/diff.h"
#include "protocol/wire.h"

namespace svm {
namespace {

constexpr size_t kPage = 4096;

class Cluster;

// The memory side of a Host (frames, protection, versions, wake-ups), which
// both test hosts below share.
class MemoryHost : public Host {
 public:
  explicit MemoryHost(NodeId nodes) : nodes_(nodes) {}
  std::span<uint8_t> Frame(PageId p) override {
    auto& f = frames_[p];
    if (f.empty()) f.resize(kPage);
    return f;
  }
  void Protect(PageId first, size_t count, Prot prot) override {
    for (PageId p = first; p < first + count; ++p) {
      // A page read already keeps its record of writes (as the trap does).
      if (prot != Prot::kRead || this->prot(p) != Prot::kRead) armed_[p] = prot == Prot::kRead;
      prot_[p] = prot;
    }
    protect_calls++;
  }
  // With `fills`, as the kernel's UFFDIO_COPY: a page with no frame gets one
  // holding its bytes, mapped as asked; stops at a page with a frame.
  size_t Fill(PageId first, size_t count, std::span<const uint8_t> data, Prot prot) override {
    EXPECT_TRUE(fills) << "Fill where the host does not fill";
    EXPECT_NE(prot, Prot::kNone);
    EXPECT_EQ(data.size(), count * kPage);
    fill_calls++;
    size_t done = 0;
    for (; done < count && !frames_.count(first + done); ++done) {
      const PageId p = first + done;
      frames_[p].assign(data.begin() + done * kPage, data.begin() + (done + 1) * kPage);
      armed_[p] = prot == Prot::kRead;
      prot_[p] = prot;
      filled.push_back(p);
    }
    return done;
  }
  bool Fills() const override { return fills; }
  void Populate(std::span<uint8_t> memory) override { populated.push_back(memory); }
  // scan_writes, as the kernel's async write-protect: a write to a read page
  // goes through and clears its armed bit; FindWritten reports mapped pages
  // that are not armed and arms them.
  void FindWritten(PageId first, size_t count, std::vector<PageId>* written) override {
    EXPECT_TRUE(scan_writes) << "FindWritten without scan_writes";
    for (PageId p = first; p < first + count; ++p) {
      if (prot(p) == Prot::kNone || armed_[p]) continue;
      written->push_back(p);
      armed_[p] = true;
    }
    scans++;
  }
  void WriteThrough(PageId p) { armed_[p] = false; }
  uint64_t& SharedMark(PageId p) override { return marks_[p]; }
  uint64_t& HomeWord(PageId p) override { return home_words_[p]; }
  PageId FramesEnd(PageId) override { return frames_end; }
  void Wake(ThreadId t) override { woken.insert(t); }
  uint32_t JobThreads() override { return job_threads; }
  std::span<IntervalId> Versions(PageId p) override {
    auto& v = versions_[p];
    if (v.empty()) v.resize(nodes_);
    return v;
  }

  Prot prot(PageId p) const {
    auto it = prot_.find(p);
    return it == prot_.end() ? Prot::kNone : it->second;
  }
  std::set<ThreadId> woken;
  uint32_t job_threads = 0;  // 0: no barrier collects garbage
  int protect_calls = 0;
  int scans = 0;
  bool fills = false;
  int fill_calls = 0;
  std::vector<PageId> filled;  // by Fill, in order
  std::vector<std::span<uint8_t>> populated;  // twin slabs, in order
  bool scan_writes = false;
  PageId frames_end = UINT64_MAX;  // one run of frames

 private:
  NodeId nodes_;
  std::map<PageId, std::vector<uint8_t>> frames_;
  std::map<PageId, Prot> prot_;
  std::map<PageId, bool> armed_;
  std::map<PageId, std::vector<IntervalId>> versions_;
  std::map<PageId, uint64_t> marks_;
  std::map<PageId, uint64_t> home_words_;
};

class TestHost : public MemoryHost {
 public:
  TestHost(Cluster* c, NodeId self, NodeId nodes) : MemoryHost(nodes), cluster_(c), self_(self) {}
  void Send(NodeId to, std::vector<uint8_t> bytes) override;
  // The cluster runs base mode: no one-sided operation may be posted.
  void ReadPages(NodeId, PageId, uint32_t, uint32_t, uint64_t, Landing) override {
    ADD_FAILURE() << "ReadPages in base mode";
  }
  void WriteDiff(NodeId, PageId, IntervalId, std::span<const uint8_t>) override {
    ADD_FAILURE() << "WriteDiff in base mode";
  }
  void DepositNotice(const WriteNotice&) override { ADD_FAILURE() << "DepositNotice in base mode"; }
  void TakeNotices(std::vector<WriteNotice>*) override { ADD_FAILURE() << "TakeNotices in base mode"; }
  void NicLockTail(NodeId, LockId, NodeId) override { ADD_FAILURE() << "NicLockTail in base mode"; }
  void ClaimHome(NodeId, PageId, uint32_t, uint32_t) override { ADD_FAILURE() << "ClaimHome in base mode"; }
  void DropMarks(NodeId, std::span<const PageId>) override { ADD_FAILURE() << "DropMarks in base mode"; }
  // Each nudge with the number of messages sent before it.
  void Nudge(NodeId to) override;
  std::vector<std::pair<NodeId, size_t>> nudged;

 private:
  Cluster* cluster_;
  NodeId self_;
};

class Cluster {
 public:
  Cluster(NodeId n, uint32_t threads, HomePolicy policy = HomePolicy::kCyclic, uint32_t max_run = 1,
          bool scan_writes = false, uint32_t barrier_fanout = NodeConfig{}.barrier_fanout) {
    for (NodeId i = 0; i < n; ++i) {
      hosts_.push_back(std::make_unique<TestHost>(this, i, n));
      hosts_.back()->job_threads = n * threads;
      hosts_.back()->scan_writes = scan_writes;
    }
    for (NodeId i = 0; i < n; ++i) {
      NodeConfig c;
      c.self = i;
      c.geometry = Geometry{kPage, 16, n};
      c.threads = threads;
      c.home_policy = policy;
      c.max_run = max_run;
      c.scan_writes = scan_writes;
      c.barrier_fanout = barrier_fanout;
      nodes_.push_back(std::make_unique<Node>(c, hosts_[i].get()));
    }
  }
  void Post(NodeId from, NodeId to, std::vector<uint8_t> bytes) {
    queue_.push_back({from, to, std::move(bytes)});
    sent++;
  }
  // Delivers messages in send order until none is left but those of held
  // pairs (each pair stays FIFO, as the transport promises).
  // At most `max` messages: a retry loop cannot hang the test.
  void Drain(size_t max = SIZE_MAX) {
    for (auto it = queue_.begin(); it != queue_.end() && max > 0; --max) {
      if (held_.count({it->from, it->to})) {
        ++it;
        continue;
      }
      auto m = std::move(*it);
      queue_.erase(it);
      wire::Header h;
      if (wire::DecodeHeader(m.bytes, &h).ok()) delivered[{m.to, h.type}]++;
      Status st = nodes_[m.to]->Receive(m.from, m.bytes);
      ASSERT_TRUE(st.ok()) << st.ToString();
      it = queue_.begin();
    }
  }
  void Hold(NodeId from, NodeId to) { held_.insert({from, to}); }
  void Unhold(NodeId from, NodeId to) { held_.erase({from, to}); }
  Node& node(NodeId n) { return *nodes_[n]; }
  TestHost& host(NodeId n) { return *hosts_[n]; }

  // Runs an operation to completion, delivering messages while it blocks.
  template <typename Op>
  void Complete(Op op) {
    Outcome o = op();
    for (int i = 0; i < 100 && o == Outcome::kBlocked; ++i) {
      Drain();
      o = op();
    }
    ASSERT_EQ(o, Outcome::kDone);
  }
  void Write(NodeId n, ThreadId t, PageId p, size_t off, uint8_t v) {
    if (host(n).scan_writes && host(n).prot(p) == Prot::kRead) {  // no fault
      host(n).Frame(p)[off] = v;
      host(n).WriteThrough(p);
      return;
    }
    if (host(n).prot(p) != Prot::kReadWrite)
      Complete([&] { return node(n).Fault(t, p, Access::kWrite); });
    if (host(n).scan_writes && host(n).prot(p) == Prot::kRead) {  // lets it through
      host(n).WriteThrough(p);
    } else {
      ASSERT_EQ(host(n).prot(p), Prot::kReadWrite);
    }
    host(n).Frame(p)[off] = v;
  }
  uint8_t Read(NodeId n, ThreadId t, PageId p, size_t off) {
    if (host(n).prot(p) == Prot::kNone)
      Complete([&] { return node(n).Fault(t, p, Access::kRead); });
    EXPECT_NE(host(n).prot(p), Prot::kNone);
    return host(n).Frame(p)[off];
  }
  void BarrierAll(BarrierId b, uint32_t threads) {
    const uint32_t total = static_cast<uint32_t>(nodes_.size()) * threads;
    std::vector<std::pair<NodeId, ThreadId>> all;
    for (NodeId n = 0; n < nodes_.size(); ++n)
      for (ThreadId t = 0; t < threads; ++t) {
        node(n).Barrier(t, b, total, threads);
        all.push_back({n, t});
      }
    Drain();
    for (auto [n, t] : all) ASSERT_EQ(node(n).Barrier(t, b, total, threads), Outcome::kDone);
  }

  size_t sent = 0;
  std::map<std::pair<NodeId, MessageType>, size_t> delivered;  // by Drain
  size_t Delivered(NodeId to, MessageType type) { return delivered[{to, type}]; }

 private:
  struct InFlight {
    NodeId from, to;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::unique_ptr<TestHost>> hosts_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::deque<InFlight> queue_;
  std::set<std::pair<NodeId, NodeId>> held_;
};

void TestHost::Send(NodeId to, std::vector<uint8_t> bytes) {
  cluster_->Post(self_, to, std::move(bytes));
}

void TestHost::Nudge(NodeId to) { nudged.push_back({to, cluster_->sent}); }

TEST(NodeTest, BarrierPublishesWritesToAnotherNode) {
  Cluster c(2, 1);
  // Page 1 is homed on node 1 (cyclic); node 0 writes it through a twin.
  c.Write(0, 0, 1, 10, 42);
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.Read(1, 0, 1, 10), 42);
  EXPECT_EQ(c.node(0).stats().diffs, 1u);
  EXPECT_EQ(c.node(1).stats().diffs_applied, 1u);
}

// Page runs: a sweep over pages homed elsewhere fetches 1, then 2, then 4
// pages a request; pages fetched ahead are mapped at once, except the last
// of a run, which stays unmapped until touched, and its first touch costs
// no message.
TEST(NodeTest, SequentialFaultsFetchGrowingPageRuns) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);  // node 1 is home of pages 8..15
  c.host(1).Frame(11)[0] = 11;
  EXPECT_EQ(c.Read(0, 0, 8, 0), 0);
  EXPECT_EQ(c.node(0).stats().pages_ahead, 0u);  // the thread's first fault: no sweep yet
  EXPECT_EQ(c.Read(0, 0, 9, 0), 0);               // a sweep: 9 and 10
  EXPECT_EQ(c.node(0).stats().pages_ahead, 1u);
  EXPECT_EQ(c.host(0).prot(10), Prot::kNone);
  const size_t sent = c.sent;
  EXPECT_EQ(c.Read(0, 0, 10, 0), 0);
  EXPECT_EQ(c.sent, sent);  // a local fault
  EXPECT_EQ(c.host(0).prot(10), Prot::kRead);
  EXPECT_EQ(c.node(0).stats().ahead_used, 1u);
  EXPECT_EQ(c.Read(0, 0, 11, 0), 11);  // 11..14
  EXPECT_EQ(c.node(0).stats().pages_ahead, 4u);
  EXPECT_EQ(c.node(0).stats().fetches, 3u);
  EXPECT_EQ(c.node(0).stats().pages_fetched, 7u);
  for (PageId p : {12, 13}) EXPECT_EQ(c.host(0).prot(p), Prot::kRead) << p;
  EXPECT_EQ(c.host(0).prot(14), Prot::kNone);  // watched
  // The home's frames were marked: its later writes are noted and reach the
  // reader, whose copies are dropped, the watched one counted unused.
  EXPECT_EQ(c.host(1).SharedMark(13), 1u);
  EXPECT_EQ(c.host(1).SharedMark(14), 1u);
  c.Write(1, 0, 13, 0, 42);
  c.Write(1, 0, 14, 0, 43);
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.node(0).stats().ahead_unused, 1u);
  EXPECT_EQ(c.Read(0, 0, 13, 0), 42);
  EXPECT_EQ(c.Read(0, 0, 14, 0), 43);
  EXPECT_EQ(c.Read(0, 0, 12, 0), 0);
  EXPECT_EQ(c.node(0).stats().ahead_used, 1u);
}

// A host that fills (the runtime on uffd): pages never fetched here are
// installed by Host::Fill, a run per call, with no write through Frame()
// first; the last page ahead (watched, unmapped) and pages fetched again
// after an invalidation (their frames exist) go through Frame() as before.
TEST(NodeTest, FetchedPagesWithoutFramesAreFilled) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);  // node 1 is home of pages 8..15
  c.host(0).fills = true;
  for (PageId p = 8; p < 16; ++p) c.host(1).Frame(p)[7] = uint8_t(p);
  EXPECT_EQ(c.Read(0, 0, 8, 7), 8);
  EXPECT_EQ(c.Read(0, 0, 9, 7), 9);   // 9 and 10 (watched)
  EXPECT_EQ(c.Read(0, 0, 10, 7), 10);
  EXPECT_EQ(c.Read(0, 0, 11, 7), 11);  // 11..14, 14 watched
  EXPECT_EQ(c.host(0).filled, (std::vector<PageId>{8, 9, 11, 12, 13}));
  EXPECT_EQ(c.host(0).fill_calls, 3);  // 8; 9; 11..13 in one call
  EXPECT_EQ(c.node(0).stats().pages_filled, 5u);
  for (PageId p : {8, 9, 10, 11, 12, 13}) EXPECT_EQ(c.host(0).prot(p), Prot::kRead) << p;
  EXPECT_EQ(c.host(0).prot(14), Prot::kNone);
  EXPECT_EQ(c.Read(0, 0, 14, 7), 14);
  // Written at the home, invalidated here, fetched again into the frames.
  c.Write(1, 0, 12, 7, 42);
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.host(0).prot(12), Prot::kNone);
  EXPECT_EQ(c.Read(0, 0, 12, 7), 42);
  EXPECT_EQ(c.host(0).fill_calls, 3);
  EXPECT_EQ(c.node(0).stats().pages_filled, 5u);
}

// A page the Node thinks has no frame but has one (a first touch here
// zero-filled it) is written through Frame() and protected; the pages after
// it in the run are still filled.
TEST(NodeTest, FillStoppedByAFrameFallsBack) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);
  c.host(0).fills = true;
  for (PageId p = 8; p < 16; ++p) c.host(1).Frame(p)[0] = uint8_t(p);
  c.host(0).Frame(12);  // a frame, never mapped
  EXPECT_EQ(c.Read(0, 0, 8, 0), 8);
  EXPECT_EQ(c.Read(0, 0, 9, 0), 9);
  EXPECT_EQ(c.Read(0, 0, 10, 0), 10);
  EXPECT_EQ(c.Read(0, 0, 11, 0), 11);  // 11..14: 11 filled, 12 not, 13 filled
  EXPECT_EQ(c.host(0).filled, (std::vector<PageId>{8, 9, 11, 13}));
  for (PageId p : {11, 12, 13}) {
    EXPECT_EQ(c.host(0).prot(p), Prot::kRead) << p;
    EXPECT_EQ(c.Read(0, 0, p, 0), p);
  }
  EXPECT_EQ(c.node(0).stats().pages_filled, 4u);
}

// Under scan_writes the eager twin of a filled page is taken from the bytes
// fetched: a write found later diffs against them, sending only itself.
TEST(NodeTest, FilledPageTwinIsTheFetchedCopy) {
  Cluster c(2, 1, HomePolicy::kCyclic, 1, /*scan_writes=*/true);  // page 1 homed on node 1
  c.host(0).fills = true;
  std::span<uint8_t> home = c.host(1).Frame(1);
  for (size_t i = 0; i < kPage; ++i) home[i] = uint8_t(i * 7);
  EXPECT_EQ(c.Read(0, 0, 1, 100), uint8_t(700));
  EXPECT_EQ(c.host(0).filled, (std::vector<PageId>{1}));
  c.Write(0, 0, 1, 5, 1);  // through, found by the barrier's scan
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.node(0).stats().diffs, 1u);
  EXPECT_EQ(c.node(0).stats().diff_bytes, 1u);
  EXPECT_EQ(c.Read(1, 0, 1, 5), 1);
  EXPECT_EQ(c.Read(1, 0, 1, 6), uint8_t(42));
}

// A sweep that reads a little of another node's block each interval (a
// Jacobi boundary row) stops fetching that block whole: an unused page ahead
// shrinks the window more than a sequential fault grows it, so a window grown
// by an earlier long sweep comes down instead of staying at its top.
TEST(NodeTest, RunsThatGoUnusedShrinkTheWindow) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);  // node 1 is home of pages 8..15
  for (PageId p = 8; p < 16; ++p) EXPECT_EQ(c.Read(0, 0, p, 0), 0);  // grows the window to 8
  std::vector<uint64_t> fetched;
  for (int i = 1; i <= 5; ++i) {
    for (PageId p = 8; p < 16; ++p) c.Write(1, 0, p, 0, uint8_t(i));
    c.BarrierAll(2 * i, 1);
    const uint64_t before = c.node(0).stats().pages_fetched;
    EXPECT_EQ(c.Read(0, 0, 8, 0), i);
    EXPECT_EQ(c.Read(0, 0, 9, 0), i);
    fetched.push_back(c.node(0).stats().pages_fetched - before);
    c.BarrierAll(2 * i + 1, 1);
  }
  EXPECT_EQ(fetched.front(), 8u);  // 8, then 9..15 ahead
  EXPECT_LE(fetched.back(), 3u) << "the window stayed open";
}

// A row of another node's block read again each interval (a Jacobi
// boundary: the last two pages of the block) comes in one fetch from the
// second interval on, not one for its first page and one for the rest (its
// last page, watched, still faults, locally); a sweep that stops short of
// the remembered run forgets it.
TEST(NodeTest, SweepReadAgainComesInOneFetch) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);  // node 1 is home of pages 8..15
  auto interval = [&](int i, bool whole_row) {
    c.Write(1, 0, 14, 0, uint8_t(i));
    c.Write(1, 0, 15, 0, uint8_t(i + 100));
    c.BarrierAll(2 * i, 1);
    const uint64_t fetches = c.node(0).stats().fetches, pages = c.node(0).stats().pages_fetched;
    EXPECT_EQ(c.Read(0, 0, 14, 0), i);
    if (whole_row) {
      EXPECT_EQ(c.Read(0, 0, 15, 0), i + 100);
    }
    c.BarrierAll(2 * i + 1, 1);
    return std::pair{c.node(0).stats().fetches - fetches, c.node(0).stats().pages_fetched - pages};
  };
  using Fetched = std::pair<uint64_t, uint64_t>;  // fetches, pages
  EXPECT_EQ(interval(1, true), Fetched(2, 2));  // 14, then 15
  for (int i = 2; i <= 4; ++i) EXPECT_EQ(interval(i, true), Fetched(1, 2)) << i;
  EXPECT_EQ(c.node(0).stats().ahead_used, 3u);
  EXPECT_EQ(c.node(0).stats().ahead_unused, 0u);
  EXPECT_EQ(interval(5, false), Fetched(1, 2));  // 15 unused, dropped by the next notice
  EXPECT_EQ(interval(6, false), Fetched(1, 1)) << "fetched 15 again after it went unused";
  EXPECT_EQ(c.node(0).stats().ahead_unused, 1u);
  EXPECT_EQ(interval(7, true), Fetched(2, 2));  // and learns it again
  EXPECT_EQ(interval(8, true), Fetched(1, 2));
}

// A fault that blocks is asked again once its reply is in: it counts once.
TEST(NodeTest, ABlockedFaultCountsOnce) {
  Cluster c(2, 1);  // page 1 is homed on node 1 (cyclic)
  EXPECT_EQ(c.node(0).Fault(0, 1, Access::kRead), Outcome::kBlocked);
  c.Drain();
  EXPECT_EQ(c.node(0).Fault(0, 1, Access::kRead), Outcome::kDone);
  EXPECT_EQ(c.node(0).stats().read_faults, 1u);
  c.Write(0, 0, 1, 0, 5);  // a second fault of the same page: a new one
  EXPECT_EQ(c.node(0).stats().read_faults, 1u);
  EXPECT_EQ(c.node(0).stats().write_faults, 1u);
  EXPECT_EQ(c.Read(0, 0, 3, 0), 0);
  EXPECT_EQ(c.node(0).stats().read_faults, 2u);
}

// A thread writing its tracked home pages in order faults on the first two,
// then on fewer and fewer: each fault in sequence opens 1, 3, 7... pages
// after it, noted as written, so the readers still see every write.
TEST(NodeTest, SequentialHomeWritesOpenTheNextPages) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);  // node 0 is home of pages 0..7
  for (PageId p = 0; p < 8; ++p) c.Write(0, 0, p, 0, 1);
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), 1) << p;
  c.BarrierAll(1, 1);  // node 1 held them all: node 0's pages are tracked
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), 1) << p;  // and holds them again
  const uint64_t faults = c.node(0).stats().write_faults;
  for (PageId p = 0; p < 8; ++p) c.Write(0, 0, p, 0, uint8_t(10 + p));
  EXPECT_EQ(c.node(0).stats().write_faults - faults, 4u);  // pages 0, 1, 3 and 7
  EXPECT_EQ(c.node(0).stats().pages_written_ahead, 4u);   // 2, then 4..6
  c.BarrierAll(2, 1);
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), 10 + p) << p;
  // Out of sequence, a fault opens nothing.
  const uint64_t ahead = c.node(0).stats().pages_written_ahead;
  c.Write(0, 0, 5, 0, 1);
  c.Write(0, 0, 2, 0, 1);
  EXPECT_EQ(c.node(0).stats().pages_written_ahead, ahead);
  EXPECT_EQ(c.host(0).prot(3), Prot::kRead);
}

// scan_writes: writes to tracked pages, home pages and copies alike, need no
// fault; the interval's end finds them (a notice for the home page, a diff
// for the copy), and arms them again.
TEST(NodeTest, ScanWritesFindTrackedWritesWithoutFaults) {
  Cluster c(2, 1, HomePolicy::kCyclic, 1, /*scan_writes=*/true);  // page 0 homed on node 0, 1 on node 1
  c.Write(0, 0, 0, 0, 1);
  EXPECT_EQ(c.Read(1, 0, 0, 0), 1);
  EXPECT_EQ(c.Read(0, 0, 1, 0), 0);  // node 0's copy of page 1, twinned on arrival
  EXPECT_EQ(c.node(0).stats().twins, 1u);
  c.BarrierAll(1, 1);                 // node 1 held page 0: tracked from now on
  EXPECT_EQ(c.Read(1, 0, 0, 0), 1);
  ASSERT_EQ(c.host(0).prot(0), Prot::kRead);
  ASSERT_EQ(c.host(0).prot(1), Prot::kRead);
  const NodeStats before = c.node(0).stats();
  c.Write(0, 0, 0, 8, 2);
  c.Write(0, 0, 1, 9, 3);
  EXPECT_EQ(c.node(0).stats().write_faults, before.write_faults);
  c.BarrierAll(2, 1);
  EXPECT_EQ(c.node(0).stats().pages_found_written - before.pages_found_written, 2u);
  EXPECT_EQ(c.node(0).stats().diffs - before.diffs, 1u);
  EXPECT_EQ(c.node(0).stats().twins, 1u);  // the copy keeps its twin
  EXPECT_EQ(c.Read(1, 0, 0, 8), 2);        // the notice dropped node 1's copy
  EXPECT_EQ(c.Read(1, 0, 1, 9), 3);        // the diff reached the home
  // Armed again: a write after the look is found by the next one, and
  // only that.
  c.Write(0, 0, 1, 10, 4);
  c.BarrierAll(3, 1);
  EXPECT_EQ(c.node(0).stats().pages_found_written - before.pages_found_written, 3u);
  EXPECT_EQ(c.Read(1, 0, 1, 10), 4);
  EXPECT_EQ(c.Read(1, 0, 1, 9), 3);
  c.BarrierAll(4, 1);
  EXPECT_EQ(c.node(0).stats().pages_found_written - before.pages_found_written, 3u);
  EXPECT_EQ(c.node(0).stats().write_faults, before.write_faults);
}

// scan_writes: a copy written without a fault and then dropped by another
// node's notice (false sharing) is compared with its twin once unmapped: it
// stays as a stale dirty copy, fetched safely, and its write still reaches
// the home.
TEST(NodeTest, ScanWritesDroppedCopyKeepsItsWrites) {
  Cluster c(2, 1, HomePolicy::kCyclic, 1, /*scan_writes=*/true);  // page 1 homed on node 1
  const LockId l = 0x1000;
  EXPECT_EQ(c.Read(0, 0, 1, 0), 0);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.Write(1, 0, 1, 100, 7);
  c.node(1).Release(0, l);
  c.Write(0, 0, 1, 5, 9);  // no fault: node 0's copy is read-mapped, twinned
  c.Complete([&] { return c.node(0).Acquire(0, l); });  // applies node 1's notice
  EXPECT_EQ(c.host(0).prot(1), Prot::kNone);
  EXPECT_EQ(c.node(0).stats().pages_found_written, 1u);
  EXPECT_EQ(c.Read(0, 0, 1, 100), 7);
  EXPECT_EQ(c.Read(0, 0, 1, 5), 9);
  EXPECT_EQ(c.node(0).stats().safe_fetches, 1u);
  c.node(0).Release(0, l);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  EXPECT_EQ(c.Read(1, 0, 1, 5), 9);
  EXPECT_EQ(c.Read(1, 0, 1, 100), 7);
  c.node(1).Release(0, l);
}

// scan_writes: a tracked home page unmapped to wait for a writer's diff
// loses the record of the home's own writes since the last look; it counts
// as written, so a copy elsewhere that predates those writes is dropped.
TEST(NodeTest, ScanWritesHomePageUnmappedForDiffsCountsAsWritten) {
  Cluster c(3, 1, HomePolicy::kCyclic, 1, /*scan_writes=*/true);  // page 0 homed on node 0
  const LockId l = 0x1000;
  c.Write(0, 0, 0, 0, 1);
  EXPECT_EQ(c.Read(2, 0, 0, 0), 1);
  c.BarrierAll(1, 1);  // tracked at node 0; node 2's copy dropped
  EXPECT_EQ(c.Read(2, 0, 0, 0), 1);
  ASSERT_EQ(c.host(0).prot(0), Prot::kRead);
  c.Complete([&] { return c.node(2).Acquire(0, l); });
  c.Write(0, 0, 0, 200, 5);  // no fault: the home's write is only recorded
  c.Write(2, 0, 0, 300, 6);
  c.node(2).Release(0, l);
  c.Hold(2, 0);  // node 2's diff of page 0 stays on the way to its home
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.node(1).Release(0, l);
  c.Complete([&] { return c.node(0).Acquire(0, l); });  // node 2's notice, its diff still out
  EXPECT_EQ(c.host(0).prot(0), Prot::kNone);
  c.Unhold(2, 0);
  c.Drain();
  EXPECT_EQ(c.Read(0, 0, 0, 300), 6);
  c.node(0).Release(0, l);
  c.Complete([&] { return c.node(2).Acquire(0, l); });
  EXPECT_EQ(c.Read(2, 0, 0, 200), 5);  // node 2's copy predated the home's write
  EXPECT_EQ(c.Read(2, 0, 0, 300), 6);
  c.node(2).Release(0, l);
}

// The home serves a run's pages ahead as they are: one older than the
// requester's notices demand is dropped on arrival, and fetched again, with
// the writer's diff, when a thread touches it.
TEST(NodeTest, PageAheadTooOldIsDroppedAndFetchedAgain) {
  Cluster c(3, 1, HomePolicy::kBlock, 8);  // node 1 is home of pages 6..11
  c.Write(2, 0, 10, 0, 7);
  c.Hold(2, 1);        // node 2's diff of 10 stays on the way to its home
  c.BarrierAll(1, 1);  // node 0 holds a notice for 10
  for (PageId p : {6, 7, 8}) EXPECT_EQ(c.Read(0, 0, p, 0), 0);
  EXPECT_EQ(c.Read(0, 0, 9, 0), 0);  // a run: 9, 10 (too old), 11
  EXPECT_EQ(c.node(0).stats().ahead_unused, 1u);
  EXPECT_EQ(c.host(0).prot(10), Prot::kNone);
  c.Unhold(2, 1);
  c.Drain();
  EXPECT_EQ(c.Read(0, 0, 10, 0), 7);
}

// A strided scan is no sweep, though the page before each fault is held here
// (from an earlier pass): no run after it (fft's transposes read one page in
// four this way; runs fetched 3 a fault, 2 unused), and two faults at a
// distance are no stride yet.
TEST(NodeTest, StridedScanOverAnEarlierPassFetchesNoRuns) {
  Cluster c(2, 1, HomePolicy::kBlock, 8);  // node 1 is home of pages 8..15
  for (PageId p : {8, 12}) EXPECT_EQ(c.Read(0, 0, p, 0), 0);
  for (PageId p : {9, 13}) EXPECT_EQ(c.Read(0, 0, p, 0), 0);
  EXPECT_EQ(c.node(0).stats().pages_ahead, 0u);
  EXPECT_EQ(c.node(0).stats().fetches, 4u);
  EXPECT_EQ(c.host(0).prot(10), Prot::kNone);
  EXPECT_EQ(c.host(0).prot(14), Prot::kNone);
}

// A scan at a stride: from its third fault in step the next pages along the
// stride come too, in one fetch (a strided run), the last watched; more the
// next time. The pages carry what their home wrote before the barrier.
TEST(NodeTest, StridedFaultsFetchThePagesAlongTheStride) {
  Cluster c(2, 1, HomePolicy::kCyclic, 8);  // odd pages are node 1's
  for (PageId p = 1; p < 16; p += 2) c.Write(1, 0, p, 0, uint8_t(p));
  c.BarrierAll(1, 1);
  for (PageId p : {1, 3, 5}) EXPECT_EQ(c.Read(0, 0, p, 0), p);
  EXPECT_EQ(c.node(0).stats().pages_strided, 1u);  // 7
  EXPECT_EQ(c.host(0).prot(7), Prot::kNone);      // watched
  size_t sent = c.sent;
  EXPECT_EQ(c.Read(0, 0, 7, 0), 7);
  EXPECT_EQ(c.sent, sent);  // a local fault
  EXPECT_EQ(c.node(0).stats().ahead_used, 1u);
  EXPECT_EQ(c.Read(0, 0, 9, 0), 9);  // 11, 13, 15 come along
  EXPECT_EQ(c.node(0).stats().pages_strided, 4u);
  EXPECT_EQ(c.node(0).stats().pages_ahead, 4u);
  EXPECT_EQ(c.node(0).stats().fetches, 6u);  // 1, 3, 5, 7, 9, and 11 + 13 + 15
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kFetchRequest)], 6u);
  sent = c.sent;
  for (PageId p : {11, 13, 15}) EXPECT_EQ(c.Read(0, 0, p, 0), p) << p;
  EXPECT_EQ(c.sent, sent);
  EXPECT_EQ(c.node(0).stats().ahead_used, 2u);  // 15, watched
  EXPECT_EQ(c.node(0).stats().read_faults, 6u);  // 1, 3, 5, 7, 9, 15
}

// A page fetched along a stride waits at the home for the version its own
// notices demand, as a fault's fetch does.
TEST(NodeTest, StridedFetchWaitsForItsOwnVersion) {
  Cluster c(3, 1, HomePolicy::kCyclic, 8);  // pages 2, 5, 8, 11, 14 are node 2's
  c.Write(1, 0, 11, 0, 7);
  c.Hold(1, 2);        // node 1's diff of 11 stays on the way to its home
  c.BarrierAll(1, 1);  // node 0 holds a notice for 11
  for (PageId p : {2, 5, 8}) EXPECT_EQ(c.Read(0, 0, p, 0), 0);
  EXPECT_EQ(c.node(0).stats().pages_strided, 1u);  // 11, asked for
  const uint64_t fetched = c.node(0).stats().pages_fetched;
  c.Drain();
  EXPECT_EQ(c.node(0).stats().pages_fetched, fetched);  // the home waits for the diff
  c.Unhold(1, 2);
  c.Drain();
  EXPECT_EQ(c.node(0).stats().pages_fetched, fetched + 1);
  const size_t sent = c.sent;
  EXPECT_EQ(c.Read(0, 0, 11, 0), 7);
  EXPECT_EQ(c.sent, sent);
  EXPECT_EQ(c.node(0).stats().fetch_retries, 0u);
}

// Sweeps are followed per thread: two threads of a node sweeping different
// pages at once each get their runs.
TEST(NodeTest, InterleavedSweepsOfTwoThreadsEachFetchRuns) {
  Cluster c(2, 2, HomePolicy::kBlock, 8);  // node 1 is home of pages 8..15
  EXPECT_EQ(c.Read(0, 0, 8, 0), 0);
  EXPECT_EQ(c.Read(0, 1, 12, 0), 0);
  EXPECT_EQ(c.node(0).stats().pages_ahead, 0u);
  EXPECT_EQ(c.Read(0, 0, 9, 0), 0);  // thread 0's sweep: 9 and 10
  EXPECT_EQ(c.node(0).stats().pages_ahead, 1u);
  EXPECT_EQ(c.Read(0, 1, 13, 0), 0);  // thread 1's: 13 and more
  EXPECT_GE(c.node(0).stats().pages_ahead, 2u);
  EXPECT_EQ(c.node(0).stats().fetches, 4u);
}

// First touch: managers keep blocks of max_run pages, and a home reply names
// the pages after the claimed one with the same home, so runs reach them.
TEST(NodeTest, FirstTouchHomeRepliesLetRunsThrough) {
  Cluster c(2, 1, HomePolicy::kFirstTouch, 4);  // node 0 manages 0..3, 8..11; node 1 4..7, 12..15
  for (PageId p = 0; p < 8; ++p) c.Write(1, 0, p, 0, uint8_t(p + 1));  // node 1 is home of 0..7
  c.BarrierAll(1, 1);
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(c.Read(0, 0, p, 0), p + 1) << p;
  // Pages 0..3: node 0's own directory; 4: a claim whose reply names 5..7.
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kHomeClaim)], 1u);
  EXPECT_LT(c.node(0).stats().fetches, 8u);
  EXPECT_GT(c.node(0).stats().pages_ahead, 0u);
}

// A run stops at a page whose home differs, and at the end of the frames.
TEST(NodeTest, PageRunsStopAtAnotherHomeAndAtTheFramesEnd) {
  Cluster c(2, 1, HomePolicy::kCyclic, 8);  // pages alternate between the nodes
  EXPECT_EQ(c.Read(0, 0, 0, 0), 0);
  EXPECT_EQ(c.Read(0, 0, 1, 0), 0);
  EXPECT_EQ(c.node(0).stats().pages_ahead, 0u);  // page 2 is node 0's
  Cluster b(2, 1, HomePolicy::kBlock, 8);
  b.host(0).frames_end = 10;
  b.host(1).frames_end = 10;
  EXPECT_EQ(b.Read(0, 0, 8, 0), 0);
  EXPECT_EQ(b.Read(0, 0, 9, 0), 0);
  EXPECT_EQ(b.node(0).stats().pages_ahead, 0u);  // page 10 lies beyond the frames' end
}

TEST(NodeTest, HomeWritesReachARemoteReaderAfterTheBarrier) {
  Cluster c(2, 1);
  EXPECT_EQ(c.Read(1, 0, 0, 5), 0);  // node 1 caches page 0 (homed on node 0)
  c.Write(0, 0, 0, 5, 7);
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.host(1).prot(0), Prot::kNone);  // invalidated by the notice
  EXPECT_EQ(c.Read(1, 0, 0, 5), 7);
}

TEST(NodeTest, LockGrantCarriesWrites) {
  Cluster c(2, 1);
  const LockId l = 0x1000;
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  c.Write(0, 0, 3, 100, 9);
  c.node(0).Release(0, l);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  EXPECT_EQ(c.Read(1, 0, 3, 100), 9);
  c.node(1).Release(0, l);
}

TEST(NodeTest, LocalHandoffSendsNoMessage) {
  Cluster c(2, 2);
  const LockId l = 0x2000;
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.node(1).Release(0, l);
  const size_t before = c.sent;
  const uint64_t local = c.node(1).stats().local_acquires;
  c.Complete([&] { return c.node(1).Acquire(1, l); });
  c.node(1).Release(1, l);
  EXPECT_EQ(c.sent, before);
  EXPECT_EQ(c.node(1).stats().local_acquires, local + 1);
}

// Every lock request, to the home and forwarded on to the tail, is followed
// by a nudge of its target, after the message (the runtime's threads heed it
// before re-taking an idle token); the 1-node paths nudge nobody.
TEST(NodeTest, LockRequestsNudgeTheirTargetAfterTheMessage) {
  Cluster c(3, 1);
  const LockId l = PinnedLock(1, 5);  // home: node 1
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.node(1).Release(0, l);
  EXPECT_TRUE(c.host(1).nudged.empty());  // the home's own token
  const size_t before = c.sent;
  c.Complete([&] { return c.node(2).Acquire(0, l); });
  c.node(2).Release(0, l);  // node 2 keeps the idle token
  using Nudges = std::vector<std::pair<NodeId, size_t>>;
  // Node 2 asked the home, which was the tail and granted itself.
  EXPECT_EQ(c.host(2).nudged, (Nudges{{1, before + 1}}));
  EXPECT_TRUE(c.host(1).nudged.empty());
  const size_t asked = c.sent;
  ASSERT_EQ(c.node(0).Acquire(0, l), Outcome::kBlocked);
  EXPECT_EQ(c.host(0).nudged, (Nudges{{1, asked + 1}}));
  c.Drain(1);  // the home forwards to the tail, node 2
  EXPECT_EQ(c.host(1).nudged, (Nudges{{2, asked + 2}}));
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  c.node(0).Release(0, l);
}

// A timed lock gives up (pthread_mutex_timedlock's ETIMEDOUT): the token
// that arrives for nobody stays idle at the node, and the next acquire there
// needs no message; the lock still reaches another node afterwards.
TEST(NodeTest, CancelledAcquireLeavesTheTokenUsable) {
  Cluster c(2, 2);
  const LockId l = 0x3000;
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  ASSERT_EQ(c.node(1).Acquire(0, l), Outcome::kBlocked);
  c.Drain();
  EXPECT_TRUE(c.node(1).CancelAcquire(0, l));
  c.node(0).Release(0, l);
  c.Drain();
  EXPECT_FALSE(c.node(1).Holds(0, l));
  EXPECT_FALSE(c.node(1).HeldLocally(l));
  const size_t before = c.sent;
  c.Complete([&] { return c.node(1).Acquire(1, l); });
  EXPECT_EQ(c.sent, before);
  c.Write(1, 1, 3, 7, 5);
  c.node(1).Release(1, l);
  c.Complete([&] { return c.node(0).Acquire(1, l); });
  EXPECT_EQ(c.Read(0, 1, 3, 7), 5);
  c.node(0).Release(1, l);
}

// A cancel that comes after the grant reports the lock as held.
TEST(NodeTest, CancelAfterGrantKeepsTheLock) {
  Cluster c(2, 1);
  const LockId l = 0x3100;
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  EXPECT_FALSE(c.node(1).CancelAcquire(0, l));
  EXPECT_TRUE(c.node(1).Holds(0, l));
  c.node(1).Release(0, l);
}

TEST(NodeTest, DirtyPageSurvivesSafeFetch) {
  Cluster c(3, 2);
  const LockId a = 0x10, b = 0x20;
  // Node 1 thread 0 writes byte 0 of page 2 (home: node 2) under lock a.
  c.Complete([&] { return c.node(1).Acquire(0, a); });
  c.Write(1, 0, 2, 0, 11);
  // Node 0 writes byte 1 of the same page under lock b, then releases.
  c.Complete([&] { return c.node(0).Acquire(0, b); });
  c.Write(0, 0, 2, 1, 22);
  c.node(0).Release(0, b);
  // Node 1 thread 1 takes b: page 2 is dirty on node 1, so it turns stale.
  c.Complete([&] { return c.node(1).Acquire(1, b); });
  EXPECT_EQ(c.Read(1, 1, 2, 1), 22);
  EXPECT_EQ(c.Read(1, 0, 2, 0), 11);  // the undiffed local write survived
  EXPECT_EQ(c.node(1).stats().safe_fetches, 1u);
  c.node(1).Release(1, b);
  c.node(1).Release(0, a);
  c.BarrierAll(9, 2);
  EXPECT_EQ(c.Read(2, 0, 2, 0), 11);
  EXPECT_EQ(c.Read(2, 0, 2, 1), 22);
}

TEST(NodeTest, FirstTouchMakesTheFirstClaimantHome) {
  Cluster c(3, 1, HomePolicy::kFirstTouch);
  c.Write(2, 0, 4, 0, 1);  // page 4 is managed by node 1; node 2 claims it
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.Read(0, 0, 4, 0), 1);
  EXPECT_EQ(c.node(2).stats().diffs, 0u);  // home writes need no diff
}

// Pay only for sharing: a home page no other node holds faults once, and
// costs no notice, interval or re-protection at later barriers.
TEST(NodeTest, UnsharedHomePageFaultsOnce) {
  Cluster c(2, 1);
  for (uint8_t round = 0; round < 3; ++round) {
    c.Write(0, 0, 0, round, 1);  // page 0 is homed on node 0 (cyclic)
    c.BarrierAll(round + 1, 1);
  }
  EXPECT_EQ(c.node(0).stats().write_faults, 1u);
  EXPECT_EQ(c.node(0).stats().intervals, 0u);
  EXPECT_EQ(c.node(0).stats().untracked_pages, 1u);
  EXPECT_EQ(c.host(0).prot(0), Prot::kReadWrite);
  EXPECT_EQ(c.Read(1, 0, 0, 2), 1);  // and another node still sees the writes
}

// The untracked -> tracked transition is exact: a home write made after
// another node's first fetch, in the same interval and with no fault, is
// announced by that interval's notice.
TEST(NodeTest, HomeWriteAfterFirstRemoteFetchIsAnnounced) {
  Cluster c(2, 1);
  const LockId l = 0x1000;
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  c.Write(0, 0, 0, 5, 1);              // untracked: read-write from now on
  EXPECT_EQ(c.Read(1, 0, 0, 6), 0);    // node 1's first fetch marks page 0
  c.Write(0, 0, 0, 5, 2);              // no fault: the page is still read-write
  EXPECT_EQ(c.node(0).stats().write_faults, 1u);
  c.node(0).Release(0, l);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  EXPECT_EQ(c.Read(1, 0, 0, 5), 2);
  c.node(1).Release(0, l);
  EXPECT_EQ(c.node(0).stats().tracked_pages, 1u);
  // Tracked from now on: the next write faults and is noted.
  c.Write(0, 0, 0, 5, 3);
  EXPECT_EQ(c.node(0).stats().write_faults, 2u);
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.Read(1, 0, 0, 5), 3);
}

// A sequential sweep of first touches maps a run of home pages at once, and
// never a page homed on another node.
TEST(NodeTest, SequentialFirstTouchesMapARunAhead) {
  Cluster c(2, 1, HomePolicy::kBlock);  // node 0: pages 0-7
  c.Write(0, 0, 0, 0, 1);
  c.Write(0, 0, 1, 0, 1);  // page 0 was touched: maps 1-7
  EXPECT_EQ(c.host(0).protect_calls, 2);
  for (PageId p = 2; p < 8; ++p) {
    EXPECT_EQ(c.host(0).prot(p), Prot::kReadWrite) << p;
    c.Write(0, 0, p, 0, 1);
  }
  EXPECT_EQ(c.node(0).stats().write_faults, 2u);
  EXPECT_EQ(c.host(0).prot(8), Prot::kNone);
  EXPECT_EQ(c.node(0).stats().untracked_pages, 8u);
}

// First touch on several nodes: a first claim maps nothing ahead, since
// claiming pages here could take one another node is about to touch.
TEST(NodeTest, FirstTouchSweepDoesNotClaimAhead) {
  Cluster c(2, 1, HomePolicy::kFirstTouch);  // node 1 manages the odd pages
  c.Write(0, 0, 0, 0, 1);
  c.Write(0, 0, 1, 0, 1);  // claimed from node 1
  for (PageId p = 2; p < 8; ++p) EXPECT_EQ(c.host(0).prot(p), Prot::kNone) << p;
  c.Write(1, 0, 3, 0, 9);  // node 1 manages page 3 and becomes its home
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.Read(0, 0, 3, 0), 9);
}

// First touch along a sweep: a node whose claims follow on from its last
// reply is granted the unclaimed pages after the claimed one, 1, 2, 4, ...
// within the manager's block; a granted page another node reads before the
// claimant touches it is fetched from the claimant, fresh.
TEST(NodeTest, FirstTouchSweepIsGrantedPagesAhead) {
  Cluster c(2, 1, HomePolicy::kFirstTouch, 8);  // node 1 manages 8..15
  for (PageId p = 8; p < 13; ++p) c.Write(0, 0, p, 0, uint8_t(p));
  // Claims 8, 9 (granted 10), 11 (granted 12 and 13): three, not five; the
  // granted pages are mapped with the claimed one.
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kHomeClaim)], 3u);
  EXPECT_EQ(c.node(0).stats().write_faults, 3u);
  EXPECT_EQ(c.host(0).prot(13), Prot::kReadWrite);
  c.BarrierAll(1, 1);
  for (PageId p = 8; p < 13; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), p) << p;
  EXPECT_EQ(c.Read(1, 0, 13, 0), 0);  // granted to node 0, never touched there
  c.Write(0, 0, 13, 0, 13);           // node 0 is its home: no claim
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kHomeClaim)], 3u);
  c.Write(0, 0, 14, 0, 14);  // 14 follows the granted 13: a claim, granted 15
  c.Write(0, 0, 15, 0, 15);
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kHomeClaim)], 4u);
  c.BarrierAll(2, 1);
  for (PageId p = 13; p < 16; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), p) << p;
}

// A sweep through fresh memory claims runs across the managers' blocks:
// each claim asks for twice the pages the last one reached, and the pages
// it gets are mapped with the claimed one, with no fault of their own.
TEST(NodeTest, FirstTouchSweepClaimsRunsAcrossManagers) {
  Cluster c(2, 1, HomePolicy::kFirstTouch, 8);  // node 0 manages 0..7, node 1 8..15
  for (PageId p = 0; p < 16; ++p) c.Write(0, 0, p, 0, uint8_t(p + 1));
  // Claims 0, 1 (and 2), 3 (4, 5) and 6 (7) here, 8 (and 9..15) at node 1.
  EXPECT_EQ(c.node(0).stats().write_faults, 5u);
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kHomeClaim)], 1u);
  EXPECT_EQ(c.node(0).stats().untracked_pages, 16u);
  c.BarrierAll(1, 1);
  for (PageId p = 0; p < 16; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), p + 1) << p;
  // Node 1 fetched them all: node 0's next writes are noted.
  for (PageId p = 0; p < 16; ++p) c.Write(0, 0, p, 0, uint8_t(p + 2));
  c.BarrierAll(2, 1);
  for (PageId p = 0; p < 16; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), p + 2) << p;
}

// A grant ends at a page another node touched first, and a claim out of
// sequence is granted nothing.
TEST(NodeTest, FirstTouchGrantStopsAtAnotherNodesPage) {
  Cluster c(2, 1, HomePolicy::kFirstTouch, 8);  // node 1 manages 8..15
  c.Write(1, 0, 11, 0, 111);  // node 1 claims 11 in its own directory
  for (PageId p = 8; p < 11; ++p) c.Write(0, 0, p, 0, uint8_t(p));  // claims 8, 9 (granted 10)
  c.Write(0, 0, 11, 0, 11);  // 11 is node 1's: a claim, answered so
  c.Write(0, 0, 14, 0, 14);  // out of sequence: a claim, nothing granted
  c.Write(0, 0, 15, 0, 15);
  EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kHomeClaim)], 5u);
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.node(0).stats().diffs, 1u);  // page 11 only: homed at node 1
  EXPECT_EQ(c.Read(1, 0, 11, 0), 11);
  for (PageId p : {8, 9, 10, 14, 15}) EXPECT_EQ(c.Read(1, 0, p, 0), p) << p;
}

// Releases and acquires change protections a run of pages at a time.
TEST(NodeTest, ProtectionChangesGoInRuns) {
  Cluster c(2, 1, HomePolicy::kBlock);  // node 0: pages 0-7
  for (PageId p = 0; p < 4; ++p) EXPECT_EQ(c.Read(1, 0, p, 0), 0);  // tracked from now on
  for (PageId p = 0; p < 4; ++p) c.Write(0, 0, p, 0, 1);
  const int before0 = c.host(0).protect_calls, before1 = c.host(1).protect_calls;
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.host(0).protect_calls - before0, 1);  // pages 0-3 write-protected at once
  EXPECT_EQ(c.host(1).protect_calls - before1, 1);  // and invalidated at once
  for (PageId p = 0; p < 4; ++p) {
    EXPECT_EQ(c.host(0).prot(p), Prot::kRead);
    EXPECT_EQ(c.Read(1, 0, p, 0), 1);
  }
}

// Copies one page in every few (fetched along a stride) are dropped in one
// go across the pages between them that are not mapped here; a mapped page
// between them breaks the run.
TEST(NodeTest, DroppedCopiesGoInRunsAcrossUnmappedGaps) {
  Cluster c(2, 1, HomePolicy::kBlock);  // node 0: pages 0-7
  for (PageId p : {0, 3, 6}) EXPECT_EQ(c.Read(1, 0, p, 0), 0);
  for (PageId p : {0, 3, 6}) c.Write(0, 0, p, 0, 1);
  int before = c.host(1).protect_calls;
  c.BarrierAll(1, 1);
  EXPECT_EQ(c.host(1).protect_calls - before, 1);
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(c.host(1).prot(p), Prot::kNone) << p;
  for (PageId p : {0, 3, 6}) EXPECT_EQ(c.Read(1, 0, p, 0), 1);
  EXPECT_EQ(c.Read(1, 0, 4, 0), 0);  // mapped, not written
  for (PageId p : {0, 3, 6}) c.Write(0, 0, p, 0, 2);
  before = c.host(1).protect_calls;
  c.BarrierAll(2, 1);
  EXPECT_EQ(c.host(1).protect_calls - before, 2);  // 0 to 3, then 6
  EXPECT_EQ(c.host(1).prot(4), Prot::kRead);
  for (PageId p : {0, 3, 6}) EXPECT_EQ(c.Read(1, 0, p, 0), 2);
}

TEST(NodeTest, MalformedMessagesAreRejected) {
  Cluster c(2, 1);
  std::vector<uint8_t> junk(40, 0xab);
  EXPECT_FALSE(c.node(0).Receive(1, junk).ok());
  // A well-formed reply nobody asked for.
  PageReply r{1, {VectorTime(2)}, std::vector<uint8_t>(kPage)};
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(r, 0)).ok());
  // A diff for a page this node is not home of.
  DiffMessage d{0, 1, {}};
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(DiffMessage{1, 1, {}}, 0)).ok());
  EXPECT_TRUE(c.node(0).Receive(1, wire::Encode(d, 0)).ok());
  // A grant that claims a timestamp its notices do not cover.
  LockGrant g{7, VectorTime(std::vector<IntervalId>{0, 3}), {}};
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(g, 0)).ok());
}

// No message can know of an interval of this node that it has not closed.
TEST(NodeTest, NoticeOfOwnUnclosedIntervalIsMalformed) {
  Cluster c(2, 1);
  const LockId l = PinnedLock(1, 5);
  ASSERT_EQ(c.node(0).Acquire(0, l), Outcome::kBlocked);
  LockGrant forged{l, VectorTime(std::vector<IntervalId>{1, 0}), {{0, 1, {3}}}};
  EXPECT_EQ(c.node(0).Receive(1, wire::Encode(forged, 0)).code(), Status::Code::kMalformed);
  c.Drain();  // the real grant still comes
  EXPECT_EQ(c.node(0).Acquire(0, l), Outcome::kDone);
  c.node(0).Release(0, l);
}

TEST(NodeTest, PinnedLockLivesOnItsNamedNode) {
  Cluster c(4, 1);
  const LockId l = PinnedLock(3, 77);
  const size_t before = c.sent;
  c.Complete([&] { return c.node(3).Acquire(0, l); });  // the home holds a fresh token
  c.node(3).Release(0, l);
  EXPECT_EQ(c.sent, before);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  EXPECT_TRUE(c.node(1).Holds(0, l));
  EXPECT_TRUE(c.node(1).HeldLocally(l));
  EXPECT_FALSE(c.node(3).HeldLocally(l));
  c.node(1).Release(0, l);
}

// A token that came from another node is "maybe wanted" while idle, for
// its first kPoliteTakes local takes and then every kPoliteTakes-th: the
// runtime looks for a request first. A home's own fresh token and a held
// one are not.
TEST(NodeTest, TokenFromAnotherNodeMayBeWantedForItsFirstLocalTakes) {
  Cluster c(2, 1);
  const LockId l = PinnedLock(1, 5);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.node(1).Release(0, l);
  EXPECT_FALSE(c.node(1).MayBeWanted(l));  // never left its home
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  EXPECT_FALSE(c.node(0).MayBeWanted(l));  // held
  c.node(0).Release(0, l);
  for (int i = 0; i < Node::kPoliteTakes; ++i) {
    EXPECT_TRUE(c.node(0).MayBeWanted(l)) << i;
    EXPECT_EQ(c.node(0).TakesSinceArrival(l), uint32_t(i));
    ASSERT_EQ(c.node(0).Acquire(0, l), Outcome::kDone);
    c.node(0).Release(0, l);
  }
  // Then only every kPoliteTakes-th take.
  for (int i = Node::kPoliteTakes; i < 3 * Node::kPoliteTakes; ++i) {
    EXPECT_EQ(c.node(0).MayBeWanted(l), i % Node::kPoliteTakes == 0) << i;
    ASSERT_EQ(c.node(0).Acquire(0, l), Outcome::kDone);
    c.node(0).Release(0, l);
  }
  ASSERT_EQ(c.node(0).Acquire(0, l), Outcome::kDone);
  c.node(0).Release(0, l);
  EXPECT_FALSE(c.node(0).MayBeWanted(l));
  EXPECT_FALSE(c.node(1).MayBeWanted(l));  // no token there
  c.Complete([&] { return c.node(1).Acquire(0, l); });  // back home, by a grant
  c.node(1).Release(0, l);
  EXPECT_TRUE(c.node(1).MayBeWanted(l));
  EXPECT_EQ(c.node(1).TakesSinceArrival(l), 0u);
}

// A take handed on at a release counts as a local take too: a thread that
// re-takes after a sibling had the token is not the first since it came.
TEST(NodeTest, HandedOnTakeCountsAsATakeSinceArrival) {
  Cluster c(2, 2);
  const LockId l = PinnedLock(1, 5);
  c.Complete([&] { return c.node(0).Acquire(0, l); });  // by a grant from node 1
  EXPECT_EQ(c.node(0).Acquire(1, l), Outcome::kBlocked);
  c.node(0).Release(0, l);
  c.Complete([&] { return c.node(0).Acquire(1, l); });
  ASSERT_TRUE(c.node(0).Holds(1, l));
  c.node(0).Release(1, l);
  EXPECT_TRUE(c.node(0).MayBeWanted(l));
  EXPECT_EQ(c.node(0).TakesSinceArrival(l), 1u);
}

// The runtime reports each thread on its own (local = 1); the master must
// still release each node once, and exactly one thread is the serial one.
TEST(NodeTest, BarrierWithPerThreadArrivalsReleasesEachNodeOnce) {
  Cluster c(2, 2);
  const BarrierId b = 5;
  for (int round = 0; round < 3; ++round) {
    c.Write(1, 0, 0, 100 + round, uint8_t(round + 1));
    for (NodeId n = 0; n < 2; ++n)
      for (ThreadId t = 0; t < 2; ++t) c.node(n).Barrier(t, b, 4, 1);
    c.Drain();
    int serial = 0;
    for (NodeId n = 0; n < 2; ++n)
      for (ThreadId t = 0; t < 2; ++t) {
        bool s = false;
        ASSERT_EQ(c.node(n).Barrier(t, b, 4, 1, &s), Outcome::kDone);
        serial += s;
      }
    EXPECT_EQ(serial, 1) << "round " << round;
    EXPECT_EQ(c.Read(0, 1, 0, 100 + round), round + 1);
  }
  EXPECT_EQ(c.node(1).stats().barriers, 3u);
}

// More than barrier_fanout + 1 nodes (4 here): arrivals go up a tree. Node 1 takes
// those of its children 5..7 and, from the second episode on, sends one
// arrival for all four; node 0 takes one from each of its children, and the
// release comes back the same way. Notices travel with them (base): a leaf's
// write invalidates a copy in another subtree.
TEST(NodeTest, BarrierArrivalsCombineUpATreeOfNodes) {
  Cluster c(8, 1, HomePolicy::kCyclic, 1, false, 4);
  const BarrierId b = 3;
  const PageId p = 3;  // homed at node 3 (cyclic)
  EXPECT_EQ(c.Read(2, 0, p, 0), 0);  // node 2 keeps a copy
  for (int round = 0; round < 3; ++round) {
    c.delivered.clear();
    const NodeId writer = NodeId(7 - round);  // a leaf below node 1
    c.Write(writer, 0, p, 0, uint8_t(10 + round));
    const uint64_t up_before = c.node(1).stats().messages_sent[size_t(MessageType::kBarrierArrive)];
    for (NodeId n = 0; n < 8; ++n) ASSERT_EQ(c.node(n).Barrier(0, b, 8, 1), Outcome::kBlocked);
    c.Drain();
    int serial = 0;
    for (NodeId n = 0; n < 8; ++n) {
      bool s = false;
      ASSERT_EQ(c.node(n).Barrier(0, b, 8, 1, &s), Outcome::kDone) << "node " << n << " round " << round;
      serial += s;
    }
    EXPECT_EQ(serial, 1) << "round " << round;
    // The first episode knows no parts yet: each arrival goes up at once.
    EXPECT_EQ(c.Delivered(0, MessageType::kBarrierArrive), round == 0 ? 7u : 4u) << "round " << round;
    EXPECT_EQ(c.Delivered(1, MessageType::kBarrierArrive), 3u);
    EXPECT_EQ(c.node(1).stats().messages_sent[size_t(MessageType::kBarrierArrive)] - up_before,
              round == 0 ? 4u : 1u) << "round " << round;
    EXPECT_EQ(c.node(0).stats().messages_sent[size_t(MessageType::kBarrierRelease)], 4u * (round + 1));
    for (NodeId n = 5; n < 8; ++n) EXPECT_EQ(c.Delivered(n, MessageType::kBarrierRelease), 1u);
    EXPECT_EQ(c.Read(2, 0, p, 0), 10 + round) << "round " << round;
  }
}

// A child whose threads took part in the last episode but not in this one
// holds its parent's batch back until the runtime gives up (ReportGathered,
// after kGatherNs); the episode then completes with the arrivals that came.
TEST(NodeTest, BarrierTreeGivesUpOnAChildThatDoesNotCome) {
  Cluster c(8, 2, HomePolicy::kCyclic, 1, false, 4);
  const BarrierId b = 3;
  auto episode = [&](const std::vector<std::pair<NodeId, ThreadId>>& who, bool give_up) {
    for (auto [n, t] : who) ASSERT_EQ(c.node(n).Barrier(t, b, 8, 1), Outcome::kBlocked);
    c.Drain();
    if (give_up) {
      for (auto [n, t] : who) ASSERT_EQ(c.node(n).Barrier(t, b, 8, 1), Outcome::kBlocked);
      EXPECT_TRUE(c.node(1).Holding());
      EXPECT_FALSE(c.node(0).Gathering());
      c.node(1).ReportGathered();
      EXPECT_FALSE(c.node(1).Gathering());
      c.Drain();
    }
    for (auto [n, t] : who) ASSERT_EQ(c.node(n).Barrier(t, b, 8, 1), Outcome::kDone);
  };
  std::vector<std::pair<NodeId, ThreadId>> all;
  for (NodeId n = 0; n < 8; ++n) all.push_back({n, 0});
  episode(all, false);
  episode(all, false);
  // Node 7 stays away; node 6 brings both its threads.
  std::vector<std::pair<NodeId, ThreadId>> without7(all.begin(), all.end() - 1);
  without7.push_back({6, 1});
  episode(without7, true);
  EXPECT_EQ(c.node(1).stats().gathers_given_up, 1u);
  episode(without7, false);  // node 1 learnt that node 7 stays away
  EXPECT_EQ(c.node(1).stats().gathers_given_up, 1u);
}

// A node whose own thread took part in the last episode but now waits
// elsewhere (here: for a lock; or a condition the runtime reports) does not
// hold its child's arrival for it: the batch goes up at once. One whose
// thread runs where the node cannot see holds it until the runtime gives up
// (ReportGathered), as it holds its own arrival for a child that took part
// last time.
TEST(NodeTest, BarrierTreeDoesNotHoldForOwnThreadsThatWaitElsewhere) {
  Cluster c(3, 1, HomePolicy::kCyclic, 1, false, 1);  // a chain: 2 -> 1 -> 0
  const BarrierId b = 3;
  const LockId l = 0x40;
  // Node 0 meets `partner` at b (2 threads); node 1 relays for node 2.
  auto episode = [&](NodeId partner, auto&& in_between) {
    SCOPED_TRACE(::testing::Message() << "partner " << partner);
    ASSERT_EQ(c.node(0).Barrier(0, b, 2, Node::kGather), Outcome::kBlocked);
    ASSERT_EQ(c.node(partner).Barrier(0, b, 2, Node::kGather), Outcome::kBlocked);
    c.Drain();
    in_between();
    c.Drain();
    ASSERT_EQ(c.node(0).Barrier(0, b, 2, Node::kGather), Outcome::kDone);
    ASSERT_EQ(c.node(partner).Barrier(0, b, 2, Node::kGather), Outcome::kDone);
  };
  auto held_then_given_up = [&] {
    EXPECT_TRUE(c.node(1).Holding());
    c.node(1).ReportGathered();
  };
  episode(1, [] {});  // node 1's thread takes part
  c.Complete([&] { return c.node(2).Acquire(0, l); });
  ASSERT_EQ(c.node(1).Acquire(0, l), Outcome::kBlocked);
  const uint64_t up = c.node(1).stats().messages_sent[size_t(MessageType::kBarrierArrive)];
  episode(2, [&] {
    EXPECT_FALSE(c.node(1).Holding()) << "its thread waits for a lock";
    EXPECT_EQ(c.node(1).stats().messages_sent[size_t(MessageType::kBarrierArrive)], up + 1);
  });
  c.node(2).Release(0, l);
  c.Drain();
  ASSERT_EQ(c.node(1).Acquire(0, l), Outcome::kDone);
  c.node(1).Release(0, l);
  EXPECT_EQ(c.node(1).stats().gathers_given_up, 0u);
  episode(1, held_then_given_up);  // for node 2, which took part last time
  episode(2, [&] {
    EXPECT_TRUE(c.node(1).Holding()) << "its thread runs: it may still come";
    c.node(1).WaitingElsewhere(0, true);  // e.g. a condition: the runtime says so
    EXPECT_FALSE(c.node(1).Holding());
  });
  c.node(1).WaitingElsewhere(0, false);
  EXPECT_EQ(c.node(1).stats().gathers_given_up, 1u);
  episode(1, held_then_given_up);
  episode(2, held_then_given_up);
  EXPECT_EQ(c.node(1).stats().gathers_given_up, 3u);
}

// A thread can learn that an episode ended (its root's threads passed)
// before its node has the release, and arrive for the next one: the node,
// its batch still awaiting that release, sends the arrival up at once, and
// the root counts it in the next episode. The release of the first must not
// wake it (it once did: it passed a barrier the others had not reached, and
// the next release found nobody waiting and was refused). Also a child's
// early arrival (node 2), and a second thread of a node (flat).
TEST(NodeTest, BarrierReleaseWakesOnlyTheBatchesItCovers) {
  const BarrierId b = 3;
  for (NodeId early : {NodeId(1), NodeId(2)}) {
    SCOPED_TRACE(::testing::Message() << "early node " << early);
    Cluster c(3, 1, HomePolicy::kCyclic, 1, false, 1);  // a chain: 2 -> 1 -> 0
    const NodeId partner = early == 1 ? 2 : 1;
    // Episode 1: node 0 meets `partner`; node 1 relays if node 2 is in.
    ASSERT_EQ(c.node(partner).Barrier(0, b, 2, Node::kGather), Outcome::kBlocked);
    c.Drain();
    c.Hold(0, 1);  // the release to node 1 is slow
    ASSERT_EQ(c.node(0).Barrier(0, b, 2, Node::kGather), Outcome::kDone) << "the root releases its own at once";
    // Node 0's thread goes on (it tells `early` so by some other way) and
    // `early` arrives for episode 2 before node 1 has episode 1's release.
    ASSERT_EQ(c.node(early).Barrier(0, b, 2, Node::kGather), Outcome::kBlocked);
    c.Drain();
    c.Unhold(0, 1);
    c.Drain();
    ASSERT_EQ(c.node(partner).Barrier(0, b, 2, Node::kGather), Outcome::kDone);
    ASSERT_EQ(c.node(early).Barrier(0, b, 2, Node::kGather), Outcome::kBlocked)
        << "released by the episode it was not in";
    bool serial0 = false, serial1 = false;
    ASSERT_EQ(c.node(0).Barrier(0, b, 2, Node::kGather, &serial0), Outcome::kDone) << "the last to arrive";
    c.Drain();
    ASSERT_EQ(c.node(early).Barrier(0, b, 2, Node::kGather, &serial1), Outcome::kDone);
    EXPECT_EQ(serial0 + serial1, 1);
  }
  // Flat, a node of two threads: thread 1 of node 1 arrives for episode 2
  // while thread 0's release of episode 1 is on its way.
  Cluster c(2, 2);
  ASSERT_EQ(c.node(1).Barrier(0, b, 2, Node::kGather), Outcome::kBlocked);
  c.Drain();
  c.Hold(0, 1);
  ASSERT_EQ(c.node(0).Barrier(0, b, 2, Node::kGather), Outcome::kDone);
  ASSERT_EQ(c.node(1).Barrier(1, b, 2, Node::kGather), Outcome::kBlocked);
  c.Drain();
  c.Unhold(0, 1);
  c.Drain();
  ASSERT_EQ(c.node(1).Barrier(0, b, 2, Node::kGather), Outcome::kDone);
  ASSERT_EQ(c.node(1).Barrier(1, b, 2, Node::kGather), Outcome::kBlocked) << "released by the episode it was not in";
  ASSERT_EQ(c.node(0).Barrier(0, b, 2, Node::kGather), Outcome::kDone);
  c.Drain();
  ASSERT_EQ(c.node(1).Barrier(1, b, 2, Node::kGather), Outcome::kDone);
}

// A node whose threads are not in a barrier still relays it for its
// subtree, with the notices its child's writes make (node 5's, which node 1
// learns from the arrival it passes up).
TEST(NodeTest, BarrierRelayOutsideTheBarrierGetsTheNoticesItLacks) {
  Cluster c(8, 1, HomePolicy::kCyclic, 1, false, 4);
  const BarrierId b = 3;
  const PageId p = 2;  // homed at node 2 (cyclic)
  const std::vector<NodeId> in = {0, 2, 3, 4, 5};
  for (int round = 0; round < 2; ++round) {
    c.Write(5, 0, p, 0, uint8_t(20 + round));
    for (NodeId n : in) ASSERT_EQ(c.node(n).Barrier(0, b, 5, 1), Outcome::kBlocked);
    c.Drain();
    for (NodeId n : in) ASSERT_EQ(c.node(n).Barrier(0, b, 5, 1), Outcome::kDone) << "node " << n;
    EXPECT_EQ(c.node(1).stats().messages_sent[size_t(MessageType::kBarrierRelease)], uint64_t(round + 1));
    EXPECT_EQ(c.Read(3, 0, p, 0), 20 + round);
  }
  EXPECT_EQ(c.Read(1, 0, p, 0), 21);
}

// Barrier messages come from the tree's neighbours only.
TEST(NodeTest, BarrierMessagesFromOutsideTheTreeAreRefused) {
  Cluster c(8, 1, HomePolicy::kCyclic, 1, false, 4);
  const VectorTime zero(8);
  BarrierArrive arrive{3, 1, 8, zero, {}, zero, 1};
  EXPECT_EQ(c.node(0).Receive(5, wire::Encode(arrive, 0)).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.node(2).Receive(1, wire::Encode(arrive, 0)).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(c.node(1).Receive(5, wire::Encode(arrive, 0)).ok());
  BarrierArrive above = arrive;
  above.floor[2] = 1;  // above its own known vector
  EXPECT_FALSE(c.node(1).Receive(6, wire::Encode(above, 0)).ok());
  BarrierArrive counted = arrive;
  counted.nodes = 2;  // more nodes than arrivals
  EXPECT_EQ(c.node(1).Receive(6, wire::Encode(counted, 0)).code(), Status::Code::kMalformed);
  // A refused arrival leaves nothing behind: the next one sets the count.
  BarrierArrive too_many{4, 9, 9, zero, {}, zero, 9};  // 9 nodes of 8
  EXPECT_EQ(c.node(1).Receive(6, wire::Encode(too_many, 0)).code(), Status::Code::kInvalidArgument);
  BarrierArrive right{4, 1, 8, zero, {}, zero, 1};
  EXPECT_TRUE(c.node(1).Receive(7, wire::Encode(right, 0)).ok());
  BarrierRelease release{3, zero, false, {}, false};
  EXPECT_EQ(c.node(5).Receive(0, wire::Encode(release, 0)).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(c.node(5).Receive(1, wire::Encode(release, 0)).code(), Status::Code::kInvalidArgument)
      << "node 5 sent nothing up";
}

// kGather: the first episode reports each thread on its own; from then on a
// node reports the threads that took part last time in one arrival, sent
// when the last of them arrives (one interval and one message a node).
TEST(NodeTest, GatheringBarrierSendsOneArrivalANodeOnceItKnowsItsThreads) {
  Cluster c(2, 2);
  const BarrierId b = 5;
  auto arrivals = [&] { return c.node(1).stats().messages_sent[size_t(MessageType::kBarrierArrive)]; };
  for (int round = 0; round < 4; ++round) {
    const uint64_t before = arrivals();
    c.Write(1, 1, 0, 100 + round, uint8_t(round + 1));  // by node 1's later thread
    ASSERT_EQ(c.node(1).Barrier(0, b, 4, Node::kGather), Outcome::kBlocked);
    EXPECT_EQ(arrivals() - before, round == 0 ? 1u : 0u) << "round " << round;
    EXPECT_EQ(c.node(1).Gathering(), round > 0);
    ASSERT_EQ(c.node(1).Barrier(1, b, 4, Node::kGather), Outcome::kBlocked);
    EXPECT_EQ(arrivals() - before, round == 0 ? 2u : 1u) << "round " << round;
    EXPECT_FALSE(c.node(1).Gathering());
    for (ThreadId t = 0; t < 2; ++t) c.node(0).Barrier(t, b, 4, Node::kGather);
    c.Drain();
    int serial = 0;
    for (NodeId n = 0; n < 2; ++n)
      for (ThreadId t = 0; t < 2; ++t) {
        bool s = false;
        ASSERT_EQ(c.node(n).Barrier(t, b, 4, Node::kGather, &s), Outcome::kDone);
        serial += s;
      }
    EXPECT_EQ(serial, 1) << "round " << round;
    EXPECT_EQ(c.Read(0, 0, 0, 100 + round), round + 1);
  }
}

// A thread that took part last time and now waits for a lock, another
// barrier or something the runtime reports (WaitingElsewhere, ReportGathered)
// is not waited for: the others' arrival goes at once, its own later.
TEST(NodeTest, GatheringBarrierReportsWithoutAThreadThatWaitsElsewhere) {
  Cluster c(2, 2);
  const BarrierId b = 5, other = 6;
  const LockId l = 0x40;
  auto arrivals = [&] { return c.node(1).stats().messages_sent[size_t(MessageType::kBarrierArrive)]; };
  auto all_arrive = [&] {
    for (NodeId n = 0; n < 2; ++n)
      for (ThreadId t = 0; t < 2; ++t) c.node(n).Barrier(t, b, 4, Node::kGather);
    c.Drain();
    for (NodeId n = 0; n < 2; ++n)
      for (ThreadId t = 0; t < 2; ++t) ASSERT_EQ(c.node(n).Barrier(t, b, 4, Node::kGather), Outcome::kDone);
  };
  all_arrive();  // node 1 learns that both its threads take part
  // (1) Its thread 1 blocks on a lock node 0 holds.
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  uint64_t before = arrivals();
  ASSERT_EQ(c.node(1).Barrier(0, b, 4, Node::kGather), Outcome::kBlocked);
  EXPECT_EQ(arrivals(), before);
  ASSERT_EQ(c.node(1).Acquire(1, l), Outcome::kBlocked);
  EXPECT_EQ(arrivals(), before + 1) << "thread 0 reported once thread 1 waits for the lock";
  EXPECT_FALSE(c.node(1).Gathering());
  c.Drain();
  c.node(0).Release(0, l);
  c.Drain();
  ASSERT_EQ(c.node(1).Acquire(1, l), Outcome::kDone);
  c.node(1).Release(1, l);
  ASSERT_EQ(c.node(1).Barrier(1, b, 4, Node::kGather), Outcome::kBlocked);
  EXPECT_EQ(arrivals(), before + 2) << "a later arrival reports alone";
  for (ThreadId t = 0; t < 2; ++t) c.node(0).Barrier(t, b, 4, Node::kGather);
  c.Drain();
  for (NodeId n = 0; n < 2; ++n)
    for (ThreadId t = 0; t < 2; ++t) ASSERT_EQ(c.node(n).Barrier(t, b, 4, Node::kGather), Outcome::kDone);
  all_arrive();  // both took part again
  // (2) Thread 1 waits at another barrier.
  before = arrivals();
  ASSERT_EQ(c.node(1).Barrier(0, b, 4, Node::kGather), Outcome::kBlocked);
  ASSERT_EQ(c.node(1).Barrier(1, other, 2, Node::kGather), Outcome::kBlocked);
  EXPECT_EQ(arrivals(), before + 2) << "b's thread 0, then other's thread 1";
  ASSERT_EQ(c.node(0).Barrier(1, other, 2, Node::kGather), Outcome::kBlocked);
  c.Drain();
  ASSERT_EQ(c.node(1).Barrier(1, other, 2, Node::kGather), Outcome::kDone);
  ASSERT_EQ(c.node(1).Barrier(1, b, 4, Node::kGather), Outcome::kBlocked);
  for (ThreadId t = 0; t < 2; ++t) c.node(0).Barrier(t, b, 4, Node::kGather);
  c.Drain();
  for (NodeId n = 0; n < 2; ++n)
    for (ThreadId t = 0; t < 2; ++t) ASSERT_EQ(c.node(n).Barrier(t, b, 4, Node::kGather), Outcome::kDone);
  // (3) Thread 1 waits where only the runtime sees it (a condition), or
  // runs on past the runtime's patience (ReportGathered).
  for (bool told : {true, false}) {
    before = arrivals();
    ASSERT_EQ(c.node(1).Barrier(0, b, 4, Node::kGather), Outcome::kBlocked);
    EXPECT_TRUE(c.node(1).Gathering());
    if (told) {
      c.node(1).WaitingElsewhere(1, true);
    } else {
      c.node(1).ReportGathered();
    }
    EXPECT_FALSE(c.node(1).Gathering());
    EXPECT_EQ(arrivals(), before + 1);
    if (told) c.node(1).WaitingElsewhere(1, false);
    ASSERT_EQ(c.node(1).Barrier(1, b, 4, Node::kGather), Outcome::kBlocked);
    for (ThreadId t = 0; t < 2; ++t) c.node(0).Barrier(t, b, 4, Node::kGather);
    c.Drain();
    for (NodeId n = 0; n < 2; ++n)
      for (ThreadId t = 0; t < 2; ++t) ASSERT_EQ(c.node(n).Barrier(t, b, 4, Node::kGather), Outcome::kDone);
  }
  // (4) A thread that exited is not gathered for, nor the next thread given
  // its slot (it runs, and has not taken part yet).
  c.node(1).ThreadExited(1);
  c.node(1).WaitingElsewhere(1, false);  // the slot's next thread runs (and left a wait)
  for (int round = 0; round < 2; ++round) {
    before = arrivals();
    ASSERT_EQ(c.node(1).Barrier(0, b, 3, Node::kGather), Outcome::kBlocked);
    EXPECT_EQ(arrivals(), before + 1);
    EXPECT_FALSE(c.node(1).Gathering());
    for (ThreadId t = 0; t < 2; ++t) c.node(0).Barrier(t, b, 3, Node::kGather);
    c.Drain();
    ASSERT_EQ(c.node(1).Barrier(0, b, 3, Node::kGather), Outcome::kDone);
    for (ThreadId t = 0; t < 2; ++t) ASSERT_EQ(c.node(0).Barrier(t, b, 3, Node::kGather), Outcome::kDone);
  }
}

// Notices are dropped only after a barrier of every thread of the job, with
// every node in it: a thread outside may have a lock request in flight that
// names older notices, and a node outside keeps needing them.
TEST(NodeTest, BarrierCollectsNoticesOnlyWhenEveryThreadAndNodeIsIn) {
  Cluster c(2, 2);
  auto held = [&](NodeId n) { return c.node(n).TEST_log().held(); };
  auto barrier = [&](BarrierId b, uint32_t total, std::vector<std::pair<NodeId, ThreadId>> in) {
    std::vector<std::pair<NodeId, ThreadId>> blocked;
    for (auto [n, t] : in)
      if (c.node(n).Barrier(t, b, total, 1) == Outcome::kBlocked) blocked.push_back({n, t});
    c.Drain();
    for (auto [n, t] : blocked) ASSERT_EQ(c.node(n).Barrier(t, b, total, 1), Outcome::kDone);
  };
  c.Write(0, 0, 1, 10, 1);
  // Three of the job's four threads.
  barrier(1, 3, {{0, 0}, {0, 1}, {1, 0}});
  EXPECT_GT(held(0), 0u);
  EXPECT_GT(held(1), 0u);
  // Every thread the job has, but node 1 has none of them (say its threads
  // ended): node 1 has not applied the notices.
  for (NodeId n = 0; n < 2; ++n) c.host(n).job_threads = 2;
  barrier(2, 2, {{0, 0}, {0, 1}});
  EXPECT_GT(held(0), 0u);
  // Every thread, on every node.
  for (NodeId n = 0; n < 2; ++n) c.host(n).job_threads = 4;
  barrier(3, 4, {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  EXPECT_EQ(held(0), 0u);
  EXPECT_EQ(held(1), 0u);
  // Locks still carry what is newer than the collection.
  const LockId l = 0x1000;
  c.Complete([&] { return c.node(1).Acquire(1, l); });
  c.Write(1, 1, 0, 20, 7);
  c.node(1).Release(1, l);
  c.Complete([&] { return c.node(0).Acquire(1, l); });
  EXPECT_EQ(c.Read(0, 1, 0, 20), 7);
  c.node(0).Release(1, l);
}

// ---- Issue 22: single behaviours whose planted bugs only random sweeps
// caught. Cyclic homes: page p lives on node p % nodes.

// "The home accepts its copy one interval behind what notices demand": the
// home hears of the writer's interval from a third node's grant while the
// writer's diff is still on its way, and must not read before it lands.
// (With two nodes, pair FIFO puts the diff ahead of any notice; dd's direct
// diff is NodeModeTest.GrantWaitsForDepositsAndHomeWaitsForDirectDiff.)
TEST(NodeTest, Issue22HomeWaitsForADiffStillInFlight) {
  Cluster c(3, 1);
  const PageId p = 0;  // homed on node 0
  const LockId l = PinnedLock(2, 22);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.Write(1, 0, p, 10, 5);
  c.node(1).Release(0, l);
  c.Hold(1, 0);  // the writer's diff will wait here
  c.Complete([&] { return c.node(2).Acquire(0, l); });  // closes node 1's interval
  c.node(2).Release(0, l);
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  EXPECT_EQ(c.node(0).TEST_log().known()[1], 1u);  // the notice came through node 2
  EXPECT_EQ(c.node(0).Fault(0, p, Access::kRead), Outcome::kBlocked) << "home read before the diff";
  EXPECT_EQ(c.host(0).prot(p), Prot::kNone);
  c.host(0).woken.clear();
  c.Unhold(1, 0);
  c.Drain();
  EXPECT_TRUE(c.host(0).woken.count(0));
  EXPECT_EQ(c.Read(0, 0, p, 10), 5);
  c.node(0).Release(0, l);
}

// "A local lock hand-off skips merging the releaser's view": node 1 takes
// the lock from node 0 (which wrote X), hands it to its other thread, which
// releases it to node 2; node 2's old READ copy of X must be invalidated.
TEST(NodeTest, Issue22LocalHandoffPassesTheReleasersViewOn) {
  Cluster c(3, 2);
  const PageId p = 0;  // homed on node 0, the writer
  const LockId l = PinnedLock(0, 23);
  EXPECT_EQ(c.Read(2, 0, p, 7), 0);  // node 2's copy, soon old
  c.Complete([&] { return c.node(0).Acquire(0, l); });
  c.Write(0, 0, p, 7, 9);
  c.node(0).Release(0, l);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  ASSERT_EQ(c.node(1).Acquire(1, l), Outcome::kBlocked);
  const uint64_t local = c.node(1).stats().local_acquires;
  c.host(1).woken.clear();
  c.node(1).Release(0, l);  // a hand-off inside node 1: thread 1 is woken to take it
  EXPECT_TRUE(c.host(1).woken.count(1));
  ASSERT_EQ(c.node(1).Acquire(1, l), Outcome::kDone);
  EXPECT_EQ(c.node(1).stats().local_acquires, local + 1);
  c.node(1).Release(1, l);
  c.Complete([&] { return c.node(2).Acquire(0, l); });
  EXPECT_EQ(c.host(2).prot(p), Prot::kNone) << "node 2's copy of X was not invalidated";
  EXPECT_EQ(c.Read(2, 0, p, 7), 9);
  c.node(2).Release(0, l);
}

// "A barrier release leaves out the view of the arrival that completed it":
// the last node to arrive wrote X, and its arrival is the only one naming a
// new interval; the master (node 0) holds an old READ copy of X.
TEST(NodeTest, Issue22BarrierLastArrivalCarriesTheOnlyNotice) {
  for (NodeId nodes : {2u, 3u}) {
    SCOPED_TRACE(nodes);
    Cluster c(nodes, 1);
    const NodeId writer = nodes - 1;
    const PageId p = 1;  // homed on node 1
    const BarrierId b = 4;
    EXPECT_EQ(c.Read(0, 0, p, 30), 0);
    for (NodeId n = 0; n < writer; ++n) ASSERT_EQ(c.node(n).Barrier(0, b, nodes, 1), Outcome::kBlocked);
    c.Drain();
    c.Write(writer, 0, p, 30, 8);
    ASSERT_EQ(c.node(writer).Barrier(0, b, nodes, 1), Outcome::kBlocked);
    c.Drain();
    for (NodeId n = 0; n < nodes; ++n) ASSERT_EQ(c.node(n).Barrier(0, b, nodes, 1), Outcome::kDone);
    EXPECT_EQ(c.host(0).prot(p), Prot::kNone) << "the master's copy of X was not invalidated";
    EXPECT_EQ(c.Read(0, 0, p, 30), 8);
  }
}

// "The home answers a fetch before the diffs it asks for have arrived": the
// reader's own version check would hide that by fetching again and again;
// the home must hold the fetch instead.
TEST(NodeTest, Issue22HomeHoldsAFetchUntilTheDiffArrives) {
  Cluster c(3, 1);
  const PageId p = 0;  // homed on node 0
  const LockId l = PinnedLock(1, 24);
  c.Complete([&] { return c.node(1).Acquire(0, l); });
  c.Write(1, 0, p, 10, 5);
  c.node(1).Release(0, l);
  c.Hold(1, 0);
  c.Complete([&] { return c.node(2).Acquire(0, l); });  // the grant names node 1's interval
  ASSERT_EQ(c.node(2).Fault(0, p, Access::kRead), Outcome::kBlocked);
  c.Drain(50);
  EXPECT_EQ(c.node(2).Fault(0, p, Access::kRead), Outcome::kBlocked);
  EXPECT_EQ(c.node(2).stats().fetch_retries, 0u) << "the home answered before the diff";
  c.Unhold(1, 0);
  c.Drain();
  EXPECT_EQ(c.Read(2, 0, p, 10), 5);
  c.node(2).Release(0, l);
}

// "A safe fetch into a dirty page does not refresh the twin": the next safe
// fetch in the same interval would then take the bytes the node itself
// wrote since the first one for bytes others changed, and undo them.
TEST(NodeTest, Issue22SafeFetchRefreshesTheTwin) {
  Cluster c(3, 2);
  const PageId p = 2;  // homed on node 2
  const LockId a = PinnedLock(1, 26), b = PinnedLock(0, 25), d = PinnedLock(0, 27);
  c.Complete([&] { return c.node(0).Acquire(0, b); });
  c.Write(0, 0, p, 1, 22);
  c.node(0).Release(0, b);
  c.Complete([&] { return c.node(1).Acquire(0, a); });
  c.Write(1, 0, p, 0, 11);  // node 1's page is dirty (twinned) from here on
  c.Complete([&] { return c.node(1).Acquire(1, b); });
  EXPECT_EQ(c.Read(1, 1, p, 1), 22);  // safe fetch 1
  c.Write(1, 1, p, 1, 55);
  c.node(1).Release(1, b);
  c.Complete([&] { return c.node(0).Acquire(1, d); });
  c.Write(0, 1, p, 2, 77);
  c.node(0).Release(1, d);
  c.Complete([&] { return c.node(1).Acquire(0, d); });
  EXPECT_EQ(c.Read(1, 0, p, 2), 77);  // safe fetch 2, same interval
  EXPECT_EQ(c.node(1).stats().safe_fetches, 2u);
  c.Complete([&] { return c.node(1).Acquire(1, b); });
  EXPECT_EQ(c.Read(1, 1, p, 1), 55) << "the second safe fetch undid node 1's own write";
  c.node(1).Release(1, b);
  c.node(1).Release(0, d);
  c.node(1).Release(0, a);
  c.BarrierAll(3, 2);
  EXPECT_EQ(c.Read(2, 0, p, 0), 11);
  EXPECT_EQ(c.Read(2, 0, p, 1), 55);
  EXPECT_EQ(c.Read(2, 0, p, 2), 77);
}

// ---- Modes dw..nil: one Node driven by hand through a host that records the
// one-sided operations and plays the peers' NICs.

class ModeHost : public MemoryHost {
 public:
  explicit ModeHost(NodeId nodes) : MemoryHost(nodes) {}
  void Send(NodeId to, std::vector<uint8_t> bytes) override { sent.push_back({to, std::move(bytes)}); }
  void ReadPages(NodeId home, PageId first, uint32_t count, uint32_t stride, uint64_t mark,
                 Landing into) override {
    reads.push_back({home, first});
    in_place.push_back(into.where == Landing::Where::kFrames);
    landings.push_back(into);
    read_counts.push_back(count);
    read_strides.push_back(stride);
    for (uint32_t i = 0; i < count; ++i)
      if (mark & (uint64_t{1} << i)) marked.push_back(first + i * stride);
  }
  void WriteDiff(NodeId, PageId, IntervalId, std::span<const uint8_t> runs) override {
    direct_diffs++;
    direct_diff_bytes.emplace_back(runs.begin(), runs.end());
  }
  void DepositNotice(const WriteNotice& n) override { deposited.push_back(n); }
  void TakeNotices(std::vector<WriteNotice>* out) override {
    for (WriteNotice& n : inbox) out->push_back(std::move(n));
    inbox.clear();
  }
  void NicLockTail(NodeId home, LockId l, NodeId guess) override {
    nic_locks.push_back({home, l});
    guesses.push_back(guess);
  }
  void Nudge(NodeId to) override { nudged.push_back(to); }
  void DropMarks(NodeId home, std::span<const PageId> pages) override {
    for (PageId p : pages) marks_dropped.push_back({home, p});
  }
  void ClaimHome(NodeId manager, PageId p, uint32_t count, uint32_t ahead) override {
    claims.push_back({manager, p, count, ahead});
  }

  struct ClaimCall {
    NodeId manager;
    PageId page;
    uint32_t count;
    uint32_t ahead = 0;
    friend bool operator==(const ClaimCall&, const ClaimCall&) = default;
  };
  std::vector<ClaimCall> claims;
  std::vector<std::pair<NodeId, std::vector<uint8_t>>> sent;
  std::vector<std::pair<NodeId, PageId>> reads;
  std::vector<uint32_t> read_counts;
  std::vector<uint32_t> read_strides;
  std::vector<bool> in_place;
  std::vector<Landing> landings;
  std::vector<PageId> marked;  // pages whose reads set the home's SharedMark
  std::vector<std::pair<NodeId, PageId>> marks_dropped;  // DropMarks, a page each
  int direct_diffs = 0;
  std::vector<std::vector<uint8_t>> direct_diff_bytes;  // each WriteDiff's encoding
  std::vector<WriteNotice> deposited;
  std::vector<WriteNotice> inbox;  // what peers deposited, not yet taken
  std::vector<std::pair<NodeId, LockId>> nic_locks;  // NicLockTail calls
  std::vector<NodeId> guesses;
  std::vector<NodeId> nudged;  // after each request, its target
};

NodeConfig ModeConfig(Mode mode, NodeId nodes, uint32_t threads) {
  NodeConfig c;
  c.geometry = Geometry{kPage, 16, nodes};
  c.threads = threads;
  c.mode = mode;
  return c;
}

// rf: a page run is one ReadPages that marks every page; pages its
// completion lacks are dropped, or read again when a thread waits for them.
TEST(NodeModeTest, RemoteReadOfAPageRun) {
  ModeHost h(2);
  NodeConfig cfg = ModeConfig(Mode::kRf, 2, 2);
  cfg.home_policy = HomePolicy::kBlock;  // node 1 is home of pages 8..15
  cfg.max_run = 4;
  Node n(cfg, &h);
  const std::vector<uint8_t> one(kPage);
  ASSERT_EQ(n.Fault(0, 8, Access::kRead), Outcome::kBlocked);
  ASSERT_TRUE(n.OnPageRead(1, 8, 1, std::vector<VectorTime>{VectorTime(2)}, one).ok());
  ASSERT_EQ(n.Fault(0, 9, Access::kRead), Outcome::kBlocked);
  EXPECT_EQ(h.read_counts, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(h.marked, (std::vector<PageId>{8, 9, 10}));
  ASSERT_EQ(n.Fault(1, 10, Access::kRead), Outcome::kBlocked);  // waits for the run
  EXPECT_EQ(n.OnPageRead(1, 9, 1, std::vector<VectorTime>(3, VectorTime(2)), std::vector<uint8_t>(3 * kPage)).code(),
            Status::Code::kMalformed);  // more pages than asked for
  ASSERT_TRUE(n.OnPageRead(1, 9, 1, std::vector<VectorTime>{VectorTime(2)}, one).ok());
  EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{1, 10}));  // again, for its waiter
  EXPECT_EQ(h.read_counts.back(), 1u);
  EXPECT_EQ(h.marked.size(), 3u);  // marked once
  EXPECT_EQ(n.stats().fetch_retries, 1u);
  ASSERT_TRUE(n.OnPageRead(1, 10, 1, std::vector<VectorTime>{VectorTime(2)}, one).ok());
  EXPECT_EQ(n.Fault(1, 10, Access::kRead), Outcome::kDone);
  EXPECT_EQ(h.prot(10), Prot::kRead);
}

// Thread 0 of n acquires a lock homed at node 1 whose grant names node 1's
// interval 1, in which node 1 wrote page p (its notice deposited, dw on).
void AcquireAfterNode1Wrote(Node& n, ModeHost& h, PageId p, IntervalId interval = 1) {
  const LockId l = PinnedLock(1, 8 + interval);  // a lock of its own each time
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
  LockGrant g{l, VectorTime(std::vector<IntervalId>{0, interval}), {}};
  ASSERT_TRUE(n.Receive(1, wire::Encode(g, 0)).ok());
  h.inbox.push_back({1, interval, {p}});
  n.Poll();
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
}

// rf: the pages along a stride are one ReadPages (a strided run) that marks
// each; one its completion brings too old is dropped, the others mapped.
TEST(NodeModeTest, RemoteReadOfAStridedRun) {
  ModeHost h(2);
  NodeConfig cfg = ModeConfig(Mode::kRf, 2, 1);
  cfg.geometry.pages = 64;
  cfg.home_policy = HomePolicy::kBlock;  // node 1 is home of pages 32..63
  cfg.max_run = 8;
  h.frames_end = 64;
  Node n(cfg, &h);
  auto read = [&](PageId p) {
    ASSERT_EQ(n.Fault(0, p, Access::kRead), Outcome::kBlocked) << p;
    ASSERT_TRUE(n.OnPageRead(1, p, 1, std::vector<VectorTime>{VectorTime(2)}, {}).ok()) << p;
    ASSERT_EQ(n.Fault(0, p, Access::kRead), Outcome::kDone) << p;
  };
  for (PageId p : {32, 36}) ASSERT_NO_FATAL_FAILURE(read(p));
  ASSERT_EQ(n.Fault(0, 40, Access::kRead), Outcome::kBlocked);  // the third in step: 44 comes along
  EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{1, 44}));
  EXPECT_EQ(h.read_counts.back(), 1u);
  EXPECT_EQ(h.read_strides.back(), 4u);
  ASSERT_TRUE(n.OnPageRead(1, 40, 1, std::vector<VectorTime>{VectorTime(2)}, {}).ok());
  ASSERT_TRUE(n.OnPageRead(1, 44, 4, std::vector<VectorTime>{VectorTime(2)}, {}).ok());
  ASSERT_EQ(n.Fault(0, 40, Access::kRead), Outcome::kDone);
  ASSERT_EQ(n.Fault(0, 44, Access::kRead), Outcome::kDone);  // watched: no fetch
  ASSERT_EQ(n.Fault(0, 48, Access::kRead), Outcome::kBlocked);
  const size_t reads = h.reads.size();
  EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{1, 52}));  // 52, 56, 60 in one read
  EXPECT_EQ(h.read_counts.back(), 3u);
  EXPECT_EQ(h.read_strides.back(), 4u);
  EXPECT_TRUE(h.in_place.back());
  EXPECT_EQ(std::vector<PageId>(h.marked.end() - 3, h.marked.end()), (std::vector<PageId>{52, 56, 60}));
  EXPECT_EQ(n.stats().pages_strided, 4u);
  ASSERT_TRUE(n.OnPageRead(1, 48, 1, std::vector<VectorTime>{VectorTime(2)}, {}).ok());
  ASSERT_EQ(n.Fault(0, 48, Access::kRead), Outcome::kDone);
  ASSERT_NO_FATAL_FAILURE(AcquireAfterNode1Wrote(n, h, 56));  // 56's copy on the way is too old
  // A completion at another stride than asked is refused.
  EXPECT_EQ(n.OnPageRead(1, 52, 1, std::vector<VectorTime>(3, VectorTime(2)), {}).code(), Status::Code::kMalformed);
  for (PageId p : {52, 56, 60}) h.Frame(p)[0] = uint8_t(p);  // the NIC wrote them in their frames
  ASSERT_TRUE(n.OnPageRead(1, 52, 4, std::vector<VectorTime>(3, VectorTime(2)), {}).ok());
  EXPECT_EQ(h.reads.size(), reads);  // nobody waits for 56: dropped, not read again
  EXPECT_EQ(n.stats().ahead_unused, 1u);
  EXPECT_EQ(h.prot(52), Prot::kRead);
  EXPECT_EQ(h.prot(56), Prot::kNone);
  EXPECT_EQ(h.prot(60), Prot::kNone);  // watched
  ASSERT_EQ(n.Fault(0, 60, Access::kRead), Outcome::kDone);
  EXPECT_EQ(h.Frame(60)[0], 60);
  EXPECT_EQ(n.stats().ahead_used, 2u);  // 44, 60
  ASSERT_EQ(n.Fault(0, 56, Access::kRead), Outcome::kBlocked);  // fetched again, on its own
  EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{1, 56}));
  EXPECT_EQ(h.read_counts.back(), 1u);
}

// rf: an invalid page's copy may land in its frame (one copy, not two); a
// dirty page's cannot (its safe fetch merges through the twin).
TEST(NodeModeTest, RemoteReadLandsInTheFrameOfAnInvalidPage) {
  ModeHost h(2);
  Node n(ModeConfig(Mode::kRf, 2, 1), &h);  // page 1: homed at node 1
  ASSERT_EQ(n.Fault(0, 1, Access::kRead), Outcome::kBlocked);
  ASSERT_EQ(h.in_place, std::vector<bool>{true});
  h.Frame(1)[7] = 42;  // the NIC wrote it there: no data comes with the completion
  ASSERT_TRUE(n.OnPageRead(1, 1, 1, std::vector<VectorTime>{VectorTime(2)}, {}).ok());
  ASSERT_EQ(n.Fault(0, 1, Access::kRead), Outcome::kDone);
  EXPECT_EQ(h.Frame(1)[7], 42);
  ASSERT_EQ(n.Fault(0, 1, Access::kWrite), Outcome::kDone);  // twinned, dirty
  h.Frame(1)[8] = 1;
  ASSERT_NO_FATAL_FAILURE(AcquireAfterNode1Wrote(n, h, 1));  // the dirty copy goes stale
  ASSERT_EQ(n.Fault(0, 1, Access::kRead), Outcome::kBlocked);
  EXPECT_EQ(h.in_place.back(), false);
}

// dw: a timestamp may run ahead of the deposits, and is waited for; but not
// one naming an interval of this node's own that it has not closed, which
// would be waited for forever.
TEST(NodeModeTest, TimestampOfOwnUnclosedIntervalIsMalformed) {
  ModeHost h(2);
  Node n(ModeConfig(Mode::kDw, 2, 1), &h);
  const LockId l = PinnedLock(1, 9);
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
  LockGrant forged{l, VectorTime(std::vector<IntervalId>{1, 0}), {}};
  EXPECT_EQ(n.Receive(1, wire::Encode(forged, 0)).code(), Status::Code::kMalformed);
  EXPECT_FALSE(n.NeedsPoll());
  LockGrant ahead{l, VectorTime(std::vector<IntervalId>{0, 1}), {}};  // node 1's, still coming
  EXPECT_TRUE(n.Receive(1, wire::Encode(ahead, 0)).ok());
  EXPECT_TRUE(n.NeedsPoll());
}

// dd: a grant naming a third node's interval waits until that node's notice
// is deposited (Poll); the notice then makes the home wait for the direct
// diff, which only a Poll that re-reads the version can see.
TEST(NodeModeTest, GrantWaitsForDepositsAndHomeWaitsForDirectDiff) {
  ModeHost h(3);
  Node n(ModeConfig(Mode::kDd, 3, 1), &h);
  const LockId l = PinnedLock(1, 9);  // message path in every mode, homed at node 1
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
  ASSERT_EQ(h.sent.size(), 1u);  // the request to node 1
  LockGrant g{l, VectorTime(std::vector<IntervalId>{0, 0, 1}), {}};
  ASSERT_TRUE(n.Receive(1, wire::Encode(g, 0)).ok());
  EXPECT_EQ(n.Acquire(0, l), Outcome::kBlocked);  // node 2's interval 1 not deposited yet
  EXPECT_TRUE(n.NeedsPoll());
  n.Poll();
  EXPECT_TRUE(n.NeedsPoll());
  h.inbox.push_back({2, 1, {0}});  // page 0 is homed here (cyclic)
  n.Poll();
  EXPECT_FALSE(n.NeedsPoll());
  EXPECT_TRUE(h.woken.count(0));
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
  EXPECT_EQ(n.TEST_log().known()[2], 1u);
  EXPECT_EQ(n.stats().notices_taken, 1u);

  EXPECT_EQ(n.Fault(0, 0, Access::kRead), Outcome::kBlocked);  // node 2's diff is due
  EXPECT_TRUE(n.NeedsPoll());
  h.woken.clear();
  n.Poll();
  EXPECT_TRUE(h.woken.empty());
  h.Versions(0)[2] = 1;  // node 2's NIC wrote the diff, then the version
  h.SharedMark(0) = 1;   // node 2 read the page before writing it
  n.Poll();
  EXPECT_FALSE(n.NeedsPoll());
  EXPECT_TRUE(h.woken.count(0));
  EXPECT_EQ(n.Fault(0, 0, Access::kRead), Outcome::kDone);
  EXPECT_EQ(h.prot(0), Prot::kRead);
  EXPECT_EQ(n.stats().handler[static_cast<size_t>(HandlerKind::kDiff)], 0u);
}

// rf: a node's first read of a page marks it at its home (the home then
// tracks its writes); later reads of the page do not mark again.
// A node's mark counts at the home while it holds a copy: a copy a notice
// drops gives the mark back at the next acquire that applies notices, if
// not fetched again by then, and the next read marks again. A copy read
// again in between keeps its mark (no pair of counts per interval).
TEST(NodeModeTest, RemoteReadMarksThePageWhileTheCopyLasts) {
  ModeHost h(2);
  Node n(ModeConfig(Mode::kRf, 2, 1), &h);
  auto read = [&] {  // page 1: homed at node 1
    ASSERT_EQ(n.Fault(0, 1, Access::kRead), Outcome::kBlocked);
    const VectorTime version(std::vector<IntervalId>(h.Versions(1).begin(), h.Versions(1).end()));
    ASSERT_TRUE(n.OnPageRead(1, 1, 1, std::vector<VectorTime>{version}, std::vector<uint8_t>(kPage)).ok());
    ASSERT_EQ(n.Fault(0, 1, Access::kRead), Outcome::kDone);
  };
  ASSERT_NO_FATAL_FAILURE(read());
  EXPECT_EQ(h.marked, std::vector<PageId>{1});
  h.Versions(1)[1] = 1;
  ASSERT_NO_FATAL_FAILURE(AcquireAfterNode1Wrote(n, h, 1));  // invalidates page 1
  EXPECT_EQ(h.prot(1), Prot::kNone);
  EXPECT_TRUE(h.marks_dropped.empty());
  ASSERT_NO_FATAL_FAILURE(AcquireAfterNode1Wrote(n, h, 3, 2));  // another page's notice
  EXPECT_EQ(h.marks_dropped, (std::vector<std::pair<NodeId, PageId>>{{1, 1}}));
  EXPECT_EQ(n.stats().marks_dropped, 1u);
  ASSERT_NO_FATAL_FAILURE(read());
  EXPECT_EQ(h.marked, (std::vector<PageId>{1, 1}));
  h.Versions(1)[1] = 3;
  ASSERT_NO_FATAL_FAILURE(AcquireAfterNode1Wrote(n, h, 1, 3));  // dropped again
  ASSERT_NO_FATAL_FAILURE(read());                              // and read again: no new mark
  EXPECT_EQ(h.marked.size(), 2u);
  ASSERT_NO_FATAL_FAILURE(AcquireAfterNode1Wrote(n, h, 3, 4));
  EXPECT_EQ(h.marks_dropped.size(), 1u);
}

// Issue 22, "the home accepts its copy one interval behind what notices
// demand", in the offload modes: the home (node 0) takes a grant naming node
// 2's interval 1 on page 0, with the notice already deposited, while node
// 2's diff (a message; dd: a remote WRITE, then the version) has not come.
TEST(NodeModeTest, Issue22HomeWaitsForADiffInEveryOffloadMode) {
  for (Mode mode : {Mode::kDw, Mode::kRf, Mode::kDd, Mode::kNil}) {
    SCOPED_TRACE(ToString(mode));
    ModeHost h(3);
    Node n(ModeConfig(mode, 3, 1), &h);
    const LockId l = PinnedLock(1, 22);
    ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
    const VectorTime ts(std::vector<IntervalId>{0, 0, 1});
    h.inbox.push_back({2, 1, {0}});  // page 0 is homed here
    if (LocksAtNic(mode)) {
      ASSERT_TRUE(n.OnNicLockTail(l, 1).ok());  // the home held it
    }
    ASSERT_TRUE(n.Receive(1, wire::Encode(LockGrant{l, ts, {}}, 0)).ok());
    ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
    EXPECT_EQ(n.Fault(0, 0, Access::kRead), Outcome::kBlocked) << "home read before the diff";
    h.woken.clear();
    if (DiffsDirectly(mode)) {
      h.Frame(0)[9] = 4;
      h.Versions(0)[2] = 1;
      n.Poll();
    } else {
      std::vector<uint8_t> page(kPage), twin(kPage), runs;
      page[9] = 4;
      diff::Encode(page, twin, &runs);
      ASSERT_TRUE(n.Receive(2, wire::Encode(DiffMessage{0, 1, runs}, 0)).ok());
    }
    EXPECT_TRUE(h.woken.count(0));
    ASSERT_EQ(n.Fault(0, 0, Access::kRead), Outcome::kDone);
    EXPECT_EQ(h.Frame(0)[9], 4);
    n.Release(0, l);
  }
}

// dw: a closed interval is deposited at the peers, and the grant that
// closed it carries no notices.
TEST(NodeModeTest, ClosedIntervalIsDepositedNotSent) {
  ModeHost h(2);
  NodeConfig c = ModeConfig(Mode::kDw, 2, 1);
  c.self = 1;
  Node n(c, &h);
  const LockId l = PinnedLock(1, 4);  // homed here: the token is here
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
  h.SharedMark(1) = 1;  // node 0 holds a copy of page 1, homed here: writes are noted
  ASSERT_EQ(n.Fault(0, 1, Access::kWrite), Outcome::kDone);
  n.Release(0, l);
  LockRequest r{l, 0, false, VectorTime(2)};
  ASSERT_TRUE(n.Receive(0, wire::Encode(r, 0)).ok());
  ASSERT_EQ(h.deposited.size(), 1u);
  EXPECT_EQ(h.deposited[0], (WriteNotice{1, 1, {1}}));
  ASSERT_EQ(h.sent.size(), 1u);
  Message m;
  ASSERT_TRUE(wire::Decode(h.sent[0].second, 0, 2, &m).ok());
  ASSERT_TRUE(std::holds_alternative<LockGrant>(m));
  EXPECT_TRUE(std::get<LockGrant>(m).notices.empty());
  EXPECT_EQ(std::get<LockGrant>(m).timestamp[1], 1u);
}

// rf: a tracked home page written while no other node holds a copy (its
// marks given back), kUnsharedIntervals intervals in a row, goes back to
// untracked as the last of them closes: read-write, unnoted from then on. A copy taken later tracks it again, and the interval
// that closes after announces it (the copy may predate home writes).
TEST(NodeModeTest, HomePageNobodyHoldsGoesBackToUntracked) {
  for (bool scan : {false, true}) {
    SCOPED_TRACE(scan ? "writes found by scans" : "writes found by faults");
    ModeHost h(2);
    h.scan_writes = scan;
    NodeConfig c = ModeConfig(Mode::kRf, 2, 1);
    c.self = 1;
    c.scan_writes = scan;
    Node n(c, &h);
    const PageId p = 1;  // homed here
    auto write = [&] {
      if (h.prot(p) != Prot::kReadWrite && !(scan && h.prot(p) == Prot::kRead)) {
        ASSERT_EQ(n.Fault(0, p, Access::kWrite), Outcome::kDone);
      }
      if (scan) h.WriteThrough(p);
    };
    BarrierId b = 0;
    auto barrier = [&] {  // node 0, the master, has nothing to announce
      ++b;
      ASSERT_EQ(n.Barrier(0, b, 2, 1, nullptr), Outcome::kBlocked);
      BarrierRelease r{b, VectorTime(std::vector<IntervalId>{0, IntervalId(n.stats().intervals)}), false, {}, false, 1};
      ASSERT_TRUE(n.Receive(0, wire::Encode(r, 0)).ok());
      ASSERT_EQ(n.Barrier(0, b, 2, 1, nullptr), Outcome::kDone);
    };
    h.SharedMark(p) = 1;  // node 0 holds a copy
    ASSERT_NO_FATAL_FAILURE(write());
    ASSERT_NO_FATAL_FAILURE(barrier());
    EXPECT_EQ(h.deposited.back(), (WriteNotice{1, 1, {p}}));
    EXPECT_EQ(h.prot(p), Prot::kRead);  // the next write is noted
    h.SharedMark(p) = 0;  // node 0's copy went
    // Written with no copy elsewhere: tracked still, until the
    // kUnsharedIntervals'th interval in a row.
    for (uint8_t i = 1; i < Node::kUnsharedIntervals; ++i) {
      ASSERT_NO_FATAL_FAILURE(write());
      ASSERT_NO_FATAL_FAILURE(barrier());
      EXPECT_EQ(h.prot(p), Prot::kRead);
    }
    ASSERT_NO_FATAL_FAILURE(write());
    ASSERT_NO_FATAL_FAILURE(barrier());
    IntervalId last = 1 + Node::kUnsharedIntervals;
    EXPECT_EQ(h.deposited.back(), (WriteNotice{1, last, {p}}));
    EXPECT_EQ(n.stats().untracked_again, 1u);
    EXPECT_EQ(h.prot(p), Prot::kReadWrite);
    const uint64_t faults = n.stats().write_faults, protections = n.stats().protections;
    ASSERT_NO_FATAL_FAILURE(write());  // no fault, no notice, no re-protection
    ASSERT_NO_FATAL_FAILURE(barrier());
    EXPECT_EQ(n.stats().intervals, last);
    EXPECT_EQ(n.stats().write_faults, faults);
    EXPECT_EQ(n.stats().protections, protections);
    h.SharedMark(p) = 1;  // node 0 read it again
    ASSERT_NO_FATAL_FAILURE(barrier());
    EXPECT_EQ(h.deposited.back(), (WriteNotice{1, ++last, {p}}));
    EXPECT_EQ(h.prot(p), Prot::kRead);
    ASSERT_NO_FATAL_FAILURE(write());
    ASSERT_NO_FATAL_FAILURE(barrier());
    EXPECT_EQ(h.deposited.back(), (WriteNotice{1, ++last, {p}}));
    // A copy in between starts the count again.
    h.SharedMark(p) = 0;
    for (uint8_t i = 1; i < Node::kUnsharedIntervals; ++i) {
      ASSERT_NO_FATAL_FAILURE(write());
      ASSERT_NO_FATAL_FAILURE(barrier());
    }
    h.SharedMark(p) = 1;
    ASSERT_NO_FATAL_FAILURE(write());
    ASSERT_NO_FATAL_FAILURE(barrier());
    h.SharedMark(p) = 0;
    ASSERT_NO_FATAL_FAILURE(write());
    ASSERT_NO_FATAL_FAILURE(barrier());
    EXPECT_EQ(n.stats().untracked_again, 1u);
    EXPECT_EQ(h.prot(p), Prot::kRead);
  }
}

// base: the home's handler counts a fetch's mark, and the reader's
// MarksDropped gives it back when its copy goes; a page written with no
// copy elsewhere kUnsharedIntervals intervals in a row goes back to
// untracked, and the reader's next fetch tracks it again.
TEST(NodeTest, BaseHomePageGoesBackToUntracked) {
  Cluster c(2, 1);
  c.Write(0, 0, 0, 5, 1);
  EXPECT_EQ(c.Read(1, 0, 0, 5), 1);  // node 1's fetch marks page 0
  EXPECT_EQ(c.host(0).SharedMark(0), 1u);
  BarrierId b = 0;
  uint8_t v = 1;
  // Node 1's copy goes at the first barrier, its mark at the second.
  for (uint8_t round = 0; round <= Node::kUnsharedIntervals + 1; ++round) {
    c.Write(0, 0, 0, 5, ++v);
    c.BarrierAll(++b, 1);
  }
  EXPECT_EQ(c.node(1).stats().marks_dropped, 1u);
  EXPECT_EQ(c.host(0).SharedMark(0), 0u);
  EXPECT_EQ(c.node(0).stats().untracked_again, 1u);
  EXPECT_EQ(c.host(0).prot(0), Prot::kReadWrite);
  EXPECT_EQ(c.Read(1, 0, 0, 5), v);  // marks it again
  EXPECT_EQ(c.host(0).SharedMark(0), 1u);
  c.Write(0, 0, 0, 5, 100);  // no fault: announced as the page is tracked again
  c.BarrierAll(++b, 1);
  EXPECT_EQ(c.Read(1, 0, 0, 5), 100);
  EXPECT_EQ(c.node(0).stats().tracked_pages, 2u);
}

// A MarksDropped must name pages homed here that a holder marked.
TEST(NodeTest, MarksDroppedChecked) {
  Cluster c(2, 1);
  c.Write(0, 0, 0, 5, 1);
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(MarksDropped{{0}}, 0)).ok()) << "nobody holds it";
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(MarksDropped{{1}}, 0)).ok()) << "homed on node 1";
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(MarksDropped{{}}, 0)).ok());
  FetchRequest f{0, VectorTime(2), 2, 1, 0b100};
  EXPECT_FALSE(c.node(0).Receive(1, wire::Encode(f, 0)).ok()) << "a mark beyond the run";
}

// The messages h.sent holds from index `from` on, decoded.
std::vector<std::pair<NodeId, Message>> Sent(const ModeHost& h, size_t from, NodeId nodes) {
  std::vector<std::pair<NodeId, Message>> out;
  for (size_t i = from; i < h.sent.size(); ++i) {
    Message m;
    EXPECT_TRUE(wire::Decode(h.sent[i].second, 0, nodes, &m).ok());
    out.push_back({h.sent[i].first, std::move(m)});
  }
  return out;
}

// A diff of scattered writes goes as a masked block where it may: always as
// a message (rf), as a direct diff (dd) only where the host's NIC stores
// masked blocks (NodeConfig::masked_direct_diffs).
TEST(NodeModeTest, ScatteredWritesDiffAsAMaskedBlockWhereTheyMay) {
  for (Mode mode : {Mode::kRf, Mode::kDd}) {
    for (bool masked_direct : {false, true}) {
      SCOPED_TRACE(std::string(ToString(mode)) + (masked_direct ? " masked direct diffs" : " runs only"));
      ModeHost h(2);
      NodeConfig c = ModeConfig(mode, 2, 1);
      c.self = 1;
      c.masked_direct_diffs = masked_direct;
      Node n(c, &h);
      const LockId l = PinnedLock(1, 4);  // homed here: the token is here
      ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
      const PageId p = 0;  // homed at node 0
      ASSERT_EQ(n.Fault(0, p, Access::kRead), Outcome::kBlocked);
      const std::vector<uint8_t> zeros(kPage);
      const bool in_frames = h.landings.back().where == Host::Landing::Where::kFrames;
      ASSERT_TRUE(n.OnPageRead(0, p, 1, std::vector<VectorTime>{VectorTime(2)},
                               in_frames ? std::span<const uint8_t>() : std::span<const uint8_t>(zeros))
                      .ok());
      ASSERT_EQ(n.Fault(0, p, Access::kWrite), Outcome::kDone);
      for (size_t i = 0; i < kPage; i += 8) h.Frame(p)[i] = h.Frame(p)[i + 1] = uint8_t(1 + i / 8);  // 10 bytes a run
      n.Release(0, l);
      ASSERT_TRUE(n.Receive(0, wire::Encode(LockRequest{l, 0, false, VectorTime(2)}, 0)).ok());
      std::vector<uint8_t> encoded;
      if (DiffsDirectly(mode)) {
        ASSERT_EQ(h.direct_diff_bytes.size(), 1u);
        encoded = h.direct_diff_bytes[0];
      } else {
        for (auto& [to, m] : Sent(h, 0, 2))
          if (auto* d = std::get_if<DiffMessage>(&m)) encoded = d->runs;
      }
      ASSERT_GE(encoded.size(), diff::kRunHeaderBytes);
      const bool masked = (encoded[7] & 0x80) != 0;  // the length's top bit
      EXPECT_EQ(masked, !DiffsDirectly(mode) || masked_direct);
      EXPECT_EQ(n.stats().masked_diffs, masked ? 1u : 0u);
      std::vector<uint8_t> home(kPage);
      ASSERT_TRUE(diff::Apply(encoded, home).ok());
      EXPECT_TRUE(std::equal(home.begin(), home.end(), h.Frame(p).begin()));
    }
  }
}


// rf, 2 x 1, block homes, writes found by scans, on a host that fills (as
// the uffd runtime does): node 1 is home of the upper half of the pages.
NodeConfig ScanningRfOnAFillingHost(ModeHost& h, uint64_t pages) {
  h.fills = true;
  h.scan_writes = true;
  NodeConfig cfg = ModeConfig(Mode::kRf, 2, 1);
  cfg.geometry.pages = pages;
  cfg.home_policy = HomePolicy::kBlock;
  cfg.scan_writes = true;
  return cfg;
}

// rf under scan_writes on a host that fills: a run of pages never fetched here is
// read into fresh twins, side by side, and its frame filled from there (the
// twin is the fetched copy: a write found later diffs against it); twins a
// run's pages did not take go spare, and a read that spares can serve lands
// in the host's buffer instead.
TEST(NodeModeTest, RemoteReadOfARunWithNoFramesLandsInItsTwins) {
  using Where = Host::Landing::Where;
  ModeHost h(2);
  NodeConfig cfg = ScanningRfOnAFillingHost(h, 16);  // node 1 is home of pages 8..15
  cfg.max_run = 4;
  Node n(cfg, &h);
  ASSERT_EQ(n.Fault(0, 8, Access::kRead), Outcome::kBlocked);  // one page: a fresh twin too
  ASSERT_EQ(h.landings.back().where, Where::kAt);
  uint8_t* twin = h.landings.back().at;
  std::fill(twin, twin + kPage, uint8_t(3));
  ASSERT_TRUE(n.OnPageRead(1, 8, 1, std::vector<VectorTime>{VectorTime(2)}, {twin, kPage}).ok());
  EXPECT_EQ(h.Frame(8)[0], 3);
  ASSERT_EQ(n.Fault(0, 9, Access::kRead), Outcome::kBlocked);  // 9 and 10
  ASSERT_EQ(h.read_counts.back(), 2u);
  ASSERT_EQ(h.landings.back().where, Where::kAt);
  uint8_t* twins = h.landings.back().at;
  for (size_t i = 0; i < 2 * kPage; ++i) twins[i] = uint8_t(i * 7);  // the NIC read them there
  ASSERT_TRUE(n.OnPageRead(1, 9, 1, std::vector<VectorTime>(2, VectorTime(2)), {twins, 2 * kPage}).ok());
  ASSERT_EQ(n.Fault(0, 9, Access::kRead), Outcome::kDone);
  EXPECT_EQ(h.filled, (std::vector<PageId>{8, 9}));  // 10 is watched: unmapped, written through its frame
  EXPECT_EQ(h.Frame(9)[100], uint8_t(700));
  EXPECT_EQ(h.Frame(10)[100], uint8_t((kPage + 100) * 7));
  EXPECT_EQ(n.stats().twins, 3u);
  // Written (no fault: found by the release's scan), then asked for by node
  // 1: the diff holds the one byte written.
  const LockId l = PinnedLock(0, 9);
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
  h.WriteThrough(9);
  h.Frame(9)[5] = 1;
  n.Release(0, l);
  ASSERT_TRUE(n.Receive(1, wire::Encode(LockRequest{l, 1, false, VectorTime(2)}, 0)).ok());
  size_t diffs = 0;
  for (auto& [to, m] : Sent(h, 0, 2)) {
    if (auto* d = std::get_if<DiffMessage>(&m)) {
      diffs++;
      EXPECT_EQ(d->page, 9u);
      EXPECT_EQ(d->runs.size(), diff::kRunHeaderBytes + 1);
    }
  }
  EXPECT_EQ(diffs, 1u);
  // A run of four of which one comes: the others' twins go spare (and the
  // window shrinks); the next runs, which spares can serve, land in the
  // host's buffer, or, a single page, in a spare twin.
  ASSERT_EQ(n.Fault(0, 11, Access::kRead), Outcome::kBlocked);
  ASSERT_EQ(h.read_counts.back(), 4u);
  ASSERT_EQ(h.landings.back().where, Where::kAt);
  twins = h.landings.back().at;
  ASSERT_TRUE(n.OnPageRead(1, 11, 1, std::vector<VectorTime>{VectorTime(2)}, {twins, kPage}).ok());
  ASSERT_EQ(n.Fault(0, 11, Access::kRead), Outcome::kDone);
  for (PageId p = 12; p < 16; p += h.read_counts.back()) {
    ASSERT_EQ(n.Fault(0, p, Access::kRead), Outcome::kBlocked) << p;
    const uint32_t count = h.read_counts.back();
    std::vector<uint8_t> buffer(count * kPage);
    std::span<uint8_t> bytes = buffer;
    if (count == 1) {
      ASSERT_EQ(h.landings.back().where, Where::kAt) << p;
      bytes = {h.landings.back().at, kPage};
    } else {
      EXPECT_EQ(h.landings.back().where, Where::kBuffer) << p;
    }
    ASSERT_TRUE(n.OnPageRead(1, p, 1, std::vector<VectorTime>(count, VectorTime(2)), bytes).ok());
  }
  EXPECT_GE(*std::max_element(h.read_counts.end() - 2, h.read_counts.end()), 2u);
  EXPECT_EQ(n.stats().twins, 3u + 1u + 4u);
}

// Runs read into fresh twins take the twin slabs in turn, each twice the
// last, and one of 2 MiB or more starts on a 2 MiB boundary: the host can
// commit it in huge pages.
TEST(NodeModeTest, TwinSlabsGrowAndAHugeOneIsAlignedForHugePages) {
  using Where = Host::Landing::Where;
  ModeHost h(2);
  Node n(ScanningRfOnAFillingHost(h, 4096), &h);  // node 1 is home of pages 2048..4095
  for (PageId p = 2048; p < 4096; p += h.read_counts.back()) {
    ASSERT_EQ(n.Fault(0, p, Access::kRead), Outcome::kBlocked) << p;
    const uint32_t count = h.read_counts.back();
    std::vector<uint8_t> buffer;
    std::span<uint8_t> bytes;
    if (h.landings.back().where == Where::kAt) {
      bytes = {h.landings.back().at, count * kPage};
    } else {
      buffer.resize(count * kPage);
      bytes = buffer;
    }
    for (uint32_t i = 0; i < count; ++i) bytes[i * kPage] = uint8_t(p + i);
    ASSERT_TRUE(n.OnPageRead(1, p, 1, std::vector<VectorTime>(count, VectorTime(2)), bytes).ok()) << p;
    ASSERT_EQ(n.Fault(0, p, Access::kRead), Outcome::kDone) << p;
  }
  EXPECT_EQ(n.stats().twins, 2048u);
  ASSERT_GE(h.populated.size(), 6u);
  for (size_t i = 1; i < h.populated.size(); ++i)
    EXPECT_EQ(h.populated[i].size(), std::min(2 * h.populated[i - 1].size(), 1024 * kPage)) << i;
  size_t huge = 0;
  for (std::span<uint8_t> slab : h.populated) {
    if (slab.size() < kHugePageBytes) continue;
    huge++;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(slab.data()) % kHugePageBytes, 0u) << slab.size();
  }
  EXPECT_GE(huge, 2u);
  for (PageId p : {2048, 3000, 4095}) EXPECT_EQ(h.Frame(p)[0], uint8_t(p));
}

// A release with local waiters leaves the token idle and wakes the oldest,
// once: it takes the token when it runs, unless a thread of the node that
// was not waiting takes it first, which kMaxBarges bounds; past that the
// waiter gets the token directly. A timed-out waiter passes it on.
TEST(NodeModeTest, LocalWaiterIsWokenToTakeTheIdleTokenAndOthersMayBargeAFewTimes) {
  ModeHost h(2);
  Node n(ModeConfig(Mode::kBase, 2, 3), &h);
  const LockId l = PinnedLock(0, 60);  // homed here: the token is here
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
  ASSERT_EQ(n.Acquire(1, l), Outcome::kBlocked);
  h.woken.clear();
  n.Release(0, l);
  EXPECT_EQ(h.woken, std::set<ThreadId>{1});
  EXPECT_FALSE(n.Holds(1, l));
  EXPECT_FALSE(n.HeldLocally(l));  // idle: a try-lock may take it
  // The releaser comes back before thread 1 runs: it takes the idle token,
  // and thread 1, still the oldest waiter, is not woken again meanwhile;
  // the release after the last barge hands the token to thread 1.
  for (uint32_t k = 0; k < Node::kMaxBarges; ++k) {
    h.woken.clear();
    ASSERT_EQ(n.Acquire(0, l), Outcome::kDone) << k;
    n.Release(0, l);
    if (k + 1 < Node::kMaxBarges) {
      ASSERT_TRUE(h.woken.empty()) << k;
    }
  }
  EXPECT_TRUE(n.Holds(1, l));
  EXPECT_EQ(h.woken, std::set<ThreadId>{1});
  ASSERT_EQ(n.Acquire(1, l), Outcome::kDone);  // thread 1 runs at last
  // Thread 2 waits; thread 0 queues behind it. At thread 1's release thread
  // 2 is woken; thread 1 barges in again; thread 2 runs while thread 1
  // holds the lock: it lost the race, and the token is its at thread 1's
  // release; a barge then fails.
  ASSERT_EQ(n.Acquire(2, l), Outcome::kBlocked);
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
  h.woken.clear();
  n.Release(1, l);
  EXPECT_EQ(h.woken, std::set<ThreadId>{2});
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);  // a waiter behind thread 2 does not barge
  ASSERT_EQ(n.Acquire(1, l), Outcome::kDone);
  ASSERT_EQ(n.Acquire(2, l), Outcome::kBlocked);
  h.woken.clear();
  n.Release(1, l);
  EXPECT_EQ(h.woken, std::set<ThreadId>{2});
  EXPECT_TRUE(n.Holds(2, l));
  ASSERT_EQ(n.Acquire(1, l), Outcome::kBlocked);  // behind thread 0
  // Thread 2's release wakes thread 0 for the idle token; it gives up (a
  // timed lock) before it runs: the token kept for it goes to thread 1.
  h.woken.clear();
  n.Release(2, l);
  EXPECT_EQ(h.woken, std::set<ThreadId>{0});
  h.woken.clear();
  EXPECT_TRUE(n.CancelAcquire(0, l));
  EXPECT_EQ(h.woken, std::set<ThreadId>{1});
  ASSERT_EQ(n.Acquire(1, l), Outcome::kDone);
  n.Release(1, l);
  EXPECT_EQ(n.stats().local_acquires, 1u + Node::kMaxBarges + 4);
  EXPECT_TRUE(h.sent.empty());  // all of it inside the node
}

// Takes by threads that were not waiting count against a waiting remote
// successor like local hand-offs: after kMaxLocalBypasses of them nobody
// barges, and the token goes to the remote node once the local waiters that
// asked before it are served.
TEST(NodeModeTest, BargingCountsAgainstAWaitingRemoteNode) {
  ModeHost h(2);
  Node n(ModeConfig(Mode::kBase, 2, 2), &h);
  const LockId l = PinnedLock(0, 61);
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
  ASSERT_EQ(n.Acquire(1, l), Outcome::kBlocked);  // before the remote request
  ASSERT_TRUE(n.Receive(1, wire::Encode(LockRequest{l, 1, false, VectorTime(2)}, 0)).ok());
  for (uint32_t k = 0; k < Node::kMaxLocalBypasses; ++k) {
    n.Release(0, l);
    ASSERT_FALSE(n.Holds(1, l)) << k;
    ASSERT_EQ(n.Acquire(0, l), Outcome::kDone) << k;  // thread 1 has not run
  }
  EXPECT_TRUE(Sent(h, 0, 2).empty());
  n.Release(0, l);
  EXPECT_TRUE(n.Holds(1, l));                     // it asked before node 1
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);  // after node 1
  n.Release(1, l);
  auto sent = Sent(h, 0, 2);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].first, 1u);
  EXPECT_TRUE(std::holds_alternative<LockGrant>(sent[0].second));
  EXPECT_TRUE(std::holds_alternative<LockRequest>(sent[1].second));  // thread 0 asks node 1 for it
  EXPECT_FALSE(n.HeldLocally(l));
}

// nil, a cohort lock: a remote acquire swaps the tail word at the home (one
// NIC operation) and asks the node it names; after that the token stays
// here, idle or not, and every acquire by a thread of this node is local:
// no message and no NIC operation, until another node asks for it.
TEST(NodeModeTest, NilLockStaysWithItsNodeUntilAnotherNodeAsks) {
  ModeHost h(3);
  Node n(ModeConfig(Mode::kNil, 3, 2), &h);
  const LockId l = PinnedLock(1, 50);  // homed at node 1
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
  ASSERT_EQ(n.Acquire(1, l), Outcome::kBlocked);
  ASSERT_EQ(h.nic_locks.size(), 1u);  // once per node
  EXPECT_EQ(h.nic_locks[0], (std::pair<NodeId, LockId>{1, l}));
  EXPECT_TRUE(h.sent.empty());
  EXPECT_FALSE(n.OnNicLockTail(l, 0).ok());  // never its own predecessor
  ASSERT_TRUE(n.OnNicLockTail(l, 2).ok());   // node 2 asked before us
  auto sent = Sent(h, 0, 3);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, 2u);
  ASSERT_TRUE(std::holds_alternative<LockRequest>(sent[0].second));
  EXPECT_EQ(std::get<LockRequest>(sent[0].second).requester, 0u);
  EXPECT_EQ(h.nudged, std::vector<NodeId>{2});
  EXPECT_FALSE(n.OnNicLockTail(l, 2).ok());  // the swap already completed
  ASSERT_TRUE(n.Receive(2, wire::Encode(LockGrant{l, VectorTime(3), {}}, 0)).ok());
  ThreadId holder = 0;
  ASSERT_TRUE(n.Holds(holder, l));
  for (int k = 0; k < 100; ++k) {  // unbounded local hand-offs while nobody else asks
    n.Release(holder, l);
    holder = 1 - holder;
    ASSERT_EQ(n.Acquire(holder, l), Outcome::kDone) << k;  // the waiter, woken
    ASSERT_EQ(n.Acquire(1 - holder, l), Outcome::kBlocked);
  }
  n.Release(holder, l);
  ASSERT_EQ(n.Acquire(1 - holder, l), Outcome::kDone);
  n.Release(1 - holder, l);  // idle: the token stays
  ASSERT_EQ(n.Acquire(0, l), Outcome::kDone);
  EXPECT_EQ(h.nic_locks.size(), 1u);
  EXPECT_EQ(h.sent.size(), 1u);
  EXPECT_EQ(n.stats().local_acquires, 102u);
  // Node 1 swapped the word after us: it asks us. Threads of this node that
  // ask after it still go first, kMaxLocalBypasses times; then node 1.
  EXPECT_FALSE(n.Receive(2, wire::Encode(LockRequest{l, 1, true, VectorTime(3)}, 0)).ok());
  EXPECT_FALSE(n.Receive(1, wire::Encode(LockRequest{l, 1, false, VectorTime(3)}, 0)).ok());
  ASSERT_TRUE(n.Receive(1, wire::Encode(LockRequest{l, 1, true, VectorTime(3)}, 0)).ok());
  holder = 0;
  for (uint32_t k = 0; k < Node::kMaxLocalBypasses; ++k) {
    ASSERT_EQ(n.Acquire(1 - holder, l), Outcome::kBlocked);
    n.Release(holder, l);
    holder = 1 - holder;
    ASSERT_EQ(n.Acquire(holder, l), Outcome::kDone) << k;
  }
  EXPECT_EQ(h.sent.size(), 1u);
  ASSERT_EQ(n.Acquire(1 - holder, l), Outcome::kBlocked);
  n.Release(holder, l);
  sent = Sent(h, 1, 3);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, 1u);
  EXPECT_TRUE(std::holds_alternative<LockGrant>(sent[0].second));
  EXPECT_FALSE(n.HeldLocally(l));
  EXPECT_EQ(h.nic_locks.size(), 2u);  // thread 0 still waits: asked again
  EXPECT_EQ(h.guesses, (std::vector<NodeId>{kNoNode, 1}));  // node 1 is the tail, most likely
}

// nil: a timed lock that gave up before its grant came. The token stays
// here idle and goes to the next node that asks, at once.
TEST(NodeModeTest, NilGrantForACancelledWaiterStaysIdle) {
  ModeHost h(2);
  Node n(ModeConfig(Mode::kNil, 2, 2), &h);
  const LockId l = PinnedLock(1, 51);
  ASSERT_EQ(n.Acquire(0, l), Outcome::kBlocked);
  EXPECT_TRUE(n.CancelAcquire(0, l));
  ASSERT_TRUE(n.OnNicLockTail(l, 1).ok());
  ASSERT_TRUE(n.Receive(1, wire::Encode(LockGrant{l, VectorTime(2), {}}, 0)).ok());
  EXPECT_FALSE(n.HeldLocally(l));
  ASSERT_EQ(n.Acquire(1, l), Outcome::kDone);  // idle here: no NIC operation
  EXPECT_EQ(h.nic_locks.size(), 1u);
  n.Release(1, l);
  ASSERT_TRUE(n.Receive(1, wire::Encode(LockRequest{l, 1, true, VectorTime(2)}, 0)).ok());
  const auto sent = Sent(h, 0, 2);
  ASSERT_EQ(sent.size(), 2u);  // our request, then the grant
  EXPECT_TRUE(std::holds_alternative<LockGrant>(sent[1].second));
}

// ---- First touch from rf on: the directory is a word per page at its
// manager, claimed by CAS (Host::ClaimHome), with no handler at the manager.
// Geometry of these tests: 16 pages, 2 nodes, runs of 4, so node 0 manages
// pages 0..3 and 8..11, node 1 pages 4..7 and 12..15.

NodeConfig FirstTouchConfig(Mode mode, NodeId self) {
  NodeConfig c = ModeConfig(mode, 2, 2);
  c.self = self;
  c.home_policy = HomePolicy::kFirstTouch;
  c.max_run = 4;
  return c;
}

// The manager's NIC serving a claim as Host::ClaimHome promises: the CAS of
// p's word from 0 to the claimant; if it won, those of the free words ahead
// up to the first taken; then the words after p read.
std::pair<uint64_t, std::vector<uint64_t>> ServeClaim(MemoryHost& manager, NodeId claimant,
                                                      const ModeHost::ClaimCall& c) {
  const uint64_t old = manager.HomeWord(c.page);
  if (old == 0) {
    manager.HomeWord(c.page) = claimant + 1;
    for (PageId q = c.page + 1; q <= c.page + c.ahead && manager.HomeWord(q) == 0; ++q)
      manager.HomeWord(q) = claimant + 1;
  }
  std::vector<uint64_t> following;
  for (PageId q = c.page + 1; q < c.page + c.count; ++q) following.push_back(manager.HomeWord(q));
  return {old, following};
}

// A claim is one CAS at the manager, not a message; a lost claim learns the
// winner, and the words read along let a later run through without claims.
TEST(NodeModeTest, FirstTouchClaimIsACasAtTheManager) {
  for (Mode mode : {Mode::kRf, Mode::kDd, Mode::kNil}) {
    SCOPED_TRACE(ToString(mode));
    ModeHost h(2);
    Node n(FirstTouchConfig(mode, 0), &h);
    ASSERT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kBlocked);
    ASSERT_EQ(n.Fault(1, 4, Access::kRead), Outcome::kBlocked);  // no second claim
    ASSERT_EQ(h.claims, (std::vector<ModeHost::ClaimCall>{{1, 4, 4}}));  // to the end of node 1's block
    EXPECT_TRUE(h.sent.empty()) << "a claim went out as a message";
    // Node 1 had claimed pages 4, 5 and 6; page 7 nobody.
    ASSERT_TRUE(n.OnHomeClaimed(4, 2, std::vector<uint64_t>{2, 2, 0}).ok());
    EXPECT_TRUE(h.woken.count(0) && h.woken.count(1));
    ASSERT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kBlocked);
    ASSERT_EQ(h.reads, (std::vector<std::pair<NodeId, PageId>>{{1, 4}}));
    ASSERT_TRUE(n.OnPageRead(1, 4, 1, std::vector<VectorTime>{VectorTime(2)}, std::vector<uint8_t>(kPage)).ok());
    ASSERT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kDone);
    // A sweep: page 5's home is known, and so is 6's, so the run takes both.
    ASSERT_EQ(n.Fault(0, 5, Access::kRead), Outcome::kBlocked);
    EXPECT_EQ(h.claims.size(), 1u);
    EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{1, 5}));
    EXPECT_EQ(h.read_counts.back(), 2u);
    ASSERT_TRUE(n.OnPageRead(1, 5, 1, std::vector<VectorTime>(2, VectorTime(2)), std::vector<uint8_t>(2 * kPage)).ok());
    // Page 7's word was 0: its home is claimed when it is touched.
    ASSERT_EQ(n.Fault(0, 7, Access::kRead), Outcome::kBlocked);
    EXPECT_EQ(h.claims.back(), (ModeHost::ClaimCall{1, 7, 1}));
    EXPECT_EQ(n.stats().home_claims, 2u);
    EXPECT_EQ(n.stats().messages_sent[size_t(MessageType::kHomeClaim)], 0u);
  }
}

// Only the words right after p that name p's home count: a page whose word
// names another node, and every page after it, is claimed when touched.
TEST(NodeModeTest, FirstTouchClaimLearnsOnlyTheSameHome) {
  ModeHost h(3);
  NodeConfig cfg = FirstTouchConfig(Mode::kRf, 0);
  cfg.geometry.nodes = 3;  // managers: node 0 pages 0..3, node 1 4..7, node 2 8..11
  Node n(cfg, &h);
  ASSERT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kBlocked);
  // Node 2 is home of pages 4, 5 and 7; node 1 of page 6.
  ASSERT_TRUE(n.OnHomeClaimed(4, 3, std::vector<uint64_t>{3, 2, 3}).ok());
  ASSERT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kBlocked);
  ASSERT_TRUE(n.OnPageRead(2, 4, 1, std::vector<VectorTime>{VectorTime(3)}, std::vector<uint8_t>(kPage)).ok());
  ASSERT_EQ(n.Fault(0, 5, Access::kRead), Outcome::kBlocked);  // a sweep, but page 6 is node 1's
  EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{2, 5}));
  EXPECT_EQ(h.read_counts.back(), 1u);
  ASSERT_TRUE(n.OnPageRead(2, 5, 1, std::vector<VectorTime>{VectorTime(3)}, std::vector<uint8_t>(kPage)).ok());
  ASSERT_EQ(n.Fault(0, 6, Access::kRead), Outcome::kBlocked);
  // A claim along the sweep: it asks for page 7 too (node 2 has it).
  EXPECT_EQ(h.claims.back(), (ModeHost::ClaimCall{1, 6, 2, 1}));
  ASSERT_TRUE(n.OnHomeClaimed(6, 2, std::vector<uint64_t>{3}).ok());
  ASSERT_EQ(n.Fault(0, 6, Access::kRead), Outcome::kBlocked);
  EXPECT_EQ(h.reads.back(), (std::pair<NodeId, PageId>{1, 6}));
  EXPECT_EQ(h.read_counts.back(), 1u);
  EXPECT_EQ(h.claims.size(), 2u);
}

// A node claims the pages it manages by Host::ClaimHome too (its CAS must
// be atomic with its peers'); winning makes it home, with no read.
TEST(NodeModeTest, FirstTouchClaimWonAtHomeNeedsNoRead) {
  ModeHost h(2);
  Node n(FirstTouchConfig(Mode::kRf, 0), &h);
  ASSERT_EQ(n.Fault(0, 2, Access::kRead), Outcome::kBlocked);
  ASSERT_EQ(h.claims, (std::vector<ModeHost::ClaimCall>{{0, 2, 2}}));
  auto [old, following] = ServeClaim(h, 0, h.claims[0]);
  ASSERT_TRUE(n.OnHomeClaimed(2, old, following).ok());
  ASSERT_EQ(n.Fault(0, 2, Access::kRead), Outcome::kDone);
  EXPECT_EQ(h.prot(2), Prot::kReadWrite);  // a first touch at the home: read-write
  EXPECT_TRUE(h.reads.empty());
  EXPECT_EQ(h.HomeWord(2), 1u);
}

// A sweep's claims by CAS take the pages after them too, 1, 2, 4, ... and on
// across the managers' blocks; the pages taken are mapped with the claimed
// one. (One host keeps both managers' words: they are words of other pages.)
TEST(NodeModeTest, FirstTouchSweepClaimsAheadByCas) {
  ModeHost h(2);
  Node n(FirstTouchConfig(Mode::kRf, 0), &h);
  for (PageId p = 0; p < 8; ++p) {
    if (h.prot(p) == Prot::kReadWrite) continue;  // mapped with an earlier claim
    ASSERT_EQ(n.Fault(0, p, Access::kWrite), Outcome::kBlocked) << p;
    auto [old, following] = ServeClaim(h, 0, h.claims.back());
    ASSERT_TRUE(n.OnHomeClaimed(p, old, following).ok());
    ASSERT_EQ(n.Fault(0, p, Access::kWrite), Outcome::kDone) << p;
  }
  // 1 takes 2; 3 ends node 0's block (4 is node 1's to give); 4 takes 5..7.
  EXPECT_EQ(h.claims, (std::vector<ModeHost::ClaimCall>{{0, 0, 4, 0}, {0, 1, 3, 1}, {0, 3, 1, 0}, {1, 4, 4, 3}}));
  EXPECT_EQ(n.stats().write_faults, 4u);
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(h.HomeWord(p), 1u) << p;
}

// A sweep's claim takes pages ahead only once it has won, and only up to
// the first another node holds: the pages after it stay free for the node
// that touches them first (taken, they were diffed to the sweeper every
// interval by their writer).
TEST(NodeModeTest, FirstTouchClaimAheadNeedsAWonClaimAndStopsAtAHeldPage) {
  for (const PageId held : {PageId{4}, PageId{5}}) {
    SCOPED_TRACE(held);
    ModeHost h(2);
    h.HomeWord(held) = 2;  // node 1 touched it first
    Node n(FirstTouchConfig(Mode::kRf, 0), &h);
    for (PageId p = 0; p < 4; ++p) {
      if (h.prot(p) == Prot::kReadWrite) continue;
      ASSERT_EQ(n.Fault(0, p, Access::kWrite), Outcome::kBlocked) << p;
      auto [old, following] = ServeClaim(h, 0, h.claims.back());
      ASSERT_TRUE(n.OnHomeClaimed(p, old, following).ok());
      ASSERT_EQ(n.Fault(0, p, Access::kWrite), Outcome::kDone) << p;
    }
    // The sweep goes on at page 4, asking for 3 ahead (as in the test above).
    ASSERT_EQ(n.Fault(0, 4, Access::kWrite), Outcome::kBlocked);
    ASSERT_EQ(h.claims.back(), (ModeHost::ClaimCall{1, 4, 4, 3}));
    auto [old, following] = ServeClaim(h, 0, h.claims.back());
    ASSERT_TRUE(n.OnHomeClaimed(4, old, following).ok());
    EXPECT_EQ(h.HomeWord(4), held == 4 ? 2u : 1u);  // lost, or won with nothing free after it
    for (PageId q = 6; q < 8; ++q) EXPECT_EQ(h.HomeWord(q), 0u) << q;
    // Page 6 is claimed when touched, and won.
    ASSERT_EQ(n.Fault(0, 6, Access::kWrite), Outcome::kBlocked);
    EXPECT_EQ(h.claims.back().page, 6u);
  }
}

// Two nodes claim one page at once: the first CAS wins; the other finds the
// winner and reads the page from it.
TEST(NodeModeTest, FirstTouchConcurrentClaimsAgreeOnTheFirst) {
  ModeHost h0(2), h1(2);
  Node n0(FirstTouchConfig(Mode::kRf, 0), &h0), n1(FirstTouchConfig(Mode::kRf, 1), &h1);
  ASSERT_EQ(n0.Fault(0, 9, Access::kWrite), Outcome::kBlocked);  // node 0 manages page 9
  ASSERT_EQ(n1.Fault(0, 9, Access::kWrite), Outcome::kBlocked);
  ASSERT_EQ(h0.claims.size(), 1u);
  ASSERT_EQ(h1.claims.size(), 1u);
  EXPECT_EQ(h1.claims[0].manager, 0u);
  // Node 1's CAS reaches node 0's word first.
  auto [old1, f1] = ServeClaim(h0, 1, h1.claims[0]);
  auto [old0, f0] = ServeClaim(h0, 0, h0.claims[0]);
  EXPECT_EQ(old1, 0u);
  EXPECT_EQ(old0, 2u);
  ASSERT_TRUE(n0.OnHomeClaimed(9, old0, f0).ok());
  ASSERT_TRUE(n1.OnHomeClaimed(9, old1, f1).ok());
  ASSERT_EQ(n1.Fault(0, 9, Access::kWrite), Outcome::kDone);  // the home
  ASSERT_EQ(n0.Fault(0, 9, Access::kWrite), Outcome::kBlocked);
  EXPECT_EQ(h0.reads, (std::vector<std::pair<NodeId, PageId>>{{1, 9}}));
  EXPECT_TRUE(h1.reads.empty());
  EXPECT_EQ(h0.HomeWord(9), 2u);
}

// A diff can reach the winner before its claim's completion (the writer
// read the word): the page is homed here from then on, and the completion
// must agree.
TEST(NodeModeTest, FirstTouchDiffBeforeTheClaimCompletes) {
  ModeHost h(2);
  Node n(FirstTouchConfig(Mode::kRf, 0), &h);
  ASSERT_EQ(n.Fault(0, 5, Access::kWrite), Outcome::kBlocked);  // managed by node 1
  ASSERT_TRUE(n.Receive(1, wire::Encode(DiffMessage{5, 1, {}}, 0)).ok());
  EXPECT_EQ(n.OnHomeClaimed(5, 2, {}).code(), Status::Code::kInvalidArgument);  // says node 1 won
  ASSERT_TRUE(n.OnHomeClaimed(5, 0, {}).ok());
  ASSERT_EQ(n.Fault(0, 5, Access::kWrite), Outcome::kDone);
  EXPECT_TRUE(h.reads.empty());
}

// Completions that break the contract are refused and change nothing; in
// these modes a claim never comes as a message.
TEST(NodeModeTest, FirstTouchClaimCompletionsChecked) {
  ModeHost h(2);
  Node n(FirstTouchConfig(Mode::kRf, 0), &h);
  EXPECT_EQ(n.OnHomeClaimed(4, 0, {}).code(), Status::Code::kInvalidArgument);  // nobody asked
  ASSERT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kBlocked);
  EXPECT_EQ(n.OnHomeClaimed(4, 3, {}).code(), Status::Code::kMalformed);  // node 2 of 2
  EXPECT_EQ(n.OnHomeClaimed(4, 2, std::vector<uint64_t>{2, 2, 2, 2}).code(), Status::Code::kMalformed);
  EXPECT_EQ(n.OnHomeClaimed(4, 2, std::vector<uint64_t>{7}).code(), Status::Code::kMalformed);
  EXPECT_EQ(n.Fault(0, 4, Access::kRead), Outcome::kBlocked);  // still claiming
  EXPECT_EQ(h.claims.size(), 1u);
  ASSERT_TRUE(n.OnHomeClaimed(4, 2, {}).ok());
  EXPECT_EQ(n.Receive(1, wire::Encode(HomeClaim{8}, 0)).code(), Status::Code::kInvalidArgument);
  // Base and dw keep the messages: no CAS there.
  ModeHost hd(2);
  Node d(FirstTouchConfig(Mode::kDw, 0), &hd);
  ASSERT_EQ(d.Fault(0, 4, Access::kRead), Outcome::kBlocked);
  EXPECT_TRUE(hd.claims.empty());
  ASSERT_EQ(hd.sent.size(), 1u);
  EXPECT_EQ(d.OnHomeClaimed(4, 0, {}).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace svm
