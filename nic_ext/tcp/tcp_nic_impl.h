// TcpNicImpl: the tcp backend's private state, shared by its setup file
// (tcp_transport.cc) and its datapath (tcp_transport_datapath.cc).
//
// Threads and rings:
//  * The NIC thread owns ring_ (single issuer): a recv armed per connection, a
//    read armed on wake_fd_, and continuation sends. It alone touches rx state
//    and the lock table.
//  * Any thread (posters, and the NIC thread for responses) first tries a send
//    inline on tx_ring_ with MSG_DONTWAIT, under mu_: it completes during the
//    submit call, so it never outlives the caller and never wakes the NIC
//    thread. What does not fit in the socket is handed to the NIC thread
//    (tx_handoff, wake_fd_), which sends it on ring_.
//  * mu_ guards tx buffers, the pending-request table, tx_ring_ and `alive`.
// Invariants: (1) at most one send per connection is in flight (tx order is
// byte order); (2) rx buffers are reshaped only while no recv is armed on
// them; (3) a pending slot is in use iff a response for it is expected.
// The `_nt` suffix: NIC thread only.
#pragma once

#include <liburing.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nic_ext/lock_table.h"
#include "nic_ext/region_table.h"
#include "nic_ext/tcp/frame.h"
#include "nic_ext/tcp/tcp_transport.h"

namespace svm::nic {

inline constexpr unsigned kRingEntries = 256;
inline constexpr unsigned kTxRingEntries = 8;
inline constexpr size_t kRxInitialBytes = 256 << 10;
inline constexpr size_t kRxMinFree = 64 << 10;  // compact when less is free at the tail
inline constexpr uint32_t kSlotBits = 12;
static_assert((size_t{1} << kSlotBits) == kMaxOutstanding);
static_assert(kRingEntries >= 2 * kMaxNodes + 2, "a recv and a send per peer, plus the wake read");

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
  void Shutdown() override;

 private:
  struct Conn {
    NodeId peer = 0;
    int fd = -1;        // -1: the loopback to this node
    bool alive = false; // guarded by mu_
    // rx: NIC thread only.
    std::vector<uint8_t> rx;
    size_t rx_begin = 0, rx_end = 0;
    size_t rx_need = 0;        // size of the partial frame at rx_begin, when known
    bool recv_armed = false;
    size_t scan = 0;           // injection: frames before rx offset `scan` are stamped
    std::deque<Clock::time_point> ready_at;  // injection: per stamped frame, in order
    Clock::time_point link_free{};
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

  // CQE user_data: kind in the top byte, connection index below.
  enum Tag : uint64_t { kTagRecv = 1, kTagSend = 2, kTagWake = 3, kTagCancel = 4 };
  static uint64_t MakeTag(Tag t, uint32_t conn) { return (uint64_t{t} << 56) | conn; }

  // Setup (tcp_transport.cc).
  Status Dial(NodeId peer, const std::string& address, Clock::time_point deadline);
  Status AcceptPeers(Clock::time_point deadline);
  Status ExchangeHello(int fd, bool dialer, NodeId expect, NodeId* peer,
                       Clock::time_point deadline);

  // Datapath (tcp_transport_datapath.cc).
  void Loop_nt();
  void HandleCqe_nt(const io_uring_cqe* cqe);
  void OnRecv_nt(Conn& c, int res);
  void OnSent_nt(Conn& c, int res);
  void ProcessRx_nt(Conn& c);
  void ProcessLoopback_nt();
  bool HandleFrame_nt(Conn& c, const frame::Frame& f, std::string* error);
  void Respond_nt(NodeId to, uint32_t req, Opcode op, WcStatus st, uint64_t value,
                  std::span<const uint8_t> data);
  bool Complete_nt(NodeId from, const frame::Frame& f, std::string* error);
  void ArmRecv_nt(Conn& c);
  void StampArrivals_nt(Conn& c);
  void DropConn(Conn& c, const std::string& why, bool error);
  void StopAll_nt();

  // Under mu_.
  Status PostOne(CompletionQueue* cq, const WorkRequest& wr);
  void Flush(Conn& c, bool nic_thread);
  int InlineSend(int fd, const uint8_t* p, size_t n);
  void SendOnRing_nt(Conn& c);
  void Wake();
  uint32_t AllocSlot(const WorkRequest& wr, CompletionQueue* cq);
  void FlushSlots(NodeId peer);
  static void Deliver(CompletionQueue* cq, const Pending& p, WcStatus st, uint64_t value);

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

  std::mutex mu_;
  io_uring tx_ring_{};  // guarded by mu_
  bool tx_ring_ok_ = false;
  std::vector<Pending> slots_;    // guarded by mu_
  std::vector<uint32_t> free_;    // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  std::atomic<bool> wake_posted_{false};
  std::vector<uint8_t> loop_buf_;  // NIC thread: loopback frames being handled

  LockTable<LockWaiter> locks_;   // NIC thread only
};

}  // namespace svm::nic
