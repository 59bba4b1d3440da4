// Geometry of the global region and home placement of its pages.
//
// Pages are numbered 0..pages-1 from the region's base. The coherence unit is
// a page of page_size bytes: a power of two >= 4 KiB.
//
// Placement: kCyclic deals blocks of `cyclic_block` pages round-robin to the
// nodes; kBlock gives node n the n-th contiguous share; kFirstTouch gives a
// page to the first node that claims it, through a Directory kept by the
// page's manager node (managers are assigned cyclically).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "util/status.h"
#include "protocol/page_table.h"
#include "protocol/types.h"

namespace svm {

inline constexpr uint64_t kMinPageSize = 4096;

struct Geometry {
  uint64_t page_size = kMinPageSize;
  uint64_t pages = 0;
  NodeId nodes = 1;

  Status Validate() const;
  uint64_t PageOf(uint64_t offset) const { return offset / page_size; }
};

enum class HomePolicy : uint8_t { kCyclic, kBlock, kFirstTouch };
const char* ToString(HomePolicy p);
std::optional<HomePolicy> ParseHomePolicy(std::string_view s);

class HomeMap {
 public:
  // REQUIRES: geometry.Validate().ok(), cyclic_block >= 1, manager_block >= 1.
  HomeMap(const Geometry& geometry, HomePolicy policy, uint32_t cyclic_block = 1,
          uint32_t manager_block = 1);

  HomePolicy policy() const { return policy_; }
  // The home of p for kCyclic and kBlock.
  // REQUIRES: policy() != kFirstTouch, p < pages.
  NodeId StaticHome(PageId p) const;
  // The node keeping p's directory entry under kFirstTouch: blocks of
  // manager_block pages, dealt out cyclically (one manager knows the homes
  // of a whole page run).
  // REQUIRES: p < pages.
  NodeId Manager(PageId p) const;
  // The end of the block of pages p's manager keeps.
  PageId ManagerBlockEnd(PageId p) const;

 private:
  Geometry geometry_;
  HomePolicy policy_;
  uint32_t cyclic_block_;
  uint32_t manager_block_;
};

// First-touch directory of a manager node: the first claim of a page wins and
// every later claim learns the winner. Not thread-safe.
class Directory {
 public:
  // Returns the home of p: claimant if p had none, else the earlier winner.
  // REQUIRES: claimant != kNoNode.
  NodeId Claim(PageId p, NodeId claimant);
  // The home of p, or kNoNode if nobody claimed it yet.
  NodeId Lookup(PageId p) const;
  size_t size() const { return homes_.size(); }

 private:
  PageTable<NodeId> homes_;  // no allocation per page (a first touch is a fault)
};

}  // namespace svm
