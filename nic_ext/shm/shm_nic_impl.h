// Shm transport internals: the control file every node shares with its peers,
// and the NIC object. See shm_transport.h for the design.
//
// A node's control file (its own memfd, mapped by every peer):
//   Bell               the node's futex word and who is watching its rings
//   RingHead[n]        one per sender: bytes written (sender), consumed (us)
//   ring data[n]       ring_bytes each, a byte stream of [u32 length][bytes]
//   LockWord[kMaxLocks] the lock table this node serves (ticket locks)
//   Abandoned[]        LOCKs still queued when this node shut down
// Every word another process writes is an atomic; a peer's bytes are never
// trusted further than the bounds checks of Drain allow.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nic_ext/region_table.h"
#include "nic_ext/shm/ring_reader.h"
#include "nic_ext/shm/shm_transport.h"
#include "util/net.h"
#include "util/shared_memory.h"

namespace svm::nic::shm {

struct alignas(64) Bell {
  std::atomic<uint32_t> seq;         // futex word, bumped by whoever wakes the node
  std::atomic<uint32_t> pollers;     // threads draining the rings now: no wake needed
  std::atomic<uint32_t> lock_waits;  // this node's LOCKs queued at some target
  std::atomic<uint32_t> gone;        // the node shut down
  std::atomic<uint32_t> abandoned;   // entries of its Abandoned table
  // The receive queue's consumer sleeping on its own (QueueDriver::Sleep):
  // a message is a reason to wake it rather than the NIC thread.
  std::atomic<uint32_t> recv_seq;       // its futex word
  std::atomic<uint32_t> recv_sleepers;
  std::atomic<uint32_t> recv_waiters;   // of recv_sleepers, kWaiters: woken first
};

struct alignas(64) RingHead {
  std::atomic<uint64_t> tail;  // bytes the sender has put in the ring, ever
  // The sender shut down (as its Bell says): set before that, and read by
  // every operation here for that sender, in this node's own memory.
  std::atomic<uint32_t> sender_gone;
  char pad0[52];
  std::atomic<uint64_t> head;  // bytes the receiver has taken out, ever
  std::atomic<uint32_t> sender_waits;  // the sender holds a backlog: wake it on room
};

struct LockWord {
  std::atomic<uint64_t> tickets;  // high half: next ticket; low half: ticket served
  std::atomic<uint64_t> owner;    // holder node + 1; 0 when free
};

struct Abandoned {
  uint32_t target, lock, ticket, pad;
};
inline constexpr uint32_t kMaxAbandoned = 4096;

inline constexpr uint32_t kLengthBytes = 4;  // the length before each message

// Byte offsets of the parts of a control file for a job of `nodes`.
struct Layout {
  uint32_t nodes = 0;
  uint32_t ring_bytes = 0;
  size_t heads = 0, data = 0, locks = 0, abandoned = 0, bytes = 0;

  static Layout For(uint32_t nodes, uint32_t ring_bytes);

  Bell* bell(uint8_t* c) const { return reinterpret_cast<Bell*>(c); }
  RingHead* head(uint8_t* c, NodeId sender) const {
    return reinterpret_cast<RingHead*>(c + heads) + sender;
  }
  uint8_t* ring(uint8_t* c, NodeId sender) const { return c + data + size_t(sender) * ring_bytes; }
  LockWord* lock(uint8_t* c, LockNo no) const { return reinterpret_cast<LockWord*>(c + locks) + no; }
  Abandoned* abandoned_at(uint8_t* c, uint32_t i) const {
    return reinterpret_cast<Abandoned*>(c + abandoned) + i;
  }
};

class ShmNicImpl final : public ShmNic {
 public:
  ShmNicImpl(const ShmOptions& o, SharedMemory control, svmd::UniqueFd listener, std::string address);
  ~ShmNicImpl() override;

  Status RegisterRegion(const MemoryRegion& r) override;
  Status Connect(std::span<const std::string> addresses) override;
  Status Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) override;
  bool Supports(Opcode op) const override { return IsValid(op); }
  bool StoresMaskedBlocks() const override { return true; }
  void Shutdown() override;
  std::string listen_address() const override { return address_; }
  Counters counters() const override;

 private:
  // A peer as this node sees it (self included: its memory is ours).
  struct Peer {
    uint8_t* control = nullptr;  // its control file, mapped here
    RegionTable regions;         // its registered regions, mapped here
    std::vector<std::pair<void*, size_t>> maps;  // to unmap at destruction
    svmd::UniqueFd link;         // the set-up connection: EOF means the peer died
    std::atomic<bool> lost{false};

    // Sending to it (send_mu): what did not fit in its ring yet.
    std::mutex send_mu;
    std::vector<uint8_t> backlog;
    size_t backlog_at = 0;
    std::atomic<bool> has_backlog{false};

    // Receiving from it (drain_mu_): the message being assembled.
    RingReader reader;
  };

  // A LOCK queued at a target's ticket lock.
  struct LockWait {
    NodeId target;
    LockNo lock;
    uint32_t ticket;
    CompletionQueue* cq;
    uint64_t wr_id;
    bool signaled;
  };

  // Drives both kinds of queue: drains the rings, flushes backlogs, grants
  // LOCKs, while a thread waits.
  // The receive queue's driver also sleeps (on Bell::recv_seq); a
  // completion queue's does not (lock grants wake no futex of its own).
  class Driver final : public QueueDriver {
   public:
    Driver(ShmNicImpl* nic, bool sleeps) : nic_(nic), sleeps_(sleeps) {}
    bool CanSleep() const override { return sleeps_; }
    bool Drive() override;
    void Enter() override;
    void Leave(bool got) override;
    bool Sleep(std::chrono::nanoseconds timeout, const std::function<bool()>& ready, SleepRole role) override;
    void Interrupt() override;
    void WakeWaiters() override;
    void WakeSleeper() override;
    void Detach();  // the NIC is going: no more driving; waits out sleepers

   private:
    std::mutex mu_;  // held while driving and by Detach
    std::condition_variable cv_;
    ShmNicImpl* nic_;
    const bool sleeps_;
    int in_sleep_ = 0;  // guarded by mu_
  };

  // What a peer hands us at set-up.
  struct Offer {
    struct Region {
      uint32_t id = 0;
      uint64_t length = 0, offset = 0;
    };
    NodeId node = kNoNode;
    uint64_t control_bytes = 0;
    std::vector<Region> regions;
    std::vector<svmd::UniqueFd> files;  // control file, then one per region
  };

  // Set-up (shm_transport.cc).
  Status Dial(NodeId peer, const std::string& address, int64_t deadline_ms);
  Status AcceptAll(int64_t deadline_ms);
  Status Exchange(int fd, bool dialer, NodeId expected, int64_t deadline_ms, Offer* out);
  Status SendOffer(int fd);
  Status ReceiveOffer(int fd, int64_t deadline_ms, NodeId expected, Offer* out);
  Status Adopt(const Offer& o);

  // Datapath (shm_transport_datapath.cc).
  void Execute(CompletionQueue* cq, const WorkRequest& wr);
  WcStatus Send(Peer& p, NodeId to, const WorkRequest& wr);
  void FlushLocked(Peer& p);  // REQUIRES: p.send_mu
  WcStatus Lock(CompletionQueue* cq, const WorkRequest& wr, bool* completes_now);
  WcStatus Unlock(const WorkRequest& wr);
  void ServeNext(LockWord& w);
  void WakeLockWaiters(uint64_t tickets);
  bool Progress();        // one round of everything below; true if it did something
  bool Drain();           // our rings -> recv_queue()
  bool FlushBacklogs();
  void SetBacklog(Peer& p, bool on);
  bool GrantLocks();
  bool SkipAbandoned();
  bool WorkVisible();     // cheap: would Progress find something?
  void WakeIfIdle(NodeId node);
  void WakeForMessage(NodeId node);
  void WakeConsumer();  // after a push to recv_queue(), unless a thread watches it
  void WakeRecvSleeper();  // the consumer asleep in Driver::Sleep, if any
  void WakeRecv(Bell& b);  // one sleeper in Driver::Sleep on b, a kWaiter first
  void WakeSelf();
  bool MessagesWaiting();
  void NoteGone(NodeId node);  // a peer shut down or died
  Status WatchLinks();  // after Connect: links_epoll_
  void CheckLinks();
  void NicThread();

  bool gone(NodeId node) const { return peers_[node].lost.load(std::memory_order_acquire); }
  Bell& bell(NodeId node) const { return *layout_.bell(peers_[node].control); }

  ShmOptions opt_;
  Layout layout_;
  SharedMemory control_;
  svmd::UniqueFd listener_;
  std::string address_;
  std::vector<MemoryRegion> own_;  // registered here, with their files
  std::vector<Peer> peers_;
  bool started_ = false;
  std::atomic<bool> shut_{false};

  std::mutex drain_mu_;  // one drainer at a time; never waited for (try_lock)
  std::mutex locks_mu_;  // waits_, held_, skip_
  std::vector<LockWait> waits_;
  std::vector<std::pair<NodeId, LockNo>> held_;  // granted here, not yet unlocked
  std::vector<Abandoned> skip_;  // tickets of gone peers still queued somewhere
  std::atomic<uint32_t> backlogs_{0};  // peers with has_backlog: none, no look at each
  std::atomic<size_t> waits_count_{0};
  std::atomic<size_t> skip_count_{0};

  std::shared_ptr<Driver> driver_;       // on every CQ a queued LOCK will complete on
  std::shared_ptr<Driver> recv_driver_;  // on recv_queue()
  std::thread nic_thread_;
  std::atomic<bool> stop_{false};
  // Every peer's link, watched for EOF: a look at all of them is one call
  // that returns only the closed ones (256 nodes: 255 polls a look before).
  svmd::UniqueFd links_epoll_;

  std::atomic<uint64_t> n_remote_{0}, n_sends_{0}, n_wakeups_{0}, n_drained_{0};
};

}  // namespace svm::nic::shm
