// Runtime: one node of a job, inside the program's process (LD_PRELOAD).
//
// It owns the node's shared memory (the heap region, and the program's .data
// and .bss remapped onto frames of their own), the fault trap on them, the
// NIC, the protocol Node, the handler thread that serves incoming messages
// (base mode's "interrupts"), and the threads it runs for the program.
//
// Page ids: the heap region's pages come first, then the globals' pages.
//
// Exported memory (what the peers' NICs read and write without this node's
// handler; DESIGN.md "Modes"): the frames (heap region, then globals), the
// versions table (every mode), and per mode the write-notice rings (dw and
// up) and the NIC lock words (nil). onesided.cc.
//
// Locking: one mutex (mu_) serialises every call into the protocol Node and
// the runtime's own tables. A thread that the Node blocks waits on its slot's
// futex without holding mu_; while it spins there it may handle protocol
// messages itself (one dispatcher at a time: dispatch_mu_, taken before mu_).
//
// Memory for the runtime itself comes from glibc (see interpose.cc): only the
// program's own allocations go to the shared heap.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "libsvm/alloc/heap.h"
#include "libsvm/fragment.h"
#include "libsvm/notice_ring.h"
#include "libsvm/options.h"
#include "libsvm/prim/fault.h"
#include "libsvm/prim/region.h"
#include "nic_ext/transport.h"
#include "protocol/host.h"
#include "protocol/node.h"
#include "util/buffer_pool.h"
#include "util/shared_memory.h"

namespace svm::svmd {
struct ControlConfig;
}  // namespace svm::svmd

namespace svm::rt {

// Most threads one node runs at a time (application threads, plus a slot for
// each runtime thread that ever enters the protocol).
inline constexpr uint32_t kMaxSlots = 256;
// Largest .data + .bss shared (pages after the heap region's in the Node):
// 256 GiB. The Node's page ids are fixed before the globals are mapped; the
// reservation costs only address space (the per-page tables are lazy).
inline constexpr uint64_t kMaxGlobalsPages = 1ull << 26;

// How long a blocked thread spins before it sleeps (a wake-up from the other
// CPU costs ~50 us here); while it spins it handles protocol messages itself
// (Runtime::DispatchWhileWaiting), so a reply that comes meanwhile costs no
// wake-up at all. A fault waits for the reply to its own request, about one
// NIC round trip; other waits (locks, barriers, joins) last as long as other
// threads take, and a long spin there only slows them on a busy machine.
// So those waits spin by a budget each thread adapts to its recent waits
// (kAdaptiveSpin): a wait that had to sleep but was woken within
// kMaxWaitSpinNs (a lock handed back and forth between two nodes, each wait
// as long as the other's turn) makes the next spin as long; one that slept
// longer halves it, down to kWaitSpinNs.
inline constexpr int64_t kFaultSpinNs = 100'000;
inline constexpr int64_t kWaitSpinNs = 20'000;
inline constexpr int64_t kMaxWaitSpinNs = 200'000;
inline constexpr int64_t kAdaptiveSpin = -1;
// How long the first re-takes of a lock whose token came from another node
// wait for that node's request (Runtime::LookForRequests): kRequestWaitNs,
// doubling, for the first kRequestWaits immediate re-takes.
inline constexpr int64_t kRequestWaitNs = 8'000;
inline constexpr uint32_t kRequestWaits = 4;
// How long a barrier's arrivals wait for a thread of the node that took part
// last time and neither arrived nor waits where the Node sees it.
inline constexpr int64_t kGatherNs = 5'000'000;

// Logs what went wrong and ends this node (exit status 70: svm failed).
[[noreturn]] void Die(const std::string& what);

// Thread handles (pthread_t values) of svm threads: tag | node | number.
inline constexpr uint64_t kHandleTag = 0x5356ull << 48;
inline constexpr NodeId HandleNode(uint64_t h) { return NodeId((h >> 32) & 0xffff); }
inline constexpr bool IsHandle(uint64_t h) { return (h >> 48) == 0x5356; }

class Runtime final : public Host {
 public:
  // The runtime of this process; nullptr until Start succeeded.
  static Runtime* Get() { return instance_; }
  // Builds the node from the environment, meets the other nodes and opens
  // the shared memory. On failure prints why and exits the process.
  static void StartOrDie();

  const Options& options() const { return opts_; }
  NodeId self() const { return opts_.node; }
  alloc::Heap& heap() { return *heap_; }

  // Node 0 runs main; every other node serves until the job ends.
  [[noreturn]] void Serve();
  // exit() from the program, on any node: tells svmrun, which ends the whole
  // job with status. The caller then runs the real exit().
  void PrepareExit(int status);
  // Writes this node's statistics (stats.h), once; at the end of the job.
  void ReportStats();

  // Threads (threads.cc).
  int CreateThread(uint64_t* handle, const pthread_attr_t* attr, void* (*start)(void*), void* arg);
  int JoinThread(uint64_t handle, void** value);
  int DetachThread(uint64_t handle);
  // glibc's handle of the svm thread `handle`: 0 and *out if it runs on
  // this node, ENOTSUP if on another node, ESRCH if unknown.
  int RealThread(uint64_t handle, pthread_t* out);
  // The calling thread's handle (main: node 0, number 0), or 0 for a thread
  // the runtime did not start.
  static uint64_t CurrentHandle();
  // Records the value for pthread_exit; the thread unwinds to its start.
  static void SetExitValue(void* value);
  // Gives the calling (main) thread handle number 0 of node 0.
  static void AdoptMainThread();

  // Synchronisation (sync.cc builds the pthread objects on these). Lock ids
  // are addresses, or pinned ids (types.h) for the runtime's own locks.
  void Acquire(LockId l);
  // Acquire that gives up at deadline_ns (MonotonicNs): false if it did.
  bool AcquireUntil(LockId l, int64_t deadline_ns);
  static int64_t MonotonicNs();
  // False if the calling thread does not hold l.
  bool Release(LockId l);
  // Whether the calling thread holds l.
  bool HeldByCaller(LockId l);
  // Whether a thread of this node holds l.
  bool HeldOnThisNode(LockId l);
  // Waits at barrier b with `count` threads in all; true for the one serial
  // thread of the episode.
  bool Barrier(BarrierId b, uint32_t count);
  // A thread of this node waiting for a condition variable or semaphore
  // (sync.cc) to change, on a futex word of its own, so that a signal can
  // wake one thread rather than every waiter of the node.
  struct SyncWaiter {
    const void* object = nullptr;
    std::atomic<uint32_t> woken{0};
  };
  // REQUIRES (Join, Leave, Rearm, and WakeSyncHere but from a SyncWake):
  // the object's state lock is held, so that whether a waiter here is not
  // yet woken agrees with this node's bit in the object's waiter mask.
  void JoinSync(SyncWaiter* w);
  // Returns whether a waiter of the same object here is still not woken.
  bool LeaveSync(SyncWaiter* w);
  // A woken waiter that found nothing for it (the unit went to another
  // thread, a SyncWake of an older signal) waits again.
  void RearmSync(SyncWaiter* w) { w->woken.store(0, std::memory_order_relaxed); }
  // Wakes one waiter of `object` here not woken yet (`all`: every one);
  // returns whether one not woken remains.
  bool WakeSyncHere(const void* object, bool all);
  // Sleeps until w is woken or timeout_ns passes (< 0: no timeout).
  void SleepSync(SyncWaiter* w, int64_t timeout_ns);
  // The caller waits (or no longer) for other threads outside the Node's
  // sight: a barrier gathering for it reports without it (Node::kGather).
  void WaitingElsewhere(bool waiting);
  // Sends every other node in node_mask (NodeBit) a SyncWake, which wakes
  // all of its waiters of `object`.
  void WakeSyncNodes(uint64_t node_mask, const void* object);
  // A node's bit in a mask of nodes; nodes 64 apart share one (a spurious
  // wake-up for the other, which pollers tolerate).
  static uint64_t NodeBit(NodeId n) { return 1ull << (n % 64); }
  // Whether some nodes of this job share a NodeBit (more than 64 nodes).
  bool NodeBitsShared() const { return opts_.nodes > 64; }

  // Frees a block of another node's heap (Heap's remote_free hook).
  void RemoteFree(uint32_t owner, void* p);
  // Claims `bytes` of the heap's large area for this node from the job-wide
  // break on node 0 (Heap's claim hook; heap_claim.cc).
  bool ClaimHeap(uint64_t bytes, uint64_t limit, uint64_t* offset);

  // Host (host.cc).
  void Send(NodeId to, std::vector<uint8_t> bytes) override;
  std::vector<uint8_t> SendBuffer() override;
  std::span<uint8_t> Frame(PageId p) override;
  PageId FramesEnd(PageId p) override;
  void Protect(PageId first, size_t count, Prot prot) override;
  void FindWritten(PageId first, size_t count, std::vector<PageId>* written) override;
  void Populate(std::span<uint8_t> memory) override;
  size_t Fill(PageId first, size_t count, std::span<const uint8_t> data, Prot prot) override;
  bool Fills() const override;
  void Wake(ThreadId t) override;
  uint32_t JobThreads() override;  // threads.cc

  // Host, one-sided operations (onesided.cc).
  std::span<IntervalId> Versions(PageId p) override;
  uint64_t& SharedMark(PageId p) override;
  uint64_t& HomeWord(PageId p) override;
  void ClaimHome(NodeId manager, PageId p, uint32_t count, uint32_t ahead) override;
  void ReadPages(NodeId home, PageId first, uint32_t count, uint32_t stride, uint64_t mark,
                 Landing into) override;
  void WriteDiff(NodeId home, PageId p, IntervalId interval, std::span<const uint8_t> runs) override;
  void DepositNotice(const WriteNotice& notice) override;
  void TakeNotices(std::vector<WriteNotice>* out) override;
  void NicLockTail(NodeId home, LockId l, NodeId guess) override;
  void DropMarks(NodeId home, std::span<const PageId> pages) override;
  void Nudge(NodeId to) override;

  // A trapped access (host.cc); also called for system-call buffers.
  void OnFault(PageId p, Access a);
  // Touches the pages of [addr, addr + len) that belong to shared memory so
  // that a system call can access them (uffd and mprotect backends).
  void PrepareBuffer(const void* addr, size_t len, Access a);
  bool IsShared(const void* addr) const;

 private:
  // A thread's place in the Node (its ThreadId) and the word it sleeps on.
  // A thread's wake word. Wake makes the futex call only while the thread
  // sleeps (asleep), so a waiter that is still spinning, or the thread
  // completing its own request, costs no system call.
  struct Slot {
    std::atomic<uint32_t> wake{0};
    std::atomic<uint32_t> asleep{0};  // 0, kOnWake or kOnQueue: where it sleeps
    int64_t spin_ns = kWaitSpinNs;  // kAdaptiveSpin's budget; the slot's thread only
    bool off_queue = false;  // this wait leaves the queue to the handler (SleepOnQueue); the slot's thread only
  };
  struct Segment;
  struct ThreadRecord;
  class SegmentHandler;

  Runtime() = default;
  Status Start();
  Status OpenHeap();
  Status OpenGlobals();
  // Opens s's fault trap (none in a one-node job: s is left read-write).
  Status OpenTrap(Segment& s);
  // Whether writes are found by scans (NodeConfig::scan_writes): SVM_WRITES,
  // and what the fault backend and the kernel offer.
  Status ChooseWriteDetection();
  void ScrubEnvironment();
  Status Connect();
  Status CreateNic(const svmd::ControlConfig& cc, std::string* address);
  // Registers the exported memory and connects the NIC (after OpenGlobals:
  // the globals' frames are exported too).
  Status ConnectNic();
  void HandlerLoop();
  // Called by a thread blocked in WaitSlot; true if it handled a message.
  bool DispatchWhileWaiting();
  void Dispatch(NodeId from, std::vector<uint8_t>& bytes);
  void OnRuntimeMessage(NodeId from, Message& m);
  void SendMessage(NodeId to, const Message& m);
  // One SEND of at most opts_.max_send bytes (Send fragments longer ones).
  void PostSend(NodeId to, std::vector<uint8_t> bytes);
  // Frees SEND buffers whose completions arrived. REQUIRES: mu_ held.
  void ReapSends();
  [[noreturn]] void NetworkFailed(const std::string& what);

  // Slots and blocking (host.cc). REQUIRES: mu_ held.
  ThreadId SlotOfCaller();
  void ReleaseSlotOfCaller();
  Segment& SegmentOf(PageId p);
  // Calls op(segment, first, count) for the part of pages [first, first +
  // count) in each trapped segment, with first relative to the segment.
  template <typename Op>
  void ForTrappedPages(PageId first, size_t count, Op op);
  // Runs op (a Node call returning Outcome) until kDone, blocking between
  // tries. REQUIRES: lock holds mu_.
  template <typename Op>
  void RunToCompletion(std::unique_lock<std::mutex>& lock, ThreadId t, Op op,
                       int64_t spin_ns = kAdaptiveSpin) {
    while (true) {
      slots_[t].wake.store(0, std::memory_order_relaxed);
      if (op() == Outcome::kDone) return;
      WaitSlot(lock, t, spin_ns);
    }
  }
  // Blocks until done(), a wait only other threads end (a join): meanwhile
  // no barrier gathers for t (Node::WaitingElsewhere). REQUIRES: lock holds mu_.
  template <typename Done>
  void AwaitOthers(std::unique_lock<std::mutex>& lock, ThreadId t, Done done) {
    node_->WaitingElsewhere(t, true);
    Settle();
    RunToCompletion(lock, t, [&] { return done() ? Outcome::kDone : Outcome::kBlocked; });
    node_->WaitingElsewhere(t, false);
  }
  // Waits until t is woken: spins up to spin_ns (kAdaptiveSpin: the slot's
  // budget) handling messages, then sleeps; runs one-sided completions and
  // the Node's polls meanwhile.
  // Returns early, unwoken, at deadline_ns (CLOCK_MONOTONIC).
  void WaitSlot(std::unique_lock<std::mutex>& lock, ThreadId t, int64_t spin_ns,
                int64_t deadline_ns = INT64_MAX);
  void SpinThenSleep(Slot& s, int64_t spin_ns, int64_t timeout_ns);
  bool Crowded() const {  // options.h
    return rt::Crowded(opts_, live_slots_.load(std::memory_order_relaxed), uint32_t(cpus_here_));
  }
  // The futex calls Wake deferred while Dispatch held mu_. REQUIRES:
  // dispatch_mu_ held, mu_ not.
  void WakeDeferred();
  static void Sleep(Slot& s, int64_t timeout_ns);
  // Sleeps as the receive queue's waiter (one a node) until a message, s's
  // wake or timeout_ns, and handles the messages there. False if it did not
  // (another thread is the waiter, the NIC cannot wake one, a message is
  // left for the handler thread): Sleep then.
  bool SleepOnQueue(Slot& s, int64_t timeout_ns);
  // The futex call that wakes s, asleep at `where` (Slot::asleep).
  void WakeAsleep(Slot& s, uint32_t where);
  static constexpr uint32_t kOnWake = 1, kOnQueue = 2;
  // How long a node that lost a peer waits for svmrun to end the job before
  // it reports the loss as its failure (NetworkFailed).
  static constexpr std::chrono::milliseconds kEndOfJobGrace{2000};
  // After a Node call: frees sent buffers and notes whether waiting threads
  // must poll (one-sided operations in flight, or Node::NeedsPoll).
  // REQUIRES: mu_ held.
  void Settle();

  // One-sided operations (onesided.cc).
  struct OneSided;
  Status OpenExported();  // the exported memory, before the NIC connects
  void PrepareOneSided();  // the pools a remote fault takes from
  // Where page p's frame lies in the exported regions.
  std::pair<uint32_t, uint64_t> FrameAt(PageId p);
  // Posts wrs (every one carrying op's wr id); the op is then in flight.
  // REQUIRES: mu_ held.
  std::unique_ptr<OneSided> NewOp(uint8_t kind);
  void TrackOp(uint64_t id, std::unique_ptr<OneSided> op);  // REQUIRES: mu_ held
  void RecycleOp(std::unique_ptr<OneSided> op);
  void PostOneSided(std::unique_ptr<OneSided> op, std::span<nic::WorkRequest> wrs);
  // While one lives, PostOneSided gathers the requests; the last to go posts
  // them together (a fault's fetches along a stride: one send per peer on
  // tcp, not one per page). REQUIRES: mu_ held over its life.
  class PostBatch {
   public:
    explicit PostBatch(Runtime* r) : r_(r) { ++r_->batching_posts_; }
    ~PostBatch() {
      if (--r_->batching_posts_ == 0 && !r_->batched_posts_.empty()) r_->FlushPosts();
    }
    PostBatch(const PostBatch&) = delete;
    PostBatch& operator=(const PostBatch&) = delete;

   private:
    Runtime* r_;
  };
  void FlushPosts();
  // Posts wrs in slices the NIC takes, waiting for room. REQUIRES: mu_ held.
  void PostNow(std::span<nic::WorkRequest> wrs);
  void PostLockClaim(std::unique_ptr<OneSided> op);
  void PostTailSwap(std::unique_ptr<OneSided> op);
  // Whether a CPU atomic on an exported word here is atomic with the CAS
  // and FAA peers' NICs make on it.
  bool LocalAtomicsMatchNic() const;
  static uint64_t LocalCas(uint64_t* word, uint64_t expected, uint64_t desired);
  void CompleteHere(std::unique_ptr<OneSided> op, uint64_t old);  // REQUIRES: mu_ held
  bool PostClaimAhead(std::unique_ptr<OneSided>& op);  // REQUIRES: mu_ held
  // Takes the messages a peer's Nudge announced. REQUIRES: mu_ not held.
  void HeedNudge();
  // Before this thread re-takes l, just released, while Node::MayBeWanted
  // says a request for it may be unread: lets the NIC thread read first,
  // then heeds nudges. REQUIRES: lock holds mu_.
  void LookForRequests(std::unique_lock<std::mutex>& lock, LockId l);
  // Runs the completions in done. REQUIRES: mu_ held.
  void OnOneSided(std::span<const nic::Completion> done);
  // Polls for completions and runs them; Node::Poll if it asks. REQUIRES: mu_.
  void PollOneSided();

  // Threads (threads.cc).
  int StartLocal(uint64_t handle, NodeId creator, void* (*start)(void*), void* arg,
                 const pthread_attr_t* attr);
  static void* Trampoline(void* record);
  void Retire(ThreadRecord& r);
  void SpawnLoop();
  void Finish(ThreadRecord* r, void* value);
  // Adds delta to node 0's job_threads_ word; the old value, or nullopt if
  // the NIC failed.
  std::optional<uint64_t> CountThreads(uint64_t delta);
  NodeId PlaceThread(uint64_t number) const;

  static Runtime* instance_;
  // NIC regions (the same ids on every node).
  static constexpr uint32_t kCounterRegion = 1;  // job_threads_
  static constexpr uint32_t kHeapFrames = 2;     // the heap region's protocol view
  static constexpr uint32_t kGlobalsFrames = 3;  // the globals' protocol view
  static constexpr uint32_t kVersions = 4;       // versions_: pages x nodes
  static constexpr uint32_t kDeposits = 5;       // rings_ (dw and up)
  static constexpr uint32_t kDepositHeads = 6;
  static constexpr uint32_t kLockClaims = 7;     // nil: LockId + 1 per LockNo
  static constexpr uint32_t kLockTails = 8;      // nil: tail node + 1 per LockNo (0: the home)
  static constexpr uint32_t kSharedMarks = 9;    // marks_: a word per page
  static constexpr uint32_t kHeapBreak = 10;     // heap_break_
  static constexpr uint32_t kLockNudge = 11;     // lock_nudge_
  static constexpr uint32_t kHomeWords = 12;     // home_words_ (rf and up, first touch)

  Options opts_;
  Geometry geometry_;
  std::vector<std::unique_ptr<Segment>> segments_;
  bool scan_writes_ = false;  // ChooseWriteDetection
  std::unique_ptr<alloc::Heap> heap_;
  std::unique_ptr<nic::Nic> nic_;
  std::vector<std::string> peers_;  // NIC addresses from the rendezvous
  nic::CompletionQueue send_cq_;
  std::unique_ptr<Node> node_;
  std::thread handler_;
  // Starts threads that other nodes asked for and frees what they freed in
  // this node's heap (threads.cc, SpawnLoop).
  std::thread spawner_;
  std::mutex spawn_mu_;
  std::condition_variable spawn_cv_;
  std::deque<std::pair<NodeId, SpawnRequest>> spawn_queue_;  // GUARDED_BY(spawn_mu_)
  // Blocks of this node's heap other nodes freed (RemoteFree), freed by
  // the spawner thread: the handler must never wait for the heap's lock.
  std::deque<uint64_t> free_queue_;  // GUARDED_BY(spawn_mu_)
  // Carriers of finished threads nobody joins, with their stacks (Retire).
  struct Retired {
    pthread_t thread;
    void* stack;
    size_t stack_size;
  };
  std::deque<Retired> retired_;  // GUARDED_BY(spawn_mu_)
  std::atomic<bool> stopping_{false};
  std::mutex sync_mu_;
  std::vector<SyncWaiter*> sync_waiters_;  // GUARDED_BY(sync_mu_); in the order they came
  std::atomic<bool> exiting_{false};
  std::atomic<bool> stats_reported_{false};

  // Held while taking messages off the receive queue and handling them, by
  // the handler thread or a waiting thread: one dispatcher at a time, so
  // messages are handled in arrival order. Taken before mu_, never after.
  std::mutex dispatch_mu_;
  std::unique_ptr<Reassembler> reassembler_;  // GUARDED_BY(dispatch_mu_): fragmented messages
  std::atomic<int> spinning_waiters_{0};  // threads in WaitSlot's spin phase; a second one skips it
  std::atomic<uint32_t> live_slots_{0};   // program threads holding a slot (SlotOfCaller)
  std::atomic<bool> queue_waiter_{false};  // a thread is in SleepOnQueue
  int cpus_here_ = 1;  // CPUs this node's threads may use (NodeCpus)
  char program_name_[16] = {};  // the main thread's name (prctl PR_GET_NAME), for threads started here
  bool spin_ = true;  // waiting threads spin before they sleep (options.h, ShouldSpin)
  bool spin_long_ = true;  // and may spin longer after short waits (ShouldSpinLong)
  // While Dispatch hands a message to the Node, Wake leaves the futex call
  // of a sleeping thread for WakeDeferred, after mu_. defer_wakes_ is
  // GUARDED_BY(mu_); deferred_wakes_ is written only under mu_ and
  // dispatch_mu_ both, and read by the dispatcher under dispatch_mu_.
  bool defer_wakes_ = false;
  std::vector<ThreadId> deferred_wakes_;
  std::mutex mu_;
  std::unique_ptr<Slot[]> slots_;
  uint32_t slots_used_ = 0;  // GUARDED_BY(mu_)
  std::vector<ThreadId> free_slots_;  // GUARDED_BY(mu_)
  uint64_t next_wr_ = 1;     // GUARDED_BY(mu_)
  int batching_posts_ = 0;   // GUARDED_BY(mu_): PostBatch objects alive
  std::vector<nic::WorkRequest> batched_posts_;  // GUARDED_BY(mu_)
  // WriteDiff's requests, storage kept: a diff of radix's scattered keys
  // has ~400-750 runs (a WRITE each where the NIC has no WRITE_RUNS).
  std::vector<nic::WorkRequest> diff_wrs_;  // GUARDED_BY(mu_)
  std::vector<nic::WorkRequest> mark_wrs_;  // GUARDED_BY(mu_)
  // SEND buffers until their completion, by slot (the wr_id); the storage
  // of completed ones is kept for later sends (SendBuffer). GUARDED_BY(mu_).
  std::vector<std::vector<uint8_t>> in_flight_;
  std::vector<uint32_t> free_send_slots_;
  BufferPool send_buffers_{16, SIZE_MAX};  // storage of past SEND buffers (SendBuffer)

  // Exported memory (in memory files, which the shm transport hands its
  // peers; sparse: a page costs only once touched) and one-sided operations.
  SharedMemory versions_mem_, marks_mem_, claims_mem_, tails_mem_, counter_mem_, homes_mem_;
  IntervalId* versions_ = nullptr;  // geometry_.pages x nodes
  size_t versions_bytes_ = 0;
  uint64_t* marks_ = nullptr;       // geometry_.pages words
  uint64_t* home_words_ = nullptr;  // first touch, rf and up: geometry_.pages words
  uint64_t* lock_claims_ = nullptr;     // nic::kMaxLocks words
  uint64_t* lock_tails_ = nullptr;      // nic::kMaxLocks words
  uint64_t* lock_nudge_ = nullptr;      // peers add 1 after sending a lock request here
  std::atomic<uint64_t> lock_requests_in_{0};  // lock requests the Node has received
  std::unique_ptr<NoticeRings> rings_;  // dw and up
  nic::CompletionQueue os_cq_;
  std::map<uint64_t, std::unique_ptr<OneSided>> os_ops_;    // GUARDED_BY(mu_): by wr id
  // Spare operations and map nodes, and scratch versions: a fault's remote
  // read allocates nothing once the node has warmed up. GUARDED_BY(mu_).
  std::vector<std::unique_ptr<OneSided>> spare_ops_;
  std::vector<decltype(os_ops_)::node_type> spare_nodes_;
  std::vector<VectorTime> read_versions_;
  // A page read's requests: built here, not in an array of kMaxPageRun + 2
  // (13 KB of WorkRequests zeroed at every fault).
  std::vector<nic::WorkRequest> read_wrs_;
  // rf: a page read again because its copy was too old waits for the diffs
  // still on their way to the home (messages its handler applies): re-read
  // at once, it would be read hundreds of times meanwhile. GUARDED_BY(mu_).
  struct DeferredRead {
    int64_t at_ns;
    NodeId home;
    PageId first;
    uint32_t count;
    uint32_t stride;
    uint64_t mark;
    Landing into;
  };
  std::vector<DeferredRead> deferred_reads_;
  bool completing_read_ = false;  // inside Node::OnPageRead: a ReadPages is a retry
  std::unordered_map<LockId, nic::LockNo> lock_nos_;       // GUARDED_BY(mu_): nil
  std::unordered_map<LockId, uint64_t> tail_guesses_;       // GUARDED_BY(mu_): last tail word seen
  std::atomic<bool> poll_hint_{false};  // Settle(): waiters should poll
  // Settle(): since when a barrier has held its subtree's arrivals back (0:
  // none does); the handler gives up after kGatherNs, as a waiter would.
  std::atomic<int64_t> holding_since_ns_{0};

  // Threads hosted here, and requests this node's threads wait on.
  std::map<uint64_t, std::unique_ptr<ThreadRecord>> threads_;  // GUARDED_BY(mu_)
  struct Pending {
    bool done = false;
    uint64_t value = 0;
    ThreadId waiter = 0;
  };
  std::map<uint64_t, Pending> spawns_;  // GUARDED_BY(mu_): by thread handle
  std::map<uint64_t, Pending> joins_;   // GUARDED_BY(mu_)
  // Node 0: threads created so far (high half) and alive (low half, main
  // included). One word, so that a creation bumps both with one NIC
  // fetch-and-add; a thread's end subtracts kThreadAlive.
  static constexpr uint64_t kThreadCreated = 1ull << 32, kThreadAlive = 1;
  alignas(8) uint64_t job_threads_local_ = kThreadAlive;
  uint64_t* job_threads_ = &job_threads_local_;  // counter_mem_ once exported
  // Node 0: how much of the heap's large area the nodes claimed (ClaimHeap);
  // the second word of counter_mem_ once exported.
  alignas(8) uint64_t heap_break_local_ = 0;
  uint64_t* heap_break_ = &heap_break_local_;
};

}  // namespace svm::rt
