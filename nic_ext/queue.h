// WaitQueue: the completion queue and the receive queue of a Nic.
//
// Many producers (NIC threads, posting threads), many consumers. Poll never
// blocks. Wait spins for a while, then sleeps on a condition variable: on
// these machines a thread woken from the other CPU costs ~50 us, so a short
// spin catches quick completions without a wake-up. The spin budget is
//   kBusyPoll: unbounded (Wait never sleeps; it spins until the deadline);
//   kAdaptive: starts at kDefaultSpin and follows recent waits: a wait caught
//              while spinning keeps or grows the budget (up to kMaxSpin, or
//              the policy's max_spin), one that had to sleep shrinks it
//              (down to kMinSpin).
// A queue may have a driver (QueueDriver, set by the Nic that fills it): while
// spinning, Wait calls it to produce the items itself (run to completion on
// the waiting thread) rather than wait for another thread to push them; a
// sleeping Wait leaves that to the Nic's own thread, or, where the driver
// can sleep on its source itself (QueueDriver::Sleep), sleeps there and
// drives again when woken: one wake-up per item instead of two.
// A thread that spins on the queue for items it will take itself may say so
// (Watch): while it does, a push wakes no sleeper, so a consumer asleep on
// the same queue (the runtime's handler thread) is not woken to race it for
// the CPU; the watcher wakes one as it leaves if items are left.
// Invariant: size_ == items_.size() whenever mu_ is free.
// The items live in a ring that keeps its storage: a queue that fills and
// empties allocates nothing once it has held its most items (a std::deque
// took and freed a 512-byte block every few dozen items, in the fault path).
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <utility>

#include <boost/circular_buffer.hpp>

namespace svm::nic {

enum class WaitMode : uint8_t { kAdaptive, kBusyPoll };

namespace internal {
using Clock = std::chrono::steady_clock;
inline constexpr std::chrono::nanoseconds kMinSpin{2'000};
inline constexpr std::chrono::nanoseconds kDefaultSpin{50'000};
inline constexpr std::chrono::nanoseconds kMaxSpin{200'000};
}  // namespace internal

struct WaitPolicy {
  WaitMode mode = WaitMode::kAdaptive;
  // kAdaptive's budget never exceeds this; 0: sleep at once (a host with
  // more busy threads than CPUs, where a spinner delays what it waits for).
  std::chrono::nanoseconds max_spin = internal::kMaxSpin;
};

namespace internal {
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
// Spins until ready() or `until`; returns ready(). Yields the CPU now and then:
// with 2 cores the thread that makes us ready may be queued behind us.
template <typename F>
bool SpinUntil(F ready, Clock::time_point until) {
  for (uint32_t i = 1;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if ((i & 63) == 0) {
      if (Clock::now() >= until) return ready();
      if ((i & 1023) == 0) sched_yield();
    }
  }
}
}  // namespace internal

// Who a driver's sleeper is. A message wakes a kWaiter (a thread waiting
// for a message of its own, which it then handles itself) before the
// queue's kConsumer: one wake-up where a hand-off through the consumer
// would take two.
enum class SleepRole : uint8_t { kConsumer, kWaiter };

// Makes progress on a queue's items from the waiting thread. Drive must not
// block (it gives up when another thread is at the same work) and returns
// true when it did something. A waiter calls Enter before its first Drive and
// Leave after its last (got: it has an item; otherwise it goes to sleep or
// times out). Thread-safe.
class QueueDriver {
 public:
  virtual ~QueueDriver() = default;
  virtual bool Drive() = 0;
  virtual void Enter() {}
  virtual void Leave(bool got) { (void)got; }
  // Leave, for a waiter that goes on to Sleep here (nothing to hand over).
  virtual void LeaveToSleep() { Leave(false); }
  // Whether Sleep can sleep (false: it returns false at once).
  virtual bool CanSleep() const { return false; }
  // Sleeps, as `role`, until the source may have work for the queue,
  // ready() holds, or `timeout` passed; false (at once) if this driver
  // cannot sleep, and the queue sleeps on its condition variable instead.
  // Whoever pushes to the queue without driving must then wake such a
  // sleeper (the Nic's part).
  virtual bool Sleep(std::chrono::nanoseconds timeout, const std::function<bool()>& ready, SleepRole role) {
    (void)timeout;
    (void)ready;
    (void)role;
    return false;
  }
  // Ends every Sleep now (the queue's consumers are asked to stop).
  virtual void Interrupt() {}
  // Ends the Sleeps of kWaiters now (one has been woken for another reason).
  virtual void WakeWaiters() {}
  // Wakes a consumer in Sleep: items wait in the queue that nobody watches.
  virtual void WakeSleeper() {}
};

namespace internal {
// SpinUntil, driving d between checks (each Drive is a syscall or so, so the
// clock is read every round).
// Gives up early when stop() holds.
template <typename F, typename S>
bool DriveUntil(F ready, QueueDriver& d, Clock::time_point until, bool then_sleeps, S stop) {
  if (ready()) return true;
  d.Enter();
  for (uint32_t i = 1;; ++i) {
    if (!d.Drive()) CpuRelax();
    if (ready()) {
      d.Leave(true);
      return true;
    }
    if (Clock::now() >= until || stop()) {
      if (then_sleeps) {
        d.LeaveToSleep();
      } else {
        d.Leave(false);
      }
      return false;
    }
    if ((i & 255) == 0) sched_yield();
  }
}
}  // namespace internal

template <typename T>
class WaitQueue {
 public:
  explicit WaitQueue(WaitPolicy policy = {}) : policy_(policy) {}
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;

  WaitPolicy policy() const { return policy_; }
  void set_policy(WaitPolicy p) { policy_ = p; }

  // The driver Wait calls while spinning (nullptr: none). The queue keeps it
  // alive; a driver that outlives its Nic must turn into a no-op.
  void set_driver(std::shared_ptr<QueueDriver> d) {
    std::lock_guard<std::mutex> l(mu_);
    driver_id_.store(d.get(), std::memory_order_relaxed);
    driver_ = std::move(d);
  }
  const QueueDriver* driver_id() const { return driver_id_.load(std::memory_order_relaxed); }

  void Push(T item) {
    std::lock_guard<std::mutex> l(mu_);
    if (items_.full()) items_.set_capacity(std::max<size_t>(kFirstCapacity, 2 * items_.capacity()));
    items_.push_back(std::move(item));
    size_.store(items_.size(), std::memory_order_seq_cst);
    if (sleepers_ > 0 && !watched()) cv_.notify_one();
  }

  // While a Watch lives, its thread spins on the queue and takes what comes:
  // pushes wake no sleeper (Push; a Nic whose driver sleeps checks watched()
  // before it wakes one). Leaving, it wakes a sleeper if items are left.
  // Both sides are sequentially consistent: a push that saw the watch is
  // seen by the watcher's last look.
  class Watch {
   public:
    explicit Watch(WaitQueue* q) : q_(q) {
      if (q_) q_->watchers_.fetch_add(1, std::memory_order_seq_cst);
    }
    ~Watch() {
      if (!q_) return;
      q_->watchers_.fetch_sub(1, std::memory_order_seq_cst);
      if (q_->size_.load(std::memory_order_seq_cst) != 0) q_->WakeSleeper();
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    WaitQueue* q_;
  };
  bool watched() const { return watchers_.load(std::memory_order_seq_cst) != 0; }
  // Wakes a consumer asleep in Wait or WaitReady if items are there: for a
  // watcher that leaves one it will not take.
  void WakeSleeper() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (items_.empty()) return;
      if (sleepers_ > 0) cv_.notify_one();
    }
    if (std::shared_ptr<QueueDriver> d = CurrentDriver()) d->WakeSleeper();
  }

  // Moves up to out.size() items into out; returns how many. Never blocks
  // (beyond the queue's own short critical section).
  size_t Poll(std::span<T> out) {
    if (size_.load(std::memory_order_acquire) == 0 || out.empty()) return 0;
    std::lock_guard<std::mutex> l(mu_);
    return PopLocked(out);
  }

  // Moves items from the front into out while pred(item) holds, up to
  // out.size(); returns how many. Never blocks. With several consumers, one
  // that must see items in queue order pops under a lock of its own.
  template <typename Pred>
  size_t PollIf(std::span<T> out, Pred pred) {
    if (size_.load(std::memory_order_acquire) == 0 || out.empty()) return 0;
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    while (n < out.size() && !items_.empty() && pred(items_.front())) {
      out[n++] = std::move(items_.front());
      items_.pop_front();
    }
    size_.store(items_.size(), std::memory_order_release);
    return n;
  }

  // Like Poll, but waits up to `timeout` for at least one item. Returns 0 only
  // on timeout.
  size_t Wait(std::span<T> out, std::chrono::nanoseconds timeout) {
    if (out.empty()) return 0;
    const auto deadline = internal::Clock::now() + timeout;
    while (true) {
      const auto left = deadline - internal::Clock::now();
      if (!WaitReady(std::max(left, internal::Clock::duration::zero()))) return 0;
      if (size_t n = Poll(out)) return n;  // another consumer may have taken it
    }
  }

  // Spins (driving, as Wait does) until the queue holds an item, also()
  // holds, or `timeout` passed; never sleeps, leaves items in the queue.
  // Returns whether an item or also() was seen. For a thread that waits for
  // something else while it helps the queue along.
  template <typename F>
  bool SpinReady(std::chrono::nanoseconds timeout, F also) {
    auto ready = [&] { return size_.load(std::memory_order_acquire) != 0 || also(); };
    return Spin(ready, internal::Clock::now() + timeout);
  }

  // Waits (spin, drive, sleep: as Wait) up to `timeout` until the queue holds
  // an item, and leaves it there. False on timeout.
  bool WaitReady(std::chrono::nanoseconds timeout) {
    return WaitReady(timeout, [] { return true; });
  }
  // As WaitReady, but spins only while may_spin() holds (it is looked at as
  // the spin goes on): a thread whose spin would take a CPU another thread
  // spins on sleeps at once. A wait that did not spin leaves the budget be.
  template <typename F>
  bool WaitReady(std::chrono::nanoseconds timeout, F may_spin) {
    using internal::Clock;
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    auto ready = [this] { return size_.load(std::memory_order_acquire) != 0; };
    if (ready()) return true;
    std::shared_ptr<QueueDriver> driver = CurrentDriver();
    const bool sleeps_on_driver = driver && driver->CanSleep();
    auto spin = [&](Clock::time_point until) { return Spin(ready, until, sleeps_on_driver); };
    if (policy_.mode == WaitMode::kBusyPoll) return Spin(ready, deadline);
    auto budget = std::min(policy_.max_spin, std::chrono::nanoseconds(spin_ns_.load(std::memory_order_relaxed)));
    bool adapt = may_spin();
    if (adapt && Spin(ready, std::min(deadline, start + budget), sleeps_on_driver, [&] { return !may_spin(); })) {
      auto took = Clock::now() - start;
      if (2 * took > budget) Adapt(std::min(internal::kMaxSpin, budget * 2));
      return true;
    }
    if (!may_spin()) adapt = false;  // not spun, or cut short: no verdict on the budget
    if (Clock::now() >= deadline) return false;
    if (QueueDriver* d = driver.get()) {
      const std::function<bool()> ready_or_stop = [&] { return ready() || stopping(); };
      bool slept = false;
      while (!ready_or_stop() && Clock::now() < deadline &&
             d->Sleep(std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()),
                      ready_or_stop, SleepRole::kConsumer)) {
        slept = true;
        if (spin(std::min(deadline, Clock::now() + internal::kMinSpin))) break;
      }
      if (slept) {
        const bool got = ready();
        if (adapt) AdaptAfterSleep(got, Clock::now() - start, budget);
        return got;
      }
    }
    std::unique_lock<std::mutex> l(mu_);
    ++sleepers_;
    const bool got =
        cv_.wait_until(l, deadline, [this] { return !items_.empty() || stop_waits_; }) && !items_.empty();
    --sleepers_;
    l.unlock();
    if (adapt) AdaptAfterSleep(got, Clock::now() - start, budget);
    return got;
  }

  // Sleeps on the driver as a kWaiter until the queue holds an item, also()
  // holds, the source has something, or `timeout` passed; takes nothing
  // from the source (the caller drives it: DriveAndTake, under a Watch).
  // False at once where the driver cannot sleep: the caller sleeps another
  // way.
  template <typename F>
  bool SleepReady(std::chrono::nanoseconds timeout, F also) {
    std::shared_ptr<QueueDriver> d = CurrentDriver();
    if (!d || !d->CanSleep()) return false;
    const std::function<bool()> done = [&] {
      return size_.load(std::memory_order_acquire) != 0 || also() || stopping();
    };
    return done() || timeout.count() <= 0 || d->Sleep(timeout, done, SleepRole::kWaiter);
  }
  // Drives the source (items land here) and runs take() (which takes
  // items), again while driving brings more; as a poller all along, so what
  // arrives meanwhile wakes nobody.
  template <typename F>
  void DriveAndTake(F take) {
    std::shared_ptr<QueueDriver> d = CurrentDriver();
    if (!d) {
      take();
      return;
    }
    d->Enter();
    for (bool more = true; more;) {
      more = d->Drive();
      take();
    }
    d->Leave(size_.load(std::memory_order_acquire) != 0);
  }
  // Ends the SleepReady of every waiter now.
  void WakeWaiters() {
    if (std::shared_ptr<QueueDriver> d = CurrentDriver()) d->WakeWaiters();
  }

  size_t size() const { return size_.load(std::memory_order_acquire); }

  // From now on WaitReady and Wait return at once when no item is there, and
  // a thread sleeping in them wakes: for consumers asked to stop (a sleeper
  // would otherwise sit out its timeout).
  void StopWaits() {
    std::shared_ptr<QueueDriver> d;
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_waits_ = true;
      stopping_.store(true, std::memory_order_release);
      cv_.notify_all();
      d = driver_;
    }
    if (d) d->Interrupt();
  }

 private:
  std::shared_ptr<QueueDriver> CurrentDriver() {
    if (driver_id() == nullptr) return nullptr;
    std::lock_guard<std::mutex> l(mu_);
    return driver_;
  }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  template <typename F>
  bool Spin(F ready, internal::Clock::time_point until, bool then_sleeps = false) {
    return Spin(ready, until, then_sleeps, [] { return false; });
  }
  // Spin, giving up early when stop() holds.
  template <typename F, typename S>
  bool Spin(F ready, internal::Clock::time_point until, bool then_sleeps, S stop) {
    if (ready()) return true;
    std::shared_ptr<QueueDriver> driver = CurrentDriver();
    return driver ? internal::DriveUntil(ready, *driver, until, then_sleeps, stop)
                  : internal::SpinUntil([&] { return ready() || stop(); }, until) && ready();
  }
  size_t PopLocked(std::span<T> out) {
    size_t n = 0;
    while (n < out.size() && !items_.empty()) {
      out[n++] = std::move(items_.front());
      items_.pop_front();
    }
    size_.store(items_.size(), std::memory_order_release);
    return n;
  }
  // A wait that slept but ended soon would have been caught by a spin that
  // long; one that ended late (or not at all) shrinks the spin.
  void AdaptAfterSleep(bool got, internal::Clock::duration took, std::chrono::nanoseconds budget) {
    if (got && took < internal::kMaxSpin) {
      Adapt(std::chrono::duration_cast<std::chrono::nanoseconds>(took));
    } else {
      Adapt(std::max(internal::kMinSpin, budget / 2));
    }
  }
  void Adapt(std::chrono::nanoseconds b) {
    b = std::clamp(b, std::min(internal::kMinSpin, policy_.max_spin), policy_.max_spin);
    spin_ns_.store(b.count(), std::memory_order_relaxed);
  }

  std::atomic<int> watchers_{0};  // live Watches
  static constexpr size_t kFirstCapacity = 16;

  WaitPolicy policy_;
  std::atomic<size_t> size_{0};
  std::atomic<int64_t> spin_ns_{internal::kDefaultSpin.count()};
  std::mutex mu_;
  std::condition_variable cv_;
  boost::circular_buffer<T> items_;  // guarded by mu_; grows by doubling
  int sleepers_ = 0;     // guarded by mu_
  bool stop_waits_ = false;  // guarded by mu_
  std::atomic<bool> stopping_{false};  // stop_waits_, readable without mu_
  std::shared_ptr<QueueDriver> driver_;             // guarded by mu_
  std::atomic<const QueueDriver*> driver_id_{nullptr};  // driver_.get(), readable without mu_
};

}  // namespace svm::nic
