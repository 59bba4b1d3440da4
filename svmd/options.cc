#include "svmd/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <map>

namespace svm::svmd {
namespace {

std::string ChoiceList(std::span<const Choice> table) {
  std::string ok, refused;
  for (const Choice& c : table) {
    std::string& dst = c.available ? ok : refused;
    if (!dst.empty()) dst += ", ";
    dst += c.name;
  }
  std::string s = ok.empty() ? "(none in this build)" : ok;
  if (!refused.empty()) s += " (known but unavailable: " + refused + ")";
  return s;
}

// The long name of a table row ("--nodes" of "-n,--nodes").
std::string LongName(const OptionSpec& s) {
  std::string_view f(s.flags);
  return std::string(f.substr(f.rfind(',') + 1));
}

// CLI11 validators. A failed one's message follows the option's name.

// One of a choice table's names; the type shown is {a,b,c} (available ones).
CLI::Validator Choices(std::span<const Choice> table, std::string flag) {
  std::string shown;
  for (const Choice& c : table)
    if (c.available) shown += std::string(shown.empty() ? "{" : ",") + c.name;
  return CLI::Validator(
      [table, flag](std::string& v) {
        Status s = CheckChoice(table, flag, v);
        return s.ok() ? std::string() : s.message();
      },
      shown + "}");
}

// A number with svm's units (parse: ParseSize, ParseDuration, ParseRate),
// rewritten to the plain integer the field takes.
CLI::Validator Units(Status (*parse)(const std::string&, uint64_t*), std::string name) {
  return CLI::Validator(
      [parse](std::string& text) {
        uint64_t v;
        Status s = parse(text, &v);
        if (!s.ok()) return s.message();
        text = std::to_string(v);
        return std::string();
      },
      name);
}

// A whole number of bytes (after Units) that is a non-zero multiple of 4K
// (0 too where zero_ok), and below `below` if that is non-zero.
CLI::Validator Pages(uint64_t below, std::string what, bool zero_ok = false) {
  return CLI::Validator(
      [below, what, zero_ok](std::string& text) {
        const uint64_t v = std::stoull(text);
        if (v == 0 && zero_ok) return std::string();
        if (v == 0 || v % 4096 != 0 || (below && v >= below)) return "must be " + what;
        return std::string();
      },
      "");
}

// "auto" as 0, anything else through inner.
CLI::Validator AutoOr(CLI::Validator inner) {
  return CLI::Validator(
      [inner](std::string& text) {
        if (text == "auto") {
          text = "0";
          return std::string();
        }
        std::string err = inner(text);
        return err.empty() && text == "0" ? std::string("must be auto or a non-zero size") : err;
      },
      "");
}

CLI::Validator StdinTarget() {
  return CLI::Validator(
      [](std::string& v) {
        if (v == "all" || v == "none") return std::string();
        uint32_t n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size())
          return std::string("must be a node id, all or none");
        return std::string();
      },
      "");
}

// `svmrun --stats -- prog` would otherwise write a file named "--".
CLI::Validator FileName() {
  return CLI::Validator(
      [](std::string& v) {
        return v.starts_with('-') ? "'" + v + "' is not a file name (write ./" + v + " for a file named so)"
                                  : std::string();
      },
      "");
}

CLI::Validator NonEmpty() {
  return CLI::Validator([](std::string& v) { return v.empty() ? std::string("empty host name") : ""; }, "");
}

// Rows bind a flag to its field of Options, typed, with validators.
#define ADD(expr) [](CLI::App& app, const OptionSpec& s, Options* o) -> CLI::Option* { return expr; }
#define OPT(field) app.add_option(s.flags, o->field, s.help)
#define CHOICE(table, field) OPT(field)->check(Choices(table, LongName(s)))

const OptionSpec kTable[] = {
    {"-n,--nodes", "SVM_NODES", "1", "number of nodes (processes) of the job; -np N is the same", false,
     ADD(OPT(nodes)->check(CLI::Range(1u, 1024u))->type_name("N"))},
    {"-t,--threads-per-node", "SVM_THREADS_PER_NODE", "1", "application threads per node", false,
     ADD(OPT(threads_per_node)->check(CLI::Range(1u, 1024u))->type_name("N"))},
    {"--place", "SVM_PLACE", "block", "thread placement", false, ADD(CHOICE(kPlaces, place))},
    {"--mode", "SVM_MODE", "base", "protocol mode", false, ADD(CHOICE(kModes, mode))},
    {"--fault", "SVM_FAULT", "uffd", "fault backend", false, ADD(CHOICE(kFaults, fault))},
    {"--writes", "SVM_WRITES", "auto",
     "how writes to shared pages are found: scan (no fault: userfaultfd's async write-protect and "
     "PAGEMAP_SCAN at releases, uffd backends on Linux 6.7+), fault (a write fault per page and "
     "interval), auto (scan where available)",
     false, ADD(CHOICE(kWrites, writes))},
    {"--transport", "SVM_TRANSPORT", "auto",
     "transport between nodes: auto is shm when every node is on this host (and no network is modelled), "
     "tcp otherwise", false,
     ADD(CHOICE(kTransports, transport))},
    {"--ofi-provider", "SVM_OFI_PROVIDER", "",
     "--transport ofi: the libfabric provider, e.g. tcp;ofi_rxm, shm, verbs;ofi_rxm, efa, cxi (see fi_info -l); "
     "empty: libfabric's first choice",
     false, ADD(OPT(ofi_provider)->type_name("NAME"))},
    {"--region-base", "SVM_REGION_BASE", "0x200000000000", "virtual address of the shared region", false,
     ADD(OPT(region_base)
             ->transform(Units(ParseSize, ""))
             ->check(Pages(1ull << 47, "a non-zero, page-aligned user address"))
             ->type_name("ADDRESS"))},
    {"--region-size", "SVM_REGION_SIZE", "auto",
     "size of the shared region (K/M/G/T suffixes); auto: 64G a node, at most 16T, and less above 30 "
     "nodes (on one host each node maps its peers' regions). Sparse: memory is committed only where the "
     "program touches it",
     false,
     ADD(OPT(region_size)
             ->transform(AutoOr(Units(ParseSize, "")))  // auto: 0, sized once the node count is known
             ->check(Pages(0, "a non-zero multiple of 4K", /*zero_ok=*/true))
             ->type_name("SIZE|auto"))},
    {"--home", "SVM_HOME", "first-touch", "home placement of pages", false, ADD(CHOICE(kHomes, home))},
    {"--page-run", "SVM_PAGE_RUN", "64",
     "most pages a remote fault fetches at once: the pages after it with the same home, once faults look "
     "sequential or strided (the run adapts below this); 1: one page a fault",
     false, ADD(OPT(page_run)->check(CLI::Range(1, 64))->type_name("PAGES"))},
    {"--barrier-fanout", "SVM_BARRIER_FANOUT", "8",
     "children a node in the barrier tree: a node sends its subtree's arrivals up in one message, and "
     "passes the release down; N - 1 or more: node 0 gathers every node (flat, fewer hops, O(N) work at "
     "node 0)",
     false, ADD(OPT(barrier_fanout)->check(CLI::Range(1, 1024))->type_name("N"))},
    {"--stats", "SVM_STATS", "", "write statistics as JSON to FILE", false,
     ADD(OPT(stats)->check(FileName())->type_name("FILE"))},
    {"--timeout", "SVM_TIMEOUT", "0", "end the job after SECONDS (exit 124); 0 = never", false,
     ADD(OPT(timeout_s)->check(CLI::Range(0.0, 1e7))->type_name("SECONDS"))},
    {"--liveness-timeout", "SVM_LIVENESS_TIMEOUT", "10",
     "end the job when a node, svmd or svmrun has not answered for SECONDS (stopped, cut off, stuck); 0 = "
     "never",
     false, ADD(OPT(liveness_timeout_s)->check(CLI::Range(0.0, 1e6))->type_name("SECONDS"))},
    {"--stall-report", "SVM_STALL_REPORT", "30",
     "when a node's threads spin for SECONDS in the program without protocol progress (a flag polled "
     "without synchronization), print once which threads, where, and on which shared page; 0 = never",
     false, ADD(OPT(stall_report_s)->check(CLI::Range(0.0, 1e6))->type_name("SECONDS"))},
    {"--insecure-network", "SVM_INSECURE_NETWORK", "",
     "multi-host jobs: send control and tcp NIC traffic between hosts in clear (no AES-GCM sealing), on a "
     "network that only the job's hosts can reach",
     true, ADD(app.add_flag(s.flags, o->insecure_network, s.help))},
    {"--tag-output", "SVM_TAG_OUTPUT", "", "prefix each output line with [nK]", true,
     ADD(app.add_flag(s.flags, o->tag_output, s.help))},
    {"--log-level", "SVM_LOG_LEVEL", "warn", "svmrun's and the nodes' log level", false,
     ADD(CHOICE(kLogLevels, log_level))},
    {"--launcher", "SVM_LAUNCHER", "auto",
     "who starts the nodes: local processes, pre-started svmd daemons, ssh, or srun inside a Slurm "
     "allocation; auto: slurm inside an allocation, svmd for --hosts with --key-file, ssh for other "
     "--hosts/--hostfile, else local",
     false, ADD(CHOICE(kLaunchers, launcher))},
    {"--hosts", "SVM_HOSTS", "",
     "run on these hosts: HOST[:SLOTS] for ssh, HOST[:PORT] of an svmd (default port 7117); IPv6 "
     "addresses in brackets",
     false,
     ADD(OPT(hosts)
             ->delimiter(',')
             ->allow_extra_args(false)  // one argument; the commas make the list
             ->check(NonEmpty())
             ->type_name("HOST[:N],..."))},
    {"--hostfile", "SVM_HOSTFILE", "", "hosts for ssh, one a line: HOST [slots=N] (Open MPI's format)", false,
     ADD(OPT(hostfile)->check(FileName())->type_name("FILE"))},
    {"--key-file", "SVM_KEY_FILE", "", "0600 file with the key shared with the svmds (for --hosts)", false,
     ADD(OPT(key_file)->check(FileName())->type_name("FILE"))},
    {"-x,--env", "SVM_ENV", "",
     "export VAR (from svmrun's environment) or VAR=VALUE to every node; repeatable. Every node gets "
     "svmrun's environment anyway, except host-specific variables (SLURM_*, SSH_*, HOSTNAME, ...)",
     false, ADD(OPT(env)->allow_extra_args(false)->check(NonEmpty())->type_name("VAR[=VALUE]"))},
    {"--stdin", "SVM_STDIN", "0", "the node that reads svmrun's stdin: a node id, all, or none", false,
     ADD(OPT(stdin_target)->check(StdinTarget())->type_name("N|all|none"))},
    {"--ssh", "SVM_SSH", "ssh -T -o BatchMode=yes",
     "the command the ssh launcher runs as CMD HOST COMMAND (split at blanks)", false,
     ADD(OPT(ssh)->check(NonEmpty())->type_name("CMD"))},
    {"--net-latency", "SVM_NET_LATENCY", "0",
     "inject this latency per message at the receiving NIC (e.g. 2us), to model a cluster network", false,
     ADD(OPT(net_latency_ns)->transform(Units(ParseDuration, ""))->type_name("DURATION"))},
    {"--net-bandwidth", "SVM_NET_BANDWIDTH", "0",
     "limit each connection to this rate (e.g. 10Gbit); 0 = unlimited", false,
     ADD(OPT(net_bandwidth)->transform(Units(ParseRate, ""))->type_name("RATE"))},
    {"--pin", "SVM_PIN", "none",
     "node: bind each node process to its own share of the host's CPUs (several nodes on one host "
     "then do not take each other's CPUs)",
     false, ADD(CHOICE(kPins, pin))},
    {"--spin", "SVM_SPIN", "auto",
     "whether the nodes' waiting threads spin before they sleep: auto spins unless a host has more "
     "one-thread nodes than CPUs, or --pin node leaves such a node fewer than 3 CPUs where waking a "
     "thread on another CPU costs under 15us (measured before the nodes start)",
     false, ADD(CHOICE(kSpins, spin))},
    {"--preload", "SVM_PRELOAD", "", "runtime library to LD_PRELOAD, or 'none' for plain programs", false,
     ADD(OPT(preload)->check(FileName())->type_name("FILE|none"))},
};

#undef CHOICE
#undef OPT
#undef ADD

// Whether flag (as typed, e.g. "-n" or "--mode") is one of spec's names.
bool Names(const OptionSpec& spec, std::string_view flag) {
  std::string_view names(spec.flags);
  while (!names.empty()) {
    const size_t comma = names.find(',');
    if (names.substr(0, comma) == flag) return true;
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
  }
  return false;
}

// Whether flag names an option that takes a value (the next argument).
bool TakesValue(std::string_view flag) {
  if (flag == "-np") return true;
  for (const OptionSpec& spec : kTable)
    if (Names(spec, flag)) return !spec.is_switch;
  return false;
}

}  // namespace

Status CheckChoice(std::span<const Choice> table, const std::string& flag, const std::string& value) {
  for (const Choice& c : table) {
    if (value != c.name) continue;
    if (c.available) return Status::Ok();
    std::string ok;
    for (const Choice& d : table)
      if (d.available) ok += std::string(ok.empty() ? "" : ", ") + d.name;
    return Status::InvalidArgument(flag + " " + value + " is " + c.why + "; valid choices: " + ok);
  }
  return Status::InvalidArgument(flag + " '" + value + "' is unknown; valid choices: " + ChoiceList(table));
}

std::span<const OptionSpec> OptionTable() { return kTable; }

uint64_t AutoRegionSize(uint32_t nodes) {
  const uint64_t n = std::max<uint32_t>(nodes, 1);
  const uint64_t mapped = kMaxMappedPeers / n * 1024 / (1024 + n) & ~((1ull << 30) - 1);
  return std::min({n * kRegionPerNode, kMaxAutoRegion, mapped});
}

void SetNodeCount(Options* o, uint32_t nodes) {
  o->nodes = nodes;
  if (o->region_size_auto) o->region_size = AutoRegionSize(nodes);
}

Status ParseCommandLine(int argc, char** argv, Options* o, int* exit_now) {
  *exit_now = -1;
  // Everything after the first "--" is the program; without "--", the first
  // argument CLI11 cannot place starts it.
  std::vector<std::string> args;
  bool have_dashdash = false;
  bool in_options = true;  // before the program's name
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (!have_dashdash && a == "--") {
      have_dashdash = true;
      continue;
    }
    if (have_dashdash) {
      o->program.push_back(argv[i]);
      continue;
    }
    // -np N: mpirun's spelling of -n (CLI11 takes one-letter single-dash
    // names only). Not inside the program's own arguments.
    if (in_options && (a == "-np" || a.starts_with("-np="))) {
      args.push_back(a == "-np" ? std::string("-n") : "-n" + std::string(a.substr(4)));
      continue;
    }
    args.push_back(argv[i]);
    if (!in_options) continue;
    if (!a.starts_with("-")) {
      in_options = false;  // the program (without "--")
    } else if (a.find('=') == std::string_view::npos && TakesValue(a) && i + 1 < argc) {
      args.push_back(argv[++i]);
    }
  }

  CLI::App app{"svmrun: run a pthreads program across the nodes of a shared virtual memory job",
               "svmrun"};
  app.footer(
      "Usage: svmrun [OPTIONS] -- PROGRAM [ARGS...]\n"
      "Every option has an SVM_* environment twin (shown as (Env:...)); the flag wins.");
  app.set_version_flag("--version", std::string("svmrun ") + SVM_VERSION + " (commit " SVM_GIT_COMMIT ")");
  if (!have_dashdash) app.prefix_command();
  std::vector<CLI::Option*> opts;
  for (const OptionSpec& spec : kTable) {
    CLI::Option* opt = spec.add(app, spec, o);
    opt->envname(spec.env);
    if (*spec.def) opt->default_str(spec.def);
    opts.push_back(opt);
  }
  const std::vector<std::string> typed = args;  // app.parse consumes args
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e, std::cout, std::cerr);
    *exit_now = (e.get_exit_code() == 0) ? 0 : 2;
    (void)rc;
    if (*exit_now != 0) std::cerr << "svmrun: see svmrun --help\n";
    return Status::Ok();
  }
  if (!have_dashdash) {
    for (auto& r : app.remaining()) o->program.push_back(r);
  }
  const char* verbose = std::getenv("SVM_VERBOSE");
  if (verbose && *verbose && std::string_view(verbose) != "0") {
    std::cerr << "svmrun: options in effect (SVM_VERBOSE):\n";
    for (size_t i = 0; i < std::size(kTable); ++i) {
      const OptionSpec& spec = kTable[i];
      const bool on_line = std::any_of(typed.begin(), typed.end(), [&](const std::string& a) {
        return Names(spec, std::string_view(a).substr(0, a.find('=')));
      });
      std::string text = spec.def;
      if (opts[i]->count() > 0) {
        text.clear();
        for (const std::string& r : opts[i]->results()) text += (text.empty() ? "" : ",") + r;
      }
      const char* from = opts[i]->count() == 0 ? "default" : on_line ? "flag" : spec.env;
      std::cerr << "  " << LongName(spec) << " = " << (text.empty() ? "\"\"" : text) << "  (" << from
                << ")\n";
    }
  }
  o->nodes_given = opts[0]->count() > 0;  // kTable's first row is -n
  o->region_size_auto = o->region_size == 0;
  SetNodeCount(o, o->nodes);
  if (o->region_base + o->region_size > kUserAddressEnd) {
    std::cerr << "svmrun: --region-size " << o->region_size << " at --region-base " << std::hex
              << std::showbase << o->region_base << std::dec
              << " runs past the end of the user address space (1 << 47)\n";
    *exit_now = 2;
    return Status::Ok();
  }
  if (o->program.empty()) {
    std::cerr << "svmrun: no program given\nusage: svmrun [OPTIONS] -- PROGRAM [ARGS...]\n";
    *exit_now = 2;
  }
  return Status::Ok();
}

}  // namespace svm::svmd
