// Runtime as the protocol's Host for modes dw, rf, dd and nil: the memory this
// node exports to its peers' NICs, and the one-sided operations on theirs.
//
// An operation (OneSided) is one or more work requests posted together with
// one wr id; only its last is signaled (completions come in posting order per
// peer, so the last completing means all did), errors always complete. The
// op's buffers live until then. Completions are run under mu_ by whichever
// thread polls os_cq_: a thread waiting in WaitSlot (the faulting or
// acquiring thread itself, usually), or the handler thread when idle.
//
// NIC lock numbers (nil): a claim table at each home (NicLockMap,
// kLockClaims), claimed by remote CAS; the answers are cached in lock_nos_.
// Each number has a tail word (kLockTails) that NicLockTail swaps by CAS.
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "libsvm/nic_lock_map.h"
#include "libsvm/runtime.h"
#include "libsvm/runtime_state.h"
#include "libsvm/stats.h"
#include "nic_ext/runs.h"
#include "util/coding.h"
#include "protocol/diff.h"

namespace svm::rt {
namespace {

// Memory a peer may access, as a memory file (see SharedMemory).
template <typename T>
Status Export(const char* name, size_t bytes, SharedMemory* mem, T** out) {
  if (Status st = SharedMemory::Create(name, bytes, mem); !st.ok()) return st;
  *out = static_cast<T*>(mem->data());
  return Status::Ok();
}

// Most operations and map nodes kept for reuse, and how many a node starts
// with: a fault's read and what a barrier leaves in flight beside it (marks
// given back, diffs), each with room for a page and a run's versions.
constexpr size_t kSpareOps = 64;
constexpr size_t kFirstSpareOps = 8;

}  // namespace

// The fault path's working vectors at their largest (a strided run: a mark,
// a version and a frame a page), so that a remote fault allocates nothing
// once the node is up (issue 14).
void Runtime::PrepareOneSided() {
  spare_ops_.reserve(kSpareOps);
  spare_nodes_.reserve(kSpareOps);
  read_versions_.assign(kMaxPageRun, VectorTime(opts_.nodes));
  read_wrs_.reserve(3 * kMaxPageRun);
  batched_posts_.reserve(3 * kMaxPageRun);
  for (uint64_t i = 0; i < kFirstSpareOps; ++i) {
    auto op = std::make_unique<OneSided>();
    op->buf.reserve(geometry_.page_size + kMaxPageRun * opts_.nodes * sizeof(IntervalId));
    spare_ops_.push_back(std::move(op));
    spare_nodes_.push_back(os_ops_.extract(os_ops_.emplace(i, nullptr).first));
  }
}

Status Runtime::OpenExported() {
  const uint32_t n = opts_.nodes;
  versions_bytes_ = geometry_.pages * n * sizeof(IntervalId);
  if (Status st = Export("svm-versions", versions_bytes_, &versions_mem_, &versions_); !st.ok()) return st;
  if (Status st = Export("svm-marks", geometry_.pages * sizeof(uint64_t), &marks_mem_, &marks_); !st.ok())
    return st;
  // The thread counter, the heap's break and the lock nudge, one word each.
  uint64_t* counter = nullptr;
  if (Status st = Export("svm-counters", 3 * sizeof(uint64_t), &counter_mem_, &counter); !st.ok()) return st;
  counter[0] = std::atomic_ref<uint64_t>(job_threads_local_).load();
  counter[1] = std::atomic_ref<uint64_t>(heap_break_local_).load();
  job_threads_ = &counter[0];
  heap_break_ = &counter[1];
  if (n > 1) lock_nudge_ = &counter[2];
  if (n > 1 && DepositsNotices(opts_.mode)) {
    NoticeRingOptions ro;
    ro.self = opts_.node;
    ro.nodes = n;
    ro.ring_bytes = uint32_t(opts_.notice_ring);  // SVM_NOTICE_RING
    ro.deposit_region = kDeposits;
    ro.heads_region = kDepositHeads;
    rings_ = std::make_unique<NoticeRings>(ro, nic_.get());
    if (rings_->DepositRegion().base == nullptr || rings_->HeadsRegion().base == nullptr)
      return Status::Unsupported("mapping the write-notice rings failed");
  }
  if (n > 1 && opts_.home == HomePolicy::kFirstTouch && ReadsRemotely(opts_.mode)) {
    if (Status st = Export("svm-homes", geometry_.pages * sizeof(uint64_t), &homes_mem_, &home_words_); !st.ok())
      return st;
  }
  if (LocksAtNic(opts_.mode)) {
    if (Status st = Export("svm-lock-claims", NicLockMap().table_bytes(), &claims_mem_, &lock_claims_); !st.ok())
      return st;
    if (Status st = Export("svm-lock-tails", NicLockMap().table_bytes(), &tails_mem_, &lock_tails_); !st.ok())
      return st;
  }
  return Status::Ok();
}

Status Runtime::ConnectNic() {
  if (!nic_) return Status::Ok();
  auto reg = [this](uint32_t id, const SharedMemory& m, size_t len) {
    return nic_->RegisterRegion({id, m.data(), len, m.fd(), 0});
  };
  const Segment& heap = *segments_.front();
  if (Status st = reg(kCounterRegion, counter_mem_, sizeof(uint64_t)); !st.ok()) return st;
  if (Status st = nic_->RegisterRegion({kHeapBreak, heap_break_, sizeof(uint64_t), counter_mem_.fd(), sizeof(uint64_t)});
      !st.ok())
    return st;
  auto frames = [this](uint32_t id, const prim::Region& r) {
    return nic_->RegisterRegion({id, r.proto(), r.size(), r.fd(), 0});
  };
  if (Status st = frames(kHeapFrames, *heap.region); !st.ok()) return st;
  if (segments_.size() > 1) {
    if (Status st = frames(kGlobalsFrames, *segments_[1]->region); !st.ok()) return st;
  }
  if (Status st = reg(kVersions, versions_mem_, versions_bytes_); !st.ok()) return st;
  if (Status st = reg(kSharedMarks, marks_mem_, geometry_.pages * sizeof(uint64_t)); !st.ok()) return st;
  if (home_words_) {
    if (Status st = reg(kHomeWords, homes_mem_, geometry_.pages * sizeof(uint64_t)); !st.ok()) return st;
  }
  if (rings_) {
    if (Status st = nic_->RegisterRegion(rings_->DepositRegion()); !st.ok()) return st;
    if (Status st = nic_->RegisterRegion(rings_->HeadsRegion()); !st.ok()) return st;
  }
  if (lock_nudge_) {
    if (Status st = nic_->RegisterRegion(
            {kLockNudge, lock_nudge_, sizeof(uint64_t), counter_mem_.fd(), 2 * sizeof(uint64_t)});
        !st.ok())
      return st;
  }
  if (lock_claims_) {
    if (Status st = reg(kLockClaims, claims_mem_, NicLockMap().table_bytes()); !st.ok()) return st;
    if (Status st = reg(kLockTails, tails_mem_, NicLockMap().table_bytes()); !st.ok()) return st;
  }
  return nic_->Connect(peers_);
}

std::span<IntervalId> Runtime::Versions(PageId p) {
  return {versions_ + p * opts_.nodes, opts_.nodes};
}

uint64_t& Runtime::SharedMark(PageId p) { return marks_[p]; }

uint64_t& Runtime::HomeWord(PageId p) { return home_words_[p]; }

std::pair<uint32_t, uint64_t> Runtime::FrameAt(PageId p) {
  Segment& s = SegmentOf(p);
  return {&s == segments_.front().get() ? kHeapFrames : kGlobalsFrames,
          (p - s.first) * s.region->page_size()};
}

void Runtime::PostOneSided(std::unique_ptr<OneSided> op, std::span<nic::WorkRequest> wrs) {
  const uint64_t id = next_wr_++;
  for (nic::WorkRequest& wr : wrs) {
    wr.wr_id = id;
    wr.signaled = false;
  }
  wrs.back().signaled = true;
  // Only reads of pages wait: the buffers they name live in the op or are
  // frames (others' are on their callers' stacks).
  if (batching_posts_ > 0 && op->kind == OneSided::Kind::kReadPage) {
    batched_posts_.insert(batched_posts_.end(), wrs.begin(), wrs.end());
  } else {
    PostNow(wrs);
  }
  TrackOp(id, std::move(op));
}

// In a map node kept from an earlier operation when there is one.
void Runtime::TrackOp(uint64_t id, std::unique_ptr<OneSided> op) {
  if (spare_nodes_.empty()) {
    os_ops_.emplace(id, std::move(op));
    return;
  }
  auto node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.key() = id;
  node.mapped() = std::move(op);
  os_ops_.insert(std::move(node));
}

void Runtime::FlushPosts() {
  PostNow(batched_posts_);
  batched_posts_.clear();
}

void Runtime::PostNow(std::span<nic::WorkRequest> wrs) {
  // The NIC takes at most kMaxOutstanding requests in flight: post in slices
  // and wait for room (it frees slots as responses arrive, whoever polls).
  constexpr size_t kSlice = 256;
  for (size_t at = 0; at < wrs.size();) {
    const size_t n = std::min(kSlice, wrs.size() - at);
    Status st = nic_->Post(&os_cq_, wrs.subspan(at, n));
    if (st.ok()) {
      at += n;
    } else if (st.code() == Status::Code::kOutOfRange) {
      sched_yield();
    } else {
      NetworkFailed(fmt::format("{} to node {} failed: {}", nic::ToString(wrs[at].op), wrs[at].peer,
                                st.ToString()));
    }
  }
}

std::unique_ptr<Runtime::OneSided> Runtime::NewOp(uint8_t kind) {
  std::unique_ptr<OneSided> op;
  if (spare_ops_.empty()) {
    op = std::make_unique<OneSided>();
  } else {
    op = std::move(spare_ops_.back());
    spare_ops_.pop_back();
    auto buf = std::move(op->buf);  // keeps its capacity
    *op = OneSided();
    op->buf = std::move(buf);
    op->buf.clear();
  }
  op->kind = OneSided::Kind(kind);
  return op;
}

void Runtime::RecycleOp(std::unique_ptr<OneSided> op) {
  if (op && spare_ops_.size() < kSpareOps) spare_ops_.push_back(std::move(op));
}

// How long a re-read waits: about a handler's turn at the home.
constexpr int64_t kReadRetryNs = 50'000;

void Runtime::ReadPages(NodeId home, PageId first, uint32_t count, uint32_t stride, uint64_t mark,
                        Landing into) {
  if (completing_read_ && !DiffsDirectly(opts_.mode)) {
    deferred_reads_.push_back({MonotonicNs() + kReadRetryNs, home, first, count, stride, mark, into});
    return;
  }
  auto op = NewOp(uint8_t(OneSided::Kind::kReadPage));
  op->home = home;
  op->page = first;
  op->count = count;
  op->stride = stride;
  op->into = into;
  const uint32_t vbytes = opts_.nodes * sizeof(IntervalId);
  const uint32_t page = uint32_t(Frame(first).size());
  // The pages land where they are read from next (the seed's VMMC receives
  // into the frame as well): one copy, not two.
  const bool into_frames = into.where == Landing::Where::kFrames;
  op->buf.resize(size_t(count) * (vbytes + (into.where == Landing::Where::kBuffer ? page : 0)));
  uint8_t* data = into_frames                           ? Frame(first).data()
                  : into.where == Landing::Where::kAt ? into.at
                                                        : op->buf.data() + count * vbytes;
  // A run's frames made in one step, not by a page fault each as the copy
  // reaches them (frames fetched before are there: nothing to do).
  if (into_frames && count > 1 && stride == 1) Populate({data, size_t(count) * page});
  // The marks before the reads (a peer executes one pair's requests in
  // order): a home write a copy misses is in a notice.
  std::vector<nic::WorkRequest>& wrs = read_wrs_;
  wrs.clear();
  for (uint32_t i = 0; i < count; ++i)
    if (mark & (uint64_t{1} << i))
      wrs.push_back(nic::WorkRequest::Faa(home, kSharedMarks, (first + i * stride) * sizeof(uint64_t), 1));
  if (stride == 1) {
    const auto [region, offset] = FrameAt(first);
    nic::Sge v{op->buf.data(), count * vbytes};
    nic::Sge d{data, count * page};
    wrs.push_back(nic::WorkRequest::Read(home, kVersions, first * vbytes, {&v, 1}));  // the versions first
    wrs.push_back(nic::WorkRequest::Read(home, region, offset, {&d, 1}));
  } else {
    // Every page's version, then every page: a READ each.
    for (uint32_t i = 0; i < count; ++i) {
      nic::Sge v{op->buf.data() + i * vbytes, vbytes};
      wrs.push_back(nic::WorkRequest::Read(home, kVersions, (first + i * stride) * vbytes, {&v, 1}));
    }
    for (uint32_t i = 0; i < count; ++i) {
      const PageId q = first + i * stride;
      const auto [region, offset] = FrameAt(q);
      nic::Sge d{into_frames ? Frame(q).data() : data + size_t(i) * page, page};
      wrs.push_back(nic::WorkRequest::Read(home, region, offset, {&d, 1}));
    }
  }
  PostOneSided(std::move(op), wrs);
}

// First touch: the read of the words after p (unsignaled), then p's CAS,
// whose completion carries the old word: the claim's outcome. Only a won
// claim takes pages ahead (PostClaimAhead), and only those the read found
// free, up to the first another node holds: CASes posted with p's, whatever
// its fate, gave a node that lost the first page of another's block the
// pages after it, which that node then wrote, and diffed, every interval
// (ocean -S medium, 2 x 2 rf over shm: 22,482 diffs against 5,630).
void Runtime::ClaimHome(NodeId manager, PageId p, uint32_t count, uint32_t ahead) {
  auto op = NewOp(uint8_t(OneSided::Kind::kHomeClaim));
  op->home = manager;
  op->page = p;
  op->count = count - 1;
  op->ahead = ahead;
  op->won = false;
  op->buf.resize(size_t(op->count) * sizeof(uint64_t));
  const uint64_t mine = uint64_t(self()) + 1;
  if (manager == self() && LocalAtomicsMatchNic()) {
    // Served here as the NIC would serve it, without its round trip (over
    // tcp a loopback through the NIC thread); completed the same way.
    const uint64_t old = LocalCas(&home_words_[p], 0, mine);
    op->won = old == 0;
    for (uint32_t i = 1; op->won && i <= ahead; ++i)
      if (LocalCas(&home_words_[p + i], 0, mine) != 0) break;
    for (uint32_t i = 0; i < op->count; ++i) {
      const uint64_t w = std::atomic_ref<uint64_t>(home_words_[p + 1 + i]).load(std::memory_order_acquire);
      std::memcpy(op->buf.data() + i * sizeof(uint64_t), &w, sizeof w);
    }
    CompleteHere(std::move(op), old);
    return;
  }
  nic::Sge words{op->buf.data(), uint32_t(op->buf.size())};
  nic::WorkRequest wrs[2];
  size_t n = 0;
  if (op->count > 0) wrs[n++] = nic::WorkRequest::Read(manager, kHomeWords, (p + 1) * sizeof(uint64_t), {&words, 1});
  wrs[n++] = nic::WorkRequest::Cas(manager, kHomeWords, p * sizeof(uint64_t), 0, mine);
  PostOneSided(std::move(op), std::span(wrs, n));
}

// op's page was won: the CASes of the pages after it that its read found
// free (up to op->ahead, ending at the first taken), then the words read
// again, so the claim's completion names the pages taken. False (nothing
// posted) if none was free.
bool Runtime::PostClaimAhead(std::unique_ptr<OneSided>& op) {
  uint32_t free = 0;
  for (; free < op->ahead; ++free) {
    uint64_t w;
    std::memcpy(&w, op->buf.data() + free * sizeof(uint64_t), sizeof w);
    if (w != 0) break;
  }
  if (free == 0) return false;
  const uint64_t mine = uint64_t(self()) + 1;
  const PageId p = op->page;
  nic::Sge words{op->buf.data(), uint32_t(op->buf.size())};
  nic::WorkRequest wrs[kMaxPageRun + 1];
  size_t n = 0;
  for (uint32_t i = 1; i <= free; ++i)
    wrs[n++] = nic::WorkRequest::Cas(op->home, kHomeWords, (p + i) * sizeof(uint64_t), 0, mine);
  wrs[n++] = nic::WorkRequest::Read(op->home, kHomeWords, (p + 1) * sizeof(uint64_t), {&words, 1});
  op->won = true;
  PostOneSided(std::move(op), std::span(wrs, n));
  return true;
}

// A CAS on this node's own exported word, as its NIC serves a peer's
// (LocalAtomicsMatchNic): the old value.
uint64_t Runtime::LocalCas(uint64_t* word, uint64_t expected, uint64_t desired) {
  std::atomic_ref<uint64_t>(*word).compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
  return expected;
}

// Completes an op served here as the NIC would complete its CAS: through
// os_cq_, run by whoever polls it.
void Runtime::CompleteHere(std::unique_ptr<OneSided> op, uint64_t old) {
  const uint64_t id = next_wr_++;
  TrackOp(id, std::move(op));
  nic::Completion c;
  c.wr_id = id;
  c.op = nic::Opcode::kCas;
  c.peer = self();
  c.value = old;
  os_cq_.Push(c);
}

// shm serves a peer's CAS with a CPU atomic on the word itself (mapped
// here too), and tcp's NIC thread does the same on the registered memory
// (RegionTable::Serve), so a local atomic on the word is atomic with them.
// An RDMA NIC's atomics (ofi, verbs) are atomic only among themselves.
bool Runtime::LocalAtomicsMatchNic() const { return opts_.transport == "shm" || opts_.transport == "tcp"; }

// The diff's encoding is the NIC's for WRITE_RUNS: where the NIC offers it
// the runs travel as one request (one frame on tcp, copies on shm), else as
// a WRITE each.
static_assert(diff::kRunHeaderBytes == nic::kRunHeaderBytes && diff::kMasked == nic::kMaskedRuns);

void Runtime::WriteDiff(NodeId home, PageId p, IntervalId interval, std::span<const uint8_t> runs) {
  std::unique_ptr<OneSided> op = NewOp(uint8_t(OneSided::Kind::kWriteDiff));
  op->home = home;
  op->page = p;
  op->interval = interval;
  op->buf.assign(runs.begin(), runs.end());
  const auto [region, offset] = FrameAt(p);
  std::vector<nic::WorkRequest>& wrs = diff_wrs_;
  wrs.clear();
  if (nic_->Supports(nic::Opcode::kWriteRuns)) {
    const nic::Sge all{op->buf.data(), uint32_t(op->buf.size())};
    wrs.push_back(nic::WorkRequest::WriteRuns(home, region, offset, {&all, 1}));
  } else {
    const uint64_t page = Frame(p).size();
    if (nic::IsMasked(op->buf)) Die(fmt::format("diff of page {}: a masked block for a NIC without WRITE_RUNS", p));
    if (nic::CheckRuns(op->buf, 0, [page](uint64_t at, uint64_t len) { return at + len <= page; }) !=
        nic::WcStatus::kSuccess) {
      Die(fmt::format("diff of page {}: malformed ({} bytes)", p, op->buf.size()));
    }
    nic::AppendRunWrites(op->buf, home, region, offset, &wrs);
  }
  // Then the version: whoever reads it after the page sees these runs.
  const nic::Sge version{&op->interval, sizeof(IntervalId)};
  const uint64_t vat = (p * opts_.nodes + opts_.node) * sizeof(IntervalId);
  wrs.push_back(nic::WorkRequest::Write(home, kVersions, vat, {&version, 1}));
  PostOneSided(std::move(op), wrs);
}

void Runtime::DepositNotice(const WriteNotice& notice) {
  if (!rings_) return;  // a job of one node
  if (Status st = rings_->Deposit(notice); !st.ok())
    NetworkFailed(fmt::format("depositing write notice ({}, {}): {}", notice.node, notice.interval,
                              st.ToString()));
}

void Runtime::TakeNotices(std::vector<WriteNotice>* out) {
  if (rings_) rings_->Take(out);
}

void Runtime::NicLockTail(NodeId home, LockId l, NodeId guess) {
  auto op = std::make_unique<OneSided>();
  op->home = home;
  op->lock = l;
  if (guess != kNoNode) tail_guesses_[l] = uint64_t(guess) + 1;
  if (auto it = lock_nos_.find(l); it != lock_nos_.end()) {
    op->no = it->second;
    PostTailSwap(std::move(op));
    return;
  }
  op->kind = OneSided::Kind::kLockClaim;
  op->no = NicLockMap().Start(l).no;
  PostLockClaim(std::move(op));
}

// A lock homed here is claimed and swapped on this node's own words, not
// through its NIC (over tcp a loopback through the NIC thread: 183-187 us a
// swap on a 2-CPU host, against 105 us to a peer).
void Runtime::PostLockClaim(std::unique_ptr<OneSided> op) {
  stats::CountLockClaim();
  const NicLockMap::Claim c{op->lock, op->no, op->probes};
  nic::WorkRequest wr = NicLockMap().ClaimRequest(op->home, kLockClaims, c);
  if (op->home == self() && LocalAtomicsMatchNic()) {
    CompleteHere(std::move(op), LocalCas(&lock_claims_[c.no], wr.compare, wr.operand));
    return;
  }
  PostOneSided(std::move(op), {&wr, 1});
}

// A swap is a CAS from the value last seen: usually right, since the word
// changes only when the lock crosses nodes; otherwise retried with the value
// the CAS found.
void Runtime::PostTailSwap(std::unique_ptr<OneSided> op) {
  op->kind = OneSided::Kind::kTailSwap;
  op->expected = tail_guesses_[op->lock];
  if (op->home == self() && LocalAtomicsMatchNic()) {
    const uint64_t old = LocalCas(&lock_tails_[op->no], op->expected, uint64_t(self()) + 1);
    CompleteHere(std::move(op), old);
    return;
  }
  nic::WorkRequest wr = nic::WorkRequest::Cas(op->home, kLockTails, uint64_t(op->no) * sizeof(uint64_t),
                                               op->expected, uint64_t(self()) + 1);
  PostOneSided(std::move(op), {&wr, 1});
}

void Runtime::DropMarks(NodeId home, std::span<const PageId> pages) {
  if (pages.empty()) return;
  std::vector<nic::WorkRequest>& wrs = mark_wrs_;
  wrs.clear();
  for (PageId p : pages)
    wrs.push_back(nic::WorkRequest::Faa(home, kSharedMarks, p * sizeof(uint64_t), ~uint64_t{0}));  // -1
  PostOneSided(NewOp(uint8_t(OneSided::Kind::kDropMarks)), wrs);
}

void Runtime::Nudge(NodeId to) {
  auto op = std::make_unique<OneSided>();
  op->kind = OneSided::Kind::kNudge;
  nic::WorkRequest wr = nic::WorkRequest::Faa(to, kLockNudge, 0, 1);
  PostOneSided(std::move(op), {&wr, 1});
}

// The nudge comes after the request (FIFO per pair): the request is in this
// node's rings or queue, or another thread is dispatching it. Drive and
// dispatch until the Node has had every request announced so far (bounded:
// a hint must never hang a thread), so that a release or an acquire of an
// idle token sees the remote waiter before it decides.
void Runtime::HeedNudge() {
  if (!lock_nudge_) return;
  const uint64_t announced = std::atomic_ref<uint64_t>(*lock_nudge_).load(std::memory_order_acquire);
  if (lock_requests_in_.load(std::memory_order_acquire) >= announced) return;
  const int64_t until = MonotonicNs() + 200'000;
  while (lock_requests_in_.load(std::memory_order_acquire) < announced && MonotonicNs() < until) {
    nic_->recv_queue().SpinReady(std::chrono::microseconds(5), [] { return false; });
    if (!DispatchWhileWaiting()) sched_yield();
  }
}

void Runtime::OnOneSided(std::span<const nic::Completion> done) {
  const uint32_t vbytes = opts_.nodes * sizeof(IntervalId);
  for (const nic::Completion& c : done) {
    auto it = os_ops_.find(c.wr_id);
    if (it == os_ops_.end()) continue;  // an error after its op already failed
    auto node = os_ops_.extract(it);
    std::unique_ptr<OneSided> op = std::move(node.mapped());
    if (spare_nodes_.size() < kSpareOps) spare_nodes_.push_back(std::move(node));
    if (c.status != nic::WcStatus::kSuccess)
      NetworkFailed(fmt::format("{} at node {} failed: {}", nic::ToString(c.op), c.peer,
                                nic::ToString(c.status)));
    switch (op->kind) {
      case OneSided::Kind::kReadPage: {
        stats::NodeCall call(node_->stats());
        if (read_versions_.size() < op->count) read_versions_.resize(op->count, VectorTime(opts_.nodes));
        for (uint32_t i = 0; i < op->count; ++i)
          for (NodeId n = 0; n < opts_.nodes; ++n)
            read_versions_[i][n] = coding::DecodeFixed<uint32_t>(op->buf.data() + i * vbytes + n * sizeof(IntervalId));
        const std::span<const VectorTime> versions(read_versions_.data(), op->count);
        const size_t bytes = size_t(op->count) * Frame(op->page).size();
        std::span<const uint8_t> data;  // none: they landed in their frames
        if (op->into.where == Landing::Where::kAt) data = {op->into.at, bytes};
        if (op->into.where == Landing::Where::kBuffer) data = {op->buf.data() + op->count * vbytes, bytes};
        completing_read_ = true;
        Status st = node_->OnPageRead(op->home, op->page, op->stride, versions, data);
        completing_read_ = false;
        if (!st.ok()) spdlog::error("page {} read from node {}: {}", op->page, op->home, st.ToString());
        break;
      }
      case OneSided::Kind::kHomeClaim: {
        if (!op->won && c.value == 0 && PostClaimAhead(op)) break;
        stats::NodeCall call(node_->stats());
        uint64_t following[kMaxPageRun];
        const uint32_t words = std::min(op->count, kMaxPageRun);
        std::memcpy(following, op->buf.data(), words * sizeof(uint64_t));  // as the NIC read them
        // A won claim's last completion is the read after its CASes ahead.
        Status st = node_->OnHomeClaimed(op->page, op->won ? 0 : c.value, std::span(following, words));
        if (!st.ok()) spdlog::error("home of page {} claimed at node {}: {}", op->page, op->home, st.ToString());
        break;
      }
      case OneSided::Kind::kWriteDiff:
      case OneSided::Kind::kDropMarks:
      case OneSided::Kind::kNudge:
        break;  // done; the buffers go
      case OneSided::Kind::kLockClaim: {
        NicLockMap::Claim claim{op->lock, op->no, op->probes};
        bool done = false;
        if (Status st = NicLockMap().OnClaimed(&claim, c.value, &done); !st.ok())
          Die(fmt::format("node {}: {}", op->home, st.message()));
        op->no = claim.no;
        op->probes = claim.probes;
        if (done) {
          lock_nos_[op->lock] = op->no;
          PostTailSwap(std::move(op));
        } else {
          PostLockClaim(std::move(op));
        }
        break;
      }
      case OneSided::Kind::kTailSwap: {
        stats::CountTailSwap(c.value != op->expected);
        if (c.value != op->expected) {
          tail_guesses_[op->lock] = c.value;
          PostTailSwap(std::move(op));
          break;
        }
        tail_guesses_[op->lock] = uint64_t(self()) + 1;
        const NodeId previous = c.value == 0 ? op->home : NodeId(c.value - 1);
        stats::NodeCall call(node_->stats());
        Status st = node_->OnNicLockTail(op->lock, previous);
        if (!st.ok()) spdlog::error("NIC lock {:#x} swapped: {}", op->lock, st.ToString());
        break;
      }
    }
    RecycleOp(std::move(op));  // unless posted again
  }
}

void Runtime::PollOneSided() {
  if (!deferred_reads_.empty()) {
    const int64_t now = MonotonicNs();
    std::erase_if(deferred_reads_, [&](const DeferredRead& r) {
      if (r.at_ns > now) return false;
      ReadPages(r.home, r.first, r.count, r.stride, r.mark, r.into);
      return true;
    });
  }
  if (os_ops_.empty() && !node_->NeedsPoll()) return;
  nic::Completion done[32];
  while (size_t n = os_cq_.Poll(done)) OnOneSided({done, n});
  if (node_->NeedsPoll()) {
    stats::NodeCall call(node_->stats());
    node_->Poll();
  }
}

}  // namespace svm::rt
