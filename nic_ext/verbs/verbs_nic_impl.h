// VerbsNicImpl: private state of the verbs backend, shared by its setup file
// (verbs_transport.cc) and datapath (verbs_transport_datapath.cc).
//
// One PD, one CQ (with a completion channel) for all QPs; one RC QP per peer.
// A completion thread sleeps on the channel, turns work completions into
// svm completions, reposts receive buffers and drives the LOCK state machine
// (FAA ticket -> READ serving, repeated until granted). mu_ guards the
// pending-request table and posting.
// Not yet: WRs to this node itself (Post refuses them), reconnection.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "nic_ext/region_table.h"
#include "nic_ext/verbs/verbs_transport.h"

namespace svm::nic {

inline constexpr uint64_t kVerbsRecvFlag = uint64_t{1} << 63;  // wr_id of receive buffers
inline constexpr size_t kLockWordBytes = 16;                     // u64 next, u64 serving

class VerbsNicImpl final : public VerbsNic {
 public:
  explicit VerbsNicImpl(const VerbsOptions& o);
  ~VerbsNicImpl() override;

  Status Init();
  std::string listen_address() const override { return listen_address_; }
  Status RegisterRegion(const MemoryRegion& r) override;
  Status Connect(std::span<const std::string> addresses) override;
  Status Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) override;
  void Shutdown() override;

 private:
  struct Remote {
    uint64_t addr = 0;
    uint32_t rkey = 0;
    uint64_t length = 0;
    bool used = false;
  };
  struct Peer {
    rdma_cm_id* id = nullptr;
    rdma_event_channel* channel = nullptr;  // dialled peers own one
    ibv_qp* qp = nullptr;
    std::array<Remote, kMaxRegions> regions{};
    Remote locks;
    bool have_table = false;
    bool alive = false;
  };
  enum class LockStep : uint8_t { kNone, kTicket, kPolling };
  struct Pending {
    bool used = false;
    uint64_t wr_id = 0;
    Opcode op = Opcode::kSend;
    NodeId peer = 0;
    bool signaled = true;
    CompletionQueue* cq = nullptr;
    uint32_t bytes = 0;
    LockStep step = LockStep::kNone;
    uint64_t ticket = 0;
    LockNo lock = 0;
  };

  // Setup (verbs_transport.cc).
  Status EnsureDevice(ibv_context* ctx);
  Status MakeQp(Peer& p);
  Status PostRecvs(NodeId peer);
  Status WaitEvent(rdma_event_channel* ch, rdma_cm_event_type want, rdma_cm_event** out);
  Status Dial(NodeId peer, const std::string& address);
  Status AcceptPeers();
  Status ExchangeTables();

  // Datapath (verbs_transport_datapath.cc).
  void CompletionLoop();
  void HandleWc(const ibv_wc& wc);
  Status PostOne(CompletionQueue* cq, const WorkRequest& wr);
  int PostAtomic(NodeId peer, uint32_t slot, ibv_wr_opcode op, const Remote& r, uint64_t off,
                 uint64_t compare_add, uint64_t swap);
  int PostReadWord(NodeId peer, uint32_t slot, const Remote& r, uint64_t off);
  ibv_mr* LocalMr(const void* addr, size_t len) const;
  void Finish(uint32_t slot, WcStatus st, uint64_t value);

  const VerbsOptions opt_;
  std::string listen_address_;
  RegionTable regions_;
  std::vector<ibv_mr*> mrs_;  // index = region id (nullptr: unused)
  rdma_event_channel* listen_channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<Peer> peers_;
  std::vector<uint8_t> recv_slab_;       // peers x kVerbsRecvDepth x kVerbsMaxMessage
  ibv_mr* recv_mr_ = nullptr;
  std::vector<uint64_t> atomic_results_;  // one word per pending slot
  ibv_mr* atomic_mr_ = nullptr;
  std::vector<uint64_t> lock_words_;     // kVerbsMaxLocks x {next, serving}
  ibv_mr* lock_mr_ = nullptr;
  std::vector<uint8_t> table_buf_;       // this node's region table, as sent
  ibv_mr* table_mr_ = nullptr;

  std::mutex mu_;
  std::vector<Pending> slots_;   // guarded by mu_
  std::vector<uint32_t> free_;   // guarded by mu_
  std::thread thread_;
  std::atomic<bool> stop_{false};
  int stop_fd_ = -1;
  bool started_ = false;
};

}  // namespace svm::nic
