#include "tests/sim/sim_scenarios.h"

#include <functional>
#include <map>

#include "protocol/geometry.h"

namespace svm::sim {

namespace {

constexpr uint64_t kPage = 4096;

NodeId CyclicHome(uint32_t nodes, uint64_t pages, PageId p) {
  Geometry g;
  g.pages = pages;
  g.nodes = nodes;
  return HomeMap(g, HomePolicy::kCyclic).StaticHome(p);
}

// The first page whose cyclic home is `home`.
PageId PageHomedAt(uint32_t nodes, uint64_t pages, NodeId home) {
  for (PageId p = 0; p < pages; ++p) {
    if (CyclicHome(nodes, pages, p) == home) return p;
  }
  return 0;
}

void Shape(CaseConfig* c, uint32_t nodes, uint32_t threads, uint64_t pages) {
  c->nodes = nodes;
  c->threads = threads;
  c->pages = pages;
  c->page_size = kPage;
}

// Byte b of a 72-byte stretch (across a 64-byte line) belongs to thread
// (b + phase) % 8 in each phase; every thread reads every byte after each
// barrier. Word-granular diffs or a lost concurrent write would show.
void ByteInterleaved(CaseConfig* c, Scenario* s) {
  const uint32_t N = 4, T = 2, G = N * T;
  Shape(c, N, T, 2);
  ProgramBuilder b(N, T, 2);
  std::vector<uint32_t> bytes;
  for (uint64_t i = 0; i < 72; ++i) bytes.push_back(b.AddVar(kPage + 24 + i, 1));
  for (uint32_t phase = 0; phase < 3; ++phase) {
    for (uint32_t g = 0; g < G; ++g) {
      for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t i = 0; i < bytes.size(); ++i) {
          if ((i + phase) % G == g) b.Write(g, bytes[i]);
        }
      }
      for (uint32_t i = 0; i < bytes.size(); ++i) {
        if ((i + phase) % G == g) b.Read(g, bytes[i]);
      }
    }
    b.BarrierAll(1);
    for (uint32_t g = 0; g < G; ++g) {
      for (uint32_t v : bytes) b.Read(g, v);
    }
    b.BarrierAll(1);
  }
  b.FinalCheck(2);
  s->program = b.Take();
}

// Round r: node n's thread r % T waits for its turn, increments the counter,
// reads the previous holder's marker and writes its own.
void LockChain(CaseConfig* c, Scenario* s) {
  const uint32_t N = 8, T = 2, R = 3;
  const LockId L = 0x5000;
  Shape(c, N, T, 2);
  ProgramBuilder b(N, T, 2);
  const uint32_t counter = b.AddVar(100, 4, VarClass::kCounter, L);
  std::vector<uint32_t> marker;
  for (NodeId n = 0; n < N; ++n) {
    marker.push_back(b.AddVar(kPage + 200 + n, 1, VarClass::kLocked, L));
  }
  for (uint32_t r = 0; r < R; ++r) {
    for (NodeId n = 0; n < N; ++n) {
      const uint32_t g = b.G(n, r % T);
      const uint64_t turn = r * N + n;
      if (turn > 0) b.Await(g, turn);
      b.Acquire(g, L);
      b.Add(g, counter, 1);
      if (turn > 0) b.Read(g, marker[(n + N - 1) % N]);
      b.Write(g, marker[n]);
      b.Release(g, L);
      b.Signal(g, turn + 1);
    }
  }
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
  s->count = R;
}

void ContendedLock(CaseConfig* c, Scenario* s) {
  const uint32_t N = 6, T = 3, K = 4;
  const LockId L = 0x7008;
  Shape(c, N, T, 1);
  ProgramBuilder b(N, T, 1);
  const uint32_t counter = b.AddVar(4000, 8, VarClass::kCounter, L);
  const uint32_t last = b.AddVar(4008, 2, VarClass::kLocked, L);
  for (uint32_t g = 0; g < N * T; ++g) {
    for (uint32_t k = 0; k < K; ++k) {
      b.Acquire(g, L);
      b.Add(g, counter, 1);
      b.Read(g, last);
      b.Write(g, last);
      b.Release(g, L);
    }
  }
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
  s->count = K;
}

// Nodes 2k and 2k+1 pass a lock of their own back and forth: each remote
// grant closes an interval, and every interval wrote every page. The pairs
// learn nothing of each other until the barrier, whose releases then carry
// the write notices of the other pairs' many intervals.
void ManyNotices(CaseConfig* c, Scenario* s) {
  const uint32_t N = 8, T = 2, P = 8, G = N * T, R = 4;
  Shape(c, N, T, P);
  c->record_deliveries = true;
  ProgramBuilder b(N, T, P);
  std::vector<std::vector<uint32_t>> mine(G);
  for (uint32_t g = 0; g < G; ++g) {
    for (uint64_t p = 0; p < P; ++p) mine[g].push_back(b.AddVar(p * kPage + 512 + g, 1));
  }
  std::vector<uint32_t> pair_token;
  for (NodeId k = 0; k < N / 2; ++k) {
    pair_token.push_back(b.AddVar(3 * kPage + 8 * (k + 1), 8, VarClass::kCounter, 0x9000 + 8 * k));
  }
  for (uint32_t phase = 0; phase < 3; ++phase) {
    for (uint32_t g = 0; g < G; ++g) {
      const uint32_t pair = (g / T) / 2;
      const LockId L = 0x9000 + 8 * pair;
      for (uint32_t round = 0; round < R; ++round) {
        for (uint32_t v : mine[g]) b.Write(g, v);
        b.Acquire(g, L);
        b.Add(g, pair_token[pair], 1);
        b.Release(g, L);
      }
    }
    b.BarrierAll(7);
    for (uint32_t g = 0; g < G; ++g) {
      for (uint32_t v : mine[(g + 2 * T * (phase + 1)) % G]) b.Read(g, v);
    }
    b.BarrierAll(7);
  }
  b.FinalCheck(7);
  s->program = b.Take();
  s->count = R;
}

// Thread 0 of each node meets the others at a barrier of N threads (one per
// node, not global) to exchange owned bytes; thread 1 uses a lock meanwhile.
void SubsetBarrier(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, T = 2;
  const LockId L = 0x3000;
  Shape(c, N, T, 2);
  ProgramBuilder b(N, T, 2);
  std::vector<uint32_t> owned;
  for (NodeId n = 0; n < N; ++n) owned.push_back(b.AddVar(kPage + 40 + n, 1));
  const uint32_t shared = b.AddVar(kPage + 48, 4, VarClass::kCounter, L);
  for (uint32_t phase = 0; phase < 3; ++phase) {
    for (NodeId n = 0; n < N; ++n) {
      const uint32_t g0 = b.G(n, 0);
      b.Write(g0, owned[n]);
      b.BarrierOf(g0, 40, N, 1);
      for (NodeId m = 0; m < N; ++m) b.Read(g0, owned[m]);
      b.BarrierOf(g0, 40, N, 1);
      const uint32_t g1 = b.G(n, 1);
      b.Acquire(g1, L);
      b.Add(g1, shared, 1);
      b.Release(g1, L);
    }
  }
  b.FinalCheck(41);
  s->program = b.Take();
}

// writer: lock, write X (homed elsewhere), unlock. reader: lock (the grant
// names the writer's interval), read X: a fetch that must wait at the home
// for the writer's diff, which the delayed pair holds back.
void FetchBeforeDiff(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, P = 2;
  Shape(c, N, 1, P);
  s->page = 1;
  s->home = CyclicHome(N, P, s->page);
  s->writer = (s->home + 1) % N;
  s->reader = (s->home + 2) % N;
  c->home_policy = HomePolicy::kCyclic;
  c->delayed = {{s->writer, s->home}};
  c->record_deliveries = true;
  // L's home (the reader) is not the page's: with NIC locks (nil) the
  // writer's unlock would otherwise queue behind its diff on the delayed pair.
  const LockId L = 0x2050;
  ProgramBuilder b(N, 1, P);
  const uint32_t x = b.AddVar(s->page * kPage + 100, 8, VarClass::kLocked, L);
  b.Acquire(s->writer, L);
  b.Write(s->writer, x);
  b.Release(s->writer, L);
  b.Signal(s->writer, 1);
  b.Await(s->reader, 1);
  b.Acquire(s->reader, L);
  b.Read(s->reader, x);
  b.Release(s->reader, L);
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
}

// n1.t0 writes X inside its critical section on A; n0 wrote Y (the other
// bytes of the same word) under B; n1.t1 acquires B (the notice outdates the
// dirty page) and reads Y (a fetch into the dirty page); n1.t0 then reads X.
void SafeFetch(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, T = 2, P = 3;
  Shape(c, N, T, P);
  c->home_policy = HomePolicy::kCyclic;
  s->page = PageHomedAt(N, P, 2);
  const LockId A = 0xa000, B = 0xb000;
  ProgramBuilder b(N, T, P);
  const uint32_t x = b.AddVar(s->page * kPage + 64, 3, VarClass::kLocked, A);
  const uint32_t y = b.AddVar(s->page * kPage + 67, 5, VarClass::kLocked, B);
  const uint32_t n0 = b.G(0, 0), n1t0 = b.G(1, 0), n1t1 = b.G(1, 1);
  b.Acquire(n0, B);
  b.Write(n0, y);
  b.Release(n0, B);
  b.Signal(n0, 1);
  b.Acquire(n1t0, A);
  b.Write(n1t0, x);
  b.Signal(n1t0, 2);
  b.Await(n1t0, 3);
  b.Read(n1t0, x);
  b.Write(n1t0, x);
  b.Release(n1t0, A);
  b.Await(n1t1, 1);
  b.Await(n1t1, 2);
  b.Acquire(n1t1, B);
  b.Read(n1t1, y);
  b.Release(n1t1, B);
  b.Signal(n1t1, 3);
  b.FinalCheck(1);
  s->program = b.Take();
}

// Node 1 holds C's token; n1.t0 enters its critical section on A and writes
// X on page P; n0 then takes C from node 1 (the grant closes node 1's
// interval and diffs P) while n1.t0 is still inside; n1.t0 writes X2 and X
// again afterwards. Both the diffed and the later writes must reach everyone.
void DiffDuringCriticalSection(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, T = 2, P = 3;
  Shape(c, N, T, P);
  c->home_policy = HomePolicy::kCyclic;
  s->page = PageHomedAt(N, P, 2);
  const LockId A = 0xa100, C = 0xc100;
  ProgramBuilder b(N, T, P);
  const uint32_t x = b.AddVar(s->page * kPage + 8, 4, VarClass::kLocked, A);
  const uint32_t x2 = b.AddVar(s->page * kPage + 12, 4, VarClass::kLocked, A);
  const uint32_t z = b.AddVar(s->page * kPage + 16, 2, VarClass::kLocked, C);
  const uint32_t writer = b.G(1, 0), other = b.G(1, 1), remote = b.G(0, 0);
  b.Acquire(other, C);
  b.Write(other, z);
  b.Release(other, C);
  b.Signal(other, 1);
  b.Await(writer, 1);
  b.Acquire(writer, A);
  b.Write(writer, x);
  b.Signal(writer, 2);
  b.Await(writer, 3);
  b.Write(writer, x2);
  b.Write(writer, x);
  b.Release(writer, A);
  b.Await(remote, 2);
  b.Acquire(remote, C);
  b.Read(remote, z);
  b.Write(remote, z);
  b.Release(remote, C);
  b.Signal(remote, 3);
  b.FinalCheck(1);
  s->program = b.Take();
}

// n0.t0 takes the lock first (fetching its token if the home is node 1);
// n0.t1 then takes it from n0.t0 between probes 1 and 2 while the rest of
// the job waits.
void LocalHandoff(CaseConfig* c, Scenario* s) {
  static constexpr LockId kLocks[] = {0x100, 0x108, 0x110, 0x118, 0x120, 0x128};
  Shape(c, 2, 2, 2);
  const LockId L = kLocks[c->variant % 6];
  ProgramBuilder b(2, 2, 2);
  const uint32_t v = b.AddVar(kPage + 300, 8, VarClass::kLocked, L);
  const uint32_t a = b.G(0, 0), t1 = b.G(0, 1);
  b.Acquire(a, L);
  b.Write(a, v);
  b.Release(a, L);
  b.Signal(a, 1);
  b.Await(t1, 1);
  b.Probe(t1, 1);
  b.Acquire(t1, L);
  b.Read(t1, v);
  b.Write(t1, v);
  b.Release(t1, L);
  b.Probe(t1, 2);
  b.Signal(t1, 2);
  b.Await(b.G(1, 0), 2);
  b.Await(b.G(1, 1), 2);
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
}

// n0.t0 and n0.t1 take the lock K times each; after n0.t0's sixth turn,
// n1.t0 asks for it once.
void NoStarvation(CaseConfig* c, Scenario* s) {
  const uint32_t T = 3, K = 150;
  const LockId L = 0x4400;
  Shape(c, 2, T, 1);
  c->record_deliveries = true;
  ProgramBuilder b(2, T, 1);
  const uint32_t counter = b.AddVar(64, 8, VarClass::kCounter, L);
  for (ThreadId t = 0; t < 2; ++t) {
    const uint32_t g = b.G(0, t);
    for (uint32_t k = 0; k < K; ++k) {
      b.Acquire(g, L);
      b.Add(g, counter, 1);
      b.Release(g, L);
      if (t == 0 && k == 5) b.Signal(g, 1);
    }
  }
  s->thread = b.G(1, 0);
  b.Await(s->thread, 1);
  b.Acquire(s->thread, L);
  b.Add(s->thread, counter, 1000);
  b.Release(s->thread, L);
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
  s->count = K;
}

// Every thread of node 0 and one of node 1 take the lock K times each: a
// thread of node 0 often comes back for the idle token before the waiter
// woken to take it runs (barging, Node::kMaxBarges).
void LocalBarging(CaseConfig* c, Scenario* s) {
  const uint32_t T = 3, K = 40;
  const LockId L = 0x4800;
  Shape(c, 2, T, 1);
  ProgramBuilder b(2, T, 1);
  const uint32_t counter = b.AddVar(128, 8, VarClass::kCounter, L);
  for (uint32_t g : {b.G(0, 0), b.G(0, 1), b.G(0, 2), b.G(1, 0)}) {
    for (uint32_t k = 0; k < K; ++k) {
      b.Acquire(g, L);
      b.Add(g, counter, 1);
      b.Release(g, L);
    }
  }
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
  s->count = K;
}

// reader takes a READ copy of X under L; writer changes X under L; reader
// takes L again and reads X: the grant's notice must have invalidated it.
void StaleReadCopy(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, P = 2;
  Shape(c, N, 1, P);
  c->home_policy = HomePolicy::kCyclic;
  s->page = 1;
  s->home = CyclicHome(N, P, s->page);
  s->writer = (s->home + 1) % N;
  s->reader = (s->home + 2) % N;
  const LockId L = 0x6100;
  ProgramBuilder b(N, 1, P);
  const uint32_t x = b.AddVar(s->page * kPage + 1000, 6, VarClass::kLocked, L);
  b.Acquire(s->reader, L);
  b.Read(s->reader, x);
  b.Release(s->reader, L);
  b.Signal(s->reader, 1);
  b.Await(s->writer, 1);
  b.Acquire(s->writer, L);
  b.Write(s->writer, x);
  b.Release(s->writer, L);
  b.Signal(s->writer, 2);
  b.Await(s->reader, 2);
  b.Acquire(s->reader, L);
  b.Read(s->reader, x);
  b.Release(s->reader, L);
  b.FinalCheck(1);
  s->program = b.Take();
}

// Issue 22 ("the home accepts its copy one interval behind what notices
// demand"): writer writes X (homed at `home`) under L, its pair to the home
// delayed; a middle node takes L and passes it on, so the home learns of the
// writer's interval from the middle node's grant while the diff is still in
// flight, and must wait for it before its own read. Variant 1: 2 nodes, the
// writer grants the home directly (pair FIFO: the diff is there first).
void HomeWaitsForDiff(CaseConfig* c, Scenario* s) {
  const uint32_t N = c->variant % 2 == 0 ? 3 : 2, P = 2;
  Shape(c, N, 1, P);
  c->home_policy = HomePolicy::kCyclic;
  c->record_deliveries = true;
  s->page = 1;
  s->home = CyclicHome(N, P, s->page);
  s->writer = (s->home + 1) % N;
  s->reader = s->home;
  c->delayed = {{s->writer, s->home}};
  // Homed at the middle node (nil: not behind the diff on the delayed pair).
  const LockId L = PinnedLock(N == 3 ? (s->home + 2) % N : s->writer, 0x22);
  ProgramBuilder b(N, 1, P);
  const uint32_t x = b.AddVar(s->page * kPage + 40, 8, VarClass::kLocked, L);
  b.Acquire(s->writer, L);
  b.Write(s->writer, x);
  b.Release(s->writer, L);
  b.Signal(s->writer, 1);
  if (N == 3) {
    const uint32_t middle = (s->home + 2) % N;
    b.Await(middle, 1);
    b.Acquire(middle, L);
    b.Release(middle, L);
    b.Signal(middle, 2);
  }
  b.Await(s->home, N == 3 ? 2 : 1);
  b.Acquire(s->home, L);
  b.Read(s->home, x);
  b.Release(s->home, L);
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
}

// Issue 22 ("a local lock hand-off skips merging the releaser's view"): C
// (node 2) keeps a READ copy of X; A (node 0) writes X under L; B (node 1)
// takes L from A in thread 0 and hands it on inside the node to thread 1,
// which releases it to C: C's grant must still name A's interval.
void HandoffThenStaleCopy(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, T = 2, P = 2;
  Shape(c, N, T, P);
  c->home_policy = HomePolicy::kCyclic;
  s->page = PageHomedAt(N, P, 1);
  s->writer = 0;
  s->reader = 2;
  const LockId L = 0x2280;
  ProgramBuilder b(N, T, P);
  const uint32_t x = b.AddVar(s->page * kPage + 16, 8, VarClass::kLocked, L);
  const uint32_t a = b.G(0, 0), b0 = b.G(1, 0), b1 = b.G(1, 1), cc = b.G(2, 0);
  b.Acquire(cc, L);
  b.Read(cc, x);
  b.Release(cc, L);
  b.Signal(cc, 1);
  b.Await(a, 1);
  b.Acquire(a, L);
  b.Write(a, x);
  b.Release(a, L);
  b.Signal(a, 2);
  b.Await(b0, 2);
  b.Acquire(b0, L);
  b.Signal(b0, 3);
  // Hold L a while so that b1 queues behind it (a hand-off, not a free lock).
  for (int i = 0; i < 8; ++i) b.Read(b0, x);
  b.Release(b0, L);
  b.Await(b1, 3);
  b.Acquire(b1, L);
  b.Read(b1, x);
  b.Release(b1, L);
  b.Signal(b1, 4);
  b.Await(cc, 4);
  b.Acquire(cc, L);
  b.Read(cc, x);
  b.Release(cc, L);
  b.FinalCheck(1);
  s->program = b.Take();
  s->lock = L;
  s->thread = b1;
}

// Issue 22 ("a barrier release leaves out the view of the arrival that
// completed it"): the reader (node 0, the master) keeps a READ copy of X;
// the writer waits until every other node is at the barrier, writes X and
// arrives last (its pair to the master is delayed), its arrival the only one
// naming a new interval. Variant 1: 2 nodes.
void BarrierLastArrivalNotice(CaseConfig* c, Scenario* s) {
  const uint32_t N = c->variant % 2 == 0 ? 3 : 2, P = 2;
  Shape(c, N, 1, P);
  c->home_policy = HomePolicy::kCyclic;
  c->record_deliveries = true;
  s->page = PageHomedAt(N, P, 1);
  s->reader = 0;
  s->writer = N - 1;
  c->delayed = {{s->writer, s->reader}};
  ProgramBuilder b(N, 1, P);
  const uint32_t x = b.AddVar(s->page * kPage + 24, 8);
  for (NodeId n = 0; n < N; ++n) b.Read(n, x);
  b.BarrierAll(1);
  for (NodeId n = 0; n + 1 < N; ++n) b.Signal(n, 1 + n);
  for (NodeId n = 0; n + 1 < N; ++n) b.Await(s->writer, 1 + n);
  b.Write(s->writer, x);
  b.BarrierAll(2);
  for (NodeId n = 0; n < N; ++n) b.Read(n, x);
  b.FinalCheck(3);
  s->program = b.Take();
}

// The home writes X under L; the reader's fetch of the page (Y, under M)
// comes between two of those writes, in one interval; the second, made with
// no fault, must reach the reader when it takes L. With rounds > 0 the
// reader first holds a copy, which `rounds` home writes of X, each followed
// by a barrier, outdate (the copy goes at the first). variant 0: 2 nodes,
// 1: 3 nodes.
void FetchWhileHomeWrites(CaseConfig* c, Scenario* s, LockId L, LockId M, BarrierId rounds) {
  const uint32_t N = 2 + c->variant % 2, P = 2;
  Shape(c, N, 1, P);
  c->home_policy = HomePolicy::kCyclic;
  s->page = 1;
  s->home = CyclicHome(N, P, s->page);
  s->reader = (s->home + 1) % N;
  ProgramBuilder b(N, 1, P);
  const uint32_t x = b.AddVar(s->page * kPage + 200, 8, VarClass::kLocked, L);
  const uint32_t y = b.AddVar(s->page * kPage + 600, 8, VarClass::kLocked, M);
  if (rounds > 0) {
    b.Acquire(s->reader, M);
    b.Read(s->reader, y);
    b.Release(s->reader, M);
  }
  for (BarrierId round = 1; round <= rounds; ++round) {
    b.Acquire(s->home, L);
    b.Write(s->home, x);
    b.Release(s->home, L);
    b.BarrierAll(round);
  }
  b.Acquire(s->home, L);
  b.Write(s->home, x);
  b.Signal(s->home, 1);
  b.Await(s->home, 2);
  b.Write(s->home, x);
  b.Release(s->home, L);
  b.Signal(s->home, 3);
  b.Await(s->reader, 1);
  b.Acquire(s->reader, M);
  b.Read(s->reader, y);
  b.Release(s->reader, M);
  b.Signal(s->reader, 2);
  b.Await(s->reader, 3);
  b.Acquire(s->reader, L);
  b.Read(s->reader, x);
  b.Release(s->reader, L);
  b.FinalCheck(rounds + 1);
  s->program = b.Take();
  s->lock = L;
}

// The home's page is untracked (no other node holds it) when the reader's
// first fetch comes.
void FirstFetchWhileHomeWrites(CaseConfig* c, Scenario* s) { FetchWhileHomeWrites(c, s, 0x7100, 0x7200, 0); }

// The tracked -> untracked -> tracked round trip: the reader's copy goes at
// the first barrier and its mark at the second, and the home's writes of X
// close intervals with no copy left, so the home may untrack the page
// (once the mark came back) before the fetch between its writes.
void CopyGoneThenFetchedWhileHomeWrites(CaseConfig* c, Scenario* s) {
  FetchWhileHomeWrites(c, s, 0x7300, 0x7400, Node::kUnsharedIntervals + 3);
}

// Issue 22 ("notices are collected at a barrier of every thread even when a
// node is not in it"): the last node's only thread reads X (a READ copy) and
// exits; node 0 joins it, writes X and meets every other live thread at
// barrier 1, which no thread of the last node is in; then node 0 spawns a
// thread there (birth lock B, as the runtime does), which must read the new
// X. The notice of X's write is still owed to the last node: barrier 1 must
// not collect it. Probe 1 follows barrier 1; barrier 2 (every thread, every
// node) may collect. Variant 0: 2 nodes, 1: 3 nodes (X homed on node 1).
void GcWhileANodeHasNoThread(CaseConfig* c, Scenario* s) {
  const uint32_t N = c->variant % 2 == 0 ? 2 : 3, T = 2, P = 3;
  Shape(c, N, T, P);
  c->home_policy = HomePolicy::kCyclic;
  const NodeId empty = N - 1;
  s->page = PageHomedAt(N, P, N == 3 ? 1 : 0);
  s->writer = 0;
  s->reader = empty;
  const LockId D = PinnedLock(0, 0x22d), B = PinnedLock(empty, 0x22b);
  ProgramBuilder b(N, T, P);
  const uint32_t x = b.AddVar(s->page * kPage + 48, 8);
  const uint32_t main = b.G(0, 0), leaver = b.G(empty, 0), child = b.G(empty, 1);
  const uint32_t others = T * (N - 1);  // every thread off the empty node
  b.Acquire(leaver, D);
  b.Read(leaver, x);
  b.Release(leaver, D);
  b.Exit(leaver);
  b.Join(main, leaver);
  b.Acquire(main, D);
  b.Release(main, D);
  b.Write(main, x);
  for (NodeId n = 0; n < empty; ++n)
    for (ThreadId t = 0; t < T; ++t) b.BarrierOf(b.G(n, t), 1, others, T);
  b.Probe(main, 1);
  b.Acquire(main, B);
  b.Spawn(main, child);
  b.Release(main, B);
  b.Acquire(child, B);
  b.Release(child, B);
  b.Read(child, x);
  for (NodeId n = 0; n < empty; ++n)
    for (ThreadId t = 0; t < T; ++t) b.BarrierOf(b.G(n, t), 2, others + 1, T);
  b.BarrierOf(child, 2, others + 1, 1);
  for (NodeId n = 0; n < empty; ++n) b.Read(b.G(n, 0), x);
  b.Read(child, x);
  s->program = b.Take();
  s->thread = child;
  s->lock = B;
}

// First touch along a sweep: node 0 writes pages 0..15 in order; node 1
// manages 8..15 (blocks of max_run pages) and grants node 0's claims there
// pages ahead. Variant 1 claims by message in every mode (tcp); variant 2
// has node 1 write bytes of its own on pages 15 down to 8 meanwhile, racing
// node 0 for their first touches. Whoever becomes a page's home, every
// write must reach everyone.
void FirstTouchSweep(CaseConfig* c, Scenario* s) {
  const uint32_t N = 2;
  const uint64_t P = 16;
  Shape(c, N, 1, P);
  c->home_policy = HomePolicy::kFirstTouch;
  c->max_run = 8;
  c->claim_by_cas = c->variant != 1;
  ProgramBuilder b(N, 1, P);
  std::vector<uint32_t> sweep, other;
  for (uint64_t p = 0; p < P; ++p) sweep.push_back(b.AddVar(p * kPage + 8, 8));
  for (uint64_t p = P / 2; p < P; ++p) other.push_back(b.AddVar(p * kPage + 64, 8));
  for (uint32_t v : sweep) b.Write(0, v);
  if (c->variant == 2)
    for (auto v = other.rbegin(); v != other.rend(); ++v) b.Write(1, *v);
  b.FinalCheck(1);
  s->program = b.Take();
}

// Barrier 60 meets every thread, then only thread 0 of each node and
// thread 1 of the last: thread 1 of the others, which took part before and
// so is gathered for (Node::kGather), waits elsewhere instead — variant 0:
// for lock L, held across the barrier by the last node's thread 0; variant
// 1: for a flag that thread raises after it; variant 2: it ends. The
// gathered threads must report without it. Run with gather. A last barrier
// of the threads left ends it.
void GatherElsewhere(CaseConfig* c, Scenario* s) {
  const uint32_t N = 3, T = 2;
  const LockId L = 0x3100;
  const uint64_t F = 9;
  Shape(c, N, T, 2);
  c->gather = true;
  ProgramBuilder b(N, T, 2);
  std::vector<uint32_t> owned;
  for (uint32_t g = 0; g < N * T; ++g) owned.push_back(b.AddVar(kPage + 8 * g, 8));
  const uint32_t shared = b.AddVar(24, 4, VarClass::kCounter, L);
  const uint32_t holder = b.G(N - 1, 0);
  for (uint32_t g = 0; g < N * T; ++g) {
    b.Write(g, owned[g]);
    b.BarrierOf(g, 60, N * T, T);
  }
  b.Acquire(holder, L);
  for (NodeId n = 0; n < N; ++n) {
    const uint32_t g0 = b.G(n, 0), g1 = b.G(n, 1);
    b.BarrierOf(g0, 60, N + 1, n == N - 1 ? T : 1);
    if (n == N - 1) {
      b.BarrierOf(g1, 60, N + 1, T);
    } else if (c->variant == 0) {
      b.Acquire(g1, L);
      b.Add(g1, shared, 1);
      b.Release(g1, L);
    } else if (c->variant == 1) {
      b.Await(g1, F);
      b.Read(g1, owned[g0]);
    } else {
      b.Exit(g1);
    }
  }
  b.Add(holder, shared, 1);
  b.Release(holder, L);
  b.Signal(holder, F);
  // A last barrier of the threads still there, then every node reads all.
  const bool ended = c->variant == 2;
  for (NodeId n = 0; n < N; ++n) {
    for (ThreadId t = 0; t < T; ++t) {
      if (ended && t == 1 && n != N - 1) continue;
      b.BarrierOf(b.G(n, t), 61, ended ? N + 1 : N * T, ended && n != N - 1 ? 1 : T);
    }
  }
  for (NodeId n = 0; n < N; ++n)
    for (uint32_t v = 0; v < owned.size() + 1; ++v) b.Read(b.G(n, 0), v);
  s->program = b.Take();
}

// A thread that learns outside the barrier (a flag) that episode 1 of
// barrier 70 ended arrives for episode 2 while the release of episode 1 to
// its node is held back (the pair 0 -> 1 delayed); it holds a READ copy of
// X, which node 0 writes before its own arrival at episode 2, and reads X
// after that barrier: the release of episode 1 must not let it through.
// Variant 0: 3 nodes as a chain (fanout 1), `early` node 1's thread and the
// partner of episode 1 node 2's; variant 1: the chain, early node 2 (a
// child's arrival, relayed by node 1); variant 2: 2 nodes of 2 threads,
// flat, early node 1's thread 1 and the partner its thread 0.
void BarrierEarlyArrival(CaseConfig* c, Scenario* s) {
  const uint32_t v = c->variant % 3;
  const uint32_t N = v == 2 ? 2 : 3, T = v == 2 ? 2 : 1, P = 2;
  Shape(c, N, T, P);
  c->home_policy = HomePolicy::kCyclic;
  c->barrier_fanout = v == 2 ? 8 : 1;
  c->delayed = {{0, 1}};
  s->page = PageHomedAt(N, P, 0);
  ProgramBuilder b(N, T, P);
  const uint32_t x = b.AddVar(s->page * kPage + 16, 8);
  const uint32_t root = b.G(0, 0);
  const uint32_t early = v == 0 ? b.G(1, 0) : v == 1 ? b.G(2, 0) : b.G(1, 1);
  const uint32_t partner = v == 0 ? b.G(2, 0) : b.G(1, 0);
  const uint64_t F = 7, G = 8;
  const LockId L = 0x3200;
  b.Acquire(early, L);  // its copy, read before node 0 writes
  b.Read(early, x);
  b.Release(early, L);
  b.Signal(early, G);
  b.BarrierOf(partner, 70, 2, 1);
  b.BarrierOf(root, 70, 2, 1);
  b.Await(root, G);
  b.Signal(root, F);
  b.Acquire(root, L);
  b.Write(root, x);
  b.Release(root, L);
  b.BarrierOf(root, 70, 2, 1);
  b.Await(early, F);
  b.BarrierOf(early, 70, 2, 1);
  b.Read(early, x);
  b.FinalCheck(71);
  s->program = b.Take();
}

using Builder = void (*)(CaseConfig*, Scenario*);

const std::map<std::string, Builder>& Builders() {
  static const std::map<std::string, Builder> builders = {
      {"byte-interleaved", ByteInterleaved},
      {"lock-chain", LockChain},
      {"contended-lock", ContendedLock},
      {"many-notices", ManyNotices},
      {"subset-barrier", SubsetBarrier},
      {"fetch-before-diff", FetchBeforeDiff},
      {"safe-fetch", SafeFetch},
      {"diff-during-cs", DiffDuringCriticalSection},
      {"local-handoff", LocalHandoff},
      {"no-starvation", NoStarvation},
      {"local-barging", LocalBarging},
      {"gather-elsewhere", GatherElsewhere},
      {"stale-read-copy", StaleReadCopy},
      {"home-waits-for-diff", HomeWaitsForDiff},
      {"handoff-then-stale-copy", HandoffThenStaleCopy},
      {"barrier-last-arrival", BarrierLastArrivalNotice},
      {"barrier-early-arrival", BarrierEarlyArrival},
      {"first-fetch-while-home-writes", FirstFetchWhileHomeWrites},
      {"copy-gone-then-fetched-while-home-writes", CopyGoneThenFetchedWhileHomeWrites},
      {"gc-while-a-node-has-no-thread", GcWhileANodeHasNoThread},
      {"first-touch-sweep", FirstTouchSweep},
  };
  return builders;
}

}  // namespace

const std::vector<std::string>& ScenarioNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, builder] : Builders()) v.push_back(name);
    return v;
  }();
  return names;
}

Status MakeScenario(CaseConfig* c, Scenario* out) {
  const auto it = Builders().find(c->scenario);
  if (it == Builders().end()) return Status::InvalidArgument("unknown scenario " + c->scenario);
  *out = Scenario{};
  c->delayed.clear();
  it->second(c, out);
  return Status::Ok();
}

}  // namespace svm::sim
