#include "tests/sim/sim_program.h"

#include <cassert>
#include <cinttypes>
#include <cstdio>
#include <set>

namespace svm::sim {

const char* ToString(VarClass c) {
  switch (c) {
    case VarClass::kLocked:
      return "locked";
    case VarClass::kOwned:
      return "owned";
    case VarClass::kCounter:
      return "counter";
  }
  return "?";
}

const char* ToString(OpKind k) {
  switch (k) {
    case OpKind::kAcquire:
      return "Acquire";
    case OpKind::kRelease:
      return "Release";
    case OpKind::kRead:
      return "Read";
    case OpKind::kWrite:
      return "Write";
    case OpKind::kAdd:
      return "Add";
    case OpKind::kBarrier:
      return "Barrier";
    case OpKind::kSignal:
      return "Signal";
    case OpKind::kAwait:
      return "Await";
    case OpKind::kProbe:
      return "Probe";
    case OpKind::kSpawn:
      return "Spawn";
    case OpKind::kExit:
      return "Exit";
    case OpKind::kJoin:
      return "Join";
  }
  return "?";
}

std::string ToString(const Op& op) {
  char buf[160];
  switch (op.kind) {
    case OpKind::kRead:
      std::snprintf(buf, sizeof buf, "Read(var %u @0x%" PRIx64 " len %u)", op.var, op.addr, op.len);
      break;
    case OpKind::kWrite:
      std::snprintf(buf, sizeof buf, "Write(var %u @0x%" PRIx64 " len %u value 0x%016" PRIx64 ")",
                    op.var, op.addr, op.len, op.value);
      break;
    case OpKind::kAdd:
      std::snprintf(buf, sizeof buf, "Add(var %u @0x%" PRIx64 " len %u delta %" PRIu64 ")", op.var,
                    op.addr, op.len, op.value);
      break;
    case OpKind::kBarrier:
      std::snprintf(buf, sizeof buf, "Barrier(%" PRIu64 " total %u local %u)", op.id, op.total,
                    op.local);
      break;
    default:
      std::snprintf(buf, sizeof buf, "%s(%" PRIu64 ")", ToString(op.kind), op.id);
      break;
  }
  return buf;
}

std::vector<bool> Program::Dormant() const {
  std::vector<bool> dormant(thread_count(), false);
  for (const auto& list : ops)
    for (const Op& op : list)
      if (op.kind == OpKind::kSpawn && op.id < dormant.size()) dormant[op.id] = true;
  return dormant;
}

size_t Program::op_count() const {
  size_t n = 0;
  for (const auto& list : ops) n += list.size();
  return n;
}

std::vector<Program::Episode> Program::BarrierEpisodes() const {
  std::vector<std::vector<const Op*>> next(thread_count());  // each thread's barriers, in order
  for (uint32_t g = 0; g < thread_count(); ++g)
    for (const Op& op : ops[g])
      if (op.kind == OpKind::kBarrier) next[g].push_back(&op);
  std::vector<size_t> at(thread_count(), 0);
  std::vector<Episode> episodes;
  size_t left = 0;
  for (const auto& n : next) left += n.size();
  while (left > 0) {
    bool formed = false;
    for (uint32_t g = 0; g < thread_count() && !formed; ++g) {
      if (at[g] == next[g].size()) continue;
      const Op& op = *next[g][at[g]];
      Episode e{op.id, {}};
      for (uint32_t h = 0; h < thread_count(); ++h)
        if (at[h] < next[h].size() && next[h][at[h]]->id == op.id) e.threads.push_back(h);
      if (e.threads.size() != op.total) continue;
      for (uint32_t h : e.threads) ++at[h];
      left -= e.threads.size();
      episodes.push_back(std::move(e));
      formed = true;
    }
    if (!formed) return {};
  }
  return episodes;
}

Status Program::Validate() const {
  if (nodes == 0 || threads == 0 || pages == 0 || page_size == 0) {
    return Status::InvalidArgument("empty geometry");
  }
  if (ops.size() != thread_count()) return Status::InvalidArgument("ops per thread missing");
  std::vector<int32_t> owner(region_bytes(), -1);
  for (size_t v = 0; v < vars.size(); ++v) {
    const Var& var = vars[v];
    if (var.len < 1 || var.len > 8 || var.addr + var.len > region_bytes()) {
      return Status::OutOfRange("variable " + std::to_string(v) + " outside the region");
    }
    for (uint64_t a = var.addr; a < var.addr + var.len; ++a) {
      if (owner[a] >= 0) {
        return Status::InvalidArgument("variables " + std::to_string(owner[a]) + " and " +
                                       std::to_string(v) + " overlap");
      }
      owner[a] = static_cast<int32_t>(v);
    }
  }
  std::set<uint64_t> spawned;
  auto exits = [&](uint64_t t) { return !ops[t].empty() && ops[t].back().kind == OpKind::kExit; };
  for (uint32_t g = 0; g < thread_count(); ++g) {
    std::set<LockId> held;
    for (size_t i = 0; i < ops[g].size(); ++i) {
      const Op& op = ops[g][i];
      const std::string where = "thread " + std::to_string(g) + " op " + std::to_string(i);
      switch (op.kind) {
        case OpKind::kRead:
        case OpKind::kWrite:
        case OpKind::kAdd:
          if (op.var >= vars.size() || vars[op.var].addr != op.addr || vars[op.var].len != op.len) {
            return Status::InvalidArgument(where + ": data op does not match its variable");
          }
          break;
        case OpKind::kAcquire:
          if (!held.insert(op.id).second) {
            return Status::InvalidArgument(where + ": acquires a lock it holds");
          }
          break;
        case OpKind::kRelease:
          if (held.erase(op.id) == 0) {
            return Status::InvalidArgument(where + ": releases a lock it does not hold");
          }
          break;
        case OpKind::kBarrier:
          if (op.total == 0 || op.local == 0 || op.local > threads || op.total < op.local) {
            return Status::InvalidArgument(where + ": bad barrier counts");
          }
          break;
        case OpKind::kSpawn:
          if (op.id >= thread_count() || op.id == g || !spawned.insert(op.id).second) {
            return Status::InvalidArgument(where + ": spawns itself, no thread or one spawned twice");
          }
          break;
        case OpKind::kExit:
          if (i + 1 != ops[g].size()) return Status::InvalidArgument(where + ": Exit is not last");
          break;
        case OpKind::kJoin:
          if (op.id >= thread_count() || op.id == g || !exits(op.id)) {
            return Status::InvalidArgument(where + ": joins itself or a thread that never exits");
          }
          break;
        default:
          break;
      }
    }
    if (!held.empty()) {
      return Status::InvalidArgument("thread " + std::to_string(g) + " ends holding a lock");
    }
  }
  return Status::Ok();
}

uint64_t UniqueValue(uint64_t salt, uint32_t g, size_t index) {
  // splitmix64 finaliser over an injective packing of (g, index): distinct
  // inputs give distinct 64-bit values.
  uint64_t z = salt + ((static_cast<uint64_t>(g) << 40) ^ static_cast<uint64_t>(index));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

ProgramBuilder::ProgramBuilder(uint32_t nodes, uint32_t threads, uint64_t pages,
                               uint64_t page_size) {
  program_.nodes = nodes;
  program_.threads = threads;
  program_.pages = pages;
  program_.page_size = page_size;
  program_.ops.resize(static_cast<size_t>(nodes) * threads);
}

uint32_t ProgramBuilder::AddVar(uint64_t addr, uint32_t len, VarClass cls, LockId lock) {
  assert(len >= 1 && len <= 8 && addr + len <= program_.region_bytes());
  program_.vars.push_back(Var{addr, len, cls, lock});
  return static_cast<uint32_t>(program_.vars.size() - 1);
}

Op ProgramBuilder::DataOp(OpKind kind, uint32_t var) const {
  assert(var < program_.vars.size());
  Op op;
  op.kind = kind;
  op.var = var;
  op.addr = program_.vars[var].addr;
  op.len = program_.vars[var].len;
  return op;
}

void ProgramBuilder::Acquire(uint32_t g, LockId l) {
  Op op;
  op.kind = OpKind::kAcquire;
  op.id = l;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Release(uint32_t g, LockId l) {
  Op op;
  op.kind = OpKind::kRelease;
  op.id = l;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Read(uint32_t g, uint32_t var) {
  program_.ops[g].push_back(DataOp(OpKind::kRead, var));
}

void ProgramBuilder::Write(uint32_t g, uint32_t var) {
  WriteValue(g, var, UniqueValue(salt_, g, program_.ops[g].size()));
}

void ProgramBuilder::WriteValue(uint32_t g, uint32_t var, uint64_t value) {
  Op op = DataOp(OpKind::kWrite, var);
  op.value = value;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Add(uint32_t g, uint32_t var, uint64_t delta) {
  Op op = DataOp(OpKind::kAdd, var);
  op.value = delta;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Barrier(uint32_t g, BarrierId b) {
  BarrierOf(g, b, program_.thread_count(), program_.threads);
}

void ProgramBuilder::BarrierOf(uint32_t g, BarrierId b, uint32_t total, uint32_t local) {
  Op op;
  op.kind = OpKind::kBarrier;
  op.id = b;
  op.total = total;
  op.local = local;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::BarrierAll(BarrierId b) {
  for (uint32_t g = 0; g < program_.thread_count(); ++g) Barrier(g, b);
}

void ProgramBuilder::Signal(uint32_t g, uint64_t flag) {
  Op op;
  op.kind = OpKind::kSignal;
  op.id = flag;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Await(uint32_t g, uint64_t flag) {
  Op op;
  op.kind = OpKind::kAwait;
  op.id = flag;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Probe(uint32_t g, uint64_t probe) {
  Op op;
  op.kind = OpKind::kProbe;
  op.id = probe;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Spawn(uint32_t g, uint32_t target) {
  Op op;
  op.kind = OpKind::kSpawn;
  op.id = target;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Exit(uint32_t g) {
  Op op;
  op.kind = OpKind::kExit;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::Join(uint32_t g, uint32_t target) {
  Op op;
  op.kind = OpKind::kJoin;
  op.id = target;
  program_.ops[g].push_back(op);
}

void ProgramBuilder::FinalCheck(BarrierId b) {
  BarrierAll(b);
  for (NodeId n = 0; n < program_.nodes; ++n) {
    for (uint32_t v = 0; v < program_.vars.size(); ++v) Read(G(n, 0), v);
  }
}

}  // namespace svm::sim
