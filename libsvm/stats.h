// Per-thread time accounting and the node's statistics report.
//
// Every thread the runtime knows (program threads, and the handler thread as
// a pseudo-thread) owns one ThreadStats record. At any instant a thread is in
// exactly one Category; Scope switches it for a stretch of runtime work and
// switches back, charging the time in between to the category it leaves. So
// the categories of a record are exclusive and sum to the thread's lifetime:
// time in a fault that was spent blocked is data_wait, not data_protocol;
// protection changes inside a fault are protect, and so on. compute is what
// is left: the program's own work (idle, for the handler thread).
//
// Twin and diff time: the protocol Node has no clock, so a Node call that
// made a twin (made a diff) is charged to twin (diff) as a whole, less any
// protection changes inside it (NodeCall).
//
// Phases: svm_phase_begin/end(name) mark a stretch of the calling thread's
// life; the thread's categories and counters over it are reported under that
// name (repeated phases accumulate, different names may nest or overlap).
//
// Thread-safety: a record is written only by its own thread (relaxed atomic
// stores, so reading it from another thread is defined). Report() may run on
// any thread, while the others still run: it charges their open stretch.
// Recording is off (every hook a test of a thread_local pointer) unless
// Enable() ran: SVM_STATS_DIR or SVM_SHOW_STATS. Signal-safe: no allocation,
// locks or syscalls but clock_gettime on the recording side.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "protocol/stats.h"

namespace svm::rt::stats {

enum class Category : uint8_t {
  kCompute,
  kDataProtocol,     // in a fault, not blocked
  kDataWait,         // in a fault, blocked (the page's reply, another thread's fetch)
  kLockProtocol,     // acquire and release of the program's locks, not blocked
  kLockWait,         // blocked for a lock, or polling a condition / semaphore
  kBarrierProtocol,
  kBarrierWait,
  kThreads,          // thread create and join (the joiner's wait included), with
                     // the runtime's birth and death locks
  kTwin,
  kDiff,
  kProtect,          // protection changes (Host::Protect)
  kHandler,          // the handler thread serving messages (Dispatch)
  kIdle,             // the handler thread waiting for messages
};
inline constexpr size_t kCategoryCount = 13;
const char* ToString(Category c);
// The category a blocked stretch of c counts as (c itself if none).
Category WaitOf(Category c);

// kRuntimeAllocs: heap allocations the runtime made while serving the
// thread (its faults, locks, barriers; the handler thread's messages).
enum class Counter : uint8_t { kReadFaults, kWriteFaults, kAcquires, kReleases, kBarriers, kRuntimeAllocs };
inline constexpr size_t kCounterCount = 6;
const char* ToString(Counter c);

enum class ThreadKind : uint8_t { kApp, kHandler };

inline constexpr size_t kMaxPhases = 8;
inline constexpr size_t kPhaseNameMax = 40;   // bytes, with the NUL
inline constexpr size_t kMaxRecords = 512;    // threads per node, ever

struct PhaseRecord {
  char name[kPhaseNameMax] = {};
  uint32_t depth = 0;  // begins not yet ended
  std::atomic<uint64_t> count{0};
  uint64_t begin_ns[kCategoryCount] = {};
  uint64_t begin_counters[kCounterCount] = {};
  std::atomic<uint64_t> ns[kCategoryCount] = {};
  std::atomic<uint64_t> counters[kCounterCount] = {};
};

struct ThreadStats {
  std::atomic<bool> used{false};
  ThreadKind kind = ThreadKind::kApp;
  uint32_t node = 0;
  uint64_t number = 0;  // the thread's job-wide number (its handle's low bits)
  std::atomic<int64_t> start_ns{0};
  std::atomic<int64_t> end_ns{0};  // 0 while the thread runs
  std::atomic<int64_t> last_ns{0};  // when cur was last charged
  std::atomic<uint8_t> cur{0};
  std::atomic<uint64_t> ns[kCategoryCount] = {};
  std::atomic<uint64_t> counters[kCounterCount] = {};
  std::atomic<uint32_t> phases_used{0};
  PhaseRecord phases[kMaxPhases];
  // Owner thread only: ns at the last phase boundary. Move takes nothing
  // from below it, so no phase loses more than it was charged.
  uint64_t floor_ns[kCategoryCount] = {};

  // Owner thread only. Charges the time since the last switch to cur.
  void Flush(int64_t now);
  // Switches to c; returns the category left.
  Category Enter(Category c);
  void Leave(Category prev);
  // Moves up to n ns already charged to `from` since the last phase boundary
  // over to `to`.
  void Move(Category from, Category to, uint64_t n);
  void Count(Counter c, uint64_t n = 1) {
    auto& a = counters[size_t(c)];
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

int64_t NowNs();

// Turns recording on for this process (before any thread registers).
void Enable();
bool Enabled();
// Gives the calling thread a record (nothing if recording is off, the thread
// has one, or kMaxRecords were used). REQUIRES: the caller is inside the
// runtime (RuntimeScope): nothing here allocates, but callers may.
void RegisterThread(ThreadKind kind, uint32_t node, uint64_t number);
// The calling thread's life ends now; its record stays for the report.
void EndThread();
// The calling thread's record, or nullptr.
ThreadStats* Current();

// The kernel's part of delivering one fault on this node's backend
// (prim::MeasureFaultDelivery, at start when recording is on; 0 before).
void SetFaultDeliveryNs(uint64_t ns);
// How the node finds writes: "scan" or "fault" (SVM_WRITES, as chosen at
// start); reported beside the counters. A string literal.
void SetWriteDetection(const char* how);
// Whether the node's waiting threads spin before they sleep, and what a
// wake-up from another CPU costs on its host (SVM_HOST_WAKE_NS; 0:
// unknown); reported beside the counters.
void SetSpinPolicy(bool spin, uint64_t host_wake_ns);
uint64_t FaultDeliveryNs();

// Charges the enclosing stretch of runtime work to a category.
class Scope {
 public:
  explicit Scope(Category c) : t_(Current()), cat_(c) {
    if (t_) prev_ = t_->Enter(c);
  }
  // Time that ran before the scope but belongs to it (a fault's delivery by
  // the kernel, before the handler ran): taken from what the thread did
  // before, usually compute.
  void ClaimEarlier(uint64_t ns) {
    if (t_) t_->Move(prev_, cat_, ns);
  }
  ~Scope() {
    if (t_) t_->Leave(prev_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 protected:
  struct NoSwitch {};
  explicit Scope(NoSwitch) : t_(Current()) {}
  ThreadStats* t_;
  Category cat_ = Category::kCompute;
  Category prev_ = Category::kCompute;
};

// A blocked stretch: charged to WaitOf(the current category).
class WaitScope : public Scope {
 public:
  WaitScope() : Scope(NoSwitch{}) {
    if (t_) prev_ = t_->Enter(WaitOf(Category(t_->cur.load(std::memory_order_relaxed))));
  }
};

// Around one call into the protocol Node: if the call made a twin or a diff,
// what it charged to the current category goes to twin or diff.
// REQUIRES: s is the Node's stats, stable (mu_ held) for the probe's life.
class NodeCall {
 public:
  explicit NodeCall(const NodeStats& s);
  ~NodeCall();
  NodeCall(const NodeCall&) = delete;
  NodeCall& operator=(const NodeCall&) = delete;

 private:
  ThreadStats* t_;
  const NodeStats& s_;
  uint64_t twins_ = 0, diffs_ = 0, charged_ = 0;
  uint8_t cat_ = 0;
};

// Phases of the calling thread (svm_phase_begin/end). Unknown or unbalanced
// ends are ignored; names past kMaxPhases are not recorded.
void PhaseBegin(const char* name);
void PhaseEnd(const char* name);

// Runtime messages (spawn, join, ...) the Node does not count.
void CountRuntimeMessage(MessageType t, size_t bytes);
void CountRuntimeHandler();
// nil's NIC lock operations below Host::NicLockTail: a CAS that claims a
// lock number at the lock's home (NicLockMap), and a tail swap, `retried`
// when its guess of the tail was wrong and it goes again.
void CountLockClaim();
void CountTailSwap(bool retried);

// What this node's NIC did, where its transport counts it (shm: the
// transport's own counters; zeros elsewhere). Set before the report.
struct NicCounters {
  bool counted = false;     // false: the transport does not count these
  uint64_t sends = 0;       // SENDs posted (fragments each, sends to self included)
  uint64_t remote_ops = 0;  // READ/WRITE/CAS/FAA run by this node's threads on peers' memory
  uint64_t wakeups = 0;     // futex wake-ups this node sent to peers' threads
  uint64_t drained = 0;     // messages this node's threads took from its rings
};
void SetNicCounters(const NicCounters& c);

// This node's report as JSON text: its threads' records and the Node's
// counters (merged with the runtime's own). See doc/stats.md.
std::string ReportJson(uint32_t node, const NodeStats& node_stats);
// A short human-readable form (SVM_SHOW_STATS).
std::string ReportText(uint32_t node, const NodeStats& node_stats);
// Writes ReportJson to dir/node-<node>.json (through a temporary and a
// rename, so readers never see half a file). False on failure.
bool WriteReport(const std::string& dir, uint32_t node, const NodeStats& node_stats);

}  // namespace svm::rt::stats
