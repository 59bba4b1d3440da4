#include "libsvm/stats.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libsvm/svm.h"

namespace svm::rt::stats {
namespace {

thread_local ThreadStats* t_stats __attribute__((tls_model("initial-exec"))) = nullptr;

std::atomic<bool> g_enabled{false};
std::atomic<uint32_t> g_next{0};
ThreadStats g_records[kMaxRecords];

// Runtime messages, which the Node neither sends nor counts.
std::atomic<uint64_t> g_rt_messages[kMessageTypeCount + 1];
std::atomic<uint64_t> g_rt_bytes[kMessageTypeCount + 1];
std::atomic<uint64_t> g_rt_handler{0};
std::atomic<uint64_t> g_lock_claims{0}, g_tail_swaps{0}, g_tail_retries{0};

void Add(std::atomic<uint64_t>& a, uint64_t n) {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

uint64_t Get(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

// The phase called `name`, a new one if there is room, else nullptr.
PhaseRecord* FindPhase(ThreadStats* t, const char* name, bool create) {
  const uint32_t used = t->phases_used.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < used; ++i)
    if (std::strncmp(t->phases[i].name, name, kPhaseNameMax) == 0) return &t->phases[i];
  if (!create || used == kMaxPhases) return nullptr;
  PhaseRecord* p = &t->phases[used];
  std::memcpy(p->name, name, kPhaseNameMax);
  t->phases_used.store(used + 1, std::memory_order_release);
  return p;
}

// A copy of a record's times with the open stretch charged, as of now.
struct Snapshot {
  uint64_t ns[kCategoryCount];
  int64_t start = 0, end = 0;
};

Snapshot Snap(const ThreadStats& t, int64_t now) {
  Snapshot s;
  for (size_t i = 0; i < kCategoryCount; ++i) s.ns[i] = Get(t.ns[i]);
  s.start = t.start_ns.load(std::memory_order_relaxed);
  s.end = t.end_ns.load(std::memory_order_relaxed);
  if (s.end == 0) {  // still running: charge what it is doing now
    const int64_t last = t.last_ns.load(std::memory_order_relaxed);
    const uint8_t cur = t.cur.load(std::memory_order_relaxed);
    if (now > last && cur < kCategoryCount) s.ns[cur] += uint64_t(now - last);
    s.end = std::max(now, last);
  }
  return s;
}

nlohmann::json Times(const uint64_t* ns, ThreadKind kind) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < kCategoryCount; ++i) {
    const auto c = Category(i);
    // An app thread is never idle, the handler never computes.
    if (kind == ThreadKind::kApp && c == Category::kIdle) continue;
    if (kind == ThreadKind::kHandler && c == Category::kCompute) continue;
    j[ToString(c)] = ns[i];
  }
  return j;
}

nlohmann::json Counters(const uint64_t* v) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < kCounterCount; ++i) j[ToString(Counter(i))] = v[i];
  return j;
}

nlohmann::json ThreadJson(const ThreadStats& t, int64_t now) {
  const Snapshot s = Snap(t, now);
  nlohmann::json j;
  j["node"] = t.node;
  j["thread"] = t.number;
  j["kind"] = t.kind == ThreadKind::kApp ? "app" : "handler";
  j["start_ns"] = s.start;
  j["end_ns"] = s.end;
  j["elapsed_ns"] = s.end - s.start;
  j["running"] = t.end_ns.load(std::memory_order_relaxed) == 0;
  j["time_ns"] = Times(s.ns, t.kind);
  uint64_t counters[kCounterCount];
  for (size_t i = 0; i < kCounterCount; ++i) counters[i] = Get(t.counters[i]);
  j["counters"] = Counters(counters);
  nlohmann::json phases = nlohmann::json::array();
  const uint32_t used = t.phases_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    const PhaseRecord& p = t.phases[i];
    uint64_t ns[kCategoryCount], c[kCounterCount];
    for (size_t k = 0; k < kCategoryCount; ++k) ns[k] = Get(p.ns[k]);
    for (size_t k = 0; k < kCounterCount; ++k) c[k] = Get(p.counters[k]);
    nlohmann::json pj;
    pj["name"] = std::string(p.name, strnlen(p.name, kPhaseNameMax));
    pj["count"] = Get(p.count);
    pj["time_ns"] = Times(ns, t.kind);
    pj["counters"] = Counters(c);
    phases.push_back(std::move(pj));
  }
  j["phases"] = std::move(phases);
  return j;
}

NicCounters g_nic;  // written once, before the report, by the reporting thread

nlohmann::json NodeCounters(const NodeStats& s) {
  nlohmann::json j;
  j["read_faults"] = s.read_faults;
  j["write_faults"] = s.write_faults;
  j["fetches"] = s.fetches;
  j["fetch_retries"] = s.fetch_retries;
  j["safe_fetches"] = s.safe_fetches;
  j["pages_filled"] = s.pages_filled;
  j["twins"] = s.twins;
  j["write_scans"] = s.write_scans;
  j["pages_found_written"] = s.pages_found_written;
  j["diffs"] = s.diffs;
  j["diff_bytes"] = s.diff_bytes;
  j["diff_runs"] = s.diff_runs;
  j["masked_diffs"] = s.masked_diffs;
  j["diffs_applied"] = s.diffs_applied;
  j["intervals"] = s.intervals;
  j["invalidations"] = s.invalidations;
  j["local_acquires"] = s.local_acquires;
  j["remote_acquires"] = s.remote_acquires;
  j["barriers"] = s.barriers;
  j["notices_collected"] = s.notices_collected;
  j["gathers_given_up"] = s.gathers_given_up;
  j["protections"] = s.protections;
  j["pages_fetched"] = s.pages_fetched;
  j["pages_ahead"] = s.pages_ahead;
  j["pages_strided"] = s.pages_strided;
  j["ahead_used"] = s.ahead_used;
  j["ahead_unused"] = s.ahead_unused;
  j["untracked_pages"] = s.untracked_pages;
  j["pages_written_ahead"] = s.pages_written_ahead;
  j["tracked_pages"] = s.tracked_pages;
  j["untracked_again"] = s.untracked_again;
  j["marks_dropped"] = s.marks_dropped;
  j["remote_reads"] = s.remote_reads;
  j["direct_diffs"] = s.direct_diffs;
  j["notices_deposited"] = s.notices_deposited;
  j["notices_taken"] = s.notices_taken;
  j["nic_locks"] = s.nic_locks;
  j["nic_lock_claims"] = Get(g_lock_claims);
  j["nic_tail_swaps"] = Get(g_tail_swaps);
  j["nic_tail_retries"] = Get(g_tail_retries);
  j["home_claims"] = s.home_claims;
  j["polls"] = s.polls;
  j["fault_delivery_ns"] = FaultDeliveryNs();  // per node, not a count: see doc/stats.md
  j["nic_sends"] = g_nic.sends;
  j["nic_remote_ops"] = g_nic.remote_ops;
  j["nic_wakeups"] = g_nic.wakeups;
  j["nic_drained"] = g_nic.drained;
  nlohmann::json messages = nlohmann::json::object();
  uint64_t total = 0, total_bytes = 0;
  for (uint16_t i = 1; i <= kMessageTypeCount; ++i) {
    const uint64_t n = s.messages_sent[i] + Get(g_rt_messages[i]);
    const uint64_t b = s.bytes_sent[i] + Get(g_rt_bytes[i]);
    total += n;
    total_bytes += b;
    if (n) messages[ToString(MessageType(i))] = {{"count", n}, {"bytes", b}};
  }
  j["messages"] = std::move(messages);
  j["messages_sent"] = total;
  j["bytes_sent"] = total_bytes;
  nlohmann::json handler = nlohmann::json::object();
  for (size_t i = 0; i < kHandlerKindCount; ++i) {
    uint64_t n = s.handler[i];
    if (HandlerKind(i) == HandlerKind::kRuntime) n += Get(g_rt_handler);
    handler[ToString(HandlerKind(i))] = n;
  }
  j["handler"] = std::move(handler);
  return j;
}

}  // namespace

const char* ToString(Category c) {
  switch (c) {
    case Category::kCompute: return "compute";
    case Category::kDataProtocol: return "data_protocol";
    case Category::kDataWait: return "data_wait";
    case Category::kLockProtocol: return "lock_protocol";
    case Category::kLockWait: return "lock_wait";
    case Category::kBarrierProtocol: return "barrier_protocol";
    case Category::kBarrierWait: return "barrier_wait";
    case Category::kThreads: return "threads";
    case Category::kTwin: return "twin";
    case Category::kDiff: return "diff";
    case Category::kProtect: return "protect";
    case Category::kHandler: return "handler";
    case Category::kIdle: return "idle";
  }
  return "?";
}

Category WaitOf(Category c) {
  switch (c) {
    case Category::kDataProtocol: return Category::kDataWait;
    case Category::kLockProtocol: return Category::kLockWait;
    case Category::kBarrierProtocol: return Category::kBarrierWait;
    default: return c;
  }
}

const char* ToString(Counter c) {
  switch (c) {
    case Counter::kReadFaults: return "read_faults";
    case Counter::kWriteFaults: return "write_faults";
    case Counter::kAcquires: return "acquires";
    case Counter::kReleases: return "releases";
    case Counter::kBarriers: return "barriers";
    case Counter::kRuntimeAllocs: return "runtime_allocs";
  }
  return "?";
}

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void ThreadStats::Flush(int64_t now) {
  const int64_t last = last_ns.load(std::memory_order_relaxed);
  if (now > last) {
    auto& a = ns[cur.load(std::memory_order_relaxed)];
    a.store(a.load(std::memory_order_relaxed) + uint64_t(now - last), std::memory_order_relaxed);
  }
  last_ns.store(now, std::memory_order_relaxed);
}

Category ThreadStats::Enter(Category c) {
  Flush(NowNs());
  const auto prev = Category(cur.load(std::memory_order_relaxed));
  cur.store(uint8_t(c), std::memory_order_relaxed);
  return prev;
}

void ThreadStats::Leave(Category prev) {
  Flush(NowNs());
  cur.store(uint8_t(prev), std::memory_order_relaxed);
}

void ThreadStats::Move(Category from, Category to, uint64_t n) {
  auto& a = ns[size_t(from)];
  auto& b = ns[size_t(to)];
  const uint64_t have = a.load(std::memory_order_relaxed);
  const uint64_t floor = floor_ns[size_t(from)];
  const uint64_t m = have > floor ? std::min(have - floor, n) : 0;
  a.store(have - m, std::memory_order_relaxed);
  b.store(b.load(std::memory_order_relaxed) + m, std::memory_order_relaxed);
}

namespace {
std::atomic<uint64_t> g_fault_delivery_ns{0};
}  // namespace

void SetFaultDeliveryNs(uint64_t ns) { g_fault_delivery_ns.store(ns, std::memory_order_relaxed); }

std::atomic<const char*> g_write_detection{"fault"};
void SetWriteDetection(const char* how) { g_write_detection.store(how, std::memory_order_relaxed); }
uint64_t FaultDeliveryNs() { return g_fault_delivery_ns.load(std::memory_order_relaxed); }
std::atomic<bool> g_spin{true};
std::atomic<uint64_t> g_host_wake_ns{0};
void SetNicCounters(const NicCounters& c) { g_nic = c; }
void SetSpinPolicy(bool spin, uint64_t host_wake_ns) {
  g_spin.store(spin, std::memory_order_relaxed);
  g_host_wake_ns.store(host_wake_ns, std::memory_order_relaxed);
}

void Enable() { g_enabled.store(true); }
bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }
ThreadStats* Current() { return t_stats; }

void RegisterThread(ThreadKind kind, uint32_t node, uint64_t number) {
  if (!Enabled() || t_stats) return;
  const uint32_t i = g_next.fetch_add(1);
  if (i >= kMaxRecords) return;
  ThreadStats* t = &g_records[i];
  t->kind = kind;
  t->node = node;
  t->number = number;
  const int64_t now = NowNs();
  t->start_ns.store(now, std::memory_order_relaxed);
  t->last_ns.store(now, std::memory_order_relaxed);
  t->cur.store(uint8_t(kind == ThreadKind::kApp ? Category::kCompute : Category::kIdle));
  t->used.store(true, std::memory_order_release);
  t_stats = t;
}

void EndThread() {
  ThreadStats* t = t_stats;
  if (!t) return;
  const int64_t now = NowNs();
  t->Flush(now);
  t->end_ns.store(now, std::memory_order_relaxed);
  t_stats = nullptr;
}

NodeCall::NodeCall(const NodeStats& s) : t_(Current()), s_(s) {
  if (!t_) return;
  t_->Flush(NowNs());
  twins_ = s.twins;
  diffs_ = s.diffs;
  cat_ = t_->cur.load(std::memory_order_relaxed);
  charged_ = Get(t_->ns[cat_]);
}

NodeCall::~NodeCall() {
  if (!t_) return;
  // An interval closed without a diff (only home pages written, or no byte
  // changed) stays with the caller's category: nothing was diffed.
  const bool twin = s_.twins != twins_, diff = s_.diffs != diffs_;
  if (!twin && !diff) return;
  t_->Flush(NowNs());
  auto& from = t_->ns[cat_];
  const uint64_t now_charged = Get(from);
  const uint64_t moved = now_charged - charged_;
  from.store(charged_, std::memory_order_relaxed);
  Add(t_->ns[size_t(diff ? Category::kDiff : Category::kTwin)], moved);
}

void PhaseBegin(const char* name) {
  ThreadStats* t = Current();
  if (!t || !name) return;
  char key[kPhaseNameMax] = {};
  std::strncpy(key, name, kPhaseNameMax - 1);
  PhaseRecord* p = FindPhase(t, key, true);
  if (!p) return;
  if (p->depth++ > 0) return;
  t->Flush(NowNs());
  for (size_t i = 0; i < kCategoryCount; ++i) p->begin_ns[i] = t->floor_ns[i] = Get(t->ns[i]);
  for (size_t i = 0; i < kCounterCount; ++i) p->begin_counters[i] = Get(t->counters[i]);
}

void PhaseEnd(const char* name) {
  ThreadStats* t = Current();
  if (!t || !name) return;
  char key[kPhaseNameMax] = {};
  std::strncpy(key, name, kPhaseNameMax - 1);
  PhaseRecord* p = FindPhase(t, key, false);
  if (!p || p->depth == 0 || --p->depth > 0) return;
  t->Flush(NowNs());
  for (size_t i = 0; i < kCategoryCount; ++i) {
    t->floor_ns[i] = Get(t->ns[i]);
    Add(p->ns[i], t->floor_ns[i] - p->begin_ns[i]);
  }
  for (size_t i = 0; i < kCounterCount; ++i)
    Add(p->counters[i], Get(t->counters[i]) - p->begin_counters[i]);
  Add(p->count, 1);
}

void CountRuntimeMessage(MessageType t, size_t bytes) {
  const auto i = size_t(t);
  if (i > kMessageTypeCount) return;
  g_rt_messages[i].fetch_add(1, std::memory_order_relaxed);
  g_rt_bytes[i].fetch_add(bytes, std::memory_order_relaxed);
}

void CountRuntimeHandler() { g_rt_handler.fetch_add(1, std::memory_order_relaxed); }

void CountLockClaim() { g_lock_claims.fetch_add(1, std::memory_order_relaxed); }

void CountTailSwap(bool retried) {
  g_tail_swaps.fetch_add(1, std::memory_order_relaxed);
  if (retried) g_tail_retries.fetch_add(1, std::memory_order_relaxed);
}

std::string ReportJson(uint32_t node, const NodeStats& node_stats) {
  const int64_t now = NowNs();
  nlohmann::json j;
  j["version"] = 1;
  j["node"] = node;
  j["pid"] = getpid();
  j["report_ns"] = now;
  nlohmann::json threads = nlohmann::json::array();
  const uint32_t n = std::min<uint32_t>(g_next.load(), kMaxRecords);
  for (uint32_t i = 0; i < n; ++i)
    if (g_records[i].used.load(std::memory_order_acquire)) threads.push_back(ThreadJson(g_records[i], now));
  j["threads"] = std::move(threads);
  j["threads_dropped"] = g_next.load() > kMaxRecords ? g_next.load() - kMaxRecords : 0;
  j["counters"] = NodeCounters(node_stats);
  j["write_detection"] = g_write_detection.load(std::memory_order_relaxed);
  j["waiting_threads_spin"] = g_spin.load(std::memory_order_relaxed);
  j["host_wake_ns"] = g_host_wake_ns.load(std::memory_order_relaxed);
  return j.dump(1);
}

std::string ReportText(uint32_t node, const NodeStats& s) {
  std::string out = fmt::format(
      "svm node {}: faults {} read / {} write, fetches {} (retries {}; pages {}, {} ahead ({} strided): {} used, {} "
      "unused), twins {}, diffs {} ({} bytes, {} runs, {} masked), invalidations {}, acquires {} local / {} remote, barriers {} ({} notices "
      "collected, {} gathers given up), protections {}, home pages untracked {} (tracked later {}, untracked again {}), marks given back {}, written ahead {}, writes found by "
      "{} ({} pages in {} scans)\n"
      "svm node {}: one-sided: remote reads {}, direct diffs {}, notices {} deposited / {} taken, "
      "NIC locks {} ({} number claims, {} tail swaps, {} retried), home claims {}, polls {}\n",
      node, s.read_faults, s.write_faults, s.fetches, s.fetch_retries, s.pages_fetched, s.pages_ahead,
      s.pages_strided, s.ahead_used, s.ahead_unused, s.twins, s.diffs, s.diff_bytes,
      s.diff_runs, s.masked_diffs, s.invalidations, s.local_acquires, s.remote_acquires, s.barriers, s.notices_collected,
      s.gathers_given_up, s.protections, s.untracked_pages, s.tracked_pages, s.untracked_again, s.marks_dropped, s.pages_written_ahead,
      g_write_detection.load(std::memory_order_relaxed), s.pages_found_written, s.write_scans, node, s.remote_reads,
      s.direct_diffs,
      s.notices_deposited, s.notices_taken,
      s.nic_locks, Get(g_lock_claims), Get(g_tail_swaps), Get(g_tail_retries), s.home_claims, s.polls);
  if (g_nic.counted)
    out += fmt::format("svm node {}: nic: {} sends, {} messages drained, {} one-sided operations on peers' memory, "
                       "{} wake-ups of peers\n",
                       node, g_nic.sends, g_nic.drained, g_nic.remote_ops, g_nic.wakeups);
  const int64_t now = NowNs();
  const uint32_t n = std::min<uint32_t>(g_next.load(), kMaxRecords);
  for (uint32_t i = 0; i < n; ++i) {
    const ThreadStats& t = g_records[i];
    if (!t.used.load(std::memory_order_acquire)) continue;
    const Snapshot sn = Snap(t, now);
    out += fmt::format("  {} {:<4} {:>9.3f} ms:", t.kind == ThreadKind::kApp ? "thread " : "handler",
                       t.number, double(sn.end - sn.start) / 1e6);
    for (size_t c = 0; c < kCategoryCount; ++c)
      if (sn.ns[c]) out += fmt::format(" {} {:.3f}", ToString(Category(c)), double(sn.ns[c]) / 1e6);
    out += "\n";
  }
  return out;
}

bool WriteReport(const std::string& dir, uint32_t node, const NodeStats& node_stats) {
  const std::string text = ReportJson(node, node_stats);
  const std::string path = fmt::format("{}/node-{}.json", dir, node);
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w <= 0) break;
    done += size_t(w);
  }
  const bool ok = close(fd) == 0 && done == text.size();
  return ok && rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace svm::rt::stats

// The program's side (svm.h). Plain forwarding; they belong with the other
// exported symbols in interpose.cc once that file is free to edit.
extern "C" {
void svm_phase_begin(const char* name) { svm::rt::stats::PhaseBegin(name); }
void svm_phase_end(const char* name) { svm::rt::stats::PhaseEnd(name); }
}
