// TcpNicImpl: the tcp backend's private state, shared by its setup file
// (tcp_transport.cc) and its datapath (tcp_transport_datapath.cc).
//
// Threads and rings:
//  * The NIC thread owns ring_ (single issuer): a readiness poll armed per
//    connection, a read armed on wake_fd_, and continuation sends.
//  * Socket reads and writes are made inline on inline_ring_ with
//    MSG_DONTWAIT, under mu_: each completes during its submit call, so it
//    never outlives the caller and never wakes the NIC thread.
//  * Receiving (read the socket, handle the frames, send the responses) is
//    done under mu_ by whichever thread gets there first: the NIC thread when
//    a poll fires, or a thread spinning in Wait on one of this NIC's queues
//    (Driver: run to completion on the waiting thread, no hand-off). A READ
//    is served and answered in that same pass.
//    While waiters drive, the NIC thread parks: it removes its polls (so
//    arrivals wake nobody but the spinning waiter) and the drivers read every
//    connection; it unparks at most kParkedNap after the last driver left,
//    at once when one goes to sleep elsewhere. A completion queue's waiter
//    that has spun in vain sleeps in poll() on the sockets (Driver::Sleep),
//    still counted as driving, and receives what wakes it: one wake-up per
//    arrival. Whoever pushes to a queue signals its poll sleepers' eventfds.
//  * Posters send inline. What does not fit in the socket is handed to the
//    NIC thread (tx_handoff, wake_fd_), which sends it on ring_.
//  * mu_ guards rx and tx buffers, the pending-request table, the lock table,
//    inline_ring_ and `alive`.
// Invariants: (1) at most one send per connection is in flight (tx order is
// byte order); (2) rx bytes are read and handled only under mu_, so frames
// are handled in order, once; (3) a pending slot is in use iff a response
// for it is expected. The `_nt` suffix: NIC thread only.
#pragma once

#include <liburing.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "nic_ext/lock_table.h"
#include "nic_ext/region_table.h"
#include "nic_ext/tcp/frame.h"
#include "nic_ext/tcp/sealed_stream.h"
#include "nic_ext/tcp/tcp_transport.h"

namespace svm::nic {

inline constexpr unsigned kRingEntries = 1024;  // >= 2 * kMaxNodes + 2 (below)
inline constexpr unsigned kInlineRingEntries = 8;
inline constexpr size_t kRxInitialBytes = 256 << 10;
inline constexpr size_t kRxMinFree = 64 << 10;  // compact when less is free at the tail
inline constexpr uint32_t kSlotBits = 12;
inline constexpr std::chrono::seconds kHandshakeTimeout{10};  // per accepted connection
inline constexpr size_t kMaxWaitingAccepts = 2 * kMaxNodes;   // in the handshake at once
// While waiters drive, the NIC thread parks (no polls armed, so arrivals do
// not wake it) and looks again this often; a waiter that goes to sleep wakes
// it at once.
inline constexpr std::chrono::microseconds kParkedNap{100};
static_assert((size_t{1} << kSlotBits) == kMaxOutstanding);
static_assert(kRingEntries >= 2 * kMaxNodes + 2, "a poll and a send per peer, plus the wake read");

using Clock = std::chrono::steady_clock;

class TcpNicImpl final : public TcpNic {
 public:
  explicit TcpNicImpl(const TcpOptions& o);
  ~TcpNicImpl() override;

  Status Init();
  std::string listen_address() const override { return listen_address_; }
  Status RegisterRegion(const MemoryRegion& r) override;
  Status Connect(std::span<const std::string> addresses) override;
  Status Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) override;
  bool Supports(Opcode op) const override { return IsValid(op); }
  bool StoresMaskedBlocks() const override { return true; }
  void Shutdown() override;

 private:
  struct Conn {
    NodeId peer = 0;
    int fd = -1;        // -1: the loopback to this node
    bool alive = false; // guarded by mu_
    uint32_t outstanding = 0;  // guarded by mu_: pending slots for this peer
    // rx: guarded by mu_.
    std::vector<uint8_t> rx;
    size_t rx_begin = 0, rx_end = 0;
    size_t rx_need = 0;        // size of the partial frame at rx_begin, when known
    bool rx_blocked = false;   // the last Receive stopped with a full rx (injection)
    bool poll_armed = false;   // NIC thread: a readiness poll is armed on ring_
    bool poll_removing = false;  // NIC thread: its removal is in flight (stopping)
    size_t scan = 0;           // injection: frames before rx offset `scan` are stamped
    std::deque<Clock::time_point> ready_at;  // injection: per stamped frame, in order
    Clock::time_point link_free{};
    // Set when the connection is sealed: tx_pending is plaintext, sealed at
    // flush time onto sealed->wire(); rx gets what sealed opens.
    std::unique_ptr<SealedStream> sealed;
    // tx: guarded by mu_.
    std::vector<uint8_t> tx_pending;   // not yet handed to the kernel
    std::vector<uint8_t> tx_inflight;  // being sent on ring_
    size_t tx_off = 0;
    bool send_armed = false;           // a send on ring_ is in flight
    bool tx_handoff = false;           // the NIC thread must send tx_pending
    bool locks_dropped = false;        // NIC thread: lock table forgot a dead peer
  };

  struct Pending {
    bool used = false;
    uint32_t gen = 0;
    uint64_t wr_id = 0;
    Opcode op = Opcode::kSend;
    NodeId peer = 0;
    bool signaled = true;
    CompletionQueue* cq = nullptr;
    uint32_t bytes = 0;
    uint32_t num_sge = 0;
    std::array<Sge, kMaxSge> sge{};  // READ: where the data goes
  };

  struct LockWaiter {
    NodeId node = 0;
    uint32_t req = 0;
  };

  // Lets a thread waiting on one of this NIC's queues receive for it. After
  // Retire (Shutdown) it does nothing, so a queue may outlive the NIC.
  // A waiter that has spun in vain sleeps in poll() on the sockets (Sleep),
  // so the arrival wakes it and it receives for itself: one wake-up per
  // round trip, as a blocking recv has, where a sleep on the queue's
  // condition variable costs two (the NIC thread's, then the waiter's).
  class Driver final : public QueueDriver {
   public:
    Driver(TcpNicImpl* nic, bool all_peers) : nic_(nic), all_peers_(all_peers) {
      sleepers_.reserve(64);  // a sleep allocates nothing (a remote fault's wait)
    }
    bool Drive() override;
    void Enter() override { active_.fetch_add(1, std::memory_order_seq_cst); }
    void Leave(bool got) override;
    void LeaveToSleep() override { active_.fetch_sub(1, std::memory_order_seq_cst); }
    bool CanSleep() const override { return !all_peers_; }
    bool Sleep(std::chrono::nanoseconds timeout, const std::function<bool()>& ready, SleepRole role) override;
    void Interrupt() override;
    void Retire();  // ends every Sleep and waits them out
    int active() const { return active_.load(std::memory_order_seq_cst); }
    // Wakes the threads in Sleep: whoever pushes to the queue calls it, as
    // the data that woke nobody may already be read.
    void WakeSleepers() {
      if (sleeping_.load(std::memory_order_seq_cst) > 0) Kick();
    }

   private:
    void Kick();

    std::atomic<int> active_{0};    // waiters between Enter and Leave, or in Sleep
    std::atomic<int> sleeping_{0};  // sleepers_.size()
    std::mutex mu_;        // held across Drive
    std::mutex sleep_mu_;  // below mu_ and TcpNicImpl::mu_: Kick runs under both
    std::condition_variable slept_;  // sleepers_ shrank
    std::vector<int> sleepers_;      // guarded by sleep_mu_: each sleeper's own eventfd
    bool interrupted_ = false;       // guarded by sleep_mu_
    TcpNicImpl* nic_;       // guarded by mu_; nullptr once retired
    const bool all_peers_;  // recv queue: every peer; CQ: peers with requests out
  };

  // CQE user_data: kind in the top byte, connection index below.
  enum Tag : uint64_t { kTagPoll = 1, kTagSend = 2, kTagWake = 3, kTagCancel = 4, kTagPollRemove = 5 };
  static uint64_t MakeTag(Tag t, uint32_t conn) { return (uint64_t{t} << 56) | conn; }

  // Setup (tcp_transport.cc).
  Status Dial(NodeId peer, const std::string& address, Clock::time_point deadline);
  Status AcceptPeers(Clock::time_point deadline);
  // Our hello, and the checks of a peer's (its node id is *peer).
  std::vector<uint8_t> HelloBytes() const;
  Status CheckHello(std::span<const uint8_t> in, bool dialer, NodeId expect, NodeId* peer) const;
  Status ExchangeHello(int fd, bool dialer, NodeId expect, NodeId* peer, Clock::time_point deadline,
                       std::unique_ptr<SealedStream>* sealed);

  // Datapath (tcp_transport_datapath.cc).
  void Loop_nt();
  void HandleCqe_nt(const io_uring_cqe* cqe);
  void OnSent_nt(Conn& c, int res);
  void ProcessLoopback_nt();
  void ArmPoll_nt(Conn& c);
  void RemovePoll_nt(Conn& c);
  void StampArrivals_nt(Conn& c);
  void StopAll_nt();
  bool DriveRx(bool all_peers);  // any thread (Driver); never blocks on mu_
  size_t SleepFds(std::span<pollfd> out);  // the live connections, for a sleeping Driver
  int ActiveDrivers() const { return cq_driver_->active() + recv_driver_->active(); }

  // Under mu_.
  // Reads what the socket holds and handles the whole frames; to_eagain: read
  // until the socket says so even after a short read (hang-ups).
  bool Receive(Conn& c, bool to_eagain);
  bool ReceiveSealed(Conn& c, bool to_eagain);
  bool OpenRecords(Conn& c);  // false: the connection was dropped
  bool PrepareRx(Conn& c);
  // What goes out on c's socket: tx_pending, or its sealing.
  static std::vector<uint8_t>& Outgoing(Conn& c);
  static bool HasTx(const Conn& c) { return !c.tx_pending.empty() || (c.sealed && !c.sealed->wire().empty()); }
  void ProcessRx(Conn& c);
  bool HandleFrame(Conn& c, const frame::Frame& f, std::string* error);
  void Respond(NodeId to, uint32_t req, Opcode op, WcStatus st, uint64_t value,
               std::span<const uint8_t> data);
  bool Complete(NodeId from, const frame::Frame& f, std::string* error);
  void FlushAll(bool nic_thread);
  void DropConn(Conn& c, const std::string& why, bool error);
  Status PostOne(CompletionQueue* cq, const WorkRequest& wr);
  void Flush(Conn& c, bool nic_thread);
  // A send or receive on inline_ring_: bytes moved, or -errno.
  int InlineSend(int fd, const uint8_t* p, size_t n);
  int InlineRecv(int fd, uint8_t* p, size_t n);
  template <typename Prep>
  int RunInline(Prep prep);
  void SendOnRing_nt(Conn& c);
  void Wake();
  uint32_t AllocSlot(const WorkRequest& wr, CompletionQueue* cq);
  void FlushSlots(NodeId peer);
  void Deliver(CompletionQueue* cq, const Pending& p, WcStatus st, uint64_t value);
  // Only the completion queues' waiters sleep on the sockets (Driver::CanSleep).
  void WakeSleepers() { cq_driver_->WakeSleepers(); }

  const TcpOptions opt_;
  const bool inject_;
  std::string listen_address_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  uint64_t wake_buf_ = 0;
  RegionTable regions_;
  std::vector<Conn> conns_;  // index = node id; conns_[self] is the loopback

  io_uring ring_{};
  bool ring_ok_ = false;
  unsigned ring_inflight_ = 0;  // NIC thread: SQEs whose CQE has not been seen
  bool wake_armed_ = false;     // NIC thread: a read is armed on wake_fd_
  std::thread thread_;
  bool started_ = false;

  std::shared_ptr<Driver> cq_driver_;    // set on every CQ this NIC posts to
  std::shared_ptr<Driver> recv_driver_;  // set on recv_queue()

  std::mutex mu_;
  io_uring inline_ring_{};  // guarded by mu_
  bool inline_ring_ok_ = false;
  std::vector<Pending> slots_;    // guarded by mu_
  std::vector<uint32_t> free_;    // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  bool parked_ = false;           // guarded by mu_: the NIC thread left rx to drivers
  std::atomic<bool> wake_posted_{false};
  std::vector<uint8_t> loop_buf_;  // NIC thread: loopback frames being handled

  LockTable<LockWaiter> locks_;   // guarded by mu_
};

}  // namespace svm::nic
