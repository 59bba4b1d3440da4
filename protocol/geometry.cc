// Geometry validation and home placement (geometry.h).
#include "protocol/geometry.h"

#include <cassert>
#include <cstdint>
#include <string>

namespace svm {
namespace {

inline constexpr NodeId kMaxNodes = 4096;

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

Status Geometry::Validate() const {
  if (page_size < kMinPageSize || !IsPowerOfTwo(page_size))
    return Status::InvalidArgument("page_size " + std::to_string(page_size) +
                                   " is not a power of two >= " + std::to_string(kMinPageSize));
  if (pages == 0) return Status::InvalidArgument("pages is 0; the region needs at least one page");
  if (nodes == 0 || nodes > kMaxNodes)
    return Status::InvalidArgument("nodes " + std::to_string(nodes) + " is not in [1, " +
                                   std::to_string(kMaxNodes) + "]");
  // Offsets are uint64_t, so the region's size must be one too.
  if (pages > UINT64_MAX / page_size)
    return Status::InvalidArgument("pages " + std::to_string(pages) + " * page_size " +
                                   std::to_string(page_size) + " overflows 64 bits");
  return Status::Ok();
}

const char* ToString(HomePolicy p) {
  switch (p) {
    case HomePolicy::kCyclic: return "cyclic";
    case HomePolicy::kBlock: return "block";
    case HomePolicy::kFirstTouch: return "first-touch";
  }
  return "?";
}

std::optional<HomePolicy> ParseHomePolicy(std::string_view s) {
  for (HomePolicy p : {HomePolicy::kCyclic, HomePolicy::kBlock, HomePolicy::kFirstTouch})
    if (s == ToString(p)) return p;
  return std::nullopt;
}

HomeMap::HomeMap(const Geometry& geometry, HomePolicy policy, uint32_t cyclic_block,
                 uint32_t manager_block)
    : geometry_(geometry), policy_(policy), cyclic_block_(cyclic_block), manager_block_(manager_block) {
  assert(geometry_.Validate().ok());
  assert(cyclic_block_ >= 1 && manager_block_ >= 1);
}

NodeId HomeMap::StaticHome(PageId p) const {
  assert(policy_ != HomePolicy::kFirstTouch);
  assert(p < geometry_.pages);
  const uint64_t nodes = geometry_.nodes;
  if (policy_ == HomePolicy::kCyclic) return static_cast<NodeId>(p / cyclic_block_ % nodes);
  // kBlock: shares of ceil(pages / nodes), so only the last nodes come up short.
  const uint64_t share = geometry_.pages / nodes + (geometry_.pages % nodes != 0);
  return static_cast<NodeId>(p / share);
}

NodeId HomeMap::Manager(PageId p) const {
  assert(p < geometry_.pages);
  return static_cast<NodeId>(p / manager_block_ % geometry_.nodes);
}

PageId HomeMap::ManagerBlockEnd(PageId p) const {
  return std::min<PageId>((p / manager_block_ + 1) * manager_block_, geometry_.pages);
}

NodeId Directory::Claim(PageId p, NodeId claimant) {
  assert(claimant != kNoNode);
  // Get leaves an existing entry alone: the first claim stays the winner.
  return homes_.Get(p, claimant);
}

NodeId Directory::Lookup(PageId p) const {
  const NodeId* home = homes_.Find(p);
  return home == nullptr ? kNoNode : *home;
}

}  // namespace svm
