// The ssh launcher: one `ssh HOST svmd --agent` a host (launch.h).
#include <sstream>

#include "svmd/launch.h"

namespace svm::svmd {
namespace {

// A word for the remote shell, single-quoted.
std::string Quote(const std::string& w) {
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

Status SshLaunches(const LaunchPlan& plan, const std::string& ssh_command, const AgentSpec& spec,
                   std::vector<AgentLaunch>* out) {
  std::vector<std::string> ssh;
  std::istringstream words(ssh_command);
  for (std::string w; words >> w;) ssh.push_back(w);
  if (ssh.empty()) return Status::InvalidArgument("--ssh: empty command");
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    const LaunchHost& h = plan.hosts[i];
    if (h.nodes.empty()) continue;
    AgentLaunch l;
    l.argv = ssh;
    l.argv.push_back(h.name);
    // ssh hands the remote shell one string; the agent finds svmrun at the
    // address this connection came from (SSH_CONNECTION).
    l.argv.push_back(Quote(spec.agent) + " --agent --index " + std::to_string(i) + " --connect-port " +
                     std::to_string(spec.port) + " --log-level " + spec.log_level);
    l.hosts = {i};
    l.what = ssh[0];
    out->push_back(std::move(l));
  }
  return Status::Ok();
}

}  // namespace svm::svmd
