// Node: hierarchical barriers. Threads of a node meet locally; the last one
// closes the node's interval and reports, as one part of the node's subtree
// in a tree of nodes (NodeConfig::barrier_fanout children a node, node 0 the
// root). A node sends its subtree's arrivals to its parent in one message (a
// batch) once every part that took part in the last episode has reported
// (at once in the first episode and while a batch awaits its release), with
// the notices the parent may lack. The root releases down the same tree,
// each release naming the batches it covers, each node passing on the
// notices its children's floors lack: O(log N) message delays each way, and
// no node handles more than fanout + 1 arrivals an episode. A barrier is an
// acquire for every thread in it.
// From dw on, arrivals and releases carry only vector times (the notices are
// deposited), and a release waits until the deposits cover its time.
#include <algorithm>
#include <cassert>

#include "protocol/node.h"
#include "protocol/node_state.h"

namespace svm {

Outcome Node::Barrier(ThreadId t, BarrierId b, uint32_t total, uint32_t local, bool* serial) {
  assert(t < config_.threads && local <= total && total >= 1);
  BarrierState& bs = BarrierEntry(b);
  if (!bs.waiting[t]) {
    bs.waiting[t] = 0;
    bs.total = total;
    ++bs.arrived;
    if (local != kGather) {
      if (bs.arrived == local) ReportArrivals(b, bs);
    } else if (!bs.begun) {
      bs.begun = true;
      bs.gathering = !Gathered(bs);
      if (bs.gathering) {
        gathering_.push_back(b);
      } else {
        ReportArrivals(b, bs);
      }
    } else if (!bs.gathering || Gathered(bs)) {
      ReportArrivals(b, bs);
    }
    WaitingElsewhere(t, true);  // other barriers gather for it no longer
  }
  if (bs.released[t]) {
    bs.waiting[t].reset();
    bs.released[t] = 0;
    WaitingElsewhere(t, false);
    if (serial && bs.serial == t) {
      *serial = true;
      bs.serial.reset();
    }
    return Outcome::kDone;
  }
  return Outcome::kBlocked;
}

bool Node::Gathered(const BarrierState& bs) const {
  for (ThreadId u = 0; u < config_.threads; ++u) {
    const bool here = bs.waiting[u] && !bs.released[u];
    if (bs.took_part[u] && !here && !elsewhere_[u]) return false;
  }
  return true;
}

// The arrivals so far, as one part of the subtree's: the node's writes until
// now are in the interval it closes, those of every thread reported included.
void Node::ReportArrivals(BarrierId b, BarrierState& bs) {
  if (bs.gathering) {
    bs.gathering = false;
    std::erase(gathering_, b);
  }
  if (bs.arrived == 0) return;
  CloseInterval();
  // The batch that will carry them (the root: the episode they are in).
  const uint64_t batch = config_.self == 0 ? bs.covered + 1 : bs.sent_batches + 1;
  for (std::optional<uint64_t>& w : bs.waiting)
    if (w && *w == 0) *w = batch;
  const bool first = !bs.parts[0].reported;
  BarrierArrive own{b, bs.arrived, bs.total, log_.known(), {}, log_.known(), first ? 1u : 0u};
  bs.arrived = 0;
  Status st = AddArrival(b, 0, own);
  assert(st.ok());
  (void)st;
}

size_t Node::BarrierParts() const {
  const uint64_t first_child = uint64_t(config_.barrier_fanout) * config_.self + 1;
  return 1 + size_t(std::min<uint64_t>(config_.barrier_fanout, nodes() > first_child ? nodes() - first_child : 0));
}

Node::BarrierState& Node::BarrierEntry(BarrierId b) {
  auto& entry = barriers_[b];
  if (!entry) {
    entry = std::make_unique<BarrierState>();
    entry->waiting.resize(config_.threads);
    entry->released.resize(config_.threads);
    entry->took_part.resize(config_.threads);
    entry->parts.resize(BarrierParts());
    entry->time = VectorTime(nodes());
    entry->held_known = VectorTime(nodes());
  }
  return *entry;
}

// One part's arrivals join the subtree's. The root counts them into its
// episode and releases at the total; another node sends them up, at once
// while a batch awaits its release, else once every part of the last window
// has reported.
Status Node::AddArrival(BarrierId b, size_t part, const BarrierArrive& m) {
  BarrierState& bs = BarrierEntry(b);
  const bool root = config_.self == 0;
  // Only the root can count an episode: elsewhere the arrivals of two may mix.
  if ((bs.subtree_total != 0 && bs.subtree_total != m.total) || m.nodes > nodes() ||
      (root && (bs.count + m.arrivals > m.total || bs.nodes + m.nodes > nodes())))
    return Status::InvalidArgument("barrier arrivals disagree on the thread count");
  bs.subtree_total = m.total;
  BarrierState::Part& p = bs.parts[part];
  p.reported = true;
  if (part != 0) {
    p.batches++;
    p.floors.push_back(m.floor);
  }
  if (root) {
    bs.count += m.arrivals;
    bs.nodes += m.nodes;
    bs.time.Merge(m.known);
    if (bs.count == bs.subtree_total) {
      const bool collect = bs.subtree_total == host_->JobThreads() && bs.nodes == nodes();
      Relay(b, bs, BarrierRelease{b, bs.time, collect, {}, true, bs.covered + 1});
    }
    return Status::Ok();
  }
  if (bs.held == 0) {
    bs.held_floor = m.floor;
  } else {
    bs.held_floor.Meet(m.floor);
  }
  bs.held += m.arrivals;
  bs.held_nodes += m.nodes;
  if (part == 0) bs.held_own += m.arrivals;
  bs.held_known.Merge(m.known);
  if (bs.awaiting() || SubtreeReady(bs)) {
    SendUp(b, bs);
  } else if (!bs.holding) {
    bs.holding = true;
    holding_.push_back(b);
  }
  return Status::Ok();
}

bool Node::SubtreeReady(const BarrierState& bs) const {
  for (size_t i = 0; i < bs.parts.size(); ++i) {
    const BarrierState::Part& p = bs.parts[i];
    if (p.reported || !p.last) continue;
    if (i == 0 && bs.arrived == 0 && Gathered(bs)) continue;
    return false;
  }
  return true;
}

void Node::SendUp(BarrierId b, BarrierState& bs) {
  if (bs.holding) {
    bs.holding = false;
    std::erase(holding_, b);
  }
  if (bs.held == 0) return;
  // The release starts from what the least informed node below knows. This
  // node knows at least as much as each of them (base: their arrivals
  // brought their notices), so it can pass on whatever they lack.
  BarrierArrive up{b, bs.held, bs.subtree_total, bs.held_known, {}, bs.held_floor, bs.held_nodes};
  if (!DepositsNotices(config_.mode)) {
    log_.Missing(reported_, &up.notices);
    reported_ = log_.known();
  }
  BarrierState::Batch& batch = bs.unreleased.emplace_back();
  batch.seq = ++bs.sent_batches;
  batch.own = bs.held_own;
  batch.child_batches.resize(bs.parts.size());
  for (size_t i = 1; i < bs.parts.size(); ++i) batch.child_batches[i] = bs.parts[i].batches;
  bs.held = 0;
  bs.held_nodes = 0;
  bs.held_own = 0;
  bs.held_known = VectorTime(nodes());
  Send(BarrierParent(), up);
}

// Passes a release down: to each child the batches of its that the
// release covers (at the root: every batch come so far), with the notices
// their floors lack, and to this node's own threads those in the batches it
// covers (m.covers; at the root, the episode). When the subtree has caught
// up (no batch awaits a release) its next window starts: the parts that
// reported are the ones the next batch waits for.
void Node::Relay(BarrierId b, BarrierState& bs, const BarrierRelease& m) {
  const bool root = config_.self == 0;
  std::vector<uint64_t> covers(bs.parts.size());
  bool own = false;
  if (root) {
    for (size_t i = 1; i < bs.parts.size(); ++i) covers[i] = bs.parts[i].batches;
    own = bs.parts[0].reported;
  } else {
    while (!bs.unreleased.empty() && bs.unreleased.front().seq <= m.covers) {
      covers = std::move(bs.unreleased.front().child_batches);
      own = own || bs.unreleased.front().own != 0;
      bs.unreleased.pop_front();
    }
  }
  bs.covered = m.covers;
  size_t serial = bs.parts.size();  // none
  if (m.serial) {
    serial = 0;
    while (serial < bs.parts.size() && !(serial == 0 ? own : covers[serial] > bs.parts[serial].released)) ++serial;
  }
  for (size_t i = 1; i < bs.parts.size(); ++i) {
    BarrierState::Part& p = bs.parts[i];
    if (covers[i] <= p.released) continue;
    BarrierRelease down{b, m.time, m.collect, {}, serial == i, covers[i]};
    VectorTime floor = std::move(p.floors.front());
    p.floors.pop_front();
    for (; p.released + 1 < covers[i]; ++p.released) {
      floor.Meet(p.floors.front());
      p.floors.pop_front();
    }
    p.released = covers[i];
    if (!DepositsNotices(config_.mode)) log_.Missing(floor, &down.notices);
    Send(BarrierChild(i), down);
  }
  if (root || (!bs.awaiting() && bs.held == 0)) {
    for (BarrierState::Part& p : bs.parts) {
      p.last = p.reported;
      p.reported = false;
    }
    bs.subtree_total = bs.count = bs.nodes = 0;
    bs.time = VectorTime(nodes());
  }
  if (!own) return;
  BarrierRelease mine{b, m.time, m.collect, {}, serial == 0, m.covers};
  if (DepositsNotices(config_.mode)) {
    TakeDeposits();
    const bool behind = std::any_of(pending_releases_.begin(), pending_releases_.end(),
                                    [b](const BarrierRelease& r) { return r.barrier == b; });
    if (behind || !log_.known().Covers(mine.time)) {
      pending_releases_.push_back(std::move(mine));
      return;
    }
  }
  FinishRelease(mine);
}

void Node::WaitingElsewhere(ThreadId t, bool waiting) {
  assert(t < config_.threads);
  if (elsewhere_[t] == uint8_t(waiting)) return;
  elsewhere_[t] = waiting;
  if (waiting && Gathering()) ReportReadyGathers();
}

void Node::ThreadExited(ThreadId t) {
  assert(t < config_.threads);
  elsewhere_[t] = 0;
  for (auto& [b, bs] : barriers_) bs->took_part[t] = 0;
  if (Gathering()) ReportReadyGathers();
}

void Node::ReportReadyGathers() {
  const std::vector<BarrierId> gathering = gathering_;  // a report may release and change it
  for (BarrierId b : gathering) {
    BarrierState& bs = *barriers_.at(b);
    if (bs.gathering && Gathered(bs)) ReportArrivals(b, bs);
  }
  const std::vector<BarrierId> holding = holding_;
  for (BarrierId b : holding) {
    BarrierState& bs = *barriers_.at(b);
    if (bs.holding && SubtreeReady(bs)) SendUp(b, bs);
  }
}

void Node::ReportGathered() {
  while (!gathering_.empty()) {
    stats_.gathers_given_up++;
    const BarrierId b = gathering_.back();
    ReportArrivals(b, *barriers_.at(b));
  }
  while (!holding_.empty()) {
    stats_.gathers_given_up++;
    const BarrierId b = holding_.back();
    SendUp(b, *barriers_.at(b));
  }
}

Status Node::OnBarrierArrive(NodeId from, BarrierArrive& m) {
  const uint64_t part = uint64_t(from) - uint64_t(config_.barrier_fanout) * config_.self;
  if (from == 0 || from >= nodes() || part == 0 || part > config_.barrier_fanout)
    return Status::InvalidArgument("barrier arrival from a node that is not a child in the barrier tree");
  if (m.arrivals == 0 || m.arrivals > m.total || m.nodes > m.arrivals)
    return Status::Malformed("barrier arrival count");
  if (Status st = CheckOwnIntervals(m.floor); !st.ok()) return st;
  if (DepositsNotices(config_.mode)) {
    if (!m.notices.empty()) return Status::Malformed("barrier arrival with notices in a depositing mode");
    if (Status st = CheckOwnIntervals(m.known); !st.ok()) return st;
  } else if (Status st = CheckNotices(m.notices, &m.known); !st.ok()) {
    return st;
  }
  if (!m.known.Covers(m.floor)) return Status::Malformed("barrier arrival floor above its known vector");
  AddNotices(m.notices);
  return AddArrival(m.barrier, size_t(part), m);
}

Status Node::OnBarrierRelease(NodeId from, BarrierRelease& m) {
  if (config_.self == 0 || from != BarrierParent())
    return Status::InvalidArgument("barrier release not from the parent in the barrier tree");
  auto it = barriers_.find(m.barrier);
  if (it == barriers_.end() || m.covers <= it->second->covered || m.covers > it->second->sent_batches ||
      it->second->held != 0)
    return Status::InvalidArgument("release of a barrier nobody waits at");
  if (DepositsNotices(config_.mode)) {
    if (!m.notices.empty()) return Status::Malformed("barrier release with notices in a depositing mode");
    if (Status st = CheckOwnIntervals(m.time); !st.ok()) return st;
  } else {
    if (Status st = CheckNotices(m.notices, &m.time); !st.ok()) return st;
    AddNotices(m.notices);
  }
  Relay(m.barrier, *it->second, m);
  return Status::Ok();
}

// Releases the threads whose arrivals the batches up to m.covers carried.
// REQUIRES: the bins cover m.time.
void Node::FinishRelease(BarrierRelease& m) {
  BarrierState& bs = *barriers_.at(m.barrier);
  if (bs.arrived == 0 && !bs.gathering) bs.begun = false;  // else a later episode began here
  bool serial = m.serial;
  for (ThreadId t = 0; t < config_.threads; ++t) {
    const bool in = bs.waiting[t] && *bs.waiting[t] != 0 && *bs.waiting[t] <= m.covers && !bs.released[t];
    bs.took_part[t] = in;
    if (!in) continue;
    bs.released[t] = 1;
    ApplyView(t, m.time);
    if (serial) {
      bs.serial = t;
      serial = false;
    }
    WakeWaiter(t);
  }
  if (m.collect) {
    const size_t held = log_.held();
    log_.CollectGarbage(m.time);
    stats_.notices_collected += held - log_.held();
    reported_.Merge(log_.floor());
  }
  stats_.barriers++;
}

}  // namespace svm
