// Geometry validation, home placement and the first-touch directory.
#include "protocol/geometry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace svm {
namespace {

using ::testing::HasSubstr;

Geometry G(uint64_t page_size, uint64_t pages, NodeId nodes) {
  Geometry g;
  g.page_size = page_size;
  g.pages = pages;
  g.nodes = nodes;
  return g;
}

void ExpectInvalid(const Geometry& g, const char* mentions) {
  const Status s = g.Validate();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr(mentions));
}

TEST(GeometryTest, ValidGeometries) {
  EXPECT_TRUE(G(4096, 1, 1).Validate().ok());
  EXPECT_TRUE(G(8192, 100, 3).Validate().ok());
  EXPECT_TRUE(G(uint64_t{1} << 30, 16, 4096).Validate().ok());
  EXPECT_TRUE(G(4096, UINT64_MAX / 4096, 2).Validate().ok());  // largest that fits
}

TEST(GeometryTest, DefaultHasNoPages) { ExpectInvalid(Geometry{}, "pages"); }

TEST(GeometryTest, PageSizeMustBePowerOfTwoAtLeast4K) {
  for (uint64_t bad : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{2048}, uint64_t{4095},
                       uint64_t{4097}, uint64_t{6144}, uint64_t{3} << 20})
    ExpectInvalid(G(bad, 1, 1), "page_size");
}

TEST(GeometryTest, PagesAndNodesRanges) {
  ExpectInvalid(G(4096, 0, 1), "pages");
  ExpectInvalid(G(4096, 1, 0), "nodes");
  ExpectInvalid(G(4096, 1, 4097), "nodes");
  ExpectInvalid(G(4096, 1, kNoNode), "nodes");
  EXPECT_TRUE(G(4096, 1, 4096).Validate().ok());
}

TEST(GeometryTest, RegionSizeMustNotOverflow) {
  ExpectInvalid(G(4096, UINT64_MAX / 4096 + 1, 1), "overflow");
  ExpectInvalid(G(uint64_t{1} << 20, uint64_t{1} << 44, 1), "overflow");
  ExpectInvalid(G(4096, UINT64_MAX, 1), "overflow");
}

TEST(GeometryTest, PageOf) {
  const Geometry g = G(8192, 10, 2);
  EXPECT_EQ(g.PageOf(0), 0u);
  EXPECT_EQ(g.PageOf(8191), 0u);
  EXPECT_EQ(g.PageOf(8192), 1u);
  EXPECT_EQ(g.PageOf(9 * 8192 + 5), 9u);
}

TEST(HomePolicyTest, StringsRoundTrip) {
  EXPECT_STREQ(ToString(HomePolicy::kCyclic), "cyclic");
  EXPECT_STREQ(ToString(HomePolicy::kBlock), "block");
  EXPECT_STREQ(ToString(HomePolicy::kFirstTouch), "first-touch");
  for (HomePolicy p : {HomePolicy::kCyclic, HomePolicy::kBlock, HomePolicy::kFirstTouch})
    EXPECT_EQ(ParseHomePolicy(ToString(p)), p);
  for (const char* bad : {"", "Cyclic", "first_touch", "firsttouch", "block ", "?", "cyclicx"})
    EXPECT_EQ(ParseHomePolicy(bad), std::nullopt) << bad;
}

TEST(HomeMapTest, CyclicBlockOfOneIsModulo) {
  const HomeMap map(G(4096, 10, 3), HomePolicy::kCyclic);
  EXPECT_EQ(map.policy(), HomePolicy::kCyclic);
  const std::vector<NodeId> want = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0};
  for (PageId p = 0; p < want.size(); ++p) EXPECT_EQ(map.StaticHome(p), want[p]) << p;
}

TEST(HomeMapTest, CyclicDealsBlocks) {
  const HomeMap map(G(4096, 14, 3), HomePolicy::kCyclic, 2);
  const std::vector<NodeId> want = {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 0};
  for (PageId p = 0; p < want.size(); ++p) EXPECT_EQ(map.StaticHome(p), want[p]) << p;
}

TEST(HomeMapTest, CyclicBlockLargerThanRegionGoesToNodeZero) {
  const HomeMap map(G(4096, 5, 4), HomePolicy::kCyclic, 64);
  for (PageId p = 0; p < 5; ++p) EXPECT_EQ(map.StaticHome(p), 0u);
}

// Every (pages, nodes, block) in a small range: runs of `block` pages share a
// home, runs go round-robin, and no node holds more than its rounded-up share.
TEST(HomeMapTest, CyclicPropertiesExhaustive) {
  for (uint64_t pages = 1; pages <= 40; ++pages)
    for (NodeId nodes = 1; nodes <= 7; ++nodes)
      for (uint32_t k = 1; k <= 5; ++k) {
        const HomeMap map(G(4096, pages, nodes), HomePolicy::kCyclic, k);
        std::vector<uint64_t> count(nodes);
        for (PageId p = 0; p < pages; ++p) {
          const NodeId h = map.StaticHome(p);
          ASSERT_LT(h, nodes);
          EXPECT_EQ(h, (p / k) % nodes) << pages << " " << nodes << " " << k << " p=" << p;
          ++count[h];
        }
        const uint64_t runs = (pages + k - 1) / k;
        for (NodeId n = 0; n < nodes; ++n)
          EXPECT_LE(count[n], ((runs + nodes - 1) / nodes) * k);
      }
}

TEST(HomeMapTest, BlockContiguousShares) {
  // ceil(10 / 4) = 3 pages per node; the last node gets the one left over.
  const HomeMap map(G(4096, 10, 4), HomePolicy::kBlock);
  EXPECT_EQ(map.policy(), HomePolicy::kBlock);
  const std::vector<NodeId> want = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3};
  for (PageId p = 0; p < want.size(); ++p) EXPECT_EQ(map.StaticHome(p), want[p]) << p;
}

TEST(HomeMapTest, BlockLastNodesMayGetNone) {
  // ceil(5 / 4) = 2: nodes 0..2 get 2, 2, 1 pages and node 3 none.
  const HomeMap map(G(4096, 5, 4), HomePolicy::kBlock);
  const std::vector<NodeId> want = {0, 0, 1, 1, 2};
  for (PageId p = 0; p < want.size(); ++p) EXPECT_EQ(map.StaticHome(p), want[p]) << p;
}

TEST(HomeMapTest, FewerPagesThanNodes) {
  const Geometry g = G(4096, 3, 8);
  const HomeMap block(g, HomePolicy::kBlock), cyclic(g, HomePolicy::kCyclic);
  for (PageId p = 0; p < 3; ++p) {
    EXPECT_EQ(block.StaticHome(p), p);
    EXPECT_EQ(cyclic.StaticHome(p), p);
  }
}

TEST(HomeMapTest, SingleNodeHomesEverything) {
  const Geometry g = G(4096, 17, 1);
  for (HomePolicy pol : {HomePolicy::kCyclic, HomePolicy::kBlock})
    for (PageId p = 0; p < 17; ++p) EXPECT_EQ(HomeMap(g, pol, 3).StaticHome(p), 0u);
}

// Every (pages, nodes) in a small range: homes are non-decreasing and
// contiguous, each node holds at most ceil(pages / nodes), and all shares but
// those at the end are full.
TEST(HomeMapTest, BlockPropertiesExhaustive) {
  for (uint64_t pages = 1; pages <= 60; ++pages)
    for (NodeId nodes = 1; nodes <= 9; ++nodes) {
      const HomeMap map(G(4096, pages, nodes), HomePolicy::kBlock);
      const uint64_t share = (pages + nodes - 1) / nodes;
      std::vector<uint64_t> count(nodes);
      NodeId prev = 0;
      for (PageId p = 0; p < pages; ++p) {
        const NodeId h = map.StaticHome(p);
        ASSERT_LT(h, nodes);
        EXPECT_TRUE(h == prev || h == prev + 1) << pages << " " << nodes << " p=" << p;
        prev = h;
        ++count[h];
      }
      EXPECT_EQ(map.StaticHome(0), 0u);
      for (NodeId n = 0; n < nodes; ++n) {
        EXPECT_LE(count[n], share);
        if (n + 1 < nodes && count[n + 1] > 0) { EXPECT_EQ(count[n], share) << n; }
      }
    }
}

TEST(HomeMapTest, ManagerIsModuloForEveryPolicy) {
  const Geometry g = G(4096, 20, 3);
  for (HomePolicy pol : {HomePolicy::kCyclic, HomePolicy::kBlock, HomePolicy::kFirstTouch}) {
    const HomeMap map(g, pol, 4);
    for (PageId p = 0; p < 20; ++p) EXPECT_EQ(map.Manager(p), p % 3);
  }
}

TEST(HomeMapTest, ManagersKeepBlocksOfPages) {
  const HomeMap map(G(4096, 20, 3), HomePolicy::kFirstTouch, 1, 4);
  for (PageId p = 0; p < 20; ++p) {
    EXPECT_EQ(map.Manager(p), p / 4 % 3) << p;
    EXPECT_EQ(map.ManagerBlockEnd(p), std::min<PageId>(p / 4 * 4 + 4, 20)) << p;
  }
}

#if GTEST_HAS_DEATH_TEST && !defined(NDEBUG)
TEST(HomeMapDeathTest, FirstTouchHasNoStaticHome) {
  const HomeMap map(G(4096, 4, 2), HomePolicy::kFirstTouch);
  EXPECT_DEATH(map.StaticHome(0), "kFirstTouch");
}
TEST(HomeMapDeathTest, PageBeyondRegion) {
  const HomeMap map(G(4096, 4, 2), HomePolicy::kCyclic);
  EXPECT_DEATH(map.StaticHome(4), "p < geometry_.pages");
  EXPECT_DEATH(map.Manager(4), "p < geometry_.pages");
}
#endif

TEST(DirectoryTest, FirstClaimWins) {
  Directory d;
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.Lookup(5), kNoNode);
  EXPECT_EQ(d.Claim(5, 2), 2u);
  EXPECT_EQ(d.Claim(5, 1), 2u);
  EXPECT_EQ(d.Claim(5, 2), 2u);
  EXPECT_EQ(d.Lookup(5), 2u);
  EXPECT_EQ(d.Lookup(6), kNoNode);
  EXPECT_EQ(d.Claim(6, 0), 0u);
  EXPECT_EQ(d.size(), 2u);
}

// Races: every node claims a random subset of pages, in a random global order.
// Each page must end with exactly one home, the first claimant in that order,
// and every claimant (earlier or later) must learn that same node.
TEST(DirectoryTest, RacingClaimsAgreeOnFirstClaimant) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const NodeId nodes = 2 + seed % 15;
    const PageId pages = 1 + seed % 40;
    std::vector<std::pair<PageId, NodeId>> claims;
    for (NodeId n = 0; n < nodes; ++n)
      for (PageId p = 0; p < pages; ++p)
        if (rng() % 3 != 0) claims.emplace_back(p, n);
    // Some claimants retry; a retry must not change anything either.
    const size_t first_pass = claims.size();
    for (size_t i = 0; i < first_pass / 4; ++i) claims.push_back(claims[rng() % first_pass]);
    std::shuffle(claims.begin(), claims.end(), rng);

    Directory d;
    std::map<PageId, NodeId> first;
    std::map<PageId, std::vector<NodeId>> learned;
    for (const auto& [p, n] : claims) {
      first.try_emplace(p, n);
      learned[p].push_back(d.Claim(p, n));
    }
    EXPECT_EQ(d.size(), first.size());
    for (PageId p = 0; p < pages; ++p) {
      auto it = first.find(p);
      if (it == first.end()) {
        EXPECT_EQ(d.Lookup(p), kNoNode);
        continue;
      }
      EXPECT_EQ(d.Lookup(p), it->second) << "page " << p;
      for (NodeId w : learned[p]) EXPECT_EQ(w, it->second) << "page " << p;
    }
  }
}

}  // namespace
}  // namespace svm
