#include "nic_ext/transport.h"

#include <atomic>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "nic_ext/region_table.h"
#include "nic_ext/runs.h"
#include "util/masked_store.h"

namespace svm::nic {

const char* ToString(Opcode op) {
  switch (op) {
    case Opcode::kSend: return "SEND";
    case Opcode::kWrite: return "WRITE";
    case Opcode::kRead: return "READ";
    case Opcode::kCas: return "CAS";
    case Opcode::kFaa: return "FAA";
    case Opcode::kLock: return "LOCK";
    case Opcode::kUnlock: return "UNLOCK";
    case Opcode::kWriteRuns: return "WRITE_RUNS";
  }
  return "?";
}

bool IsValid(Opcode op) { return static_cast<uint8_t>(op) <= static_cast<uint8_t>(Opcode::kWriteRuns); }

const char* ToString(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess: return "success";
    case WcStatus::kRemoteAccessError: return "remote access error";
    case WcStatus::kRemoteInvalidRequest: return "remote invalid request";
    case WcStatus::kFlushed: return "flushed";
  }
  return "?";
}

uint64_t WorkRequest::Bytes() const {
  uint64_t n = 0;
  for (uint32_t i = 0; i < num_sge && i < kMaxSge; ++i) n += sge[i].length;
  return n;
}

namespace {
WorkRequest Base(Opcode op, NodeId peer, uint64_t wr_id) {
  WorkRequest wr;
  wr.op = op;
  wr.peer = peer;
  wr.wr_id = wr_id;
  return wr;
}
void SetSges(WorkRequest* wr, std::span<const Sge> sges) {
  wr->num_sge = static_cast<uint32_t>(sges.size());
  for (size_t i = 0; i < sges.size() && i < kMaxSge; ++i) wr->sge[i] = sges[i];
}
}  // namespace

WorkRequest WorkRequest::Send(NodeId peer, std::span<const Sge> sges, uint64_t wr_id) {
  WorkRequest wr = Base(Opcode::kSend, peer, wr_id);
  SetSges(&wr, sges);
  return wr;
}
WorkRequest WorkRequest::Write(NodeId peer, RegionId r, uint64_t off, std::span<const Sge> sges,
                               uint64_t wr_id) {
  WorkRequest wr = Base(Opcode::kWrite, peer, wr_id);
  SetSges(&wr, sges);
  wr.region = r;
  wr.offset = off;
  return wr;
}
WorkRequest WorkRequest::WriteRuns(NodeId peer, RegionId r, uint64_t off, std::span<const Sge> runs,
                                   uint64_t wr_id) {
  WorkRequest wr = Write(peer, r, off, runs, wr_id);
  wr.op = Opcode::kWriteRuns;
  return wr;
}
WorkRequest WorkRequest::Read(NodeId peer, RegionId r, uint64_t off, std::span<const Sge> sges,
                              uint64_t wr_id) {
  WorkRequest wr = Write(peer, r, off, sges, wr_id);
  wr.op = Opcode::kRead;
  return wr;
}
WorkRequest WorkRequest::Cas(NodeId peer, RegionId r, uint64_t off, uint64_t expected,
                             uint64_t desired, uint64_t wr_id) {
  WorkRequest wr = Base(Opcode::kCas, peer, wr_id);
  wr.region = r;
  wr.offset = off;
  wr.compare = expected;
  wr.operand = desired;
  return wr;
}
WorkRequest WorkRequest::Faa(NodeId peer, RegionId r, uint64_t off, uint64_t add,
                             uint64_t wr_id) {
  WorkRequest wr = Base(Opcode::kFaa, peer, wr_id);
  wr.region = r;
  wr.offset = off;
  wr.operand = add;
  return wr;
}
WorkRequest WorkRequest::Lock(NodeId peer, LockNo lock, uint64_t wr_id) {
  WorkRequest wr = Base(Opcode::kLock, peer, wr_id);
  wr.lock = lock;
  return wr;
}
WorkRequest WorkRequest::Unlock(NodeId peer, LockNo lock, uint64_t wr_id) {
  WorkRequest wr = Base(Opcode::kUnlock, peer, wr_id);
  wr.lock = lock;
  return wr;
}

Status Nic::Validate(const WorkRequest& wr) const {
  if (!IsValid(wr.op)) return Status::InvalidArgument("unknown opcode");
  if (!Supports(wr.op)) return Status::InvalidArgument(fmt::format("{}: not offered by this NIC", ToString(wr.op)));
  if (wr.peer >= num_nodes_) {
    return Status::InvalidArgument(fmt::format("{}: peer {} of {} nodes", ToString(wr.op),
                                               wr.peer, num_nodes_));
  }
  if (wr.num_sge > kMaxSge) {
    return Status::InvalidArgument(fmt::format("{}: {} sges > {}", ToString(wr.op), wr.num_sge,
                                               kMaxSge));
  }
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    if (wr.sge[i].addr == nullptr && wr.sge[i].length != 0) {
      return Status::InvalidArgument(fmt::format("{}: sge {} is null", ToString(wr.op), i));
    }
  }
  const uint64_t bytes = wr.Bytes();
  switch (wr.op) {
    case Opcode::kSend:
      if (bytes > kMaxMessage) return Status::InvalidArgument("SEND larger than kMaxMessage");
      break;
    case Opcode::kWrite:
    case Opcode::kWriteRuns:
    case Opcode::kRead:
      if (bytes > kMaxTransfer) {
        return Status::InvalidArgument(fmt::format("{} of {} bytes > kMaxTransfer",
                                                   ToString(wr.op), bytes));
      }
      break;
    case Opcode::kCas:
    case Opcode::kFaa:
      if (wr.num_sge != 0) return Status::InvalidArgument("atomics take no sges");
      break;
    case Opcode::kLock:
    case Opcode::kUnlock:
      if (wr.num_sge != 0) return Status::InvalidArgument("locks take no sges");
      if (wr.lock >= kMaxLocks) return Status::InvalidArgument("lock id >= kMaxLocks");
      break;
  }
  return Status::Ok();
}

void RegionTable::Serve(const WorkRequest& wr, Completion* c) const {
  if (wr.op == Opcode::kCas || wr.op == Opcode::kFaa) {
    uint64_t* word = FindWord(wr.region, wr.offset);
    if (word == nullptr) {
      c->status = WcStatus::kRemoteAccessError;
      return;
    }
    std::atomic_ref<uint64_t> a(*word);
    if (wr.op == Opcode::kCas) {
      uint64_t expected = wr.compare;
      a.compare_exchange_strong(expected, wr.operand);
      c->value = expected;
    } else {
      c->value = a.fetch_add(wr.operand);
    }
    return;
  }
  const uint64_t bytes = wr.Bytes();
  if (wr.op == Opcode::kWriteRuns) {
    if (wr.num_sge == 1) {
      c->status = StoreRuns(wr.region, wr.offset, {static_cast<const uint8_t*>(wr.sge[0].addr), wr.sge[0].length});
    } else {  // rare: the encoding gathered from pieces
      std::vector<uint8_t> runs;
      runs.reserve(bytes);
      for (uint32_t i = 0; i < wr.num_sge; ++i) {
        auto* p = static_cast<const uint8_t*>(wr.sge[i].addr);
        if (wr.sge[i].length != 0) runs.insert(runs.end(), p, p + wr.sge[i].length);
      }
      c->status = StoreRuns(wr.region, wr.offset, runs);
    }
    if (c->status == WcStatus::kSuccess) c->byte_len = static_cast<uint32_t>(bytes);
    return;
  }
  uint8_t* remote = Find(wr.region, wr.offset, bytes);
  if (remote == nullptr) {
    c->status = WcStatus::kRemoteAccessError;
    return;
  }
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    const Sge& s = wr.sge[i];
    if (s.length == 0) continue;  // its address may be null
    if (wr.op == Opcode::kWrite) {
      std::memmove(remote, s.addr, s.length);
    } else {
      std::memmove(s.addr, remote, s.length);
    }
    remote += s.length;
  }
  c->byte_len = static_cast<uint32_t>(bytes);
}

WcStatus RegionTable::StoreRuns(RegionId id, uint64_t offset, std::span<const uint8_t> runs) const {
  const WcStatus verdict =
      CheckRuns(runs, offset, [&](uint64_t at, uint64_t len) { return Find(id, at, len) != nullptr; });
  if (verdict != WcStatus::kSuccess) return verdict;  // nothing stored
  if (IsMasked(runs)) {
    const MaskedBlock b = TheMaskedBlock(runs);
    util::StoreMasked(Find(id, offset + b.offset, b.length), b.masks, b.bytes, b.length / 64);
    return WcStatus::kSuccess;
  }
  for (size_t at = 0; at != runs.size();) {
    const Run r = NextRun(runs, &at);
    std::memcpy(Find(id, offset + r.offset, r.bytes.size()), r.bytes.data(), r.bytes.size());
  }
  return WcStatus::kSuccess;
}

Status RegionTable::Add(const MemoryRegion& r) {
  if (r.id >= kMaxRegions) return Status::InvalidArgument(fmt::format("region id {} >= {}", r.id, kMaxRegions));
  if (r.base == nullptr || r.length == 0) return Status::InvalidArgument("empty region");
  if (used_[r.id]) return Status::InvalidArgument(fmt::format("region id {} registered twice", r.id));
  regions_[r.id] = r;
  used_[r.id] = true;
  return Status::Ok();
}

}  // namespace svm::nic
