// svmd/launch.h: which launcher, which hosts, which node where, and what
// environment the nodes get; the parsers of hostfiles and Slurm's
// variables; host[:port] with IPv6 (util/net.h).
#include <gtest/gtest.h>

#include <map>

#include "svmd/launch.h"
#include "tests/launch/launch_util.h"
#include "util/net.h"

namespace svm::launch_test {
namespace {

using svmd::Launcher;
using svmd::LaunchHost;
using svmd::LaunchPlan;
using svmd::Options;

struct FakeEnv {
  std::map<std::string, std::string> vars;
  svmd::EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Options Opts(std::vector<std::string> hosts = {}, std::string key = "", std::string hostfile = "") {
  Options o;
  o.hosts = std::move(hosts);
  o.key_file = std::move(key);
  o.hostfile = std::move(hostfile);
  o.program = {"prog"};
  o.region_size_auto = true;  // as ParseCommandLine leaves it without --region-size
  return o;
}

TEST(LaunchPlan, AutoPicksTheLauncherFromWhatWasGiven) {
  FakeEnv none, slurm{{{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "h[0-1]"}}};
  Launcher l;
  ASSERT_TRUE(svmd::ChooseLauncher(Opts(), none.lookup(), &l).ok());
  EXPECT_EQ(l, Launcher::kLocal);
  ASSERT_TRUE(svmd::ChooseLauncher(Opts(), slurm.lookup(), &l).ok());
  EXPECT_EQ(l, Launcher::kSlurm);
  ASSERT_TRUE(svmd::ChooseLauncher(Opts({"a"}, "k"), slurm.lookup(), &l).ok());
  EXPECT_EQ(l, Launcher::kSvmd);  // the daemons' key says svmd
  ASSERT_TRUE(svmd::ChooseLauncher(Opts({"a"}), slurm.lookup(), &l).ok());
  EXPECT_EQ(l, Launcher::kSsh);
  ASSERT_TRUE(svmd::ChooseLauncher(Opts({}, "", "f"), none.lookup(), &l).ok());
  EXPECT_EQ(l, Launcher::kSsh);
}

TEST(LaunchPlan, ExplicitLaunchersRefuseWhatTheyCannotUse) {
  FakeEnv none;
  Launcher l;
  Options o = Opts();
  o.launcher = "slurm";
  Status s = svmd::ChooseLauncher(o, none.lookup(), &l);
  EXPECT_NE(s.message().find("not inside a Slurm allocation"), std::string::npos) << s.ToString();
  o.launcher = "ssh";
  EXPECT_FALSE(svmd::ChooseLauncher(o, none.lookup(), &l).ok());
  o = Opts({"a"}, "", "f");
  EXPECT_FALSE(svmd::ChooseLauncher(o, none.lookup(), &l).ok());  // --hosts and --hostfile
  o = Opts({"a"});
  o.launcher = "local";
  EXPECT_FALSE(svmd::ChooseLauncher(o, none.lookup(), &l).ok());
}

TEST(LaunchPlan, HostfileInOpenMpiFormat) {
  std::vector<LaunchHost> hosts;
  ASSERT_TRUE(svmd::ParseHostfile(
                  "# cluster\nn1 slots=4\n\nn2   # one slot\nn1 slots=2 max_slots=8\n[fd00::3] slots=2\n", &hosts)
                  .ok());
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "n1");
  EXPECT_EQ(hosts[0].slots, 6u);  // named twice: the slots add up
  EXPECT_EQ(hosts[1].slots, 1u);
  EXPECT_EQ(hosts[2].name, "fd00::3");
  hosts.clear();
  Status s = svmd::ParseHostfile("n1 slot=2\n", &hosts);
  EXPECT_NE(s.message().find("line 1"), std::string::npos) << s.ToString();
  EXPECT_FALSE(svmd::ParseHostfile("n1 slots=0\n", &hosts).ok());
  EXPECT_FALSE(svmd::ParseHostfile("# nothing\n", &hosts).ok());
}

TEST(LaunchPlan, SlurmNodelistsAndTaskCounts) {
  std::vector<std::string> names;
  ASSERT_TRUE(svmd::ExpandNodelist("h[0-2,5],gpu[08-10]-ib,login", &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"h0", "h1", "h2", "h5", "gpu08-ib", "gpu09-ib", "gpu10-ib", "login"}));
  names.clear();
  ASSERT_TRUE(svmd::ExpandNodelist("r[1-2]n[1-2]", &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_FALSE(svmd::ExpandNodelist("h[3-1]", &names).ok());
  EXPECT_FALSE(svmd::ExpandNodelist("h[1-2", &names).ok());
  std::vector<uint32_t> tasks;
  ASSERT_TRUE(svmd::ExpandTasksPerNode("2(x3),1", &tasks).ok());
  EXPECT_EQ(tasks, (std::vector<uint32_t>{2, 2, 2, 1}));
  EXPECT_FALSE(svmd::ExpandTasksPerNode("2(x3", &tasks).ok());
}

TEST(LaunchPlan, SlurmAllocationGivesHostsAndSlots) {
  // salloc -N 3 without -n: one node process a host, whatever the CPUs.
  FakeEnv a{{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "h[0-2]"}, {"SLURM_TASKS_PER_NODE", "2(x3)"}}};
  Options o = Opts();
  LaunchPlan plan;
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, a.lookup(), &plan).ok());
  EXPECT_EQ(plan.launcher, Launcher::kSlurm);
  EXPECT_EQ(o.nodes, 3u);
  EXPECT_EQ(plan.node_host, (std::vector<int>{0, 1, 2}));
  // ... and -n 5 spread over them, as the CPUs allow.
  o = Opts();
  o.nodes = 5;
  o.nodes_given = true;
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, a.lookup(), &plan).ok());
  EXPECT_EQ(plan.node_host, (std::vector<int>{0, 0, 1, 1, 2}));
  o.nodes = 7;
  EXPECT_FALSE(svmd::MakeLaunchPlan(&o, a.lookup(), &plan).ok());
  // salloc -n 5: Slurm's tasks per host.
  FakeEnv b{{{"SLURM_JOB_ID", "1"},
             {"SLURM_JOB_NODELIST", "h[0-1]"},
             {"SLURM_NTASKS", "5"},
             {"SLURM_TASKS_PER_NODE", "3,2"}}};
  o = Opts();
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, b.lookup(), &plan).ok());
  EXPECT_EQ(o.nodes, 5u);
  EXPECT_EQ(plan.node_host, (std::vector<int>{0, 0, 0, 1, 1}));
  EXPECT_EQ(o.region_size, 5 * svmd::kRegionPerNode);  // auto follows the count
  o = Opts();
  o.nodes = 6;
  o.nodes_given = true;
  Status s = svmd::MakeLaunchPlan(&o, b.lookup(), &plan);
  EXPECT_NE(s.message().find("6 nodes, but the Slurm allocation"), std::string::npos) << s.ToString();
}

TEST(LaunchPlan, SshHostsWithAndWithoutSlots) {
  FakeEnv none;
  Options o = Opts({"a:2", "[fd00::1]:1", "fd00::2"});
  LaunchPlan plan;
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, none.lookup(), &plan).ok());
  EXPECT_EQ(plan.launcher, Launcher::kSsh);
  ASSERT_EQ(plan.hosts.size(), 3u);
  EXPECT_EQ(plan.hosts[1].name, "fd00::1");
  EXPECT_EQ(plan.hosts[2].name, "fd00::2");
  EXPECT_EQ(o.nodes, 4u);
  EXPECT_EQ(plan.node_host, (std::vector<int>{0, 0, 1, 2}));
  // Plain names and more nodes than hosts: shared out in blocks.
  o = Opts({"a", "b"});
  o.nodes = 4;
  o.nodes_given = true;
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, none.lookup(), &plan).ok());
  EXPECT_EQ(plan.node_host, (std::vector<int>{0, 0, 1, 1}));
}

TEST(LaunchPlan, SvmdHostsKeepTheirPorts) {
  FakeEnv none;
  Options o = Opts({"a", "b:7000", "[fd00::1]:7001"}, "key");
  LaunchPlan plan;
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, none.lookup(), &plan).ok());
  EXPECT_EQ(plan.launcher, Launcher::kSvmd);
  EXPECT_EQ(o.nodes, 3u);  // one a host when -n is not given
  EXPECT_EQ(plan.hosts[0].port, svmd::kDefaultSvmdPort);
  EXPECT_EQ(plan.hosts[1].port, 7000);
  EXPECT_EQ(plan.hosts[2].name, "fd00::1");
  EXPECT_EQ(plan.hosts[2].port, 7001);
}

TEST(LaunchPlan, NodesGetTheUsersEnvironmentButNotThisHostsOwn) {
  FakeEnv env{{{"FROM_X", "x"}, {"HOSTNAME", "here"}}};
  std::vector<std::string> out;
  ASSERT_TRUE(svmd::ExportedEnvironment({"HOME=/home/u", "PATH=/bin", "SLURM_JOB_ID=7", "SSH_CONNECTION=a b c d",
                                         "HOSTNAME=here", "OMP_NUM_THREADS=2", "PWD=/x"},
                                        {"SET=1", "FROM_X", "HOSTNAME", "OMP_NUM_THREADS=4"}, env.lookup(), &out)
                  .ok());
  EXPECT_EQ(out, (std::vector<std::string>{"HOME=/home/u", "PATH=/bin", "OMP_NUM_THREADS=4", "SET=1", "FROM_X=x",
                                           "HOSTNAME=here"}));
  Status s = svmd::ExportedEnvironment({}, {"NOT_SET"}, env.lookup(), &out);
  EXPECT_NE(s.message().find("-x NOT_SET: not set"), std::string::npos) << s.ToString();
}

TEST(LaunchPlan, AgentCommands) {
  FakeEnv none;
  Options o = Opts({"a", "b"});
  LaunchPlan plan;
  ASSERT_TRUE(svmd::MakeLaunchPlan(&o, none.lookup(), &plan).ok());
  std::vector<svmd::AgentLaunch> ssh;
  ASSERT_TRUE(svmd::SshLaunches(plan, "ssh -T -p 2222", {"/opt/it's/svmd", 4000, "warn"}, &ssh).ok());
  ASSERT_EQ(ssh.size(), 2u);
  EXPECT_EQ(ssh[1].argv, (std::vector<std::string>{"ssh", "-T", "-p", "2222", "b",
                                                   "'/opt/it'\\''s/svmd' --agent --index 1 --connect-port 4000 "
                                                   "--log-level warn"}));
  // The key is never on a command line.
  for (const std::string& a : ssh[0].argv) EXPECT_EQ(a.find("key"), std::string::npos);
  std::vector<svmd::AgentLaunch> srun;
  ASSERT_TRUE(svmd::SlurmLaunches(plan, {"/x/svmd", 4000, "warn"}, &srun).ok());
  ASSERT_EQ(srun.size(), 1u);
  EXPECT_EQ(srun[0].argv[0], "srun");
  EXPECT_NE(std::find(srun[0].argv.begin(), srun[0].argv.end(), "--nodelist=a,b"), srun[0].argv.end());
  EXPECT_NE(std::find(srun[0].argv.begin(), srun[0].argv.end(), "--input=all"), srun[0].argv.end());
}

TEST(Net, HostsWithAndWithoutPortsAndIpv6) {
  std::string h;
  uint16_t p = 0;
  ASSERT_TRUE(svmd::ParseHostPort("[fd00::1]:7117", &h, &p).ok());
  EXPECT_EQ(h, "fd00::1");
  EXPECT_EQ(p, 7117);
  EXPECT_FALSE(svmd::ParseHostPort("fd00::1:7117", &h, &p).ok());  // ambiguous without [ ]
  ASSERT_TRUE(svmd::ParseHostMaybePort("fd00::1", 9, &h, &p).ok());
  EXPECT_EQ(h, "fd00::1");
  EXPECT_EQ(p, 9);
  ASSERT_TRUE(svmd::ParseHostMaybePort("node7", 9, &h, &p).ok());
  EXPECT_EQ(p, 9);
  ASSERT_TRUE(svmd::ParseHostMaybePort("node7:12", 9, &h, &p).ok());
  EXPECT_EQ(p, 12);
  EXPECT_EQ(svmd::JoinHostPort("fd00::1", 5), "[fd00::1]:5");
  EXPECT_EQ(svmd::JoinHostPort("10.0.0.1", 5), "10.0.0.1:5");
}

// The control path over IPv6 loopback: listen, connect, addresses back.
TEST(Net, ConnectsOverIpv6) {
  svmd::UniqueFd l, c;
  uint16_t port = 0;
  Status s = svmd::Listen("::1", 0, &l, &port);
  if (!s.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << s.ToString();
  ASSERT_TRUE(svmd::Connect("::1", port, svmd::NowMs() + 5000, &c).ok());
  EXPECT_EQ(svmd::LocalIp(c.get()), "::1");
  EXPECT_EQ(svmd::PeerString(c.get()), "[::1]:" + std::to_string(port));
  // The wildcard takes IPv4 too (one dual-stack socket).
  svmd::UniqueFd any, c4;
  ASSERT_TRUE(svmd::Listen("", 0, &any, &port).ok());
  ASSERT_TRUE(svmd::Connect("127.0.0.1", port, svmd::NowMs() + 5000, &c4).ok());
  EXPECT_EQ(svmd::PeerString(c4.get()), "127.0.0.1:" + std::to_string(port));
}

}  // namespace
}  // namespace svm::launch_test
