// svmrun's options: one table (flag, SVM_* environment twin, default, help,
// and the typed CLI11 option with its validators) and the choice tables
// behind --mode, --fault, --transport, --home, --place, --pin and
// --log-level. Enabling a mode later is one line in kModes.
//
// Precedence: command-line flag, then the environment twin, then the
// default. A value this build cannot serve is refused before anything
// starts, with a message naming the valid choices.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/status.h"
#include "util/units.h"  // ParseSize, ParseDuration, ParseRate

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace svm::svmd {

struct Choice {
  const char* name;
  bool available;    // false: a known name this build refuses
  const char* why;   // why it is refused ("not implemented yet", "not built")
};

#ifdef SVM_HAVE_OFI
inline constexpr bool kHaveOfi = true;
#else
inline constexpr bool kHaveOfi = false;
#endif
#ifdef SVM_HAVE_VERBS
inline constexpr bool kHaveVerbs = true;
#else
inline constexpr bool kHaveVerbs = false;
#endif

inline constexpr Choice kModes[] = {
    {"base", true, ""}, {"dw", true, ""}, {"rf", true, ""}, {"dd", true, ""}, {"nil", true, ""},
};
inline constexpr Choice kFaults[] = {
    {"uffd", true, ""}, {"uffd-thread", true, ""}, {"mprotect", true, ""}};
// --writes: how writes to shared pages are found (DESIGN.md "Find writes
// without faults"). auto: scan where the fault backend and kernel allow it.
inline constexpr Choice kWrites[] = {{"auto", true, ""}, {"scan", true, ""}, {"fault", true, ""}};
inline constexpr Choice kTransports[] = {
    {"auto", true, ""},  // shm when every node is on this host, else tcp
    {"tcp", true, ""},
    {"shm", true, ""},
    {"verbs", kHaveVerbs, "not built into this svmrun"},
    {"ofi", kHaveOfi, "not built into this svmrun (libfabric was not found at build time)"},
};
// The default shared region: sparse (address space is cheap; memory is
// committed only where touched), kRegionPerNode a node so that one node —
// SPLASH programs allocate everything from main — can hold tens of GiB.
inline constexpr uint64_t kRegionPerNode = 64ull << 30;
inline constexpr uint64_t kMaxAutoRegion = 16ull << 40;
// On one host (shm) every node maps each peer's frames and page versions:
// about nodes x region x (1 + nodes / 1024) of address space, which the auto
// size keeps under this (at 256 nodes: a 204 GiB region).
inline constexpr uint64_t kMaxMappedPeers = 64ull << 40;
uint64_t AutoRegionSize(uint32_t nodes);
inline constexpr uint64_t kUserAddressEnd = 1ull << 47;

inline constexpr Choice kHomes[] = {{"first-touch", true, ""}, {"cyclic", true, ""}, {"block", true, ""}};
inline constexpr Choice kPlaces[] = {{"block", true, ""}, {"cyclic", true, ""}};
inline constexpr Choice kPins[] = {{"none", true, ""}, {"node", true, ""}};
inline constexpr Choice kSpins[] = {{"auto", true, ""}, {"on", true, ""}, {"off", true, ""}};
// --launcher: who starts the nodes (svmd/launch.h). auto: slurm inside an
// allocation, svmd for --hosts with --key-file, ssh for other --hosts or
// --hostfile, else local.
inline constexpr Choice kLaunchers[] = {
    {"auto", true, ""}, {"local", true, ""}, {"svmd", true, ""}, {"ssh", true, ""}, {"slurm", true, ""}};
inline constexpr Choice kLogLevels[] = {{"trace", true, ""}, {"debug", true, ""}, {"info", true, ""},
                                        {"warn", true, ""},  {"error", true, ""}, {"off", true, ""}};

// Ok if value names an available choice; otherwise an error such as
// "--transport verbs is not built into this svmrun; valid choices: tcp".
Status CheckChoice(std::span<const Choice> table, const std::string& flag, const std::string& value);

inline constexpr uint16_t kDefaultSvmdPort = 7117;

struct Options {
  uint32_t nodes = 1;
  uint32_t threads_per_node = 1;
  std::string place = "block";
  std::string mode = "base";
  std::string fault = "uffd";
  std::string writes = "auto";
  std::string transport = "auto";  // resolved by ResolveTransport before a job starts
  std::string ofi_provider;  // --transport ofi: libfabric provider ("" = libfabric's choice)
  uint64_t region_base = 0x200000000000ull;
  uint64_t region_size = 0;  // 0 until parsed: auto is kRegionPerNode a node
  std::string home = "first-touch";
  uint32_t page_run = 64;
  uint32_t barrier_fanout = 8;
  std::string stats;  // JSON statistics file ("" = none)
  double timeout_s = 0;  // 0 = none
  double liveness_timeout_s = 10;  // silence that ends the job; 0 = never
  double stall_report_s = 30;      // threads spinning without protocol progress reported after; 0 = never
  bool tag_output = false;
  bool insecure_network = false;  // multi-host jobs: do not seal traffic between hosts
  std::string log_level = "warn";
  std::string launcher = "auto";   // kLaunchers
  std::vector<std::string> hosts;  // svmd: "host[:port]"; ssh: "host[:slots]"
  std::string hostfile;            // Open MPI's "host slots=N" lines
  std::vector<std::string> env;    // -x VAR or VAR=VALUE: exported to every node
  std::string stdin_target = "0";  // the node that reads svmrun's stdin: N, all or none
  std::string ssh = "ssh -T -o BatchMode=yes";  // the ssh launcher's command, split at blanks
  std::string key_file;            // admin key shared with the svmds
  std::string preload;             // libsvm path, "none", or "" = default
  uint64_t net_latency_ns = 0;     // injected per frame at the receiving NIC; 0 = none
  uint64_t net_bandwidth = 0;      // bytes/s per connection; 0 = unlimited
  std::string pin = "none";        // "node": each node process on its own share of the CPUs
  std::string spin = "auto";       // whether waiting threads spin before they sleep (libsvm/options.h)
  std::vector<std::string> program;  // after --
  bool nodes_given = false;          // -n or SVM_NODES was given (else: one per slot)
  bool region_size_auto = false;     // --region-size auto: follows the node count
};

// Sets the node count once the launcher knows it (a hostfile's slots, a
// Slurm allocation's tasks), re-sizing an auto region to match.
void SetNodeCount(Options* o, uint32_t nodes);

// One row of the options table.
struct OptionSpec {
  const char* flags;  // CLI11 spelling, e.g. "-n,--nodes"
  const char* env;    // environment twin
  const char* def;    // the default as shown (Options' initializer is the value)
  const char* help;
  bool is_switch;     // a flag without value
  // Declares the option on app bound to its field of *o: typed, with CLI11
  // validators (ranges, choices, svm's size/duration/rate units).
  CLI::Option* (*add)(CLI::App& app, const OptionSpec& spec, Options* o);
};
std::span<const OptionSpec> OptionTable();

// Parses argv. Returns Ok with *exit_now = -1 to run; *exit_now >= 0 means
// exit with that code at once (--help, --version, or an error that was
// already printed to stderr).
Status ParseCommandLine(int argc, char** argv, Options* o, int* exit_now);

}  // namespace svm::svmd
