// NicLockMap over the fake NIC: lock ids claimed at a home's table by remote
// CAS from several nodes, with a table small enough to force collisions.
#include "libsvm/nic_lock_map.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "nic_ext/fake/fake_transport.h"

namespace svm::rt {
namespace {

constexpr nic::RegionId kClaims = 7;

struct Cluster {
  Cluster(uint32_t nodes, uint32_t words) : map(words), tables(nodes, std::vector<uint64_t>(words, 0)) {
    auto fabric = nic::MakeFakeFabric(nodes);
    for (NodeId i = 0; i < nodes; ++i) {
      nics.push_back(nic::MakeFakeNic(fabric, i));
      EXPECT_TRUE(nics[i]->RegisterRegion({kClaims, tables[i].data(), map.table_bytes()}).ok());
    }
    for (auto& n : nics) EXPECT_TRUE(n->Connect({}).ok());
  }
  ~Cluster() {
    for (auto& n : nics) n->Shutdown();
  }
  // Node `from` maps lock l homed at `home`, as the runtime does (one CAS per
  // probe, each waited for).
  Status Map(NodeId from, NodeId home, LockId l, nic::LockNo* out) {
    NicLockMap::Claim c = map.Start(l);
    while (true) {
      nic::CompletionQueue cq;
      nic::WorkRequest wr = map.ClaimRequest(home, kClaims, c);
      if (Status st = nics[from]->Post(&cq, {&wr, 1}); !st.ok()) return st;
      nic::Completion done;
      while (cq.Wait({&done, 1}, std::chrono::seconds(5)) == 0) {
      }
      EXPECT_EQ(done.status, nic::WcStatus::kSuccess);
      bool claimed = false;
      if (Status st = map.OnClaimed(&c, done.value, &claimed); !st.ok()) return st;
      if (claimed) {
        *out = c.no;
        return Status::Ok();
      }
    }
  }
  NicLockMap map;
  std::vector<std::vector<uint64_t>> tables;
  std::vector<std::unique_ptr<nic::Nic>> nics;
};

// Lock ids (8-byte aligned addresses) whose first slot is `slot`.
std::vector<LockId> LocksAt(const NicLockMap& m, nic::LockNo slot, size_t count) {
  std::vector<LockId> out;
  for (LockId l = 0x7f0000001000; out.size() < count; l += 8)
    if (m.Slot(l) == slot) out.push_back(l);
  return out;
}

TEST(NicLockMap, CollidingLocksGetDistinctNumbersEverywhere) {
  Cluster c(3, 16);
  // Five locks that all hash to word 14: they probe 14, 15, 0, 1, 2.
  std::vector<LockId> locks = LocksAt(c.map, 14, 5);
  std::map<LockId, nic::LockNo> first;
  std::set<nic::LockNo> used;
  for (size_t i = 0; i < locks.size(); ++i) {
    nic::LockNo no = 0;
    ASSERT_TRUE(c.Map(NodeId(i % 3), 0, locks[i], &no).ok());
    first[locks[i]] = no;
    EXPECT_TRUE(used.insert(no).second) << "number " << no << " given twice";
  }
  EXPECT_EQ(used, (std::set<nic::LockNo>{14, 15, 0, 1, 2}));
  // Every node finds the same numbers again, in any order.
  for (NodeId from = 0; from < 3; ++from)
    for (auto it = locks.rbegin(); it != locks.rend(); ++it) {
      nic::LockNo no = 0;
      ASSERT_TRUE(c.Map(from, 0, *it, &no).ok());
      EXPECT_EQ(no, first[*it]);
    }
  // The claims live at the home only.
  for (LockId l : locks) EXPECT_EQ(c.tables[0][first[l]], l + 1);
  EXPECT_EQ(c.tables[1], std::vector<uint64_t>(16, 0));
}

TEST(NicLockMap, EachHomeHasItsOwnTable) {
  Cluster c(2, 16);
  std::vector<LockId> locks = LocksAt(c.map, 3, 2);
  nic::LockNo a = 0, b = 0;
  ASSERT_TRUE(c.Map(1, 0, locks[0], &a).ok());
  ASSERT_TRUE(c.Map(0, 1, locks[1], &b).ok());
  EXPECT_EQ(a, 3u);
  EXPECT_EQ(b, 3u);  // other home, other table
}

// An array of locks lands in few pages of the home's tables (each page a
// node touches first costs a fault); ranges a table's span apart (thread
// stacks) do not all start probing at one word.
TEST(NicLockMap, NearbyLocksGetNearbyNumbers) {
  NicLockMap m;
  std::set<uint32_t> pages;
  const LockId array = 0x7f3a12345000;
  for (LockId i = 0; i < 1000; ++i) pages.insert(m.Slot(array + 40 * i) * sizeof(uint64_t) / 4096);
  EXPECT_LE(pages.size(), 11u);  // 40 KB of locks: 5,000 words
  std::set<nic::LockNo> starts;
  const uint64_t span = m.table_bytes();
  for (LockId i = 0; i < 64; ++i) starts.insert(m.Slot(array + i * span));
  EXPECT_GE(starts.size(), 60u);
}

// Two 4-byte locks share a word (pthread_spinlock_t): an array of them
// must not start on one another's numbers, or each claim would probe past
// all the locks claimed before it.
TEST(NicLockMap, SpinlocksOfOneWordStartApart) {
  NicLockMap m;
  std::set<nic::LockNo> starts;
  std::set<uint32_t> pages;
  const LockId array = 0x7f3a12345000;
  for (LockId i = 0; i < 1000; ++i) {
    starts.insert(m.Slot(array + 4 * i));
    pages.insert(m.Slot(array + 4 * i) * sizeof(uint64_t) / 4096);
  }
  EXPECT_EQ(starts.size(), 1000u);
  EXPECT_LE(pages.size(), 4u);  // 500 words each side, half a table apart
}

TEST(NicLockMap, FullTableIsAnError) {
  Cluster c(2, 8);
  nic::LockNo no = 0;
  LockId l = 0x7f0000002000;
  for (int i = 0; i < 8; ++i, l += 8) ASSERT_TRUE(c.Map(1, 0, l, &no).ok()) << i;
  Status st = c.Map(1, 0, l, &no);
  EXPECT_EQ(st.code(), Status::Code::kOutOfRange);
  EXPECT_NE(st.message().find("more than 8 distinct locks"), std::string::npos) << st.message();
  // Locks already mapped still are.
  EXPECT_TRUE(c.Map(0, 0, 0x7f0000002000, &no).ok());
}

}  // namespace
}  // namespace svm::rt
