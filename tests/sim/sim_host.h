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
};

class SimHost final : public Host {
 public:
  SimHost(NodeId self, uint32_t threads, uint64_t pages, uint64_t page_size, SimNetwork* network,
          WakeListener* listener);

  // Host.
  void Send(NodeId to, std::vector<uint8_t> bytes) override;
  std::span<uint8_t> Frame(PageId p) override;
  void Protect(PageId first, size_t count, Prot prot) override;
  void Wake(ThreadId t) override;
  std::span<IntervalId> Versions(PageId p) override;
  uint32_t JobThreads() override { return listener_->LiveThreads(); }
  uint64_t& SharedMark(PageId p) override;
  // Never into the frames: they are separate allocations here.
  void ReadPages(NodeId home, PageId first, uint32_t count, uint64_t mark, bool into_frames) override;
  PageId FramesEnd(PageId p) override;
  void WriteDiff(NodeId home, PageId p, IntervalId interval,
                 std::span<const uint8_t> runs) override;
  void DepositNotice(const WriteNotice& notice) override;
  void TakeNotices(std::vector<WriteNotice>* out) override;
  void NicLock(NodeId home, LockId l) override;
  void NicUnlock(NodeId home, LockId l, const VectorTime& timestamp) override;

  // The NIC of this node serving a peer's one-sided operation.
  // READ of the versions of pages [first, first + count), then their
  // frames, into *done (a kReadDone event); the marks (bit i: page first +
  // i) are set first.
  void ServeRead(PageId first, uint32_t count, uint64_t mark, Event* done);
  // WRITE of a direct diff from `writer`; false (and a contract error) if
  // the runs do not fit the page.
  bool ServeWriteDiff(NodeId writer, const Event& e);
  void ServeDeposit(NodeId writer, WriteNotice notice);
  // LOCK by `requester`: the timestamp if granted now, else it queues.
  std::optional<VectorTime> ServeLock(NodeId requester, LockId l);
  // Stores timestamp with l and UNLOCKs: the next requester granted, if any.
  std::optional<NodeId> ServeUnlock(NodeId releaser, LockId l, VectorTime timestamp);
  // REQUIRES: l was locked here.
  const VectorTime& NicLockTimestamp(LockId l) const;

  // While set, a ReadPage is a retry (its Node found the last copy too old):
  // it is posted slow, backing off until something else changed.
  void set_completing_read(bool on) { completing_read_ = on; }
  // Test fault: DepositNotice reaches nobody.
  void set_lose_deposits(bool on) { lose_deposits_ = on; }

  Prot protection(PageId p) const { return prot_[p]; }
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
  std::vector<uint64_t> shared_marks_;
  std::vector<std::vector<WriteNotice>> deposits_;  // by writer, oldest first
  struct NicLockWord {
    bool held = false;
    NodeId holder = 0;
    VectorTime timestamp;
    std::deque<NodeId> waiters;
  };
  std::map<LockId, NicLockWord> nic_locks_;  // at the home: locks ever used
  bool completing_read_ = false;
  bool lose_deposits_ = false;
  std::unique_ptr<uint8_t[]> scratch_;  // handed out for out-of-range pages
  std::vector<IntervalId> scratch_versions_;
  uint64_t scratch_mark_ = 0;
  std::string contract_error_;
};

}  // namespace svm::sim
