// The Slurm launcher: reads the allocation, and starts one agent a host
// with a single srun (launch.h), as mpirun starts its daemons.
#include <charconv>

#include "svmd/launch.h"

namespace svm::svmd {
namespace {

// Splits at commas that are not inside [ ].
std::vector<std::string> SplitTop(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

const char* FirstOf(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = env(n); v && *v) return v;
  return nullptr;
}

}  // namespace

bool InSlurmAllocation(const EnvLookup& env) {
  return FirstOf(env, {"SLURM_JOB_ID", "SLURM_JOBID"}) && FirstOf(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
}

Status ExpandNodelist(const std::string& list, std::vector<std::string>* names) {
  for (const std::string& part : SplitTop(list)) {
    if (part.empty()) return Status::InvalidArgument("'" + list + "': empty host name");
    const size_t open = part.find('[');
    if (open == std::string::npos) {
      names->push_back(part);
      continue;
    }
    const size_t close = part.find(']', open);
    if (close == std::string::npos) return Status::InvalidArgument("'" + list + "': unbalanced [");
    const std::string prefix = part.substr(0, open), suffix = part.substr(close + 1);
    std::vector<std::string> tails = {""};  // the rest may hold another range
    if (!suffix.empty()) {
      tails.clear();
      if (Status s = ExpandNodelist(suffix, &tails); !s.ok()) return s;
    }
    for (const std::string& range : SplitTop(part.substr(open + 1, close - open - 1))) {
      const size_t dash = range.find('-');
      const std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
      uint32_t a = 0, b = 0;
      if (!ParseU32(lo, &a) || !ParseU32(hi, &b) || b < a || b - a > 65536)
        return Status::InvalidArgument("'" + list + "': bad range '" + range + "'");
      for (uint32_t k = a; k <= b; ++k) {
        std::string num = std::to_string(k);
        if (num.size() < lo.size()) num.insert(0, lo.size() - num.size(), '0');  // h[01-03]
        for (const std::string& t : tails) names->push_back(prefix + num + t);
      }
    }
  }
  return Status::Ok();
}

Status ExpandTasksPerNode(const std::string& spec, std::vector<uint32_t>* tasks) {
  for (const std::string& part : SplitTop(spec)) {
    uint32_t n = 0, times = 1;
    const size_t paren = part.find("(x");
    if (paren != std::string::npos) {
      if (part.back() != ')' || !ParseU32(std::string_view(part).substr(paren + 2, part.size() - paren - 3), &times))
        return Status::InvalidArgument("'" + spec + "': bad repeat in '" + part + "'");
    }
    if (!ParseU32(std::string_view(part).substr(0, paren), &n) || times > 65536)
      return Status::InvalidArgument("'" + spec + "': bad count '" + part + "'");
    tasks->insert(tasks->end(), times, n);
  }
  return Status::Ok();
}

Status SlurmHosts(const EnvLookup& env, std::vector<LaunchHost>* hosts, bool* tasks_asked) {
  const char* list = FirstOf(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (!list) return Status::InvalidArgument("SLURM_JOB_NODELIST is not set: not inside a Slurm allocation");
  std::vector<std::string> names;
  if (Status s = ExpandNodelist(list, &names); !s.ok())
    return Status::InvalidArgument("SLURM_JOB_NODELIST " + s.message());
  // Slots per host: SLURM_TASKS_PER_NODE (the tasks the allocation asked
  // for with -n or --ntasks-per-node; else Slurm counts the CPUs).
  std::vector<uint32_t> tasks;
  const char* tpn = FirstOf(env, {"SLURM_TASKS_PER_NODE"});
  *tasks_asked = FirstOf(env, {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE"}) != nullptr;
  if (tpn) {
    if (Status s = ExpandTasksPerNode(tpn, &tasks); !s.ok())
      return Status::InvalidArgument("SLURM_TASKS_PER_NODE " + s.message());
    if (tasks.size() != names.size())
      return Status::InvalidArgument("SLURM_TASKS_PER_NODE names " + std::to_string(tasks.size()) +
                                     " hosts, SLURM_JOB_NODELIST " + std::to_string(names.size()));
  } else {
    tasks.assign(names.size(), 1);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    LaunchHost h;
    h.name = names[i];
    h.slots = tasks[i];
    hosts->push_back(std::move(h));
  }
  return Status::Ok();
}

Status SlurmLaunches(const LaunchPlan& plan, const AgentSpec& spec, std::vector<AgentLaunch>* out) {
  AgentLaunch l;
  std::string nodelist;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    if (plan.hosts[i].nodes.empty()) continue;
    nodelist += (nodelist.empty() ? "" : ",") + plan.hosts[i].name;
    l.hosts.push_back(i);
  }
  const std::string n = std::to_string(l.hosts.size());
  // One agent task a host, not bound to a CPU (it starts the nodes, which
  // take the host's CPUs); the job key goes to every task's stdin; one
  // agent failing ends the step, and with it the job.
  l.argv = {"srun",
            "--nodes=" + n,
            "--ntasks=" + n,
            "--ntasks-per-node=1",
            "--nodelist=" + nodelist,
            "--kill-on-bad-exit=1",
            "--cpu-bind=none",
            "--mpi=none",
            "--overlap",
            "--input=all",
            "--job-name=svmrun",
            spec.agent,
            "--agent",
            "--connect-port",
            std::to_string(spec.port),
            "--log-level",
            spec.log_level};
  l.what = "srun";
  out->push_back(std::move(l));
  return Status::Ok();
}

}  // namespace svm::svmd
