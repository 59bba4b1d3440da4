// Transport: the verbs-shaped network interface of svm (DESIGN.md, nic_ext/).
//
// A Nic is one node's network interface. It owns registered memory regions,
// one reliable endpoint per peer (FIFO per ordered pair of nodes), a lock
// table served by the NIC itself, and a receive queue for SEND messages.
// Work requests name a peer; one-sided ones (WRITE, WRITE_RUNS, READ, CAS,
// FAA) name a remote (region id, offset) and are served by the peer's NIC
// straight from its registered memory, never by its protocol handler. Every remote access is
// checked against the target's regions; a bad one completes with an error at
// the initiator.
//
// Life cycle: construct (backend factory) -> RegisterRegion* -> Connect ->
// Post / Poll / Wait ... -> Shutdown (or destructor).
//
// Thread-safety: RegisterRegion and Connect are control-path calls made by one
// thread before any Post. Post, the queues and Shutdown are thread-safe.
// Backends: fake/ (in-process), tcp/ (software NIC), shm/ (one host, one-sided
// by construction), verbs/ (RDMA).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nic_ext/queue.h"
#include "util/buffer_pool.h"
#include "util/ids.h"
#include "util/status.h"

namespace svm::nic {

// Limits shared by every backend (a backend may be stricter; it says so).
inline constexpr size_t kMaxNodes = 256;
inline constexpr size_t kMaxSge = 8;                 // gather/scatter entries per WR
inline constexpr uint32_t kMaxRegions = 64;          // region ids are 0..kMaxRegions-1
inline constexpr uint32_t kMaxTransfer = 1u << 20;   // bytes per READ / WRITE
inline constexpr uint32_t kMaxMessage = 1u << 20;    // bytes per SEND
inline constexpr uint32_t kMaxLocks = 1u << 20;      // lock ids are 0..kMaxLocks-1
inline constexpr size_t kMaxOutstanding = 4096;      // WRs awaiting a response, per node
inline constexpr size_t kAtomicBytes = 8;            // CAS / FAA word (8-byte aligned)

// The job key (the same type as svmd::Key). All zero is refused by the
// backends that connect processes: every connection is authenticated, tests
// included.
using JobKey = std::array<uint8_t, 32>;

using RegionId = uint32_t;
using LockNo = uint32_t;

// Memory the peers may access. The caller owns it and keeps it mapped until the
// Nic is shut down. Region ids are chosen by the caller (the same id on every
// node typically names the same kind of memory, e.g. home frames).
// `fd` names a file that maps the same bytes at `fd_offset` (a memfd, see
// util/shared_memory.h): the shm backend requires it, because its peers map
// the region themselves; other backends ignore it.
struct MemoryRegion {
  RegionId id = 0;
  void* base = nullptr;
  size_t length = 0;
  int fd = -1;
  uint64_t fd_offset = 0;
};

// kWriteRuns: a scatter of runs into one region, its gather list the runs'
// encoding, little-endian, `u32 offset | u32 length | length bytes` each,
// offsets from the WR's offset and length >= 1 (protocol/diff.h's encoding:
// a direct diff is one WR, not a WRITE per run). Every run is checked before
// any is stored: a run outside the region is kRemoteAccessError, a malformed
// encoding kRemoteInvalidRequest, and nothing is stored. Runs should not
// overlap (their order of landing is the NIC's). Not every NIC has it
// (Nic::Supports). Where Nic::StoresMaskedBlocks, the gather list may
// instead be one masked block, alone: `u32 offset | u32 (kMaskedRuns |
// length) | length / 8 bytes of mask | length bytes`, offset and length
// multiples of 64, the first and last mask words not zero; only the bytes
// whose mask bits are set are stored (nic_ext/runs.h).
enum class Opcode : uint8_t { kSend, kWrite, kRead, kCas, kFaa, kLock, kUnlock, kWriteRuns };
const char* ToString(Opcode op);
bool IsValid(Opcode op);
inline constexpr size_t kRunHeaderBytes = 8;  // kWriteRuns: u32 offset | u32 length
inline constexpr uint32_t kMaskedRuns = uint32_t{1} << 31;  // in the length: a masked block

// Completion status (the verbs ibv_wc_status, reduced).
enum class WcStatus : uint8_t {
  kSuccess,
  kRemoteAccessError,     // region unknown, out of bounds, or misaligned atomic
  kRemoteInvalidRequest,  // bad lock id, UNLOCK by a non-owner
  kFlushed,               // connection to the peer lost, or Nic shut down
};
const char* ToString(WcStatus s);

// One local buffer. For SEND and WRITE the list is gathered in order; for READ
// the fetched bytes are scattered over it in order.
struct Sge {
  void* addr = nullptr;
  uint32_t length = 0;
};

struct WorkRequest {
  uint64_t wr_id = 0;  // returned in the completion
  Opcode op = Opcode::kSend;
  NodeId peer = 0;     // the target node; may be this node
  bool signaled = true;  // false: no completion on success (errors always complete)
  uint32_t num_sge = 0;
  std::array<Sge, kMaxSge> sge{};
  RegionId region = 0;   // WRITE, READ, CAS, FAA: remote region ...
  uint64_t offset = 0;   // ... and offset in it
  uint64_t compare = 0;  // CAS: expected value
  uint64_t operand = 0;  // CAS: new value; FAA: addend
  LockNo lock = 0;       // LOCK, UNLOCK

  uint64_t Bytes() const;  // sum of the gather list
  static WorkRequest Send(NodeId peer, std::span<const Sge> sges, uint64_t wr_id = 0);
  static WorkRequest Write(NodeId peer, RegionId r, uint64_t off, std::span<const Sge> sges,
                           uint64_t wr_id = 0);
  // `runs` holds the encoded runs (see kWriteRuns), offsets from `off`.
  static WorkRequest WriteRuns(NodeId peer, RegionId r, uint64_t off, std::span<const Sge> runs,
                               uint64_t wr_id = 0);
  static WorkRequest Read(NodeId peer, RegionId r, uint64_t off, std::span<const Sge> sges,
                          uint64_t wr_id = 0);
  static WorkRequest Cas(NodeId peer, RegionId r, uint64_t off, uint64_t expected,
                         uint64_t desired, uint64_t wr_id = 0);
  static WorkRequest Faa(NodeId peer, RegionId r, uint64_t off, uint64_t add,
                         uint64_t wr_id = 0);
  static WorkRequest Lock(NodeId peer, LockNo lock, uint64_t wr_id = 0);
  static WorkRequest Unlock(NodeId peer, LockNo lock, uint64_t wr_id = 0);
};

// Completion order: per peer, completions of WRs posted to one CQ appear in
// posting order, except LOCK, which completes when granted.
//   SEND   completes once its bytes are copied out of the gather list;
//   WRITE, WRITE_RUNS  once the target has stored them (`byte_len`: the
//          gathered bytes);  READ once the data is local;
//   CAS/FAA once done, `value` = the word's old value (CAS succeeded iff
//          value == compare);  LOCK when granted (FIFO among requesters of
//   that lock at that node);  UNLOCK once the lock passed on.
struct Completion {
  uint64_t wr_id = 0;
  Opcode op = Opcode::kSend;
  WcStatus status = WcStatus::kSuccess;
  NodeId peer = 0;
  uint32_t byte_len = 0;  // READ/WRITE/SEND bytes
  uint64_t value = 0;     // CAS/FAA old value
};

// A SEND as delivered to the target's protocol handler.
struct Message {
  NodeId from = 0;
  std::vector<uint8_t> bytes;
};

using CompletionQueue = WaitQueue<Completion>;
using RecvQueue = WaitQueue<Message>;

class Nic {
 public:
  virtual ~Nic() = default;
  Nic(const Nic&) = delete;
  Nic& operator=(const Nic&) = delete;

  NodeId self() const { return self_; }
  uint32_t num_nodes() const { return num_nodes_; }

  // Makes r accessible to every peer under r.id. REQUIRES: before Connect;
  // ids unique, id < kMaxRegions, r.length > 0.
  virtual Status RegisterRegion(const MemoryRegion& r) = 0;

  // Establishes an endpoint to every node. addresses[i] is node i's
  // "host:port" (the fake backend ignores them). Blocks until every peer is
  // connected or the backend's setup timeout passes.
  virtual Status Connect(std::span<const std::string> addresses) = 0;

  // Posts work requests; their completions go to *cq, which must outlive
  // them. Either all are accepted or none (an InvalidArgument or OutOfRange
  // Status names the first bad one). REQUIRES: Connect succeeded.
  virtual Status Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) = 0;

  // Whether Post takes work requests of `op`: every backend takes the
  // verbs-shaped ones; kWriteRuns needs a NIC that can check the runs
  // against the target's regions and scatter them (fake, shm, tcp: at the
  // target or its mapping; ofi: a few runs per RMA write), so verbs refuses
  // it and the caller posts a WRITE per run instead.
  virtual bool Supports(Opcode op) const { return IsValid(op) && op != Opcode::kWriteRuns; }

  // Whether a kWriteRuns may carry a masked block (a direct diff of
  // scattered writes): the NICs that store runs through a RegionTable
  // (fake, shm, tcp); ofi's RMA writes cannot skip bytes.
  virtual bool StoresMaskedBlocks() const { return false; }

  // SEND messages from peers (and from this node to itself), FIFO per sender.
  RecvQueue& recv_queue() { return recv_queue_; }

  // Hands back the storage of a received message the consumer is done with:
  // the backend fills it with a later message (RecvBuffer), so steady
  // traffic allocates nothing. Thread-safe.
  void Recycle(std::vector<uint8_t>&& bytes) { pool_.Give(std::move(bytes)); }

  // Stops the NIC: pending WRs complete kFlushed, threads are joined, sockets
  // closed. Idempotent; the destructor calls it.
  virtual void Shutdown() = 0;

 protected:
  Nic(NodeId self, uint32_t num_nodes, WaitPolicy recv_policy)
      : self_(self), num_nodes_(num_nodes), recv_queue_(recv_policy) {}

  // Checks one WR against the shared limits (used by every backend's Post).
  Status Validate(const WorkRequest& wr) const;

  // Empty, with the storage of a recycled message where there is one.
  std::vector<uint8_t> RecvBuffer(size_t need) { return pool_.Take(need); }

 private:
  NodeId self_;
  uint32_t num_nodes_;
  RecvQueue recv_queue_;
  // Received messages' storage: 64 buffers of at most 512 KiB. A page run's
  // reply (64 pages and their versions) is just over 256 KiB: with that
  // bound every one was dropped and the next allocated again (0.3 an
  // allocation a fault in base).
  BufferPool pool_{64, kMaxMessage / 2};
};

}  // namespace svm::nic
