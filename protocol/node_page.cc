// Node: page faults, fetches, diffs at the home, invalidation, first touch.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstring>

#include "protocol/diff.h"
#include "protocol/node.h"
#include "protocol/node_state.h"

namespace svm {

Node::Page& Node::PageEntry(PageId p) {
  assert(p < config_.geometry.pages);
  if (Page* pg = pages_.Find(p)) return *pg;
  Page& pg = pages_.Get(p, nodes());
  if (homes_.policy() != HomePolicy::kFirstTouch) pg.home = homes_.StaticHome(p);
  return pg;
}

VectorTime Node::Version(PageId p) const {
  std::span<IntervalId> v = host_->Versions(p);
  VectorTime out(nodes());
  for (NodeId n = 0; n < nodes(); ++n)
    out[n] = std::atomic_ref<IntervalId>(v[n]).load(std::memory_order_acquire);
  return out;
}

bool Node::VersionCovers(PageId p, const VectorTime& need) const {
  std::span<IntervalId> v = host_->Versions(p);
  for (NodeId n = 0; n < nodes(); ++n)
    if (std::atomic_ref<IntervalId>(v[n]).load(std::memory_order_acquire) < need[n]) return false;
  return true;
}

// Release: a peer that reads this entry (rf) then reads the frame finds the
// bytes written before it.
void Node::SetVersion(PageId p, NodeId writer, IntervalId interval) {
  std::atomic_ref<IntervalId>(host_->Versions(p)[writer]).store(interval, std::memory_order_release);
}

Prot Node::DesiredProtection(PageId p, const Page& pg) const {
  using State = Page::State;
  if (pg.state == State::kInvalid) return Prot::kNone;
  if (pg.home == config_.self) {
    if (!VersionCovers(p, pg.need)) return Prot::kNone;  // diffs still due
    if (!pg.tracked && pg.state == State::kWrite) return Prot::kReadWrite;  // untracked
  } else if (pg.stale || pg.watched) {
    return Prot::kNone;
  }
  if (pg.state == State::kRead) return Prot::kRead;
  // scan_writes: a read page lets writes through, so one found written
  // keeps its protection.
  return config_.scan_writes && pg.prot == Prot::kRead ? Prot::kRead : Prot::kReadWrite;
}

void Node::SyncProtection(PageId p, Page& pg) {
  const Prot want = DesiredProtection(p, pg);
  // Unmapping forgets the record of the writes made since the last look, and
  // a home page has no twin to compare: count it as written.
  if (config_.scan_writes && want == Prot::kNone && pg.prot == Prot::kRead &&
      pg.home == config_.self && pg.state == Page::State::kRead)
    NoteWritten(p, pg);
  const bool changed = want != pg.prot;
  pg.prot = want;
  UpdateArmed(p, pg);
  // A dropped copy is compared with its twin only once it is unmapped. In a
  // batch that is after FlushProtections' unmapping, even when this call
  // changes nothing: a copy dropped earlier in the batch (a second notice
  // for the page) is still mapped, and a local write may land in it until
  // then, after an early compare had let the twin go.
  const bool check_dropped = pg.dropped && want == Prot::kNone;
  const bool defer_check = check_dropped && config_.TEST_bug != PlantedBug::kEarlyDropCheck;
  if (batching_ > 0 && (changed || defer_check)) {
    batch_.push_back(p);
    return;
  }
  if (changed) {
    host_->Protect(p, 1, want);
    stats_.protections++;
  }
  if (check_dropped) CheckDropped(p, pg);
  DropMark(p, pg);
}

// Not given back at once: a page read again each interval (a boundary row)
// keeps its mark, which spares its home a pair of counts per interval, and
// the copy is sure to be unmapped by then (GiveBackMarks).
void Node::DropMark(PageId p, Page& pg) {
  if (!CopyGone(pg) || pg.mark_due) return;
  pg.mark_due = true;
  marks_due_.push_back(p);
}

bool Node::CopyGone(const Page& pg) const {
  return pg.marked && pg.state == Page::State::kInvalid && !pg.fetching && pg.home != config_.self;
}

// At an acquire that applies notices, before it drops more copies: the
// marks of copies dropped at an earlier one and not fetched again since go
// back, one GiveMarksBack per home. Only with no protection batch open: a
// copy's unmapping must have taken effect (a read of it after the home
// stopped tracking could see a home write no notice announces).
void Node::GiveBackMarks() {
  if (marks_due_.empty() || batching_ > 0) return;
  marks_back_.clear();
  for (PageId p : marks_due_) {
    Page& pg = pages_.At(p);
    pg.mark_due = false;
    if (!CopyGone(pg) || pg.prot != Prot::kNone) continue;
    pg.marked = false;
    stats_.marks_dropped++;
    marks_back_.push_back({pg.home, p});
  }
  marks_due_.clear();
  std::sort(marks_back_.begin(), marks_back_.end());
  for (size_t i = 0; i < marks_back_.size();) {
    const NodeId home = marks_back_[i].first;
    marks_out_.clear();
    for (; i < marks_back_.size() && marks_back_[i].first == home; ++i) marks_out_.push_back(marks_back_[i].second);
    GiveMarksBack(home, marks_out_);
  }
}

void Node::GiveMarksBack(NodeId home, std::span<const PageId> pages) {
  if (ReadsRemotely(config_.mode)) {
    host_->DropMarks(home, pages);
    return;
  }
  MarksDropped& m = Outgoing<MarksDropped>();
  m.pages.assign(pages.begin(), pages.end());
  Send(home, tx_);
}

Status Node::OnMarksDropped(NodeId from, MarksDropped& m) {
  if (ReadsRemotely(config_.mode)) return Status::InvalidArgument("marks-dropped message in a mode that reads remotely");
  if (m.pages.empty()) return Status::Malformed("marks-dropped names no page");
  for (PageId p : m.pages) {
    if (Status st = CheckHomedHere(p); !st.ok()) return st;
    std::atomic_ref<uint64_t> mark(host_->SharedMark(p));
    if (mark.load(std::memory_order_acquire) == 0)
      return Status::InvalidArgument("node " + std::to_string(from) + " gave back a mark nobody holds");
    mark.fetch_sub(1, std::memory_order_acq_rel);
  }
  return Status::Ok();
}

void Node::UpdateArmed(PageId p, const Page& pg) {
  if (!config_.scan_writes) return;
  const bool on = pg.prot == Prot::kRead && pg.state == Page::State::kRead;
  if (on == Armed(p)) return;
  constexpr size_t kWords = ArmedChunk::kWords;
  const size_t w = p / 64, c = w / kWords;
  if (armed_.empty()) armed_.resize(((config_.geometry.pages + 63) / 64 + kWords - 1) / kWords);
  std::unique_ptr<ArmedChunk>& chunk = armed_[c];
  if (!chunk) {
    chunk = std::make_unique<ArmedChunk>();
    armed_chunks_.insert(std::upper_bound(armed_chunks_.begin(), armed_chunks_.end(), c), c);
  }
  uint64_t& word = chunk->words[w % kWords];
  word ^= uint64_t{1} << (p % 64);
  armed_count_ += on ? 1 : -1;
  const size_t i = w % kWords;
  if (word != 0) {
    chunk->nonzero[i / 64] |= uint64_t{1} << (i % 64);
  } else {
    chunk->nonzero[i / 64] &= ~(uint64_t{1} << (i % 64));
  }
}

// One Host::FindWritten per run of armed pages, across gaps of a few pages
// (a page in a gap found written is not tracked, and is let be).
void Node::FindWrites() {
  if (armed_count_ == 0) return;
  constexpr PageId kGap = 16;
  found_.clear();
  PageId first = kNoPage, end = 0;
  auto scan = [&] {
    if (first == kNoPage) return;
    host_->FindWritten(first, end - first, &found_);
    stats_.write_scans++;
  };
  for (size_t c : armed_chunks_) {
    const ArmedChunk& chunk = *armed_[c];
    for (size_t s = 0; s < std::size(chunk.nonzero); ++s) {
      for (uint64_t nonzero = chunk.nonzero[s]; nonzero != 0; nonzero &= nonzero - 1) {
        const size_t i = s * 64 + std::countr_zero(nonzero);
        for (uint64_t bits = chunk.words[i]; bits != 0; bits &= bits - 1) {
          const PageId p = (c * ArmedChunk::kWords + i) * 64 + std::countr_zero(bits);
          if (first == kNoPage || p > end + kGap) {
            scan();
            first = p;
          }
          end = p + 1;
        }
      }
    }
  }
  scan();
  for (PageId p : found_) {
    if (!Armed(p)) continue;
    Page& pg = pages_.At(p);
    NoteWritten(p, pg);
    UpdateArmed(p, pg);
    stats_.pages_found_written++;
  }
}

void Node::NoteWritten(PageId p, Page& pg) {
  pg.state = Page::State::kWrite;
  dirty_.push_back(p);
}

void Node::CheckDropped(PageId p, Page& pg) {
  pg.dropped = false;
  if (std::memcmp(host_->Frame(p).data(), pg.twin, config_.geometry.page_size) == 0) {
    DropTwin(pg);
    return;
  }
  NoteWritten(p, pg);
  pg.stale = true;  // a dirty copy a notice outdated: fetched safely, through its twin
  stats_.pages_found_written++;
}

void Node::MakeTwin(PageId p, Page& pg, std::span<const uint8_t> from) {
  const size_t page_size = config_.geometry.page_size;
  if (pg.twin == nullptr && !from.empty() && from.data() >= landing_.at &&
      from.data() < landing_.at + landing_.count * page_size) {
    const size_t i = size_t(from.data() - landing_.at) / page_size;
    pg.twin = landing_.at + i * page_size;  // it holds `from`
    landing_.taken |= uint64_t{1} << i;
    stats_.twins++;
    return;
  }
  if (pg.twin == nullptr && !spare_twins_.empty()) {
    pg.twin = spare_twins_.back();
    spare_twins_.pop_back();
  } else if (pg.twin == nullptr) {
    pg.twin = FreshTwins(1);
  }
  std::memcpy(pg.twin, from.empty() ? host_->Frame(p).data() : from.data(), page_size);
  stats_.twins++;
}

void Node::NewTwinSlab() {
  twin_slab_pages_ = std::min(kMaxTwinSlab, twin_slab_pages_ == 0 ? kFirstTwinSlab : 2 * twin_slab_pages_);
  const size_t bytes = twin_slab_pages_ * config_.geometry.page_size;
  const std::align_val_t align{std::min(bytes, kHugePageBytes)};
  twin_slabs_.emplace_back(static_cast<uint8_t*>(::operator new(bytes, align)), SlabFree{align});
  slab_next_ = twin_slabs_.back().get();
  slab_end_ = slab_next_ + bytes;
  host_->Populate({slab_next_, bytes});  // one step, not a fault per twin
}

uint8_t* Node::FreshTwins(size_t count) {
  static_assert(kFirstTwinSlab >= kMaxPageRun);
  const size_t page_size = config_.geometry.page_size;
  if (size_t(slab_end_ - slab_next_) < count * page_size) {
    for (; slab_next_ != slab_end_; slab_next_ += page_size) spare_twins_.push_back(slab_next_);
    NewTwinSlab();
  }
  uint8_t* at = slab_next_;
  slab_next_ += count * page_size;
  return at;
}

Host::Landing Node::LandingFor(const Page& pg, uint32_t count) {
  using Where = Host::Landing::Where;
  if (pg.state == Page::State::kInvalid && (pg.framed || !host_->Fills())) return {Where::kFrames};
  // Past here an invalid page has no frame and the host fills.
  if (!config_.scan_writes || pg.state != Page::State::kInvalid) return {Where::kBuffer};
  // A run needs its twins side by side: spare ones, scattered, are used by
  // copying into them rather than left while the slabs grow.
  uint8_t* at = nullptr;
  if (count == 1 && !spare_twins_.empty()) {
    at = spare_twins_.back();
    spare_twins_.pop_back();
  } else if (spare_twins_.size() >= count) {
    return {Where::kBuffer};
  } else {
    at = FreshTwins(count);
  }
  TwinLanding& l = landings_.emplace_back();
  l.at = at;
  l.count = count;
  return {Where::kAt, l.at};
}

void Node::DropTwin(Page& pg) {
  if (pg.twin != nullptr) spare_twins_.push_back(pg.twin);
  pg.twin = nullptr;
}

// One Host::Protect per run of neighbouring pages that end with the same
// protection; a page changed twice in the batch keeps its last change (its
// Page::prot). Pages unmapped go in runs across gaps of a few pages that are
// unmapped already (copies fetched along a stride are dropped one in every
// few pages). Sorts in place: a fault's install allocates nothing here.
void Node::FlushProtections() {
  std::sort(batch_.begin(), batch_.end());
  batch_.erase(std::unique(batch_.begin(), batch_.end()), batch_.end());
  for (size_t i = 0; i < batch_.size();) {
    const Prot prot = pages_.At(batch_[i]).prot;
    size_t j = i + 1;
    while (j < batch_.size() && pages_.At(batch_[j]).prot == prot &&
           (batch_[j] == batch_[j - 1] + 1 || (prot == Prot::kNone && Unmapped(batch_[j - 1] + 1, batch_[j]))))
      ++j;
    host_->Protect(batch_[i], batch_[j - 1] + 1 - batch_[i], prot);
    stats_.protections++;
    i = j;
  }
  for (PageId p : batch_) {
    Page& pg = pages_.At(p);
    if (pg.dropped && pg.prot == Prot::kNone) CheckDropped(p, pg);
    DropMark(p, pg);
  }
  batch_.clear();
}

// Whether [first, end) is a short gap of pages unmapped here (never touched,
// or kNone).
bool Node::Unmapped(PageId first, PageId end) const {
  if (end - first > kUnmappedGap) return false;
  for (PageId q = first; q < end; ++q) {
    const Page* pg = pages_.Find(q);
    if (pg != nullptr && pg->prot != Prot::kNone) return false;
  }
  return true;
}

bool Node::Marked(PageId p) const {
  return std::atomic_ref<uint64_t>(host_->SharedMark(p)).load(std::memory_order_acquire) != 0;
}

void Node::Mark(PageId p) {
  std::atomic_ref<uint64_t>(host_->SharedMark(p)).fetch_add(1, std::memory_order_acq_rel);
}

bool Node::StartUntracked(PageId p, Page& pg) {
  if (Marked(p)) {
    pg.tracked = true;
    return false;
  }
  pg.state = Page::State::kWrite;
  untracked_.push_back(p);
  stats_.untracked_pages++;
  return true;
}

// Only pages homed here without asking anyone: a static home, or any page
// of a one-node job (claiming ahead under first touch would take pages
// another node is about to touch first). Under first touch on several
// nodes, the pages a claim was granted ahead (ClaimAhead) are this node's
// already and are mapped too (MapGranted).
size_t Node::MapAhead(PageId p) {
  if (p + 1 >= config_.geometry.pages) return 0;
  const bool first_touch = homes_.policy() == HomePolicy::kFirstTouch;
  if (first_touch && nodes() > 1) return MapGranted(p);
  if (p == 0) return 0;
  const Page* before = pages_.Find(p - 1);
  if (before == nullptr || before->home != config_.self || before->state == Page::State::kInvalid)
    return 0;
  size_t n = 0;
  for (PageId q = p + 1; n < kMapAhead - 1 && q < config_.geometry.pages; ++q, ++n) {
    if (pages_.Find(q) != nullptr) break;  // touched, asked for or waited on already
    if (first_touch ? DirectoryLookup(q) != kNoNode : homes_.StaticHome(q) != config_.self)
      break;
    if (Marked(q)) break;
    Page& pg = PageEntry(q);
    if (first_touch) pg.home = directory_.Claim(q, config_.self);
    StartUntracked(q, pg);
    pg.prot = Prot::kReadWrite;
  }
  return n;
}

// The pages after p that a claim made this node home of along a sweep and
// that nothing has touched, asked for or waited on here: the sweep that
// earned them writes them next, and each would cost a fault of its own.
size_t Node::MapGranted(PageId p) {
  size_t n = 0;
  for (PageId q = p + 1; n < kMapAhead - 1 && q < config_.geometry.pages; ++q, ++n) {
    Page* found = pages_.Find(q);
    if (found == nullptr) break;
    Page& pg = *found;
    if (pg.home != config_.self || pg.state != Page::State::kInvalid || pg.tracked || pg.claiming ||
        !pg.waiters.empty() || !VersionCovers(q, pg.need) || Marked(q))
      break;
    StartUntracked(q, pg);
    pg.prot = Prot::kReadWrite;
  }
  return n;
}

// A marked page's copy left with whatever the home wrote so far; writes
// from now on fault and are noted. Those of the open interval, possibly
// made after the copy, are announced by its notice.
void Node::TrackMarked() {
  std::erase_if(untracked_, [&](PageId p) {
    if (!Marked(p)) return false;
    Page& pg = pages_.At(p);
    pg.tracked = true;
    pg.unshared = 0;
    dirty_.push_back(p);
    stats_.tracked_pages++;
    return true;
  });
}

// A mark counts the copies (each node marks a page once and gives the mark
// back when its copy goes), so a page written while no other node holds
// it, as a sweep's pages that a run fetched once, need not be re-protected
// and noted every interval. A copy taken from now on marks it first:
// TrackMarked then tracks it again, as a first fetch.
bool Node::CanUntrack(PageId p, Page& pg) const {
  if (!pg.tracked) return false;
  if (Marked(p)) {
    pg.unshared = 0;
    return false;
  }
  // Not the first time: a page read again every few phases (fft's
  // transposes) would go untracked and tracked again, a re-protection each.
  if (++pg.unshared < kUnsharedIntervals) return false;
  return pg.waiters.empty() && pg.pending.empty() && VersionCovers(p, pg.need);
}

void Node::WakeWaiters(Page& pg) {
  for (ThreadId t : pg.waiters) host_->Wake(t);
  pg.waiters.clear();
}

Outcome Node::Fault(ThreadId t, PageId p, Access a) {
  assert(t < config_.threads);
  if (blocked_on_[t] != p) (a == Access::kWrite ? stats_.write_faults : stats_.read_faults)++;
  const Outcome o = FaultOnce(t, p, a);
  blocked_on_[t] = o == Outcome::kBlocked ? p : kNoPage;
  return o;
}

Outcome Node::FaultOnce(ThreadId t, PageId p, Access a) {
  Page& pg = PageEntry(p);
  if (pg.home == kNoNode) {
    const NodeId manager = homes_.Manager(p);
    if (ClaimsAtNic()) {
      if (!pg.claiming) {
        pg.claiming = true;
        stats_.home_claims++;
        const uint32_t span = ClaimSpan(p);
        host_->ClaimHome(manager, p, span, std::min(ClaimAhead(p), span - 1));
      }
      pg.waiters.push_back(t);
      return Outcome::kBlocked;
    }
    if (manager == config_.self) {
      const auto [home, same] = GrantClaim(config_.self, p, ClaimAhead(p));
      pg.home = home;
      ClaimAnswered(p, home, same);
    } else {
      if (!pg.claiming) {
        pg.claiming = true;
        Send(manager, HomeClaim{p, ClaimAhead(p)});
      }
      pg.waiters.push_back(t);
      return Outcome::kBlocked;
    }
  }
  return pg.home == config_.self ? HomeFault(t, p, pg, a) : RemoteFault(t, p, pg, a);
}

// At the home there is no twin: a write to a tracked page is noted (for the
// write notice) by write-protecting it at every interval's end. A page no
// other node holds is untracked: read-write, unnoted (StartUntracked).
//
// First touch: the first access to a page this node became home of is
// granted read-write and noted as a write, whatever it was. The page is
// fresh (no other node held it before this node claimed it), and it is
// usually written next (initialised, or read-modify-written as in `x += y`
// on calloc'd memory), which then costs no second fault. A notice for a page
// that is only read is safe: it can only invalidate a copy fetched since,
// which is then fetched again.
Outcome Node::HomeFault(ThreadId t, PageId p, Page& pg, Access a) {
  if (!VersionCovers(p, pg.need)) {
    pg.waiters.push_back(t);
    // dd: no handler will see the diffs land; Poll() re-reads the version.
    if (DiffsDirectly(config_.mode) &&
        std::find(version_waits_.begin(), version_waits_.end(), p) == version_waits_.end())
      version_waits_.push_back(p);
    return Outcome::kBlocked;
  }
  if (pg.state == Page::State::kInvalid && !pg.tracked && StartUntracked(p, pg)) {
    const size_t ahead = MapAhead(p);
    host_->Protect(p, 1 + ahead, Prot::kReadWrite);
    pg.prot = Prot::kReadWrite;
    stats_.protections++;
    return Outcome::kDone;
  }
  if (pg.state == Page::State::kInvalid && homes_.policy() == HomePolicy::kFirstTouch)
    a = Access::kWrite;
  if (a == Access::kWrite && pg.state != Page::State::kWrite) {
    const bool tracked_write = pg.state == Page::State::kRead;
    NoteWritten(p, pg);
    if (tracked_write) {
      ProtectionBatch batch(this);
      SyncProtection(p, pg);
      WriteAhead(t, p);
      return Outcome::kDone;
    }
  } else if (pg.state == Page::State::kInvalid) {
    pg.state = Page::State::kRead;
  }
  SyncProtection(p, pg);
  return Outcome::kDone;
}

// A thread that writes its tracked home pages in order (rows other nodes
// read, each interval) would fault on each. From its second fault in a row
// on it opens the next pages too, 1, 3, 7, ... up to a page run, and notes
// them as written: a notice for a page not written is safe (see HomeFault),
// and in such a sweep it is rare. A fault out of sequence starts over.
void Node::WriteAhead(ThreadId t, PageId p) {
  WriteSweep& s = write_sweeps_[t];
  if (p == 0 || s.next != p || config_.max_run <= 1) {
    s = {p + 1, 1};
    return;
  }
  s.run = std::min(2 * s.run, config_.max_run);
  uint32_t n = 0;
  for (PageId q = p + 1; n + 1 < s.run && q < config_.geometry.pages; ++q, ++n) {
    Page* found = pages_.Find(q);
    if (found == nullptr) break;
    Page& next = *found;
    if (next.home != config_.self || next.state != Page::State::kRead || !next.waiters.empty() ||
        !VersionCovers(q, next.need))
      break;
    NoteWritten(q, next);
    SyncProtection(q, next);
  }
  stats_.pages_written_ahead += n;
  s.next = p + 1 + n;
}

Outcome Node::RemoteFault(ThreadId t, PageId p, Page& pg, Access a) {
  if (pg.state == Page::State::kInvalid || pg.stale) {
    if (!pg.fetching) {
      const uint32_t run = pg.stale ? 1 : RunFrom(t, p, pg);
      RequestPage(p, pg, run);
      if (run == 1 && !pg.stale) FetchStrided(t, p, pg);
    }
    pg.waiters.push_back(t);
    return Outcome::kBlocked;
  }
  if (pg.watched) {
    pg.watched = false;
    stats_.ahead_used++;
    // The sweep reached the end of its run (a stride's goes on from its trail).
    if (p != strides_[t].reach) {
      sweep_next_[t] = p + 1;
      SweepReached(t, p);
    }
  }
  if (a == Access::kWrite && pg.state == Page::State::kRead) {
    if (!pg.twin) MakeTwin(p, pg);  // scan_writes: made on arrival
    NoteWritten(p, pg);
  }
  SyncProtection(p, pg);
  return Outcome::kDone;
}

// A sweep: thread t faults on the page right after the last one it fetched
// or reached ahead (a page before p that is merely valid here says nothing:
// a strided scan finds the pages of an earlier pass there). Then the pages
// after p with the same home that nobody here has asked for come along, up
// to run_ pages. A fault that begins a sweep fetches as many as the last
// sweep from p read, once: a row read again each interval (a Jacobi
// boundary) comes in one fetch, not one for its first page and one more
// for the rest; if the run's last page goes unused, the next starts at one.
uint32_t Node::RunFrom(ThreadId t, PageId p, Page& pg) {
  if (config_.max_run <= 1) return 1;
  uint32_t want;
  if (p != 0 && sweep_next_[t] == p) {
    SweepReached(t, p);
    run_ = std::min(2 * run_, config_.max_run);
    want = run_;
  } else {
    sweep_start_[t] = p;
    want = std::min<uint32_t>(std::exchange(pg.sweep, 0), config_.max_run);
    if (want <= 1) {
      sweep_next_[t] = p + 1;
      return 1;
    }
    strides_[t] = {p, 0, p};  // no stride: its run's last page is the sweep's
  }
  const PageId end = std::min<PageId>({host_->FramesEnd(p), p + want, config_.geometry.pages});
  uint32_t n = 1;
  for (PageId q = p + 1; q < end && KnownHome(q) == pg.home; ++q, ++n) {
    const Page* found = pages_.Find(q);
    if (found == nullptr) continue;
    const Page& next = *found;
    if (next.state != Page::State::kInvalid || next.fetching || next.claiming) break;
  }
  sweep_next_[t] = p + n;
  return n;
}

void Node::SweepReached(ThreadId t, PageId p) {
  const PageId start = sweep_start_[t];
  if (start == kNoPage || p < start || p - start >= UINT8_MAX) return;
  Page& s = PageEntry(start);
  s.sweep = std::max(s.sweep, uint8_t(p - start + 1));
}

// A strided scan: thread t faults on a page a whole number of strides past
// its last fetching fault, no further than one stride past what it fetched
// along them since (the faults in between were mapped ahead, or claims).
// Then the next pages along the stride with p's home that are not here come
// along, up to run_ - 1 of them, in strided runs: one fetch for each stretch
// of them that nothing here interrupts (a base home's message, not one a
// page); the last is watched, as a run's last page is. Pages of unknown
// home are passed over, never claimed ahead: they fault.
void Node::FetchStrided(ThreadId t, PageId p, const Page& pg) {
  StrideTrail& s = strides_[t];
  const bool along = config_.max_run > 1 && s.stride > 1 && p > s.last && (p - s.last) % s.stride == 0 &&
                     p <= s.reach + s.stride;
  if (!along) {
    const PageId distance = p > s.last && p - s.last <= kMaxStride ? p - s.last : 0;
    s = {p, distance, p};
    return;
  }
  run_ = std::min(2 * run_, config_.max_run);
  const PageId end = std::min<PageId>(host_->FramesEnd(p), config_.geometry.pages);
  // The stretch gathered so far: `count` pages from `first` on.
  PageId first = 0;
  uint32_t count = 0;
  auto flush = [&] {
    if (count > 0) RequestPage(first, pages_.At(first), count, uint32_t(s.stride));
    count = 0;
  };
  PageId last = kNoPage;
  uint32_t n = 0;
  PageId q = p + s.stride;
  for (uint32_t step = 0; n + 1 < run_ && step < 2 * run_ && q < end; ++step, q += s.stride) {
    const NodeId home = KnownHome(q);
    if (home == kNoNode) {
      flush();
      continue;
    }
    if (home != pg.home) break;
    Page& next = PageEntry(q);
    if (next.state != Page::State::kInvalid || next.fetching || next.claiming) {
      flush();
      continue;
    }
    next.home = home;
    next.strided = Ahead::kMapped;
    if (count == 0) first = q;
    ++count;
    last = q;
    ++n;
  }
  // Watched before the fetch goes: a completion may come at once.
  if (last != kNoPage) pages_.At(last).strided = Ahead::kWatched;
  flush();
  stats_.pages_ahead += n;
  stats_.pages_strided += n;
  s.last = p;
  s.reach = q - s.stride;
}

// q's home as far as this node knows without asking (kNoNode: it does not).
NodeId Node::KnownHome(PageId q) const {
  const Page* pg = pages_.Find(q);
  if (pg != nullptr && pg->home != kNoNode) return pg->home;
  if (homes_.policy() != HomePolicy::kFirstTouch) return homes_.StaticHome(q);
  return homes_.Manager(q) == config_.self ? DirectoryLookup(q) : kNoNode;
}

bool Node::ClaimsAtNic() const {
  return config_.claim_by_cas && homes_.policy() == HomePolicy::kFirstTouch && ReadsRemotely(config_.mode) &&
         nodes() > 1;
}

NodeId Node::DirectoryLookup(PageId q) const {
  if (!ClaimsAtNic()) return directory_.Lookup(q);
  const uint64_t w = std::atomic_ref<uint64_t>(host_->HomeWord(q)).load(std::memory_order_acquire);
  return w == 0 || w > nodes() ? kNoNode : NodeId(w - 1);
}

uint32_t Node::ClaimSpan(PageId p) const {
  return uint32_t(std::min<PageId>(homes_.ManagerBlockEnd(p), p + config_.max_run) - p);
}

// First touch along a sweep: a claim that follows on from the span this
// node's last claim was answered with (in any manager's block: a sweep
// crosses them) walks through fresh memory, initialising this node's part of
// an array, and asks for the unclaimed pages after it too, 1, 2, 4, ... up
// to a page run: a claim a run, not a page. Returns how many to ask for.
uint32_t Node::ClaimAhead(PageId p) {
  ClaimSweep* s = std::find_if(claim_sweeps_.begin(), claim_sweeps_.end(),
                               [&](const ClaimSweep& c) { return c.next == p; });
  if (s == claim_sweeps_.end()) {
    s = std::min_element(claim_sweeps_.begin(), claim_sweeps_.end(),
                         [](const ClaimSweep& a, const ClaimSweep& b) { return a.used < b.used; });
    *s = {p, 0, 0};
  } else {
    s->ahead = std::min(std::max(2 * s->ahead, 1u), config_.max_run - 1);
  }
  s->used = ++claim_clock_;
  s->next = p + 1;  // until the answer says how far the claim reached
  return s->ahead;
}

// The claim of p was answered: p's home, and `same` pages after it.
void Node::ClaimAnswered(PageId p, NodeId home, uint32_t same) {
  for (ClaimSweep& s : claim_sweeps_)
    if (s.next == p + 1) s.next = p + same + 1;
  LearnFollowingHomes(p, home, same);
}

// The manager's answer to claimant's claim of p (this node's own included):
// p's home, and how many pages after it have that home, for the claimant's
// runs and map ahead. A won claim takes up to `ahead` unclaimed pages after
// p in this manager's block too; a page claimed by another node first ends
// them. A page so taken is the claimant's as if it had touched it first: a
// node that touches it sooner fetches the fresh page from there
// (CheckHomedHere), so only where homes fall changes, never what is read.
std::pair<NodeId, uint32_t> Node::GrantClaim(NodeId claimant, PageId p, uint32_t ahead) {
  const NodeId home = directory_.Claim(p, claimant);
  const PageId end = p + ClaimSpan(p);
  const PageId taken_end = home == claimant ? std::min<PageId>(end, p + 1 + ahead) : p + 1;
  for (PageId q = p + 1; q < taken_end && directory_.Lookup(q) == kNoNode; ++q) directory_.Claim(q, claimant);
  uint32_t same = 0;
  for (PageId q = p + 1; q < end && directory_.Lookup(q) == home; ++q) ++same;
  return {home, same};
}

void Node::LearnFollowingHomes(PageId p, NodeId home, uint32_t same) {
  for (PageId q = p + 1; q <= p + same; ++q) {
    Page& next = PageEntry(q);
    if (next.home == kNoNode && !next.claiming) next.home = home;
  }
}

// Down by more than a sequential fault takes it up: a sweep that reads the
// start of another node's block once an interval (a Jacobi boundary row)
// makes one of each, and halving kept a window grown earlier at its top, 63
// pages fetched for the 2 it read.
void Node::AheadUnused() {
  stats_.ahead_unused++;
  run_ = std::max(run_ / 4, 1u);
}

void Node::RequestPage(PageId p, Page& pg, uint32_t count, uint32_t stride) {
  assert(count >= 1 && count <= kMaxPageRun && stride >= 1 && stride <= kMaxPageStride);
  stats_.fetches++;
  if (stride == 1) stats_.pages_ahead += count - 1;  // FetchStrided counts its own
  uint64_t mark = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Page& q = i == 0 ? pg : PageEntry(p + i * stride);
    q.home = pg.home;
    q.fetching = true;
    if (!q.marked) mark |= uint64_t{1} << i;
    q.marked = true;
  }
  pg.run = count;
  pg.stride = uint16_t(stride);
  if (ReadsRemotely(config_.mode)) {
    stats_.remote_reads++;
    // A page never fetched here has no frame: its bytes wait for Host::Fill,
    // which makes the frame holding them (no zero-fill first).
    host_->ReadPages(pg.home, p, count, stride, mark, LandingFor(pg, count));
  } else {
    FetchRequest& req = Outgoing<FetchRequest>();
    req.page = p;
    req.need = pg.need;  // into the storage the last request had
    req.count = count;
    req.stride = stride;
    req.mark = mark;
    Send(pg.home, tx_);
  }
}

// Writer's notice for p applied here. Away from the home the copy is dropped
// (or, if dirty, marked for a safe fetch); at the home the page waits until
// the writer's diff has arrived.
void Node::Invalidate(PageId p, NodeId writer, IntervalId interval) {
  if (writer == config_.self) return;
  Page& pg = PageEntry(p);
  pg.need[writer] = std::max(pg.need[writer], interval);
  if (pg.home != config_.self) {
    if (config_.TEST_bug == PlantedBug::kSkipInvalidation) return;
    if (pg.state == Page::State::kRead) {
      pg.state = Page::State::kInvalid;
      pg.dropped = pg.twin != nullptr;  // scan_writes: compared once unmapped
      stats_.invalidations++;
      if (pg.watched) {
        pg.watched = false;
        AheadUnused();
      }
    } else if (pg.state == Page::State::kWrite && !pg.stale) {
      pg.stale = true;
      stats_.invalidations++;
    }
  }
  SyncProtection(p, pg);
}

Status Node::CheckHomedHere(PageId p) {
  if (p >= config_.geometry.pages) return Status::OutOfRange("page beyond the region");
  Page& pg = PageEntry(p);
  if (pg.home == kNoNode) {
    // First touch: only the winner of p's claim is ever asked for it, and the
    // asker may have heard the outcome before we did.
    const NodeId recorded = DirectoryLookup(p);
    if (homes_.Manager(p) == config_.self && recorded != config_.self)
      return Status::InvalidArgument("request for a page homed elsewhere");
    pg.home = config_.self;
  }
  if (pg.home != config_.self) return Status::InvalidArgument("request for a page homed elsewhere");
  return Status::Ok();
}

// The pages after p that a run may take: homed here as far as this node
// knows (a first-touch page only once claimed here).
bool Node::ServesAhead(PageId q) {
  if (const Page* pg = pages_.Find(q)) return pg->home == config_.self;
  return homes_.policy() != HomePolicy::kFirstTouch && homes_.StaticHome(q) == config_.self;
}

void Node::ServeFetches(PageId p, Page& pg) {
  const VectorTime version = Version(p);
  auto ready = [&](const Page::PendingFetch& f) {
    return config_.TEST_bug == PlantedBug::kNoVersionWait || version.Covers(f.need);
  };
  const size_t page_size = config_.geometry.page_size;
  std::erase_if(pg.pending, [&](const Page::PendingFetch& f) {
    if (!ready(f)) return false;
    // The pages ahead go as they are: the requester drops a copy too old.
    const PageId end = std::min<PageId>(host_->FramesEnd(p), config_.geometry.pages);
    served_.resize(1);  // storage kept from the last reply
    served_[0] = version;
    for (PageId q = p + f.stride; served_.size() < f.count && q < end && ServesAhead(q); q += f.stride)
      served_.push_back(Version(q));
    std::span<const uint8_t> frames[kMaxPageRun];  // f.count <= kMaxPageRun (wire::Decode)
    assert(served_.size() <= kMaxPageRun);
    for (size_t i = 0; i < served_.size(); ++i)
      frames[i] = {host_->Frame(p + i * f.stride).data(), page_size};
    SendPageReply(f.from, p, f.stride, served_, std::span(frames, served_.size()));
    return true;
  });
}

Status Node::OnFetchRequest(NodeId from, FetchRequest& m) {
  if (Status st = CheckHomedHere(m.page); !st.ok()) return st;
  if (m.count < 64 && m.mark >> m.count != 0) return Status::Malformed("fetch marks pages beyond its run");
  if (m.page + PageId(m.count - 1) * m.stride >= config_.geometry.pages)
    return Status::OutOfRange("fetch run beyond the region");
  Page& pg = PageEntry(m.page);
  // Counted before any of them is served: a home write the copy misses is
  // in a notice. A page ahead not homed here is counted too: the requester
  // gives the mark back here when the copy does not come.
  for (uint32_t i = 0; i < m.count; ++i)
    if (m.mark >> i & 1) Mark(m.page + PageId(i) * m.stride);
  pg.pending.push_back({from, std::move(m.need), m.count, m.stride});
  ServeFetches(m.page, pg);
  return Status::Ok();
}

Status Node::OnDiff(NodeId from, DiffMessage& m) {
  if (Status st = CheckHomedHere(m.page); !st.ok()) return st;
  Page& pg = PageEntry(m.page);
  if (m.interval <= Version(m.page)[from]) return Status::Malformed("diff out of order");
  if (Status st = diff::Apply(m.runs, host_->Frame(m.page)); !st.ok()) return st;
  SetVersion(m.page, from, m.interval);
  stats_.diffs_applied++;
  ServeFetches(m.page, pg);
  if (VersionCovers(m.page, pg.need)) {
    SyncProtection(m.page, pg);
    WakeWaiters(pg);
  }
  return Status::Ok();
}

Status Node::OnPageReply(NodeId from, const PageReply& m, std::span<const uint8_t> data) {
  if (data.empty()) return Status::Malformed("page reply without data");
  return InstallRun(from, m.page, m.stride, m.versions, data);
}

Status Node::OnPageRead(NodeId home, PageId first, uint32_t stride, std::span<const VectorTime> versions,
                        std::span<const uint8_t> data) {
  if (!ReadsRemotely(config_.mode))
    return Status::InvalidArgument("remote read completion in a mode without remote reads");
  for (const VectorTime& v : versions)
    if (v.size() != nodes()) return Status::Malformed("remote read of the wrong version size");
  return InstallRun(home, first, stride, versions, data);
}

// The home's copies arrived (a PageReply, or rf: a remote read), possibly
// fewer than the run asked for: those missing count as too old.
Status Node::InstallRun(NodeId from, PageId first, uint32_t stride, std::span<const VectorTime> versions,
                        std::span<const uint8_t> data) {
  Page* asked = pages_.Find(first);
  if (asked == nullptr || !asked->fetching || asked->home != from)
    return Status::InvalidArgument("page reply nobody asked for");
  Page& pg = *asked;
  const size_t page_size = config_.geometry.page_size;
  if (versions.empty() || versions.size() > pg.run)
    return Status::Malformed("page reply of the wrong page count");
  if (stride != pg.stride) return Status::Malformed("page reply of the wrong stride");
  const bool in_frames = data.empty();
  if (!in_frames && data.size() != versions.size() * page_size)
    return Status::Malformed("page reply of the wrong size");
  for (const VectorTime& v : versions)
    if (v.size() != nodes()) return Status::Malformed("page reply of the wrong version size");
  ProtectionBatch batch(this);
  filling_ = !in_frames && host_->Fills();
  if (auto it = std::find_if(landings_.begin(), landings_.end(),
                             [&](const TwinLanding& l) { return l.at == data.data(); });
      it != landings_.end()) {
    landing_ = *it;
    landings_.erase(it);
  }
  const uint32_t run = pg.run;
  for (uint32_t i = 0; i < run; ++i) {
    const PageId p = first + i * stride;
    Page& q = i == 0 ? pg : pages_.At(p);
    // The last page ahead is watched: whether the sweep reaches it says
    // whether the run was worth it (FetchStrided marks a stride's pages).
    const Ahead ahead = i == 0 || stride > 1 ? std::exchange(q.strided, Ahead::kNo)  // a fault's, or a stride's
                        : i + 1 == run       ? Ahead::kWatched
                                             : Ahead::kMapped;
    if (i < versions.size()) {
      InstallPage(p, q, versions[i], in_frames ? host_->Frame(p) : data.subspan(i * page_size, page_size), ahead);
    } else {
      InstallPage(p, q, VectorTime(), {}, ahead);
    }
  }
  FlushFills();  // while the bytes are there, before the batch's protections
  filling_ = false;
  for (uint32_t i = 0; i < landing_.count; ++i)  // twins no page took
    if (!(landing_.taken >> i & 1)) spare_twins_.push_back(landing_.at + i * page_size);
  landing_ = {};
  return Status::Ok();
}

void Node::FlushFills() {
  const size_t page_size = config_.geometry.page_size;
  for (size_t i = 0; i < fills_.size();) {
    // A run of neighbouring pages whose bytes lie side by side, mapped alike.
    const Prot prot = pages_.At(fills_[i].page).prot;
    size_t j = i + 1;
    while (j < fills_.size() && fills_[j].page == fills_[j - 1].page + 1 &&
           fills_[j].data == fills_[j - 1].data + page_size && pages_.At(fills_[j].page).prot == prot)
      ++j;
    for (size_t at = i; at < j;) {
      const size_t n = host_->Fill(fills_[at].page, j - at, {fills_[at].data, (j - at) * page_size}, prot);
      stats_.protections++;
      stats_.pages_filled += n;
      at += n;
      if (at < j) {  // it has a frame after all (zero-filled by a first touch here)
        std::memcpy(host_->Frame(fills_[at].page).data(), fills_[at].data, page_size);
        batch_.push_back(fills_[at].page);  // FlushProtections maps it
        ++at;
      }
    }
    i = j;
  }
  fills_.clear();
}

// A copy older than what notices applied since the request demand is fetched
// again (dropped, if fetched ahead and nobody waits for it); a dirty copy
// takes only the bytes others changed, through its twin (safe fetch), so
// local writes survive.
void Node::InstallPage(PageId p, Page& pg, const VectorTime& version,
                       std::span<const uint8_t> data, Ahead ahead) {
  pg.fetching = false;
  const bool usable = !data.empty() && (version.Covers(pg.need) ||
                                        config_.TEST_bug == PlantedBug::kNoVersionWait);
  if (!usable) {
    if (ahead != Ahead::kNo && pg.waiters.empty()) {
      AheadUnused();
      DropMark(p, pg);
    } else {
      stats_.fetch_retries++;
      RequestPage(p, pg);
    }
    return;
  }
  stats_.pages_fetched++;
  const size_t page_size = config_.geometry.page_size;
  bool whole = false;  // the bytes replace the frame's (not merged into a dirty copy)
  if (pg.state == Page::State::kWrite && config_.TEST_bug != PlantedBug::kUnsafeFetch) {
    std::span<uint8_t> frame = host_->Frame(p);
    std::vector<diff::Run> runs;
    diff::FindRuns(data, {pg.twin, page_size}, &runs);
    for (const diff::Run& r : runs) {
      std::memcpy(frame.data() + r.offset, data.data() + r.offset, r.length);
      std::memcpy(pg.twin + r.offset, data.data() + r.offset, r.length);
    }
    stats_.safe_fetches++;
  } else {
    whole = true;
    if (pg.state == Page::State::kInvalid) pg.state = Page::State::kRead;
    if (config_.scan_writes && pg.state == Page::State::kRead) MakeTwin(p, pg, data);  // eager twin
  }
  pg.stale = false;
  if (ahead != Ahead::kNo && !pg.waiters.empty()) {
    stats_.ahead_used++;
  } else if (ahead == Ahead::kWatched) {
    pg.watched = true;
  }
  if (whole) {
    // A page with no frame yet is mapped as FlushFills fills it, unless it
    // stays unmapped (the last one ahead, watched): then, and where the
    // frame exists, the bytes go through Frame() (unless they landed there).
    const Prot want = DesiredProtection(p, pg);
    if (filling_ && !pg.framed && pg.state == Page::State::kRead && want != Prot::kNone) {
      pg.prot = want;
      fills_.push_back({p, data.data()});
    } else if (std::span<uint8_t> frame = host_->Frame(p); data.data() != frame.data()) {
      std::memcpy(frame.data(), data.data(), page_size);
    }
  }
  pg.framed = true;
  SyncProtection(p, pg);
  WakeWaiters(pg);
  if (config_.TEST_bug == PlantedBug::kMarkDroppedAtInstall && pg.marked) {
    pg.marked = false;
    GiveMarksBack(pg.home, std::span(&p, 1));
  }
}

Status Node::OnHomeClaim(NodeId from, HomeClaim& m) {
  if (m.page >= config_.geometry.pages) return Status::OutOfRange("claim beyond the region");
  if (homes_.policy() != HomePolicy::kFirstTouch || homes_.Manager(m.page) != config_.self)
    return Status::InvalidArgument("home claim sent to a node that does not manage the page");
  if (ClaimsAtNic()) return Status::InvalidArgument("home claim message in a mode that claims by CAS");
  const auto [home, same] = GrantClaim(from, m.page, m.ahead);
  Send(from, HomeReply{m.page, home, same});
  if (home == config_.self && !ReadsRemotely(config_.mode)) {
    // The claimant faulted on a page homed here and would fetch it next:
    // our copy follows the reply at once (a fetch that asks for no version;
    // the claimant refetches if its notices demand a newer one). From rf on
    // the claimant reads it itself, with no handler here.
    if (Status st = CheckHomedHere(m.page); !st.ok()) return st;
    Page& pg = PageEntry(m.page);
    Mark(m.page);
    pg.pending.push_back({from, VectorTime(nodes())});
    ServeFetches(m.page, pg);
  }
  return Status::Ok();
}

Status Node::OnHomeReply(NodeId from, HomeReply& m) {
  Page* asked = pages_.Find(m.page);
  if (asked == nullptr || !asked->claiming || homes_.Manager(m.page) != from)
    return Status::InvalidArgument("home reply nobody asked for");
  Page& pg = *asked;
  if (m.home >= nodes()) return Status::Malformed("home reply names an unknown node");
  if (pg.home != kNoNode && pg.home != m.home)
    return Status::InvalidArgument("home reply contradicts the page's known home");
  if (m.page + m.same >= config_.geometry.pages || m.page + m.same >= homes_.ManagerBlockEnd(m.page))
    return Status::Malformed("home reply names pages the manager does not keep");
  pg.claiming = false;
  pg.home = m.home;
  ClaimAnswered(m.page, m.home, m.same);
  if (m.home == from && !ReadsRemotely(config_.mode)) {
    // The manager is the home: its copy follows this reply (OnHomeClaim),
    // which counted it (Mark).
    pg.fetching = true;
    pg.marked = true;
    pg.run = 1;
    pg.stride = 1;
    stats_.fetches++;
  }
  WakeWaiters(pg);
  return Status::Ok();
}

// rf and up: the CAS on p's word at its manager completed. The first CAS
// won; a later one found the winner. The words after p were read before it:
// those naming the same home let runs through, as HomeReply.same does.
Status Node::OnHomeClaimed(PageId p, uint64_t word, std::span<const uint64_t> following) {
  if (!ClaimsAtNic()) return Status::InvalidArgument("home claim completion in a mode that claims by message");
  Page* asked = pages_.Find(p);
  if (asked == nullptr || !asked->claiming)
    return Status::InvalidArgument("home claim completion nobody asked for");
  if (following.size() >= ClaimSpan(p))
    return Status::Malformed("home claim read words the manager does not keep");
  if (word > nodes()) return Status::Malformed("home word names an unknown node");
  for (uint64_t w : following)
    if (w > nodes()) return Status::Malformed("home word names an unknown node");
  Page& pg = *asked;
  const NodeId home = word == 0 ? config_.self : NodeId(word - 1);
  if (pg.home != kNoNode && pg.home != home)
    return Status::InvalidArgument("home claim contradicts the page's known home");
  uint32_t same = 0;
  while (same < following.size() && following[same] == uint64_t(home) + 1) ++same;
  pg.claiming = false;
  pg.home = home;
  ClaimAnswered(p, home, same);
  WakeWaiters(pg);
  return Status::Ok();
}

}  // namespace svm
