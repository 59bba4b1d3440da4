#include "svmd/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
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

Status ParseU32(const std::string& flag, const std::string& t, uint32_t lo, uint32_t hi, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno != 0 || v < lo || v > hi || t[0] == '-')
    return Status::InvalidArgument(flag + " '" + t + "': expected a whole number from " +
                                   std::to_string(lo) + " to " + std::to_string(hi));
  *out = uint32_t(v);
  return Status::Ok();
}

#define CHOICE(table, field, flag)                                       \
  [](const std::string& t, Options* o) {                                  \
    Status s = CheckChoice(table, flag, t);                               \
    if (s.ok()) o->field = t;                                             \
    return s;                                                             \
  }

const OptionSpec kTable[] = {
    {"-n,--nodes", "SVM_NODES", "1", "number of nodes (processes) of the job; -np N is the same", false,
     [](const std::string& t, Options* o) { return ParseU32("--nodes", t, 1, 1024, &o->nodes); }},
    {"-t,--threads-per-node", "SVM_THREADS_PER_NODE", "1", "application threads per node", false,
     [](const std::string& t, Options* o) {
       return ParseU32("--threads-per-node", t, 1, 1024, &o->threads_per_node);
     }},
    {"--place", "SVM_PLACE", "block", "thread placement: block|cyclic", false,
     CHOICE(kPlaces, place, "--place")},
    {"--mode", "SVM_MODE", "base", "protocol mode: base|dw|rf|dd|nil", false,
     CHOICE(kModes, mode, "--mode")},
    {"--fault", "SVM_FAULT", "uffd", "fault backend: uffd|uffd-thread|mprotect", false,
     CHOICE(kFaults, fault, "--fault")},
    {"--transport", "SVM_TRANSPORT", "tcp", "transport between nodes: tcp|shm|verbs", false,
     CHOICE(kTransports, transport, "--transport")},
    {"--region-base", "SVM_REGION_BASE", "0x200000000000", "virtual address of the shared region", false,
     [](const std::string& t, Options* o) {
       uint64_t v;
       Status s = ParseSize(t, &v);
       if (!s.ok()) return Status::InvalidArgument("--region-base: " + s.message());
       if (v == 0 || v % 4096 != 0 || v >= (1ull << 47))
         return Status::InvalidArgument("--region-base '" + t +
                                        "': must be a non-zero, page-aligned user address");
       o->region_base = v;
       return Status::Ok();
     }},
    {"--region-size", "SVM_REGION_SIZE", "1G", "size of the shared region (K/M/G suffixes)", false,
     [](const std::string& t, Options* o) {
       uint64_t v;
       Status s = ParseSize(t, &v);
       if (!s.ok()) return Status::InvalidArgument("--region-size: " + s.message());
       if (v == 0 || v % 4096 != 0)
         return Status::InvalidArgument("--region-size '" + t + "': must be a non-zero multiple of 4K");
       o->region_size = v;
       return Status::Ok();
     }},
    {"--home", "SVM_HOME", "first-touch", "home placement of pages: first-touch|cyclic|block", false,
     CHOICE(kHomes, home, "--home")},
    {"--stats", "SVM_STATS", "", "write statistics as JSON to FILE", false,
     [](const std::string& t, Options* o) {
       o->stats = t;
       return Status::Ok();
     }},
    {"--timeout", "SVM_TIMEOUT", "0", "end the job after SECONDS (exit 124); 0 = never", false,
     [](const std::string& t, Options* o) {
       char* end = nullptr;
       double v = std::strtod(t.c_str(), &end);
       if (t.empty() || *end != '\0' || !(v >= 0) || v > 1e7)
         return Status::InvalidArgument("--timeout '" + t + "': expected seconds >= 0");
       o->timeout_s = v;
       return Status::Ok();
     }},
    {"--tag-output", "SVM_TAG_OUTPUT", "", "prefix each output line with [nK]", true,
     [](const std::string& t, Options* o) {
       o->tag_output = t == "1" || t == "true" || t == "yes" || t == "on";
       if (!o->tag_output && !t.empty() && t != "0" && t != "false" && t != "no" && t != "off")
         return Status::InvalidArgument("SVM_TAG_OUTPUT '" + t + "': expected 1/0");
       return Status::Ok();
     }},
    {"--log-level", "SVM_LOG_LEVEL", "warn", "trace|debug|info|warn|error|off (svmrun and the nodes)",
     false, CHOICE(kLogLevels, log_level, "--log-level")},
    {"--hosts", "SVM_HOSTS", "", "run on these svmd hosts: HOST[:PORT],... (default port 7117)", false,
     [](const std::string& t, Options* o) {
       o->hosts.clear();
       size_t start = 0;
       while (start < t.size()) {
         size_t end = t.find(',', start);
         if (end == std::string::npos) end = t.size();
         std::string h = t.substr(start, end - start);
         if (h.empty()) return Status::InvalidArgument("--hosts '" + t + "': empty host name");
         o->hosts.push_back(h);
         start = end + 1;
       }
       return Status::Ok();
     }},
    {"--key-file", "SVM_KEY_FILE", "", "0600 file with the key shared with the svmds (for --hosts)",
     false,
     [](const std::string& t, Options* o) {
       o->key_file = t;
       return Status::Ok();
     }},
    {"--net-latency", "SVM_NET_LATENCY", "0",
     "inject this latency per message at the receiving NIC (e.g. 2us), to model a cluster network",
     false,
     [](const std::string& t, Options* o) {
       Status s = ParseDuration(t, &o->net_latency_ns);
       return s.ok() ? s : Status::InvalidArgument("--net-latency: " + s.message());
     }},
    {"--net-bandwidth", "SVM_NET_BANDWIDTH", "0",
     "limit each connection to this rate (e.g. 10Gbit); 0 = unlimited", false,
     [](const std::string& t, Options* o) {
       Status s = ParseRate(t, &o->net_bandwidth);
       return s.ok() ? s : Status::InvalidArgument("--net-bandwidth: " + s.message());
     }},
    {"--pin", "SVM_PIN", "none",
     "none|node: node binds each node process to its own share of the host's CPUs (several nodes "
     "on one host then do not take each other's CPUs)",
     false, CHOICE(kPins, pin, "--pin")},
    {"--preload", "SVM_PRELOAD", "", "runtime library to LD_PRELOAD, or 'none' for plain programs",
     false,
     [](const std::string& t, Options* o) {
       o->preload = t;
       return Status::Ok();
     }},
};

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

Status ParseSize(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] == '-') return Status::InvalidArgument("'" + text + "' is not a size");
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (end == text.c_str() || errno != 0) return Status::InvalidArgument("'" + text + "' is not a size");
  std::string suffix(end);
  uint64_t mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = 1ull << 30;
  else if (!suffix.empty())
    return Status::InvalidArgument("'" + text + "': unknown suffix '" + suffix + "' (use K, M or G)");
  if (v > UINT64_MAX / mult) return Status::InvalidArgument("'" + text + "' is too large");
  *out = uint64_t(v) * mult;
  return Status::Ok();
}

namespace {

// A non-negative decimal number followed by a unit from `units`.
Status ParseScaled(const std::string& text, std::span<const std::pair<const char*, double>> units,
                   const char* what, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || errno != 0 || !(v >= 0) || text[0] == '-')
    return Status::InvalidArgument("'" + text + "' is not a " + what);
  const std::string unit(end);
  if (v == 0 && unit.empty()) {
    *out = 0;
    return Status::Ok();
  }
  std::string known;
  for (const auto& [name, scale] : units) {
    if (unit == name) {
      const double r = v * scale;
      if (r > 1e18) return Status::InvalidArgument("'" + text + "' is too large");
      *out = uint64_t(r + 0.5);
      return Status::Ok();
    }
    known += std::string(known.empty() ? "" : ", ") + name;
  }
  return Status::InvalidArgument("'" + text + "': unknown unit '" + unit + "' (use " + known + ")");
}

}  // namespace

Status ParseDuration(const std::string& text, uint64_t* ns) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  return ParseScaled(text, kUnits, "duration", ns);
}

Status ParseRate(const std::string& text, uint64_t* bytes_per_s) {
  std::string t = text;
  if (t.size() > 2 && t.compare(t.size() - 2, 2, "/s") == 0) t.resize(t.size() - 2);
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"bit", 1.0 / 8}, {"Kbit", 1e3 / 8}, {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8},
      {"B", 1},         {"KB", 1e3},       {"MB", 1e6},       {"GB", 1e9}};
  return ParseScaled(t, kUnits, "rate", bytes_per_s);
}

std::span<const OptionSpec> OptionTable() { return kTable; }

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
  app.footer("Usage: svmrun [OPTIONS] -- PROGRAM [ARGS...]\nEvery option has an SVM_* environment twin (shown as (Env:...)); the flag wins.");
  app.set_version_flag("--version", std::string("svmrun ") + SVM_VERSION + " (commit " SVM_GIT_COMMIT ")");
  if (!have_dashdash) app.prefix_command();
  std::vector<std::string> values(std::size(kTable));
  std::vector<CLI::Option*> opts;
  for (size_t i = 0; i < std::size(kTable); ++i) {
    const OptionSpec& spec = kTable[i];
    std::string help = spec.help;
    if (*spec.def) help += " [default: " + std::string(spec.def) + "]";
    CLI::Option* opt;
    if (spec.is_switch) {
      opt = app.add_flag(spec.flags, values[i], help);
    } else {
      opt = app.add_option(spec.flags, values[i], help);
    }
    opt->envname(spec.env);
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
  const bool show = verbose && *verbose && std::string_view(verbose) != "0";
  if (show) std::cerr << "svmrun: options in effect (SVM_VERBOSE):\n";
  for (size_t i = 0; i < std::size(kTable); ++i) {
    const OptionSpec& spec = kTable[i];
    std::string text;
    text = opts[i]->count() > 0 ? values[i] : spec.def;
    if (show) {
      const bool on_line = std::any_of(typed.begin(), typed.end(), [&](const std::string& a) {
        return Names(spec, std::string_view(a).substr(0, a.find('=')));
      });
      const char* from = opts[i]->count() == 0 ? "default" : on_line ? "flag" : spec.env;
      std::cerr << "  " << opts[i]->get_name() << " = " << (text.empty() ? "\"\"" : text) << "  (" << from
                << ")\n";
    }
    Status s = spec.apply(text, o);
    if (!s.ok()) {
      std::cerr << "svmrun: " << s.message() << "\n";
      *exit_now = 2;
      return Status::Ok();
    }
  }
  if (o->program.empty()) {
    std::cerr << "svmrun: no program given\nusage: svmrun [OPTIONS] -- PROGRAM [ARGS...]\n";
    *exit_now = 2;
  }
  return Status::Ok();
}

}  // namespace svm::svmd
