// Case runner: one simulated job, from parameters to a verdict.
//
// RunCase generates a program from the seed (sim_generator.h), or builds the
// named scenario (sim_scenarios.h), and runs it on `nodes` protocol Nodes
// under a seeded random schedule (sim_world.h); RunProgram runs a given
// program. Everything is
// deterministic: the same CaseConfig (and program) gives the same schedule,
// the same counters and the same verdict. A failure message starts with the
// exact parameters, as sim_replay flags, so the case can be re-run alone:
//
//   sim_replay --nodes 4 --threads 2 --pages 6 --home cyclic --seed 17
//
// Thread-safe in the sense that separate calls share nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/geometry.h"
#include "protocol/messages.h"
#include "protocol/node.h"
#include "protocol/stats.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_program.h"

namespace svm::sim {

struct CaseConfig {
  uint32_t nodes = 2;
  uint32_t threads = 1;  // per node
  uint64_t pages = 4;
  uint64_t page_size = 4096;
  uint64_t seed = 1;           // the program (RunCase) and, unless set, the schedule
  uint64_t schedule_seed = 0;  // 0: derived from seed
  HomePolicy home_policy = HomePolicy::kCyclic;
  uint32_t cyclic_block = 1;
  PlantedBug planted_bug = PlantedBug::kNone;
  Mode mode = Mode::kBase;
  uint32_t max_run = 1;       // NodeConfig::max_run: pages a fetch may carry
  bool claim_by_cas = true;   // NodeConfig::claim_by_cas
  uint32_t barrier_fanout = 8;  // NodeConfig::barrier_fanout
  bool scan_writes = false;   // NodeConfig::scan_writes: writes to read pages go through
  bool gather = false;        // barriers as the runtime calls them (Node::kGather), not with
                              // the program's own count of each node's threads
  uint32_t ops = 0;           // program size (GenOptions::ops); 0: default
  uint64_t max_steps = 0;     // 0: derived from the program size
  std::vector<Pair> delayed;  // pairs delivered only when nothing else can run
  // A faulty NIC for the checker's own tests: this node's deposits are lost,
  // so peers wait for notices that never come (a deadlock, never a loop).
  NodeId lose_deposits_of = kNoNode;
  // A hand-written program (sim_scenarios.h) instead of a generated one; it
  // sets nodes, threads, pages and delayed itself.
  std::string scenario;
  uint32_t variant = 0;
  // Diagnostics; they do not change the schedule.
  bool trace = false;  // print every event to stderr
  bool record_deliveries = false;
  size_t trace_tail = 48;  // events quoted in a failure message
};

// The parameters as sim_replay flags (only those that differ from defaults,
// plus nodes, threads, pages, home and seed).
std::string ToFlags(const CaseConfig& c);
// The parameters as SVM_SIM_* environment assignments.
std::string ToEnv(const CaseConfig& c);

// Parses sim_replay flags into *c (starting from its current values).
// Unknown flags or bad values give an error naming them.
Status ParseFlags(const std::vector<std::string>& args, CaseConfig* c);
// Reads SVM_SIM_NODES, _THREADS, _PAGES, _PAGE_SIZE, _SEED, _SCHEDULE_SEED,
// _HOME, _MODE, _BUG, _OPS, _MAX_STEPS into *c. Returns false if SVM_SIM_SEED is unset.
bool ConfigFromEnv(CaseConfig* c, Status* error);

std::optional<PlantedBug> ParsePlantedBug(std::string_view s);

enum class Failure : uint8_t {
  kNone,
  kReadMismatch,     // a read returned other bytes than the shadow memory
  kFinalState,       // a frame disagrees with the shadow after the run
  kProtocolError,    // Node::Receive returned an error
  kContract,         // the Node broke the Host / Node contract
  kMutualExclusion,  // a lock granted while held
  kBarrier,          // a barrier passed early
  kDeadlock,         // nothing can run and threads are not finished
  kStepLimit,        // livelock guard
  kRace,             // the program itself is racy (a test bug)
  kBadProgram,       // the program failed Validate (a test bug)
};
const char* ToString(Failure f);
// A failure that means the protocol returned wrong data.
inline bool IsDataFailure(Failure f) {
  return f == Failure::kReadMismatch || f == Failure::kFinalState;
}

struct LockGrantRecord {
  LockId lock = 0;
  uint32_t thread = 0;          // global thread id
  uint64_t requested_step = 0;  // first Acquire call
  uint64_t granted_step = 0;    // Acquire returned kDone
};

struct ProbeRecord {
  uint64_t id = 0;
  uint32_t thread = 0;
  uint64_t step = 0;
  std::vector<NodeStats> stats;  // by node
};

// A delivered message, or (kind != kMessage) a one-sided operation or its
// completion.
struct DeliveryRecord {
  uint64_t step = 0;
  NodeId from = 0;
  NodeId to = 0;
  EventKind kind = EventKind::kMessage;
  MessageType type = MessageType::kFetchRequest;  // messages only
  PageId page = 0;  // FetchRequest, PageReply, DiffMessage, HomeClaim, HomeReply; reads, diffs
  LockId lock = 0;  // NIC lock operations
  size_t bytes = 0;
  size_t notices = 0;       // LockGrant, BarrierArrive, BarrierRelease: write notices
  size_t notice_pages = 0;  // pages named by those notices
};

struct CaseResult {
  bool ok = false;
  Failure failure = Failure::kNone;
  std::string message;  // on failure: parameters, what, where, recent events
  uint64_t steps = 0;
  uint64_t messages = 0;        // delivered
  uint64_t nic_ops = 0;         // one-sided operations and completions delivered
  uint64_t polls = 0;
  uint64_t reads_checked = 0;   // data reads compared with the shadow
  uint64_t spurious_wakes = 0;  // Wake of a thread that was not blocked
  uint64_t notices_held = 0;    // intervals left in the nodes' bins at the end
  NodeStats counters;           // summed over nodes
  std::vector<NodeStats> node_stats;
  std::vector<LockGrantRecord> lock_grants;  // in grant order
  std::vector<ProbeRecord> probes;
  std::vector<DeliveryRecord> deliveries;  // if record_deliveries
};

// Generates the program of c (seed, sizes) or builds c.scenario, and runs it.
CaseResult RunCase(const CaseConfig& c);
// Runs the given program. REQUIRES: its nodes/threads/pages match c.
CaseResult RunProgram(const CaseConfig& c, const Program& program);

// Sums every counter of b into *a.
void AddStats(NodeStats* a, const NodeStats& b);
uint64_t TotalMessages(const NodeStats& s);

}  // namespace svm::sim
