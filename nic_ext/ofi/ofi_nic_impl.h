// OfiNicImpl: private state of the ofi backend, shared by its setup file
// (ofi_transport.cc) and datapath (ofi_transport_datapath.cc).
//
// One fabric, domain, address vector (FI_AV_TABLE: fi_addr = node id), CQ
// and RDM endpoint per Nic. Every WR takes a slot; a slot waits in its
// peer's queue, and only the queue's head has an operation at the provider,
// except that a run of READs goes out together (ofi_transport.h, Ordering);
// a WR done before those ahead of it waits in the queue (done) so that
// completions keep posting order. A LOCK leaves the queue once it has its
// ticket, then polls the home's `serving` word on its own until granted.
// The CQ is read by one thread at a time (poll_mu_): the progress thread,
// or a thread waiting on one of our queues (Driver) while it spins, so that
// completions are handled in the order the provider reports them.
// mu_ guards the slots, the queues and the peers.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "nic_ext/ofi/ofi_transport.h"
#include "nic_ext/region_table.h"

namespace svm::nic {

inline constexpr size_t kOfiLockWords = 3;          // next, serving, owner (node + 1)
inline constexpr uint32_t kOfiLockRegion = kMaxRegions;  // its id in the region table

// Every SEND starts with this header.
struct OfiHeader {
  uint8_t type;      // OfiMsg
  uint8_t pad;
  uint16_t from;
  uint16_t credits;  // credits given back to the receiver
  uint16_t pad2;
  uint32_t epoch;
  uint32_t pad3;
};
static_assert(sizeof(OfiHeader) == 16);
enum class OfiMsg : uint8_t { kData, kCredit, kTable, kBye };
inline constexpr size_t kOfiBuffer = sizeof(OfiHeader) + kOfiMaxMessage;
// Receive buffers per peer beyond the credits: control messages (credit
// returns, the table, the goodbye) take no credit.
inline constexpr uint32_t kOfiSpareRecvs = 4;
// Fewest credits per pair a Nic runs with (a provider with room for fewer
// posted receives per peer is refused).
inline constexpr uint32_t kOfiMinCredits = 2;

// The receives a Nic of a `nodes`-node job posts with full credits: what it
// asks the provider room for.
inline size_t OfiRecvsWanted(uint32_t nodes) { return size_t{nodes} * (kOfiCredits + kOfiSpareRecvs); }

// Receives a Nic posts per peer (each peer's credits toward it): kOfiCredits,
// or fewer where the provider takes fewer posted receives (rx_size; 0: no
// limit) than `nodes` peers need (shm: 1024, so 12 each on 64 nodes). Below
// kOfiMinCredits the job is refused.
inline uint32_t OfiCreditsPerPeer(size_t rx_size, uint32_t nodes) {
  if (rx_size == 0 || nodes == 0 || rx_size >= OfiRecvsWanted(nodes)) return kOfiCredits;
  const size_t each = rx_size / nodes;
  return each > kOfiSpareRecvs ? uint32_t(each - kOfiSpareRecvs) : 0;
}

class OfiNicImpl final : public OfiNic {
 public:
  OfiNicImpl(const OfiOptions& o, fi_info* info);
  ~OfiNicImpl() override;

  Status Init();
  std::string listen_address() const override { return listen_address_; }
  std::string provider() const override;
  bool auth_key_applied() const override { return info_->domain_attr->auth_key_size > 0; }
  Status RegisterRegion(const MemoryRegion& r) override;
  Status Connect(std::span<const std::string> addresses) override;
  Status Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) override;
  bool Supports(Opcode op) const override { return IsValid(op); }
  void Shutdown() override;

 private:
  // What a provider operation's context names (the fi_context2 must come
  // first: providers with FI_CONTEXT2 mode write into it).
  enum class CtxKind : uint8_t { kSlot, kRecv, kCtrl };
  struct Ctx {
    fi_context2 fi{};
    CtxKind kind = CtxKind::kSlot;
    uint32_t index = 0;
  };
  struct Remote {
    uint64_t addr = 0;  // base for FI_MR_VIRT_ADDR providers, else 0
    uint64_t base = 0;  // the virtual address, for alignment checks
    uint64_t key = 0;
    uint64_t length = 0;
    bool used = false;
  };
  struct Peer {
    std::array<Remote, kMaxRegions + 1> regions{};  // [kOfiLockRegion]: the lock words
    bool have_table = false;
    bool alive = true;
    std::deque<uint32_t> queue;  // slots in posting order; the head may be at the provider
    uint32_t credits = 0;  // SENDs we may still post to it (its table grants the first)
    uint32_t owed = 0;               // its SENDs consumed here, not yet given back
    bool ctrl_busy = false;          // its control buffer is at the provider
    bool ctrl_bye = false;           // ... carrying the goodbye
    bool stalled = false;            // the head got -FI_EAGAIN: retry after progress
    bool ctrl_retry = false;         // a credit return got -FI_EAGAIN
  };
  enum class Phase : uint8_t {
    kIdle,
    kOp,          // READ/WRITE (segment `seg`), SEND, CAS, FAA
    kTicket,      // LOCK: FAA on next
    kPoll,        // LOCK: READ of serving, until it equals the ticket
    kOwn,         // LOCK: CAS owner 0 -> self + 1
    kUnlockOwner, // UNLOCK: CAS owner self + 1 -> 0
    kUnlockServe, // UNLOCK: FAA on serving
  };
  struct Slot {
    bool used = false;
    bool at_provider = false;  // an operation of this slot is in flight
    bool zombie = false;       // completed to the user; free when the provider is done
    bool queued = false;       // in its peer's queue
    bool done = false;         // finished, waiting behind the WRs ahead of it: result, value
    WcStatus result = WcStatus::kSuccess;
    uint64_t value = 0;
    WorkRequest wr;
    CompletionQueue* cq = nullptr;
    Phase phase = Phase::kIdle;
    uint32_t seg = 0;          // READ/WRITE done segment by segment (iov limits)
    uint64_t seg_off = 0;      // ... WRITE_RUNS: bytes of `data` whose runs are posted
    void* data_desc = nullptr;  // WRITE_RUNS, FI_MR_LOCAL: `data`'s descriptor
    uint64_t ticket = 0;
    uint32_t polls = 0;
    std::chrono::steady_clock::time_point next_poll{};
    std::vector<uint8_t> data;      // SEND: header + payload; WRITE, WRITE_RUNS: the gathered bytes
    std::vector<fid_mr*> temp_mrs;  // FI_MR_LOCAL: buffers registered for this WR
    Ctx ctx;
  };
  class Driver final : public QueueDriver {
   public:
    explicit Driver(OfiNicImpl* nic) : nic_(nic) {}
    bool Drive() override;
    void Retire() {
      std::lock_guard<std::mutex> l(mu_);
      nic_ = nullptr;
    }

   private:
    std::mutex mu_;
    OfiNicImpl* nic_;  // guarded by mu_; nullptr once the Nic is gone
  };

  // Setup (ofi_transport.cc).
  // fi_mr_reg, then (FI_MR_ENDPOINT providers) bound to the endpoint and enabled.
  Status RegisterInternal(const void* base, size_t len, uint64_t access, uint64_t key, fid_mr** mr);
  Status PostRecv(uint32_t index);
  Status SendTable(NodeId to);
  Status ParseTable(NodeId from, std::span<const uint8_t> bytes);
  void UnlinkShmName();
  Status ConnectPeers(std::span<const std::string> addresses);  // Connect's work

  // Datapath (ofi_transport_datapath.cc).
  void ProgressLoop();
  bool PollCq();  // REQUIRES: poll_mu_ held; true if it handled something
  void HandleEntry(void* op_context, bool error, int err);
  void HandleRecvLen(uint32_t index, size_t len);
  void HandleCtrl(NodeId peer, bool error);
  void HandleSlot(uint32_t slot, bool error, int err);
  void Issue(NodeId peer);            // starts the queue's head while it can
  int Start(uint32_t slot);           // 0, 1 (done: finished already), or -fi_errno
  int StartRuns(uint32_t slot);       // Start of a WRITE_RUNS
  WcStatus CheckRuns(const Remote& r, const Slot& s) const;
  int PostAtomic(uint32_t slot, NodeId peer, const Remote& r, uint64_t off, fi_op op,
                 uint64_t operand, uint64_t compare);
  int PostReadWord(uint32_t slot, NodeId peer, const Remote& r, uint64_t off);
  int PostCtrl(NodeId peer, OfiMsg type);
  void GiveCredits(NodeId peer);
  void Finish(uint32_t slot, WcStatus st, uint64_t value);  // the user's completion; frees
  void PopHead(NodeId peer, uint32_t slot);
  // A queued WR is done: completes it and every done WR behind it once
  // nothing ahead of them is pending (posting order).
  void Complete(uint32_t slot, WcStatus st, uint64_t value);
  void PeerLost(NodeId peer, const char* why);
  void RunTimers();  // REQUIRES: mu_ held
  void RetryStalled();  // REQUIRES: mu_ held
  void* Desc(const void* addr, size_t len, Slot* s);  // FI_MR_LOCAL descriptor, else nullptr
  void FreeSlot(uint32_t slot);
  bool RemoteOk(const Remote& r, uint64_t off, uint64_t len) const {
    return r.used && off <= r.length && len <= r.length - off;
  }
  uint64_t RemoteAddr(const Remote& r, uint64_t off) const { return r.addr + off; }

  const OfiOptions opt_;
  fi_info* info_;
  bool mr_local_ = false;
  bool mr_virt_ = false;
  bool mr_endpoint_ = false;  // FI_MR_ENDPOINT: every MR is bound to ep_ and enabled
  size_t iov_limit_ = 1;
  size_t runs_per_write_ = 1;  // WRITE_RUNS: runs per fi_writemsg (local and remote iov limits)
  std::string listen_address_;
  std::vector<uint8_t> listen_name_;  // fi_getname's bytes
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  int wait_fd_ = -1;  // the CQ's wait fd (FI_WAIT_FD), or -1: the progress thread naps
  int wake_fd_ = -1;  // eventfd: wakes the progress thread (Shutdown, lock polls)
  bool pipeline_reads_ = true;  // SVM_OFI_PIPELINE=0: every WR to a peer waits for the one before
  std::chrono::nanoseconds idle_spin_{};  // the progress thread reads an idle CQ this long before it sleeps
  RegionTable regions_;
  std::array<fid_mr*, kMaxRegions> mrs_{};
  std::vector<fi_addr_t> addrs_;  // per node

  // Internal memory. Receive buffers are shared by all senders (an RDM
  // endpoint has one receive queue); send buffers: one per peer for the
  // region table, one per peer for control messages (a SEND's bytes are in
  // its slot).
  std::vector<uint8_t> recv_slab_;
  std::vector<Ctx> recv_ctx_;
  std::vector<uint8_t> send_slab_;
  std::vector<uint8_t> ctrl_slab_;
  std::vector<Ctx> ctrl_ctx_;
  std::vector<uint64_t> atomic_buf_;  // per slot: result, compare, operand
  uint64_t* lock_words_ = nullptr;    // kOfiMaxLocks x kOfiLockWords, mmap'ed (zero pages until used)
  size_t lock_bytes_ = 0;
  std::vector<uint8_t> table_;        // this node's region table, as sent
  fid_mr* recv_mr_ = nullptr;
  fid_mr* send_mr_ = nullptr;
  fid_mr* ctrl_mr_ = nullptr;
  fid_mr* atomic_mr_ = nullptr;
  fid_mr* lock_mr_ = nullptr;
  uint64_t lock_key_ = 0;

  std::mutex poll_mu_;  // one CQ reader at a time
  std::mutex mu_;
  std::condition_variable cv_;    // tables arrived, goodbyes sent
  std::vector<Slot> slots_;       // guarded by mu_
  std::vector<uint32_t> free_;    // guarded by mu_
  std::vector<Peer> peers_;       // guarded by mu_
  std::vector<uint32_t> waiting_locks_;  // guarded by mu_: LOCK slots past their ticket
  uint32_t tables_ = 0;           // guarded by mu_
  uint32_t grant_ = kOfiCredits;  // receives posted per peer: its credits toward us (Init)
  bool any_stalled_ = false;      // guarded by mu_
  std::chrono::steady_clock::time_point next_timer_ = std::chrono::steady_clock::time_point::max();  // mu_
  std::atomic<bool> closed_{false};  // the endpoint is gone: nobody reads the CQ
  std::shared_ptr<Driver> driver_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool started_ = false;
  bool shut_ = false;  // guarded by mu_
};

}  // namespace svm::nic
