// Shm transport, datapath: work requests run on the posting thread against
// the target's mapped memory; rings, backlogs and lock grants make progress
// from any waiting thread (Driver) or from the NIC thread.
//
// Wake-ups follow one rule: whoever makes work for node k (a message in its
// ring, room in a ring it waits on, a lock it queued for) publishes it, then
// wakes k only if k has no poller (Bell::pollers). A poller that stops
// polling decrements pollers first and looks for work after; both sides use
// sequentially consistent operations, so one of them always sees the other.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/shm/shm_nic_impl.h"
#include "util/coding.h"

namespace svm::nic::shm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kSleepSlice{100};  // the NIC thread checks its links this often
constexpr uint64_t kServedMask = 0xffffffffull;
constexpr uint64_t kOneTicket = 1ull << 32;

void FutexWait(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::nanoseconds timeout) {
  timespec ts{time_t(timeout.count() / 1'000'000'000), long(timeout.count() % 1'000'000'000)};
  // Not FUTEX_PRIVATE: the word is in memory other processes share.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// The sleepers on a receive futex (Bell::recv_seq) by role, so that a wake
// can pick the waiters (FUTEX_WAKE wakes either).
uint32_t RoleBits(SleepRole role) { return role == SleepRole::kWaiter ? 1u : 2u; }

void FutexWaitAs(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::nanoseconds timeout, SleepRole role) {
  timespec ts;  // FUTEX_WAIT_BITSET's timeout is absolute
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t at = int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec + timeout.count();
  ts = {time_t(at / 1'000'000'000), long(at % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET, seen, &ts, nullptr, RoleBits(role));
}

long FutexWakeAs(std::atomic<uint32_t>* word, int count, SleepRole role) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_BITSET, count, nullptr, nullptr,
                 RoleBits(role));
}

// Byte-stream copies in and out of a ring of `size` (a power of two) at
// stream position `pos`.
void CopyIn(uint8_t* ring, uint32_t size, uint64_t pos, const uint8_t* src, size_t n) {
  if (n == 0) return;  // src may be null (an empty gather entry)
  const size_t at = pos & (size - 1), first = std::min<size_t>(n, size - at);
  std::memcpy(ring + at, src, first);
  std::memcpy(ring, src + first, n - first);
}

uint32_t Served(uint64_t tickets) { return uint32_t(tickets & kServedMask); }

}  // namespace

// ---- work requests ----

Status ShmNicImpl::Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) {
  if (!started_) return Status::InvalidArgument("Post before Connect");
  for (const WorkRequest& wr : wrs) {
    if (Status s = Validate(wr); !s.ok()) return s;
  }
  for (const WorkRequest& wr : wrs) Execute(cq, wr);
  return Status::Ok();
}

void ShmNicImpl::Execute(CompletionQueue* cq, const WorkRequest& wr) {
  Completion c;
  c.wr_id = wr.wr_id;
  c.op = wr.op;
  c.peer = wr.peer;
  Peer& p = peers_[wr.peer];
  const uint64_t bytes = wr.Bytes();
  // Its shutdown is read from this node's own memory: a load of the
  // target's Bell was most of this call at 192 nodes (a cold page of the
  // target's each time).
  if (shut_.load(std::memory_order_acquire) || p.control == nullptr || gone(wr.peer) ||
      layout_.head(peers_[self()].control, wr.peer)->sender_gone.load(std::memory_order_acquire) != 0) {
    c.status = WcStatus::kFlushed;
    cq->Push(c);
    return;
  }
  switch (wr.op) {
    case Opcode::kRead:
    case Opcode::kWrite:
    case Opcode::kWriteRuns:
    case Opcode::kCas:
    case Opcode::kFaa:
      p.regions.Serve(wr, &c);
      if (c.status == WcStatus::kSuccess) n_remote_.fetch_add(1, std::memory_order_relaxed);
      break;
    case Opcode::kSend:
      c.status = Send(p, wr.peer, wr);
      c.byte_len = uint32_t(bytes);
      break;
    case Opcode::kLock: {
      bool now = false;
      c.status = Lock(cq, wr, &now);
      if (c.status == WcStatus::kSuccess && !now) return;  // completes when granted
      break;
    }
    case Opcode::kUnlock:
      c.status = Unlock(wr);
      break;
  }
  if (wr.signaled || c.status != WcStatus::kSuccess) cq->Push(c);
}

// ---- messages ----

WcStatus ShmNicImpl::Send(Peer& p, NodeId to, const WorkRequest& wr) {
  n_sends_.fetch_add(1, std::memory_order_relaxed);
  if (to == self()) {
    Message m;
    m.from = self();
    m.bytes = RecvBuffer(wr.Bytes());
    m.bytes.reserve(wr.Bytes());
    for (uint32_t i = 0; i < wr.num_sge; ++i) {
      auto* b = static_cast<const uint8_t*>(wr.sge[i].addr);
      m.bytes.insert(m.bytes.end(), b, b + wr.sge[i].length);
    }
    recv_queue().Push(std::move(m));
    WakeConsumer();
    return WcStatus::kSuccess;
  }
  uint8_t length[kLengthBytes];
  coding::EncodeFixed(length, uint32_t(wr.Bytes()));
  {
    std::lock_guard<std::mutex> l(p.send_mu);
    RingHead& h = *layout_.head(p.control, self());
    uint8_t* ring = layout_.ring(p.control, self());
    const uint32_t size = layout_.ring_bytes;
    // What fits goes to the ring now; the rest (and all of it behind an
    // older backlog, to keep the pair FIFO) waits in the backlog.
    uint64_t tail = h.tail.load(std::memory_order_relaxed);
    uint64_t room = p.has_backlog.load(std::memory_order_relaxed)
                        ? 0
                        : size - (tail - h.head.load(std::memory_order_acquire));
    auto put = [&](const void* src, size_t n) {
      const size_t now = size_t(std::min<uint64_t>(n, room));
      CopyIn(ring, size, tail, static_cast<const uint8_t*>(src), now);
      tail += now;
      room -= now;
      p.backlog.insert(p.backlog.end(), static_cast<const uint8_t*>(src) + now,
                       static_cast<const uint8_t*>(src) + n);
    };
    put(length, sizeof(length));
    for (uint32_t i = 0; i < wr.num_sge; ++i) put(wr.sge[i].addr, wr.sge[i].length);
    h.tail.store(tail, std::memory_order_seq_cst);
    if (p.backlog.size() > p.backlog_at) FlushLocked(p);
  }
  WakeForMessage(to);
  return WcStatus::kSuccess;
}

// Moves backlog bytes into the ring while there is room. When some remain,
// asks the receiver for a wake-up on room (sender_waits), then looks once
// more: room made before the request was seen would wake nobody.
void ShmNicImpl::FlushLocked(Peer& p) {
  RingHead& h = *layout_.head(p.control, self());
  uint8_t* ring = layout_.ring(p.control, self());
  const uint32_t size = layout_.ring_bytes;
  for (int round = 0;; ++round) {
    uint64_t tail = h.tail.load(std::memory_order_relaxed);
    const uint64_t room = size - (tail - h.head.load(std::memory_order_seq_cst));
    const size_t n = size_t(std::min<uint64_t>(room, p.backlog.size() - p.backlog_at));
    if (n > 0) {
      CopyIn(ring, size, tail, p.backlog.data() + p.backlog_at, n);
      h.tail.store(tail + n, std::memory_order_seq_cst);
      p.backlog_at += n;
    }
    if (p.backlog_at == p.backlog.size()) {
      p.backlog.clear();
      p.backlog_at = 0;
      SetBacklog(p, false);
      h.sender_waits.store(0, std::memory_order_relaxed);
      return;
    }
    SetBacklog(p, true);
    if (round > 0) return;
    h.sender_waits.store(1, std::memory_order_seq_cst);
  }
}

// REQUIRES: p.send_mu.
void ShmNicImpl::SetBacklog(Peer& p, bool on) {
  if (p.has_backlog.load(std::memory_order_relaxed) == on) return;
  p.has_backlog.store(on, std::memory_order_relaxed);
  backlogs_.fetch_add(on ? 1 : -1, std::memory_order_relaxed);
}

bool ShmNicImpl::FlushBacklogs() {
  if (backlogs_.load(std::memory_order_relaxed) == 0) return false;
  bool did = false;
  for (NodeId k = 0; k < num_nodes(); ++k) {
    Peer& p = peers_[k];
    if (!p.has_backlog.load(std::memory_order_relaxed) || gone(k)) continue;
    std::unique_lock<std::mutex> l(p.send_mu, std::try_to_lock);
    if (!l) continue;
    const size_t before = p.backlog.size() - p.backlog_at;
    FlushLocked(p);
    const bool moved = p.backlog.size() - p.backlog_at < before;
    l.unlock();
    if (moved) {
      WakeForMessage(k);
      did = true;
    }
  }
  return did;
}

// Takes what senders put in this node's rings. A sender is trusted no
// further than the ring's bounds: a stream that claims more bytes than the
// ring holds, or a message over kMaxMessage, cuts that peer off.
bool ShmNicImpl::Drain() {
  std::unique_lock<std::mutex> l(drain_mu_, std::try_to_lock);
  if (!l) return false;
  uint8_t* own = peers_[self()].control;
  const uint32_t size = layout_.ring_bytes;
  bool did = false;
  for (NodeId s = 0; s < num_nodes(); ++s) {
    if (s == self()) continue;
    RingHead& h = *layout_.head(own, s);
    const uint64_t tail = h.tail.load(std::memory_order_acquire);
    uint64_t head = h.head.load(std::memory_order_relaxed);
    if (tail == head) continue;
    Peer& p = peers_[s];
    if (tail - head > size || gone(s)) {
      if (!gone(s)) spdlog::error("shm: node {}: node {}'s ring claims {} bytes; cutting it off", self(), s, tail - head);
      h.head.store(tail, std::memory_order_release);
      NoteGone(s);
      continue;
    }
    const RingReader::Result r = p.reader.Read(
        layout_.ring(own, s), size, &head, tail, s,
        [&](Message&& m) {
          recv_queue().Push(std::move(m));
          n_drained_.fetch_add(1, std::memory_order_relaxed);
        },
        [this](size_t need) { return RecvBuffer(need); });
    if (r == RingReader::Result::kTooLong) {
      spdlog::error("shm: node {}: a message of {} bytes from node {} (at most {}); cutting it off", self(),
                    p.reader.want(), s, kMaxMessage);
      head = tail;
      NoteGone(s);
    }
    h.head.store(head, std::memory_order_seq_cst);
    did = true;
    if (h.sender_waits.load(std::memory_order_seq_cst) != 0 && !gone(s)) WakeIfIdle(s);
  }
  if (did) WakeConsumer();
  return did;
}

// ---- locks ----

WcStatus ShmNicImpl::Lock(CompletionQueue* cq, const WorkRequest& wr, bool* now) {
  LockWord& w = *layout_.lock(peers_[wr.peer].control, wr.lock);
  const uint64_t old = w.tickets.fetch_add(kOneTicket, std::memory_order_acq_rel);
  const uint32_t ticket = uint32_t(old >> 32);
  std::lock_guard<std::mutex> l(locks_mu_);
  if (Served(old) == ticket) {
    w.owner.store(self() + 1, std::memory_order_release);
    held_.emplace_back(wr.peer, wr.lock);
    *now = true;
    return WcStatus::kSuccess;
  }
  waits_.push_back({wr.peer, wr.lock, ticket, cq, wr.wr_id, wr.signaled});
  waits_count_.fetch_add(1, std::memory_order_relaxed);
  bell(self()).lock_waits.fetch_add(1, std::memory_order_seq_cst);
  if (cq->driver_id() != driver_.get()) cq->set_driver(driver_);
  *now = false;
  // Served while we registered: the releaser may have seen no waiter to wake.
  if (Served(w.tickets.load(std::memory_order_seq_cst)) == ticket) WakeSelf();
  return WcStatus::kSuccess;
}

WcStatus ShmNicImpl::Unlock(const WorkRequest& wr) {
  uint8_t* target = peers_[wr.peer].control;
  LockWord& w = *layout_.lock(target, wr.lock);
  uint64_t me = self() + 1;
  if (!w.owner.compare_exchange_strong(me, 0, std::memory_order_acq_rel)) return WcStatus::kRemoteInvalidRequest;
  {
    std::lock_guard<std::mutex> l(locks_mu_);
    auto it = std::find(held_.begin(), held_.end(), std::make_pair(wr.peer, wr.lock));
    if (it != held_.end()) held_.erase(it);
  }
  ServeNext(w);
  return WcStatus::kSuccess;
}

// Serves the next ticket (the low half wraps without carrying into the high
// half) and wakes the nodes that wait for some lock, if any waits here.
void ShmNicImpl::ServeNext(LockWord& w) {
  uint64_t old = w.tickets.load(std::memory_order_relaxed), next;
  do {
    next = (old & ~kServedMask) | uint32_t(Served(old) + 1);
  } while (!w.tickets.compare_exchange_weak(old, next, std::memory_order_seq_cst));
  WakeLockWaiters(next);
}

void ShmNicImpl::WakeLockWaiters(uint64_t tickets) {
  if (uint32_t(tickets >> 32) == Served(tickets)) return;  // nobody queued
  for (NodeId k = 0; k < num_nodes(); ++k) {
    if (peers_[k].control == nullptr || gone(k)) continue;
    if (bell(k).lock_waits.load(std::memory_order_seq_cst) != 0) WakeIfIdle(k);
  }
}

bool ShmNicImpl::GrantLocks() {
  if (waits_count_.load(std::memory_order_relaxed) == 0) return false;
  std::unique_lock<std::mutex> l(locks_mu_, std::try_to_lock);
  if (!l) return false;
  bool did = false;
  for (size_t i = 0; i < waits_.size();) {
    const LockWait lw = waits_[i];
    WcStatus st;
    if (gone(lw.target) || bell(lw.target).gone.load(std::memory_order_acquire) != 0) {
      st = WcStatus::kFlushed;
    } else {
      LockWord& w = *layout_.lock(peers_[lw.target].control, lw.lock);
      if (Served(w.tickets.load(std::memory_order_acquire)) != lw.ticket) {
        ++i;
        continue;
      }
      w.owner.store(self() + 1, std::memory_order_release);
      held_.emplace_back(lw.target, lw.lock);
      st = WcStatus::kSuccess;
    }
    waits_[i] = waits_.back();
    waits_.pop_back();
    waits_count_.fetch_sub(1, std::memory_order_relaxed);
    bell(self()).lock_waits.fetch_sub(1, std::memory_order_seq_cst);
    if (lw.signaled || st != WcStatus::kSuccess) {
      Completion c;
      c.wr_id = lw.wr_id;
      c.op = Opcode::kLock;
      c.peer = lw.target;
      c.status = st;
      lw.cq->Push(c);
    }
    did = true;
  }
  return did;
}

// A peer that shut down with LOCKs still queued left their tickets in its
// Abandoned table: when one comes up, a survivor serves past it (the CAS lets
// exactly one of them do so).
bool ShmNicImpl::SkipAbandoned() {
  if (skip_count_.load(std::memory_order_relaxed) == 0) return false;
  std::unique_lock<std::mutex> l(locks_mu_, std::try_to_lock);
  if (!l) return false;
  bool did = false;
  for (size_t i = 0; i < skip_.size();) {
    const Abandoned a = skip_[i];
    if (a.target >= num_nodes() || a.lock >= kMaxLocks || peers_[a.target].control == nullptr || gone(a.target)) {
      skip_[i] = skip_.back();
      skip_.pop_back();
      continue;
    }
    uint8_t* target = peers_[a.target].control;
    LockWord& w = *layout_.lock(target, a.lock);
    uint64_t old = w.tickets.load(std::memory_order_acquire);
    const int32_t ahead = int32_t(a.ticket - Served(old));
    if (ahead > 0) {
      ++i;
      continue;
    }
    if (ahead == 0) {
      const uint64_t next = (old & ~kServedMask) | uint32_t(Served(old) + 1);
      if (!w.tickets.compare_exchange_strong(old, next, std::memory_order_seq_cst)) continue;  // look again
      WakeLockWaiters(next);
      did = true;
    }
    skip_[i] = skip_.back();
    skip_.pop_back();
  }
  skip_count_.store(skip_.size(), std::memory_order_relaxed);
  return did;
}

// ---- progress and wake-ups ----

bool ShmNicImpl::Progress() {
  bool did = Drain();
  did |= FlushBacklogs();
  did |= GrantLocks();
  did |= SkipAbandoned();
  return did;
}

bool ShmNicImpl::WorkVisible() {
  if (MessagesWaiting()) return true;
  for (NodeId s = 0; backlogs_.load(std::memory_order_relaxed) != 0 && s < num_nodes(); ++s) {
    Peer& p = peers_[s];
    if (s != self() && p.has_backlog.load(std::memory_order_relaxed) && p.control != nullptr) {
      RingHead& theirs = *layout_.head(p.control, self());
      if (theirs.tail.load(std::memory_order_relaxed) - theirs.head.load(std::memory_order_seq_cst) <
          layout_.ring_bytes)
        return true;
    }
  }
  if (waits_count_.load(std::memory_order_relaxed) != 0 || skip_count_.load(std::memory_order_relaxed) != 0) {
    std::lock_guard<std::mutex> l(locks_mu_);
    for (const LockWait& lw : waits_) {
      if (bell(lw.target).gone.load(std::memory_order_acquire) != 0) return true;
      if (Served(layout_.lock(peers_[lw.target].control, lw.lock)->tickets.load(std::memory_order_seq_cst)) ==
          lw.ticket)
        return true;
    }
    for (const Abandoned& a : skip_) {
      if (a.target < num_nodes() && peers_[a.target].control != nullptr && a.lock < kMaxLocks &&
          Served(layout_.lock(peers_[a.target].control, a.lock)->tickets.load(std::memory_order_seq_cst)) ==
              a.ticket)
        return true;
    }
  }
  return false;
}

void ShmNicImpl::WakeIfIdle(NodeId node) {
  Bell& b = bell(node);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (b.pollers.load(std::memory_order_seq_cst) != 0) return;
  b.seq.fetch_add(1, std::memory_order_seq_cst);
  FutexWake(&b.seq);
  n_wakeups_.fetch_add(1, std::memory_order_relaxed);
}

// A message for `node` (in its ring, or pushed to its queue): nobody to wake
// while one of its threads polls; else its queue's sleeping consumer, which
// drains the rings itself; else its NIC thread.
void ShmNicImpl::WakeForMessage(NodeId node) {
  Bell& b = bell(node);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (b.pollers.load(std::memory_order_seq_cst) != 0) return;
  if (b.recv_sleepers.load(std::memory_order_seq_cst) != 0) {
    WakeRecv(b);
    if (node != self()) n_wakeups_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (node != self()) WakeIfIdle(node);
}

// One sleeper on b's receive futex: a kWaiter if one counts. A counted
// waiter either sleeps (this wakes it) or was woken and has not yet
// stopped counting: it drives after it does (SleepReady's callers), and
// the message, published before this look, is its. Waking the consumer
// instead (it slept first, and a plain wake picks it) would cost the
// consumer's switch for nothing: 0.5 a barrier on 4 nodes sharing 2 CPUs,
// where arrivals come faster than the woken waiter runs.
void ShmNicImpl::WakeRecv(Bell& b) {
  b.recv_seq.fetch_add(1, std::memory_order_seq_cst);
  if (b.recv_waiters.load(std::memory_order_seq_cst) != 0)
    FutexWakeAs(&b.recv_seq, 1, SleepRole::kWaiter);
  else
    FutexWake(&b.recv_seq);
}

// Items just pushed to the receive queue: its consumer, if it sleeps on its
// own (Driver::Sleep), must wake whoever pushed them. Not WakeForMessage,
// whose "a poller drains the rings" is no help here: the drainer is that
// poller (the NIC thread, a waiting thread), and the items sat in the queue
// until the consumer's sleep timed out (kSleepSlice). Not while a thread
// watches the queue (WaitQueue::Watch): it takes them.
void ShmNicImpl::WakeConsumer() {
  if (!recv_queue().watched()) WakeRecvSleeper();
}

void ShmNicImpl::WakeRecvSleeper() {
  Bell& b = bell(self());
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (b.recv_sleepers.load(std::memory_order_seq_cst) == 0) return;
  WakeRecv(b);
}

bool ShmNicImpl::MessagesWaiting() {
  uint8_t* own = peers_[self()].control;
  for (NodeId s = 0; s < num_nodes(); ++s) {
    if (s == self()) continue;
    RingHead& h = *layout_.head(own, s);
    if (h.tail.load(std::memory_order_seq_cst) != h.head.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

void ShmNicImpl::WakeSelf() {
  Bell& b = bell(self());
  b.seq.fetch_add(1, std::memory_order_seq_cst);
  FutexWake(&b.seq);
}

void ShmNicImpl::NoteGone(NodeId node) {
  if (node == self() || peers_[node].lost.exchange(true, std::memory_order_acq_rel)) return;
  spdlog::debug("shm: node {}: node {} is gone", self(), node);
  const Bell& b = bell(node);
  if (b.gone.load(std::memory_order_acquire) == 0) return;
  const uint32_t count = std::min(b.abandoned.load(std::memory_order_acquire), kMaxAbandoned);
  std::lock_guard<std::mutex> l(locks_mu_);
  for (uint32_t i = 0; i < count; ++i) skip_.push_back(*layout_.abandoned_at(peers_[node].control, i));
  skip_count_.store(skip_.size(), std::memory_order_relaxed);
}

// A peer is gone when it says so (RingHead::sender_gone, in this node's
// memory) or its set-up socket closes (the process died).
void ShmNicImpl::CheckLinks() {
  uint8_t* own = peers_[self()].control;
  for (NodeId k = 0; k < num_nodes(); ++k) {
    // Its Bell says so last, after its abandoned tickets (NoteGone's).
    if (k != self() && !gone(k) && layout_.head(own, k)->sender_gone.load(std::memory_order_acquire) != 0 &&
        bell(k).gone.load(std::memory_order_acquire) != 0)
      NoteGone(k);
  }
  if (!links_epoll_.valid()) return;
  epoll_event ready[16];
  const int n = epoll_wait(links_epoll_.get(), ready, int(std::size(ready)), 0);
  for (int i = 0; i < n; ++i) {
    const NodeId k = ready[i].data.u32;
    Peer& p = peers_[k];
    char c;
    if (read(p.link.get(), &c, 1) > 0) continue;  // a byte, not the end
    epoll_ctl(links_epoll_.get(), EPOLL_CTL_DEL, p.link.get(), nullptr);
    NoteGone(k);
  }
}

void ShmNicImpl::NicThread() {
  pthread_setname_np(pthread_self(), "svm-nic-shm");
  Bell& b = bell(self());
  auto last_work = Clock::now();
  auto last_check = last_work;
  while (!stop_.load(std::memory_order_acquire)) {
    if (Progress()) {
      last_work = Clock::now();
      continue;
    }
    const auto now = Clock::now();
    if (now - last_check >= kSleepSlice) {
      CheckLinks();
      last_check = now;
    }
    if (now - last_work < opt_.nic_spin) {
      internal::CpuRelax();
      continue;
    }
    const uint32_t seen = b.seq.load(std::memory_order_seq_cst);
    b.pollers.fetch_sub(1, std::memory_order_seq_cst);
    if (!WorkVisible() && !stop_.load(std::memory_order_acquire)) FutexWait(&b.seq, seen, kSleepSlice);
    b.pollers.fetch_add(1, std::memory_order_seq_cst);
    last_work = Clock::now();
  }
}

bool ShmNicImpl::Driver::Drive() {
  std::unique_lock<std::mutex> l(mu_, std::try_to_lock);
  return l && nic_ != nullptr && nic_->Progress();
}

void ShmNicImpl::Driver::Enter() {
  std::lock_guard<std::mutex> l(mu_);
  if (nic_ != nullptr) nic_->bell(nic_->self()).pollers.fetch_add(1, std::memory_order_seq_cst);
}

void ShmNicImpl::Driver::Leave(bool) {
  std::lock_guard<std::mutex> l(mu_);
  if (nic_ == nullptr) return;
  if (nic_->bell(nic_->self()).pollers.fetch_sub(1, std::memory_order_seq_cst) == 1 && nic_->WorkVisible())
    nic_->WakeSelf();
}

bool ShmNicImpl::Driver::Sleep(std::chrono::nanoseconds timeout, const std::function<bool()>& ready, SleepRole role) {
  ShmNicImpl* nic;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!sleeps_ || nic_ == nullptr) return false;
    nic = nic_;
    ++in_sleep_;
  }
  Bell& b = nic->bell(nic->self());
  const uint32_t seen = b.recv_seq.load(std::memory_order_seq_cst);
  const bool waiter = role == SleepRole::kWaiter;
  if (waiter) b.recv_waiters.fetch_add(1, std::memory_order_seq_cst);
  b.recv_sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (!ready() && !nic->MessagesWaiting())
    FutexWaitAs(&b.recv_seq, seen, std::min<std::chrono::nanoseconds>(timeout, kSleepSlice), role);
  b.recv_sleepers.fetch_sub(1, std::memory_order_seq_cst);
  if (waiter) b.recv_waiters.fetch_sub(1, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> l(mu_);
  --in_sleep_;
  cv_.notify_all();
  return true;
}

void ShmNicImpl::Driver::WakeWaiters() {
  std::lock_guard<std::mutex> l(mu_);
  if (nic_ == nullptr) return;
  Bell& b = nic_->bell(nic_->self());
  b.recv_seq.fetch_add(1, std::memory_order_seq_cst);
  FutexWakeAs(&b.recv_seq, INT32_MAX, SleepRole::kWaiter);
}

void ShmNicImpl::Driver::WakeSleeper() {
  std::lock_guard<std::mutex> l(mu_);
  if (nic_ != nullptr) nic_->WakeRecvSleeper();
}

void ShmNicImpl::Driver::Interrupt() {
  std::lock_guard<std::mutex> l(mu_);
  if (nic_ == nullptr) return;
  Bell& b = nic_->bell(nic_->self());
  b.recv_seq.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&b.recv_seq), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void ShmNicImpl::Driver::Detach() {
  Interrupt();
  std::unique_lock<std::mutex> l(mu_);
  nic_ = nullptr;
  // A sleeper that read the futex word after the interrupt sits out its
  // slice (kSleepSlice at most).
  cv_.wait(l, [this] { return in_sleep_ == 0; });
}

// ---- shutdown ----

void ShmNicImpl::Shutdown() {
  if (shut_.exchange(true, std::memory_order_acq_rel)) return;
  if (!started_) return;
  stop_.store(true, std::memory_order_release);
  WakeSelf();
  if (nic_thread_.joinable()) nic_thread_.join();
  driver_->Detach();
  recv_driver_->Detach();
  uint8_t* own = peers_[self()].control;
  std::vector<std::pair<NodeId, LockNo>> held;
  std::vector<LockWait> waits;
  {
    std::lock_guard<std::mutex> l(locks_mu_);
    held.swap(held_);
    waits.swap(waits_);
    waits_count_.store(0, std::memory_order_relaxed);
  }
  // Its queued tickets are left for the survivors to serve past; the locks
  // it holds at other nodes pass on. Locks served here stay held: their
  // waiters see this node gone and complete kFlushed.
  uint32_t n = 0;
  for (const LockWait& lw : waits) {
    if (n < kMaxAbandoned) *layout_.abandoned_at(own, n++) = {lw.target, lw.lock, lw.ticket, 0};
    Completion c;
    c.wr_id = lw.wr_id;
    c.op = Opcode::kLock;
    c.peer = lw.target;
    c.status = WcStatus::kFlushed;
    lw.cq->Push(c);
  }
  Bell& b = bell(self());
  b.abandoned.store(n, std::memory_order_release);
  for (NodeId k = 0; k < num_nodes(); ++k)
    if (k != self() && peers_[k].control != nullptr)
      layout_.head(peers_[k].control, self())->sender_gone.store(1, std::memory_order_seq_cst);
  b.gone.store(1, std::memory_order_seq_cst);
  for (auto [target, lock] : held) {
    if (target == self() || gone(target) || peers_[target].control == nullptr) continue;
    LockWord& w = *layout_.lock(peers_[target].control, lock);
    uint64_t me = self() + 1;
    if (w.owner.compare_exchange_strong(me, 0, std::memory_order_acq_rel)) ServeNext(w);
  }
  for (NodeId k = 0; k < num_nodes(); ++k) {
    if (k == self() || peers_[k].control == nullptr) continue;
    Bell& theirs = bell(k);
    theirs.seq.fetch_add(1, std::memory_order_seq_cst);
    FutexWake(&theirs.seq);
  }
  for (Peer& p : peers_) p.link.reset();
}

ShmNic::Counters ShmNicImpl::counters() const {
  Counters c;
  c.remote_ops = n_remote_.load(std::memory_order_relaxed);
  c.sends = n_sends_.load(std::memory_order_relaxed);
  c.wakeups = n_wakeups_.load(std::memory_order_relaxed);
  c.drained = n_drained_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace svm::nic::shm
