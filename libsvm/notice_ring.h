// NoticeRings: write notices deposited by remote WRITE (modes dw and up).
//
// Every node exports two regions to its peers' NICs:
//   deposit area  [w * 8, w * 8 + 8)  writer w's tail: bytes it ever wrote
//                                     into its ring here (u64)
//                 from RingsOffset(), one ring of R = ring_bytes per writer,
//                 w's at RingsOffset() + w * R
//                 (The tails side by side: a look for deposits loads a cache
//                 line per 8 writers, not a page per writer.)
//   heads area    one u64 per target node t, at t * 8: how many bytes of this
//                 node's ring at t that t has consumed (t writes it back).
// A writer appends records to its ring at each target by remote WRITE: the
// record's bytes (split in two WRITEs where it wraps), then its new tail
// word. The pair is FIFO, so a target that sees the tail sees the record.
// A record is  u32 length | u32 flags (kLastFragment) | payload, padded to 8
// bytes; a notice is encoded (node, interval, page count, pages) and cut into
// as many records as the free space asks, so a notice larger than the ring
// still goes through; the target reassembles the fragments.
// Flow control: a writer that finds a ring full waits, polling its heads area
// and draining its own rings meanwhile (two nodes depositing to each other
// with full rings both make progress).
//
// Thread-safety: Deposit calls are serialised by the caller (the runtime's
// mutex); Drain and Take may be called from any thread at any time,
// concurrently with Deposit and with each other (own mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nic_ext/transport.h"
#include "util/shared_memory.h"
#include "protocol/interval_log.h"
#include "util/status.h"

namespace svm::rt {

struct NoticeRingOptions {
  NodeId self = 0;
  uint32_t nodes = 1;
  uint32_t ring_bytes = 64 * 1024;  // R: a multiple of 8, at least 64
  nic::RegionId deposit_region = 0;
  nic::RegionId heads_region = 0;
  // How long Deposit waits for space before it gives up (a target that stopped
  // draining is a dead or wedged node).
  std::chrono::milliseconds full_timeout{60'000};
};

class NoticeRings {
 public:
  static constexpr uint32_t kRecordHeader = 8;
  static constexpr uint32_t kLastFragment = 1;

  // REQUIRES: options valid (see NoticeRingOptions); nic outlives this.
  NoticeRings(const NoticeRingOptions& options, nic::Nic* nic);
  ~NoticeRings();
  NoticeRings(const NoticeRings&) = delete;
  NoticeRings& operator=(const NoticeRings&) = delete;

  // Where the rings start in the deposit area: after the tails, a page on.
  uint64_t RingsOffset() const;
  // The two regions to register with the Nic before it connects.
  nic::MemoryRegion DepositRegion() const;
  nic::MemoryRegion HeadsRegion() const;

  // Appends notice to this node's ring at every other node. Waits while a
  // ring is full. Fails (Unavailable) if a ring stays full for
  // full_timeout, or if the NIC refuses the WRITEs.
  Status Deposit(const WriteNotice& notice);

  // Moves what writers deposited here out of the rings (their space is handed
  // back to the writers) into a queue that Take empties. True if it took any
  // record.
  bool Drain();
  // Whether a writer deposited something not drained yet. Cheap (a load per
  // writer), thread-safe, never blocks.
  bool Pending() const;
  // Drains, then appends the complete notices to *out, each writer's in the
  // order they were deposited.
  void Take(std::vector<WriteNotice>* out);

  // Statistics.
  uint64_t full_waits() const { return full_waits_; }  // Deposit found a ring full
  uint64_t records_sent() const { return records_sent_; }

 private:
  struct Outgoing;  // a record's bytes and its tail word, alive until done

  uint64_t& Tail(NodeId writer) const;  // in the deposit area (written by the NIC)
  uint64_t& HeadOf(NodeId target);    // in the heads area (written by the NIC)
  uint8_t* Ring(NodeId writer);
  // Posts one record of `payload` to target. REQUIRES: fits the free space.
  Status PostRecord(NodeId target, const uint8_t* payload, uint32_t length, bool last);
  void ReapOutgoing();
  bool DrainLocked();

  NoticeRingOptions opt_;
  nic::Nic* nic_;
  SharedMemory deposit_mem_, heads_mem_;
  uint8_t* deposit_ = nullptr;  // RingsOffset() + nodes * ring_bytes, in deposit_mem_
  uint64_t* heads_ = nullptr;   // nodes words, in heads_mem_
  size_t deposit_bytes_ = 0, heads_bytes_ = 0;

  // Writer side (serialised by the caller).
  std::vector<uint64_t> tail_;  // bytes written to each target's ring
  nic::CompletionQueue out_cq_;
  uint64_t next_wr_ = 1;
  std::map<uint64_t, std::unique_ptr<Outgoing>> outgoing_;
  uint64_t full_waits_ = 0, records_sent_ = 0;

  // Target side.
  std::mutex in_mu_;
  std::vector<uint64_t> head_;                  // GUARDED_BY(in_mu_): consumed per writer
  std::unique_ptr<std::atomic<uint64_t>[]> drained_;  // head_, readable without in_mu_
  std::unique_ptr<uint64_t[]> head_shadow_;     // GUARDED_BY(in_mu_): WRITE source
  std::vector<std::vector<uint8_t>> partial_;   // GUARDED_BY(in_mu_): fragments so far
  std::deque<WriteNotice> ready_;               // GUARDED_BY(in_mu_)
  std::atomic<bool> has_ready_{false};          // !ready_.empty()
  nic::CompletionQueue in_cq_;                  // errors of the head write-backs
};

// Reads one writer's records in its ring (ring_bytes long) from *head up to
// tail (bytes ever written; the writer's word, not to be trusted): payload
// bytes go to *partial, and each complete notice's bytes are handed to
// on_notice (which may take them). False, with *error, when the records do
// not fit what the writer claims (more than a ring of bytes outstanding, a
// record longer than the ring or running past the tail, a notice beyond
// kMaxNoticeBytes): the ring cannot be read on. Never reads outside the ring.
inline constexpr uint64_t kMaxNoticeBytes = 1ull << 30;
bool ReadNoticeRecords(const uint8_t* ring, uint64_t ring_bytes, uint64_t* head, uint64_t tail,
                       std::vector<uint8_t>* partial, const std::function<void(std::vector<uint8_t>&)>& on_notice,
                       std::string* error);

// The encoded form of a notice (what the records carry), and back.
std::vector<uint8_t> EncodeNotice(const WriteNotice& n);
Status DecodeNotice(const std::vector<uint8_t>& bytes, uint32_t nodes, WriteNotice* out);

}  // namespace svm::rt
