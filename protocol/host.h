// Host: everything a protocol Node needs from the world, behind one narrow
// interface, so that the runtime (libsvm) and the deterministic simulator
// (tests/sim) can each provide it.
//
// A Node calls these only from inside its own methods. Calls must not re-enter
// the Node (queue a message or a wake-up instead of handling it inline).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/interval_log.h"
#include "protocol/types.h"
#include "protocol/vector_time.h"

namespace svm {

// The huge page a host may back memory with (Host::Populate): x86-64's 2 MiB.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class Host {
 public:
  virtual ~Host() = default;

  // Sends an encoded message (wire.h) to node `to` != self. Reliable and FIFO
  // per pair of nodes; delivery is asynchronous.
  virtual void Send(NodeId to, std::vector<uint8_t> bytes) = 0;

  // An empty buffer to encode the next Send into: one whose storage a past
  // Send left behind, where the host keeps them, so sending allocates
  // nothing once the buffers have grown.
  virtual std::vector<uint8_t> SendBuffer() { return {}; }

  // The protocol's view of page p's frame on this node: always readable and
  // writable, whatever the application view's protection. Page-sized.
  virtual std::span<uint8_t> Frame(PageId p) = 0;

  // The end of the frames p's lies among: pages [p, FramesEnd(p)) have
  // their frames side by side at every node, so one fetch can carry them.
  virtual PageId FramesEnd(PageId p) = 0;

  // Sets the protection of pages [first, first + count) in the application's
  // view, in one step where the backend allows (a run of pages costs one
  // system call, not one per page).
  virtual void Protect(PageId first, size_t count, Prot prot) = 0;

  // Installs pages [first, first + count), which have no frame here yet, from
  // `data` (count pages): their frames are made holding it and mapped with
  // `prot` (kRead or kReadWrite) in one step, with no zero-fill and no copy
  // through Frame() (the runtime: UFFDIO_COPY). Returns how many pages from
  // first on it installed; it stops before a page that has a frame, which
  // the Node then writes through Frame() and Protects. Only where Fills().
  virtual size_t Fill(PageId first, size_t count, std::span<const uint8_t> data, Prot prot) {
    (void)first, (void)count, (void)data, (void)prot;
    return 0;
  }
  virtual bool Fills() const { return false; }

  // NodeConfig::scan_writes only: appends to *written the pages of [first,
  // first + count) written since their protection was last set to
  // Prot::kRead or they were found here, and arms them again in the same
  // step, so that a later write is found by a later call. Under scan_writes
  // Prot::kRead lets the program write (the write is recorded, no fault);
  // kNone forgets the record. Pages last set to kReadWrite may be reported
  // (and armed) too. (The runtime: PAGEMAP_SCAN over a uffd trap with
  // UFFD_FEATURE_WP_ASYNC.)
  virtual void FindWritten(PageId first, size_t count, std::vector<PageId>* written) = 0;

  // Memory the Node is about to use (a slab of twins): the host may commit
  // it now, in one step, rather than a page fault per page as it is first
  // written (the runtime: MADV_POPULATE_WRITE, in huge pages where it holds
  // whole ones). A hint.
  virtual void Populate(std::span<uint8_t> memory) { (void)memory; }

  // Thread t, blocked by an operation that returned Outcome::kBlocked, should
  // retry that operation. A wake may also reach a thread that is not blocked
  // (for instance the caller of the operation that woke it); it must then be
  // harmless: at most one retry that returns kBlocked again.
  virtual void Wake(ThreadId t) = 0;

  // Page p's version vector (nodes() entries) in memory this node exports to
  // its peers' NICs: at p's home, how far each node's diffs have been applied
  // (its flush timestamp). Direct diffs (dd) advance their writer's entry
  // remotely, so the Node reads and writes it with atomic_ref, never caching
  // it. Other nodes' entries for p are unused. Zero-initialised.
  virtual std::span<IntervalId> Versions(PageId p) = 0;

  // At p's home: how many other nodes may hold a copy of p, each counted
  // once from its first fetch until it gives the mark back (its copy gone):
  // in base and dw the home's handler counts FetchRequest.mark and
  // MarksDropped, from rf on the peers' NICs do (ReadPages, DropMarks).
  // While 0 the home tracks no writes to p. Exported memory like Versions:
  // read with atomic_ref. Zero-initialised.
  virtual uint64_t& SharedMark(PageId p) = 0;

  // First touch, rf and up: page p's directory word at its manager
  // (HomeMap::Manager), in exported memory like SharedMark: 0 while nobody
  // claimed p, then its home + 1, set once (by ClaimHome's CAS) and never
  // changed. Read with atomic_ref. Zero-initialised.
  virtual uint64_t& HomeWord(PageId p) = 0;

  // Asked by the barrier master (node 0) as a barrier completes: how many
  // threads the job has now. A barrier of all of them, with every node
  // taking part, has no lock request in flight and leaves every node's bins
  // covering its time, so the notices it covers can be dropped. May be
  // larger than the truth (a thread that just ended), never smaller.
  virtual uint32_t JobThreads() = 0;

  // ---- One-sided operations (modes dw, rf, dd, nil; DESIGN.md "Modes").
  // Served by the target's NIC from the memory it exports (Frame, Versions,
  // deposited notices, lock words); the target's Node is never called for
  // them. Ordered FIFO with Send() per ordered pair of nodes. Completions
  // come back through the Node methods named below, called by the host under
  // the Node's serialisation and never from inside a Host call.

  // rf: READ home's Versions of the pages first + i * stride (i < count),
  // then their Frames, posted together (count <= kMaxPageRun, stride <=
  // kMaxPageStride, the last page < FramesEnd(first)). The versions are
  // read first, so a version that covers a demand guarantees the page holds
  // the diffs it names. For each bit i set in mark, first sets home's
  // SharedMark of page i (a fetch-and-add, completed at the home before the
  // reads), so that the home tracks every write it makes to that page from
  // then on. The pages land where `into` says. Completes with
  // Node::OnPageRead.
  struct Landing {
    enum class Where : uint8_t {
      kBuffer,  // a buffer of the host's
      kFrames,  // their Frames (no copy of these pages here is valid): OnPageRead gets no data
      kAt,      // `at`, count pages side by side, memory of the Node's: OnPageRead gets them there
    };
    Where where = Where::kBuffer;
    uint8_t* at = nullptr;
  };
  virtual void ReadPages(NodeId home, PageId first, uint32_t count, uint32_t stride, uint64_t mark,
                         Landing into) = 0;

  // rf and up: a fetch-and-add of -1 on home's SharedMark of each of
  // `pages`, each marked by this node's ReadPages and whose copy is gone
  // from here (unmapped), so that the home can stop tracking a page no other
  // node holds. Ordered FIFO with the other requests to home. No completion
  // reaches the Node.
  virtual void DropMarks(NodeId home, std::span<const PageId> pages) = 0;

  // rf and up, first touch: CAS manager's HomeWord(p) from 0 to this node
  // + 1; if that won, CAS likewise the words of the pages after p that are
  // free, up to `ahead` of them and to the first another node holds (a
  // sweep's claim ahead: a lost claim takes none); then READ the HomeWords
  // of pages (p, p + count) (ahead < count <= kMaxPageRun, p + count <= the
  // end of the manager's block). `manager` may be this node; its CASes must
  // then be atomic with its peers' NICs' CASes on the words too. Completes
  // with Node::OnHomeClaimed: p's word's old value and the words read.
  virtual void ClaimHome(NodeId manager, PageId p, uint32_t count, uint32_t ahead) = 0;

  // dd: WRITE each run of `runs` (diff.h encoding) into home's Frame(p), then
  // home's Versions(p)[self] = interval. No completion reaches the Node.
  virtual void WriteDiff(NodeId home, PageId p, IntervalId interval,
                         std::span<const uint8_t> runs) = 0;

  // dw: WRITE notice into every other node's deposit area for this node.
  // Deposits from one writer are taken at each target in the order made.
  virtual void DepositNotice(const WriteNotice& notice) = 0;
  // dw: appends to *out the notices peers deposited here since the last call,
  // in each writer's order (notices of different writers interleave freely).
  virtual void TakeNotices(std::vector<WriteNotice>* out) = 0;

  // nil: atomically swap lock l's tail word at its home for this node (a
  // remote CAS from `guess`, the node the word most likely names, kNoNode
  // if unknown; retried from what it found while wrong). Completes with
  // Node::OnNicLockTail and the node the word named before (the home, for
  // a word nobody swapped yet).
  virtual void NicLockTail(NodeId home, LockId l, NodeId guess) = 0;
  // After each lock request sent to `to` (to the home, forwarded to the
  // tail, or to the predecessor in nil), a fetch-and-add on to's nudge word
  // (after the message: FIFO per pair). Its threads look at that word
  // before each lock operation and, when it moved, take their messages
  // first: a node re-taking an idle lock sees the request that came for it
  // rather than leaving it to the handler thread. A hint only.
  virtual void Nudge(NodeId to) = 0;
};

}  // namespace svm
