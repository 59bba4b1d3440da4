// World: N protocol Nodes, their SimHosts, the SimNetwork and the simulated
// application threads, driven by one seeded scheduler.
//
// At each step the Scheduler (sim_scheduler.h) picks a runnable thread, a
// network pair to deliver from, or (modes dw..nil) a node to Poll. A node is
// worth polling when it NeedsPoll() and its NIC took a deposit or a direct
// diff since its last poll: any other poll would find nothing new, so
// skipping it loses no behaviour, and "only useless polls left" is a
// deadlock, not an endless loop. A delivered event is a message for the
// target's Node, or a one-sided operation served by the target's SimHost
// (its completion travels back on the reverse pair to the initiator's Node).
// A thread step performs (part of) its next operation:
//  * a data access touches one page at a time (an access that spans two pages
//    is two pieces); if the page's protection does not allow it, the thread
//    calls Node::Fault, and on kDone retries at a later step (it may fault
//    again); on kBlocked it waits for Host::Wake, then calls Fault again;
//  * Acquire and Barrier follow the same contract: called again with the same
//    arguments after each Wake until kDone;
//  * every performed read is compared with the shadow memory, every
//    synchronisation is checked by the OrderChecker;
//  * a write races with the protocol: a host's Protect that takes write
//    permission away first lets each thread of that node whose next step is
//    a write the old protection allows make it, on a coin of its own (a
//    running thread's store lands until the kernel's unmapping, whatever
//    the Node decided before its call).
// Nothing is left to unordered containers or addresses: same config, same
// program -> same run.
//
// Not thread-safe; one World runs one case.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "protocol/node.h"
#include "tests/sim/sim_case.h"
#include "tests/sim/sim_host.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_order.h"
#include "tests/sim/sim_program.h"
#include "tests/sim/sim_scheduler.h"
#include "tests/sim/sim_shadow.h"
#include "tests/sim/sim_trace.h"

namespace svm::sim {

class World final : public WakeListener {
 public:
  // REQUIRES: program.Validate().ok(), its geometry matches config.
  World(const CaseConfig& config, const Program& program);
  ~World() override;

  // Runs until every thread finished and the network is empty, or a failure.
  CaseResult Run();

  void OnWake(NodeId node, ThreadId t) override;
  uint32_t LiveThreads() const override { return live_; }
  void BeforeProtect(NodeId node, PageId first, size_t count, Prot prot) override;

 private:
  enum class State : uint8_t { kDormant, kRunnable, kBlocked, kAwaiting, kDone };
  struct Thread {
    uint32_t g = 0;
    NodeId node = 0;
    ThreadId t = 0;
    size_t pc = 0;
    State state = State::kRunnable;
    bool wake_pending = false;  // woken while not blocked (e.g. during its own call)
    bool called = false;        // current Acquire/Barrier already called once
    uint32_t piece = 0;         // data op: pieces done (Add: reads, then writes)
    uint64_t value = 0;         // kAdd: value read so far
    uint64_t requested_step = 0;
    bool exited = false;
  };
  struct Piece {
    uint64_t addr;
    uint32_t len;
  };

  void StepThread(Thread& th);
  void StepData(Thread& th, const Op& op);
  void StepAcquire(Thread& th, const Op& op);
  void StepBarrier(Thread& th, const Op& op);
  void StepLife(Thread& th, const Op& op);
  // Under gather: tells th's node what the runtime would of th (tell gets
  // the node and th's local id), checking the Host contract after.
  void TellNode(Thread& th, const std::function<void(Node&, ThreadId)>& tell);
  // ... that th waits for other threads where the node cannot see (a join,
  // a flag), or runs again.
  void Elsewhere(Thread& th, bool waiting);
  void Deliver(Pair p);
  void DeliverOneSided(Pair p, Event& e);
  // Node::ReportGathered at every node that holds barrier arrivals back;
  // whether there was one.
  bool GiveUpGathers();
  void PollNode(NodeId n);
  void Advance(Thread& th);
  void Block(Thread& th);
  void SetRunnable(Thread& th);
  void ClearRunnable(Thread& th);
  bool CheckContract();
  void FinalChecks();
  void Fail(Failure f, const std::string& what);
  std::string ThreadName(uint32_t g) const;
  std::string Where(const Thread& th) const;
  std::string ThreadStates() const;
  uint32_t Pieces(const Op& op, Piece out[2]) const;
  // The access th makes next in data op `op` (an Add reads its pieces,
  // then writes them).
  struct DataStep {
    uint32_t pieces;  // of the op
    Piece piece;
    PageId page;
    bool write;
  };
  DataStep NextStep(const Thread& th, const Op& op) const;
  void Record(Ev ev, uint32_t a, uint32_t b, uint64_t x, uint64_t y, uint8_t z = 0);

  CaseConfig config_;
  const Program& program_;
  Scheduler scheduler_;
  uint64_t max_steps_;
  SimNetwork network_;
  std::vector<std::unique_ptr<SimHost>> hosts_;
  std::vector<std::unique_ptr<Node>> nodes_;  // after hosts_: destroyed first
  ShadowMemory shadow_;
  OrderChecker order_;
  TraceRing trace_;
  std::vector<Thread> threads_;
  std::vector<uint8_t> poll_due_;  // by node: NIC took something since its last Poll
  std::vector<NodeId> polls_;      // nodes worth polling at this step
  std::set<uint64_t> flags_;
  std::map<uint64_t, std::vector<uint32_t>> flag_waiters_;
  std::map<uint32_t, std::vector<uint32_t>> joiners_;  // by thread joined
  uint32_t live_ = 0;                                  // LiveThreads()
  uint32_t calling_ = UINT32_MAX;  // thread inside a Node call, if any
  std::mt19937_64 race_coin_{config_.seed ^ 0x7ace5ull};  // BeforeProtect's, apart from the scheduler's
  size_t done_ = 0;
  uint64_t step_ = 0;
  CaseResult result_;
  bool failed_ = false;
};

}  // namespace svm::sim
