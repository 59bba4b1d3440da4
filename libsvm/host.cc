// Runtime as the protocol's Host: messages, frames, protection, wake-ups; and
// the fault path that drives the Node on behalf of a faulting thread.
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "control/control_client.h"
#include "libsvm/fragment.h"
#include "libsvm/runtime.h"
#include "libsvm/runtime_state.h"
#include "libsvm/stats.h"
#include "libsvm/thread_state.h"

namespace svm::rt {
namespace {

thread_local int t_slot __attribute__((tls_model("initial-exec"))) = -1;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Polling waits: the first nap is short (a READ on loopback takes tens of
// µs), later ones longer, up to kNapNs.
constexpr int64_t kMinNapNs = 50'000;
constexpr int64_t kNapNs = 1'000'000;
// A thread with nothing to poll sleeps until woken, but looks again after
// this long in case polling became needed (the handler thread polls too).
constexpr int64_t kSleepNs = 10'000'000;

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns) {
  timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace

void Die(const std::string& what) {
  spdlog::critical("{}", what);
  _exit(70);
}

ThreadId Runtime::SlotOfCaller() {
  if (t_slot >= 0) return ThreadId(t_slot);
  if (!free_slots_.empty()) {
    t_slot = int(free_slots_.back());
    free_slots_.pop_back();
  } else {
    if (slots_used_ == kMaxSlots) Die(fmt::format("more than {} threads on one node", kMaxSlots));
    t_slot = int(slots_used_++);
  }
  live_slots_.fetch_add(1, std::memory_order_relaxed);
  return ThreadId(t_slot);
}

void Runtime::ReleaseSlotOfCaller() {
  if (t_slot < 0) return;
  node_->ThreadExited(ThreadId(t_slot));  // no barrier gathers for it
  Settle();
  free_slots_.push_back(ThreadId(t_slot));
  live_slots_.fetch_sub(1, std::memory_order_relaxed);
  t_slot = -1;
}

// Spins up to spin_ns handling protocol messages (a reply that comes
// meanwhile costs no wake-up), then sleeps until woken or timeout_ns passed.
// REQUIRES: mu_ not held.
void Runtime::Sleep(Slot& s, int64_t timeout_ns) {
  s.asleep.store(kOnWake, std::memory_order_seq_cst);
  if (s.wake.load(std::memory_order_seq_cst) == 0) FutexWait(&s.wake, 0, timeout_ns);
  s.asleep.store(0, std::memory_order_relaxed);
}

void Runtime::SpinThenSleep(Slot& s, int64_t spin_ns, int64_t timeout_ns) {
  std::atomic<uint32_t>& w = s.wake;
  auto woken = [&w] { return w.load(std::memory_order_acquire) != 0; };
  // One spinner per node: it handles the messages for every waiter, and
  // more spinners only take the CPUs from the threads they wait for.
  // On a host with more nodes than CPUs the thread we wait for may need
  // this CPU: sleep at once (spin_, SVM_SPIN). So too in a one-node job
  // with more threads than CPUs (Crowded).
  const bool spin = spinning_waiters_.fetch_add(1, std::memory_order_relaxed) == 0 && spin_ && !Crowded();
  const bool adapt = spin_ns == kAdaptiveSpin && spin && spin_long_;
  if (spin_ns == kAdaptiveSpin) spin_ns = s.spin_ns;
  const int64_t start = NowNs();
  const int64_t until = spin ? start + spin_ns : 0;
  {
    // The messages that come while we spin are ours to dispatch: they need
    // not wake the handler thread, which would only take this CPU from us.
    std::optional<nic::RecvQueue::Watch> watch;
    if (spin && nic_ != nullptr) watch.emplace(&nic_->recv_queue());
    for (int64_t now = start; !woken() && now < until; now = NowNs()) {
      if (nic_ == nullptr) {
        __builtin_ia32_pause();
      } else if (nic_->recv_queue().SpinReady(std::chrono::nanoseconds(until - now), woken) &&
                 !woken() && !DispatchWhileWaiting()) {
        nic_->recv_queue().WakeSleeper();  // the handler thread has the next message
        sched_yield();
      }
    }
  }
  spinning_waiters_.fetch_sub(1, std::memory_order_relaxed);
  if (woken()) return;
  if (!SleepOnQueue(s, timeout_ns)) Sleep(s, timeout_ns);
  if (!adapt) return;
  const int64_t took = NowNs() - start;
  s.spin_ns = woken() && took < kMaxWaitSpinNs ? std::clamp(took + took / 4, s.spin_ns, kMaxWaitSpinNs)
                                                : std::max(kWaitSpinNs, s.spin_ns / 2);
}

// The message a thread waits for comes to the node's receive queue, and the
// thread that takes it there (the handler) would wake this one: two
// wake-ups, each ~10 us where nodes share CPUs. Asleep as the queue's
// waiter, this thread is woken by the message and handles it itself.
// Only where the node runs one program thread: with more, the node's
// runtime messages (a condition's SyncWake for a sibling) wake the waiter
// first, which must leave them to the handler and wake it, a switch more
// (10^5 signals through a condition on 4 x 2: 230 -> 281 us an item).
bool Runtime::SleepOnQueue(Slot& s, int64_t timeout_ns) {
  if (nic_ == nullptr || opts_.threads_per_node > 1 || s.off_queue ||
      queue_waiter_.exchange(true, std::memory_order_acquire))
    return false;
  nic::RecvQueue& q = nic_->recv_queue();
  auto woken = [&s] { return s.wake.load(std::memory_order_acquire) != 0; };
  s.asleep.store(kOnQueue, std::memory_order_seq_cst);
  const bool slept = q.SleepReady(std::chrono::nanoseconds(timeout_ns), woken);
  s.asleep.store(0, std::memory_order_relaxed);
  bool left = false;
  if (slept) {
    // Our own pushes wake nobody; one left at the end (a runtime message, or
    // the handler dispatching) wakes the handler as the Watch goes.
    nic::RecvQueue::Watch watch(&q);
    q.DriveAndTake([this] { DispatchWhileWaiting(); });
    left = q.size() != 0;
    // Woken for others' requests (a home serving fetches), with CPUs to
    // spin: a stream the handler serves better, its spin after each
    // message catching the next, where a waiter sleeps between them (shm
    // base re-reads 29.5 -> 44.8 us a page). Where nobody spins, every
    // message is a wake-up either way.
    if (spin_ && !woken()) s.off_queue = true;
  }
  queue_waiter_.store(false, std::memory_order_release);
  // Back to the caller after one wake-up: it spins again before it sleeps
  // (more messages of the same exchange tend to follow, as the handler's
  // spin after a wake-up catches them).
  return slept && !left;
}

void Runtime::WaitSlot(std::unique_lock<std::mutex>& lock, ThreadId t, int64_t spin_ns,
                       int64_t deadline_ns) {
  Settle();
  slots_[t].off_queue = false;
  std::atomic<uint32_t>& w = slots_[t].wake;
  stats::WaitScope waiting;
  int64_t nap_ns = kMinNapNs;
  while (w.load(std::memory_order_acquire) == 0) {
    const int64_t left = deadline_ns - NowNs();
    if (left <= 0) break;
    if (!poll_hint_.load(std::memory_order_relaxed)) {
      // Nothing to poll for: spin, then sleep until woken (or a while
      // passed, in case polling became needed meanwhile).
      lock.unlock();
      SpinThenSleep(slots_[t], spin_ns, std::min(kSleepNs, left));
      lock.lock();
      if (w.load(std::memory_order_acquire) != 0) break;
      Settle();
      continue;
    }
    // One-sided operations in flight (this thread's page read, a NIC lock),
    // or the Node polls: wait on their completions here, driving the NIC
    // from this thread, and run them.
    const bool in_flight = !os_ops_.empty();
    lock.unlock();
    nic::Completion done[32];
    size_t n = 0;
    bool news = false;
    if (in_flight) {
      n = os_cq_.Wait(done, std::chrono::nanoseconds(nap_ns));
    } else {
      // Only the Node polls (deposits or versions it waits for): nothing
      // signals their arrival, so watch the rings for a while, then nap.
      const int64_t until = NowNs() + std::min(nap_ns, kWaitSpinNs);
      while (w.load(std::memory_order_acquire) == 0 && !(news = rings_ && rings_->Pending()) &&
             NowNs() < until)
        __builtin_ia32_pause();
      if (!news && nap_ns > kWaitSpinNs && w.load(std::memory_order_acquire) == 0)
        Sleep(slots_[t], nap_ns - kWaitSpinNs);
    }
    lock.lock();
    nap_ns = n > 0 || news ? kMinNapNs : std::min(2 * nap_ns, kNapNs);
    if (n > 0) OnOneSided({done, n});
    PollOneSided();
    Settle();
  }
}

void Runtime::Settle() {
  ReapSends();
  poll_hint_.store(!os_ops_.empty() || !deferred_reads_.empty() || node_->NeedsPoll(),
                   std::memory_order_relaxed);
  // Stored only when it changes: Settle runs after every Node call, and the
  // handler reads the word.
  const bool was_holding = holding_since_ns_.load(std::memory_order_relaxed) != 0;
  if (node_->Holding() != was_holding) {
    holding_since_ns_.store(was_holding ? 0 : NowNs(), std::memory_order_relaxed);
    // The handler gives a hold up (kGatherNs) and learns of it between its
    // waits, which last 200 ms when idle: one begun on another thread (a
    // program thread's arrival, or a message it dispatched while waiting)
    // wakes it with a message that does nothing (no object 0 has waiters).
    if (!was_holding && std::this_thread::get_id() != handler_.get_id()) SendMessage(self(), SyncWake{0});
  }
}

void Runtime::Wake(ThreadId t) {
  Slot& s = slots_[t];
  s.wake.store(1, std::memory_order_seq_cst);
  const uint32_t where = s.asleep.load(std::memory_order_seq_cst);
  if (where == 0) return;
  if (defer_wakes_) {
    deferred_wakes_.push_back(t);
    return;
  }
  WakeAsleep(s, where);
}

void Runtime::WakeAsleep(Slot& s, uint32_t where) {
  if (where == kOnQueue)
    nic_->recv_queue().WakeWaiters();
  else if (where == kOnWake)
    FutexWake(&s.wake);
}

void Runtime::WakeDeferred() {
  for (ThreadId t : deferred_wakes_) WakeAsleep(slots_[t], slots_[t].asleep.load(std::memory_order_seq_cst));
  deferred_wakes_.clear();
}

// Runs in the faulting thread (uffd, mprotect: inside the signal handler) or
// on the trap's thread (uffd-thread).
void Runtime::OnFault(PageId p, Access a) {
  RuntimeScope scope;
  stats::Scope timing(stats::Category::kDataProtocol);
  // The kernel delivered the fault before this ran, in this thread (0 under
  // uffd-thread, where this runs on the trap's thread: see Start).
  timing.ClaimEarlier(stats::FaultDeliveryNs());
  if (stats::ThreadStats* st = stats::Current())
    st->Count(a == Access::kWrite ? stats::Counter::kWriteFaults : stats::Counter::kReadFaults);
  std::unique_lock<std::mutex> lock(mu_);
  const ThreadId t = SlotOfCaller();
  const uint64_t protections = node_->stats().protections;
  RunToCompletion(
      lock, t,
      [&] {
        stats::NodeCall call(node_->stats());
        PostBatch posts(this);
        return node_->Fault(t, p, a);
      },
      kFaultSpinNs);
  // The Node saw nothing to change: the kernel dropped the mapping, or the
  // fault raced with another thread's; re-install what the Node wants.
  if (node_->stats().protections == protections) {
    Segment& s = SegmentOf(p);
    s.trap->Protect(p - s.first, 1, s.trap->prot(p - s.first));
  }
  Settle();
}

Runtime::Segment& Runtime::SegmentOf(PageId p) {
  for (auto& s : segments_)
    if (p >= s->first && p < s->first + s->pages()) return *s;
  Die(fmt::format("page {} is in no shared segment", p));
}

bool Runtime::IsShared(const void* addr) const {
  for (const auto& s : segments_)
    if (s->region->Contains(addr)) return true;
  return false;
}

void Runtime::PrepareBuffer(const void* addr, size_t len, Access a) {
  if (len == 0 || !prim::NeedsPrefault(opts_.fault)) return;
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  for (const auto& s : segments_) {
    const auto b = reinterpret_cast<uintptr_t>(s->region->app());
    const uintptr_t e = b + s->region->size();
    const uintptr_t from = std::max(lo, b), to = std::min(lo + len, e);
    if (from < to) prim::Prefault(reinterpret_cast<void*>(from), to - from, a);
  }
}

void Runtime::Send(NodeId to, std::vector<uint8_t> bytes) {
  if (bytes.size() <= opts_.max_send) return PostSend(to, std::move(bytes));
  for (std::vector<uint8_t>& f : Fragment(std::move(bytes), opts_.max_send)) PostSend(to, std::move(f));
}

std::vector<uint8_t> Runtime::SendBuffer() { return send_buffers_.Take(); }

void Runtime::PostSend(NodeId to, std::vector<uint8_t> bytes) {
  uint32_t id;
  if (free_send_slots_.empty()) {
    id = uint32_t(in_flight_.size());
    in_flight_.emplace_back();
  } else {
    id = free_send_slots_.back();
    free_send_slots_.pop_back();
  }
  std::vector<uint8_t>& buf = in_flight_[id];
  std::swap(buf, bytes);
  send_buffers_.Give(std::move(bytes));  // the slot's storage from its last send
  nic::Sge sge{buf.data(), uint32_t(buf.size())};
  const nic::WorkRequest wr = nic::WorkRequest::Send(to, {&sge, 1}, id);
  if (Status st = nic_->Post(&send_cq_, {&wr, 1}); !st.ok())
    NetworkFailed(fmt::format("sending {} bytes to node {} failed: {}", buf.size(), to, st.ToString()));
}

// Once the job is exiting the NIC is shut down and the other nodes are gone;
// a thread still talking to them just waits for the process to end. So does
// one that lost a peer as the job ends elsewhere: a node that has exited
// breaks its connections before svmrun's TERMINATE reaches the others (a
// message sent to it is flushed, and its peers died of that with a critical
// line after a clean run). Only a loss that svmrun does not follow with the
// end of the job within kEndOfJobGrace is a failure of this node's.
void Runtime::NetworkFailed(const std::string& what) {
  pollfd p{svmd::TerminateFd(), POLLIN, 0};
  const bool ending = exiting_.load() || (p.fd >= 0 && poll(&p, 1, int(kEndOfJobGrace.count())) > 0);
  if (!ending) Die(what);
  while (true) pause();  // the OnTerminate callback ends the process
}

void Runtime::ReapSends() {
  nic::Completion done[32];
  while (size_t n = send_cq_.Poll(done)) {
    for (size_t i = 0; i < n; ++i) {
      if (done[i].status != nic::WcStatus::kSuccess)
        NetworkFailed(fmt::format("message to node {} lost: {}", done[i].peer,
                                  nic::ToString(done[i].status)));
      in_flight_[done[i].wr_id].clear();  // its storage serves a later send
      free_send_slots_.push_back(uint32_t(done[i].wr_id));
    }
  }
}

std::span<uint8_t> Runtime::Frame(PageId p) {
  Segment& s = SegmentOf(p);
  const size_t page = s.region->page_size();
  return {reinterpret_cast<uint8_t*>(s.region->ProtoPage(p - s.first)), page};
}

PageId Runtime::FramesEnd(PageId p) {
  Segment& s = SegmentOf(p);
  return s.first + s.pages();
}

// A run may cross from one segment into the next, or past the globals' last
// page into ids no memory backs (the Node maps runs ahead): only the pages
// that exist are visited.
template <typename Op>
void Runtime::ForTrappedPages(PageId first, size_t count, Op op) {
  const PageId end = first + count;
  for (auto& s : segments_) {
    const PageId from = std::max(first, s->first), to = std::min(end, s->first + s->pages());
    if (from < to && s->trap) op(*s, from - s->first, to - from);
  }
}

void Runtime::Protect(PageId first, size_t count, Prot prot) {
  stats::Scope timing(stats::Category::kProtect);
  ForTrappedPages(first, count, [&](Segment& s, PageId from, size_t n) {
    if (int err = s.trap->Protect(from, n, prot); err != 0) Die(s.trap->ProtectStatus(from, n, prot).ToString());
  });
}

void Runtime::Populate(std::span<uint8_t> memory) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; Debian 12's headers lack it
#endif
  // A huge page costs a third less to commit than its 512 small ones here
  // (a cold page run commits a twin a page).
  if (memory.size() >= kHugePageBytes && reinterpret_cast<uintptr_t>(memory.data()) % kHugePageBytes == 0)
    (void)madvise(memory.data(), memory.size() / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  (void)madvise(memory.data(), memory.size(), MADV_POPULATE_WRITE);  // a hint: errors cost only faults
}

size_t Runtime::Fill(PageId first, size_t count, std::span<const uint8_t> data, Prot prot) {
  stats::Scope timing(stats::Category::kProtect);
  Segment& s = SegmentOf(first);
  if (!s.trap || count > s.first + s.pages() - first) return 0;
  return s.trap->Fill(first - s.first, count, data.data(), prot);
}

bool Runtime::Fills() const { return opts_.fault != prim::Backend::kMprotect; }

void Runtime::FindWritten(PageId first, size_t count, std::vector<PageId>* written) {
  stats::Scope timing(stats::Category::kProtect);
  ForTrappedPages(first, count, [&](Segment& s, PageId from, size_t n) {
    const size_t old = written->size();
    if (int err = s.trap->FindWritten(from, n, written); err != 0)
      Die(fmt::format("finding the written pages of [{}, {}): {}", s.first + from, s.first + from + n,
                      std::strerror(err)));
    for (size_t i = old; i < written->size(); ++i) (*written)[i] += s.first;
  });
}

}  // namespace svm::rt

namespace svm::rt {

namespace {
thread_local LockId t_last_released = 0;  // by this thread: LookForRequests
thread_local int64_t t_released_ns = 0;  // and when

// The runtime's own locks (pinned: a thread's birth and death) are part of
// starting and joining threads, and their waits are the joiner's; the
// program's locks are lock time.
stats::Category TimeOf(LockId l) {
  return IsPinnedLock(l) ? stats::Category::kThreads : stats::Category::kLockProtocol;
}
}  // namespace

// A thread that re-takes the lock it just released, whose token came from
// another node, may be waiting for that node's turn, and that node's request
// may sit unread in this node's sockets or rings (the NIC and handler
// threads that would read them share the CPU with this one; a strict
// alternation over tcp took 0.5 ms a hand-off, a scheduler slice) or not be
// sent yet (that node's thread waits for its node's mutex while its handler
// serves the new holder's fetch). So it looks first, and waits a little
// for its first immediate re-takes. Only the releaser's own re-take:
// looking at any take handed locks away from barnes and water-nsquared and
// slowed them (doc/locks.md).
void Runtime::LookForRequests(std::unique_lock<std::mutex>& lock, LockId l) {
  if (l != t_last_released || !node_->MayBeWanted(l) || nic_ == nullptr) return;
  // Only where each node has a CPU: where nodes share CPUs the requester
  // may need this one, and a look at the rings may wake the NIC thread
  // (10^5 lock pairs on 4 x 2 on 2 CPUs took 5x as long with the waits).
  // There, over tcp, a yield lets a NIC thread with something to read run
  // first; shm's rings need no thread.
  if (!spin_long_ || Crowded()) {
    if (opts_.transport == "shm") return;
    lock.unlock();
    sched_yield();
    HeedNudge();
    lock.lock();
    return;
  }
  // Every such re-take drives the transport once; the first kRequestWaits
  // since the token came, each right after its release (a lock polled for
  // a turn), also wait for a request, kRequestWaitNs and doubling.
  const uint32_t n = node_->TakesSinceArrival(l);
  const bool polling = n < kRequestWaits && NowNs() - t_released_ns < kRequestWaitNs;
  const int64_t until = polling ? NowNs() + (kRequestWaitNs << n) : 0;
  const uint64_t seen = lock_requests_in_.load(std::memory_order_acquire);
  auto request_in = [&] { return lock_requests_in_.load(std::memory_order_acquire) != seen; };
  do {
    lock.unlock();
    const int64_t left = std::max<int64_t>(until - NowNs(), 0);
    if (nic_->recv_queue().SpinReady(std::chrono::nanoseconds(left), request_in) && !request_in() &&
        !DispatchWhileWaiting()) {
      nic_->recv_queue().WakeSleeper();  // a runtime message: the handler's
      sched_yield();
    }
    lock.lock();
  } while (NowNs() < until && node_->MayBeWanted(l));
}

void Runtime::Acquire(LockId l) {
  RuntimeScope scope;
  stats::Scope timing(TimeOf(l));
  if (stats::ThreadStats* st = stats::Current()) st->Count(stats::Counter::kAcquires);
  HeedNudge();
  std::unique_lock<std::mutex> lock(mu_);
  LookForRequests(lock, l);
  const ThreadId t = SlotOfCaller();
  RunToCompletion(lock, t, [&] {
    stats::NodeCall call(node_->stats());
    return node_->Acquire(t, l);
  });
  Settle();
}

// Like Acquire, but gives up at deadline_ns (CLOCK_MONOTONIC): the Node
// forgets the request, and a token that comes later stays idle here.
bool Runtime::AcquireUntil(LockId l, int64_t deadline_ns) {
  RuntimeScope scope;
  stats::Scope timing(TimeOf(l));
  if (stats::ThreadStats* st = stats::Current()) st->Count(stats::Counter::kAcquires);
  std::unique_lock<std::mutex> lock(mu_);
  LookForRequests(lock, l);
  const ThreadId t = SlotOfCaller();
  while (true) {
    slots_[t].wake.store(0, std::memory_order_relaxed);
    Outcome o;
    {
      stats::NodeCall call(node_->stats());
      o = node_->Acquire(t, l);
      if (o == Outcome::kBlocked && NowNs() >= deadline_ns && node_->CancelAcquire(t, l)) {
        Settle();
        return false;
      }
    }
    if (o == Outcome::kDone) break;
    WaitSlot(lock, t, kAdaptiveSpin, deadline_ns);
  }
  Settle();
  return true;
}

int64_t Runtime::MonotonicNs() { return NowNs(); }

bool Runtime::Release(LockId l) {
  RuntimeScope scope;
  stats::Scope timing(TimeOf(l));
  HeedNudge();
  std::lock_guard<std::mutex> lock(mu_);
  const ThreadId t = SlotOfCaller();
  if (!node_->Holds(t, l)) return false;
  if (stats::ThreadStats* st = stats::Current()) st->Count(stats::Counter::kReleases);
  {
    stats::NodeCall call(node_->stats());
    node_->Release(t, l);
  }
  t_last_released = l;
  Settle();
  t_released_ns = NowNs();
  return true;
}

bool Runtime::HeldByCaller(LockId l) {
  std::lock_guard<std::mutex> lock(mu_);
  return node_->Holds(SlotOfCaller(), l);
}

bool Runtime::HeldOnThisNode(LockId l) {
  std::lock_guard<std::mutex> lock(mu_);
  return node_->HeldLocally(l);
}

// The node gathers the threads that took part in the barrier's last episode
// here and reports them in one arrival (Node::kGather): one interval and one
// message a node, not one a thread. It stops waiting for a thread that
// waits elsewhere (a lock, a condition, a join) or exits; for one blocked
// where it cannot see (a system call) it waits kGatherNs at most.
bool Runtime::Barrier(BarrierId b, uint32_t count) {
  RuntimeScope scope;
  stats::Scope timing(stats::Category::kBarrierProtocol);
  if (stats::ThreadStats* st = stats::Current()) st->Count(stats::Counter::kBarriers);
  std::unique_lock<std::mutex> lock(mu_);
  const ThreadId t = SlotOfCaller();
  bool serial = false;
  const int64_t give_up = NowNs() + kGatherNs;
  while (true) {
    slots_[t].wake.store(0, std::memory_order_relaxed);
    {
      stats::NodeCall call(node_->stats());
      if (node_->Barrier(t, b, count, Node::kGather, &serial) == Outcome::kDone) break;
      if (node_->Gathering() && NowNs() >= give_up) {
        node_->ReportGathered();
        Settle();
        continue;
      }
    }
    Settle();
    WaitSlot(lock, t, kAdaptiveSpin, node_->Gathering() ? give_up : INT64_MAX);
  }
  Settle();
  return serial;
}

void Runtime::JoinSync(SyncWaiter* w) {
  w->woken.store(0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(sync_mu_);
  sync_waiters_.push_back(w);
}

bool Runtime::LeaveSync(SyncWaiter* w) {
  std::lock_guard<std::mutex> l(sync_mu_);
  std::erase(sync_waiters_, w);
  return std::ranges::any_of(sync_waiters_, [w](const SyncWaiter* o) {
    return o->object == w->object && o->woken.load(std::memory_order_relaxed) == 0;
  });
}

// Under sync_mu_ a waiter cannot leave, so its word outlives the wake.
bool Runtime::WakeSyncHere(const void* object, bool all) {
  std::lock_guard<std::mutex> l(sync_mu_);
  bool woke = false;
  for (SyncWaiter* w : sync_waiters_) {
    if (w->object != object || w->woken.load(std::memory_order_relaxed) != 0) continue;
    if (woke && !all) return true;
    w->woken.store(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w->woken), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    woke = true;
  }
  return false;
}

void Runtime::SleepSync(SyncWaiter* w, int64_t timeout_ns) {
  if (w->woken.load(std::memory_order_acquire) != 0) return;
  stats::Scope timing(stats::Category::kLockWait);  // a condition or semaphore wait
  WaitingElsewhere(true);
  timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w->woken), FUTEX_WAIT_PRIVATE, 0,
          timeout_ns < 0 ? nullptr : &ts, nullptr, 0);
  WaitingElsewhere(false);
}

void Runtime::WaitingElsewhere(bool waiting) {
  std::lock_guard<std::mutex> l(mu_);
  stats::NodeCall call(node_->stats());
  node_->WaitingElsewhere(SlotOfCaller(), waiting);
  Settle();
}

void Runtime::WakeSyncNodes(uint64_t node_mask, const void* object) {
  if (!NodeBitsShared()) node_mask &= ~NodeBit(self());
  if (node_mask == 0) return;
  std::lock_guard<std::mutex> l(mu_);
  for (NodeId n = 0; n < opts_.nodes; ++n)
    if (n != self() && (node_mask & NodeBit(n))) SendMessage(n, SyncWake{reinterpret_cast<uint64_t>(object)});
}

}  // namespace svm::rt
