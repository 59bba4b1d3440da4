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
  assert(t < config_.threads && local >= 1 && local <= total);
  auto& entry = barriers_[b];
  if (!entry) {
    entry = std::make_unique<BarrierState>();
    entry->waiting.resize(config_.threads);
  }
  BarrierState& bs = *entry;
  if (!bs.waiting[t]) {
    bs.waiting[t] = bs.episode;
    if (++bs.arrived == local) {
      bs.arrived = 0;
      CloseInterval();
      BarrierArrive arrive{b, local, total, log_.known(), {}};
      if (!DepositsNotices(config_.mode)) {
        log_.Missing(reported_, &arrive.notices);
        reported_ = log_.known();
      }
      if (config_.self == kMaster)
        OnBarrierArrive(config_.self, arrive);
      else
        Send(kMaster, arrive);
    }
  }
  if (bs.episode > *bs.waiting[t]) {
    bs.waiting[t].reset();
    if (serial && bs.serial == t) {
      *serial = true;
      bs.serial.reset();
    }
    return Outcome::kDone;
  }
  return Outcome::kBlocked;
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
  const uint64_t episode = bs.episode++;
  bool serial = m.serial;
  for (ThreadId t = 0; t < config_.threads; ++t) {
    if (bs.waiting[t] != episode) continue;
    ApplyView(t, m.time);
    if (serial) {
      bs.serial = t;
      serial = false;
    }
    host_->Wake(t);
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
