// sim_replay: re-runs simulator cases from the parameters a failure printed.
//
//   sim_replay --nodes 4 --threads 2 --pages 6 --home cyclic --seed 17 [--trace]
//   sim_replay ... --count 1000        # seeds seed .. seed+999
//   sim_replay ... --dump              # print the generated program
//
// Flags: --nodes --threads --pages --page-size --seed --schedule-seed --home
// (cyclic|block|first-touch) --cyclic-block --mode (base|dw|rf|dd|nil)
// --bug (none|skip-invalidation|no-version-wait|unsafe-fetch|early-drop-check|
// mark-dropped-at-install) --ops
// --max-steps --delay FROM:TO (repeatable), --lose-deposits-of NODE,
// --scenario NAME --variant V (a hand-written program, sim_scenarios.h),
// plus --trace (every event to stderr), --count N, --dump, --list (scenarios).
// Exit status: 0 if every case passed, 1 if one failed, 2 on bad flags.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/sim/sim_case.h"
#include "tests/sim/sim_generator.h"
#include "tests/sim/sim_scenarios.h"

namespace {

void PrintCounters(const svm::NodeStats& s) {
  std::printf("  faults r/w %" PRIu64 "/%" PRIu64 ", fetches %" PRIu64 " (retries %" PRIu64
              ", safe %" PRIu64 "), twins %" PRIu64 ", diffs %" PRIu64 " (%" PRIu64
              " bytes, %" PRIu64 " runs, applied %" PRIu64 "), intervals %" PRIu64
              ", invalidations %" PRIu64 ", acquires local/remote %" PRIu64 "/%" PRIu64
              ", barriers %" PRIu64 ", messages %" PRIu64 "\n"
              "  remote reads %" PRIu64 ", direct diffs %" PRIu64 ", notices deposited/taken %" PRIu64
              "/%" PRIu64 ", NIC locks %" PRIu64 ", polls %" PRIu64 "\n",
              s.read_faults, s.write_faults, s.fetches, s.fetch_retries, s.safe_fetches, s.twins,
              s.diffs, s.diff_bytes, s.diff_runs, s.diffs_applied, s.intervals, s.invalidations,
              s.local_acquires, s.remote_acquires, s.barriers, svm::sim::TotalMessages(s),
              s.remote_reads, s.direct_diffs, s.notices_deposited, s.notices_taken, s.nic_locks,
              s.polls);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool dump = false;
  uint64_t count = 1;
  svm::sim::CaseConfig c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trace") {
      c.trace = true;
    } else if (a == "--dump") {
      dump = true;
    } else if (a == "--list") {
      for (const std::string& name : svm::sim::ScenarioNames()) std::printf("%s\n", name.c_str());
      return 0;
    } else if (a == "--count" && i + 1 < argc) {
      count = std::strtoull(argv[++i], nullptr, 0);
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: sim_replay --nodes N --threads T --pages P --home H --seed S "
          "[--mode M] [--bug B] [--ops K] [--delay F:T] [--trace] [--count N] [--dump]\n"
          "       sim_replay --scenario NAME [--variant V] --seed S [--bug B] ...\n"
          "       sim_replay --list\n");
      return 0;
    } else {
      args.push_back(a);
    }
  }
  const svm::Status s = svm::sim::ParseFlags(args, &c);
  if (!s.ok()) {
    std::fprintf(stderr, "sim_replay: %s\n", s.ToString().c_str());
    return 2;
  }
  if (dump) {
    svm::sim::Program p;
    if (!c.scenario.empty()) {
      svm::sim::CaseConfig sc = c;
      svm::sim::Scenario scenario;
      const svm::Status st = svm::sim::MakeScenario(&sc, &scenario);
      if (!st.ok()) {
        std::fprintf(stderr, "sim_replay: %s\n", st.ToString().c_str());
        return 2;
      }
      p = std::move(scenario.program);
    } else {
      svm::sim::GenOptions o;
      o.nodes = c.nodes;
      o.threads = c.threads;
      o.pages = c.pages;
      o.page_size = c.page_size;
      o.ops = c.ops;
      p = svm::sim::Generate(o, c.seed);
    }
    for (size_t v = 0; v < p.vars.size(); ++v) {
      std::printf("var %zu @0x%" PRIx64 " len %u %s lock %" PRIu64 "\n", v, p.vars[v].addr,
                  p.vars[v].len, svm::sim::ToString(p.vars[v].cls), p.vars[v].lock);
    }
    for (uint32_t g = 0; g < p.thread_count(); ++g) {
      std::printf("thread n%u.t%u:\n", g / p.threads, g % p.threads);
      for (size_t i = 0; i < p.ops[g].size(); ++i) {
        std::printf("  %3zu %s\n", i, svm::sim::ToString(p.ops[g][i]).c_str());
      }
    }
  }
  int failed = 0;
  svm::NodeStats sum;
  uint64_t steps = 0;
  double total_ms = 0;
  const uint64_t first = c.seed;
  for (uint64_t k = 0; k < count; ++k) {
    c.seed = first + k;
    const auto start = std::chrono::steady_clock::now();
    const svm::sim::CaseResult r = svm::sim::RunCase(c);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    svm::sim::AddStats(&sum, r.counters);
    steps += r.steps;
    total_ms += ms;
    if (!r.ok) {
      ++failed;
      std::printf("FAIL %s\n", r.message.c_str());
    } else if (count == 1) {
      std::printf("ok %s: %" PRIu64 " steps, %" PRIu64 " messages, %" PRIu64
                  " reads checked, %.1f ms\n",
                  svm::sim::ToFlags(c).c_str(), r.steps, r.messages, r.reads_checked, ms);
      PrintCounters(r.counters);
    }
  }
  if (count > 1) {
    std::printf("%" PRIu64 " steps in all, %.1f ms in all; counters summed over the cases:\n",
                steps, total_ms);
    PrintCounters(sum);
    std::printf("%" PRIu64 " cases, %d failed\n", count, failed);
  }
  return failed ? 1 : 0;
}
