// Runtime: start-up, shared memory, the NIC and the handler thread.
#include "libsvm/runtime.h"
#include "libsvm/stall.h"

#include <arpa/inet.h>
#include <elf.h>
#include <link.h>
#include <netdb.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "libsvm/copy_relocs.h"
#include "libsvm/entry.h"
#include "libsvm/log.h"
#ifdef SVM_HAVE_OFI
#include "libsvm/ofi_nic.h"
#endif
#include "libsvm/runtime_state.h"
#include "libsvm/stacks.h"
#include "libsvm/stats.h"
#include "nic_ext/fake/fake_transport.h"
#include "nic_ext/shm/shm_transport.h"
#include "nic_ext/tcp/tcp_transport.h"
#include "protocol/wire.h"
#include "control/control_client.h"

namespace svm::rt {

Runtime* Runtime::instance_ = nullptr;

namespace {

// The address this host has toward `host` (no packet is sent), ready to
// take ":port" (an IPv6 address in brackets).
std::string LocalAddressToward(const std::string& host) {
  std::string ip;
  if (!svmd::LocalIpToward(host, &ip).ok()) return "127.0.0.1";
  return ip.find(':') == std::string::npos ? ip : "[" + ip + "]";
}

// The program's writable data after RELRO: .data and .bss, page-aligned.
struct GlobalsRange {
  uintptr_t start = 0, end = 0;
};

int FindGlobals(dl_phdr_info* info, size_t, void* out) {
  auto* r = static_cast<GlobalsRange*>(out);
  uintptr_t seg_lo = 0, seg_hi = 0, relro_hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && seg_hi == 0) {
      seg_lo = lo;
      seg_hi = lo + ph.p_memsz;
    } else if (ph.p_type == PT_GNU_RELRO) {
      relro_hi = lo + ph.p_memsz;
    }
  }
  const uintptr_t page = kMinPageSize;
  r->start = (std::max(seg_lo, relro_hi) + page - 1) & ~(page - 1);
  r->end = (seg_hi + page - 1) & ~(page - 1);
  return 1;  // the first object is the program itself
}

}  // namespace

void Runtime::StartOrDie() {
  auto* rt = new Runtime();
  Status st = rt->Start();
  if (!st.ok()) {
    std::string msg = fmt::format("svm: node start-up failed: {}\n", st.message());
    (void)!write(2, msg.data(), msg.size());
    _exit(svmd::kStartupFailedStatus);
  }
  if (rt->opts_.start_delay_ns != 0 && rt->self() != 0)
    std::this_thread::sleep_for(std::chrono::nanoseconds(rt->opts_.start_delay_ns));
}

Status Runtime::Start() {
  if (Status st = ReadOptions(&opts_); !st.ok()) return st;
  InitLogging(opts_.log_level, opts_.node);
  const Cpus cpus = CpusHere();
  spin_ = ShouldSpin(opts_, cpus);
  spin_long_ = ShouldSpinLong(opts_, cpus);
  stats::SetSpinPolicy(spin_, opts_.host_wake_ns);
  cpus_here_ = int(NodeCpus(opts_, cpus));
  (void)prctl(PR_GET_NAME, program_name_);  // the main thread: the program's name
  if (opts_.verbose && opts_.node == 0) spdlog::warn("options:\n{}", DescribeEnvironment());
  if (opts_.verbose && opts_.node == 0) {
    const std::string wake = opts_.host_wake_ns == 0 ? "not measured" : fmt::format("{:.1f} us", opts_.host_wake_ns / 1e3);
    spdlog::warn("waiting threads {} before they sleep (a wake-up from another CPU: {})", spin_ ? "spin" : "do not spin", wake);
  }
  if (!opts_.stats_dir.empty() || opts_.show_stats) {
    stats::Enable();
    // What a fault costs in the kernel, so that it is charged to the fault
    // and not to the program's compute (about 50 faults: ~0.3 ms). Only
    // where it is charged: a one-node job takes no faults, and under
    // uffd-thread the faulting thread is not the one that serves the fault.
    if (opts_.nodes > 1 && opts_.fault != prim::Backend::kUffdThread) {
      uint64_t ns = 0;
      if (Status st = prim::MeasureFaultDelivery(opts_.fault, 51, &ns); st.ok())
        stats::SetFaultDeliveryNs(ns);
      else
        spdlog::warn("fault delivery not measured ({}); it stays in compute", st.message());
    }
  }
  slots_ = std::make_unique<Slot[]>(kMaxSlots);
  if (Status st = OpenHeap(); !st.ok()) return st;
  if (Status st = Connect(); !st.ok()) return st;
  ScrubEnvironment();
  if (opts_.share_globals) {
    if (Status st = OpenGlobals(); !st.ok()) return st;
  }
  if (Status st = ConnectNic(); !st.ok()) return st;
  // Before any program thread (stacks.h), after the shared region (which
  // takes the address space it was given): the other nodes' stacks are
  // inaccessible here, and a fatal fault on one says so.
  if (opts_.nodes > 1) {
    if (ReserveStackWindows(opts_.node, opts_.nodes))
      prim::SetFatalFaultNote(DescribeStackAddress);
    else if (opts_.node == 0)
      spdlog::warn("the address space of the per-node stack windows is taken (by --region-base?): threads "
                   "keep glibc's stacks, and a stack variable used on another node goes undetected");
  }
  // Messages wait in the NIC until now: a thread started for another node
  // must find the runtime complete, globals and shared heap included (this
  // node's main thread may still be starting up).
  UseSharedHeap(heap_.get());
  instance_ = this;
  if (nic_) {
    handler_ = std::thread([this] { HandlerLoop(); });
    spawner_ = std::thread([this] { SpawnLoop(); });
    StartStallReport({opts_.stall_report_s, opts_.node, uintptr_t(opts_.region_base),
                      uintptr_t(opts_.region_base + opts_.region_size)});
  }
  return Status::Ok();
}

// Programs this node starts (system, popen, posix_spawn) run as ordinary
// processes: they must not load libsvm nor try to join the job.
void Runtime::ScrubEnvironment() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view var(*e);
    if (var.starts_with("SVM_")) names.emplace_back(var.substr(0, var.find('=')));
  }
  for (const std::string& n : names) unsetenv(n.c_str());
  if (const char* preload = getenv("LD_PRELOAD")) {
    std::string kept;
    std::string_view rest(preload);
    while (!rest.empty()) {
      const size_t end = rest.find_first_of(": ");
      std::string_view lib = rest.substr(0, end);
      if (!lib.empty() && lib.find("libsvm") == std::string_view::npos) {
        if (!kept.empty()) kept += ':';
        kept += lib;
      }
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
    if (kept.empty()) unsetenv("LD_PRELOAD");
    else setenv("LD_PRELOAD", kept.c_str(), 1);
  }
}

Status Runtime::OpenHeap() {
  auto seg = std::make_unique<Segment>();
  seg->name = "heap";
  prim::RegionOptions ro;
  ro.base = opts_.region_base;
  ro.size = opts_.region_size;
  ro.name = "svm-heap";
  if (Status st = prim::Region::Create(ro, &seg->region); !st.ok()) return st;
  alloc::HeapOptions ho;
  ho.base = opts_.region_base;
  ho.size = opts_.region_size;
  ho.nodes = opts_.nodes;
  ho.self = opts_.node;
  ho.remote_free = [](void* ctx, uint32_t owner, void* p) {
    static_cast<Runtime*>(ctx)->RemoteFree(owner, p);
  };
  ho.remote_free_ctx = this;
  ho.claim = [](void* ctx, uint64_t bytes, uint64_t limit, uint64_t* offset) {
    return static_cast<Runtime*>(ctx)->ClaimHeap(bytes, limit, offset);
  };
  ho.claim_ctx = this;
  ho.mark_block_ends = opts_.nodes > 1 && opts_.home == HomePolicy::kFirstTouch;
  if (const char* why = alloc::Heap::CheckOptions(ho))
    return Status::InvalidArgument(fmt::format("shared heap: {}", why));
  heap_ = std::make_unique<alloc::Heap>(ho);
  segments_.push_back(std::move(seg));
  return Status::Ok();
}

namespace {

// Copies the pages of src that hold a nonzero byte into dst (zero-filled):
// a large .bss, mostly zero, then commits no memory on either side.
void CopyDataPages(void* dst, const void* src, size_t size) {
  const size_t page = kMinPageSize;
  const auto* from = static_cast<const uint8_t*>(src);
  auto* to = static_cast<uint8_t*>(dst);
  for (size_t off = 0; off < size; off += page) {
    const size_t n = std::min(page, size - off);
    const auto* w = reinterpret_cast<const uint64_t*>(from + off);
    bool zero = true;
    for (size_t i = 0; i < n / 8 && zero; ++i) zero = w[i] == 0;
    for (size_t i = n / 8 * 8; i < n && zero; ++i) zero = from[off + i] == 0;
    if (!zero) std::memcpy(to + off, from + off, n);
  }
}

}  // namespace

// Moves the program's .data and .bss onto frames of their own, contents
// kept, so that they are shared like the heap. Nothing may touch them while
// they are away, hence no logging in between.
Status Runtime::OpenGlobals() {
  GlobalsRange g;
  dl_iterate_phdr(FindGlobals, &g);
  if (g.end <= g.start) return Status::Ok();  // nothing writable beyond RELRO
  PrivatizeSingleThreadedFlag(g.start, g.end);
  const size_t size = g.end - g.start;
  void* save = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (save == MAP_FAILED) return Status::Unsupported("mmap for the globals' copy failed");
  CopyDataPages(save, reinterpret_cast<const void*>(g.start), size);

  auto seg = std::make_unique<Segment>();
  seg->name = "globals";
  seg->first = segments_.back()->first + segments_.back()->pages();
  prim::RegionOptions ro;
  ro.base = g.start;
  ro.size = size;
  ro.name = "svm-globals";
  ro.dump_app = true;  // the program's globals belong in its core
  munmap(reinterpret_cast<void*>(g.start), size);
  Status st = prim::Region::Create(ro, &seg->region);
  if (!st.ok()) {
    // Put the data back where it was before reporting.
    mmap(reinterpret_cast<void*>(g.start), size, PROT_READ | PROT_WRITE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    std::memcpy(reinterpret_cast<void*>(g.start), save, size);
    munmap(save, size);
    return st;
  }
  if (seg->pages() > kMaxGlobalsPages) {
    std::string msg = fmt::format(
        "svm: the program's globals (.data + .bss, {} MiB) exceed svm's limit of {} GiB "
        "(kMaxGlobalsPages in libsvm/runtime.h)\n",
        size >> 20, (kMaxGlobalsPages * kMinPageSize) >> 30);
    (void)!write(2, msg.data(), msg.size());
    _exit(svmd::kStartupFailedStatus);
  }
  CopyDataPages(seg->region->proto(), save, size);
  munmap(save, size);
  seg->handler = std::make_unique<SegmentHandler>(this, seg->first);
  // Until the trap is open the globals are inaccessible, so open it at once.
  {
    std::lock_guard<std::mutex> l(mu_);
    st = OpenTrap(*seg);
    if (st.ok()) segments_.push_back(std::move(seg));
  }
  if (!st.ok()) {
    std::string msg = fmt::format("svm: sharing the program's globals failed: {}\n", st.message());
    (void)!write(2, msg.data(), msg.size());
    _exit(svmd::kStartupFailedStatus);
  }
  return Status::Ok();
}

// Meets the other nodes through svmrun, connects the NIC and builds the
// protocol node.
Status Runtime::Connect() {
  Segment& heap = *segments_.front();
  geometry_.page_size = kMinPageSize;
  geometry_.nodes = opts_.nodes;
  geometry_.pages = heap.pages();
  reassembler_ = std::make_unique<Reassembler>(opts_.nodes);

  if (opts_.transport == "verbs") {
    // svmrun checked for an RDMA device. The verbs NIC takes local buffers
    // only from registered memory, and the runtime's messages and one-sided
    // buffers are not there yet.
    return Status::Unsupported(
        "--transport verbs: the runtime does not run over verbs yet (its message and one-sided "
        "buffers are not in registered memory); nic_verbs_selftest checks the fabric itself");
  }
  if (opts_.nodes > 1) {
    svmd::ControlConfig cc;
    if (Status st = svmd::ControlConfig::FromEnv(&cc); !st.ok()) return st;
    std::string me;
#ifdef SVM_HAVE_OFI
    if (opts_.transport == "ofi") {
      const std::string source = LocalAddressToward(cc.control_host);
      if (Status st = MakeOfiNic(&opts_, cc, source, &nic_, &me); !st.ok()) return st;
    }
#endif
    if (nic_ == nullptr) {
      if (Status st = CreateNic(cc, &me); !st.ok()) return st;
    }
    if (Status st = svmd::Rendezvous(cc, me, &peers_); !st.ok()) return st;
    svmd::OnTerminate([this] {
      if (exiting_.load()) return;
      // The job is over (another node exited, or svmrun is gone).
      ReportStats();
      std::fflush(nullptr);
      _exit(0);
    });
  }
  if (opts_.nodes == 1 && LocksAtNic(opts_.mode)) {
    // nil takes locks at a NIC even when every lock's home is here.
    nic_ = nic::MakeFakeNic(nic::MakeFakeFabric(1), 0);
    peers_.assign(1, "");
  }

  NodeConfig nc;
  nc.self = opts_.node;
  nc.geometry = geometry_;
  nc.threads = kMaxSlots;
  nc.home_policy = opts_.home;
  nc.epoch = opts_.epoch;
  nc.mode = opts_.mode;
  nc.max_run = opts_.page_run;
  nc.barrier_fanout = opts_.barrier_fanout;
  nc.claim_by_cas = opts_.transport != "tcp";
  if (Status st = ChooseWriteDetection(); !st.ok()) return st;
  nc.scan_writes = scan_writes_;
  nc.masked_direct_diffs = nic_ != nullptr && nic_->StoresMaskedBlocks();  // none in most 1-node jobs
  // Pages of the globals join later; size the Node for the largest program
  // image we accept next to the region.
  nc.geometry.pages += kMaxGlobalsPages;
  geometry_ = nc.geometry;
  // Memory the peers' NICs will access (registered later, in ConnectNic).
  PrepareOneSided();
  if (Status st = OpenExported(); !st.ok()) return st;
  node_ = std::make_unique<Node>(nc, this);

  heap.handler = std::make_unique<SegmentHandler>(this, heap.first);
  return OpenTrap(heap);
}

// The NIC of a job of several nodes, listening; *address is what its peers
// dial. Node k connects to k peers one after another: on a loaded host with
// hundreds of nodes that takes longer than the backends' 20 s default.
Status Runtime::CreateNic(const svmd::ControlConfig& cc, std::string* address) {
  const auto setup = std::max(std::chrono::milliseconds(20'000), std::chrono::milliseconds(250) * opts_.nodes);
  if (opts_.transport == "shm") {
    nic::ShmOptions so;
    so.setup_timeout = setup;
    so.self = opts_.node;
    so.num_nodes = opts_.nodes;
    so.epoch = opts_.epoch;
    so.key = cc.key;
    if (!spin_) {  // the handler and the NIC thread sleep at once too
      so.recv_policy.max_spin = std::chrono::nanoseconds(0);
      so.nic_spin = std::chrono::nanoseconds(0);
    }
    std::unique_ptr<nic::ShmNic> shm;
    if (Status st = nic::ShmNic::Create(so, &shm); !st.ok()) return st;
    *address = shm->listen_address();
    nic_ = std::move(shm);
    return Status::Ok();
  }
  nic::TcpOptions to;
  to.setup_timeout = setup;
  to.self = opts_.node;
  to.num_nodes = opts_.nodes;
  to.epoch = opts_.epoch;
  to.key = cc.key;
  to.seal = cc.seal;  // nodes on several hosts (svmrun: SVM_SEAL)
  to.latency_ns = opts_.net_latency_ns;
  to.bandwidth_bytes_per_s = opts_.net_bandwidth;
  if (!spin_) to.recv_policy.max_spin = std::chrono::nanoseconds(0);
  to.listen = opts_.nic_listen.empty() ? LocalAddressToward(cc.control_host) + ":0" : opts_.nic_listen;
  std::unique_ptr<nic::TcpNic> tcp;
  if (Status st = nic::TcpNic::Create(to, &tcp); !st.ok()) return st;
  *address = tcp->listen_address();
  nic_ = std::move(tcp);
  return Status::Ok();
}

// A job of one node shares nothing: no other node can hold a page, so there
// is nothing to trap (every page would stay untracked) and its memory is
// left to the kernel as a native program's is.
Status Runtime::ChooseWriteDetection() {
  scan_writes_ = false;
  if (opts_.nodes == 1 || opts_.writes == WriteDetection::kFault) return Status::Ok();
  const Status can = prim::ProbeAsyncWrites(opts_.fault);
  if (!can.ok() && opts_.writes == WriteDetection::kScan)
    return Status::Unsupported(fmt::format("--writes scan with --fault {}: {} (--writes fault finds writes by faults)",
                                           prim::ToString(opts_.fault), can.message()));
  scan_writes_ = can.ok();
  stats::SetWriteDetection(scan_writes_ ? "scan" : "fault");
  return Status::Ok();
}

Status Runtime::OpenTrap(Segment& s) {
  if (opts_.nodes == 1) {
    if (mprotect(s.region->app(), s.region->size(), PROT_READ | PROT_WRITE) != 0)
      return Status::Unsupported(fmt::format("mprotect of the {} view: {}", s.name, std::strerror(errno)));
    return Status::Ok();
  }
  prim::TrapOptions options;
  options.async_writes = scan_writes_;
  return prim::FaultTrap::Open(opts_.fault, s.region.get(), s.handler.get(), &s.trap, options);
}

// Serves messages. When idle for a moment it also does what nobody else may
// be there to do: take the notices peers deposit (so their rings never stay
// full for want of a local acquire), and run one-sided completions and
// Node::Poll while no application thread waits to do it.
void Runtime::HandlerLoop() {
  pthread_setname_np(pthread_self(), "svm-handler");
  stats::RegisterThread(stats::ThreadKind::kHandler, opts_.node, 0);
  nic::Message batch[16];
  while (!stopping_.load(std::memory_order_relaxed)) {
    const bool poll = poll_hint_.load(std::memory_order_relaxed);
    const int64_t holding_since = holding_since_ns_.load(std::memory_order_relaxed);
    const auto idle = poll || holding_since != 0 ? std::chrono::milliseconds(1)
                           : rings_ ? std::chrono::milliseconds(5) : std::chrono::milliseconds(200);
    // One spinner a CPU: while waiting application threads spin on this
    // queue (and take its messages), this thread does not spin beside them.
    const bool ready = nic_->recv_queue().WaitReady(idle, [this] {
      return spinning_waiters_.load(std::memory_order_relaxed) < cpus_here_;
    });
    if (ready) {
      std::lock_guard<std::mutex> d(dispatch_mu_);
      size_t n = nic_->recv_queue().Poll(batch);
      for (size_t i = 0; i < n; ++i) {
        Dispatch(batch[i].from, batch[i].bytes);
        nic_->Recycle(std::move(batch[i].bytes));
      }
    }
    if (rings_) rings_->Drain();
    // A barrier of this node's subtree may hold arrivals for a child that is
    // not coming while no thread of this node waits there to give up.
    if (holding_since != 0 && MonotonicNs() - holding_since >= kGatherNs) {
      std::lock_guard<std::mutex> l(mu_);
      if (node_->Holding()) node_->ReportGathered();
      Settle();
    }
    if (poll_hint_.load(std::memory_order_relaxed) || os_cq_.size() != 0) {
      std::lock_guard<std::mutex> l(mu_);
      PollOneSided();
      Settle();
    }
  }
}

namespace {
bool IsProtocolBytes(const nic::Message& m) {
  wire::Header h;
  return !wire::DecodeHeader(m.bytes, &h).ok() || IsProtocolMessage(h.type);
}
}  // namespace

// A thread waiting in the runtime handles the protocol messages at the head
// of the queue, as the handler thread would (a reply it waits for among
// them). Runtime messages stay for the handler thread: their handlers take
// locks (the heap's) that the waiting thread may hold.
bool Runtime::DispatchWhileWaiting() {
  std::unique_lock<std::mutex> d(dispatch_mu_, std::try_to_lock);
  if (!d.owns_lock() || stopping_.load(std::memory_order_relaxed)) return false;
  nic::Message batch[16];
  size_t n = nic_->recv_queue().PollIf(std::span<nic::Message>(batch), IsProtocolBytes);
  for (size_t i = 0; i < n; ++i) {
    Dispatch(batch[i].from, batch[i].bytes);
    nic_->Recycle(std::move(batch[i].bytes));
  }
  return n > 0;
}

void Runtime::Dispatch(NodeId from, std::vector<uint8_t>& bytes) {
  stats::Scope timing(stats::Category::kHandler);
  bool whole = false;
  if (Status st = reassembler_->Feed(from, &bytes, &whole); !st.ok()) {
    spdlog::error("message from node {} refused: {}", from, st.ToString());
    return;
  }
  if (!whole) return;  // a fragment; the rest follows
  wire::Header h;
  const bool header = wire::DecodeHeader(bytes, &h).ok();
  if (!header || IsProtocolMessage(h.type)) {
    {
      std::lock_guard<std::mutex> l(mu_);
      defer_wakes_ = true;
      stats::NodeCall call(node_->stats());
      Status st = node_->Receive(from, bytes);
      if (!st.ok()) spdlog::error("message from node {} refused: {}", from, st.ToString());
      if (header && h.type == MessageType::kLockRequest) lock_requests_in_.fetch_add(1, std::memory_order_release);
      Settle();
      defer_wakes_ = false;
    }
    // The threads the message woke (a barrier's release, a lock's grant)
    // wake once mu_ is free: woken under it, each would block on mu_ at
    // once and need a second wake-up (a crowded host's CPU runs both).
    WakeDeferred();
    return;
  }
  Message m;
  Status st = wire::Decode(bytes, opts_.epoch, opts_.nodes, &m);
  if (!st.ok()) {
    spdlog::error("message from node {} refused: {}", from, st.ToString());
    return;
  }
  stats::CountRuntimeHandler();
  OnRuntimeMessage(from, m);
}

void Runtime::SendMessage(NodeId to, const Message& m) {
  std::vector<uint8_t> bytes = wire::Encode(m, opts_.epoch);
  stats::CountRuntimeMessage(TypeOf(m), bytes.size());
  Send(to, std::move(bytes));
}

[[noreturn]] void Runtime::Serve() {
  // Everything happens on the handler thread and the threads it starts; the
  // job ends when svmrun says so (the control client's callback exits).
  pollfd p{svmd::TerminateFd(), POLLIN, 0};
  while (true) {
    if (p.fd < 0) pause();
    else poll(&p, 1, -1);
  }
}

void Runtime::PrepareExit(int status) {
  exiting_.store(true);
  stats::EndThread();  // the exiting thread's life ends here
  ReportStats();
  std::fflush(nullptr);
  if (opts_.nodes > 1) (void)svmd::ReportExit(status);
  // The job is over everywhere; exit handlers and static destructors must
  // not race with the runtime's own threads.
  stopping_.store(true);
  if (nic_) nic_->recv_queue().StopWaits();  // the handler may be asleep in it
  if (handler_.joinable()) handler_.join();
  spawn_cv_.notify_all();
  if (spawner_.joinable()) spawner_.join();
  if (nic_) nic_->Shutdown();
}

}  // namespace svm::rt

namespace svm::rt {

// At the end of the job: this node's report for svmrun (SVM_STATS_DIR), and
// its counters on stderr (SVM_SHOW_STATS). Once per process.
void Runtime::ReportStats() {
  if (!stats::Enabled() || stats_reported_.exchange(true)) return;
  NodeStats counters;
  uint64_t ring_records = 0, ring_waits = 0;
  {
    // A thread may hold mu_ for a moment; never wait for long at exit.
    std::unique_lock<std::mutex> l(mu_, std::defer_lock);
    for (int i = 0; i < 200 && !l.try_lock(); ++i) usleep(1000);
    if (node_) counters = node_->stats();
    if (rings_) {  // writer side: serialised by mu_
      ring_records = rings_->records_sent();
      ring_waits = rings_->full_waits();
    }
  }
  if (const auto* shm = dynamic_cast<const nic::ShmNic*>(nic_.get())) {
    const nic::ShmNic::Counters c = shm->counters();
    stats::SetNicCounters({true, c.sends, c.remote_ops, c.wakeups, c.drained});
  }
  if (!opts_.stats_dir.empty() && !stats::WriteReport(opts_.stats_dir, opts_.node, counters))
    spdlog::warn("could not write statistics to {}: {}", opts_.stats_dir, std::strerror(errno));
  if (opts_.show_stats) {
    std::string text = stats::ReportText(opts_.node, counters);
    if (rings_)
      text += fmt::format("svm node {}: notice rings: {} records sent, {} waits for a full ring\n",
                          opts_.node, ring_records, ring_waits);
    (void)!write(2, text.data(), text.size());
  }
}

}  // namespace svm::rt
