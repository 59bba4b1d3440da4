// nic_ext/ micro-benchmarks: round trips of SEND 64 B, READ 4 KiB, WRITE 4 KiB
// and CAS between two tcp-backend nodes in this process, streaming WRITE
// bandwidth, and a raw TCP 4 KiB echo over loopback (two threads) measured in
// the same run as the yardstick. Each is run with completion waits in busy
// polling and in the default adaptive mode; the raw echo correspondingly
// spins on non-blocking recv, or blocks in recv. Where libfabric was found,
// the same benchmarks run over the ofi backend with the tcp;ofi_rxm and shm
// providers (names ofi-tcp_*, ofi-shm_*; a provider missing here is skipped
// with its reason); scripts/bench-ofi adds fi_pingpong beside them.
//
// Prints the build facts first, and the ratios to the echo of the same mode
// at the end. Real time is what counts here (waits are the point).
//   build-nic/bench/nic_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>
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

#ifdef SVM_HAVE_OFI
#include "nic_ext/ofi/ofi_transport.h"
#endif
#include "nic_ext/tcp/tcp_transport.h"

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

enum class Backend { kTcp, kOfiTcp, kOfiShm };
const char* Prefix(Backend b) {
  return b == Backend::kTcp ? "nic" : b == Backend::kOfiTcp ? "ofi-tcp" : "ofi-shm";
}
const char* OfiProvider(Backend b) { return b == Backend::kOfiShm ? "shm" : "tcp;ofi_rxm"; }

// Two nodes of one backend. While an Echo lives, node 1 answers every SEND
// with a SEND.
class Pair {
 public:
  Pair(Backend backend, WaitMode mode)
      : backend_(backend), mode_(mode), mem_(2, std::vector<uint64_t>(kRegionBytes / 8)) {
    std::vector<std::string> addrs;
    JobKey key;
    std::random_device rd;
    for (auto& b : key) b = static_cast<uint8_t>(rd());
    key[0] |= 1;  // never all zero
    for (NodeId i = 0; i < 2 && backend != Backend::kTcp; ++i) {
#ifdef SVM_HAVE_OFI
      OfiOptions o;
      o.self = i;
      o.num_nodes = 2;
      o.provider = OfiProvider(backend);
      o.source = "127.0.0.1";
      o.recv_policy = {mode};
      std::unique_ptr<OfiNic> nic;
      Check(OfiNic::Create(o, &nic));
      Check(nic->RegisterRegion({0, mem_[i].data(), kRegionBytes}));
      addrs.push_back(nic->listen_address());
      nics_.push_back(std::move(nic));
#endif
    }
    for (NodeId i = 0; i < 2 && backend == Backend::kTcp; ++i) {
      TcpOptions o;
      o.key = key;
      o.self = i;
      o.num_nodes = 2;
      o.recv_policy = {mode};
      o.nic_spin = NicSpin();
      std::unique_ptr<TcpNic> nic;
      Check(TcpNic::Create(o, &nic));
      Check(nic->RegisterRegion({0, mem_[i].data(), kRegionBytes}));
      addrs.push_back(nic->listen_address());
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

  Nic& nic(NodeId i) { return *nics_[i]; }
  WaitMode mode() const { return mode_; }
  Backend backend() const { return backend_; }

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
  std::vector<std::vector<uint64_t>> mem_;
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

// Why backend b cannot run here, or "".
std::string Unavailable(Backend b) {
  if (b == Backend::kTcp) return "";
#ifdef SVM_HAVE_OFI
  Status s = ProbeOfi(OfiProvider(b));
  return s.ok() ? "" : s.ToString();
#else
  return "libfabric not found at build time";
#endif
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

void BM_TcpEcho(benchmark::State& state, WaitMode mode) {
  const bool spin = mode == WaitMode::kBusyPoll;
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(lfd, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(lfd, 1) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    state.SkipWithError("listen failed");
    close(lfd);
    return;
  }
  int cfd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(cfd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    state.SkipWithError("connect failed");
    close(cfd);
    close(lfd);
    return;
  }
  int sfd = accept(lfd, nullptr, nullptr);
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::thread server([sfd, spin] {
    std::vector<uint8_t> b(kPage);
    while (IoAll(sfd, b.data(), kPage, false, spin) && IoAll(sfd, b.data(), kPage, true, spin)) {
    }
  });
  std::vector<uint8_t> b(kPage, 3);
  for (auto _ : state) {
    if (!IoAll(cfd, b.data(), kPage, true, spin) || !IoAll(cfd, b.data(), kPage, false, spin)) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  shutdown(cfd, SHUT_RDWR);
  server.join();
  close(cfd);
  close(sfd);
  close(lfd);
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
    for (Backend b : {Backend::kTcp, Backend::kOfiTcp, Backend::kOfiShm}) {
      const std::string why = Unavailable(b);
      if (!why.empty()) {
        std::fprintf(stderr, "nic_bench: %s skipped: %s\n", Prefix(b), why.c_str());
        continue;
      }
      const std::string pre = Prefix(b);
      reg(pre + "_send_64", [m, b](benchmark::State& s) { BM_Send64(s, b, m); });
      reg(pre + "_read_4k", [m, b](benchmark::State& s) { BM_OneSided(s, b, m, Opcode::kRead); });
      reg(pre + "_write_4k", [m, b](benchmark::State& s) { BM_OneSided(s, b, m, Opcode::kWrite); });
      reg(pre + "_cas", [m, b](benchmark::State& s) { BM_OneSided(s, b, m, Opcode::kCas); });
      reg(pre + "_write_stream_64k", [m, b](benchmark::State& s) { BM_WriteStream(s, b, m); });
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
  benchmark::AddCustomContext("svm_transport",
                              "nic_*: tcp (io_uring, loopback); ofi-*: libfabric providers; 2 nodes in one process");
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
