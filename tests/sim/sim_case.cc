#include "tests/sim/sim_case.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "tests/sim/sim_generator.h"
#include "tests/sim/sim_scenarios.h"
#include "tests/sim/sim_world.h"

namespace svm::sim {

namespace {

constexpr PlantedBug kBugs[] = {PlantedBug::kNone, PlantedBug::kSkipInvalidation,
                                PlantedBug::kNoVersionWait, PlantedBug::kUnsafeFetch,
                                PlantedBug::kEarlyDropCheck, PlantedBug::kMarkDroppedAtInstall};

const char* BugFlag(PlantedBug b) {
  switch (b) {
    case PlantedBug::kNone:
      return "none";
    case PlantedBug::kSkipInvalidation:
      return "skip-invalidation";
    case PlantedBug::kNoVersionWait:
      return "no-version-wait";
    case PlantedBug::kUnsafeFetch:
      return "unsafe-fetch";
    case PlantedBug::kEarlyDropCheck:
      return "early-drop-check";
    case PlantedBug::kMarkDroppedAtInstall:
      return "mark-dropped-at-install";
  }
  return "?";
}

const char* HomeFlag(HomePolicy p) {
  switch (p) {
    case HomePolicy::kCyclic:
      return "cyclic";
    case HomePolicy::kBlock:
      return "block";
    case HomePolicy::kFirstTouch:
      return "first-touch";
  }
  return "?";
}

std::optional<HomePolicy> ParseHome(std::string_view s) {
  for (HomePolicy p : {HomePolicy::kCyclic, HomePolicy::kBlock, HomePolicy::kFirstTouch}) {
    if (s == HomeFlag(p)) return p;
  }
  return ParseHomePolicy(s);
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  std::string str(s);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(str.c_str(), &end, 0);
  if (errno != 0 || end != str.c_str() + str.size() || str[0] == '-') return false;
  *out = v;
  return true;
}

bool ParseU32(std::string_view s, uint32_t* out) {
  uint64_t v;
  if (!ParseU64(s, &v) || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// Sets one parameter by name (flag name without dashes).
Status SetParam(std::string_view name, std::string_view value, CaseConfig* c) {
  auto bad = [&] {
    return Status::InvalidArgument("bad value '" + std::string(value) + "' for " +
                                   std::string(name));
  };
  if (name == "nodes") return ParseU32(value, &c->nodes) ? Status::Ok() : bad();
  if (name == "threads") return ParseU32(value, &c->threads) ? Status::Ok() : bad();
  if (name == "pages") return ParseU64(value, &c->pages) ? Status::Ok() : bad();
  if (name == "page-size") return ParseU64(value, &c->page_size) ? Status::Ok() : bad();
  if (name == "seed") return ParseU64(value, &c->seed) ? Status::Ok() : bad();
  if (name == "schedule-seed") return ParseU64(value, &c->schedule_seed) ? Status::Ok() : bad();
  if (name == "cyclic-block") return ParseU32(value, &c->cyclic_block) ? Status::Ok() : bad();
  if (name == "max-run")
    return ParseU32(value, &c->max_run) && c->max_run >= 1 && c->max_run <= kMaxPageRun ? Status::Ok() : bad();
  if (name == "barrier-fanout")
    return ParseU32(value, &c->barrier_fanout) && c->barrier_fanout >= 1 ? Status::Ok() : bad();
  if (name == "claim-by-cas") {
    if (value != "0" && value != "1") return bad();
    c->claim_by_cas = value == "1";
    return Status::Ok();
  }
  if (name == "scan-writes") {
    if (value != "0" && value != "1") return bad();
    c->scan_writes = value == "1";
    return Status::Ok();
  }
  if (name == "gather") {
    if (value != "0" && value != "1") return bad();
    c->gather = value == "1";
    return Status::Ok();
  }
  if (name == "ops") return ParseU32(value, &c->ops) ? Status::Ok() : bad();
  if (name == "max-steps") return ParseU64(value, &c->max_steps) ? Status::Ok() : bad();
  if (name == "variant") return ParseU32(value, &c->variant) ? Status::Ok() : bad();
  if (name == "lose-deposits-of") return ParseU32(value, &c->lose_deposits_of) ? Status::Ok() : bad();
  if (name == "scenario") {
    c->scenario = std::string(value);
    return Status::Ok();
  }
  if (name == "home") {
    const auto p = ParseHome(value);
    if (!p) return bad();
    c->home_policy = *p;
    return Status::Ok();
  }
  if (name == "mode") {
    Mode m;
    if (!ParseMode(std::string(value).c_str(), &m)) return bad();
    c->mode = m;
    return Status::Ok();
  }
  if (name == "bug") {
    const auto b = ParsePlantedBug(value);
    if (!b) return bad();
    c->planted_bug = *b;
    return Status::Ok();
  }
  if (name == "delay") {  // FROM:TO
    const size_t colon = value.find(':');
    Pair p;
    if (colon == std::string_view::npos || !ParseU32(value.substr(0, colon), &p.from) ||
        !ParseU32(value.substr(colon + 1), &p.to)) {
      return bad();
    }
    c->delayed.push_back(p);
    return Status::Ok();
  }
  return Status::InvalidArgument("unknown parameter " + std::string(name));
}

// The parameters a Node and the generator can work with.
Status CheckConfig(const CaseConfig& c) {
  Geometry g;
  g.page_size = c.page_size;
  g.pages = c.pages;
  g.nodes = c.nodes;
  if (Status s = g.Validate(); !s.ok()) return s;
  if (c.threads == 0 || c.cyclic_block == 0) {
    return Status::InvalidArgument("threads and cyclic_block must be >= 1");
  }
  for (const Pair& p : c.delayed) {
    if (p.from >= c.nodes || p.to >= c.nodes || p.from == p.to) {
      return Status::InvalidArgument("delayed pair names no link");
    }
  }
  return Status::Ok();
}

CaseResult BadCase(const CaseConfig& c, const Status& s) {
  CaseResult r;
  r.failure = Failure::kBadProgram;
  r.message = "[" + ToFlags(c) + "] " + ToString(r.failure) + ": " + s.ToString();
  return r;
}

}  // namespace

std::optional<PlantedBug> ParsePlantedBug(std::string_view s) {
  for (PlantedBug b : kBugs) {
    if (s == BugFlag(b) || s == ToString(b)) return b;
  }
  return std::nullopt;
}

const char* ToString(Failure f) {
  switch (f) {
    case Failure::kNone:
      return "ok";
    case Failure::kReadMismatch:
      return "read mismatch";
    case Failure::kFinalState:
      return "final state mismatch";
    case Failure::kProtocolError:
      return "protocol error";
    case Failure::kContract:
      return "contract violation";
    case Failure::kMutualExclusion:
      return "mutual exclusion violated";
    case Failure::kBarrier:
      return "barrier violated";
    case Failure::kDeadlock:
      return "deadlock";
    case Failure::kStepLimit:
      return "step limit (livelock?)";
    case Failure::kRace:
      return "racy program (test bug)";
    case Failure::kBadProgram:
      return "bad program (test bug)";
  }
  return "?";
}

std::string ToFlags(const CaseConfig& c) {
  const CaseConfig d;
  std::string s;
  if (!c.scenario.empty()) {  // the scenario fixes the shape
    s = "--scenario " + c.scenario + " --variant " + std::to_string(c.variant) + " --home " +
        HomeFlag(c.home_policy) + " --seed " + std::to_string(c.seed);
    if (c.schedule_seed != d.schedule_seed)
      s += " --schedule-seed " + std::to_string(c.schedule_seed);
    if (c.mode != d.mode) s += std::string(" --mode ") + ToString(c.mode);
    if (c.max_run != d.max_run) s += " --max-run " + std::to_string(c.max_run);
    if (c.claim_by_cas != d.claim_by_cas) s += " --claim-by-cas 0";
    if (c.barrier_fanout != d.barrier_fanout) s += " --barrier-fanout " + std::to_string(c.barrier_fanout);
    if (c.scan_writes != d.scan_writes) s += " --scan-writes 1";
    if (c.gather != d.gather) s += " --gather 1";
    if (c.planted_bug != d.planted_bug) s += std::string(" --bug ") + BugFlag(c.planted_bug);
    if (c.max_steps != d.max_steps) s += " --max-steps " + std::to_string(c.max_steps);
    return "sim_replay " + s;
  }
  s = "--nodes " + std::to_string(c.nodes) + " --threads " + std::to_string(c.threads) +
      " --pages " + std::to_string(c.pages) + " --home " + HomeFlag(c.home_policy) + " --seed " +
      std::to_string(c.seed);
  if (c.schedule_seed != d.schedule_seed)
    s += " --schedule-seed " + std::to_string(c.schedule_seed);
  if (c.page_size != d.page_size) s += " --page-size " + std::to_string(c.page_size);
  if (c.cyclic_block != d.cyclic_block) s += " --cyclic-block " + std::to_string(c.cyclic_block);
  if (c.mode != d.mode) s += std::string(" --mode ") + ToString(c.mode);
  if (c.max_run != d.max_run) s += " --max-run " + std::to_string(c.max_run);
  if (c.claim_by_cas != d.claim_by_cas) s += " --claim-by-cas 0";
  if (c.barrier_fanout != d.barrier_fanout) s += " --barrier-fanout " + std::to_string(c.barrier_fanout);
  if (c.scan_writes != d.scan_writes) s += " --scan-writes 1";
  if (c.gather != d.gather) s += " --gather 1";
  if (c.planted_bug != d.planted_bug) s += std::string(" --bug ") + BugFlag(c.planted_bug);
  if (c.ops != d.ops) s += " --ops " + std::to_string(c.ops);
  if (c.max_steps != d.max_steps) s += " --max-steps " + std::to_string(c.max_steps);
  for (const Pair& p : c.delayed) {
    s += " --delay " + std::to_string(p.from) + ":" + std::to_string(p.to);
  }
  if (c.lose_deposits_of != d.lose_deposits_of)
    s += " --lose-deposits-of " + std::to_string(c.lose_deposits_of);
  return "sim_replay " + s;
}

std::string ToEnv(const CaseConfig& c) {
  std::string s =
      "SVM_SIM_NODES=" + std::to_string(c.nodes) + " SVM_SIM_THREADS=" + std::to_string(c.threads) +
      " SVM_SIM_PAGES=" + std::to_string(c.pages) + " SVM_SIM_HOME=" + HomeFlag(c.home_policy) +
      " SVM_SIM_SEED=" + std::to_string(c.seed);
  if (c.schedule_seed) s += " SVM_SIM_SCHEDULE_SEED=" + std::to_string(c.schedule_seed);
  if (c.mode != Mode::kBase) s += std::string(" SVM_SIM_MODE=") + ToString(c.mode);
  if (c.planted_bug != PlantedBug::kNone)
    s += std::string(" SVM_SIM_BUG=") + BugFlag(c.planted_bug);
  if (c.ops) s += " SVM_SIM_OPS=" + std::to_string(c.ops);
  if (c.max_run != 1) s += " SVM_SIM_MAX_RUN=" + std::to_string(c.max_run);
  if (!c.claim_by_cas) s += " SVM_SIM_CLAIM_BY_CAS=0";
  if (c.barrier_fanout != CaseConfig().barrier_fanout)
    s += " SVM_SIM_BARRIER_FANOUT=" + std::to_string(c.barrier_fanout);
  if (c.scan_writes) s += " SVM_SIM_SCAN_WRITES=1";
  if (c.gather) s += " SVM_SIM_GATHER=1";
  if (!c.scenario.empty()) {
    s += " SVM_SIM_SCENARIO=" + c.scenario + " SVM_SIM_VARIANT=" + std::to_string(c.variant);
  }
  return s;
}

Status ParseFlags(const std::vector<std::string>& args, CaseConfig* c) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a.substr(0, 2) != "--") return Status::InvalidArgument("expected a flag: " + args[i]);
    a.remove_prefix(2);
    std::string_view value;
    const size_t eq = a.find('=');
    if (eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) return Status::InvalidArgument("missing value for " + args[i]);
      value = args[++i];
    }
    Status s = SetParam(a, value, c);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

bool ConfigFromEnv(CaseConfig* c, Status* error) {
  *error = Status::Ok();
  if (std::getenv("SVM_SIM_SEED") == nullptr) return false;
  static const char* const kNames[][2] = {{"SVM_SIM_NODES", "nodes"},
                                          {"SVM_SIM_THREADS", "threads"},
                                          {"SVM_SIM_PAGES", "pages"},
                                          {"SVM_SIM_PAGE_SIZE", "page-size"},
                                          {"SVM_SIM_SEED", "seed"},
                                          {"SVM_SIM_SCHEDULE_SEED", "schedule-seed"},
                                          {"SVM_SIM_HOME", "home"},
                                          {"SVM_SIM_MODE", "mode"},
                                          {"SVM_SIM_BUG", "bug"},
                                          {"SVM_SIM_OPS", "ops"},
                                          {"SVM_SIM_MAX_RUN", "max-run"},
                                          {"SVM_SIM_CLAIM_BY_CAS", "claim-by-cas"},
                                          {"SVM_SIM_BARRIER_FANOUT", "barrier-fanout"},
                                          {"SVM_SIM_SCAN_WRITES", "scan-writes"},
                                          {"SVM_SIM_GATHER", "gather"},
                                          {"SVM_SIM_MAX_STEPS", "max-steps"},
                                          {"SVM_SIM_CYCLIC_BLOCK", "cyclic-block"},
                                          {"SVM_SIM_SCENARIO", "scenario"},
                                          {"SVM_SIM_VARIANT", "variant"}};
  for (const auto& [env, name] : kNames) {
    const char* v = std::getenv(env);
    if (v == nullptr) continue;
    Status s = SetParam(name, v, c);
    if (!s.ok()) {
      *error = s;
      return true;
    }
  }
  return true;
}

CaseResult RunCase(const CaseConfig& config) {
  if (!config.scenario.empty()) {
    CaseConfig c = config;
    Scenario s;
    const Status st = MakeScenario(&c, &s);
    if (!st.ok()) return BadCase(c, st);
    return RunProgram(c, s.program);
  }
  const CaseConfig& c = config;
  if (Status st = CheckConfig(c); !st.ok()) return BadCase(c, st);
  GenOptions o;
  o.nodes = c.nodes;
  o.threads = c.threads;
  o.pages = c.pages;
  o.page_size = c.page_size;
  o.ops = c.ops;
  const Program program = Generate(o, c.seed);
  return RunProgram(c, program);
}

CaseResult RunProgram(const CaseConfig& c, const Program& program) {
  Status s = CheckConfig(c);
  if (s.ok()) s = program.Validate();
  if (s.ok() && (program.nodes != c.nodes || program.threads != c.threads ||
                 program.pages != c.pages || program.page_size != c.page_size)) {
    s = Status::InvalidArgument("program geometry differs from the case");
  }
  if (!s.ok()) return BadCase(c, s);
  World world(c, program);
  return world.Run();
}

void AddStats(NodeStats* a, const NodeStats& b) {
  static_assert(sizeof(NodeStats) == (39 + 2 * (kMessageTypeCount + 1) + kHandlerKindCount) * 8,
                "NodeStats changed: update AddStats");
  a->read_faults += b.read_faults;
  a->write_faults += b.write_faults;
  a->fetches += b.fetches;
  a->pages_fetched += b.pages_fetched;
  a->pages_ahead += b.pages_ahead;
  a->pages_strided += b.pages_strided;
  a->ahead_used += b.ahead_used;
  a->ahead_unused += b.ahead_unused;
  a->write_scans += b.write_scans;
  a->pages_found_written += b.pages_found_written;
  a->pages_written_ahead += b.pages_written_ahead;
  a->fetch_retries += b.fetch_retries;
  a->safe_fetches += b.safe_fetches;
  a->pages_filled += b.pages_filled;
  a->twins += b.twins;
  a->diffs += b.diffs;
  a->diff_bytes += b.diff_bytes;
  a->diff_runs += b.diff_runs;
  a->masked_diffs += b.masked_diffs;
  a->diffs_applied += b.diffs_applied;
  a->intervals += b.intervals;
  a->invalidations += b.invalidations;
  a->local_acquires += b.local_acquires;
  a->remote_acquires += b.remote_acquires;
  a->barriers += b.barriers;
  a->notices_collected += b.notices_collected;
  a->gathers_given_up += b.gathers_given_up;
  a->protections += b.protections;
  a->untracked_pages += b.untracked_pages;
  a->tracked_pages += b.tracked_pages;
  a->untracked_again += b.untracked_again;
  a->marks_dropped += b.marks_dropped;
  a->remote_reads += b.remote_reads;
  a->direct_diffs += b.direct_diffs;
  a->notices_deposited += b.notices_deposited;
  a->notices_taken += b.notices_taken;
  a->nic_locks += b.nic_locks;
  a->home_claims += b.home_claims;
  a->polls += b.polls;
  for (size_t i = 0; i < a->messages_sent.size(); ++i) a->messages_sent[i] += b.messages_sent[i];
  for (size_t i = 0; i < a->bytes_sent.size(); ++i) a->bytes_sent[i] += b.bytes_sent[i];
  for (size_t i = 0; i < a->handler.size(); ++i) a->handler[i] += b.handler[i];
}

uint64_t TotalMessages(const NodeStats& s) {
  uint64_t n = 0;
  for (uint64_t m : s.messages_sent) n += m;
  return n;
}

}  // namespace svm::sim
