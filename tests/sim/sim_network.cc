#include "tests/sim/sim_network.h"

#include <cassert>
#include <utility>

namespace svm::sim {

namespace {
constexpr size_t kNoSlot = SIZE_MAX;
}

SimNetwork::SimNetwork(NodeId nodes)
    : nodes_(nodes),
      queues_(static_cast<size_t>(nodes) * nodes),
      is_delayed_(static_cast<size_t>(nodes) * nodes, 0),
      slot_(static_cast<size_t>(nodes) * nodes, kNoSlot) {}

void SimNetwork::Link(size_t i) {
  std::vector<size_t>& list = is_delayed_[i] ? delayed_ : ready_;
  slot_[i] = list.size();
  list.push_back(i);
}

void SimNetwork::Unlink(size_t i) {
  std::vector<size_t>& list = is_delayed_[i] ? delayed_ : ready_;
  const size_t pos = slot_[i];
  assert(pos < list.size() && list[pos] == i);
  list[pos] = list.back();
  slot_[list[pos]] = pos;
  list.pop_back();
  slot_[i] = kNoSlot;
}

void SimNetwork::Send(NodeId from, NodeId to, std::vector<uint8_t> bytes) {
  assert(from < nodes_ && to < nodes_ && from != to);
  const size_t i = Index(Pair{from, to});
  if (queues_[i].empty()) Link(i);
  queues_[i].push_back(std::move(bytes));
  ++in_flight_;
  ++sent_;
}

void SimNetwork::SetDelayed(NodeId from, NodeId to, bool delayed) {
  const size_t i = Index(Pair{from, to});
  if (static_cast<bool>(is_delayed_[i]) == delayed) return;
  const bool linked = !queues_[i].empty();
  if (linked) Unlink(i);
  is_delayed_[i] = delayed ? 1 : 0;
  if (linked) Link(i);
}

std::vector<uint8_t> SimNetwork::Pop(Pair p) {
  const size_t i = Index(p);
  assert(!queues_[i].empty());
  std::vector<uint8_t> bytes = std::move(queues_[i].front());
  queues_[i].pop_front();
  --in_flight_;
  if (queues_[i].empty()) Unlink(i);
  return bytes;
}

}  // namespace svm::sim
