#include "tests/sim/sim_world.h"

#include <cinttypes>
#include <cstdio>
#include <tuple>
#include <type_traits>
#include <utility>

#include "protocol/wire.h"

namespace svm::sim {

namespace {

constexpr uint32_t kEpoch = 0x51;
constexpr uint32_t kNoThread = UINT32_MAX;

// scan_writes: a read page lets writes through (the host records them).
bool Allows(Prot p, Access a, bool scan_writes) {
  if (a == Access::kRead || scan_writes) return p != Prot::kNone;
  return p == Prot::kReadWrite;
}

uint64_t Mask(uint32_t len) { return len >= 8 ? ~0ull : (1ull << (8 * len)) - 1; }

// Write notices carried by m: (notices, pages named).
std::pair<size_t, size_t> NoticesOf(const Message& m) {
  return std::visit(
      [](const auto& x) -> std::pair<size_t, size_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, LockGrant> || std::is_same_v<T, BarrierArrive> ||
                      std::is_same_v<T, BarrierRelease>) {
          size_t pages = 0;
          for (const WriteNotice& n : x.notices) pages += n.pages.size();
          return {x.notices.size(), pages};
        } else {
          return {0, 0};
        }
      },
      m);
}

PageId PageOfMessage(const Message& m) {
  return std::visit(
      [](const auto& x) -> PageId {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, FetchRequest> || std::is_same_v<T, PageReply> ||
                      std::is_same_v<T, DiffMessage> || std::is_same_v<T, HomeClaim> ||
                      std::is_same_v<T, HomeReply>) {
          return x.page;
        } else {
          return 0;
        }
      },
      m);
}

}  // namespace

World::World(const CaseConfig& config, const Program& program)
    : config_(config),
      program_(program),
      scheduler_(config.schedule_seed != 0 ? config.schedule_seed
                                           : config.seed * 0x9e3779b97f4a7c15ull + 0x5eed,
                 config.nodes * config.threads),
      max_steps_(config.max_steps != 0 ? config.max_steps : 400000 + 400 * program.op_count()),
      network_(config.nodes),
      shadow_(program),
      order_(config.threads, config.nodes * config.threads, program.vars.size()),
      trace_(256, config.threads, config.trace),
      poll_due_(config.nodes, 0) {
  for (const Pair& p : config.delayed) network_.SetDelayed(p.from, p.to, true);
  Geometry geometry;
  geometry.page_size = config.page_size;
  geometry.pages = config.pages;
  geometry.nodes = config.nodes;
  for (NodeId n = 0; n < config.nodes; ++n) {
    hosts_.push_back(std::make_unique<SimHost>(n, config.threads, config.pages, config.page_size,
                                               &network_, this));
    hosts_.back()->set_lose_deposits(n == config.lose_deposits_of);
  }
  for (NodeId n = 0; n < config.nodes; ++n) {
    NodeConfig nc;
    nc.self = n;
    nc.geometry = geometry;
    nc.threads = config.threads;
    nc.home_policy = config.home_policy;
    nc.cyclic_block = config.cyclic_block;
    nc.epoch = kEpoch;
    nc.mode = config.mode;
    nc.max_run = config.max_run;
    nc.claim_by_cas = config.claim_by_cas;
    nc.barrier_fanout = config.barrier_fanout;
    nc.scan_writes = config.scan_writes;
    nc.masked_direct_diffs = true;  // SimHost::WriteDiff applies them with diff::Apply
    nc.TEST_bug = config.planted_bug;
    nodes_.push_back(std::make_unique<Node>(nc, hosts_[n].get()));
  }
  const uint32_t total = config.nodes * config.threads;
  const std::vector<bool> dormant = program.Dormant();
  threads_.resize(total);
  for (uint32_t g = 0; g < total; ++g) {
    Thread& th = threads_[g];
    th.g = g;
    th.node = g / config.threads;
    th.t = g % config.threads;
    if (dormant[g]) {
      th.state = State::kDormant;
      continue;
    }
    ++live_;
    if (program.ops[g].empty()) {
      th.state = State::kDone;
      ++done_;
    } else {
      SetRunnable(th);
    }
  }
}

World::~World() = default;

std::string World::ThreadName(uint32_t g) const {
  return "n" + std::to_string(g / config_.threads) + ".t" + std::to_string(g % config_.threads);
}

std::string World::Where(const Thread& th) const {
  std::string s = ThreadName(th.g) + " op " + std::to_string(th.pc);
  if (th.pc < program_.ops[th.g].size()) s += " " + ToString(program_.ops[th.g][th.pc]);
  return s;
}

std::string World::ThreadStates() const {
  std::string s;
  for (const Thread& th : threads_) {
    if (th.state == State::kDone) continue;
    const char* st = th.state == State::kRunnable  ? "runnable"
                     : th.state == State::kBlocked ? "blocked"
                     : th.state == State::kDormant ? "not spawned"
                                                   : "awaiting";
    s += "  " + Where(th) + ": " + st + "\n";
  }
  return s;
}

void World::Record(Ev ev, uint32_t a, uint32_t b, uint64_t x, uint64_t y, uint8_t z) {
  TraceEvent e;
  e.step = step_;
  e.ev = ev;
  e.a = a;
  e.b = b;
  e.x = x;
  e.y = y;
  e.z = z;
  trace_.Add(e);
}

void World::Fail(Failure f, const std::string& what) {
  if (failed_) return;
  failed_ = true;
  result_.ok = false;
  result_.failure = f;
  result_.message = "[" + ToFlags(config_) + "] " + ToString(f) + " at step " +
                    std::to_string(step_) + ": " + what + "\nrecent events:\n" +
                    trace_.Tail(config_.trace_tail);
}

void World::SetRunnable(Thread& th) {
  th.state = State::kRunnable;
  scheduler_.SetRunnable(th.g);
}

void World::ClearRunnable(Thread& th) { scheduler_.ClearRunnable(th.g); }

void World::Block(Thread& th) {
  if (th.wake_pending) {  // woken during the very call that blocked
    th.wake_pending = false;
    return;
  }
  ClearRunnable(th);
  th.state = State::kBlocked;
}

void World::Advance(Thread& th) {
  ++th.pc;
  th.piece = 0;
  th.value = 0;
  th.called = false;
  if (th.pc == program_.ops[th.g].size()) {
    ClearRunnable(th);
    th.state = State::kDone;
    ++done_;
  }
}

void World::BeforeProtect(NodeId node, PageId first, size_t count, Prot prot) {
  if (failed_ || Allows(prot, Access::kWrite, config_.scan_writes)) return;
  SimHost& host = *hosts_[node];
  for (Thread& th : threads_) {
    if (th.node != node || th.state != State::kRunnable || th.g == calling_ ||
        th.pc >= program_.ops[th.g].size())
      continue;
    const Op& op = program_.ops[th.g][th.pc];
    if (op.kind != OpKind::kWrite && op.kind != OpKind::kAdd) continue;
    const DataStep s = NextStep(th, op);
    if (!s.write || s.page < first || s.page >= first + count ||
        !Allows(host.protection(s.page), Access::kWrite, config_.scan_writes) || race_coin_() % 2 == 0)
      continue;
    StepData(th, op);  // allowed: no Node call, so no Protect either
  }
}

void World::OnWake(NodeId node, ThreadId t) {
  Thread& th = threads_[node * config_.threads + t];
  Record(Ev::kWake, node, t, 0, 0);
  if (th.state == State::kBlocked) {
    SetRunnable(th);
    return;
  }
  if (calling_ != th.g) ++result_.spurious_wakes;
  if (th.state == State::kRunnable) th.wake_pending = true;
}

void World::TellNode(Thread& th, const std::function<void(Node&, ThreadId)>& tell) {
  if (!config_.gather || failed_) return;
  calling_ = th.g;
  tell(*nodes_[th.node], th.t);
  calling_ = kNoThread;
  CheckContract();
}

void World::Elsewhere(Thread& th, bool waiting) {
  TellNode(th, [waiting](Node& n, ThreadId t) { n.WaitingElsewhere(t, waiting); });
}

bool World::CheckContract() {
  for (const auto& host : hosts_) {
    if (!host->contract_error().empty()) {
      Fail(Failure::kContract, host->contract_error());
      return false;
    }
  }
  return true;
}

uint32_t World::Pieces(const Op& op, Piece out[2]) const {
  const uint64_t ps = config_.page_size;
  const uint64_t end = op.addr + op.len;
  const uint64_t page_end = (op.addr / ps + 1) * ps;
  if (end <= page_end) {
    out[0] = {op.addr, op.len};
    return 1;
  }
  out[0] = {op.addr, static_cast<uint32_t>(page_end - op.addr)};
  out[1] = {page_end, static_cast<uint32_t>(end - page_end)};
  return 2;
}

World::DataStep World::NextStep(const Thread& th, const Op& op) const {
  Piece pieces[2];
  DataStep s;
  s.pieces = Pieces(op, pieces);
  s.piece = pieces[th.piece % s.pieces];
  s.page = s.piece.addr / config_.page_size;
  s.write = op.kind == OpKind::kWrite || (op.kind == OpKind::kAdd && th.piece >= s.pieces);
  return s;
}

void World::StepData(Thread& th, const Op& op) {
  const DataStep s = NextStep(th, op);
  const uint32_t np = s.pieces;
  const uint32_t total = op.kind == OpKind::kAdd ? 2 * np : np;
  const bool write = s.write;
  const Access access = write ? Access::kWrite : Access::kRead;
  const Piece piece = s.piece;
  const PageId page = s.page;
  SimHost& host = *hosts_[th.node];

  if (!Allows(host.protection(page), access, config_.scan_writes)) {
    th.wake_pending = false;
    calling_ = th.g;
    const Outcome o = nodes_[th.node]->Fault(th.t, page, access);
    calling_ = kNoThread;
    Record(Ev::kFault, th.g, 0, page, static_cast<uint64_t>(access), static_cast<uint8_t>(o));
    if (!CheckContract()) return;
    if (o == Outcome::kBlocked) {
      Block(th);
    } else if (!Allows(host.protection(page), access, config_.scan_writes)) {
      Fail(Failure::kContract, Where(th) + ": Fault(page " + std::to_string(page) + ", " +
                                   ToString(access) + ") returned kDone but the protection is " +
                                   ToString(host.protection(page)));
    }
    return;  // the access itself happens at a later step
  }

  // The race check comes first: a racy program makes any value legal.
  if (th.piece == 0 || (op.kind == OpKind::kAdd && th.piece == np)) {
    const std::string race = order_.Accessed(th.g, op.var, write);
    if (!race.empty()) {
      Fail(Failure::kRace, Where(th) + ": " + race);
      return;
    }
  }

  const std::span<uint8_t> frame = host.Frame(page);
  const uint64_t off = piece.addr - page * config_.page_size;
  const uint64_t shift = piece.addr - op.addr;  // byte position inside the variable
  if (!write) {
    const std::span<const uint8_t> actual = frame.subspan(off, piece.len);
    Record(Ev::kRead, th.g, static_cast<uint32_t>(th.pc), piece.addr, piece.len);
    ++result_.reads_checked;
    if (!shadow_.Matches(piece.addr, actual)) {
      Fail(Failure::kReadMismatch, Where(th) + " page " + std::to_string(page) + " prot " +
                                       ToString(host.protection(page)) + ": " +
                                       shadow_.Explain(op.var, piece.addr, actual));
      return;
    }
    for (uint32_t i = 0; i < piece.len; ++i) {
      th.value |= static_cast<uint64_t>(actual[i]) << (8 * (shift + i));
    }
  } else {
    const uint64_t value =
        op.kind == OpKind::kAdd ? (th.value + op.value) & Mask(op.len) : op.value & Mask(op.len);
    for (uint32_t i = 0; i < piece.len; ++i) {
      frame[off + i] = static_cast<uint8_t>(value >> (8 * (shift + i)));
    }
    host.Wrote(page);
    shadow_.Write(op.var, piece.addr, piece.len, value, th.g, th.pc);
    Record(Ev::kWrite, th.g, static_cast<uint32_t>(th.pc), piece.addr, piece.len);
  }
  if (++th.piece == total) Advance(th);
}

void World::StepAcquire(Thread& th, const Op& op) {
  if (!th.called) {
    th.called = true;
    th.requested_step = step_;
  }
  th.wake_pending = false;
  calling_ = th.g;
  const Outcome o = nodes_[th.node]->Acquire(th.t, op.id);
  calling_ = kNoThread;
  Record(Ev::kAcquire, th.g, 0, op.id, 0, static_cast<uint8_t>(o));
  if (!CheckContract()) return;
  if (o == Outcome::kBlocked) {
    Block(th);
    return;
  }
  const std::string err = order_.Acquired(th.g, op.id);
  if (!err.empty()) {
    Fail(Failure::kMutualExclusion, Where(th) + ": " + err);
    return;
  }
  result_.lock_grants.push_back({op.id, th.g, th.requested_step, step_});
  Advance(th);
}

void World::StepBarrier(Thread& th, const Op& op) {
  if (!th.called) {
    th.called = true;
    order_.BarrierArrived(th.g, op.id, op.total);
  }
  th.wake_pending = false;
  calling_ = th.g;
  const Outcome o = nodes_[th.node]->Barrier(th.t, op.id, op.total, config_.gather ? Node::kGather : op.local);
  calling_ = kNoThread;
  Record(Ev::kBarrier, th.g, 0, op.id, 0, static_cast<uint8_t>(o));
  if (!CheckContract()) return;
  if (o == Outcome::kBlocked) {
    Block(th);
    return;
  }
  const std::string err = order_.BarrierPassed(th.g, op.id, op.total);
  if (!err.empty()) {
    Fail(Failure::kBarrier, Where(th) + ": " + err);
    return;
  }
  Advance(th);
}

void World::StepLife(Thread& th, const Op& op) {
  const uint32_t other = static_cast<uint32_t>(op.id);
  bool waits = false;
  switch (op.kind) {
    case OpKind::kSpawn: {
      Thread& child = threads_[other];
      ++live_;
      if (program_.ops[other].empty()) {
        child.state = State::kDone;
        ++done_;
      } else {
        SetRunnable(child);
      }
      break;
    }
    case OpKind::kExit: {
      --live_;
      th.exited = true;
      TellNode(th, [](Node& n, ThreadId t) { n.ThreadExited(t); });  // as the runtime does
      auto it = joiners_.find(th.g);
      if (it != joiners_.end()) {
        for (uint32_t w : it->second) SetRunnable(threads_[w]);
        joiners_.erase(it);
      }
      break;
    }
    default:  // kJoin
      waits = !threads_[other].exited;
      break;
  }
  Record(Ev::kLife, th.g, 0, other, waits, static_cast<uint8_t>(op.kind));
  if (!waits) {
    if (op.kind == OpKind::kJoin) Elsewhere(th, false);
    Advance(th);
    return;
  }
  ClearRunnable(th);
  th.state = State::kAwaiting;
  joiners_[other].push_back(th.g);
  Elsewhere(th, true);
}

void World::StepThread(Thread& th) {
  const Op& op = program_.ops[th.g][th.pc];
  switch (op.kind) {
    case OpKind::kRead:
    case OpKind::kWrite:
    case OpKind::kAdd:
      StepData(th, op);
      return;
    case OpKind::kAcquire:
      StepAcquire(th, op);
      return;
    case OpKind::kRelease: {
      const std::string err = order_.Released(th.g, op.id);
      if (!err.empty()) {
        Fail(Failure::kMutualExclusion, Where(th) + ": " + err);
        return;
      }
      calling_ = th.g;
      nodes_[th.node]->Release(th.t, op.id);
      calling_ = kNoThread;
      Record(Ev::kRelease, th.g, 0, op.id, 0);
      if (!CheckContract()) return;
      Advance(th);
      return;
    }
    case OpKind::kBarrier:
      StepBarrier(th, op);
      return;
    case OpKind::kSignal: {
      Record(Ev::kSignal, th.g, 0, op.id, 0);
      flags_.insert(op.id);
      auto it = flag_waiters_.find(op.id);
      if (it != flag_waiters_.end()) {
        for (uint32_t w : it->second) SetRunnable(threads_[w]);
        flag_waiters_.erase(it);
      }
      Advance(th);
      return;
    }
    case OpKind::kAwait:
      Record(Ev::kAwait, th.g, 0, op.id, 0, flags_.count(op.id) ? 0 : 1);
      if (flags_.count(op.id)) {
        Elsewhere(th, false);
        Advance(th);
      } else {
        ClearRunnable(th);
        th.state = State::kAwaiting;
        flag_waiters_[op.id].push_back(th.g);
        Elsewhere(th, true);
      }
      return;
    case OpKind::kProbe: {
      ProbeRecord probe{op.id, th.g, step_, {}};
      for (const auto& node : nodes_) probe.stats.push_back(node->stats());
      result_.probes.push_back(std::move(probe));
      Advance(th);
      return;
    }
    case OpKind::kSpawn:
    case OpKind::kExit:
    case OpKind::kJoin:
      StepLife(th, op);
      return;
  }
}

void World::DeliverOneSided(Pair p, Event& e) {
  const bool lock = e.kind == EventKind::kLockSwap || e.kind == EventKind::kLockSwapped;
  Record(Ev::kOneSided, p.from, p.to, lock ? e.lock : e.page, 0, static_cast<uint8_t>(e.kind));
  if (config_.record_deliveries) {
    DeliveryRecord d;
    d.step = step_;
    d.from = p.from;
    d.to = p.to;
    d.kind = e.kind;
    d.page = e.page;
    d.lock = e.lock;
    d.bytes = e.bytes.size();
    result_.deliveries.push_back(d);
  }
  ++result_.nic_ops;
  SimHost& target = *hosts_[p.to];
  Status s;
  switch (e.kind) {
    case EventKind::kRead: {
      Event done;
      target.ServeRead(e.page, e.count, e.stride, e.mark, &done);
      done.landing = e.landing;
      network_.Post(p.to, p.from, std::move(done));
      break;
    }
    case EventKind::kReadDone:
      target.set_completing_read(true);
      if (e.landing != nullptr) std::memcpy(e.landing, e.bytes.data(), e.bytes.size());
      s = nodes_[p.to]->OnPageRead(p.from, e.page, e.stride, e.times,
                                   e.landing ? std::span<const uint8_t>(e.landing, e.bytes.size()) : e.bytes);
      target.set_completing_read(false);
      break;
    case EventKind::kWriteDiff:
      target.ServeWriteDiff(p.from, e);
      poll_due_[p.to] = 1;
      break;
    case EventKind::kDeposit:
      target.ServeDeposit(p.from, std::move(e.notice));
      poll_due_[p.to] = 1;
      break;
    case EventKind::kLockSwap: {
      Event done;
      done.kind = EventKind::kLockSwapped;
      done.lock = e.lock;
      done.node = target.ServeLockSwap(p.from, e.lock);
      network_.Post(p.to, p.from, std::move(done));
      break;
    }
    case EventKind::kLockSwapped:
      s = nodes_[p.to]->OnNicLockTail(e.lock, e.node);
      break;
    case EventKind::kHomeClaim: {
      Event done;
      target.ServeHomeClaim(p.from, e.page, e.count, e.ahead, &done);
      network_.Post(p.to, p.from, std::move(done));
      break;
    }
    case EventKind::kHomeClaimed:
      s = nodes_[p.to]->OnHomeClaimed(e.page, e.word, e.words);
      break;
    case EventKind::kDropMarks:
      target.ServeDropMarks(p.from, e.words);
      break;
    case EventKind::kMessage:
      break;
  }
  if (!s.ok()) {
    Fail(Failure::kProtocolError, "node " + std::to_string(p.to) + " rejected a " +
                                      ToString(e.kind) + " from " + std::to_string(p.from) +
                                      ": " + s.ToString());
    return;
  }
  CheckContract();
}

bool World::GiveUpGathers() {
  bool any = false;
  for (NodeId n = 0; n < config_.nodes; ++n) {
    if (!nodes_[n]->Gathering()) continue;
    nodes_[n]->ReportGathered();
    Record(Ev::kGiveUp, n, 0, 0, 0, 0);
    any = true;
  }
  if (any) CheckContract();
  return any;
}

void World::PollNode(NodeId n) {
  poll_due_[n] = 0;
  ++result_.polls;
  nodes_[n]->Poll();
  Record(Ev::kPoll, n, 0, 0, 0, nodes_[n]->NeedsPoll() ? 1 : 0);
  CheckContract();
}

void World::Deliver(Pair p) {
  Event e = network_.Pop(p);
  if (e.kind != EventKind::kMessage) {
    DeliverOneSided(p, e);
    return;
  }
  std::vector<uint8_t>& bytes = e.bytes;
  wire::Header header;
  const bool header_ok = wire::DecodeHeader(bytes, &header).ok();
  Record(Ev::kDeliver, p.from, p.to, header_ok ? static_cast<uint64_t>(header.type) : 0,
         bytes.size());
  if (config_.record_deliveries) {
    DeliveryRecord d;
    d.step = step_;
    d.from = p.from;
    d.to = p.to;
    d.type = header.type;
    d.bytes = bytes.size();
    Message m;
    if (wire::Decode(bytes, kEpoch, config_.nodes, &m).ok()) {
      d.page = PageOfMessage(m);
      std::tie(d.notices, d.notice_pages) = NoticesOf(m);
    }
    result_.deliveries.push_back(d);
  }
  ++result_.messages;
  const Status s = nodes_[p.to]->Receive(p.from, bytes);
  if (!s.ok()) {
    Fail(Failure::kProtocolError, "node " + std::to_string(p.to) + " rejected a message from " +
                                      std::to_string(p.from) + ": " + s.ToString());
    return;
  }
  CheckContract();
}

void World::FinalChecks() {
  const uint64_t ps = config_.page_size;
  std::optional<HomeMap> homes;
  if (config_.home_policy != HomePolicy::kFirstTouch) {
    Geometry geometry;
    geometry.page_size = ps;
    geometry.pages = config_.pages;
    geometry.nodes = config_.nodes;
    homes.emplace(geometry, config_.home_policy, config_.cyclic_block);
  }
  // First touch from rf on: the homes are in the managers' home words.
  std::optional<HomeMap> managers;
  if (config_.home_policy == HomePolicy::kFirstTouch && ReadsRemotely(config_.mode) && config_.nodes > 1) {
    Geometry geometry;
    geometry.page_size = ps;
    geometry.pages = config_.pages;
    geometry.nodes = config_.nodes;
    managers.emplace(geometry, config_.home_policy, 1, config_.max_run);
  }
  auto home_of = [&](PageId p) -> NodeId {
    if (homes) return homes->StaticHome(p);
    if (!managers) return kNoNode;
    const uint64_t w = hosts_[managers->Manager(p)]->home_word(p);
    return w == 0 ? kNoNode : NodeId(w - 1);
  };
  for (NodeId n = 0; n < config_.nodes; ++n) {
    for (PageId p = 0; p < config_.pages; ++p) {
      if (hosts_[n]->home_word(p) == 0 || (managers && managers->Manager(p) == n)) continue;
      Fail(Failure::kFinalState, "node " + std::to_string(n) + " page " + std::to_string(p) +
                                     ": a home word set at a node that does not manage the page");
      return;
    }
  }
  for (NodeId n = 0; n < config_.nodes; ++n) {
    const SimHost& host = *hosts_[n];
    for (PageId p = 0; p < config_.pages; ++p) {
      const std::span<const uint8_t> frame = host.PeekFrame(p);
      // Home frames (after the final barrier and a drained network) and every
      // copy the application may still read must hold the shadow's bytes.
      const bool readable = host.protection(p) != Prot::kNone;
      const bool home = home_of(p) == n;
      for (uint64_t off = 0; off < ps; ++off) {
        const uint64_t addr = p * ps + off;
        const uint8_t actual = frame.empty() ? 0 : frame[off];
        const int32_t var = shadow_.VarAt(addr);
        std::string what;
        if (var < 0) {
          if (actual != 0) what = "a byte outside every variable changed";
        } else if ((readable || home) && actual != shadow_.Expected(addr, 1)[0]) {
          what = std::string(home ? "home" : "readable") + " copy is stale: " +
                 shadow_.Explain(static_cast<uint32_t>(var), addr, {&actual, 1});
        }
        if (!what.empty()) {
          char buf[96];
          std::snprintf(buf, sizeof buf,
                        "node %u page %" PRIu64 " offset %" PRIu64 " (prot %s): ", n, p, off,
                        ToString(host.protection(p)));
          Fail(Failure::kFinalState, buf + what);
          return;
        }
      }
    }
  }
}

CaseResult World::Run() {
  const uint32_t total = config_.nodes * config_.threads;
  while (!failed_) {
    if (done_ == total && network_.in_flight() == 0) break;
    if (step_ >= max_steps_) {
      Fail(Failure::kStepLimit, "no end after " + std::to_string(step_) +
                                    " steps; threads not done:\n" + ThreadStates());
      break;
    }
    polls_.clear();
    std::string stuck;  // nodes that wait for a poll that would find nothing
    for (NodeId n = 0; n < config_.nodes && DepositsNotices(config_.mode); ++n) {
      if (!nodes_[n]->NeedsPoll()) continue;
      if (poll_due_[n])
        polls_.push_back(n);
      else
        stuck += " n" + std::to_string(n);
    }
    const Scheduler::Choice next = scheduler_.Next(network_, polls_);
    switch (next.kind) {
      case Scheduler::Choice::Kind::kThread:
        StepThread(threads_[next.thread]);
        break;
      case Scheduler::Choice::Kind::kDeliver:
        Deliver(next.pair);
        break;
      case Scheduler::Choice::Kind::kPoll:
        PollNode(next.node);
        break;
      case Scheduler::Choice::Kind::kNothing:
        // A barrier that holds arrivals back for a part of its last episode
        // that is not coming: the runtime gives up after kGatherNs.
        if (GiveUpGathers()) break;
        Fail(Failure::kDeadlock,
             "nothing can run and no message is in flight" +
                 (stuck.empty() ? std::string() : "; waiting for deposits or diffs:" + stuck) +
                 "; threads:\n" + ThreadStates());
        break;
    }
    ++step_;
  }
  if (!failed_) FinalChecks();
  result_.steps = step_;
  for (const auto& node : nodes_) {
    result_.node_stats.push_back(node->stats());
    AddStats(&result_.counters, node->stats());
    result_.notices_held += node->TEST_log().held();
  }
  if (!failed_) result_.ok = true;
  return std::move(result_);
}

}  // namespace svm::sim
