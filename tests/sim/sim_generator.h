// Generator: seeded random data-race-free programs for the simulator.
//
// Layout: variables of 1..8 bytes packed into a few pages so that false
// sharing is the rule: neighbouring bytes of one 8-byte word given to
// different threads or locks, variables that cross a 64-byte line, and a few
// that cross a page boundary.
//
// Each variable is kept race-free in one of three ways:
//  * locked: guarded by one lock; accessed inside critical sections of that
//    lock (read it, write a new unique value), or read by anyone without the
//    lock in a phase where nobody takes that lock;
//  * owned: in each phase either written by one owner thread (which may also
//    read it) or read-only for everyone;
//  * counter: a lock chain; every thread increments it under its lock.
// Phases are separated by global barriers; the program ends with a final
// check (a barrier, then thread 0 of each node reads every variable).
// Every value written is unique to (thread, op index), so a stale read shows.
//
// Deterministic: the same options and seed give the same program.
#pragma once

#include <cstdint>

#include "tests/sim/sim_program.h"

namespace svm::sim {

struct GenOptions {
  uint32_t nodes = 2;
  uint32_t threads = 1;
  uint64_t pages = 4;
  uint64_t page_size = 4096;
  // Approximate number of data operations in the whole program (not counting
  // the final check). 0: DefaultOps(nodes, threads).
  uint32_t ops = 0;
};

// A program size that keeps one case around a few milliseconds.
uint32_t DefaultOps(uint32_t nodes, uint32_t threads);

// REQUIRES: options.pages >= 1, nodes >= 1, threads >= 1.
Program Generate(const GenOptions& options, uint64_t seed);

}  // namespace svm::sim
