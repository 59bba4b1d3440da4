// nic_ext/ micro-benchmarks: round trips of SEND 64 B, READ 4 KiB, WRITE 4 KiB
// and CAS between two nodes in this process, on the tcp and on the shm
// backend, streaming WRITE bandwidth, and the yardsticks measured in the same
// run: a raw TCP 4 KiB echo over loopback (two threads), a local 4 KiB memcpy
// and a futex ping-pong between two threads. Each is run with completion
// waits in busy polling and in the default adaptive mode; the raw echo
// correspondingly spins on non-blocking recv, or blocks in recv; and once,
// tcp_echo_4k_cq_spin, spins on an io_uring completion queue instead. Where
// libfabric was found, the same benchmarks run over the ofi backend with the
// tcp;ofi_rxm and shm providers (ofi-tcp/*, ofi-shm/*); scripts/bench-ofi adds
// fi_pingpong beside them.
//
// Prints the build facts first, and the ratios to the echo of the same mode
// at the end. Real time is what counts here (waits are the point).
//   build/bench/nic_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>
#include <liburing.h>
#include <netinet/in.h>
#include <sched.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <linux/futex.h>
#include <sys/syscall.h>

#include "nic_ext/shm/shm_transport.h"
#ifdef SVM_HAVE_OFI
#include "nic_ext/ofi/ofi_transport.h"
#endif
#include "nic_ext/tcp/tcp_transport.h"
#include "util/coding.h"
#include "util/shared_memory.h"

#ifndef SVM_BUILD_TYPE
#define SVM_BUILD_TYPE "unknown"
#endif

namespace svm::nic {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kRegionBytes = 16 << 20;
constexpr size_t kStreamChunk = 64 << 10;
constexpr int kStreamWindow = 16;
constexpr auto kTimeout = std::chrono::seconds(30);

// Config (one knob): SVM_NIC_SPIN_NS, how long each NIC thread polls its ring
// before sleeping (default 0).
std::chrono::nanoseconds NicSpin() {
  const char* v = std::getenv("SVM_NIC_SPIN_NS");
  return std::chrono::nanoseconds(v != nullptr ? std::strtoll(v, nullptr, 10) : 0);
}

const char* ModeName(WaitMode m) { return m == WaitMode::kBusyPoll ? "busy" : "adaptive"; }

// kTcpSealed: tcp with AES-GCM sealing (TcpOptions::seal, as between hosts).
enum class Backend { kTcp, kShm, kOfiTcp, kOfiShm, kTcpSealed };
const char* BackendName(Backend b) {
  switch (b) {
    case Backend::kTcp: return "tcp";
    case Backend::kTcpSealed: return "tcp-sealed";
    case Backend::kShm: return "shm";
    case Backend::kOfiTcp: return "ofi-tcp";
    case Backend::kOfiShm: return "ofi-shm";
  }
  return "?";
}
const char* OfiProvider(Backend b) { return b == Backend::kOfiShm ? "shm" : "tcp;ofi_rxm"; }

// Two nodes of one backend. While an Echo lives, node 1 answers every SEND
// with a SEND.
class Pair {
 public:
  Pair(Backend backend, WaitMode mode) : backend_(backend), mode_(mode), mem_(2) {
    std::vector<std::string> addrs;
    JobKey key;
    std::random_device rd;
    for (auto& b : key) b = static_cast<uint8_t>(rd());
    key[0] |= 1;  // never all zero
    for (NodeId i = 0; i < 2; ++i) {
      Check(SharedMemory::Create("nic-bench", kRegionBytes, &mem_[i]));
      std::unique_ptr<Nic> nic;
      if (backend == Backend::kTcp || backend == Backend::kTcpSealed) {
        TcpOptions o;
        o.key = key;
        o.seal = backend == Backend::kTcpSealed;
        o.self = i;
        o.num_nodes = 2;
        o.recv_policy = {mode};
        o.nic_spin = NicSpin();
        std::unique_ptr<TcpNic> tcp;
        Check(TcpNic::Create(o, &tcp));
        addrs.push_back(tcp->listen_address());
        nic = std::move(tcp);
      } else if (backend == Backend::kShm) {
        ShmOptions o;
        o.key = key;
        o.self = i;
        o.num_nodes = 2;
        o.recv_policy = {mode};
        std::unique_ptr<ShmNic> shm;
        Check(ShmNic::Create(o, &shm));
        addrs.push_back(shm->listen_address());
        nic = std::move(shm);
      } else {
#ifdef SVM_HAVE_OFI
        OfiOptions o;
        o.self = i;
        o.num_nodes = 2;
        o.provider = OfiProvider(backend);
        o.source = "127.0.0.1";
        o.recv_policy = {mode};
        std::unique_ptr<OfiNic> ofi;
        Check(OfiNic::Create(o, &ofi));
        addrs.push_back(ofi->listen_address());
        nic = std::move(ofi);
#endif
      }
      Check(nic->RegisterRegion({0, mem_[i].data(), kRegionBytes, mem_[i].fd(), 0}));
      nics_.push_back(std::move(nic));
    }
    std::thread t([&] { Check(nics_[1]->Connect(addrs)); });
    Check(nics_[0]->Connect(addrs));
    t.join();
  }

  void StartEcho() {
    stop_ = false;
    echo_ = std::thread([this] { Echo(); });
  }
  void StopEcho() {
    stop_ = true;
    echo_.join();
  }

  // Both stop before either is destroyed (ofi over shm: see tests/nic/nic_cluster.h).
  ~Pair() {
    for (auto& n : nics_) n->Shutdown();
  }

  Nic& nic(NodeId i) { return *nics_[i]; }
  Backend backend() const { return backend_; }
  WaitMode mode() const { return mode_; }

 private:
  static void Check(const Status& s) {
    if (!s.ok()) {
      std::fprintf(stderr, "nic_bench: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  void Echo() {
    CompletionQueue cq({mode_});
    Message m;
    while (!stop_) {
      if (nics_[1]->recv_queue().Wait({&m, 1}, std::chrono::milliseconds(50)) == 0) continue;
      Sge s{m.bytes.data(), static_cast<uint32_t>(m.bytes.size())};
      WorkRequest wr = WorkRequest::Send(0, {&s, 1});
      wr.signaled = false;
      Check(nics_[1]->Post(&cq, {&wr, 1}));
    }
  }

  Backend backend_;
  WaitMode mode_;
  std::vector<SharedMemory> mem_;
  std::vector<std::unique_ptr<Nic>> nics_;
  std::atomic<bool> stop_{false};
  std::thread echo_;
};

// One pair at a time (an idle pair costs nothing, but keep the box quiet).
std::unique_ptr<Pair> g_pair;  // reset by main before exit
Pair& GetPair(Backend backend, WaitMode mode) {
  if (!g_pair || g_pair->mode() != mode || g_pair->backend() != backend) {
    g_pair.reset();
    g_pair = std::make_unique<Pair>(backend, mode);
  }
  return *g_pair;
}

Completion WaitOrDie(CompletionQueue& cq, benchmark::State& state) {
  Completion c;
  if (cq.Wait({&c, 1}, kTimeout) != 1 || c.status != WcStatus::kSuccess) {
    state.SkipWithError("completion missing or failed");
  }
  return c;
}

void BM_Send64(benchmark::State& state, Backend b, WaitMode mode) {
  Pair& p = GetPair(b, mode);
  CompletionQueue cq({mode});
  uint8_t buf[64] = {};
  Sge s{buf, sizeof buf};
  WorkRequest wr = WorkRequest::Send(1, {&s, 1});
  wr.signaled = false;
  Message m;
  p.StartEcho();
  for (auto _ : state) {
    if (!p.nic(0).Post(&cq, {&wr, 1}).ok() ||
        p.nic(0).recv_queue().Wait({&m, 1}, kTimeout) != 1) {
      state.SkipWithError("send ping-pong failed");
      break;
    }
  }
  p.StopEcho();
}

void BM_OneSided(benchmark::State& state, Backend b, WaitMode mode, Opcode op) {
  Pair& p = GetPair(b, mode);
  CompletionQueue cq({mode});
  std::vector<uint8_t> buf(kPage, 1);
  Sge s{buf.data(), kPage};
  WorkRequest wr = op == Opcode::kRead    ? WorkRequest::Read(1, 0, kPage, {&s, 1})
                   : op == Opcode::kWrite ? WorkRequest::Write(1, 0, kPage, {&s, 1})
                                          : WorkRequest::Cas(1, 0, 0, 0, 0);
  for (auto _ : state) {
    if (!p.nic(0).Post(&cq, {&wr, 1}).ok()) state.SkipWithError("post failed");
    WaitOrDie(cq, state);
  }
  if (op != Opcode::kCas) state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

// Unsignaled 64 KiB WRITEs, every kStreamWindow-th signaled, at most two
// windows outstanding.
void BM_WriteStream(benchmark::State& state, Backend b, WaitMode mode) {
  Pair& p = GetPair(b, mode);
  CompletionQueue cq({mode});
  std::vector<uint8_t> buf(kStreamChunk, 2);
  Sge s{buf.data(), static_cast<uint32_t>(kStreamChunk)};
  int outstanding = 0;
  uint64_t off = 0;
  for (auto _ : state) {
    std::vector<WorkRequest> wrs;
    for (int i = 0; i < kStreamWindow; ++i) {
      wrs.push_back(WorkRequest::Write(1, 0, off, {&s, 1}));
      wrs.back().signaled = (i == kStreamWindow - 1);
      off = (off + kStreamChunk) % kRegionBytes;
    }
    if (!p.nic(0).Post(&cq, wrs).ok()) state.SkipWithError("post failed");
    if (++outstanding == 2) {
      WaitOrDie(cq, state);
      --outstanding;
    }
  }
  while (outstanding-- > 0) WaitOrDie(cq, state);
  state.SetBytesProcessed(int64_t(state.iterations()) * kStreamWindow * kStreamChunk);
}

// 16 READs of 4 KiB to one peer in one Post, only the last signaled
// (completions come in posting order): a batch of page fetches, as a fault
// in rf makes. Backends that fence every WR pay 16 round trips.
void BM_ReadBatch(benchmark::State& state, Backend b, WaitMode mode) {
  Pair& p = GetPair(b, mode);
  CompletionQueue cq({mode});
  constexpr int kBatch = 16;
  std::vector<uint8_t> buf(kBatch * kPage);
  std::vector<Sge> sges(kBatch);
  std::vector<WorkRequest> wrs;
  for (int i = 0; i < kBatch; ++i) {
    sges[i] = {buf.data() + i * kPage, static_cast<uint32_t>(kPage)};
    wrs.push_back(WorkRequest::Read(1, 0, uint64_t(i) * kPage, {&sges[i], 1}));
    wrs.back().signaled = (i == kBatch - 1);
  }
  for (auto _ : state) {
    if (!p.nic(0).Post(&cq, wrs).ok()) state.SkipWithError("post failed");
    WaitOrDie(cq, state);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kBatch * kPage);
}

// A direct diff of one page as radix makes them (dd, nil): 512 runs of 3
// changed bytes, 8 bytes apart, then the page's 8-byte version, signaled.
// As a WRITE per run (every backend), or as one WRITE_RUNS of the runs'
// encoding (where the NIC offers it), as Runtime::WriteDiff does.
void BM_WriteRuns(benchmark::State& state, Backend b, WaitMode mode, bool one_request) {
  Pair& p = GetPair(b, mode);
  CompletionQueue cq({mode});
  constexpr int kRuns = 512;
  std::vector<uint8_t> bytes(kRuns * 3, 7);
  std::vector<uint8_t> encoded;
  for (int i = 0; i < kRuns; ++i) {
    uint8_t header[kRunHeaderBytes];
    coding::EncodeFixed(header, uint32_t(i * 8));
    coding::EncodeFixed(header + 4, uint32_t(3));
    encoded.insert(encoded.end(), header, header + sizeof header);
    encoded.insert(encoded.end(), bytes.begin() + 3 * i, bytes.begin() + 3 * i + 3);
  }
  uint64_t version = 1;
  Sge v{&version, sizeof version};
  std::vector<WorkRequest> wrs;
  for (auto _ : state) {
    wrs.clear();
    if (one_request) {
      Sge all{encoded.data(), uint32_t(encoded.size())};
      wrs.push_back(WorkRequest::WriteRuns(1, 0, 0, {&all, 1}));
      wrs.back().signaled = false;
    } else {
      Sge run{};
      WorkRequest w = WorkRequest::Write(1, 0, 0, {&run, 1});
      w.signaled = false;
      for (int i = 0; i < kRuns; ++i) {
        w.offset = uint64_t(i) * 8;
        w.sge[0] = {bytes.data() + 3 * i, 3};
        wrs.push_back(w);
      }
    }
    wrs.push_back(WorkRequest::Write(1, 0, kPage, {&v, 1}));
    if (!p.nic(0).Post(&cq, wrs).ok()) state.SkipWithError("post failed");
    WaitOrDie(cq, state);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kRuns);
}

// 4 KiB READs, kStreamWindow outstanding: READ throughput (a page server's load).
void BM_ReadStream(benchmark::State& state, Backend b, WaitMode mode) {
  Pair& p = GetPair(b, mode);
  CompletionQueue cq({mode});
  std::vector<uint8_t> buf(kStreamWindow * kPage);
  uint64_t off = 0;
  std::vector<WorkRequest> wrs;
  std::vector<Sge> sges(kStreamWindow);
  std::vector<Completion> done(kStreamWindow);
  for (auto _ : state) {
    wrs.clear();
    for (int i = 0; i < kStreamWindow; ++i) {
      sges[i] = Sge{buf.data() + i * kPage, uint32_t(kPage)};
      wrs.push_back(WorkRequest::Read(1, 0, off, {&sges[i], 1}));
      off = (off + kPage) % kRegionBytes;
    }
    if (!p.nic(0).Post(&cq, wrs).ok()) state.SkipWithError("post failed");
    for (int got = 0; got < kStreamWindow;) {
      const size_t n = cq.Wait({done.data(), done.size()}, kTimeout);
      if (n == 0) {
        state.SkipWithError("READ completions missing");
        break;
      }
      got += int(n);
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kStreamWindow * kPage);
  state.SetItemsProcessed(int64_t(state.iterations()) * kStreamWindow);
}

// ---- raw TCP 4 KiB echo: the yardstick -----------------------------------

// spin: non-blocking calls in a loop that yields now and then, as the NIC's
// busy-polling waits do (with 2 cores, a pure spin starves the peer thread).
bool IoAll(int fd, uint8_t* p, size_t n, bool write, bool spin) {
  for (uint32_t tries = 1; n > 0; ++tries) {
    int flags = MSG_NOSIGNAL | (spin ? MSG_DONTWAIT : 0);
    ssize_t r = write ? send(fd, p, n, flags) : recv(fd, p, n, flags);
    if (r < 0 && errno == EAGAIN) {
      if (tries % 64 == 0) sched_yield();
      continue;
    }
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A loopback TCP connection: the listener, the client and the server end,
// closed with it.
struct EchoPair {
  int lfd = -1, cfd = -1, sfd = -1;
  ~EchoPair() {
    for (int fd : {cfd, sfd, lfd})
      if (fd >= 0) close(fd);
  }
};

// Makes *e, both ends TCP_NODELAY; false (the benchmark skipped) if it
// could not be made.
bool Connect(benchmark::State& state, EchoPair* e) {
  e->lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(e->lfd, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(e->lfd, 1) != 0 ||
      getsockname(e->lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    state.SkipWithError("listen failed");
    return false;
  }
  e->cfd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(e->cfd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    state.SkipWithError("connect failed");
    return false;
  }
  e->sfd = accept(e->lfd, nullptr, nullptr);
  if (e->sfd < 0) {
    state.SkipWithError("accept failed");
    return false;
  }
  int one = 1;
  setsockopt(e->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(e->sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

// The echo's server end: returns each 4 KiB it reads until the client shuts
// the connection down.
std::thread EchoServer(int sfd, bool spin) {
  return std::thread([sfd, spin] {
    std::vector<uint8_t> b(kPage);
    while (IoAll(sfd, b.data(), kPage, false, spin) && IoAll(sfd, b.data(), kPage, true, spin)) {
    }
  });
}

// The reply awaited on an io_uring completion queue's memory: the send and
// the receive go in one io_uring_enter, and the client spins on the queue
// with no system call per look. The kernel posts the receive's completion
// from task work, which an arrival makes it run by interrupting the
// spinning thread (a ring without COOP_TASKRUN or DEFER_TASKRUN): what
// "spin on memory, not on syscalls" costs over tcp (issue 14), against
// tcp_echo_4k/busy, whose client spins on non-blocking receives.
void BM_TcpEchoCqSpin(benchmark::State& state) {
  EchoPair e;
  if (!Connect(state, &e)) return;
  io_uring ring;
  if (int rc = io_uring_queue_init(8, &ring, 0); rc < 0) {
    state.SkipWithError("io_uring_queue_init failed");
    return;
  }
  std::thread server = EchoServer(e.sfd, true);
  std::vector<uint8_t> b(kPage, 3);
  uint64_t enters = 0;
  for (auto _ : state) {
    bool ok = true;
    for (size_t got = 0; ok && got < kPage;) {
      if (got == 0) {
        io_uring_sqe* s = io_uring_get_sqe(&ring);
        io_uring_prep_send(s, e.cfd, b.data(), kPage, MSG_NOSIGNAL);
        s->flags |= IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
      }
      io_uring_sqe* r = io_uring_get_sqe(&ring);
      io_uring_prep_recv(r, e.cfd, b.data() + got, kPage - got, 0);
      io_uring_submit(&ring);
      ++enters;
      io_uring_cqe* c = nullptr;
      while (io_uring_peek_cqe(&ring, &c) != 0 || c == nullptr) internal::CpuRelax();
      ok = c->res > 0;
      if (ok) got += size_t(c->res);
      io_uring_cqe_seen(&ring, c);
    }
    if (!ok) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  state.counters["enters"] = benchmark::Counter(double(enters), benchmark::Counter::kAvgIterations);
  shutdown(e.cfd, SHUT_RDWR);
  server.join();
  io_uring_queue_exit(&ring);
}

void BM_TcpEcho(benchmark::State& state, WaitMode mode) {
  const bool spin = mode == WaitMode::kBusyPoll;
  EchoPair e;
  if (!Connect(state, &e)) return;
  std::thread server = EchoServer(e.sfd, spin);
  std::vector<uint8_t> b(kPage, 3);
  for (auto _ : state) {
    if (!IoAll(e.cfd, b.data(), kPage, true, spin) || !IoAll(e.cfd, b.data(), kPage, false, spin)) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  shutdown(e.cfd, SHUT_RDWR);
  server.join();
}

// ---- local yardsticks of the shm backend ----------------------------------
void BM_Memcpy4k(benchmark::State& state) {
  std::vector<uint8_t> a(kPage, 1), b(kPage);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kPage);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kPage);
}

// A futex ping-pong between two threads: a wake and a wait each way, the
// cost of a sleeping shm peer (spin: the waiter polls the word first).
void BM_FutexPingPong(benchmark::State& state, WaitMode mode) {
  std::atomic<uint32_t> word{0};
  auto futex = [&](int op, uint32_t v) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op | FUTEX_PRIVATE_FLAG, v, nullptr, nullptr, 0);
  };
  auto wait_for = [&](uint32_t v) {
    for (int i = 0; mode == WaitMode::kBusyPoll && i < 1 << 16 && word.load() != v; ++i) {
      if ((i & 63) == 0) sched_yield();
    }
    uint32_t w;
    while ((w = word.load()) != v && w != UINT32_MAX) futex(FUTEX_WAIT, w);
  };
  std::thread peer([&] {
    for (uint32_t i = 1;; i += 2) {
      wait_for(i);
      if (word.load() == UINT32_MAX) return;
      word.store(i + 1);
      futex(FUTEX_WAKE, 1);
    }
  });
  uint32_t v = 0;
  for (auto _ : state) {
    word.store(++v);
    futex(FUTEX_WAKE, 1);
    wait_for(++v);
  }
  word.store(UINT32_MAX);
  futex(FUTEX_WAKE, 1);
  peer.join();
}

// ---- ratios ----------------------------------------------------------------

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      times_[r.run_name.str()] = r.GetAdjustedRealTime();
      if (std::find(order_.begin(), order_.end(), r.run_name.str()) == order_.end()) {
        order_.push_back(r.run_name.str());
      }
    }
  }
  void PrintRatios() const {
    std::printf("\nratios to the raw TCP 4 KiB echo of the same mode (real time):\n");
    for (const std::string& name : order_) {
      const char* mode = name.find("/busy") != std::string::npos ? "/busy" : "/adaptive";
      auto base = times_.end();
      for (auto it = times_.begin(); it != times_.end(); ++it) {
        if (it->first.starts_with(std::string("tcp_echo_4k") + mode)) base = it;
      }
      if (base == times_.end()) continue;
      std::printf("  %-40s %10.2f us  %6.2fx\n", name.c_str(), times_.at(name),
                  times_.at(name) / base->second);
    }
  }

 private:
  std::map<std::string, double> times_;
  std::vector<std::string> order_;
};

void Register() {
  for (WaitMode m : {WaitMode::kBusyPoll, WaitMode::kAdaptive}) {
    std::string mode = ModeName(m);
    auto reg = [&](const std::string& name, auto fn) {
      benchmark::RegisterBenchmark((name + "/" + mode).c_str(), fn)->UseRealTime()->Unit(benchmark::kMicrosecond);
    };
    reg("tcp_echo_4k", [m](benchmark::State& s) { BM_TcpEcho(s, m); });
    if (m == WaitMode::kBusyPoll) reg("tcp_echo_4k_cq_spin", [](benchmark::State& s) { BM_TcpEchoCqSpin(s); });
    reg("memcpy_4k", [](benchmark::State& s) { BM_Memcpy4k(s); });
    reg("futex_pingpong", [m](benchmark::State& s) { BM_FutexPingPong(s, m); });
    std::vector<Backend> backends = {Backend::kTcp, Backend::kTcpSealed, Backend::kShm};
#ifdef SVM_HAVE_OFI
    for (Backend b : {Backend::kOfiTcp, Backend::kOfiShm})
      if (ProbeOfi(OfiProvider(b)).ok()) backends.push_back(b);
#endif
    for (Backend b : backends) {
      const std::string n = BackendName(b);
      reg(n + "/nic_send_64", [b, m](benchmark::State& s) { BM_Send64(s, b, m); });
      reg(n + "/nic_read_4k", [b, m](benchmark::State& s) { BM_OneSided(s, b, m, Opcode::kRead); });
      reg(n + "/nic_write_4k", [b, m](benchmark::State& s) { BM_OneSided(s, b, m, Opcode::kWrite); });
      reg(n + "/nic_cas", [b, m](benchmark::State& s) { BM_OneSided(s, b, m, Opcode::kCas); });
      reg(n + "/nic_write_stream_64k", [b, m](benchmark::State& s) { BM_WriteStream(s, b, m); });
      reg(n + "/nic_read_16x4k", [b, m](benchmark::State& s) { BM_ReadBatch(s, b, m); });
      reg(n + "/nic_read_stream_4k", [b, m](benchmark::State& s) { BM_ReadStream(s, b, m); });
      reg(n + "/nic_writes_512", [b, m](benchmark::State& s) { BM_WriteRuns(s, b, m, false); });
      reg(n + "/nic_write_runs_512", [b, m](benchmark::State& s) { BM_WriteRuns(s, b, m, true); });
    }
  }
}

}  // namespace
}  // namespace svm::nic

int main(int argc, char** argv) {
  benchmark::AddCustomContext("svm_build_type", SVM_BUILD_TYPE);
#ifdef NDEBUG
  benchmark::AddCustomContext("svm_asserts", "off");
#else
  benchmark::AddCustomContext("svm_asserts", "on");
  benchmark::AddCustomContext("svm_warning", "asserts are on: numbers not worth quoting");
#endif
  benchmark::AddCustomContext("svm_transports", "tcp (io_uring, loopback) and shm, 2 nodes in one process");
  benchmark::AddCustomContext("svm_nic_spin_ns", std::to_string(svm::nic::NicSpin().count()));
  benchmark::AddCustomContext("svm_cpus", std::to_string(std::thread::hardware_concurrency()));
  std::string bt = SVM_BUILD_TYPE;
  if (bt == "Debug") std::fprintf(stderr, "WARNING: Debug build; numbers not worth quoting\n");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  svm::nic::Register();
  svm::nic::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  svm::nic::g_pair.reset();
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
