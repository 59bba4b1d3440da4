#include "libsvm/options.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "nic_ext/transport.h"
#include "util/units.h"

namespace svm::rt {
namespace {

// Sizes and addresses: decimal or 0x hex, with an optional K/M/G/T suffix.
bool ParseNumber(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  std::string s(text);
  uint64_t scale = 1;
  switch (s.back()) {
    case 'k': case 'K': scale = 1ull << 10; break;
    case 'm': case 'M': scale = 1ull << 20; break;
    case 'g': case 'G': scale = 1ull << 30; break;
    case 't': case 'T': scale = 1ull << 40; break;
    default: break;
  }
  if (scale != 1) s.pop_back();
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0' || s[0] == '-') return false;
  if (v > UINT64_MAX / scale) return false;
  *out = v * scale;
  return true;
}

Status Bad(const char* var, std::string_view value, std::string_view expected) {
  return Status::InvalidArgument(fmt::format("{}={}: expected {}", var, value, expected));
}

using Apply = Status (*)(const char* var, std::string_view value, Options* o);

struct Row {
  const char* var;
  const char* help;
  Apply apply;
};

template <typename T>
Status Unsigned(const char* var, std::string_view v, T* out, uint64_t lo, uint64_t hi) {
  uint64_t x = 0;
  if (!ParseNumber(v, &x) || x < lo || x > hi)
    return Bad(var, v, fmt::format("a number in [{}, {}]", lo, hi));
  *out = static_cast<T>(x);
  return Status::Ok();
}

Status Bool(const char* var, std::string_view v, bool* out) {
  if (v == "1" || v == "yes" || v == "on" || v == "true") *out = true;
  else if (v == "0" || v == "no" || v == "off" || v == "false" || v.empty()) *out = false;
  else return Bad(var, v, "1/0, yes/no, on/off");
  return Status::Ok();
}

// One of three names, each for its value.
template <typename T>
Status OneOf(const char* var, std::string_view v, T* out, std::array<std::pair<const char*, T>, 3> names) {
  for (const auto& [name, value] : names) {
    if (v == name) {
      *out = value;
      return Status::Ok();
    }
  }
  return Bad(var, v, std::string(names[0].first) + ", " + names[1].first + " or " + names[2].first);
}

constexpr Row kTable[] = {
    {"SVM_NODE_ID", "this node's number",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->node, 0, 4095); }},
    {"SVM_NODES", "nodes in the job",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->nodes, 1, 4096); }},
    {"SVM_THREADS_PER_NODE", "application threads per node (placement)",
     [](const char* k, std::string_view v, Options* o) {
       return Unsigned(k, v, &o->threads_per_node, 1, 1024);
     }},
    {"SVM_PLACE", "thread placement: block or cyclic",
     [](const char* k, std::string_view v, Options* o) {
       if (v == "block") o->place = Placement::kBlock;
       else if (v == "cyclic") o->place = Placement::kCyclic;
       else return Bad(k, v, "block or cyclic");
       return Status::Ok();
     }},
    {"SVM_MODE", "protocol mode: base, dw, rf, dd or nil",
     [](const char* k, std::string_view v, Options* o) {
       if (!ParseMode(std::string(v).c_str(), &o->mode)) return Bad(k, v, "base, dw, rf, dd or nil");
       return Status::Ok();
     }},
    {"SVM_FAULT", "fault backend: uffd, uffd-thread or mprotect",
     [](const char* k, std::string_view v, Options* o) {
       if (!prim::ParseBackend(v, &o->fault)) return Bad(k, v, "uffd, uffd-thread or mprotect");
       return Status::Ok();
     }},
    {"SVM_WRITES", "how writes are found: auto, scan or fault",
     [](const char* k, std::string_view v, Options* o) {
       return OneOf(k, v, &o->writes,
                    {{{"auto", WriteDetection::kAuto}, {"scan", WriteDetection::kScan}, {"fault", WriteDetection::kFault}}});
     }},
    {"SVM_TRANSPORT", "communication layer (tcp, shm, verbs, ofi)",
     [](const char* k, std::string_view v, Options* o) {
#ifdef SVM_HAVE_OFI
       if (v == "ofi") {
         o->transport = v;
         return Status::Ok();
       }
#endif
#ifdef SVM_HAVE_VERBS
       if (v != "tcp" && v != "shm" && v != "verbs") return Bad(k, v, "tcp, shm or verbs");
#else
       if (v != "tcp" && v != "shm") return Bad(k, v, "tcp or shm (verbs is not built into this runtime)");
#endif
       o->transport = v;
       return Status::Ok();
     }},
    {"SVM_REGION_BASE", "address of the shared region",
     [](const char* k, std::string_view v, Options* o) {
       if (!ParseNumber(v, &o->region_base) || o->region_base % kMinPageSize != 0)
         return Bad(k, v, "a page-aligned address");
       return Status::Ok();
     }},
    {"SVM_REGION_SIZE", "bytes in the shared region",
     [](const char* k, std::string_view v, Options* o) {
       if (!ParseNumber(v, &o->region_size) || o->region_size == 0 ||
           o->region_size % kMinPageSize != 0)
         return Bad(k, v, "a positive multiple of 4K");
       return Status::Ok();
     }},
    {"SVM_HOME", "home placement: first-touch, cyclic or block",
     [](const char* k, std::string_view v, Options* o) {
       auto p = ParseHomePolicy(v);
       if (!p) return Bad(k, v, "first-touch, cyclic or block");
       o->home = *p;
       return Status::Ok();
     }},
    {"SVM_LOG_LEVEL", "trace, debug, info, warn, error or off",
     [](const char*, std::string_view v, Options* o) {
       o->log_level = v;
       return Status::Ok();
     }},
    {"SVM_STATS", "write statistics as JSON to this file (node 0)",
     [](const char*, std::string_view v, Options* o) {
       o->stats = v;
       return Status::Ok();
     }},
    {"SVM_STATS_DIR", "each node writes its statistics here (svmrun merges them)",
     [](const char*, std::string_view v, Options* o) {
       o->stats_dir = v;
       return Status::Ok();
     }},
    {"SVM_CONTROL", "svmrun's control socket, host:port",
     [](const char*, std::string_view v, Options* o) {
       o->control = v;
       return Status::Ok();
     }},
    {"SVM_JOB_EPOCH", "job epoch stamped on every message",
     [](const char* k, std::string_view v, Options* o) {
       return Unsigned(k, v, &o->epoch, 0, UINT32_MAX);
     }},
    {"SVM_OFI_PROVIDER", "libfabric provider of --transport ofi (empty: libfabric's choice)",
     [](const char*, std::string_view v, Options* o) {
       o->ofi_provider = v;
       return Status::Ok();
     }},
    {"SVM_NIC_LISTEN", "host:port the NIC listens on",
     [](const char*, std::string_view v, Options* o) {
       o->nic_listen = v;
       return Status::Ok();
     }},
    // Named and written as svmrun's --net-latency / --net-bandwidth twins.
    {"SVM_NET_LATENCY", "injected network latency per message (e.g. 2us)",
     [](const char* k, std::string_view v, Options* o) {
       if (!svmd::ParseDuration(std::string(v), &o->net_latency_ns).ok())
         return Bad(k, v, "a duration (0, 500ns, 2us, 1.5ms)");
       return Status::Ok();
     }},
    {"SVM_NET_BANDWIDTH", "injected bandwidth limit per connection (e.g. 10Gbit, 0 = none)",
     [](const char* k, std::string_view v, Options* o) {
       if (!svmd::ParseRate(std::string(v), &o->net_bandwidth).ok())
         return Bad(k, v, "a rate (0, 100Mbit, 10Gbit, 1.25GB)");
       return Status::Ok();
     }},
    {"SVM_MAX_SEND", "bytes per SEND; longer messages travel as fragments (tests set it low)",
     [](const char* k, std::string_view v, Options* o) {
       if (!ParseNumber(v, &o->max_send) || o->max_send < 64 || o->max_send > nic::kMaxMessage)
         return Bad(k, v, "a number of bytes in [64, 1 MiB]");
       return Status::Ok();
     }},
    // Widens the window between a node serving other nodes (its program
    // threads may start) and its main thread's last start-up steps.
    {"SVM_START_DELAY", "tests: nodes other than 0 pause this long once they serve, before start-up ends",
     [](const char* k, std::string_view v, Options* o) {
       if (!svmd::ParseDuration(std::string(v), &o->start_delay_ns).ok())
         return Bad(k, v, "a duration (0, 500ns, 2us, 1.5ms)");
       return Status::Ok();
     }},
    {"SVM_PAGE_RUN", "most pages a remote fault fetches at once (a page run); 1: one page a fault",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->page_run, 1, kMaxPageRun); }},
    {"SVM_BARRIER_FANOUT", "children a node in the barrier tree (the same on every node); nodes - 1 or more: flat",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->barrier_fanout, 1, 1024); }},
    {"SVM_NOTICE_RING", "bytes of each write-notice ring (dw and up; the same on every node)",
     [](const char* k, std::string_view v, Options* o) {
       if (!ParseNumber(v, &o->notice_ring) || o->notice_ring < 64 || o->notice_ring > (64u << 20) ||
           o->notice_ring % 8 != 0)
         return Bad(k, v, "a multiple of 8 in [64, 64M]");
       return Status::Ok();
     }},
    {"SVM_SHARE_GLOBALS", "share the program's .data and .bss",
     [](const char* k, std::string_view v, Options* o) { return Bool(k, v, &o->share_globals); }},
    {"SVM_VERBOSE", "print the options in effect",
     [](const char* k, std::string_view v, Options* o) { return Bool(k, v, &o->verbose); }},
    {"SVM_STALL_REPORT", "seconds of spinning without protocol progress before threads are reported (0: never)",
     [](const char* k, std::string_view v, Options* o) {
       const std::string text(v);
       char* end = nullptr;
       const double secs = std::strtod(text.c_str(), &end);
       if (text.empty() || *end != '\0' || !(secs >= 0) || secs > 1e7) return Bad(k, v, "a number of seconds");
       o->stall_report_s = secs;
       return Status::Ok();
     }},
    {"SVM_HOST_NODES", "nodes of the job on this host (svmrun and svmd set it)",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->host_nodes, 0, UINT32_MAX); }},
    {"SVM_HOST_CPUS", "CPUs the job's nodes on this host share (svmrun and svmd set it)",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->host_cpus, 0, UINT32_MAX); }},
    {"SVM_HOST_WAKE_NS", "what waking a thread on another CPU costs here, in ns (svmrun and svmd measure it for pinned nodes)",
     [](const char* k, std::string_view v, Options* o) { return Unsigned(k, v, &o->host_wake_ns, 0, 1'000'000'000); }},
    {"SVM_SPIN", "waiting threads spin before they sleep: auto (unless the host has more single-thread nodes than CPUs, or "
     "such a node is pinned to fewer than 3 CPUs where wake-ups are cheap), on, off",
     [](const char* k, std::string_view v, Options* o) {
       return OneOf(k, v, &o->spin, {{{"auto", SpinPolicy::kAuto}, {"on", SpinPolicy::kOn}, {"off", SpinPolicy::kOff}}});
     }},
    {"SVM_SHOW_STATS", "print counters at exit",
     [](const char* k, std::string_view v, Options* o) { return Bool(k, v, &o->show_stats); }},
};

}  // namespace

Status ReadOptions(Options* out) {
  Options o;
  for (const Row& row : kTable) {
    const char* v = std::getenv(row.var);
    if (v == nullptr) continue;
    if (Status st = row.apply(row.var, v, &o); !st.ok()) return st;
  }
  if (o.node >= o.nodes)
    return Status::InvalidArgument(fmt::format("SVM_NODE_ID={} but SVM_NODES={}", o.node, o.nodes));
  if (o.nodes > 1 && o.control.empty())
    return Status::InvalidArgument("SVM_NODES > 1 needs SVM_CONTROL (start jobs with svmrun)");
  *out = std::move(o);
  return Status::Ok();
}

namespace {
// The nodes and CPUs of this host, as far as the options say.
uint32_t HostNodes(const Options& o) { return o.host_nodes != 0 ? o.host_nodes : o.transport == "shm" ? o.nodes : 1; }
uint32_t HostCpus(const Options& o, Cpus c) { return o.host_cpus != 0 ? o.host_cpus : c.online; }

// Whether each of this host's nodes can have a CPU of its own.
bool NodesFitCpus(const Options& o, Cpus c) {
  const uint32_t cpus = HostCpus(o, c);
  return cpus == 0 || HostNodes(o) <= cpus;
}

// Threads of a node that spin besides its program's: the handler and the
// NIC thread.
constexpr uint32_t kServiceThreads = 2;

// A node of one thread confined to fewer CPUs than the threads that spin
// in it: each spin takes the CPU of the thread it waits for. 8 such nodes
// pinned to 2 CPUs each of 16 (medians of 3, not spinning against
// spinning): fft -S seed 214 against 406 ms, radix -S seed 381 against
// 696 ms, but an empty barrier 77 against 40 us; 2 nodes pinned to 1 CPU
// each of 2: a strict lock hand-off 70 against 106 us, fft -m20 and
// Jacobi alike, a barrier 31 against 7.5 us. Nodes with 4 or 8 CPUs each
// gain from spinning (lock pairs 4 x 1 on 16 CPUs: 0.67 against 0.74 s).
// Pinned: fewer CPUs in the node's mask than the job has on this host
// (svmrun's own mask, SVM_HOST_CPUS): a container's cpuset alone is not.
bool Cramped(const Options& o, Cpus c) {
  return o.threads_per_node == 1 && c.allowed != 0 && c.allowed < HostCpus(o, c) &&
         c.allowed < o.threads_per_node + kServiceThreads;
}

// Where waking a thread on another CPU costs this much, a cramped node
// still spins: each message that finds its receiver asleep pays a wake-up,
// and that outweighs what the spinners take from the threads they wait
// for. On a 2-CPU virtual machine waking costs 23-27 us, and 2 x 1 pinned
// over shm ran barnes, ocean and water-nsquared 3-10x faster spinning
// (fft 1.1x and lu base 1.3x slower; doc/scaling.md); the 16-CPU host of the rule above had
// not measured its wake-ups (its local fault cost 2.4 us against 20.7).
constexpr uint64_t kDearWakeNs = 15'000;

// Cramped, and waking a sleeper is cheap enough to sleep at once.
bool SleepAtOnce(const Options& o, Cpus c) { return Cramped(o, c) && o.host_wake_ns < kDearWakeNs; }
}  // namespace

Cpus CpusHere() {
  Cpus c;
  c.online = uint32_t(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN)));
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) c.allowed = uint32_t(CPU_COUNT(&mask));
  return c;
}

uint32_t NodeCpus(const Options& o, Cpus c) {
  uint32_t n = std::max<uint32_t>(1, HostCpus(o, c) / std::max<uint32_t>(1, HostNodes(o)));
  if (c.allowed != 0) n = std::min(n, c.allowed);
  return std::max<uint32_t>(1, n);
}

bool ShouldSpin(const Options& o, Cpus c) {
  if (o.spin != SpinPolicy::kAuto) return o.spin == SpinPolicy::kOn;
  if (SleepAtOnce(o, c)) return false;
  // Nodes of several threads still spin: a thread waiting for a sibling
  // (a local lock hand-off) is better served by a spin that yields to it
  // (10^5 lock pairs 4 x 2 on 2 CPUs: 2.4-3.0 s spinning, 3.6-3.9 s not).
  return NodesFitCpus(o, c) || o.threads_per_node > 1;
}

// 1 x 8 on 2 CPUs, spinning against not: an empty barrier 264 against 54
// us (native 47), a condition queue 167-193 against 40-58 us an item; 4 x 2
// the other way: the queue 84-96 against 173-197 us.
bool Crowded(const Options& o, uint32_t threads, uint32_t node_cpus) {
  return o.spin == SpinPolicy::kAuto && o.nodes == 1 && threads > node_cpus;
}

// Longer spins pay where a node has its CPU (a 2-node hand-off: 80-107 ->
// 33-44 us) but hold the CPU of the thread waited for where nodes share
// CPUs (10^5 lock pairs 4 x 2 on 2 CPUs: 3.2 -> 4.7 s).
bool ShouldSpinLong(const Options& o, Cpus c) {
  if (o.spin != SpinPolicy::kAuto) return o.spin == SpinPolicy::kOn;
  return NodesFitCpus(o, c) && !SleepAtOnce(o, c);
}

std::string DescribeEnvironment() {
  std::string s;
  for (const Row& row : kTable) {
    const char* v = std::getenv(row.var);
    s += fmt::format("  {:<22} {:<16} {}\n", row.var, v ? v : "(default)", row.help);
  }
  return s;
}

}  // namespace svm::rt
