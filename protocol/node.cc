// Node: construction, message dispatch, intervals and views. Pages, locks and
// barriers live in node_page.cc, node_lock.cc and node_barrier.cc.
#include "protocol/node.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <type_traits>

#include "protocol/node_state.h"
#include "protocol/diff.h"
#include "protocol/wire.h"

namespace svm {

const char* ToString(PlantedBug b) {
  switch (b) {
    case PlantedBug::kNone: return "none";
    case PlantedBug::kSkipInvalidation: return "skip-invalidation";
    case PlantedBug::kNoVersionWait: return "no-version-wait";
    case PlantedBug::kUnsafeFetch: return "unsafe-fetch";
    case PlantedBug::kEarlyDropCheck: return "early-drop-check";
    case PlantedBug::kMarkDroppedAtInstall: return "mark-dropped-at-install";
  }
  return "?";
}

Node::Node(const NodeConfig& config, Host* host)
    : config_(config),
      host_(host),
      homes_(config.geometry, config.home_policy, config.cyclic_block, config.max_run),
      log_(config.geometry.nodes),
      applied_(config.geometry.nodes),
      views_(config.threads, VectorTime(config.geometry.nodes)),
      sweep_next_(config.threads, 0),
      sweep_start_(config.threads, kNoPage),
      strides_(config.threads),
      blocked_on_(config.threads, kNoPage),
      write_sweeps_(config.threads),
      reported_(config.geometry.nodes),
      elsewhere_(config.threads, 0) {
  assert(config.geometry.Validate().ok());
  assert(config.self < config.geometry.nodes);
  assert(config.threads >= 1);
  fills_.reserve(config.max_run);  // a run's fills: a remote fault allocates nothing
}

Node::~Node() = default;

void Node::Send(NodeId to, const Message& m) {
  std::vector<uint8_t> bytes = host_->SendBuffer();
  wire::Encode(m, config_.epoch, &bytes);
  SendEncoded(to, TypeOf(m), std::move(bytes));
}

void Node::SendPageReply(NodeId to, PageId page, uint32_t stride, std::span<const VectorTime> versions,
                         std::span<const std::span<const uint8_t>> frames) {
  std::vector<uint8_t> bytes = host_->SendBuffer();
  wire::EncodePageReply(page, stride, versions, frames, config_.epoch, &bytes);
  SendEncoded(to, MessageType::kPageReply, std::move(bytes));
}

void Node::SendEncoded(NodeId to, MessageType type, std::vector<uint8_t> bytes) {
  assert(to != config_.self && to < nodes());
  stats_.messages_sent[size_t(type)]++;
  stats_.bytes_sent[size_t(type)] += bytes.size();
  host_->Send(to, std::move(bytes));
}

Status Node::Receive(NodeId from, std::span<const uint8_t> bytes) {
  if (from >= nodes() || from == config_.self)
    return Status::InvalidArgument("message from an impossible sender");
  // Into rx_ (no allocation per page reply), unless a handler is receiving
  // already.
  Message nested;
  wire::Header h;
  const bool header = wire::DecodeHeader(bytes, &h).ok();
  const bool slot = !receiving_ && header;
  Message& msg = slot ? rx_[size_t(h.type) - 1] : nested;
  const bool outer = !receiving_;
  receiving_ = true;
  struct Done {
    bool& receiving;
    bool outer;
    ~Done() {
      if (outer) receiving = false;
    }
  } done{receiving_, outer};
  if (header && h.type == MessageType::kPageReply) {
    // Its pages go from the bytes received to their frames: one copy.
    if (!std::holds_alternative<PageReply>(msg)) msg.emplace<PageReply>();
    PageReply& m = std::get<PageReply>(msg);
    std::span<const uint8_t> data;
    if (Status st = wire::DecodePageReplyView(bytes, config_.epoch, nodes(), &m, &data); !st.ok()) return st;
    stats_.handler[static_cast<size_t>(HandlerKindOf(h.type))]++;
    return OnPageReply(from, m, data);
  }
  Status st = wire::DecodeReusing(bytes, config_.epoch, nodes(), &msg);
  if (!st.ok()) return st;
  if (!IsProtocolMessage(TypeOf(msg)))
    return Status::InvalidArgument("runtime message handed to the protocol");
  stats_.handler[static_cast<size_t>(HandlerKindOf(TypeOf(msg)))]++;
  return std::visit(
      [&](auto& m) -> Status {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, FetchRequest>) return OnFetchRequest(from, m);
        else if constexpr (std::is_same_v<T, PageReply>) return OnPageReply(from, m, m.data);
        else if constexpr (std::is_same_v<T, DiffMessage>) return OnDiff(from, m);
        else if constexpr (std::is_same_v<T, LockRequest>) return OnLockRequest(from, m);
        else if constexpr (std::is_same_v<T, LockGrant>) return OnLockGrant(from, m);
        else if constexpr (std::is_same_v<T, BarrierArrive>) return OnBarrierArrive(from, m);
        else if constexpr (std::is_same_v<T, BarrierRelease>) return OnBarrierRelease(from, m);
        else if constexpr (std::is_same_v<T, HomeClaim>) return OnHomeClaim(from, m);
        else if constexpr (std::is_same_v<T, HomeReply>) return OnHomeReply(from, m);
        else if constexpr (std::is_same_v<T, MarksDropped>) return OnMarksDropped(from, m);
        else return Status::InvalidArgument("runtime message handed to the protocol");
      },
      msg);
}

// Ends the open interval: write-protects and diffs every dirty page (lazy
// diffing: only now, when another node may come to need the writes), and
// records the pages written as a write notice of the new interval (dw:
// deposited at every other node as well).
void Node::CloseInterval() {
  TrackMarked();
  FindWrites();
  if (dirty_.empty()) return;
  const NodeId self = config_.self;
  const IntervalId interval = log_.known()[self] + 1;
  WriteNotice notice{self, interval, {}};
  // Protect every page first (in runs), then diff: a write racing with a
  // diff must fault and start a fresh twin (scan_writes: be recorded for the
  // next look), not slip in between.
  {
    ProtectionBatch batch(this);
    for (PageId p : dirty_) {
      Page& pg = pages_.At(p);
      assert(pg.state == Page::State::kWrite);
      if (pg.home == self) {
        SetVersion(p, self, interval);
        if (CanUntrack(p, pg)) {  // stays written, read-write
          pg.tracked = false;
          untracked_.push_back(p);
          stats_.untracked_again++;
        } else {
          pg.state = Page::State::kRead;
        }
      } else {
        pg.state = pg.stale ? Page::State::kInvalid : Page::State::kRead;
        pg.stale = false;
      }
      SyncProtection(p, pg);
    }
  }
  for (PageId p : dirty_) {
    Page& pg = pages_.At(p);
    if (pg.home == self) {
      notice.pages.push_back(p);
      continue;
    }
    DiffMessage d{p, interval, {}};
    const size_t page_size = config_.geometry.page_size;
    // A direct diff is stored by the NIC's WRITE_RUNS, which may take runs only.
    const diff::Form form =
        DiffsDirectly(config_.mode) && !config_.masked_direct_diffs ? diff::Form::kRuns : diff::Form::kSmallest;
    diff::EncodeResult r = diff::Encode(host_->Frame(p), {pg.twin, page_size}, &d.runs, diff::Best(), form);
    if (config_.scan_writes && pg.state == Page::State::kRead) {
      // The copy stays twinned: the twin takes the bytes sent, so a write
      // racing with this diff still differs from it at the next look.
      if (r.runs != 0) (void)diff::Apply(d.runs, {pg.twin, page_size});
    } else {
      DropTwin(pg);
    }
    if (r.runs == 0) continue;
    stats_.diffs++;
    stats_.diff_bytes += r.bytes;
    stats_.diff_runs += r.runs;
    stats_.masked_diffs += r.masked;
    // A fetch already on its way may be answered before this diff lands;
    // demanding our own interval makes such a reply stale.
    pg.need[self] = interval;
    if (DiffsDirectly(config_.mode)) {
      stats_.direct_diffs++;
      host_->WriteDiff(pg.home, p, interval, d.runs);
    } else {
      Send(pg.home, d);
    }
    notice.pages.push_back(p);
  }
  dirty_.clear();
  if (DepositsNotices(config_.mode) && nodes() > 1) {
    stats_.notices_deposited++;
    host_->DepositNotice(notice);
  }
  Status st = log_.Add(std::move(notice));
  assert(st.ok());
  (void)st;
  applied_[self] = interval;
  stats_.intervals++;
}

// Thread t's view advances to cover v. Notices in v that no local thread had
// applied yet are applied now, node-wide (threads share the frames); the
// rest of the bins wait for an acquire that needs them.
void Node::ApplyView(ThreadId t, const VectorTime& v) {
  VectorTime to = applied_;
  to.Merge(v);
  if (!(to == applied_)) {
    assert(log_.known().Covers(to));
    GiveBackMarks();
    ProtectionBatch batch(this);
    log_.ForEachPage(applied_, to, [&](NodeId writer, IntervalId interval, PageId p) {
      Invalidate(p, writer, interval);
    });
    applied_ = std::move(to);
  }
  views_[t].Merge(v);
}

Status Node::CheckNotices(const std::vector<WriteNotice>& notices,
                          const VectorTime* must_cover) const {
  VectorTime known = log_.known();
  for (const WriteNotice& n : notices) {
    if (n.node >= nodes()) return Status::Malformed("write notice of an unknown node");
    for (PageId p : n.pages)
      if (p >= config_.geometry.pages) return Status::OutOfRange("write notice beyond the region");
    if (n.interval <= known[n.node]) continue;
    if (n.node == config_.self)
      return Status::Malformed("write notice of an interval this node has not closed");
    if (n.interval != known[n.node] + 1) return Status::Malformed("write notices leave a gap");
    known[n.node] = n.interval;
  }
  if (must_cover && !known.Covers(*must_cover))
    return Status::Malformed("timestamp ahead of the write notices that came with it");
  return Status::Ok();
}

Status Node::CheckOwnIntervals(const VectorTime& t) const {
  if (t.size() != nodes()) return Status::Malformed("timestamp of the wrong size");
  if (t[config_.self] > log_.known()[config_.self])
    return Status::Malformed("timestamp names an interval this node has not closed");
  return Status::Ok();
}

void Node::AddNotices(std::vector<WriteNotice>& notices) {
  for (WriteNotice& n : notices) {
    Status st = log_.Add(std::move(n));
    assert(st.ok());
    (void)st;
  }
}

void Node::TakeDeposits() {
  if (!DepositsNotices(config_.mode)) return;
  std::vector<WriteNotice> notices;
  host_->TakeNotices(&notices);
  if (notices.empty()) return;
  stats_.notices_taken += notices.size();
  // Each writer's deposits come in order, so they extend the bins.
  Status st = CheckNotices(notices, nullptr);
  assert(st.ok());
  (void)st;
  AddNotices(notices);
}

bool Node::NeedsPoll() const {
  return !pending_grants_.empty() || !pending_releases_.empty() || !version_waits_.empty();
}

void Node::Poll() {
  stats_.polls++;
  TakeDeposits();
  const VectorTime& known = log_.known();
  std::vector<LockId> granted;
  std::erase_if(pending_grants_, [&](LockId l) {
    if (!known.Covers(*locks_.at(l)->grant)) return false;
    granted.push_back(l);
    return true;
  });
  for (LockId l : granted) FinishGrant(l, *locks_.at(l));
  std::vector<BarrierRelease> released;
  std::erase_if(pending_releases_, [&](BarrierRelease& m) {
    if (!known.Covers(m.time)) return false;
    released.push_back(std::move(m));
    return true;
  });
  for (BarrierRelease& m : released) FinishRelease(m);
  std::erase_if(version_waits_, [&](PageId p) {
    Page& pg = pages_.At(p);
    if (!VersionCovers(p, pg.need)) return false;
    SyncProtection(p, pg);
    WakeWaiters(pg);
    return true;
  });
}

}  // namespace svm
