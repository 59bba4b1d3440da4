// Options of one node's runtime, read from the SVM_* environment that svmrun
// (or svmd) sets. One table names every variable, its default and meaning;
// SVM_VERBOSE=1 prints the values in effect at start-up.
//
// Read once, at start-up, before the program's own code runs.
#pragma once

#include <cstdint>
#include <string>

#include "libsvm/prim/fault.h"
#include "protocol/geometry.h"
#include "util/status.h"
#include "protocol/types.h"

namespace svm::rt {

enum class Placement : uint8_t { kBlock, kCyclic };
// How writes to tracked pages are found (SVM_WRITES): by scans
// (NodeConfig::scan_writes), by faults, or scans where the backend and the
// kernel allow them.
enum class WriteDetection : uint8_t { kAuto, kScan, kFault };
// Whether a waiting thread spins before it sleeps (SVM_SPIN). kAuto: unless
// this host runs more of the job's nodes than it has CPUs, or a node is
// pinned to fewer CPUs than it has threads that spin, where a spinner
// takes the CPU from the thread it waits for, and waking a sleeper is
// cheap (ShouldSpin).
enum class SpinPolicy : uint8_t { kAuto, kOn, kOff };

struct Options {
  NodeId node = 0;                 // SVM_NODE_ID
  uint32_t nodes = 1;              // SVM_NODES
  uint32_t threads_per_node = 1;   // SVM_THREADS_PER_NODE
  uint32_t host_nodes = 0;         // SVM_HOST_NODES: the job's nodes on this host (0: unknown)
  uint32_t host_cpus = 0;          // SVM_HOST_CPUS: CPUs they share (0: unknown)
  uint64_t host_wake_ns = 0;       // SVM_HOST_WAKE_NS: waking a thread on another CPU (0: unknown)
  SpinPolicy spin = SpinPolicy::kAuto;  // SVM_SPIN
  Placement place = Placement::kBlock;
  Mode mode = Mode::kBase;
  prim::Backend fault = prim::Backend::kUffd;
  WriteDetection writes = WriteDetection::kAuto;  // SVM_WRITES
  std::string transport = "tcp";
  std::string ofi_provider;        // SVM_OFI_PROVIDER: --transport ofi's provider ("" = any)
  uint64_t region_base = 0x200000000000ull;
  uint64_t region_size = 1ull << 30;
  HomePolicy home = HomePolicy::kFirstTouch;
  std::string log_level = "warn";
  std::string stats;               // JSON statistics file, node 0 only
  std::string stats_dir;           // SVM_STATS_DIR: each node writes node-<id>.json there
  std::string control;             // svmrun's control socket; empty: a lone node
  uint32_t epoch = 0;              // SVM_JOB_EPOCH
  std::string nic_listen;          // SVM_NIC_LISTEN; empty: the control link's local address
  uint64_t net_latency_ns = 0;     // SVM_NET_LATENCY: injected at the receiving NIC
  uint64_t net_bandwidth = 0;      // SVM_NET_BANDWIDTH: bytes/s per connection, 0 = unlimited
  uint32_t page_run = 64;  // SVM_PAGE_RUN: most pages a remote fault fetches
  uint32_t barrier_fanout = 8;  // SVM_BARRIER_FANOUT: children a node in the barrier tree
  uint64_t notice_ring = 64 * 1024;  // SVM_NOTICE_RING: bytes per writer's ring
  uint64_t max_send = 1u << 20;      // SVM_MAX_SEND: longer messages go as fragments
  bool share_globals = true;       // SVM_SHARE_GLOBALS
  bool verbose = false;            // SVM_VERBOSE
  bool show_stats = false;         // SVM_SHOW_STATS
  double stall_report_s = 30;      // SVM_STALL_REPORT: spinning threads reported after this; 0 = never
  uint64_t start_delay_ns = 0;     // SVM_START_DELAY (tests): nodes but 0 pause once they serve
};

// Parses the environment. An error names the variable and the valid values.
Status ReadOptions(Options* out);

// The CPUs a node sees: those online on the host, and those of its
// affinity mask (a share of them under svmrun --pin). 0: unknown.
struct Cpus {
  uint32_t online = 0;
  uint32_t allowed = 0;
};
// This process's view (sysconf, sched_getaffinity).
Cpus CpusHere();

// Whether waiting threads should spin before they sleep: o's SVM_SPIN, and
// for auto, whether the host has a CPU for each of its nodes or the nodes
// run several threads each, unless a node of one thread is confined to
// fewer CPUs than the threads that spin in it (the program's, the
// handler's and the NIC's) on a host where a wake-up from another CPU
// costs less than 15 us (or is unknown). Unknown counts (0) count as enough CPUs,
// except that every node of an shm job runs on this host and
// SVM_HOST_CPUS missing means the online count.
bool ShouldSpin(const Options& o, Cpus cpus);
// Whether waits for other threads may spin longer than kWaitSpinNs when
// recent waits were short (Runtime::SpinThenSleep's adaptive budget).
bool ShouldSpinLong(const Options& o, Cpus cpus);
// auto: whether a waiting thread must not spin now because its node, the
// only one of its job, runs more program threads than it has CPUs: it waits
// only for its own threads (no messages come), and a spin takes the CPU of
// the thread it waits for. Nodes of a larger job spin on (their waits are
// mostly for messages).
bool Crowded(const Options& o, uint32_t threads, uint32_t node_cpus);
// How many CPUs this node's threads may use: those of its affinity mask
// (svmrun --pin), at most its share of the host's CPUs, at least 1.
uint32_t NodeCpus(const Options& o, Cpus cpus);

// One line per variable (value as set, or "(default)"), for SVM_VERBOSE.
std::string DescribeEnvironment();

}  // namespace svm::rt
