// OFI transport, control path: provider choice and capability check, the
// endpoint and its memory registrations, and Connect (address vector, then
// the exchange of region tables as the first message to every peer).
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/ofi/ofi_nic_impl.h"
#include "util/coding.h"
#include "util/signal_dispositions.h"

namespace svm::nic {
namespace {

constexpr uint32_t kFiVersion = FI_VERSION(1, 9);

std::string FiErr(const char* what, int rc) { return fmt::format("{}: {}", what, fi_strerror(-rc)); }

// rx_size: the receives we post (0: the provider's default).
fi_info* Hints(const std::string& provider, bool delivery_complete, std::span<const uint8_t> auth_key,
               size_t rx_size = 0) {
  fi_info* h = fi_allocinfo();
  h->rx_attr->size = rx_size;
  h->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
            FI_REMOTE_WRITE;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->ep_attr->type = FI_EP_RDM;
  // FI_MR_ENDPOINT: cxi and recent efa register memory per endpoint.
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  if (!auth_key.empty()) {
    // fi_freeinfo frees it.
    h->domain_attr->auth_key = static_cast<uint8_t*>(malloc(auth_key.size()));
    std::memcpy(h->domain_attr->auth_key, auth_key.data(), auth_key.size());
    h->domain_attr->auth_key_size = auth_key.size();
  }
  h->domain_attr->threading = FI_THREAD_SAFE;
  // A WRITE completes once the target holds the bytes (transport.h).
  if (delivery_complete) h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  if (!provider.empty()) h->fabric_attr->prov_name = strdup(provider.c_str());
  return h;
}

// The first fi_info for `provider` (bound to `source` where the provider
// speaks IP), or Unsupported naming what is missing. With room for rx_size
// posted receives where the provider offers it; else with its own number.
Status GetInfo(const std::string& provider, const std::string& source, std::span<const uint8_t> auth_key,
               size_t rx_size, fi_info** out) {
  const std::string who = provider.empty() ? "libfabric" : fmt::format("ofi provider '{}'", provider);
  int rc = -FI_ENODATA;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const bool dc = attempt < 2;
    const size_t rx = attempt % 2 == 0 ? rx_size : 0;
    if (attempt % 2 == 1 && rx_size == 0) continue;  // the attempt just made
    fi_info* h = Hints(provider, dc, auth_key, rx);
    fi_info* list = nullptr;
    rc = fi_getinfo(kFiVersion, nullptr, nullptr, 0, h, &list);
    fi_freeinfo(h);
    if (rc != 0) continue;
    // The first entry, but not an IPv6 one where another exists: a
    // link-local address cannot be dialled without its scope
    // (EADDRNOTAVAIL). FI_TCP_IFACE / FI_VERBS_IFACE pick an interface.
    fi_info* pick = list;
    for (fi_info* i = list; i != nullptr; i = i->next) {
      if (i->addr_format != FI_SOCKADDR_IN6) {
        pick = i;
        break;
      }
    }
    const bool ip = pick->addr_format == FI_SOCKADDR_IN || pick->addr_format == FI_SOCKADDR_IN6;
    const bool shm = std::string_view(pick->fabric_attr->prov_name) == "shm";
    fi_info* bound = nullptr;
    if (shm) {
      // shm names its region after the endpoint (by default "<pid>:<n>:<n>"):
      // a file left in /dev/shm by a process of the same pid that died
      // before unlinking it would make fi_enable fail with EBUSY. A name
      // of our own, never reused.
      static std::atomic<uint64_t> seq{0};
      std::random_device rd;
      const std::string name = fmt::format("svm-ofi-{}-{}-{:08x}", getpid(), seq++, rd());
      fi_info* hb = Hints(provider.empty() ? "shm" : provider, dc, auth_key, rx);
      if (fi_getinfo(kFiVersion, name.c_str(), nullptr, FI_SOURCE, hb, &bound) != 0) bound = nullptr;
      fi_freeinfo(hb);
    } else if (ip && !source.empty()) {
      // Interfaces come and go (containers, tests): bind to the one toward
      // the job's control host rather than to whichever is listed first.
      fi_info* hb = Hints(provider, dc, auth_key, rx);
      hb->fabric_attr->prov_name = hb->fabric_attr->prov_name ? hb->fabric_attr->prov_name
                                                              : strdup(pick->fabric_attr->prov_name);
      if (fi_getinfo(kFiVersion, source.c_str(), nullptr, FI_SOURCE, hb, &bound) != 0) bound = nullptr;
      fi_freeinfo(hb);
    }
    *out = fi_dupinfo(bound != nullptr ? bound : pick);
    if (bound != nullptr) fi_freeinfo(bound);
    fi_freeinfo(list);
    return *out != nullptr ? Status::Ok() : Status::Unsupported("fi_dupinfo failed");
  }
  // Say which capability is missing: ask again with less.
  fi_info* h = Hints(provider, false, {});
  h->caps = FI_MSG | FI_SEND | FI_RECV;
  fi_info* any = nullptr;
  if (fi_getinfo(kFiVersion, nullptr, nullptr, 0, h, &any) != 0) {
    fi_freeinfo(h);
    return Status::Unsupported(fmt::format("{}: no reliable datagram endpoint (FI_EP_RDM with FI_MSG){}",
                                           who, provider.empty() ? "" : " (is the name right? see fi_info -l)"));
  }
  fi_freeinfo(any);
  h->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  const bool rma = fi_getinfo(kFiVersion, nullptr, nullptr, 0, h, &any) == 0;
  if (rma) fi_freeinfo(any);
  fi_freeinfo(h);
  return Status::Unsupported(fmt::format("{} lacks {} on FI_EP_RDM ({})", who, rma ? "FI_ATOMIC" : "FI_RMA",
                                         fi_strerror(-rc)));
}

// Ok if the domain does 8-byte CAS and fetch-add.
Status CheckAtomics(fid_domain* domain, const std::string& prov) {
  fi_atomic_attr attr{};
  if (fi_query_atomic(domain, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC) != 0 || attr.count < 1) {
    return Status::Unsupported(fmt::format("ofi provider '{}' lacks 8-byte compare-and-swap (FI_CSWAP on FI_UINT64)", prov));
  }
  if (fi_query_atomic(domain, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC) != 0 || attr.count < 1) {
    return Status::Unsupported(fmt::format("ofi provider '{}' lacks 8-byte fetch-and-add (FI_SUM on FI_UINT64)", prov));
  }
  return Status::Ok();
}

std::string Hex(std::span<const uint8_t> b) {
  std::string s;
  s.reserve(2 * b.size());
  for (uint8_t c : b) s += fmt::format("{:02x}", c);
  return s;
}

bool Unhex(std::string_view s, std::vector<uint8_t>* out) {
  if (s.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    unsigned v = 0;
    if (std::sscanf(std::string(s.substr(i, 2)).c_str(), "%2x", &v) != 1) return false;
    out->push_back(static_cast<uint8_t>(v));
  }
  return true;
}

}  // namespace

Status ProbeOfi(const std::string& provider, std::string* name) {
  fi_info* info = nullptr;
  if (Status s = GetInfo(provider, "", {}, 0, &info); !s.ok()) return s;
  const std::string prov = info->fabric_attr->prov_name;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  Status s = Status::Ok();
  if (int rc = fi_fabric(info->fabric_attr, &fabric, nullptr); rc != 0) {
    s = Status::Unsupported(FiErr("fi_fabric", rc));
  } else if (int rc2 = fi_domain(fabric, info, &domain, nullptr); rc2 != 0) {
    s = Status::Unsupported(FiErr("fi_domain", rc2));
  } else {
    s = CheckAtomics(domain, prov);
  }
  if (domain != nullptr) fi_close(&domain->fid);
  if (fabric != nullptr) fi_close(&fabric->fid);
  fi_freeinfo(info);
  if (s.ok() && name != nullptr) *name = prov;
  return s;
}

Status OfiNic::Create(const OfiOptions& options, std::unique_ptr<OfiNic>* out) {
  if (options.num_nodes == 0 || options.num_nodes > kMaxNodes || options.self >= options.num_nodes) {
    return Status::InvalidArgument("bad node id or count");
  }
  // The shm provider installs handlers for SIGINT and SIGTERM (to unlink
  // its region file) in endpoints and connections; our Connect unlinks that
  // file itself, and the program keeps its own dispositions.
  KeepSignalDispositions keep;
  fi_info* info = nullptr;
  // With the job's authorisation key first; a provider that takes no key
  // of that size (cxi's is the VNI the resource manager grants) runs with
  // its default.
  Status got = Status::Unsupported("");
  const size_t rx = OfiRecvsWanted(options.num_nodes);
  if (!options.auth_key.empty()) got = GetInfo(options.provider, options.source, options.auth_key, rx, &info);
  if (!got.ok()) got = GetInfo(options.provider, options.source, {}, rx, &info);
  if (!got.ok()) return got;
  auto nic = std::make_unique<OfiNicImpl>(options, info);
  if (Status s = nic->Init(); !s.ok()) return s;
  *out = std::move(nic);
  return Status::Ok();
}

OfiNicImpl::OfiNicImpl(const OfiOptions& o, fi_info* info)
    : OfiNic(o.self, o.num_nodes, o.recv_policy), opt_(o), info_(info) {}

std::string OfiNicImpl::provider() const { return info_->fabric_attr->prov_name; }

Status OfiNicImpl::RegisterInternal(const void* base, size_t len, uint64_t access, uint64_t key, fid_mr** mr) {
  if (int rc = fi_mr_reg(domain_, base, len, access, 0, key, 0, mr, nullptr); rc != 0) {
    *mr = nullptr;
    return Status::Unsupported(FiErr("fi_mr_reg", rc));
  }
  if (!mr_endpoint_) return Status::Ok();
  int rc = fi_mr_bind(*mr, &ep_->fid, 0);
  if (rc == 0) rc = fi_mr_enable(*mr);
  if (rc != 0) {
    fi_close(&(*mr)->fid);
    *mr = nullptr;
    return Status::Unsupported(FiErr("fi_mr_bind/fi_mr_enable (FI_MR_ENDPOINT)", rc));
  }
  return Status::Ok();
}

Status OfiNicImpl::Init() {
  const uint64_t mode = info_->domain_attr->mr_mode;
  mr_local_ = (mode & FI_MR_LOCAL) != 0;
  mr_virt_ = (mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC)) != 0;
  mr_endpoint_ = (mode & FI_MR_ENDPOINT) != 0;
  iov_limit_ = std::max<size_t>(1, info_->tx_attr->iov_limit);  // local iovs per READ
  runs_per_write_ = std::clamp<size_t>(std::min(info_->tx_attr->iov_limit, info_->tx_attr->rma_iov_limit), 1, kMaxSge);
  const std::string prov = provider();
  // Each peer learns our grant from our table.
  const uint32_t n = num_nodes();
  const size_t rx_size = info_->rx_attr->size;
  grant_ = OfiCreditsPerPeer(rx_size, n);
  if (grant_ < kOfiMinCredits) {
    return Status::Unsupported(fmt::format("ofi provider '{}' takes {} posted receives, too few for {} nodes ({} each)",
                                           prov, rx_size, n, kOfiMinCredits + kOfiSpareRecvs));
  }
  if (int rc = fi_fabric(info_->fabric_attr, &fabric_, nullptr); rc != 0) return Status::Unsupported(FiErr("fi_fabric", rc));
  if (int rc = fi_domain(fabric_, info_, &domain_, nullptr); rc != 0) return Status::Unsupported(FiErr("fi_domain", rc));
  if (Status s = CheckAtomics(domain_, prov); !s.ok()) return s;

  fi_av_attr av{};
  av.type = FI_AV_TABLE;
  av.count = num_nodes();
  if (int rc = fi_av_open(domain_, &av, &av_, nullptr); rc != 0) return Status::Unsupported(FiErr("fi_av_open", rc));
  // The CQ: a wait fd where the provider has one (the progress thread
  // sleeps in poll), else none (it naps between reads).
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_MSG;
  cq.size = kMaxOutstanding + size_t{n} * (grant_ + kOfiSpareRecvs) * 2;
  // shm (1.17) takes FI_WAIT_FD but a peer's operation does not wake the fd:
  // its work arrives in shared memory and is seen only when the CQ is read.
  const bool fd_wakes = prov.rfind("shm", 0) != 0 && std::getenv("SVM_OFI_NAP") == nullptr;
  cq.wait_obj = fd_wakes ? FI_WAIT_FD : FI_WAIT_NONE;
  if (fi_cq_open(domain_, &cq, &cq_, nullptr) == 0) {
    if (!fd_wakes || fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) wait_fd_ = -1;
  } else {
    cq.wait_obj = FI_WAIT_NONE;
    if (int rc = fi_cq_open(domain_, &cq, &cq_, nullptr); rc != 0) return Status::Unsupported(FiErr("fi_cq_open", rc));
  }
  if (int rc = fi_endpoint(domain_, info_, &ep_, nullptr); rc != 0) return Status::Unsupported(FiErr("fi_endpoint", rc));
  if (int rc = fi_ep_bind(ep_, &av_->fid, 0); rc != 0) return Status::Unsupported(FiErr("fi_ep_bind av", rc));
  if (int rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV); rc != 0) return Status::Unsupported(FiErr("fi_ep_bind cq", rc));
  if (int rc = fi_enable(ep_); rc != 0) return Status::Unsupported(FiErr("fi_enable", rc));
  std::vector<uint8_t> name(256);
  size_t len = name.size();
  if (int rc = fi_getname(&ep_->fid, name.data(), &len); rc != 0) return Status::Unsupported(FiErr("fi_getname", rc));
  name.resize(len);
  listen_address_ = "ofi:" + Hex(name);
  listen_name_ = name;
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (const char* e = std::getenv("SVM_OFI_PIPELINE")) pipeline_reads_ = std::string_view(e) != "0";
  idle_spin_ = opt_.idle_spin;
  if (const char* e = std::getenv("SVM_OFI_SPIN_US")) idle_spin_ = std::chrono::microseconds(std::atoi(e));

  peers_.resize(n);
  addrs_.assign(n, FI_ADDR_NOTAVAIL);
  slots_.resize(kMaxOutstanding);
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    slots_[i].ctx.kind = CtxKind::kSlot;
    slots_[i].ctx.index = i;
  }
  for (uint32_t i = kMaxOutstanding; i-- > 0;) free_.push_back(i);
  atomic_buf_.assign(kMaxOutstanding * 3, 0);
  lock_bytes_ = size_t{kOfiMaxLocks} * kOfiLockWords * 8;
  void* locks = mmap(nullptr, lock_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (locks == MAP_FAILED) return Status::Errno("mmap (lock words)", errno);
  lock_words_ = static_cast<uint64_t*>(locks);
  const uint32_t recvs = n * (grant_ + kOfiSpareRecvs);
  recv_slab_.assign(size_t{recvs} * kOfiBuffer, 0);
  recv_ctx_.resize(recvs);
  send_slab_.assign(size_t{n} * kOfiBuffer, 0);
  ctrl_slab_.assign(size_t{n} * sizeof(OfiHeader), 0);
  ctrl_ctx_.resize(n);
  for (uint32_t i = 0; i < n; ++i) ctrl_ctx_[i] = Ctx{{}, CtxKind::kCtrl, i};

  // Keys: region ids 0..kMaxRegions-1 for the user's, then ours.
  const uint64_t salt = opt_.key_salt << 8;
  const uint64_t local = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
  lock_key_ = salt | kOfiLockRegion;
  if (Status s = RegisterInternal(lock_words_, lock_bytes_,
                                  local | FI_REMOTE_READ | FI_REMOTE_WRITE, lock_key_, &lock_mr_);
      !s.ok()) {
    return s;
  }
  for (auto [buf, bytes, mr, k] : {std::tuple{static_cast<void*>(recv_slab_.data()), recv_slab_.size(), &recv_mr_, 1},
                                   std::tuple{static_cast<void*>(send_slab_.data()), send_slab_.size(), &send_mr_, 2},
                                   std::tuple{static_cast<void*>(ctrl_slab_.data()), ctrl_slab_.size(), &ctrl_mr_, 3},
                                   std::tuple{static_cast<void*>(atomic_buf_.data()), atomic_buf_.size() * 8, &atomic_mr_, 4}}) {
    if (Status s = RegisterInternal(buf, bytes, local, salt | (kOfiLockRegion + k), mr); !s.ok()) return s;
  }
  for (uint32_t i = 0; i < recvs; ++i) {
    recv_ctx_[i] = Ctx{{}, CtxKind::kRecv, i};
    if (Status s = PostRecv(i); !s.ok()) return s;
  }
  driver_ = std::make_shared<Driver>(this);
  return Status::Ok();
}

OfiNicImpl::~OfiNicImpl() {
  Shutdown();
  if (driver_) driver_->Retire();
  if (ep_ != nullptr) fi_close(&ep_->fid);
  for (fid_mr* mr : mrs_) {
    if (mr != nullptr) fi_close(&mr->fid);
  }
  for (fid_mr* mr : {recv_mr_, send_mr_, ctrl_mr_, atomic_mr_, lock_mr_}) {
    if (mr != nullptr) fi_close(&mr->fid);
  }
  for (Slot& s : slots_) {
    for (fid_mr* mr : s.temp_mrs) fi_close(&mr->fid);
  }
  if (cq_ != nullptr) fi_close(&cq_->fid);
  if (av_ != nullptr) fi_close(&av_->fid);
  if (domain_ != nullptr) fi_close(&domain_->fid);
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (lock_words_ != nullptr) munmap(lock_words_, lock_bytes_);
  fi_freeinfo(info_);
}

Status OfiNicImpl::PostRecv(uint32_t index) {
  void* buf = recv_slab_.data() + size_t{index} * kOfiBuffer;
  void* desc = mr_local_ ? fi_mr_desc(recv_mr_) : nullptr;
  for (int tries = 0;; ++tries) {
    ssize_t rc = fi_recv(ep_, buf, kOfiBuffer, desc, FI_ADDR_UNSPEC, &recv_ctx_[index]);
    if (rc == 0) return Status::Ok();
    if (rc != -FI_EAGAIN || tries > 1000) return Status::Unsupported(FiErr("fi_recv", static_cast<int>(rc)));
    fi_cq_read(cq_, nullptr, 0);  // progress, then try again
  }
}

Status OfiNicImpl::RegisterRegion(const MemoryRegion& r) {
  if (started_) return Status::InvalidArgument("RegisterRegion after Connect");
  if (Status s = regions_.Add(r); !s.ok()) return s;
  const uint64_t access = FI_READ | FI_WRITE | FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
  return RegisterInternal(r.base, r.length, access, (opt_.key_salt << 8) | r.id, &mrs_[r.id]);
}

// The table: u32 count, then {u32 id, u32 0, u64 addr, u64 key, u64 length};
// the lock words have id kOfiLockRegion. REQUIRES: mu_ not held (a provider
// may need progress, on the progress thread, before it takes the send).
Status OfiNicImpl::SendTable(NodeId to) {
  // Its credits field: the SENDs `to` may have in flight to us.
  OfiHeader h{static_cast<uint8_t>(OfiMsg::kTable), 0, static_cast<uint16_t>(self()), uint16_t(grant_), 0,
              opt_.epoch, 0};
  uint8_t* buf = send_slab_.data() + size_t{to} * kOfiBuffer;
  std::memcpy(buf, &h, sizeof h);
  std::memcpy(buf + sizeof h, table_.data(), table_.size());
  void* desc = mr_local_ ? fi_mr_desc(send_mr_) : nullptr;
  // Slot-less: the context is the peer's control context, marked busy.
  {
    std::lock_guard<std::mutex> l(mu_);
    peers_[to].ctrl_busy = true;
  }
  ssize_t rc;
  const auto deadline = std::chrono::steady_clock::now() + opt_.setup_timeout;
  while ((rc = fi_send(ep_, buf, sizeof h + table_.size(), desc, addrs_[to], &ctrl_ctx_[to])) == -FI_EAGAIN &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (rc != 0) {
    std::lock_guard<std::mutex> l(mu_);
    peers_[to].ctrl_busy = false;
    return Status::IoError(fmt::format("nic {}: sending the region table to node {} ({}): {}", self(), to,
                                       provider(), fi_strerror(static_cast<int>(-rc))));
  }
  return Status::Ok();
}

Status OfiNicImpl::ParseTable(NodeId from, std::span<const uint8_t> bytes) {
  coding::Reader r(bytes);
  uint32_t count = 0;
  if (!r.GetU32(&count) || !r.CanHold(count, 32)) return Status::Malformed("region table");
  for (uint32_t k = 0; k < count; ++k) {
    uint32_t id = 0, zero = 0;
    uint64_t addr = 0, key = 0, len = 0;
    if (!(r.GetU32(&id) && r.GetU32(&zero) && r.GetU64(&addr) && r.GetU64(&key) && r.GetU64(&len)) ||
        id > kOfiLockRegion) {
      return Status::Malformed("region table entry");
    }
    peers_[from].regions[id] = Remote{mr_virt_ ? addr : 0, addr, key, len, true};
  }
  peers_[from].have_table = true;
  return Status::Ok();
}

// shm names its region /dev/shm/<endpoint name> and unlinks it only in
// fi_close or on a fatal signal; a node ends with _exit, so the file (MiBs)
// would outlive the job and a later process of the same pid could not open
// its endpoint. Every peer has mapped our region once its table arrived
// (it sent it through that mapping), so the name can go now.
void OfiNicImpl::UnlinkShmName() {
  if (provider() != "shm") return;
  std::string name(listen_name_.begin(), listen_name_.end());
  name = name.substr(0, name.find('\0'));
  if (name.rfind("fi_shm://", 0) == 0) name = name.substr(9);
  if (name.empty() || name.find('/') != std::string::npos) return;
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("nic {}: shm_unlink({}): {}", self(), name, std::strerror(errno));
  }
}

Status OfiNicImpl::Connect(std::span<const std::string> addresses) {
  if (started_) return Status::InvalidArgument("Connect called twice");
  KeepSignalDispositions keep;  // see Create
  Status s = ConnectPeers(addresses);
  // Done: every peer has mapped our region. Failed: the job ends, maybe by
  // _exit. Either way the name can go.
  UnlinkShmName();
  return s;
}

Status OfiNicImpl::ConnectPeers(std::span<const std::string> addresses) {
  if (addresses.size() != num_nodes()) return Status::InvalidArgument("one address per node");
  std::vector<uint8_t> raw;
  for (NodeId i = 0; i < num_nodes(); ++i) {
    const std::string& a = addresses[i];
    if (a.rfind("ofi:", 0) != 0 || !Unhex(std::string_view(a).substr(4), &raw)) {
      return Status::InvalidArgument(fmt::format("node {}: '{}' is not an ofi address", i, a));
    }
    if (int rc = fi_av_insert(av_, raw.data(), 1, &addrs_[i], 0, nullptr); rc != 1) {
      return Status::InvalidArgument(fmt::format("node {}: fi_av_insert of '{}' failed", i, a));
    }
  }
  coding::Writer w(&table_);
  w.PutU32(0);
  uint32_t count = 0;
  auto put = [&](uint32_t id, const void* base, uint64_t len, fid_mr* mr) {
    w.PutU32(id);
    w.PutU32(0);
    w.PutU64(reinterpret_cast<uint64_t>(base));
    w.PutU64(fi_mr_key(mr));
    w.PutU64(len);
    ++count;
  };
  for (RegionId id = 0; id < kMaxRegions; ++id) {
    if (const MemoryRegion* r = regions_.Get(id)) put(id, r->base, r->length, mrs_[id]);
  }
  put(kOfiLockRegion, lock_words_, lock_bytes_, lock_mr_);
  w.PatchU32(0, count);
  if (table_.size() > kOfiMaxMessage) return Status::Unsupported("region table too large");

  started_ = true;
  thread_ = std::thread([this] { ProgressLoop(); });
  for (NodeId to = 0; to < num_nodes(); ++to) {
    if (Status s = SendTable(to); !s.ok()) return s;
  }
  std::unique_lock<std::mutex> l(mu_);
  const bool all = cv_.wait_for(l, opt_.setup_timeout, [&] {
    bool sent = true;
    for (const Peer& p : peers_) sent = sent && !p.ctrl_busy;
    return tables_ == num_nodes() && sent;
  });
  if (!all) {
    return Status::Timeout(fmt::format("nic {}: {} of {} region tables arrived within {} ms", self(), tables_,
                                       num_nodes(), opt_.setup_timeout.count()));
  }
  return Status::Ok();
}

void OfiNicImpl::Shutdown() {
  {
    std::unique_lock<std::mutex> l(mu_);
    if (shut_) return;
    shut_ = true;
    if (started_) {
      // Goodbyes, so that the peers flush what waits on us.
      for (NodeId p = 0; p < num_nodes(); ++p) {
        if (p == self() || !peers_[p].alive) continue;
        if (!peers_[p].ctrl_busy) {
          peers_[p].ctrl_bye = true;
          if (PostCtrl(p, OfiMsg::kBye) != 0) peers_[p].ctrl_bye = false;
        }
      }
      cv_.wait_for(l, std::chrono::milliseconds(500), [&] {
        for (const Peer& p : peers_) {
          if (p.ctrl_bye) return false;
        }
        return true;
      });
    }
  }
  if (thread_.joinable()) {
    stop_.store(true);
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  std::lock_guard<std::mutex> p(poll_mu_);
  std::lock_guard<std::mutex> l(mu_);
  for (NodeId n = 0; n < peers_.size(); ++n) {  // empty if Init failed early
    if (peers_[n].alive) PeerLost(n, nullptr);
  }
  // The endpoint closes in the destructor, not here: shm maps a peer in the
  // same process (tests, nic_bench) through the owner's own mapping, so a
  // peer still working off our last messages would touch freed memory.
  closed_.store(true);
}

}  // namespace svm::nic
