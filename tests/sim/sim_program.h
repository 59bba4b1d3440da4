// Program: what the simulated application threads of one case do.
//
// A program is a memory layout (the shared variables: disjoint byte ranges of
// the global region) plus one list of operations per simulated thread. Global
// thread g runs on node g / threads as local thread g % threads.
//
// Operations are the synchronisation and data accesses of a pthreads program
// (Acquire, Release, Read, Write, Add, Barrier), a thread's life (Spawn,
// Exit: what the job's thread count, Host::JobThreads, follows) and
// simulator-only operations that never reach the protocol: Signal/Await and
// Join order threads for a targeted scenario (they create no happens-before
// edge, so a program that relies on them for data ordering is reported as
// racy; as in the runtime, a birth or death lock carries the data), Probe
// snapshots the nodes' counters.
//
// A thread named by a Spawn is dormant until that Spawn runs: it neither runs
// nor counts as a thread of the job. Every other thread counts from the start
// until its Exit, or to the end if it has none.
//
// Invariants of a well-formed program (Validate):
//  1. Variables lie inside the region, do not overlap, have 1..8 bytes.
//  2. Every data operation names a variable and uses its address and length.
//  3. Locks are released only by the thread that holds them, and never
//     acquired while held by the same thread; every thread ends holding none.
//  4. A thread is spawned by at most one Spawn, of another thread; Exit is
//     its thread's last op; Join names another thread that ends in Exit.
// Value type; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"
#include "protocol/types.h"

namespace svm::sim {

// How a variable is kept data-race-free (only for diagnostics).
enum class VarClass : uint8_t { kLocked, kOwned, kCounter };
const char* ToString(VarClass c);

struct Var {
  uint64_t addr = 0;  // offset in the global region
  uint32_t len = 0;   // 1..8
  VarClass cls = VarClass::kOwned;
  LockId lock = 0;  // kLocked, kCounter: the guarding lock
};

enum class OpKind : uint8_t {
  kAcquire,  // id = lock
  kRelease,  // id = lock
  kRead,     // var: read and compare with the shadow memory
  kWrite,    // var: write `value` (its low len bytes, little-endian)
  kAdd,      // var: read, then write read + value (mod 2^(8 len))
  kBarrier,  // id = barrier; total, local as for Node::Barrier
  kSignal,   // id = flag: sets the flag (simulator only)
  kAwait,    // id = flag: waits until the flag is set (simulator only)
  kProbe,    // id = probe: snapshot every node's stats (simulator only)
  kSpawn,    // id = global thread: starts that dormant thread
  kExit,     // the thread ends and no longer counts as a thread of the job
  kJoin,     // id = global thread: waits until it has exited (no edge)
};
const char* ToString(OpKind k);

struct Op {
  OpKind kind = OpKind::kRead;
  uint32_t var = 0;    // data ops: index into Program::vars
  uint64_t addr = 0;   // data ops: copy of the variable's address
  uint32_t len = 0;    // data ops: copy of the variable's length
  uint64_t value = 0;  // kWrite: value; kAdd: delta
  uint64_t id = 0;     // lock, barrier, flag or probe id
  uint32_t total = 0;  // kBarrier
  uint32_t local = 0;  // kBarrier
};

std::string ToString(const Op& op);

struct Program {
  uint32_t nodes = 1;
  uint32_t threads = 1;
  uint64_t pages = 1;
  uint64_t page_size = 4096;
  std::vector<Var> vars;
  std::vector<std::vector<Op>> ops;  // by global thread id

  uint32_t thread_count() const { return nodes * threads; }
  uint64_t region_bytes() const { return pages * page_size; }
  size_t op_count() const;

  // By global thread: named by a Spawn, so not started with the job.
  std::vector<bool> Dormant() const;

  // Checks the invariants above.
  Status Validate() const;

  // The barrier episodes the program's threads form, in an order they can
  // happen in: each the threads (global ids) whose next barrier it is, as
  // many as its total. Empty if the barrier ops form no such order.
  struct Episode {
    BarrierId barrier;
    std::vector<uint32_t> threads;
  };
  std::vector<Episode> BarrierEpisodes() const;
};

// Builds programs op by op (the generator and the targeted scenarios).
class ProgramBuilder {
 public:
  ProgramBuilder(uint32_t nodes, uint32_t threads, uint64_t pages, uint64_t page_size = 4096);

  // Adds a variable; returns its index. REQUIRES: it fits and overlaps none.
  uint32_t AddVar(uint64_t addr, uint32_t len, VarClass cls = VarClass::kOwned, LockId lock = 0);

  // Global thread id of local thread t of node n.
  uint32_t G(NodeId n, ThreadId t) const { return n * program_.threads + t; }

  void Acquire(uint32_t g, LockId l);
  void Release(uint32_t g, LockId l);
  void Read(uint32_t g, uint32_t var);
  // Writes a value unique to (g, op index) unless `value` is given.
  void Write(uint32_t g, uint32_t var);
  void WriteValue(uint32_t g, uint32_t var, uint64_t value);
  void Add(uint32_t g, uint32_t var, uint64_t delta);
  // A barrier of every thread of the job (total = N*T, local = T).
  void Barrier(uint32_t g, BarrierId b);
  void BarrierAll(BarrierId b);  // Barrier(g, b) for every thread
  // A barrier of `total` threads, `local` of them on g's node.
  void BarrierOf(uint32_t g, BarrierId b, uint32_t total, uint32_t local);
  void Signal(uint32_t g, uint64_t flag);
  void Await(uint32_t g, uint64_t flag);
  void Probe(uint32_t g, uint64_t probe);
  void Spawn(uint32_t g, uint32_t target);
  void Exit(uint32_t g);
  void Join(uint32_t g, uint32_t target);
  // A global barrier, then thread 0 of every node reads every variable.
  void FinalCheck(BarrierId b);

  size_t next_index(uint32_t g) const { return program_.ops[g].size(); }
  const Program& program() const { return program_; }
  Program Take() { return std::move(program_); }

 private:
  Op DataOp(OpKind kind, uint32_t var) const;

  Program program_;
  uint64_t salt_ = 0x9e3779b97f4a7c15ull;
};

// A value unique to (salt, thread, op index), spread over all 64 bits.
uint64_t UniqueValue(uint64_t salt, uint32_t g, size_t index);

}  // namespace svm::sim
