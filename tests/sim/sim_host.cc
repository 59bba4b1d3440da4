#include "tests/sim/sim_host.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "protocol/diff.h"

namespace svm::sim {

SimHost::SimHost(NodeId self, uint32_t threads, uint64_t pages, uint64_t page_size,
                 SimNetwork* network, WakeListener* listener)
    : self_(self),
      threads_(threads),
      pages_(pages),
      page_size_(page_size),
      network_(network),
      listener_(listener),
      frames_(pages),
      versions_(pages),
      prot_(pages, Prot::kNone),
      armed_(pages, false),
      shared_marks_(pages, 0),
      home_words_(pages, 0),
      deposits_(network->nodes()) {}

void SimHost::ContractError(const std::string& what) {
  if (contract_error_.empty()) {
    contract_error_ = "node " + std::to_string(self_) + ": " + what;
  }
}

void SimHost::Send(NodeId to, std::vector<uint8_t> bytes) {
  if (to >= network_->nodes() || to == self_) {
    ContractError("Send to node " + std::to_string(to));
    return;
  }
  network_->Send(self_, to, std::move(bytes));
}

std::span<uint8_t> SimHost::Frame(PageId p) {
  if (p >= pages_) {
    ContractError("Frame(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    if (!scratch_) scratch_ = std::make_unique<uint8_t[]>(page_size_);
    return {scratch_.get(), page_size_};
  }
  if (!frames_[p]) frames_[p] = std::make_unique<uint8_t[]>(page_size_);  // zeroed
  return {frames_[p].get(), page_size_};
}

std::span<const uint8_t> SimHost::PeekFrame(PageId p) const {
  if (p >= pages_ || !frames_[p]) return {};
  return {frames_[p].get(), page_size_};
}

void SimHost::Protect(PageId first, size_t count, Prot prot) {
  if (count == 0 || first >= pages_ || count > pages_ - first) {
    ContractError("Protect(" + std::to_string(first) + ", " + std::to_string(count) + ") beyond " +
                  std::to_string(pages_) + " pages");
    return;
  }
  listener_->BeforeProtect(self_, first, count, prot);
  for (PageId p = first; p < first + count; ++p) {
    // A page read already keeps its record of writes (as the trap does).
    if (prot != Prot::kRead || prot_[p] != Prot::kRead) armed_[p] = prot == Prot::kRead;
    prot_[p] = prot;
  }
}

size_t SimHost::Fill(PageId first, size_t count, std::span<const uint8_t> data, Prot prot) {
  if (count == 0 || first >= pages_ || count > pages_ - first || data.size() != count * page_size_ ||
      prot == Prot::kNone) {
    ContractError("Fill(" + std::to_string(first) + ", " + std::to_string(count) + ", " +
                  std::to_string(data.size()) + " bytes, " + ToString(prot) + ")");
    return 0;
  }
  size_t done = 0;
  for (; done < count && !frames_[first + done]; ++done) {
    const PageId p = first + done;
    frames_[p] = std::make_unique<uint8_t[]>(page_size_);
    std::memcpy(frames_[p].get(), data.data() + done * page_size_, page_size_);
    armed_[p] = prot == Prot::kRead;
    prot_[p] = prot;
  }
  return done;
}

void SimHost::FindWritten(PageId first, size_t count, std::vector<PageId>* written) {
  if (count == 0 || first >= pages_ || count > pages_ - first) {
    ContractError("FindWritten(" + std::to_string(first) + ", " + std::to_string(count) + ") beyond " +
                  std::to_string(pages_) + " pages");
    return;
  }
  for (PageId p = first; p < first + count; ++p) {
    if (prot_[p] == Prot::kNone || armed_[p]) continue;
    written->push_back(p);
    armed_[p] = true;
  }
}

uint64_t& SimHost::SharedMark(PageId p) {
  if (p >= pages_) {
    ContractError("SharedMark(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    return scratch_mark_;
  }
  return shared_marks_[p];
}

uint64_t& SimHost::HomeWord(PageId p) {
  if (p >= pages_) {
    ContractError("HomeWord(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    return scratch_word_;
  }
  return home_words_[p];
}

void SimHost::ClaimHome(NodeId manager, PageId p, uint32_t count, uint32_t ahead) {
  if (!CheckPeer("ClaimHome", manager, true)) return;
  if (p >= pages_ || count == 0 || count > kMaxPageRun || count > pages_ - p || ahead >= count)
    return ContractError("ClaimHome of page " + std::to_string(p) + "+" + std::to_string(count) + " ahead " +
                         std::to_string(ahead));
  Event e;
  e.kind = EventKind::kHomeClaim;
  e.page = p;
  e.count = count;
  e.ahead = ahead;
  network_->Post(self_, manager, std::move(e));
}

void SimHost::Wake(ThreadId t) {
  if (t >= threads_) {
    ContractError("Wake(" + std::to_string(t) + ") of a thread that does not exist");
    return;
  }
  listener_->OnWake(self_, t);
}

std::span<IntervalId> SimHost::Versions(PageId p) {
  if (p >= pages_) {
    ContractError("Versions(" + std::to_string(p) + ") beyond " + std::to_string(pages_) +
                  " pages");
    scratch_versions_.assign(network_->nodes(), 0);
    return scratch_versions_;
  }
  if (versions_[p].empty()) versions_[p].assign(network_->nodes(), 0);
  return versions_[p];
}

bool SimHost::CheckPeer(const char* op, NodeId to, bool self_ok) {
  if (to < network_->nodes() && (self_ok || to != self_)) return true;
  ContractError(std::string(op) + " to node " + std::to_string(to));
  return false;
}

// Two runs of frames, like the runtime's heap and globals: a page run never
// crosses the middle.
PageId SimHost::FramesEnd(PageId p) {
  const PageId middle = pages_ / 2;
  return p < middle ? middle : pages_;
}

void SimHost::ReadPages(NodeId home, PageId first, uint32_t count, uint32_t stride, uint64_t mark,
                        Landing into) {
  if (!CheckPeer("ReadPages", home, false)) return;
  if (first >= pages_ || count == 0 || count > kMaxPageRun || stride == 0 || stride > kMaxPageStride ||
      first + PageId(count - 1) * stride >= FramesEnd(first))
    return ContractError("ReadPages of pages " + std::to_string(first) + "+" + std::to_string(count) + "x" +
                         std::to_string(stride));
  Event e;
  e.kind = EventKind::kRead;
  e.page = first;
  e.count = count;
  e.stride = stride;
  e.slow = completing_read_;
  e.mark = mark;
  if (into.where == Landing::Where::kAt) e.landing = into.at;
  network_->Post(self_, home, std::move(e));
}

void SimHost::WriteDiff(NodeId home, PageId p, IntervalId interval,
                        std::span<const uint8_t> runs) {
  if (!CheckPeer("WriteDiff", home, false)) return;
  if (p >= pages_) return ContractError("WriteDiff to page " + std::to_string(p));
  Event e;
  e.kind = EventKind::kWriteDiff;
  e.page = p;
  e.interval = interval;
  e.bytes.assign(runs.begin(), runs.end());
  network_->Post(self_, home, std::move(e));
}

void SimHost::DepositNotice(const WriteNotice& notice) {
  if (notice.node != self_) return ContractError("DepositNotice of another node's notice");
  if (lose_deposits_) return;
  for (NodeId to = 0; to < network_->nodes(); ++to) {
    if (to == self_) continue;
    Event e;
    e.kind = EventKind::kDeposit;
    e.notice = notice;
    network_->Post(self_, to, std::move(e));
  }
}

void SimHost::TakeNotices(std::vector<WriteNotice>* out) {
  for (std::vector<WriteNotice>& from : deposits_) {
    for (WriteNotice& n : from) out->push_back(std::move(n));
    from.clear();
  }
}

void SimHost::NicLockTail(NodeId home, LockId l, NodeId guess) {
  if (!CheckPeer("NicLockTail", home, true)) return;
  if (guess != kNoNode && guess >= network_->nodes()) return ContractError("NicLockTail guess");
  Event e;
  e.kind = EventKind::kLockSwap;
  e.lock = l;
  network_->Post(self_, home, std::move(e));
}

void SimHost::DropMarks(NodeId home, std::span<const PageId> pages) {
  if (!CheckPeer("DropMarks", home, false)) return;
  Event e;
  e.kind = EventKind::kDropMarks;
  for (PageId p : pages) {
    if (p >= pages_) return ContractError("DropMarks of page " + std::to_string(p));
    e.words.push_back(p);
  }
  if (e.words.empty()) return ContractError("DropMarks of no page");
  network_->Post(self_, home, std::move(e));
}

void SimHost::ServeDropMarks(NodeId from, std::span<const uint64_t> pages) {
  for (uint64_t p : pages) {
    if (shared_marks_[p] == 0)
      return ContractError("node " + std::to_string(from) + " gave back a mark of page " + std::to_string(p) +
                           " that nobody holds");
    --shared_marks_[p];
  }
}

void SimHost::ServeRead(PageId first, uint32_t count, uint32_t stride, uint64_t mark, Event* done) {
  for (uint32_t i = 0; i < count; ++i)
    if (mark & (uint64_t{1} << i)) ++SharedMark(first + i * stride);
  done->kind = EventKind::kReadDone;
  done->page = first;
  done->stride = stride;
  for (uint32_t i = 0; i < count; ++i) {
    const PageId p = first + i * stride;
    done->times.emplace_back(std::vector<IntervalId>(Versions(p).begin(), Versions(p).end()));
    const std::span<uint8_t> frame = Frame(p);
    done->bytes.insert(done->bytes.end(), frame.begin(), frame.end());
  }
}

bool SimHost::ServeWriteDiff(NodeId writer, const Event& e) {
  const Status s = diff::Apply(e.bytes, Frame(e.page));
  if (!s.ok()) {
    ContractError("direct diff from node " + std::to_string(writer) + ": " + s.ToString());
    return false;
  }
  Versions(e.page)[writer] = e.interval;
  return true;
}

void SimHost::ServeDeposit(NodeId writer, WriteNotice notice) {
  deposits_[writer].push_back(std::move(notice));
}

void SimHost::ServeHomeClaim(NodeId claimant, PageId p, uint32_t count, uint32_t ahead, Event* done) {
  done->kind = EventKind::kHomeClaimed;
  done->page = p;
  done->word = home_words_[p];
  if (done->word == 0) {
    home_words_[p] = uint64_t(claimant) + 1;
    for (PageId q = p + 1; q <= p + ahead && home_words_[q] == 0; ++q) home_words_[q] = uint64_t(claimant) + 1;
  }
  for (PageId q = p + 1; q < p + count; ++q) done->words.push_back(home_words_[q]);
}

NodeId SimHost::ServeLockSwap(NodeId requester, LockId l) {
  auto [it, fresh] = lock_tails_.try_emplace(l, self_);
  const NodeId previous = it->second;
  it->second = requester;
  return previous;
}

}  // namespace svm::sim
