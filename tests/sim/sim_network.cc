#include "tests/sim/sim_network.h"

#include <cassert>
#include <utility>

namespace svm::sim {

namespace {
constexpr size_t kNoSlot = SIZE_MAX;
}

const char* ToString(EventKind k) {
  switch (k) {
    case EventKind::kMessage: return "message";
    case EventKind::kRead: return "read";
    case EventKind::kReadDone: return "read-done";
    case EventKind::kWriteDiff: return "write-diff";
    case EventKind::kDeposit: return "deposit";
    case EventKind::kLockSwap: return "lock-swap";
    case EventKind::kLockSwapped: return "lock-swapped";
    case EventKind::kHomeClaim: return "home-claim";
    case EventKind::kHomeClaimed: return "home-claimed";
    case EventKind::kDropMarks: return "drop-marks";
  }
  return "?";
}

SimNetwork::SimNetwork(NodeId nodes)
    : nodes_(nodes),
      queues_(static_cast<size_t>(nodes) * nodes),
      is_delayed_(static_cast<size_t>(nodes) * nodes, 0),
      listed_delayed_(static_cast<size_t>(nodes) * nodes, 0),
      slot_(static_cast<size_t>(nodes) * nodes, kNoSlot) {}

void SimNetwork::Link(size_t i) {
  listed_delayed_[i] = HeldBack(i) ? 1 : 0;
  std::vector<size_t>& list = listed_delayed_[i] ? delayed_ : ready_;
  slot_[i] = list.size();
  list.push_back(i);
}

void SimNetwork::Unlink(size_t i) {
  std::vector<size_t>& list = listed_delayed_[i] ? delayed_ : ready_;
  const size_t pos = slot_[i];
  assert(pos < list.size() && list[pos] == i);
  list[pos] = list.back();
  slot_[list[pos]] = pos;
  list.pop_back();
  slot_[i] = kNoSlot;
}

void SimNetwork::Send(NodeId from, NodeId to, std::vector<uint8_t> bytes) {
  assert(from != to);
  Event e;
  e.bytes = std::move(bytes);
  Post(from, to, std::move(e));
}

void SimNetwork::Post(NodeId from, NodeId to, Event e) {
  assert(from < nodes_ && to < nodes_ && (from != to || e.kind != EventKind::kMessage));
  const size_t i = Index(Pair{from, to});
  queues_[i].push_back(std::move(e));
  if (queues_[i].size() == 1) Link(i);
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

Event SimNetwork::Pop(Pair p) {
  const size_t i = Index(p);
  assert(!queues_[i].empty());
  Event e = std::move(queues_[i].front());
  queues_[i].pop_front();
  --in_flight_;
  // Relinked only when the pair leaves or changes list, so runs without slow
  // events keep their schedules.
  if (queues_[i].empty() || HeldBack(i) != static_cast<bool>(listed_delayed_[i])) {
    Unlink(i);
    if (!queues_[i].empty()) Link(i);
  }
  return e;
}

}  // namespace svm::sim
