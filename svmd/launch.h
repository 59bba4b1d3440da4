// Where a job's nodes run and who starts them (svmrun --launcher).
//
//   local  svmrun forks every node on this host.
//   svmd   pre-started daemons on --hosts (HOST[:PORT]) start them.
//   ssh    svmrun runs `ssh HOST svmd --agent` for each host of --hosts
//          (HOST[:SLOTS]) or --hostfile; the agent is svmd's job session,
//          started for this job only.
//   slurm  inside an allocation, one `srun` starts an agent on each host of
//          SLURM_JOB_NODELIST (as mpirun starts its daemons under Slurm).
//
// An agent reads the job key (32 bytes) from its stdin — the ssh or srun
// pipe, never a command line or a file — connects back to svmrun, proves
// the key, says which host it is (AGENT_HELLO) and then serves the job as
// an svmd session does (JOB, OUTPUT, NODE_EXIT, STDIN, KILL).
//
// Placement: with slots (hostfile, HOST:SLOTS, Slurm's tasks when the
// allocation asked for tasks) the nodes fill each host's slots in turn and
// -n defaults to the slots in all; otherwise (svmd hosts, plain ssh hosts,
// a Slurm allocation of nodes) -n defaults to one a host and node i goes to
// host i*H/N (under Slurm: no more than the host's CPUs).
// Pure functions here: the environment comes in as a lookup, so tests can
// give any.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "svmd/options.h"
#include "util/status.h"

namespace svm::svmd {

enum class Launcher { kLocal, kSvmd, kSsh, kSlurm };
const char* ToString(Launcher l);

using EnvLookup = std::function<const char*(const char*)>;  // getenv

struct LaunchHost {
  std::string name;                  // as given: a name, IPv4 or IPv6 address
  uint16_t port = kDefaultSvmdPort;  // svmd only
  uint32_t slots = 0;                // 0: not given
  std::vector<uint32_t> nodes;       // node ids placed here
};

struct LaunchPlan {
  Launcher launcher = Launcher::kLocal;
  std::vector<LaunchHost> hosts;  // empty for local
  std::vector<int> node_host;     // node id -> index into hosts (-1: local)
};

// The launcher --launcher names, or the one auto picks (see above).
Status ChooseLauncher(const Options& o, const EnvLookup& env, Launcher* out);

// Open MPI hostfile: "HOST [slots=N] [max_slots=N]" a line, '#' comments;
// a host named twice adds its slots; slots default to 1.
Status ParseHostfile(const std::string& text, std::vector<LaunchHost>* hosts);
// A whole decimal number and nothing else (hostfile slots, Slurm's lists).
bool ParseU32(std::string_view s, uint32_t* v);
// Slurm's compressed host lists: "h[0-2,5],gpu[01-02]" -> h0 h1 h2 h5 gpu01 gpu02.
Status ExpandNodelist(const std::string& list, std::vector<std::string>* names);
// SLURM_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1.
Status ExpandTasksPerNode(const std::string& spec, std::vector<uint32_t>* tasks);

// Hosts and placement for the chosen launcher; sets o->nodes where -n was
// not given. Errors name the flag or variable at fault.
Status MakeLaunchPlan(Options* o, const EnvLookup& env, LaunchPlan* plan);

// The environment every remote node gets from svmrun: svmrun's own minus
// SVM_*, LD_PRELOAD, LD_BIND_NOW and what describes this host or session
// (SLURM_*, SSH_*, HOSTNAME, PWD, ...), then -x entries (VAR: svmrun's value,
// even a host-specific one; VAR=VALUE: that value).
// environment: svmrun's, as CleanEnvironment() gives it.
Status ExportedEnvironment(const std::vector<std::string>& environment, const std::vector<std::string>& exports,
                           const EnvLookup& env, std::vector<std::string>* out);
// -x entries applied to a local node's environment.
Status ApplyExports(const std::vector<std::string>& exports, const EnvLookup& env, std::vector<std::string>* out);
// Sets each NAME=value of over in *base, replacing an entry of that name.
void OverlayEnvironment(const std::vector<std::string>& over, std::vector<std::string>* base);

// One process that starts agents: ssh for one host, or srun for all.
struct AgentLaunch {
  std::vector<std::string> argv;
  std::vector<size_t> hosts;  // indices into plan.hosts it starts
  std::string what;           // "ssh" / "srun", for messages
};
struct AgentSpec {
  std::string agent;      // path of svmd on the hosts (svmrun's sibling)
  uint16_t port = 0;      // svmrun's listening port
  std::string log_level;  // the agents' --log-level
};
// launch_ssh.cc: one ssh a host, `CMD HOST 'svmd' --agent --index I ...`.
Status SshLaunches(const LaunchPlan& plan, const std::string& ssh_command, const AgentSpec& spec,
                   std::vector<AgentLaunch>* out);
// launch_slurm.cc: one srun, one agent task on each host that has nodes.
Status SlurmLaunches(const LaunchPlan& plan, const AgentSpec& spec, std::vector<AgentLaunch>* out);
// The Slurm allocation's hosts with their slots (SLURM_TASKS_PER_NODE);
// *tasks_asked: the allocation named tasks (-n, --ntasks-per-node), so the
// slots are the user's task layout rather than CPU counts.
Status SlurmHosts(const EnvLookup& env, std::vector<LaunchHost>* hosts, bool* tasks_asked);
// Whether this process runs inside a Slurm allocation.
bool InSlurmAllocation(const EnvLookup& env);

}  // namespace svm::svmd
