// Scenarios: hand-written programs (and schedules) for the hazards DESIGN.md
// names, shared by the scenario tests, the planted-bug tests and sim_replay
// (--scenario NAME). Signal/Await fix the interleaving a scenario needs;
// locks and barriers still carry every data dependence (the OrderChecker
// would report a racy scenario).
//
//   byte-interleaved   8 threads write interleaved bytes of one page between
//                      barriers (the home policy comes from the config)
//   lock-chain         a lock passed through every node in turn, 3 rounds
//   contended-lock     every thread increments one counter under one lock
//   many-notices       many intervals per node, each writing every page, meet
//                      at one barrier (pairs of nodes share a lock meanwhile)
//   subset-barrier     a barrier of thread 0 of each node only (not global)
//   gather-elsewhere   a barrier's thread that took part last time waits at a
//                      lock (variant 0), for a flag (1) or ends (2) instead;
//                      run with gather (Node::kGather)
//   fetch-before-diff  the writer->home pair is delayed: the reader's fetch
//                      reaches the home before the diff it needs
//   safe-fetch         a page dirty in one thread's critical section is
//                      refreshed because another local thread acquired a lock
//   diff-during-cs     a remote grant diffs a page a local thread is writing
//                      inside its own critical section
//   local-handoff      a lock handed between two threads of node 0, between
//                      two probes (variant: which lock id, 0..5)
//   no-starvation      two local threads hammer a lock a remote thread wants
//   stale-read-copy    a READ copy must be invalidated by the next acquire
//   home-waits-for-diff      issue 22: the home hears of an interval from a
//                            third node before the diff (variant 1: 2 nodes)
//   handoff-then-stale-copy  issue 22: lock A -> B.t0 -> B.t1 (local) -> C,
//                            C holding an old READ copy
//   barrier-last-arrival     issue 22: the arrival completing a barrier is
//                            the only one naming a new interval (variant 1:
//                            2 nodes)
//   first-fetch-while-home-writes
//                      a remote node's first fetch of an untracked home page
//                      falls between two home writes of one interval
//   copy-gone-then-fetched-while-home-writes
//                      the same after the home's page went tracked ->
//                      untracked (rf and up: the reader's copy gone)
//   gc-while-a-node-has-no-thread
//                      issue 22: a barrier of every live thread that no
//                      thread of one node is in (its thread exited) must not
//                      collect the notices that node still needs when a
//                      thread is spawned there (variant 1: 3 nodes)
#pragma once

#include <string>
#include <vector>

#include "util/status.h"
#include "tests/sim/sim_case.h"
#include "tests/sim/sim_program.h"

namespace svm::sim {

struct Scenario {
  Program program;
  // Facts the tests check against; which ones are set depends on the scenario.
  NodeId home = 0;
  NodeId writer = 0;
  NodeId reader = 0;
  PageId page = 0;
  uint32_t thread = 0;  // a global thread id of interest
  LockId lock = 0;
  uint32_t count = 0;  // rounds, iterations
};

const std::vector<std::string>& ScenarioNames();

// Builds scenario c->scenario (using c->variant and c->home_policy) into *out
// and sets c's nodes, threads, pages, delayed and record_deliveries to fit it.
// An unknown name is an error.
Status MakeScenario(CaseConfig* c, Scenario* out);

}  // namespace svm::sim
