#include "svmd/launch.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/net.h"

namespace svm::svmd {
namespace {

// Adds a host, or its slots to a host of that name already listed.
void AddHost(std::vector<LaunchHost>* hosts, const std::string& name, uint32_t slots) {
  for (LaunchHost& h : *hosts) {
    if (h.name == name) {
      h.slots += slots;
      return;
    }
  }
  LaunchHost h;
  h.name = name;
  h.slots = slots;
  hosts->push_back(std::move(h));
}

// Nodes fill each host's slots in turn.
Status FillSlots(uint32_t nodes, const std::string& source, LaunchPlan* plan) {
  uint64_t total = 0;
  for (const LaunchHost& h : plan->hosts) total += h.slots;
  if (nodes > total)
    return Status::InvalidArgument(std::to_string(nodes) + " nodes, but " + source + " has " + std::to_string(total) +
                                   " slots");
  uint32_t id = 0;
  for (size_t i = 0; i < plan->hosts.size() && id < nodes; ++i)
    for (uint32_t k = 0; k < plan->hosts[i].slots && id < nodes; ++k, ++id) {
      plan->hosts[i].nodes.push_back(id);
      plan->node_host[id] = int(i);
    }
  return Status::Ok();
}

// Node i on host i*H/N (no slots known).
void BlockPlace(uint32_t nodes, LaunchPlan* plan) {
  for (uint32_t i = 0; i < nodes; ++i) {
    const size_t h = size_t(uint64_t(i) * plan->hosts.size() / nodes);
    plan->node_host[i] = int(h);
    plan->hosts[h].nodes.push_back(i);
  }
}

// Variables that describe svmrun's host or session, not the user's
// settings: a node gets its own host's.
bool HostSpecific(std::string_view name) {
  static constexpr const char* kPrefixes[] = {"SLURM_", "SLURMD_", "SSH_", "XDG_SESSION_", "XDG_RUNTIME_"};
  for (const char* p : kPrefixes)
    if (name.starts_with(p)) return true;
  static constexpr const char* kNames[] = {"HOSTNAME", "HOST",    "PWD",      "OLDPWD",         "SHLVL",
                                           "_",        "DISPLAY", "WINDOWID", "TERM_SESSION_ID"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; });
}

std::string_view NameOf(std::string_view entry) { return entry.substr(0, entry.find('=')); }

// -x VAR -> VAR=value (svmrun's), -x VAR=VALUE as is.
Status ExportEntry(const std::string& x, const EnvLookup& env, std::string* out) {
  if (x.empty() || x.front() == '=') return Status::InvalidArgument("-x '" + x + "': no variable name");
  if (x.find('=') != std::string::npos) {
    *out = x;
    return Status::Ok();
  }
  const char* v = env(x.c_str());
  if (v == nullptr) return Status::InvalidArgument("-x " + x + ": not set in svmrun's environment");
  *out = x + "=" + v;
  return Status::Ok();
}

}  // namespace

bool ParseU32(std::string_view s, uint32_t* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

const char* ToString(Launcher l) {
  switch (l) {
    case Launcher::kLocal: return "local";
    case Launcher::kSvmd: return "svmd";
    case Launcher::kSsh: return "ssh";
    case Launcher::kSlurm: return "slurm";
  }
  return "?";
}

Status ChooseLauncher(const Options& o, const EnvLookup& env, Launcher* out) {
  const bool hosts = !o.hosts.empty(), hostfile = !o.hostfile.empty();
  if (hosts && hostfile) return Status::InvalidArgument("--hosts and --hostfile: give one of them");
  const std::string& l = o.launcher;
  if (l == "auto") {
    if (hosts && !o.key_file.empty()) *out = Launcher::kSvmd;
    else if (hosts || hostfile) *out = Launcher::kSsh;
    else if (InSlurmAllocation(env)) *out = Launcher::kSlurm;
    else *out = Launcher::kLocal;
    return Status::Ok();
  }
  if (l == "local") {
    if (hosts || hostfile)
      return Status::InvalidArgument("--launcher local runs on this host: drop --hosts/--hostfile");
    *out = Launcher::kLocal;
  } else if (l == "svmd") {
    if (!hosts) return Status::InvalidArgument("--launcher svmd needs --hosts: the svmd daemons' addresses");
    *out = Launcher::kSvmd;
  } else if (l == "ssh") {
    if (!hosts && !hostfile) return Status::InvalidArgument("--launcher ssh needs --hosts or --hostfile");
    *out = Launcher::kSsh;
  } else if (l == "slurm") {
    if (hosts || hostfile)
      return Status::InvalidArgument("--launcher slurm takes its hosts from the allocation: drop --hosts/--hostfile");
    if (!InSlurmAllocation(env))
      return Status::InvalidArgument(
          "--launcher slurm: not inside a Slurm allocation (no SLURM_JOB_ID/SLURM_JOB_NODELIST); run it "
          "under salloc or sbatch");
    *out = Launcher::kSlurm;
  } else {
    return CheckChoice(kLaunchers, "--launcher", l);
  }
  return Status::Ok();
}

Status ParseHostfile(const std::string& text, std::vector<LaunchHost>* hosts) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name, word;
    if (!(words >> name)) continue;
    uint32_t slots = 1;
    while (words >> word) {
      uint32_t v = 0;
      const size_t eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (eq == std::string::npos || !ParseU32(std::string_view(word).substr(eq + 1), &v))
        return Status::InvalidArgument("line " + std::to_string(number) + ": '" + word +
                                       "' is not slots=N or max_slots=N");
      if (key == "slots") {
        if (v == 0) return Status::InvalidArgument("line " + std::to_string(number) + ": slots=0");
        slots = v;
      } else if (key != "max_slots") {
        return Status::InvalidArgument("line " + std::to_string(number) + ": unknown '" + key + "'");
      }
    }
    if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
    AddHost(hosts, name, slots);
  }
  if (hosts->empty()) return Status::InvalidArgument("no hosts in it");
  return Status::Ok();
}

Status MakeLaunchPlan(Options* o, const EnvLookup& env, LaunchPlan* plan) {
  Status s = ChooseLauncher(*o, env, &plan->launcher);
  if (!s.ok()) return s;
  plan->hosts.clear();
  switch (plan->launcher) {
    case Launcher::kLocal:
      plan->node_host.assign(o->nodes, -1);
      return Status::Ok();
    case Launcher::kSvmd:
      for (const std::string& spec : o->hosts) {
        LaunchHost h;
        if (s = ParseHostMaybePort(spec, kDefaultSvmdPort, &h.name, &h.port); !s.ok())
          return Status::InvalidArgument("--hosts: " + s.message());
        plan->hosts.push_back(std::move(h));
      }
      if (!o->nodes_given) SetNodeCount(o, uint32_t(plan->hosts.size()));
      plan->node_host.assign(o->nodes, -1);
      BlockPlace(o->nodes, plan);
      return Status::Ok();
    case Launcher::kSsh: {
      std::string source;
      bool slots_given = false;
      if (!o->hostfile.empty()) {
        std::ifstream in(o->hostfile);
        if (!in) return Status::InvalidArgument("--hostfile " + o->hostfile + ": " + std::strerror(errno));
        std::stringstream text;
        text << in.rdbuf();
        if (s = ParseHostfile(text.str(), &plan->hosts); !s.ok())
          return Status::InvalidArgument("--hostfile " + o->hostfile + ": " + s.message());
        source = "--hostfile " + o->hostfile;
        slots_given = true;
      } else {
        for (const std::string& spec : o->hosts) {
          std::string name;
          uint16_t slots = 0;
          if (s = ParseHostMaybePort(spec, 0, &name, &slots); !s.ok())
            return Status::InvalidArgument("--hosts: " + s.message());
          slots_given |= slots != 0;
          AddHost(&plan->hosts, name, slots ? slots : 1);
        }
        source = "--hosts";
      }
      uint32_t total = 0;
      for (const LaunchHost& h : plan->hosts) total += h.slots;
      if (!o->nodes_given) SetNodeCount(o, total);
      plan->node_host.assign(o->nodes, -1);
      if (!slots_given && o->nodes > total) {
        BlockPlace(o->nodes, plan);  // plain host names: share the nodes out
        return Status::Ok();
      }
      return FillSlots(o->nodes, source, plan);
    }
    case Launcher::kSlurm: {
      bool tasks_asked = false;
      if (s = SlurmHosts(env, &plan->hosts, &tasks_asked); !s.ok()) return s;
      uint32_t total = 0;
      for (const LaunchHost& h : plan->hosts) total += h.slots;
      const std::string source = "the Slurm allocation (SLURM_TASKS_PER_NODE)";
      if (tasks_asked) {  // salloc -n / --ntasks-per-node: Slurm's task layout
        if (!o->nodes_given) SetNodeCount(o, total);
        plan->node_host.assign(o->nodes, -1);
        return FillSlots(o->nodes, source, plan);
      }
      // salloc -N H: one node a host, or -n spread over the hosts.
      if (!o->nodes_given) SetNodeCount(o, uint32_t(plan->hosts.size()));
      plan->node_host.assign(o->nodes, -1);
      BlockPlace(o->nodes, plan);
      for (const LaunchHost& h : plan->hosts)
        if (h.nodes.size() > h.slots)
          return Status::InvalidArgument(std::to_string(o->nodes) + " nodes put " + std::to_string(h.nodes.size()) +
                                         " on " + h.name + ", but " + source + " gives it " + std::to_string(h.slots));
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unknown launcher");
}

Status ExportedEnvironment(const std::vector<std::string>& environment, const std::vector<std::string>& exports,
                           const EnvLookup& env, std::vector<std::string>* out) {
  out->clear();
  for (const std::string& e : environment)
    if (!HostSpecific(NameOf(e))) out->push_back(e);
  return ApplyExports(exports, env, out);
}

Status ApplyExports(const std::vector<std::string>& exports, const EnvLookup& env, std::vector<std::string>* out) {
  std::vector<std::string> entries;
  for (const std::string& x : exports) {
    std::string e;
    if (Status s = ExportEntry(x, env, &e); !s.ok()) return s;
    entries.push_back(std::move(e));
  }
  OverlayEnvironment(entries, out);
  return Status::Ok();
}

void OverlayEnvironment(const std::vector<std::string>& over, std::vector<std::string>* base) {
  for (const std::string& e : over) {
    const std::string_view name = NameOf(e);
    auto it = std::find_if(base->begin(), base->end(), [&](const std::string& b) { return NameOf(b) == name; });
    if (it != base->end()) *it = e;
    else base->push_back(e);
  }
}

}  // namespace svm::svmd
