// Node: hierarchical barriers. Threads of a node meet locally; the last one
// closes the node's interval and reports to the master (node 0) with the
// notices the master may lack; the master merges and releases every node with
// the notices it lacks. A barrier is an acquire for every thread in it.
// From dw on, arrivals and releases carry only vector times (the notices are
// deposited), and a release waits until the deposits cover its time.
#include <algorithm>
#include <cassert>

#include "protocol/node.h"
#include "protocol/node_state.h"

namespace svm {

namespace {
constexpr NodeId kMaster = 0;
}

Outcome Node::Barrier(ThreadId t, BarrierId b, uint32_t total, uint32_t local, bool* serial) {
  assert(t < config_.threads && local <= total && total >= 1);
  auto& entry = barriers_[b];
  if (!entry) {
    entry = std::make_unique<BarrierState>();
    entry->waiting.resize(config_.threads);
    entry->took_part.resize(config_.threads);
  }
  BarrierState& bs = *entry;
  if (!bs.waiting[t]) {
    bs.waiting[t] = bs.episode;
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
  if (bs.episode > *bs.waiting[t]) {
    bs.waiting[t].reset();
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
    if (bs.took_part[u] && bs.waiting[u] != bs.episode && !elsewhere_[u]) return false;
  }
  return true;
}

// The arrivals so far, in one message: the node's writes until now are in
// the interval it closes, those of every thread reported included.
void Node::ReportArrivals(BarrierId b, BarrierState& bs) {
  if (bs.gathering) {
    bs.gathering = false;
    std::erase(gathering_, b);
  }
  if (bs.arrived == 0) return;
  CloseInterval();
  BarrierArrive arrive{b, bs.arrived, bs.total, log_.known(), {}};
  bs.arrived = 0;
  if (!DepositsNotices(config_.mode)) {
    log_.Missing(reported_, &arrive.notices);
    reported_ = log_.known();
  }
  if (config_.self == kMaster) {
    (void)OnBarrierArrive(config_.self, arrive);
  } else {
    Send(kMaster, arrive);
  }
}

void Node::WaitingElsewhere(ThreadId t, bool waiting) {
  assert(t < config_.threads);
  if (elsewhere_[t] == uint8_t(waiting)) return;
  elsewhere_[t] = waiting;
  if (waiting && !gathering_.empty()) ReportReadyGathers();
}

void Node::ThreadExited(ThreadId t) {
  assert(t < config_.threads);
  elsewhere_[t] = 0;
  for (auto& [b, bs] : barriers_) bs->took_part[t] = 0;
  if (!gathering_.empty()) ReportReadyGathers();
}

void Node::ReportReadyGathers() {
  const std::vector<BarrierId> held = gathering_;  // a report may release and change it
  for (BarrierId b : held) {
    BarrierState& bs = *barriers_.at(b);
    if (bs.gathering && Gathered(bs)) ReportArrivals(b, bs);
  }
}

void Node::ReportGathered() {
  while (!gathering_.empty()) {
    stats_.gathers_given_up++;
    const BarrierId b = gathering_.back();
    ReportArrivals(b, *barriers_.at(b));
  }
}

Status Node::OnBarrierArrive(NodeId from, BarrierArrive& m) {
  if (config_.self != kMaster) return Status::InvalidArgument("barrier arrival at a non-master node");
  if (m.arrivals == 0 || m.arrivals > m.total) return Status::Malformed("barrier arrival count");
  if (DepositsNotices(config_.mode)) {
    if (!m.notices.empty()) return Status::Malformed("barrier arrival with notices in a depositing mode");
    if (Status st = CheckOwnIntervals(m.known); !st.ok()) return st;
  } else if (Status st = CheckNotices(m.notices, &m.known); !st.ok()) {
    return st;
  }
  auto& entry = master_[m.barrier];
  if (!entry) {
    entry = std::make_unique<MasterBarrier>();
    entry->total = m.total;
  }
  MasterBarrier& mb = *entry;
  if (mb.total != m.total || mb.arrivals + m.arrivals > mb.total)
    return Status::InvalidArgument("barrier arrivals disagree on the thread count");
  AddNotices(m.notices);
  mb.arrivals += m.arrivals;
  // A node may report its threads in several arrivals; it gets one release.
  auto same = std::find_if(mb.nodes.begin(), mb.nodes.end(),
                           [&](const MasterBarrier::Arrival& a) { return a.node == from; });
  if (same != mb.nodes.end())
    same->known.Merge(m.known);
  else
    mb.nodes.push_back({from, std::move(m.known)});
  if (mb.arrivals < mb.total) return Status::Ok();

  std::unique_ptr<MasterBarrier> done = std::move(entry);
  master_.erase(m.barrier);
  VectorTime time(nodes());
  for (const auto& a : done->nodes) time.Merge(a.known);
  // With every thread here no lock request is in flight, and with every node
  // here each one's bins will cover `time`: nothing below it is asked again.
  const bool collect = done->total == host_->JobThreads() && done->nodes.size() == nodes();
  std::optional<BarrierRelease> own;
  for (const auto& a : done->nodes) {
    BarrierRelease release{m.barrier, time, collect, {}, &a == &done->nodes.front()};
    if (!DepositsNotices(config_.mode)) log_.Missing(a.known, &release.notices);
    if (a.node == config_.self)
      own = std::move(release);
    else
      Send(a.node, release);
  }
  if (own) return OnBarrierRelease(config_.self, *own);
  return Status::Ok();
}

Status Node::OnBarrierRelease(NodeId from, BarrierRelease& m) {
  if (from != kMaster) return Status::InvalidArgument("barrier release not from the master");
  auto it = barriers_.find(m.barrier);
  if (it == barriers_.end()) return Status::InvalidArgument("release of a barrier nobody waits at");
  if (DepositsNotices(config_.mode)) {
    if (!m.notices.empty()) return Status::Malformed("barrier release with notices in a depositing mode");
    if (Status st = CheckOwnIntervals(m.time); !st.ok()) return st;
    TakeDeposits();
    if (!log_.known().Covers(m.time)) {
      pending_releases_.push_back(std::move(m));
      return Status::Ok();
    }
  } else {
    if (Status st = CheckNotices(m.notices, &m.time); !st.ok()) return st;
    AddNotices(m.notices);
  }
  FinishRelease(m);
  return Status::Ok();
}

// REQUIRES: the bins cover m.time.
void Node::FinishRelease(BarrierRelease& m) {
  BarrierState& bs = *barriers_.at(m.barrier);
  assert(bs.arrived == 0 && !bs.gathering);
  const uint64_t episode = bs.episode++;
  bs.begun = false;
  bool serial = m.serial;
  for (ThreadId t = 0; t < config_.threads; ++t) {
    bs.took_part[t] = bs.waiting[t] == episode;
    if (!bs.took_part[t]) continue;
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
