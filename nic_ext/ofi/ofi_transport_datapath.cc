// OFI transport, datapath: WRs to provider operations, one at a time per
// peer; the CQ reader (progress thread or a waiting thread); credits; the
// ticket lock's state machine.
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/ofi/ofi_nic_impl.h"
#include "nic_ext/runs.h"

namespace svm::nic {
namespace {

using Clock = std::chrono::steady_clock;

// Start's answers besides 0 (at the provider) and -fi_errno.
constexpr int kDone = 1;          // finished (popped) already
constexpr int kNoCredits = 2;     // a SEND waits for credits

// Lock polls: the first ones back to back, then spaced out.
constexpr uint32_t kEagerPolls = 16;
std::chrono::nanoseconds PollDelay(uint32_t polls) {
  const uint32_t k = std::min<uint32_t>(polls - kEagerPolls, 6);
  return std::min<std::chrono::nanoseconds>(std::chrono::microseconds(10 << k), std::chrono::microseconds(500));
}

bool IsAccessError(int err) { return err == FI_EACCES || err == FI_EINVAL || err == FI_EFAULT || err == FI_EPERM; }

}  // namespace

bool OfiNicImpl::Driver::Drive() {
  std::lock_guard<std::mutex> l(mu_);
  if (nic_ == nullptr || nic_->closed_.load(std::memory_order_relaxed)) return false;
  std::unique_lock<std::mutex> p(nic_->poll_mu_, std::try_to_lock);
  if (!p.owns_lock()) return false;
  return nic_->PollCq();
}

void OfiNicImpl::ProgressLoop() {
  pthread_setname_np(pthread_self(), "svm-nic-ofi");
  // The shm nap is 20 us: keep the kernel from stretching it to its default
  // 50 us of timer slack.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  Clock::time_point last_work = Clock::now();
  for (uint32_t idle = 0; !stop_.load(std::memory_order_relaxed);) {
    bool did = false;
    {
      std::lock_guard<std::mutex> p(poll_mu_);
      did = PollCq();
    }
    Clock::time_point timer;
    {
      std::lock_guard<std::mutex> l(mu_);
      RunTimers();
      timer = next_timer_;
    }
    if (did) {
      last_work = Clock::now();
      idle = 0;
      continue;
    }
    // Idle for less than idle_spin_: keep reading the CQ. A peer's READ or
    // atomic is served only when this endpoint makes progress (manual
    // progress, shm and tcp alike), and a sleeping thread takes tens of
    // microseconds to wake; requests tend to come in runs.
    if (Clock::now() - last_work < idle_spin_) {
      if ((++idle & 63) == 0) sched_yield();  // 2 cores: the thread we wait for may need ours
      continue;
    }
    // Idle: sleep on the CQ's fd (and the wake fd) until something arrives
    // or the next lock poll is due.
    int timeout_ms = 100;
    if (timer != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(timer - Clock::now()).count();
      if (left <= 0) continue;
      timeout_ms = static_cast<int>(std::min<int64_t>(100, (left + 999) / 1000));
    }
    if (wait_fd_ >= 0) {
      fid* fids[1] = {&cq_->fid};
      if (fi_trywait(fabric_, fids, 1) != FI_SUCCESS) continue;  // something is there already
      pollfd pfd[2] = {{wait_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      poll(pfd, 2, timeout_ms);
    } else {
      // No wait object (the provider progresses only when read): nap briefly.
      pollfd pfd{wake_fd_, POLLIN, 0};
      timespec ts{0, 20'000};
      ppoll(&pfd, 1, &ts, nullptr);
    }
    uint64_t drain;
    (void)!read(wake_fd_, &drain, sizeof drain);
  }
}

bool OfiNicImpl::PollCq() {
  if (closed_.load(std::memory_order_relaxed)) return false;
  fi_cq_msg_entry e[32];
  ssize_t n = fi_cq_read(cq_, e, 32);
  if (n > 0) {
    std::lock_guard<std::mutex> l(mu_);
    for (ssize_t i = 0; i < n; ++i) {
      const Ctx* c = static_cast<const Ctx*>(e[i].op_context);
      if (c == nullptr) continue;
      if (c->kind == CtxKind::kRecv) {
        HandleRecvLen(c->index, e[i].len);
      } else {
        HandleEntry(e[i].op_context, false, 0);
      }
    }
    if (any_stalled_) RetryStalled();
    return true;
  }
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    if (fi_cq_readerr(cq_, &err, 0) != 1) return false;
    std::lock_guard<std::mutex> l(mu_);
    HandleEntry(err.op_context, true, err.err);
    if (any_stalled_) RetryStalled();
    return true;
  }
  return false;
}

void OfiNicImpl::HandleEntry(void* op_context, bool error, int err) {
  const Ctx* c = static_cast<const Ctx*>(op_context);
  if (c == nullptr) return;
  switch (c->kind) {
    case CtxKind::kRecv:
      if (error) {
        if (!shut_ && err != FI_ECANCELED) spdlog::warn("nic {}: receive failed: {}", self(), fi_strerror(err));
        if (!shut_) (void)PostRecv(c->index);
      }
      break;
    case CtxKind::kCtrl:
      HandleCtrl(c->index, error);
      break;
    case CtxKind::kSlot:
      HandleSlot(c->index, error, err);
      break;
  }
}

void OfiNicImpl::HandleRecvLen(uint32_t index, size_t len) {
  const uint8_t* buf = recv_slab_.data() + size_t{index} * kOfiBuffer;
  OfiHeader h{};
  if (len < sizeof h) {
    spdlog::error("nic {}: a {}-byte message without header dropped", self(), len);
  } else {
    std::memcpy(&h, buf, sizeof h);
  }
  const NodeId from = h.from;
  if (len < sizeof h) {
    // dropped above
  } else if (from >= num_nodes() || h.epoch != opt_.epoch) {
    spdlog::error("nic {}: message from node {} of epoch {} dropped", self(), from, h.epoch);
  } else {
    Peer& p = peers_[from];
    switch (static_cast<OfiMsg>(h.type)) {
      case OfiMsg::kData: {
        Message m;
        m.from = from;
        m.bytes = RecvBuffer(len - sizeof h);
        m.bytes.assign(buf + sizeof h, buf + len);
        recv_queue().Push(std::move(m));
        if (++p.owed >= grant_ / 2) GiveCredits(from);
        break;
      }
      case OfiMsg::kCredit:
        p.credits += h.credits;
        Issue(from);
        break;
      case OfiMsg::kTable:
        if (h.credits < kOfiMinCredits) {
          spdlog::error("nic {}: region table of node {} grants {} credits", self(), from, h.credits);
        } else if (Status s = ParseTable(from, {buf + sizeof h, len - sizeof h}); !s.ok()) {
          spdlog::error("nic {}: region table of node {}: {}", self(), from, s.ToString());
        } else {
          p.credits = h.credits;  // before any SEND: Connect waits for every table
          ++tables_;
          cv_.notify_all();
        }
        break;
      case OfiMsg::kBye:
        PeerLost(from, nullptr);  // its goodbye: the normal end
        break;
      default:
        spdlog::error("nic {}: message of unknown type {} from node {} dropped", self(), h.type, from);
    }
  }
  if (!shut_) {
    if (Status s = PostRecv(index); !s.ok()) spdlog::error("nic {}: {}", self(), s.ToString());
  }
}

void OfiNicImpl::HandleCtrl(NodeId peer, bool error) {
  Peer& p = peers_[peer];
  p.ctrl_busy = false;
  if (p.ctrl_bye) {
    p.ctrl_bye = false;
    cv_.notify_all();
    return;
  }
  cv_.notify_all();  // Connect waits for its tables to be sent
  if (error) {
    if (!shut_) PeerLost(peer, "a control message to it failed");
    return;
  }
  if (p.owed >= grant_ / 2) GiveCredits(peer);
}

int OfiNicImpl::PostCtrl(NodeId peer, OfiMsg type) {
  Peer& p = peers_[peer];
  OfiHeader h{static_cast<uint8_t>(type), 0, static_cast<uint16_t>(self()), 0, 0, opt_.epoch, 0};
  if (type == OfiMsg::kCredit) h.credits = static_cast<uint16_t>(p.owed);
  uint8_t* buf = ctrl_slab_.data() + size_t{peer} * sizeof h;
  std::memcpy(buf, &h, sizeof h);
  ssize_t rc = fi_send(ep_, buf, sizeof h, mr_local_ ? fi_mr_desc(ctrl_mr_) : nullptr, addrs_[peer],
                       &ctrl_ctx_[peer]);
  if (rc == 0) {
    p.ctrl_busy = true;
    if (type == OfiMsg::kCredit) p.owed = 0;
  }
  return static_cast<int>(rc);
}

void OfiNicImpl::GiveCredits(NodeId peer) {
  Peer& p = peers_[peer];
  if (p.ctrl_busy || p.owed == 0 || !p.alive || shut_) return;
  const int rc = PostCtrl(peer, OfiMsg::kCredit);
  if (rc == -FI_EAGAIN) {
    p.ctrl_retry = true;
    any_stalled_ = true;
  } else if (rc != 0) {
    PeerLost(peer, "returning credits failed");
  }
}

void OfiNicImpl::RetryStalled() {
  any_stalled_ = false;
  for (NodeId n = 0; n < num_nodes(); ++n) {
    Peer& p = peers_[n];
    if (p.ctrl_retry) {
      p.ctrl_retry = false;
      GiveCredits(n);
    }
    if (p.stalled) {
      p.stalled = false;
      Issue(n);
    }
  }
}

void* OfiNicImpl::Desc(const void* addr, size_t len, Slot* s) {
  if (!mr_local_) return nullptr;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  for (RegionId id = 0; id < kMaxRegions; ++id) {
    const MemoryRegion* r = regions_.Get(id);
    if (r == nullptr) continue;
    const auto base = reinterpret_cast<uintptr_t>(r->base);
    if (a >= base && len <= r->length && a - base <= r->length - len) return fi_mr_desc(mrs_[id]);
  }
  fid_mr* mr = nullptr;
  if (!RegisterInternal(addr, len, FI_READ | FI_WRITE | FI_SEND | FI_RECV, 0, &mr).ok()) return nullptr;
  s->temp_mrs.push_back(mr);
  return fi_mr_desc(mr);
}

void OfiNicImpl::FreeSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  for (fid_mr* mr : s.temp_mrs) fi_close(&mr->fid);
  s.temp_mrs.clear();
  s.used = false;
  s.zombie = false;
  s.done = false;
  s.phase = Phase::kIdle;
  free_.push_back(slot);
}

void OfiNicImpl::Finish(uint32_t slot, WcStatus st, uint64_t value) {
  Slot& s = slots_[slot];
  if (st != WcStatus::kSuccess || s.wr.signaled) {
    Completion c;
    c.wr_id = s.wr.wr_id;
    c.op = s.wr.op;
    c.status = st;
    c.peer = s.wr.peer;
    c.byte_len = static_cast<uint32_t>(s.wr.Bytes());
    c.value = value;
    s.cq->Push(c);
  }
  if (s.at_provider) {
    s.zombie = true;  // its context may still come back
  } else {
    FreeSlot(slot);
  }
}

void OfiNicImpl::PopHead(NodeId peer, uint32_t slot) {
  std::deque<uint32_t>& q = peers_[peer].queue;
  if (!q.empty() && q.front() == slot) {
    q.pop_front();
    slots_[slot].queued = false;
  }
}

void OfiNicImpl::Complete(uint32_t slot, WcStatus st, uint64_t value) {
  Slot& s = slots_[slot];
  if (!s.queued) {
    Finish(slot, st, value);
    return;
  }
  s.done = true;
  s.result = st;
  s.value = value;
  std::deque<uint32_t>& q = peers_[s.wr.peer].queue;
  while (!q.empty() && slots_[q.front()].done) {
    const uint32_t head = q.front();
    q.pop_front();
    Slot& h = slots_[head];
    h.queued = false;
    Finish(head, h.result, h.value);
  }
}

void OfiNicImpl::PeerLost(NodeId peer, const char* why) {
  Peer& p = peers_[peer];
  if (!p.alive) return;
  p.alive = false;
  if (why != nullptr && !shut_) spdlog::warn("nic {}: node {} is gone: {}", self(), peer, why);
  std::deque<uint32_t> q;
  q.swap(p.queue);
  for (uint32_t slot : q) {
    Slot& s = slots_[slot];
    s.queued = false;
    Finish(slot, s.done ? s.result : WcStatus::kFlushed, s.done ? s.value : 0);
  }
  std::erase_if(waiting_locks_, [&](uint32_t slot) {
    if (slots_[slot].wr.peer != peer) return false;
    Finish(slot, WcStatus::kFlushed, 0);
    return true;
  });
}

int OfiNicImpl::PostAtomic(uint32_t slot, NodeId peer, const Remote& r, uint64_t off, fi_op op,
                           uint64_t operand, uint64_t compare) {
  uint64_t* buf = &atomic_buf_[size_t{slot} * 3];
  buf[0] = 0;
  buf[1] = compare;
  buf[2] = operand;
  void* desc = mr_local_ ? fi_mr_desc(atomic_mr_) : nullptr;
  Slot& s = slots_[slot];
  ssize_t rc;
  if (op == FI_CSWAP) {
    rc = fi_compare_atomic(ep_, &buf[2], 1, desc, &buf[1], desc, &buf[0], desc, addrs_[peer],
                           RemoteAddr(r, off), r.key, FI_UINT64, FI_CSWAP, &s.ctx);
  } else {
    rc = fi_fetch_atomic(ep_, &buf[2], 1, desc, &buf[0], desc, addrs_[peer], RemoteAddr(r, off), r.key, FI_UINT64,
                         op, &s.ctx);
  }
  if (rc == 0) s.at_provider = true;
  return static_cast<int>(rc);
}

int OfiNicImpl::PostReadWord(uint32_t slot, NodeId peer, const Remote& r, uint64_t off) {
  uint64_t* buf = &atomic_buf_[size_t{slot} * 3];
  Slot& s = slots_[slot];
  ssize_t rc = fi_read(ep_, buf, 8, mr_local_ ? fi_mr_desc(atomic_mr_) : nullptr, addrs_[peer],
                       RemoteAddr(r, off), r.key, &s.ctx);
  if (rc == 0) s.at_provider = true;
  return static_cast<int>(rc);
}

// Posts the provider operation of the slot's current phase.
int OfiNicImpl::Start(uint32_t slot) {
  Slot& s = slots_[slot];
  const WorkRequest& wr = s.wr;
  Peer& p = peers_[wr.peer];
  const Remote& locks = p.regions[kOfiLockRegion];
  const uint64_t lock_off = uint64_t{wr.lock} * kOfiLockWords * 8;
  switch (wr.op) {
    case Opcode::kSend: {
      if (p.credits == 0) return kNoCredits;
      ssize_t rc = fi_send(ep_, s.data.data(), s.data.size(), Desc(s.data.data(), s.data.size(), &s),
                           addrs_[wr.peer], &s.ctx);
      if (rc != 0) return static_cast<int>(rc);
      --p.credits;
      s.phase = Phase::kOp;
      s.at_provider = true;
      return 0;
    }
    case Opcode::kWrite:
    case Opcode::kRead: {
      const Remote& r = p.regions[wr.region < kMaxRegions ? wr.region : 0];
      if (s.phase == Phase::kIdle) {
        if (wr.region >= kMaxRegions || !RemoteOk(r, wr.offset, wr.Bytes())) {
          Complete(slot, WcStatus::kRemoteAccessError, 0);
          return kDone;
        }
        s.phase = Phase::kOp;
        s.seg = 0;
        s.seg_off = 0;
      }
      // Skip empty segments; all of them at once where the provider takes
      // that many, else one by one.
      while (s.seg < wr.num_sge && wr.sge[s.seg].length == 0) ++s.seg;
      if (s.seg == wr.num_sge) {
        Complete(slot, WcStatus::kSuccess, 0);
        return kDone;
      }
      std::array<iovec, kMaxSge> iov{};
      std::array<void*, kMaxSge> desc{};
      size_t count = 0;
      uint64_t bytes = 0;
      // A WRITE's bytes were gathered at Post: one segment.
      const bool all = wr.op == Opcode::kWrite || (s.seg == 0 && wr.num_sge <= iov_limit_);
      if (wr.op == Opcode::kWrite) {
        iov[0] = {s.data.data(), s.data.size()};
        desc[0] = Desc(s.data.data(), s.data.size(), &s);
        bytes = s.data.size();
        count = 1;
      }
      for (uint32_t i = s.seg; wr.op == Opcode::kRead && i < (all ? wr.num_sge : s.seg + 1); ++i) {
        if (wr.sge[i].length == 0) continue;
        iov[count] = {wr.sge[i].addr, wr.sge[i].length};
        desc[count] = Desc(wr.sge[i].addr, wr.sge[i].length, &s);
        bytes += wr.sge[i].length;
        ++count;
      }
      fi_rma_iov rma{RemoteAddr(r, wr.offset + s.seg_off), bytes, r.key};
      fi_msg_rma msg{};
      msg.msg_iov = iov.data();
      msg.desc = desc.data();
      msg.iov_count = count;
      msg.addr = addrs_[wr.peer];
      msg.rma_iov = &rma;
      msg.rma_iov_count = 1;
      msg.context = &s.ctx;
      const uint64_t flags = FI_COMPLETION | (info_->tx_attr->op_flags & FI_DELIVERY_COMPLETE);
      ssize_t rc = wr.op == Opcode::kWrite ? fi_writemsg(ep_, &msg, flags) : fi_readmsg(ep_, &msg, flags);
      if (rc != 0) return static_cast<int>(rc);
      if (all) s.seg = wr.num_sge - 1;
      s.seg_off += bytes;
      s.at_provider = true;
      return 0;
    }
    case Opcode::kCas:
    case Opcode::kFaa: {
      const Remote& r = p.regions[wr.region < kMaxRegions ? wr.region : 0];
      if (wr.region >= kMaxRegions || !RemoteOk(r, wr.offset, kAtomicBytes) || (r.base + wr.offset) % kAtomicBytes != 0) {
        Complete(slot, WcStatus::kRemoteAccessError, 0);
        return kDone;
      }
      s.phase = Phase::kOp;
      return wr.op == Opcode::kCas ? PostAtomic(slot, wr.peer, r, wr.offset, FI_CSWAP, wr.operand, wr.compare)
                                   : PostAtomic(slot, wr.peer, r, wr.offset, FI_SUM, wr.operand, 0);
    }
    case Opcode::kLock:
      if (!locks.used) return -FI_EINVAL;
      s.phase = Phase::kTicket;
      return PostAtomic(slot, wr.peer, locks, lock_off, FI_SUM, 1, 0);
    case Opcode::kUnlock:
      if (!locks.used) return -FI_EINVAL;
      if (s.phase == Phase::kUnlockServe) return PostAtomic(slot, wr.peer, locks, lock_off + 8, FI_SUM, 1, 0);
      s.phase = Phase::kUnlockOwner;
      return PostAtomic(slot, wr.peer, locks, lock_off + 16, FI_CSWAP, 0, uint64_t{self()} + 1);
    case Opcode::kWriteRuns:
      return StartRuns(slot);
  }
  return -FI_EINVAL;
}

// As RegionTable::StoreRuns decides (nic_ext/runs.h), against the peer's
// region as it announced it.
WcStatus OfiNicImpl::CheckRuns(const Remote& r, const Slot& s) const {
  if (IsMasked(s.data)) return WcStatus::kRemoteInvalidRequest;  // not StoresMaskedBlocks
  return nic::CheckRuns(s.data, s.wr.offset, [&](uint64_t at, uint64_t len) {
    return s.wr.region < kMaxRegions && RemoteOk(r, at, len);
  });
}

// WRITE_RUNS: every run is checked first (all or none), then the runs go
// runs_per_write_ at a time, one fi_writemsg of that many local and remote
// iovs after another (as a READ's segments): a diff of 512 runs is 128
// writes at the provider, not 512 WRs each waiting for the one before.
int OfiNicImpl::StartRuns(uint32_t slot) {
  Slot& s = slots_[slot];
  const WorkRequest& wr = s.wr;
  const Remote& r = peers_[wr.peer].regions[wr.region < kMaxRegions ? wr.region : 0];
  if (s.phase == Phase::kIdle) {
    if (const WcStatus st = CheckRuns(r, s); st != WcStatus::kSuccess) {
      Complete(slot, st, 0);
      return kDone;
    }
    s.phase = Phase::kOp;
    s.seg_off = 0;
    s.data_desc = Desc(s.data.data(), s.data.size(), &s);
  }
  if (s.seg_off == s.data.size()) {
    Complete(slot, WcStatus::kSuccess, 0);
    return kDone;
  }
  std::array<iovec, kMaxSge> iov{};
  std::array<void*, kMaxSge> desc{};
  std::array<fi_rma_iov, kMaxSge> rma{};
  size_t count = 0, at = s.seg_off;
  for (; count < runs_per_write_ && at < s.data.size(); ++count) {
    const Run run = NextRun(s.data, &at);
    iov[count] = {const_cast<uint8_t*>(run.bytes.data()), run.bytes.size()};
    desc[count] = s.data_desc;
    rma[count] = {RemoteAddr(r, wr.offset + run.offset), run.bytes.size(), r.key};
  }
  fi_msg_rma msg{};
  msg.msg_iov = iov.data();
  msg.desc = desc.data();
  msg.iov_count = count;
  msg.addr = addrs_[wr.peer];
  msg.rma_iov = rma.data();
  msg.rma_iov_count = count;
  msg.context = &s.ctx;
  const uint64_t flags = FI_COMPLETION | (info_->tx_attr->op_flags & FI_DELIVERY_COMPLETE);
  if (ssize_t rc = fi_writemsg(ep_, &msg, flags); rc != 0) return static_cast<int>(rc);
  s.seg_off = at;
  s.at_provider = true;
  return 0;
}

// Starts the queue's head; while that and the WRs behind it are READs, those
// too (READs change nothing, so they need no order among themselves; any
// other WR waits until everything ahead of it completed).
void OfiNicImpl::Issue(NodeId peer) {
  Peer& p = peers_[peer];
  size_t i = 0;
  while (i < p.queue.size()) {
    if (!p.alive) {
      std::deque<uint32_t> q;
      q.swap(p.queue);
      for (uint32_t slot : q) {
        slots_[slot].queued = false;
        Finish(slot, WcStatus::kFlushed, 0);
      }
      return;
    }
    const uint32_t slot = p.queue[i];
    Slot& s = slots_[slot];
    const bool ahead_ok = pipeline_reads_ && s.wr.op == Opcode::kRead;  // may overlap the READs before it
    if (i > 0 && !ahead_ok) return;
    if (s.at_provider || s.done) {
      if (!ahead_ok) return;
      ++i;
      continue;
    }
    const int rc = Start(slot);
    if (rc == 0) {
      if (!ahead_ok) return;
      ++i;
      continue;
    }
    if (rc == kNoCredits) return;
    if (rc == kDone) {  // the queue may have moved: look again from its head
      i = 0;
      continue;
    }
    if (rc == -FI_EAGAIN) {
      p.stalled = true;
      any_stalled_ = true;
      return;
    }
    spdlog::warn("nic {}: {} to node {}: {}", self(), ToString(s.wr.op), peer, fi_strerror(-rc));
    Complete(slot, WcStatus::kFlushed, 0);
    i = 0;
  }
}

void OfiNicImpl::HandleSlot(uint32_t slot, bool error, int err) {
  Slot& s = slots_[slot];
  s.at_provider = false;
  if (s.zombie) {
    FreeSlot(slot);
    return;
  }
  if (!s.used) return;
  const NodeId peer = s.wr.peer;
  Peer& p = peers_[peer];
  if (error) {
    if (IsAccessError(err) && s.queued) {
      Complete(slot, WcStatus::kRemoteAccessError, 0);
      Issue(peer);
      return;
    }
    spdlog::warn("nic {}: {} to node {} failed: {}", self(), ToString(s.wr.op), peer, fi_strerror(err));
    if (!s.queued) {
      std::erase(waiting_locks_, slot);
      Finish(slot, WcStatus::kFlushed, 0);
    }
    PeerLost(peer, "an operation to it failed");
    return;
  }
  const uint64_t word = atomic_buf_[size_t{slot} * 3];
  const Remote& locks = p.regions[kOfiLockRegion];
  const uint64_t lock_off = uint64_t{s.wr.lock} * kOfiLockWords * 8;
  auto fail_or_wait = [&](int rc) {
    if (rc == 0) return;
    if (rc == -FI_EAGAIN) {  // try again from the timers
      s.next_poll = Clock::now();
      next_timer_ = std::min(next_timer_, s.next_poll);
      return;
    }
    std::erase(waiting_locks_, slot);
    Finish(slot, WcStatus::kFlushed, 0);
  };
  switch (s.phase) {
    case Phase::kIdle:
      return;
    case Phase::kOp:
      if (((s.wr.op == Opcode::kRead || s.wr.op == Opcode::kWrite) && s.seg + 1 < s.wr.num_sge) ||
          (s.wr.op == Opcode::kWriteRuns && s.seg_off < s.data.size())) {
        if (s.wr.op != Opcode::kWriteRuns) ++s.seg;
        const int rc = Start(slot);
        if (rc == -FI_EAGAIN) {
          p.stalled = any_stalled_ = true;  // Issue posts this segment again
        } else if (rc < 0) {
          Complete(slot, WcStatus::kFlushed, 0);
          Issue(peer);
        } else if (rc == kDone) {
          Issue(peer);
        }
        return;
      }
      Complete(slot, WcStatus::kSuccess, (s.wr.op == Opcode::kCas || s.wr.op == Opcode::kFaa) ? word : 0);
      Issue(peer);
      return;
    case Phase::kTicket:
      s.ticket = word;
      s.phase = Phase::kPoll;
      s.polls = 0;
      PopHead(peer, slot);
      waiting_locks_.push_back(slot);
      fail_or_wait(PostReadWord(slot, peer, locks, lock_off + 8));
      Issue(peer);
      return;
    case Phase::kPoll:
      if (word == s.ticket) {
        s.phase = Phase::kOwn;
        fail_or_wait(PostAtomic(slot, peer, locks, lock_off + 16, FI_CSWAP, uint64_t{self()} + 1, 0));
      } else if (++s.polls < kEagerPolls) {
        fail_or_wait(PostReadWord(slot, peer, locks, lock_off + 8));
      } else {
        s.next_poll = Clock::now() + PollDelay(s.polls);
        next_timer_ = std::min(next_timer_, s.next_poll);
        if (wake_fd_ >= 0) {
          uint64_t one = 1;
          (void)!write(wake_fd_, &one, sizeof one);
        }
      }
      return;
    case Phase::kOwn:
      if (word == 0) {
        std::erase(waiting_locks_, slot);
        Finish(slot, WcStatus::kSuccess, 0);
      } else {  // the previous holder's owner reset is not visible yet
        s.next_poll = Clock::now() + std::chrono::microseconds(10);
        next_timer_ = std::min(next_timer_, s.next_poll);
      }
      return;
    case Phase::kUnlockOwner:
      if (word != uint64_t{self()} + 1) {
        Complete(slot, WcStatus::kRemoteInvalidRequest, 0);
        Issue(peer);
        return;
      }
      s.phase = Phase::kUnlockServe;
      if (const int rc = PostAtomic(slot, peer, locks, lock_off + 8, FI_SUM, 1, 0); rc == -FI_EAGAIN) {
        p.stalled = any_stalled_ = true;
      } else if (rc != 0) {
        Complete(slot, WcStatus::kFlushed, 0);
        Issue(peer);
      }
      return;
    case Phase::kUnlockServe:
      Complete(slot, WcStatus::kSuccess, 0);
      Issue(peer);
      return;
  }
}

void OfiNicImpl::RunTimers() {
  if (next_timer_ == Clock::time_point::max()) return;
  const auto now = Clock::now();
  if (now < next_timer_) return;
  next_timer_ = Clock::time_point::max();
  for (size_t i = 0; i < waiting_locks_.size(); ++i) {
    const uint32_t slot = waiting_locks_[i];
    Slot& s = slots_[slot];
    if (s.at_provider) continue;
    if (s.next_poll > now) {
      next_timer_ = std::min(next_timer_, s.next_poll);
      continue;
    }
    const Remote& locks = peers_[s.wr.peer].regions[kOfiLockRegion];
    const uint64_t lock_off = uint64_t{s.wr.lock} * kOfiLockWords * 8;
    const int rc = s.phase == Phase::kOwn
                       ? PostAtomic(slot, s.wr.peer, locks, lock_off + 16, FI_CSWAP, uint64_t{self()} + 1, 0)
                       : PostReadWord(slot, s.wr.peer, locks, lock_off + 8);
    if (rc == -FI_EAGAIN) {
      s.next_poll = now + std::chrono::microseconds(10);
      next_timer_ = std::min(next_timer_, s.next_poll);
    } else if (rc != 0) {
      waiting_locks_.erase(waiting_locks_.begin() + static_cast<ptrdiff_t>(i--));
      Finish(slot, WcStatus::kFlushed, 0);
    }
  }
}

Status OfiNicImpl::Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) {
  if (!started_) return Status::InvalidArgument("Post before Connect");
  for (const WorkRequest& wr : wrs) {
    if (Status s = Validate(wr); !s.ok()) return s;
    if (wr.op == Opcode::kSend && wr.Bytes() > kOfiMaxMessage) {
      return Status::InvalidArgument(fmt::format("SEND of {} bytes > kOfiMaxMessage", wr.Bytes()));
    }
    if ((wr.op == Opcode::kLock || wr.op == Opcode::kUnlock) && wr.lock >= kOfiMaxLocks) {
      return Status::InvalidArgument("lock id >= kOfiMaxLocks");
    }
  }
  if (cq->driver_id() != driver_.get()) cq->set_driver(driver_);
  if (wrs.size() > kMaxOutstanding) return Status::OutOfRange("more WRs than kMaxOutstanding in one Post");
  std::unique_lock<std::mutex> l(mu_);
  // Every slot taken: WRs to one peer go one at a time, so a burst of
  // unsignaled WRs can queue up faster than it drains. Wait for slots,
  // helping the CQ along, rather than fail the caller.
  const auto deadline = Clock::now() + opt_.setup_timeout;
  while (wrs.size() > free_.size()) {
    l.unlock();
    bool did = false;
    {
      std::unique_lock<std::mutex> p(poll_mu_, std::try_to_lock);
      if (p.owns_lock()) did = PollCq();
    }
    if (!did) std::this_thread::sleep_for(std::chrono::microseconds(20));
    l.lock();
    if (Clock::now() > deadline) return Status::OutOfRange("too many requests outstanding");
  }
  std::array<bool, kMaxNodes> touched{};
  for (const WorkRequest& wr : wrs) {
    const uint32_t slot = free_.back();
    free_.pop_back();
    Slot& s = slots_[slot];
    s.used = true;
    s.at_provider = false;
    s.zombie = false;
    s.queued = true;
    s.done = false;
    s.wr = wr;
    s.cq = cq;
    s.phase = Phase::kIdle;
    // SEND and WRITE bytes are copied now: the caller may reuse its buffers
    // once Post returns (the provider sees them only when the WR's turn comes).
    s.data.clear();
    if (wr.op == Opcode::kSend) {
      const OfiHeader h{static_cast<uint8_t>(OfiMsg::kData), 0, static_cast<uint16_t>(self()), 0, 0, opt_.epoch, 0};
      const auto* hb = reinterpret_cast<const uint8_t*>(&h);
      s.data.assign(hb, hb + sizeof h);
    }
    s.data_desc = nullptr;
    if (wr.op == Opcode::kSend || wr.op == Opcode::kWrite || wr.op == Opcode::kWriteRuns) {
      for (uint32_t i = 0; i < wr.num_sge; ++i) {
        const auto* b = static_cast<const uint8_t*>(wr.sge[i].addr);
        s.data.insert(s.data.end(), b, b + wr.sge[i].length);
      }
    }
    peers_[wr.peer].queue.push_back(slot);
    touched[wr.peer] = true;
  }
  for (NodeId n = 0; n < num_nodes(); ++n) {
    if (touched[n]) Issue(n);
  }
  return Status::Ok();
}

}  // namespace svm::nic
