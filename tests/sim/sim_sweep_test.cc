// The random sweep: generated data-race-free programs under random schedules,
// over 2..16 nodes, 1..4 threads per node, 4..8 pages (of 4 KiB, one case in
// ten of 8 KiB) and the three home policies; a quarter of the cases delay a
// few node pairs until nothing else can run; two in three fetch page runs. The big sweep runs in base mode;
// each NIC-offload mode (dw, rf, dd, nil) has a smaller sweep of its own over
// the same space, on other seeds. Sharded by node count so ctest runs the
// shards in parallel; SVM_SIM_SCALE shrinks (or grows) every shard. A failure prints the exact parameters;
// re-run one with
//   build/tests/sim_replay <flags printed>        or
//   SVM_SIM_SEED=... SVM_SIM_NODES=... build/tests/sim_replay_test
#include <gtest/gtest.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_test_util.h"

namespace svm::sim {
namespace {

uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Case i of a shard: every parameter follows from (shard, i), so the list of
// cases is fixed; threads and home policy cycle so each combination is run.
CaseConfig SweepCase(const std::vector<uint32_t>& nodes, uint64_t shard_base, uint64_t i,
                     Mode mode, bool wide) {
  const uint64_t h = Mix(shard_base + i);
  CaseConfig c;
  c.mode = mode;
  c.nodes = nodes[i % nodes.size()];
  c.threads = 1 + static_cast<uint32_t>((i / nodes.size()) % 4);
  c.home_policy = static_cast<HomePolicy>((i / (4 * nodes.size())) % 3);
  c.pages = 4 + h % 5;
  c.cyclic_block = (h >> 8) % 8 == 0 ? 2 : 1;
  c.page_size = (h >> 16) % 10 == 0 ? 8192 : 4096;
  // Two cases in three fetch page runs (of at most 2 or 4 pages).
  c.max_run = (h >> 40) % 3 == 0 ? 1 : 2u << ((h >> 44) % 2);
  // One case in four claims first-touch homes by messages in every mode (as
  // over tcp).
  c.claim_by_cas = (h >> 48) % 4 != 0;
  // Half the cases find writes to read pages by scans, as on the uffd
  // backend (NodeConfig::scan_writes), half by faults.
  c.scan_writes = (h >> 52) % 2 == 0;
  // Half the cases call barriers as the runtime does (Node::kGather).
  c.gather = (h >> 56) % 2 == 0;
  // Barrier trees from a chain to flat, so small jobs have deep ones too.
  c.barrier_fanout = 1u << ((h >> 60) % 4);  // 1, 2, 4, 8
  // One case in four has slow links: pairs delivered only when nothing else
  // can happen (extreme but legal latencies).
  if ((h >> 24) % 4 == 0) {
    uint64_t r = Mix(h);
    for (uint64_t k = 0; k < 1 + (h >> 32) % 3; ++k, r = Mix(r)) {
      const NodeId from = static_cast<NodeId>(r % c.nodes);
      const NodeId to = static_cast<NodeId>((from + 1 + (r >> 20) % (c.nodes - 1)) % c.nodes);
      c.delayed.push_back({from, to});
    }
  }
  // Wide: more pages and longer runs, so scans fault in strides and pages
  // come along them (Node::FetchStrided).
  if (wide) {
    c.pages = 12 + h % 13;
    c.max_run = 4u << ((h >> 44) % 2);
  }
  c.seed = shard_base + i;
  return c;
}

void Sweep(const std::vector<uint32_t>& nodes, uint64_t cases, uint64_t shard_base,
           Mode mode = Mode::kBase, bool wide = false) {
  cases = Scaled(cases);
  const auto start = std::chrono::steady_clock::now();
  uint64_t failures = 0, steps = 0, reads = 0;
  NodeStats sum;
  std::string replay;
  for (uint64_t i = 0; i < cases; ++i) {
    const CaseConfig c = SweepCase(nodes, shard_base, i, mode, wide);
    const CaseResult r = RunCase(c);
    steps += r.steps;
    reads += r.reads_checked;
    AddStats(&sum, r.counters);
    if (r.ok) continue;
    if (++failures <= 3) ADD_FAILURE() << r.message;
    if (failures <= 20) replay += "  " + ToFlags(c) + "   # " + ToString(r.failure) + "\n";
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s: %" PRIu64 " cases in %.1f s: %" PRIu64 " steps, %" PRIu64 " reads checked; faults %" PRIu64
      ", fetches %" PRIu64 " (safe %" PRIu64 "; pages ahead %" PRIu64 " (strided %" PRIu64 "): used %" PRIu64
      ", unused %" PRIu64 "), home pages written ahead %" PRIu64 ", found written by scans %" PRIu64 ", diffs %" PRIu64 ", acquires local/remote %" PRIu64
      "/%" PRIu64 ", barriers %" PRIu64 ", messages %" PRIu64 "; remote reads %" PRIu64
      ", direct diffs %" PRIu64 ", notices deposited/taken %" PRIu64 "/%" PRIu64
      ", NIC locks %" PRIu64 ", home claims %" PRIu64 ", polls %" PRIu64 "\n",
      ToString(mode), cases, secs, steps, reads, sum.read_faults + sum.write_faults, sum.fetches, sum.safe_fetches,
      sum.pages_ahead, sum.pages_strided, sum.ahead_used, sum.ahead_unused, sum.pages_written_ahead, sum.pages_found_written, sum.diffs, sum.local_acquires, sum.remote_acquires, sum.barriers, TotalMessages(sum),
      sum.remote_reads, sum.direct_diffs, sum.notices_deposited, sum.notices_taken, sum.nic_locks, sum.home_claims,
      sum.polls);
  if (wide && cases >= 100) {
    EXPECT_GT(sum.pages_strided, 0u) << "no page came along a stride";
  }
  EXPECT_EQ(failures, 0u) << failures << " of " << cases << " cases failed; replay with:\n"
                          << replay;
}

TEST(SimSweep, Nodes2) { Sweep({2}, 2400, 2'000'000); }
TEST(SimSweep, Nodes3) { Sweep({3}, 2000, 3'000'000); }
TEST(SimSweep, Nodes4) { Sweep({4}, 1600, 4'000'000); }
TEST(SimSweep, Nodes5To7) { Sweep({5, 6, 7}, 1200, 5'000'000); }
TEST(SimSweep, Nodes8) { Sweep({8}, 1200, 8'000'000); }
TEST(SimSweep, Nodes9To12) { Sweep({9, 10, 12}, 900, 9'000'000); }
TEST(SimSweep, Nodes16) { Sweep({13, 16}, 900, 16'000'000); }

// Per mode: 2..4 nodes, and 5..16 nodes. Shard bases differ from base's.
TEST(SimSweepDw, Nodes2To4) { Sweep({2, 3, 4}, 1500, 102'000'000, Mode::kDw); }
TEST(SimSweepDw, Nodes5To16) { Sweep({5, 6, 8, 12, 16}, 900, 105'000'000, Mode::kDw); }
TEST(SimSweepRf, Nodes2To4) { Sweep({2, 3, 4}, 1500, 202'000'000, Mode::kRf); }
TEST(SimSweepRf, Nodes5To16) { Sweep({5, 7, 8, 10, 16}, 900, 205'000'000, Mode::kRf); }
TEST(SimSweepDd, Nodes2To4) { Sweep({2, 3, 4}, 1500, 302'000'000, Mode::kDd); }
TEST(SimSweepDd, Nodes5To16) { Sweep({5, 6, 9, 12, 16}, 900, 305'000'000, Mode::kDd); }
TEST(SimSweepNil, Nodes2To4) { Sweep({2, 3, 4}, 1500, 402'000'000, Mode::kNil); }
TEST(SimSweepNil, Nodes5To16) { Sweep({5, 7, 8, 13, 16}, 900, 405'000'000, Mode::kNil); }

// Wide cases (12..24 pages, runs of 4 or 8): strided fetches in base (by
// messages) and rf (by remote reads, first-touch claims by CAS).
TEST(SimSweepWide, Base) { Sweep({2, 3, 4}, 500, 502'000'000, Mode::kBase, true); }
TEST(SimSweepWide, Rf) { Sweep({2, 3, 4}, 500, 602'000'000, Mode::kRf, true); }

}  // namespace
}  // namespace svm::sim
