// SimHost: the svm::Host of one simulated node.
//
// Frames are page_size bytes, zero-initialised, allocated when first touched.
// The application view is modelled as the frame itself plus a protection per
// page (starting at Prot::kNone): simulated threads read and write the frame
// only when the protection allows.
//
// Host calls never re-enter the Node: Send queues on the SimNetwork, Wake
// tells the listener (the simulated threads), which only marks a thread
// runnable. The one-sided operations are posted as events on the same pair
// queues; the World delivers them to the target's SimHost, whose Serve*
// methods play the target's NIC on its exported memory (frames, versions,
// deposit areas, lock table) without calling the target's Node. Anything the Node asks that breaks the Host contract (a page out
// of range, a send to itself, a wake of a thread that does not exist) is
// recorded as a contract error for the case to report.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/host.h"
#include "protocol/types.h"
#include "tests/sim/sim_network.h"

namespace svm::sim {

// The simulated threads, as the hosts see them.
class WakeListener {
 public:
  virtual ~WakeListener() = default;
  virtual void OnWake(NodeId node, ThreadId t) = 0;
  // Threads of the job alive now (started, not exited).
  virtual uint32_t LiveThreads() const = 0;
  // A Protect of [first, first + count) to prot is about to take effect.
  virtual void BeforeProtect(NodeId node, PageId first, size_t count, Prot prot) = 0;
};

class SimHost final : public Host {
 public:
  SimHost(NodeId self, uint32_t threads, uint64_t pages, uint64_t page_size, SimNetwork* network,
          WakeListener* listener);

  // Host.
  void Send(NodeId to, std::vector<uint8_t> bytes) override;
  std::span<uint8_t> Frame(PageId p) override;
  void Protect(PageId first, size_t count, Prot prot) override;
  // As the kernel's UFFDIO_COPY does: pages with no frame yet get one
  // holding their bytes, with the protection asked (a read one armed);
  // stops before a page that has a frame.
  size_t Fill(PageId first, size_t count, std::span<const uint8_t> data, Prot prot) override;
  bool Fills() const override { return true; }
  // As the kernel's async write-protect does: the mapped pages of the range
  // whose record says written (Wrote after the last Protect(kRead) or look,
  // or last set read-write), armed again.
  void FindWritten(PageId first, size_t count, std::vector<PageId>* written) override;
  void Wake(ThreadId t) override;
  std::span<IntervalId> Versions(PageId p) override;
  uint32_t JobThreads() override { return listener_->LiveThreads(); }
  uint64_t& SharedMark(PageId p) override;
  uint64_t& HomeWord(PageId p) override;
  void ClaimHome(NodeId manager, PageId p, uint32_t count, uint32_t ahead) override;
  // Never into the frames: they are separate allocations here.
  void ReadPages(NodeId home, PageId first, uint32_t count, uint32_t stride, uint64_t mark,
                 Landing into) override;
  PageId FramesEnd(PageId p) override;
  void WriteDiff(NodeId home, PageId p, IntervalId interval,
                 std::span<const uint8_t> runs) override;
  void DepositNotice(const WriteNotice& notice) override;
  void TakeNotices(std::vector<WriteNotice>* out) override;
  void NicLockTail(NodeId home, LockId l, NodeId guess) override;
  void DropMarks(NodeId home, std::span<const PageId> pages) override;
  // A hint for the runtime's threads; the simulator's are scheduled anyway.
  void Nudge(NodeId to) override { CheckPeer("Nudge", to, false); }

  // The NIC of this node serving a peer's one-sided operation.
  // READ of the versions of pages [first, first + count), then their
  // frames, into *done (a kReadDone event); the marks (bit i: page first +
  // i) are set first.
  void ServeRead(PageId first, uint32_t count, uint32_t stride, uint64_t mark, Event* done);
  // WRITE of a direct diff from `writer`; false (and a contract error) if
  // the runs do not fit the page.
  bool ServeWriteDiff(NodeId writer, const Event& e);
  void ServeDeposit(NodeId writer, WriteNotice notice);
  // The fetch-and-adds of -1 of a peer's DropMarks (a contract error on a
  // mark that is 0 already: given back more often than taken).
  void ServeDropMarks(NodeId from, std::span<const uint64_t> pages);
  // The swap of l's tail word for `requester` (the runtime's CAS loop, in
  // one step): what the word named before, this node for a fresh word.
  NodeId ServeLockSwap(NodeId requester, LockId l);
  // A claim of p's home word by `claimant` (as the runtime posts it: the
  // CASes of the `ahead` words after p, the words after p read, then p's
  // CAS), into *done (a kHomeClaimed event).
  // One step: the words are set once, so what a read finds stays true and
  // reading them before or after the CAS, or between other nodes' claims,
  // tells the claimant nothing false.
  void ServeHomeClaim(NodeId claimant, PageId p, uint32_t count, uint32_t ahead, Event* done);
  // p's home word here (0: unclaimed, else the home + 1).
  uint64_t home_word(PageId p) const { return p < pages_ ? home_words_[p] : 0; }

  // While set, a ReadPage is a retry (its Node found the last copy too old):
  // it is posted slow, backing off until something else changed.
  void set_completing_read(bool on) { completing_read_ = on; }
  // Test fault: DepositNotice reaches nobody.
  void set_lose_deposits(bool on) { lose_deposits_ = on; }

  Prot protection(PageId p) const { return prot_[p]; }
  // A simulated thread wrote page p (its protection allowed it).
  void Wrote(PageId p) { armed_[p] = false; }
  // The frame if it was ever touched, else an empty span (all zero).
  std::span<const uint8_t> PeekFrame(PageId p) const;
  uint64_t pages() const { return pages_; }
  uint64_t page_size() const { return page_size_; }

  // The first contract violation, or empty.
  const std::string& contract_error() const { return contract_error_; }

 private:
  void ContractError(const std::string& what);
  bool CheckPeer(const char* op, NodeId to, bool self_ok);

  NodeId self_;
  uint32_t threads_;
  uint64_t pages_;
  uint64_t page_size_;
  SimNetwork* network_;
  WakeListener* listener_;
  std::vector<std::unique_ptr<uint8_t[]>> frames_;
  std::vector<std::vector<IntervalId>> versions_;  // by page, allocated when first asked
  std::vector<Prot> prot_;
  std::vector<bool> armed_;  // the record of writes: set by Protect(kRead), cleared by a write
  std::vector<uint64_t> shared_marks_;
  std::vector<uint64_t> home_words_;
  std::vector<std::vector<WriteNotice>> deposits_;  // by writer, oldest first
  std::map<LockId, NodeId> lock_tails_;  // at the home: tail words ever swapped
  bool completing_read_ = false;
  bool lose_deposits_ = false;
  std::unique_ptr<uint8_t[]> scratch_;  // handed out for out-of-range pages
  std::vector<IntervalId> scratch_versions_;
  uint64_t scratch_mark_ = 0;
  uint64_t scratch_word_ = 0;
  std::string contract_error_;
};

}  // namespace svm::sim
