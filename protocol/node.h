// Node: the HLRC-SMP protocol state of one node, as a message-driven state
// machine with no threads, syscalls or clocks of its own.
//
// The runtime (or the simulator) calls the thread operations on behalf of the
// node's application threads, feeds every received message to Receive(), and
// provides the world through Host (host.h).
//
// Threading: a Node is not thread-safe; the caller serialises all calls.
//
// Blocking: a thread operation returns kBlocked when it cannot finish yet. The
// node later calls Host::Wake(t); the thread then calls the same operation
// again, with the same arguments, until it returns kDone. For Fault, kDone
// means the page's protection now permits the access: the thread retries its
// access (which may fault again if the page changed in between).
//
// The protocol, in brief (DESIGN.md, "Memory model"):
//  * Every page has a home, whose frame is up to date as far as the diffs
//    that reached it; its version (flush timestamp, Host::Versions: memory
//    the NICs of other nodes may read and, in dd, write) says how far.
//  * Pay only for sharing: a home page no other node holds is untracked,
//    mapped read-write with no notice, twin or re-protection. It becomes
//    tracked at the home's next interval end after another node marked it
//    (Host::SharedMark, counted by the fetch); that interval's notice names
//    it, so a home write racing with the first fetch is either in the copy
//    or announced. A node gives its mark back when its copy goes, and a page
//    written while nobody else holds it goes back to untracked. A first
//    touch of a sequential sweep maps a run ahead.
//  * Non-home copies are INVALID, READ or WRITE (twinned). A write notice
//    applied at an acquire invalidates a READ copy; a WRITE copy becomes
//    stale and is refreshed by a safe fetch, which keeps local writes.
//  * An interval closes only when a lock is granted to another node or at a
//    barrier: dirty pages are diffed to their homes (lazy diffing), and the
//    pages written become a write notice of the new interval.
//  * Notices reach a node with lock grants and barrier releases (kept in the
//    bins, IntervalLog), and are applied lazily: only when an acquire by a
//    local thread needs them, as far as that thread's new view requires.
//  * Locks: a home per lock keeps the last requester; requests are forwarded
//    to it, and it grants when done. Hand-offs between local threads cost no
//    message. Waiters are served in arrival order, remote ones included,
//    except that at most kMaxLocalBypasses local waiters go before a waiting
//    remote one, so a remote waiter is never starved by local traffic.
//  * Page runs: a remote fault whose page follows one held here (a sweep)
//    fetches the pages after it with the same home along, in one request
//    and one reply (rf: one READ). They are mapped as READ copies at once,
//    except the run's last page, which is watched: left unmapped, so its
//    first touch (a local fault) shows the sweep reached it. The run doubles
//    on each such fault and halves when a page fetched ahead goes unused
//    (watched and invalidated untouched, or too old on arrival).
//  * Barriers: threads of a node, then up a tree of nodes (barrier_fanout
//    children a node, node 0 the root), each node combining its subtree's
//    arrivals into one message, and the release back down the same tree.
//  * scan_writes (NodeConfig): tracked pages are read-protected as usual,
//    but writes to them go through and are collected by Host::FindWritten as
//    the interval closes; copies away from the home are twinned on arrival.
//    A copy dropped by a notice is compared with its twin once it is
//    unmapped (its writes since the last look would be lost otherwise); a
//    tracked home page unmapped to wait for diffs counts as written.
//
// Modes (types.h, cumulative) move work from handlers onto one-sided ops:
//  * dw: each closed interval's notice is deposited at every other node at
//    once; grants and barrier messages carry only timestamps. A grant or
//    release naming intervals whose deposits have not arrived yet (no FIFO
//    between different senders) waits, and Poll() finishes it.
//  * rf: pages are fetched by a remote READ of version and frame; a copy too
//    old for pg.need is read again. No handler runs at the home.
//  * First touch by message (base, dw; rf and up without claim_by_cas): a
//    claim that follows on from the span the claimant's last claim of a
//    sweep was answered with asks for the unclaimed pages after it as well
//    (ClaimAhead): they become its home pages as if touched there first, and
//    it maps them with the claimed page (MapGranted).
//  * rf and up, first touch: a page's directory entry is a word at its
//    manager (Host::HomeWord) that a claimant sets by a CAS from 0 to
//    itself (Host::ClaimHome): the first CAS wins, a later one finds the
//    winner. No handler runs at the manager, and the claim reads the words
//    of the following pages of the manager's block along, so a run reaches
//    pages already claimed by the same home (as HomeReply.same does).
//  * dd: diffs are written into the home frame and the writer's version
//    entry by the writer's NIC; home threads waiting for them are woken by
//    Poll(), which re-reads the versions.
//  * nil: the home of a lock runs no handler for it: the queue's tail is a
//    word at the home that a requester swaps for itself by a remote CAS
//    (Host::NicLockTail), then asks its predecessor directly. An idle token
//    stays with its last holder, so a node re-acquires with no message and
//    no NIC operation until another node asks (a cohort lock); the word
//    changes only when ownership crosses nodes. The runtime's pinned locks
//    (thread birth and death) too. doc/locks.md.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/geometry.h"
#include "protocol/host.h"
#include "protocol/interval_log.h"
#include "protocol/messages.h"
#include "protocol/page_table.h"
#include "protocol/stats.h"
#include "util/status.h"
#include "protocol/types.h"
#include "protocol/vector_time.h"

namespace svm {

// Deliberate protocol bugs, for proving that the simulator's checker can fail.
enum class PlantedBug : uint8_t {
  kNone,
  kSkipInvalidation,  // write notices never invalidate READ copies
  kNoVersionWait,     // nobody waits for a page's version: homes serve at
                      // once and requesters install old copies
  kUnsafeFetch,       // fetches overwrite dirty pages, losing local writes
  kEarlyDropCheck,    // scan_writes: a dropped copy is compared with its twin
                      // before its unmapping took effect
  kMarkDroppedAtInstall,  // a copy gives its mark back as soon as
                          // it is installed, so its home may stop tracking
                          // a page another node holds
};
const char* ToString(PlantedBug b);

struct NodeConfig {
  NodeId self = 0;
  Geometry geometry;         // geometry.nodes is the number of nodes
  uint32_t threads = 1;      // local thread slots: ThreadId in [0, threads)
  HomePolicy home_policy = HomePolicy::kCyclic;
  uint32_t cyclic_block = 1;
  uint32_t epoch = 0;        // job epoch stamped on every message
  Mode mode = Mode::kBase;
  // Pages a remote fault fetches at most (a page run, 1..kMaxPageRun): the
  // faulting page and those after it with the same home, asked for together
  // once faults look sequential.
  uint32_t max_run = 1;
  // Children a node in the barrier tree (node_barrier.cc), the same on every
  // node; nodes - 1 or more: node 0 gathers every node itself (flat).
  uint32_t barrier_fanout = 8;
  // First touch from rf on: claim a page's home by a CAS on the manager's
  // word (Host::ClaimHome) rather than by a HomeClaim message. For
  // transports whose one-sided operations cost less than a message; on tcp
  // a remote CAS is a message to the NIC thread and a claim costs more.
  bool claim_by_cas = true;
  // Find writes to tracked pages without faults (DESIGN.md, "Find writes
  // without faults"): Prot::kRead lets writes through, recorded by the host,
  // and Host::FindWritten collects them when an interval closes. Copies away
  // from the home get their twin when they arrive (eager twins). Else a
  // write to a read page faults and is noted then.
  bool scan_writes = false;
  // Direct diffs (dd, nil) may be masked blocks (diff.h): the host's NIC
  // stores them (nic::Nic::StoresMaskedBlocks). Diffs sent as messages may
  // always be.
  bool masked_direct_diffs = false;
  PlantedBug TEST_bug = PlantedBug::kNone;
};

enum class Outcome : uint8_t { kDone, kBlocked };

class Node {
 public:
  // REQUIRES: config.geometry.Validate().ok(), config.self < nodes, host
  // outlives the Node. Every page starts with protection kNone in the
  // application view and all-zero contents in every frame.
  Node(const NodeConfig& config, Host* host);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Thread t touched page p with access a and the protection did not allow it.
  // After kBlocked, t calls it again for the same access once woken.
  Outcome Fault(ThreadId t, PageId p, Access a);

  // Thread t acquires lock l. REQUIRES: t does not hold l.
  // After kBlocked, t calls it again once woken: a release with local waiters
  // may leave the token idle and wake the oldest, which takes it then,
  // unless another thread of the node took it first (kMaxBarges).
  Outcome Acquire(ThreadId t, LockId l);
  // REQUIRES: t holds l.
  void Release(ThreadId t, LockId l);
  // Thread t stops waiting for l (a timed lock's deadline passed). False if
  // l was granted to t meanwhile: t holds it. A token that arrives later for
  // nobody stays here idle or goes on to the next requester.
  bool CancelAcquire(ThreadId t, LockId l);

  // Thread t reaches barrier b, which `total` threads of the job must reach.
  // The node reports its threads to the master in batches of `local` (the
  // node's participants, for one message per node; or 1, for one message
  // per thread), or, with kGather, in one batch of the threads that took
  // part in b's last episode here (the first episode: one a thread): the
  // batch goes once each of them has arrived or waits elsewhere
  // (WaitingElsewhere; a lock or another barrier of this node's counts by
  // itself), and later arrivals of the episode report alone. Every caller
  // passes the same values. A barrier of every thread of the job
  // (Host::JobThreads) on every node also drops the write notices it leaves
  // every node holding.
  // On kDone, *serial (if given) says whether t is the episode's one serial
  // thread (PTHREAD_BARRIER_SERIAL_THREAD).
  static constexpr uint32_t kGather = 0;
  Outcome Barrier(ThreadId t, BarrierId b, uint32_t total, uint32_t local,
                  bool* serial = nullptr);
  // Thread t waits for something only other threads can end (a condition, a
  // join; true), or runs again (false): a gathering barrier stops waiting
  // for it. (Waits at a lock or a barrier of this node's set it here.)
  void WaitingElsewhere(ThreadId t, bool waiting);
  // Thread t has exited: no barrier gathers for it, nor for the next thread
  // given its slot until that one takes part.
  void ThreadExited(ThreadId t);
  // Whether a kGather barrier holds arrivals back for threads still running,
  // or a barrier holds its subtree's for a child that has not reported.
  bool Gathering() const { return !gathering_.empty() || !holding_.empty(); }
  // Only the latter: no thread of this node need be there to give up.
  bool Holding() const { return !holding_.empty(); }
  // Reports them now: the last resort of a wait that lasted too long (a
  // thread blocked where the node cannot see, e.g. in a system call; a
  // child whose threads took part in the last episode but not in this one).
  void ReportGathered();

  // Whether l's token is on this node and a local thread holds it.
  bool HeldLocally(LockId l) const;
  // Whether thread t holds l.
  bool Holds(ThreadId t, LockId l) const;
  // Whether an Acquire of l here now would take an idle token that came
  // from another node fewer than kPoliteTakes local takes ago, or a multiple
  // of kPoliteTakes: a request for it may have arrived unseen (the host may
  // look for one first). A thread that re-takes a lock in a loop, waiting
  // for another node's turn, would otherwise take it again and again while
  // that node's request waits for a NIC thread that shares the CPU with it;
  // a loop that outlasts kPoliteTakes still looks, every kPoliteTakes-th.
  bool MayBeWanted(LockId l) const;
  static constexpr uint8_t kPoliteTakes = 64;
  // How many local takes l's token has had since it came from another node
  // (valid while MayBeWanted): that node may be asking for it back, its
  // request on the way (a lock taken in turns).
  uint32_t TakesSinceArrival(LockId l) const;

  // A message from node `from`. An error means the message was malformed or
  // broke the protocol; the node's state is unchanged by such a message.
  Status Receive(NodeId from, std::span<const uint8_t> bytes);

  // ---- Modes dw..nil: completions of one-sided operations (host.h), and
  // polling of the memory peers write without telling anyone.

  // Completion of Host::ReadPages: home's versions of the pages first,
  // first + stride, ... and their bytes (empty: they landed in their
  // frames). Like a PageReply: a faulting page's copy older than what is
  // needed by now is read again.
  Status OnPageRead(NodeId home, PageId first, uint32_t stride, std::span<const VectorTime> versions,
                    std::span<const uint8_t> data);
  // Completion of Host::ClaimHome for page p: the manager's HomeWord(p)
  // before the CAS (0: this node won) and the words of the pages after p
  // it read.
  Status OnHomeClaimed(PageId p, uint64_t word, std::span<const uint64_t> following);
  // Completion of Host::NicLockTail: this node is now l's tail; `previous`
  // was (l's home for a lock nobody asked for yet).
  Status OnNicLockTail(LockId l, NodeId previous);
  // Whether some thread waits for something only Poll() can see arrive:
  // notices still being deposited, or (dd) diffs still being written into a
  // home page. While true, the host calls Poll() now and then (the runtime:
  // from waiting threads, after a short spin).
  bool NeedsPoll() const;
  // Takes deposited notices and re-checks versions of home pages threads
  // wait for; wakes the threads whose wait is over.
  void Poll();

  // Local hand-offs while a remote successor waits. A transfer
  // between nodes costs 0.3-0.7 ms on the tcp NIC, a local hand-off at most
  // a thread wake-up (~50 us): 10^5 contended acquisitions on 4 nodes x 2
  // threads take ~12 s with 8, ~7 s with 32.
  static constexpr uint32_t kMaxLocalBypasses = 32;
  // Takes of an idle token by threads of the node that were not waiting for
  // it, while the oldest local waiter, woken to take it, has not run yet
  // (barging, as a futex mutex allows). Handing the token to a waiter that
  // must first wake up holds the lock for a wake-up (~50 us here) at every
  // hand-off: 10^5 pairs on 1 node x 8 threads took 4.2 s against 0.006 s
  // natively. Past the bound, or once the woken waiter has run and found
  // the token taken, the waiter gets the token directly at the next release.
  static constexpr uint32_t kMaxBarges = 64;
  // Pages a first touch maps read-write at once when the page before it was
  // touched here too, or a claim granted them (a sequential sweep): one
  // fault per run, not per page.
  static constexpr size_t kMapAhead = 64;
  // A tracked home page goes back to untracked after this many
  // interval ends in a row found it written with no copy elsewhere (three
  // kept fft -m20's, read again each few phases, from going back and forth).
  static constexpr uint8_t kUnsharedIntervals = 4;

  const NodeStats& stats() const { return stats_; }
  const IntervalLog& TEST_log() const { return log_; }
  const NodeConfig& config() const { return config_; }

 private:
  struct Page;
  struct Lock;
  struct BarrierState;

  // Pages (node_page.cc).
  Page& PageEntry(PageId p);
  // Fault without the counting (Fault counts a blocked fault once).
  Outcome FaultOnce(ThreadId t, PageId p, Access a);
  Outcome HomeFault(ThreadId t, PageId p, Page& pg, Access a);
  Outcome RemoteFault(ThreadId t, PageId p, Page& pg, Access a);
  // p's version at its home (Host::Versions), read entry by entry with
  // acquire loads: in dd, peers' NICs advance it concurrently.
  VectorTime Version(PageId p) const;
  bool VersionCovers(PageId p, const VectorTime& need) const;
  void SetVersion(PageId p, NodeId writer, IntervalId interval);
  Prot DesiredProtection(PageId p, const Page& pg) const;
  void SyncProtection(PageId p, Page& pg);
  // scan_writes: whether p's writes are recorded by the host and not yet
  // collected (armed_): a read page, mapped read.
  void UpdateArmed(PageId p, const Page& pg);
  // scan_writes: pages written since the last look become dirty.
  void FindWrites();
  // Page p is written in the open interval (dirty_, state kWrite).
  void NoteWritten(PageId p, Page& pg);
  // scan_writes: p's copy, dropped by a notice, is unmapped now: if it holds
  // local writes (it differs from its twin) it stays as a stale dirty copy.
  void CheckDropped(PageId p, Page& pg);
  // A twin of p's frame (or of `from`, the bytes it holds), from
  // spare_twins_ when there is one; `from` in the landing_ of a read is
  // taken as the twin itself (no copy).
  void MakeTwin(PageId p, Page& pg, std::span<const uint8_t> from = {});
  void DropTwin(Page& pg);
  // Where a remote read of count pages from pg on lands: in their frames
  // when pg's is there to be overwritten (or the host cannot fill); under
  // scan_writes, a run of pages with no frame yet in fresh twins side by
  // side (each page the read installs is twinned, and its frame filled from
  // the twin: a copy saved) unless spare twins are there to be reused; else
  // in a buffer of the host's. (A single page gained nothing measurable
  // from its twin: 1-4 % slower, the copy saved being one from a buffer
  // still in the cache.)
  Host::Landing LandingFor(const Page& pg, uint32_t count);
  // count twins side by side, from the newest slab, or from a new one (what
  // was left of the last goes to spare_twins_).
  uint8_t* FreshTwins(size_t count);
  void NewTwinSlab();
  // While one lives, SyncProtection only records its changes; the last to
  // go makes them, a run of pages per Host::Protect.
  class ProtectionBatch {
   public:
    explicit ProtectionBatch(Node* n) : n_(n) { ++n_->batching_; }
    ~ProtectionBatch() {
      if (--n_->batching_ == 0) n_->FlushProtections();
    }
    ProtectionBatch(const ProtectionBatch&) = delete;
    ProtectionBatch& operator=(const ProtectionBatch&) = delete;

   private:
    Node* n_;
  };
  void FlushProtections();
  bool Unmapped(PageId first, PageId end) const;
  static constexpr PageId kUnmappedGap = 16;
  // Whether another node marked home page p as held (Host::SharedMark).
  bool Marked(PageId p) const;
  // base and dw: the home's handler counts a holder of p (a fetch's mark).
  void Mark(PageId p);
  // Home page p, first touched, is untracked unless marked already.
  bool StartUntracked(PageId p, Page& pg);
  // Untracked pages after p that a sweep will touch next, mapped with it.
  size_t MapAhead(PageId p);
  size_t MapGranted(PageId p);
  // Thread t write-faulted on tracked home page p: if in sequence, opens the
  // tracked home pages after it for writing too (noted as written).
  void WriteAhead(ThreadId t, PageId p);
  // Untracked pages other nodes marked since the last look become tracked,
  // written in the open interval (the copy may predate some writes).
  void TrackMarked();
  // Whether tracked home page p, written in the interval that closes, can
  // go back to untracked (no other node has held a copy for a while).
  bool CanUntrack(PageId p, Page& pg) const;
  // Copy p, gone from here, gives its mark back to its home at the next
  // acquire that applies notices, if it is still gone then.
  void DropMark(PageId p, Page& pg);
  // A marked copy away from its home that is no longer here (the unmapping
  // may still be in a protection batch).
  bool CopyGone(const Page& pg) const;
  void GiveBackMarks();
  // home's marks of `pages` go back: a MarksDropped, or from rf on
  // Host::DropMarks.
  void GiveMarksBack(NodeId home, std::span<const PageId> pages);
  // Pages to fetch from p on: 1, or a run after a sequential fault, or as
  // many as the last sweep that began at p read.
  uint32_t RunFrom(ThreadId t, PageId p, Page& pg);
  // t's sweep has read p: the page it began at remembers how far.
  void SweepReached(ThreadId t, PageId p);
  // After a fault that fetches p alone: if t's faults keep a stride, the
  // pages further along it with p's home, in strided runs.
  void FetchStrided(ThreadId t, PageId p, const Page& pg);
  NodeId KnownHome(PageId q) const;
  // Fetches p and the count - 1 pages `stride` apart after it (a run).
  void RequestPage(PageId p, Page& pg, uint32_t count = 1, uint32_t stride = 1);
  // A page fetched ahead went unused: smaller runs from now on.
  void AheadUnused();
  void WakeWaiters(Page& pg);  // the threads blocked on the page
  void Invalidate(PageId p, NodeId writer, IntervalId interval);
  Status CheckHomedHere(PageId p);
  bool ServesAhead(PageId q);
  void ServeFetches(PageId p, Page& pg);
  Status OnFetchRequest(NodeId from, FetchRequest& m);
  // data: m's, or where they lie in the bytes received.
  Status OnPageReply(NodeId from, const PageReply& m, std::span<const uint8_t> data);
  // data: the pages one after another, or empty where they landed in their
  // frames (a remote read's).
  Status InstallRun(NodeId from, PageId first, uint32_t stride, std::span<const VectorTime> versions,
                    std::span<const uint8_t> data);
  // A page of a run: the faulting one, or one fetched ahead and mapped at
  // once, or the last one ahead, left unmapped until touched (Page::watched).
  enum class Ahead : uint8_t { kNo, kMapped, kWatched };
  void InstallPage(PageId p, Page& pg, const VectorTime& version, std::span<const uint8_t> data,
                   Ahead ahead);
  // InstallRun's pages whose frames do not exist yet (Page::framed unset),
  // installed from the run's bytes by Host::Fill, a run of pages per call,
  // as InstallRun ends; a page the host finds framed after all is written
  // through Frame() and protected as usual.
  struct PendingFill {
    PageId page;
    const uint8_t* data;
  };
  bool filling_ = false;  // InstallRun's bytes are in a buffer and the host Fills
  std::vector<PendingFill> fills_;
  void FlushFills();
  // Reads in flight that land in fresh twins (LandingFor), and, inside
  // InstallRun, the one whose bytes it installs: twins MakeTwin takes as
  // they are (a bit a page, in `taken`); InstallRun gives back the rest.
  struct TwinLanding {
    uint8_t* at = nullptr;
    uint32_t count = 0;
    uint64_t taken = 0;
  };
  std::vector<TwinLanding> landings_;
  TwinLanding landing_;
  Status OnDiff(NodeId from, DiffMessage& m);
  Status OnHomeClaim(NodeId from, HomeClaim& m);
  Status OnHomeReply(NodeId from, HomeReply& m);
  Status OnMarksDropped(NodeId from, MarksDropped& m);
  // First touch with the directory in HomeWords, claimed by CAS (rf and up,
  // several nodes); else a manager's Directory, claimed by HomeClaim.
  bool ClaimsAtNic() const;
  // The home of q as recorded by this node as q's manager (kNoNode: none).
  NodeId DirectoryLookup(PageId q) const;
  // The pages after p (p included) whose homes one claim learns: up to the
  // end of the manager's block and max_run.
  uint32_t ClaimSpan(PageId p) const;
  // This node claims p: how many pages after it its sweep asks for.
  uint32_t ClaimAhead(PageId p);
  void ClaimAnswered(PageId p, NodeId home, uint32_t same);
  std::pair<NodeId, uint32_t> GrantClaim(NodeId claimant, PageId p, uint32_t ahead);
  // Pages after p recorded with p's home: their homes are known here too.
  void LearnFollowingHomes(PageId p, NodeId home, uint32_t same);

  // Locks (node_lock.cc).
  NodeId LockHome(LockId l) const;
  Lock& LockEntry(LockId l);
  void HandOn(LockId l, Lock& lk);
  // Whether a thread of this node that does not wait for l may take its
  // idle token before the oldest waiter (kMaxBarges, kMaxLocalBypasses).
  bool MayBarge(const Lock& lk) const;
  // t takes lk's idle token: the oldest local waiter, or a thread barging in
  // before it.
  void TakeLocal(ThreadId t, Lock& lk);
  void AssignLocal(ThreadId t, Lock& lk);
  void SendLockRequest(LockId l, Lock& lk);
  void SendNudged(NodeId to, const LockRequest& req);
  bool AtNic(LockId l) const;
  void AcceptGrant(LockId l, Lock& lk, VectorTime timestamp);
  void FinishGrant(LockId l, Lock& lk);
  Outcome AcquireStep(ThreadId t, LockId l);  // Acquire, the waits it causes aside
  void OnLockRequestAtHome(LockRequest req);
  void OnLockForward(LockRequest req);
  void GrantRemote(LockId l, Lock& lk);
  Status OnLockRequest(NodeId from, LockRequest& m);
  Status OnLockGrant(NodeId from, LockGrant& m);

  // Barriers (node_barrier.cc).
  Status OnBarrierArrive(NodeId from, BarrierArrive& m);
  Status OnBarrierRelease(NodeId from, BarrierRelease& m);
  void FinishRelease(BarrierRelease& m);
  // Whether every thread b gathers for has arrived or waits elsewhere.
  bool Gathered(const BarrierState& bs) const;
  void ReportArrivals(BarrierId b, BarrierState& bs);
  // The barrier tree: with F = NodeConfig::barrier_fanout, node n's children
  // are F * n + 1 ... F * n + F. A part of a node's subtree is its own
  // threads (0) or a child's subtree (1 + i).
  NodeId BarrierParent() const { return NodeId((config_.self - 1) / config_.barrier_fanout); }
  size_t BarrierParts() const;
  NodeId BarrierChild(size_t part) const { return NodeId(uint64_t(config_.barrier_fanout) * config_.self + part); }
  BarrierState& BarrierEntry(BarrierId b);
  Status AddArrival(BarrierId b, size_t part, const BarrierArrive& m);
  bool SubtreeReady(const BarrierState& bs) const;
  void SendUp(BarrierId b, BarrierState& bs);
  void Relay(BarrierId b, BarrierState& bs, const BarrierRelease& m);
  // Wakes t from a lock or barrier wait: it runs, a gathering barrier may
  // wait for it again.
  void WakeWaiter(ThreadId t) {
    elsewhere_[t] = 0;
    host_->Wake(t);
  }
  // Reports the gathering barriers that no longer wait for a running thread.
  void ReportReadyGathers();

  // Intervals and views (node.cc).
  void CloseInterval();
  void ApplyView(ThreadId t, const VectorTime& v);
  // Checks that notices extend the bins without a gap and, with must_cover,
  // that the bins would then cover that vector.
  Status CheckNotices(const std::vector<WriteNotice>& notices,
                      const VectorTime* must_cover) const;
  // Checks that t names none of this node's own intervals beyond those it
  // closed: no message can know of those. (dw and up, where a timestamp
  // may run ahead of the deposits, the one thing that can be checked.)
  Status CheckOwnIntervals(const VectorTime& t) const;
  // REQUIRES: CheckNotices(notices, ...).ok().
  void AddNotices(std::vector<WriteNotice>& notices);
  // dw: moves notices deposited by peers into the bins.
  void TakeDeposits();
  void Send(NodeId to, const Message& m);
  // A PageReply straight from the frames: the page lands in the SEND
  // buffer in one copy.
  void SendPageReply(NodeId to, PageId page, uint32_t stride, std::span<const VectorTime> versions,
                     std::span<const std::span<const uint8_t>> frames);
  void SendEncoded(NodeId to, MessageType type, std::vector<uint8_t> bytes);  // counted
  NodeId nodes() const { return config_.geometry.nodes; }

  NodeConfig config_;
  Host* host_;
  HomeMap homes_;
  Directory directory_;  // pages this node manages under first-touch
  IntervalLog log_;
  VectorTime applied_;                 // notices applied (invalidated) node-wide
  std::vector<VectorTime> views_;      // per local thread
  PageTable<Page> pages_;
  std::vector<PageId> dirty_;          // pages written in the open interval
  std::vector<PageId> untracked_;      // home pages only this node holds
  // Copies dropped whose marks go back to their homes (DropMark), and
  // GiveBackMarks' scratch (storage kept).
  std::vector<PageId> marks_due_;
  std::vector<std::pair<NodeId, PageId>> marks_back_;
  std::vector<PageId> marks_out_;
  uint32_t run_ = 1;                   // pages the next sequential fault fetches
  // Per local thread: the page its sweep faults on next if it is one (the
  // end of its last fetch, or the page after the last page ahead it reached).
  std::vector<PageId> sweep_next_;
  // Per local thread: the page its current sweep began at (kNoPage: none).
  std::vector<PageId> sweep_start_;
  // Per local thread: its strided scan (a column of a row-major matrix):
  // the last page it fetched on a fault, the distance from the one before,
  // and the last page fetched (or passed) along that stride since.
  struct StrideTrail {
    PageId last = 0;
    PageId stride = 0;
    PageId reach = 0;
  };
  std::vector<StrideTrail> strides_;
  // Longest stride followed: 512 pages, 2 MiB rows.
  static constexpr PageId kMaxStride = kMaxPageStride;
  // Per local thread: the page whose fault it waits for (kNoPage: none). A
  // blocked fault is asked again once woken; it counts once.
  std::vector<PageId> blocked_on_;
  // Per local thread: its sweep over tracked home pages it writes (the page
  // it would write-fault on next, and how many pages the next such fault
  // opens).
  struct WriteSweep {
    PageId next = 0;
    uint32_t run = 1;
  };
  std::vector<WriteSweep> write_sweeps_;
  // First touch: this node's last few sweeps through fresh memory (a
  // program often initialises several arrays in step), each the page after
  // the span its last claim was answered with and how many pages its next
  // claim asks for ahead (ClaimAhead); the least recent one makes way.
  struct ClaimSweep {
    PageId next = kNoPage;
    uint32_t ahead = 0;
    uint64_t used = 0;
  };
  static constexpr size_t kClaimSweeps = 4;
  std::array<ClaimSweep, kClaimSweeps> claim_sweeps_;
  uint64_t claim_clock_ = 0;
  // scan_writes: one bit per page armed for FindWritten (UpdateArmed), in
  // chunks of 256K pages allocated when first used, each with one bit per
  // word that is not zero; armed_chunks_ lists the chunks there are, in
  // order. (The region is sparse, up to terabytes, with the globals 2^25
  // pages up: an interval's end walks only what was ever armed.)
  struct ArmedChunk {
    static constexpr size_t kWords = 4096;
    uint64_t words[kWords] = {};
    uint64_t nonzero[kWords / 64] = {};
  };
  std::vector<std::unique_ptr<ArmedChunk>> armed_;
  std::vector<size_t> armed_chunks_;
  size_t armed_count_ = 0;
  bool Armed(PageId p) const {
    const size_t w = p / 64, c = w / ArmedChunk::kWords;
    return c < armed_.size() && armed_[c] && (armed_[c]->words[w % ArmedChunk::kWords] >> (p % 64) & 1);
  }
  std::vector<PageId> found_;          // FindWrites' scratch
  // Twins, allocated a slab at a time and never given back: one allocation
  // (an mmap, not a heap extension by mprotect) per slab, each slab twice
  // the last from kFirstTwinSlab pages up to kMaxTwinSlab (a first touch of
  // 4,000 pages: 7 slabs, not 63); twins are taken from the newest slab in
  // turn (slab_next_ of slab_end_), and a dropped one goes to spare_twins_.
  // A slab is aligned to its size up to kHugePageBytes, so that the host
  // can back a slab of a huge page or more with huge pages (Host::Populate).
  static constexpr size_t kFirstTwinSlab = 64, kMaxTwinSlab = 1024;
  struct SlabFree {
    std::align_val_t align;
    void operator()(uint8_t* p) const { ::operator delete(p, align); }
  };
  std::vector<std::unique_ptr<uint8_t, SlabFree>> twin_slabs_;
  size_t twin_slab_pages_ = 0;  // the newest slab's
  uint8_t* slab_next_ = nullptr;
  uint8_t* slab_end_ = nullptr;
  std::vector<uint8_t*> spare_twins_;
  int batching_ = 0;                   // live ProtectionBatch objects
  std::vector<PageId> batch_;          // pages whose Page::prot they hold back
  std::unordered_map<LockId, std::unique_ptr<Lock>> locks_;
  std::unordered_map<BarrierId, std::unique_ptr<BarrierState>> barriers_;
  VectorTime reported_;                // notices sent to the barrier parent
  std::vector<BarrierId> gathering_;   // kGather barriers holding arrivals back
  std::vector<BarrierId> holding_;     // barriers holding their subtree's back
  std::vector<uint8_t> elsewhere_;     // per local thread: WaitingElsewhere, or at a lock or barrier
  uint64_t lock_seq_ = 0;              // arrival order of lock waiters
  // Waits only Poll() can end (dw..nil), in arrival order.
  std::vector<LockId> pending_grants_;        // grants whose notices are due
  std::vector<BarrierRelease> pending_releases_;
  std::vector<PageId> version_waits_;         // dd: home pages awaiting diffs
  // The body of type T in tx_, for a message the fault path sends often:
  // its vectors keep their storage from one message to the next.
  template <typename T>
  T& Outgoing() {
    if (!std::holds_alternative<T>(tx_)) tx_.emplace<T>();
    return std::get<T>(tx_);
  }

  Message tx_;             // see Outgoing
  std::vector<VectorTime> served_;  // ServeFetches' versions, storage kept
  // Receive decodes a message into the slot of its type, whose vectors keep
  // their storage to the next message of that type (one slot for all had a
  // page reply's vectors freed by every home reply between two of them).
  std::array<Message, kMessageTypeCount> rx_;
  bool receiving_ = false; // a Receive is under way (rx_ is taken)
  NodeStats stats_;
};

}  // namespace svm
