// Verbs transport, control path: device probe, PD/CQ/MRs, rdma_cm connection
// setup (node i dials every j < i; the private data is a hello), and the
// exchange of region tables (addr, rkey, length per region id) over the
// first SEND of each QP.
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/verbs/verbs_nic_impl.h"
#include "util/coding.h"

namespace svm::nic {
namespace {

struct Hello {
  uint32_t node;
  uint32_t num_nodes;
  uint32_t epoch;
};

std::string Err(const char* what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

Status Resolve(const std::string& address, addrinfo** out) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument(fmt::format("'{}' is not host:port", address));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints, out) != 0) {
    return Status::InvalidArgument(fmt::format("cannot resolve '{}'", address));
  }
  return Status::Ok();
}

}  // namespace

Status ProbeRdmaDevice() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return Status::Unsupported(Err("ibv_get_device_list"));
  ibv_free_device_list(list);
  if (n == 0) return Status::Unsupported("no RDMA device");
  return Status::Ok();
}

Status VerbsNic::Create(const VerbsOptions& options, std::unique_ptr<VerbsNic>* out) {
  auto nic = std::make_unique<VerbsNicImpl>(options);
  if (Status s = nic->Init(); !s.ok()) return s;
  *out = std::move(nic);
  return Status::Ok();
}

VerbsNicImpl::VerbsNicImpl(const VerbsOptions& o) : VerbsNic(o.self, o.num_nodes, o.recv_policy), opt_(o) {}

VerbsNicImpl::~VerbsNicImpl() {
  Shutdown();
  for (Peer& p : peers_) {
    if (p.qp != nullptr) rdma_destroy_qp(p.id);
    if (p.id != nullptr) rdma_destroy_id(p.id);
    if (p.channel != nullptr) rdma_destroy_event_channel(p.channel);
  }
  for (ibv_mr* mr : {recv_mr_, atomic_mr_, lock_mr_, table_mr_}) {
    if (mr != nullptr) ibv_dereg_mr(mr);
  }
  for (ibv_mr* mr : mrs_) {
    if (mr != nullptr) ibv_dereg_mr(mr);
  }
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (comp_channel_ != nullptr) ibv_destroy_comp_channel(comp_channel_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  if (listen_channel_ != nullptr) rdma_destroy_event_channel(listen_channel_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

Status VerbsNicImpl::Init() {
  if (opt_.num_nodes == 0 || opt_.num_nodes > kMaxNodes || opt_.self >= opt_.num_nodes) {
    return Status::InvalidArgument("bad node id or count");
  }
  if (Status s = ProbeRdmaDevice(); !s.ok()) return s;
  peers_.resize(opt_.num_nodes);
  mrs_.assign(kMaxRegions, nullptr);
  slots_.resize(kMaxOutstanding);
  for (uint32_t i = kMaxOutstanding; i-- > 0;) free_.push_back(i);
  atomic_results_.assign(kMaxOutstanding, 0);
  lock_words_.assign(size_t{kVerbsMaxLocks} * kLockWordBytes / 8, 0);
  recv_slab_.resize(size_t{opt_.num_nodes} * kVerbsRecvDepth * kVerbsMaxMessage);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

  listen_channel_ = rdma_create_event_channel();
  if (listen_channel_ == nullptr) return Status::Unsupported(Err("rdma_create_event_channel"));
  if (rdma_create_id(listen_channel_, &listen_id_, nullptr, RDMA_PS_TCP) != 0) {
    return Status::Unsupported(Err("rdma_create_id"));
  }
  addrinfo* ai = nullptr;
  if (Status s = Resolve(opt_.listen, &ai); !s.ok()) return s;
  int rc = rdma_bind_addr(listen_id_, ai->ai_addr);
  freeaddrinfo(ai);
  if (rc != 0 || rdma_listen(listen_id_, static_cast<int>(kMaxNodes)) != 0) {
    return Status::InvalidArgument(Err("rdma listen"));
  }
  listen_address_ = fmt::format("{}:{}", opt_.listen.substr(0, opt_.listen.rfind(':')),
                                ntohs(rdma_get_src_port(listen_id_)));
  return Status::Ok();
}

Status VerbsNicImpl::RegisterRegion(const MemoryRegion& r) {
  if (started_) return Status::InvalidArgument("RegisterRegion after Connect");
  return regions_.Add(r);  // registered with the HCA once the device is known
}

Status VerbsNicImpl::EnsureDevice(ibv_context* ctx) {
  if (pd_ != nullptr) {
    return ctx == ctx_ ? Status::Ok() : Status::Unsupported("peers reached through two devices");
  }
  ctx_ = ctx;
  pd_ = ibv_alloc_pd(ctx);
  comp_channel_ = pd_ != nullptr ? ibv_create_comp_channel(ctx) : nullptr;
  cq_ = comp_channel_ != nullptr ? ibv_create_cq(ctx, kVerbsCqDepth, nullptr, comp_channel_, 0) : nullptr;
  if (cq_ == nullptr) return Status::Unsupported(Err("PD/CQ"));
  const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                     IBV_ACCESS_REMOTE_ATOMIC;
  for (RegionId id = 0; id < kMaxRegions; ++id) {
    const MemoryRegion* r = regions_.Get(id);
    if (r == nullptr) continue;
    mrs_[id] = ibv_reg_mr(pd_, r->base, r->length, remote);
    if (mrs_[id] == nullptr) return Status::Unsupported(Err("ibv_reg_mr"));
  }
  recv_mr_ = ibv_reg_mr(pd_, recv_slab_.data(), recv_slab_.size(), IBV_ACCESS_LOCAL_WRITE);
  atomic_mr_ = ibv_reg_mr(pd_, atomic_results_.data(), atomic_results_.size() * 8, IBV_ACCESS_LOCAL_WRITE);
  lock_mr_ = ibv_reg_mr(pd_, lock_words_.data(), lock_words_.size() * 8, remote);
  if (recv_mr_ == nullptr || atomic_mr_ == nullptr || lock_mr_ == nullptr) {
    return Status::Unsupported(Err("ibv_reg_mr (internal)"));
  }
  // The region table this node sends: u32 count, then {u32 id, u32 rkey,
  // u64 addr, u64 length}; the lock region has id kMaxRegions.
  coding::Writer w(&table_buf_);
  w.PutU32(0);
  uint32_t count = 0;
  auto put = [&](uint32_t id, ibv_mr* mr) {
    w.PutU32(id);
    w.PutU32(mr->rkey);
    w.PutU64(reinterpret_cast<uint64_t>(mr->addr));
    w.PutU64(mr->length);
    ++count;
  };
  for (RegionId id = 0; id < kMaxRegions; ++id) {
    if (mrs_[id] != nullptr) put(id, mrs_[id]);
  }
  put(kMaxRegions, lock_mr_);
  w.PatchU32(0, count);
  table_mr_ = ibv_reg_mr(pd_, table_buf_.data(), table_buf_.size(), 0);
  return table_mr_ != nullptr ? Status::Ok() : Status::Unsupported(Err("ibv_reg_mr (table)"));
}

Status VerbsNicImpl::MakeQp(Peer& p) {
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_;
  attr.recv_cq = cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = kVerbsSendDepth;
  attr.cap.max_recv_wr = kVerbsRecvDepth;
  attr.cap.max_send_sge = kMaxSge;
  attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(p.id, pd_, &attr) != 0) return Status::Unsupported(Err("rdma_create_qp"));
  p.qp = p.id->qp;
  return Status::Ok();
}

Status VerbsNicImpl::PostRecvs(NodeId peer) {
  for (uint32_t i = 0; i < kVerbsRecvDepth; ++i) {
    const size_t index = size_t{peer} * kVerbsRecvDepth + i;
    ibv_sge sge{reinterpret_cast<uint64_t>(recv_slab_.data() + index * kVerbsMaxMessage),
                kVerbsMaxMessage, recv_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = kVerbsRecvFlag | index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(peers_[peer].qp, &wr, &bad) != 0) return Status::Unsupported(Err("ibv_post_recv"));
  }
  return Status::Ok();
}

Status VerbsNicImpl::WaitEvent(rdma_event_channel* ch, rdma_cm_event_type want, rdma_cm_event** out) {
  pollfd pfd{ch->fd, POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(opt_.setup_timeout.count())) <= 0) {
    return Status::InvalidArgument(fmt::format("timed out waiting for {}", rdma_event_str(want)));
  }
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return Status::InvalidArgument(Err("rdma_get_cm_event"));
  if (ev->event != want) {
    Status s = Status::InvalidArgument(fmt::format("got {} instead of {}", rdma_event_str(ev->event),
                                                   rdma_event_str(want)));
    rdma_ack_cm_event(ev);
    return s;
  }
  if (out != nullptr) {
    *out = ev;
  } else {
    rdma_ack_cm_event(ev);
  }
  return Status::Ok();
}

Status VerbsNicImpl::Dial(NodeId peer, const std::string& address) {
  Peer& p = peers_[peer];
  p.channel = rdma_create_event_channel();
  if (p.channel == nullptr || rdma_create_id(p.channel, &p.id, nullptr, RDMA_PS_TCP) != 0) {
    return Status::Unsupported(Err("rdma_create_id"));
  }
  addrinfo* ai = nullptr;
  if (Status s = Resolve(address, &ai); !s.ok()) return s;
  int rc = rdma_resolve_addr(p.id, nullptr, ai->ai_addr, 2000);
  freeaddrinfo(ai);
  if (rc != 0) return Status::InvalidArgument(Err("rdma_resolve_addr"));
  if (Status s = WaitEvent(p.channel, RDMA_CM_EVENT_ADDR_RESOLVED, nullptr); !s.ok()) return s;
  if (Status s = EnsureDevice(p.id->verbs); !s.ok()) return s;
  if (rdma_resolve_route(p.id, 2000) != 0) return Status::InvalidArgument(Err("rdma_resolve_route"));
  if (Status s = WaitEvent(p.channel, RDMA_CM_EVENT_ROUTE_RESOLVED, nullptr); !s.ok()) return s;
  if (Status s = MakeQp(p); !s.ok()) return s;
  if (Status s = PostRecvs(peer); !s.ok()) return s;
  Hello hello{self(), num_nodes(), opt_.epoch};
  rdma_conn_param param{};
  param.private_data = &hello;
  param.private_data_len = sizeof hello;
  param.responder_resources = 16;
  param.initiator_depth = 16;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (rdma_connect(p.id, &param) != 0) return Status::InvalidArgument(Err("rdma_connect"));
  if (Status s = WaitEvent(p.channel, RDMA_CM_EVENT_ESTABLISHED, nullptr); !s.ok()) return s;
  p.alive = true;
  return Status::Ok();
}

Status VerbsNicImpl::AcceptPeers() {
  uint32_t missing = num_nodes() - 1 - self();
  while (missing > 0) {
    rdma_cm_event* ev = nullptr;
    if (Status s = WaitEvent(listen_channel_, RDMA_CM_EVENT_CONNECT_REQUEST, &ev); !s.ok()) return s;
    Hello hello{};
    if (ev->param.conn.private_data_len >= sizeof hello) {
      std::memcpy(&hello, ev->param.conn.private_data, sizeof hello);
    }
    rdma_cm_id* id = ev->id;
    rdma_ack_cm_event(ev);
    if (hello.num_nodes != num_nodes() || hello.epoch != opt_.epoch || hello.node <= self() ||
        hello.node >= num_nodes() || peers_[hello.node].id != nullptr) {
      spdlog::error("nic {}: refusing an RDMA connection (hello node {} of {}, epoch {})", self(),
                    hello.node, hello.num_nodes, hello.epoch);
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
      continue;
    }
    Peer& p = peers_[hello.node];
    p.id = id;
    if (Status s = EnsureDevice(id->verbs); !s.ok()) return s;
    if (Status s = MakeQp(p); !s.ok()) return s;
    if (Status s = PostRecvs(hello.node); !s.ok()) return s;
    rdma_conn_param param{};
    param.responder_resources = 16;
    param.initiator_depth = 16;
    param.rnr_retry_count = 7;
    if (rdma_accept(id, &param) != 0) return Status::InvalidArgument(Err("rdma_accept"));
    if (Status s = WaitEvent(listen_channel_, RDMA_CM_EVENT_ESTABLISHED, nullptr); !s.ok()) return s;
    p.alive = true;
    --missing;
  }
  return Status::Ok();
}

Status VerbsNicImpl::ExchangeTables() {
  for (NodeId n = 0; n < num_nodes(); ++n) {
    if (n == self()) continue;
    ibv_sge sge{reinterpret_cast<uint64_t>(table_buf_.data()), static_cast<uint32_t>(table_buf_.size()),
                table_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kVerbsRecvFlag - 1;  // setup traffic
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(peers_[n].qp, &wr, &bad) != 0) return Status::Unsupported(Err("ibv_post_send"));
  }
  // Poll (setup only) until every peer's table is in and our sends are done.
  uint32_t tables = 0, sends = 0;
  const uint32_t others = num_nodes() - 1;
  const auto deadline = std::chrono::steady_clock::now() + opt_.setup_timeout;
  while (tables < others || sends < others) {
    if (std::chrono::steady_clock::now() > deadline) return Status::InvalidArgument("region table exchange timed out");
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq_, 16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return Status::InvalidArgument(ibv_wc_status_str(wc[i].status));
      if ((wc[i].wr_id & kVerbsRecvFlag) == 0) {
        ++sends;
        continue;
      }
      const size_t index = wc[i].wr_id & ~kVerbsRecvFlag;
      const NodeId from = static_cast<NodeId>(index / kVerbsRecvDepth);
      coding::Reader r({recv_slab_.data() + index * kVerbsMaxMessage, wc[i].byte_len});
      uint32_t count = 0;
      if (!r.GetU32(&count) || !r.CanHold(count, 24)) return Status::Malformed("region table");
      for (uint32_t k = 0; k < count; ++k) {
        uint32_t id = 0, rkey = 0;
        uint64_t addr = 0, len = 0;
        if (!(r.GetU32(&id) && r.GetU32(&rkey) && r.GetU64(&addr) && r.GetU64(&len)) || id > kMaxRegions) {
          return Status::Malformed("region table entry");
        }
        Remote& dst = id == kMaxRegions ? peers_[from].locks : peers_[from].regions[id];
        dst = Remote{addr, rkey, len, true};
      }
      peers_[from].have_table = true;
      ++tables;
      // Give the buffer back.
      ibv_sge sge{reinterpret_cast<uint64_t>(recv_slab_.data() + index * kVerbsMaxMessage), kVerbsMaxMessage,
                  recv_mr_->lkey};
      ibv_recv_wr rw{};
      rw.wr_id = wc[i].wr_id;
      rw.sg_list = &sge;
      rw.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      ibv_post_recv(peers_[from].qp, &rw, &bad);
    }
  }
  return Status::Ok();
}

Status VerbsNicImpl::Connect(std::span<const std::string> addresses) {
  if (started_) return Status::InvalidArgument("Connect called twice");
  if (addresses.size() != num_nodes()) return Status::InvalidArgument("one address per node");
  for (NodeId j = 0; j < self(); ++j) {
    if (Status s = Dial(j, addresses[j]); !s.ok()) return s;
  }
  if (Status s = AcceptPeers(); !s.ok()) return s;
  if (num_nodes() == 1) return Status::Unsupported("verbs: a single node has no peers (loopback not built)");
  if (Status s = ExchangeTables(); !s.ok()) return s;
  started_ = true;
  thread_ = std::thread([this] { CompletionLoop(); });
  return Status::Ok();
}

void VerbsNicImpl::Shutdown() {
  if (!started_ || stop_.exchange(true)) return;
  uint64_t one = 1;
  ssize_t w = write(stop_fd_, &one, sizeof one);
  (void)w;
  thread_.join();
  for (Peer& p : peers_) {
    if (p.id != nullptr && p.alive) rdma_disconnect(p.id);
    p.alive = false;
  }
  std::lock_guard<std::mutex> l(mu_);
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].used) Finish(i, WcStatus::kFlushed, 0);
  }
}

}  // namespace svm::nic
