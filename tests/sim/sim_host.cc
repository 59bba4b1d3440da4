#include "tests/sim/sim_host.h"

#include <algorithm>
#include <utility>

#include "protocol/diff.h"

namespace svm::sim {

SimHost::SimHost(NodeId self, uint32_t threads, uint64_t pages, uint64_t page_size,
                 SimNetwork* network, WakeListener* listener)
    : self_(self),
      threads_(threads),
      pages_(pages),
      page_size_(page_size),
      network_(network),
      listener_(listener),
      frames_(pages),
      versions_(pages),
      prot_(pages, Prot::kNone),
      shared_marks_(pages, 0),
      deposits_(network->nodes()) {}

void SimHost::ContractError(const std::string& what) {
  if (contract_error_.empty()) {
    contract_error_ = "node " + std::to_string(self_) + ": " + what;
  }
}

void SimHost::Send(NodeId to, std::vector<uint8_t> bytes) {
  if (to >= network_->nodes() || to == self_) {
    ContractError("Send to node " + std::to_string(to));
    return;
  }
  network_->Send(self_, to, std::move(bytes));
}

std::span<uint8_t> SimHost::Frame(PageId p) {
  if (p >= pages_) {
    ContractError("Frame(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    if (!scratch_) scratch_ = std::make_unique<uint8_t[]>(page_size_);
    return {scratch_.get(), page_size_};
  }
  if (!frames_[p]) frames_[p] = std::make_unique<uint8_t[]>(page_size_);  // zeroed
  return {frames_[p].get(), page_size_};
}

std::span<const uint8_t> SimHost::PeekFrame(PageId p) const {
  if (p >= pages_ || !frames_[p]) return {};
  return {frames_[p].get(), page_size_};
}

void SimHost::Protect(PageId first, size_t count, Prot prot) {
  if (count == 0 || first >= pages_ || count > pages_ - first) {
    ContractError("Protect(" + std::to_string(first) + ", " + std::to_string(count) + ") beyond " +
                  std::to_string(pages_) + " pages");
    return;
  }
  std::fill(prot_.begin() + first, prot_.begin() + first + count, prot);
}

uint64_t& SimHost::SharedMark(PageId p) {
  if (p >= pages_) {
    ContractError("SharedMark(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    return scratch_mark_;
  }
  return shared_marks_[p];
}

void SimHost::Wake(ThreadId t) {
  if (t >= threads_) {
    ContractError("Wake(" + std::to_string(t) + ") of a thread that does not exist");
    return;
  }
  listener_->OnWake(self_, t);
}

std::span<IntervalId> SimHost::Versions(PageId p) {
  if (p >= pages_) {
    ContractError("Versions(" + std::to_string(p) + ") beyond " + std::to_string(pages_) +
                  " pages");
    scratch_versions_.assign(network_->nodes(), 0);
    return scratch_versions_;
  }
  if (versions_[p].empty()) versions_[p].assign(network_->nodes(), 0);
  return versions_[p];
}

bool SimHost::CheckPeer(const char* op, NodeId to, bool self_ok) {
  if (to < network_->nodes() && (self_ok || to != self_)) return true;
  ContractError(std::string(op) + " to node " + std::to_string(to));
  return false;
}

// Two runs of frames, like the runtime's heap and globals: a page run never
// crosses the middle.
PageId SimHost::FramesEnd(PageId p) {
  const PageId middle = pages_ / 2;
  return p < middle ? middle : pages_;
}

void SimHost::ReadPages(NodeId home, PageId first, uint32_t count, uint64_t mark, bool) {
  if (!CheckPeer("ReadPages", home, false)) return;
  if (first >= pages_ || count == 0 || count > kMaxPageRun || first + count > FramesEnd(first))
    return ContractError("ReadPages of pages " + std::to_string(first) + "+" + std::to_string(count));
  Event e;
  e.kind = EventKind::kRead;
  e.page = first;
  e.count = count;
  e.slow = completing_read_;
  e.mark = mark;
  network_->Post(self_, home, std::move(e));
}

void SimHost::WriteDiff(NodeId home, PageId p, IntervalId interval,
                        std::span<const uint8_t> runs) {
  if (!CheckPeer("WriteDiff", home, false)) return;
  if (p >= pages_) return ContractError("WriteDiff to page " + std::to_string(p));
  Event e;
  e.kind = EventKind::kWriteDiff;
  e.page = p;
  e.interval = interval;
  e.bytes.assign(runs.begin(), runs.end());
  network_->Post(self_, home, std::move(e));
}

void SimHost::DepositNotice(const WriteNotice& notice) {
  if (notice.node != self_) return ContractError("DepositNotice of another node's notice");
  if (lose_deposits_) return;
  for (NodeId to = 0; to < network_->nodes(); ++to) {
    if (to == self_) continue;
    Event e;
    e.kind = EventKind::kDeposit;
    e.notice = notice;
    network_->Post(self_, to, std::move(e));
  }
}

void SimHost::TakeNotices(std::vector<WriteNotice>* out) {
  for (std::vector<WriteNotice>& from : deposits_) {
    for (WriteNotice& n : from) out->push_back(std::move(n));
    from.clear();
  }
}

void SimHost::NicLock(NodeId home, LockId l) {
  if (!CheckPeer("NicLock", home, true)) return;
  Event e;
  e.kind = EventKind::kLock;
  e.lock = l;
  network_->Post(self_, home, std::move(e));
}

void SimHost::NicUnlock(NodeId home, LockId l, const VectorTime& timestamp) {
  if (!CheckPeer("NicUnlock", home, true)) return;
  if (timestamp.size() != network_->nodes()) return ContractError("NicUnlock timestamp size");
  Event e;
  e.kind = EventKind::kUnlock;
  e.lock = l;
  e.time = timestamp;
  network_->Post(self_, home, std::move(e));
}

void SimHost::ServeRead(PageId first, uint32_t count, uint64_t mark, Event* done) {
  for (uint32_t i = 0; i < count; ++i)
    if (mark & (uint64_t{1} << i)) SharedMark(first + i) = 1;
  done->kind = EventKind::kReadDone;
  done->page = first;
  for (PageId p = first; p < first + count; ++p) {
    done->times.emplace_back(std::vector<IntervalId>(Versions(p).begin(), Versions(p).end()));
    const std::span<uint8_t> frame = Frame(p);
    done->bytes.insert(done->bytes.end(), frame.begin(), frame.end());
  }
}

bool SimHost::ServeWriteDiff(NodeId writer, const Event& e) {
  const Status s = diff::Apply(e.bytes, Frame(e.page));
  if (!s.ok()) {
    ContractError("direct diff from node " + std::to_string(writer) + ": " + s.ToString());
    return false;
  }
  Versions(e.page)[writer] = e.interval;
  return true;
}

void SimHost::ServeDeposit(NodeId writer, WriteNotice notice) {
  deposits_[writer].push_back(std::move(notice));
}

std::optional<VectorTime> SimHost::ServeLock(NodeId requester, LockId l) {
  NicLockWord& w = nic_locks_[l];
  if (w.timestamp.size() == 0) w.timestamp = VectorTime(network_->nodes());
  if (w.held) {
    w.waiters.push_back(requester);
    return std::nullopt;
  }
  w.held = true;
  w.holder = requester;
  return w.timestamp;
}

std::optional<NodeId> SimHost::ServeUnlock(NodeId releaser, LockId l, VectorTime timestamp) {
  auto it = nic_locks_.find(l);
  if (it == nic_locks_.end() || !it->second.held || it->second.holder != releaser) {
    ContractError("NicUnlock of lock " + std::to_string(l) + " by node " +
                  std::to_string(releaser) + ", which does not hold it");
    return std::nullopt;
  }
  NicLockWord& w = it->second;
  w.timestamp = std::move(timestamp);
  if (w.waiters.empty()) {
    w.held = false;
    return std::nullopt;
  }
  w.holder = w.waiters.front();
  w.waiters.pop_front();
  return w.holder;
}

const VectorTime& SimHost::NicLockTimestamp(LockId l) const { return nic_locks_.at(l).timestamp; }

}  // namespace svm::sim
