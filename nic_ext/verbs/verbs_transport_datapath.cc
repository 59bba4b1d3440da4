// Verbs transport, datapath: WRs mapped to ibv_post_send, the completion
// thread, and the ticket-lock state machine.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/verbs/verbs_nic_impl.h"

namespace svm::nic {

ibv_mr* VerbsNicImpl::LocalMr(const void* addr, size_t len) const {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  for (ibv_mr* mr : mrs_) {
    if (mr == nullptr) continue;
    const auto base = reinterpret_cast<uintptr_t>(mr->addr);
    if (a >= base && len <= mr->length && a - base <= mr->length - len) return mr;
  }
  return nullptr;
}

void VerbsNicImpl::Finish(uint32_t slot, WcStatus st, uint64_t value) {
  Pending& p = slots_[slot];
  if (st != WcStatus::kSuccess || p.signaled) {
    Completion c;
    c.wr_id = p.wr_id;
    c.op = p.op;
    c.status = st;
    c.peer = p.peer;
    c.byte_len = p.bytes;
    c.value = value;
    p.cq->Push(c);
  }
  p.used = false;
  free_.push_back(slot);
}

int VerbsNicImpl::PostAtomic(NodeId peer, uint32_t slot, ibv_wr_opcode op, const Remote& r,
                             uint64_t off, uint64_t compare_add, uint64_t swap) {
  ibv_sge sge{reinterpret_cast<uint64_t>(&atomic_results_[slot]), 8, atomic_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = slot;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.atomic.remote_addr = r.addr + off;
  wr.wr.atomic.rkey = r.rkey;
  wr.wr.atomic.compare_add = compare_add;
  wr.wr.atomic.swap = swap;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(peers_[peer].qp, &wr, &bad);
}

int VerbsNicImpl::PostReadWord(NodeId peer, uint32_t slot, const Remote& r, uint64_t off) {
  ibv_sge sge{reinterpret_cast<uint64_t>(&atomic_results_[slot]), 8, atomic_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = slot;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = r.addr + off;
  wr.wr.rdma.rkey = r.rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(peers_[peer].qp, &wr, &bad);
}

Status VerbsNicImpl::Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) {
  if (!started_) return Status::InvalidArgument("Post before Connect");
  for (const WorkRequest& wr : wrs) {
    if (Status s = Validate(wr); !s.ok()) return s;
    if (wr.peer == self()) return Status::Unsupported("verbs skeleton: WRs to this node itself");
    if (wr.op == Opcode::kSend && wr.Bytes() > kVerbsMaxMessage) return Status::InvalidArgument("SEND > kVerbsMaxMessage");
    if ((wr.op == Opcode::kLock || wr.op == Opcode::kUnlock) && wr.lock >= kVerbsMaxLocks) {
      return Status::InvalidArgument("lock id >= kVerbsMaxLocks");
    }
    for (uint32_t i = 0; i < wr.num_sge; ++i) {
      if (wr.sge[i].length != 0 && LocalMr(wr.sge[i].addr, wr.sge[i].length) == nullptr) {
        return Status::InvalidArgument("verbs: local buffer outside the registered regions");
      }
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  if (wrs.size() > free_.size()) return Status::OutOfRange("too many requests outstanding");
  for (const WorkRequest& wr : wrs) {
    if (Status s = PostOne(cq, wr); !s.ok()) return s;
  }
  return Status::Ok();
}

Status VerbsNicImpl::PostOne(CompletionQueue* cq, const WorkRequest& wr) {
  const uint32_t slot = free_.back();
  free_.pop_back();
  Pending& p = slots_[slot];
  p = Pending{true, wr.wr_id, wr.op, wr.peer, wr.signaled, cq, static_cast<uint32_t>(wr.Bytes()),
              LockStep::kNone, 0, wr.lock};
  Peer& peer = peers_[wr.peer];
  if (!peer.alive) {
    Finish(slot, WcStatus::kFlushed, 0);
    return Status::Ok();
  }
  // Remote bounds are checked here against the peer's table (the HCA checks
  // again against the rkey); a bad access completes with an error.
  auto remote_ok = [&](uint64_t len) {
    const Remote& r = peer.regions[wr.region < kMaxRegions ? wr.region : 0];
    return wr.region < kMaxRegions && r.used && wr.offset <= r.length && len <= r.length - wr.offset;
  };
  int rc = 0;
  switch (wr.op) {
    case Opcode::kSend:
    case Opcode::kWrite:
    case Opcode::kRead: {
      if (wr.op != Opcode::kSend && !remote_ok(wr.Bytes())) {
        Finish(slot, WcStatus::kRemoteAccessError, 0);
        return Status::Ok();
      }
      std::array<ibv_sge, kMaxSge> sges{};
      for (uint32_t i = 0; i < wr.num_sge; ++i) {
        ibv_mr* mr = LocalMr(wr.sge[i].addr, wr.sge[i].length);
        sges[i] = {reinterpret_cast<uint64_t>(wr.sge[i].addr), wr.sge[i].length, mr ? mr->lkey : 0};
      }
      ibv_send_wr s{};
      s.wr_id = slot;
      s.opcode = wr.op == Opcode::kSend ? IBV_WR_SEND : wr.op == Opcode::kWrite ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
      s.send_flags = IBV_SEND_SIGNALED;
      s.sg_list = sges.data();
      s.num_sge = static_cast<int>(wr.num_sge);
      if (wr.op != Opcode::kSend) {
        s.wr.rdma.remote_addr = peer.regions[wr.region].addr + wr.offset;
        s.wr.rdma.rkey = peer.regions[wr.region].rkey;
      }
      ibv_send_wr* bad = nullptr;
      rc = ibv_post_send(peer.qp, &s, &bad);
      break;
    }
    case Opcode::kCas:
    case Opcode::kFaa:
      if (!remote_ok(kAtomicBytes) || (peer.regions[wr.region].addr + wr.offset) % kAtomicBytes != 0) {
        Finish(slot, WcStatus::kRemoteAccessError, 0);
        return Status::Ok();
      }
      rc = PostAtomic(wr.peer, slot,
                      wr.op == Opcode::kCas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD,
                      peer.regions[wr.region], wr.offset, wr.op == Opcode::kCas ? wr.compare : wr.operand,
                      wr.operand);
      break;
    case Opcode::kLock:
      p.step = LockStep::kTicket;
      rc = PostAtomic(wr.peer, slot, IBV_WR_ATOMIC_FETCH_AND_ADD, peer.locks, wr.lock * kLockWordBytes, 1, 0);
      break;
    case Opcode::kUnlock:
      // Not checked against the owner: the ticket lock has no owner record.
      rc = PostAtomic(wr.peer, slot, IBV_WR_ATOMIC_FETCH_AND_ADD, peer.locks, wr.lock * kLockWordBytes + 8, 1, 0);
      break;
    case Opcode::kWriteRuns:  // not offered (Supports): Validate refused it
      rc = EINVAL;
      break;
  }
  if (rc != 0) {
    free_.push_back(slot);
    p.used = false;
    return Status::OutOfRange(fmt::format("ibv_post_send: {}", std::strerror(rc)));
  }
  return Status::Ok();
}

void VerbsNicImpl::HandleWc(const ibv_wc& wc) {
  if (wc.wr_id & kVerbsRecvFlag) {
    const size_t index = wc.wr_id & ~kVerbsRecvFlag;
    const NodeId from = static_cast<NodeId>(index / kVerbsRecvDepth);
    if (wc.status != IBV_WC_SUCCESS) return;  // flushed: the QP is going down
    uint8_t* buf = recv_slab_.data() + index * kVerbsMaxMessage;
    Message m;
    m.from = from;
    m.bytes.assign(buf, buf + wc.byte_len);
    recv_queue().Push(std::move(m));
    ibv_sge sge{reinterpret_cast<uint64_t>(buf), kVerbsMaxMessage, recv_mr_->lkey};
    ibv_recv_wr rw{};
    rw.wr_id = wc.wr_id;
    rw.sg_list = &sge;
    rw.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ibv_post_recv(peers_[from].qp, &rw, &bad);
    return;
  }
  if (wc.wr_id >= slots_.size()) return;  // setup traffic
  const auto slot = static_cast<uint32_t>(wc.wr_id);
  Pending& p = slots_[slot];
  if (!p.used) return;
  if (wc.status != IBV_WC_SUCCESS) {
    spdlog::error("nic {}: {} to node {}: {}", self(), ToString(p.op), p.peer, ibv_wc_status_str(wc.status));
    Finish(slot, wc.status == IBV_WC_REM_ACCESS_ERR ? WcStatus::kRemoteAccessError : WcStatus::kFlushed, 0);
    return;
  }
  const uint64_t word = atomic_results_[slot];
  if (p.op == Opcode::kLock) {
    Peer& peer = peers_[p.peer];
    if (p.step == LockStep::kTicket) {
      p.ticket = word;
      p.step = LockStep::kPolling;
    } else if (word == p.ticket) {
      Finish(slot, WcStatus::kSuccess, 0);
      return;
    }
    if (PostReadWord(p.peer, slot, peer.locks, p.lock * kLockWordBytes + 8) != 0) {
      Finish(slot, WcStatus::kFlushed, 0);
    }
    return;
  }
  Finish(slot, WcStatus::kSuccess, (p.op == Opcode::kCas || p.op == Opcode::kFaa) ? word : 0);
}

void VerbsNicImpl::CompletionLoop() {
  pthread_setname_np(pthread_self(), "svm-nic-verbs");
  ibv_req_notify_cq(cq_, 0);
  while (!stop_.load()) {
    ibv_wc wc[32];
    int n = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      n = ibv_poll_cq(cq_, 32, wc);
      for (int i = 0; i < n; ++i) HandleWc(wc[i]);
    }
    if (n > 0) continue;
    // Nothing: arm the notification, re-poll once (a completion may have
    // raced the arming), then sleep on the channel or the stop eventfd.
    ibv_req_notify_cq(cq_, 0);
    {
      std::lock_guard<std::mutex> l(mu_);
      n = ibv_poll_cq(cq_, 32, wc);
      for (int i = 0; i < n; ++i) HandleWc(wc[i]);
    }
    if (n > 0) continue;
    pollfd pfd[2] = {{comp_channel_->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(pfd, 2, -1) <= 0 || (pfd[1].revents & POLLIN)) continue;
    ibv_cq* ev_cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(comp_channel_, &ev_cq, &ctx) == 0) ibv_ack_cq_events(ev_cq, 1);
  }
}

}  // namespace svm::nic
