// svmrun's ssh and slurm launchers against the real servers: an OpenSSH
// sshd, and slurmctld + slurmd, on three virtual hosts (network namespaces,
// virtual_cluster.h). svmrun runs in the root namespace, as a user's shell
// would, with a variable set only there; every node must see it, run in
// svmrun's directory, and reach every other node's NIC with the job key.
// Skips (with the reason) where namespaces cannot be made or the servers
// are not installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <thread>

#include "tests/launch/virtual_cluster.h"

namespace svm::launch_test {
namespace {

constexpr int kHosts = 3;
const std::string kVar = "CLUSTER_TEST_VAR";
const std::string kValue = "set only in the calling shell";

std::string Cwd() {
  char buf[4096] = {};
  return getcwd(buf, sizeof(buf)) ? buf : "?";
}

// The NIC address (host part) of node k, from node 0's "n0 peers a,b,c".
std::string NicHost(const std::string& out, size_t k) {
  const size_t at = out.find("n0 peers ");
  if (at == std::string::npos) return "";
  std::string list = out.substr(at + 9, out.find('\n', at) - at - 9);
  for (size_t i = 0; i < k; ++i) list = list.substr(list.find(',') + 1);
  return list.substr(0, list.find(':'));
}

// fake_node on every node: rendezvous, peers checked, environment and
// directory printed; node `reader` echoes stdin, then reports exit 3.
std::vector<std::string> FakeJob(unsigned reader = 0) {
  return {
      FakeNode(),     "--check-peers", "--print-env",          kVar,     "--print-env",   "GIVEN_BY_X", "--print-cwd",
      "--read-stdin", "--stdin-node",  std::to_string(reader), "--wait", "--report-exit", "--exit",     "3"};
}

// Waits for every node's checks, feeds stdin, and checks what came back.
void CheckFakeJob(Child& c, int nodes, unsigned reader, const std::string& x_value) {
  for (int k = 0; k < nodes; ++k) {
    const std::string n = "n" + std::to_string(k);
    for (int j = 0; j < nodes; ++j) {
      if (j == k) continue;
      ASSERT_TRUE(c.WaitFor(n + " peer " + std::to_string(j) + " ok")) << c.out << c.err;
    }
    ASSERT_TRUE(c.WaitFor(n + " env " + kVar + "=" + kValue)) << c.out << c.err;
    ASSERT_TRUE(c.WaitFor(n + " env GIVEN_BY_X=" + x_value)) << c.out << c.err;
    ASSERT_TRUE(c.WaitFor(n + " cwd " + Cwd())) << c.out << c.err;
  }
  c.WriteStdin("to node " + std::to_string(reader) + "\n");
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 3) << c.out << c.err;
  const std::string r = "n" + std::to_string(reader);
  EXPECT_NE(c.out.find(r + " stdin: to node " + std::to_string(reader)), std::string::npos) << c.out;
  EXPECT_EQ(CountLines(c.out, "stdin:"), 1) << c.out;
}

TEST(LauncherSsh, ThreeHostsWithTheUsersEnvironment) {
  TempDir dir;  // outlives the servers that write into it
  VirtualHosts vh(kHosts, "cs");
  if (!vh.skip().empty()) GTEST_SKIP() << vh.skip();
  ASSERT_TRUE(vh.ok());
  SshCluster ssh(vh, dir);
  if (!ssh.skip().empty()) GTEST_SKIP() << ssh.skip();
  ASSERT_EQ(ssh.error(), "");
  std::vector<std::string> argv = {Svmrun(),
                                   "--preload",
                                   "none",
                                   "--ssh",
                                   ssh.ssh_command(),
                                   "--hosts",
                                   vh.ip(0) + "," + vh.ip(1) + "," + vh.ip(2),
                                   "-x",
                                   "GIVEN_BY_X=x value",
                                   "--stdin",
                                   "2",
                                   "--"};
  for (auto& a : FakeJob(2)) argv.push_back(a);
  Child c(argv, {kVar + "=" + kValue});
  CheckFakeJob(c, kHosts, 2, "x value");
  for (size_t h = 0; h < kHosts; ++h) EXPECT_EQ(NicHost(c.out, h), vh.ip(h)) << c.out;
}

// IPv6 only: hosts by IPv6 address, the agents call back over IPv6 (the
// address in SSH_CONNECTION), and the nodes' control and NIC addresses are
// IPv6 too.
TEST(LauncherSsh, Ipv6Hosts) {
  TempDir dir;  // outlives the servers that write into it
  VirtualHosts vh(kHosts, "c6");
  if (!vh.skip().empty()) GTEST_SKIP() << vh.skip();
  ASSERT_TRUE(vh.ok());
  if (!vh.AddIpv6()) GTEST_SKIP() << "IPv6 is turned off in this kernel (ip -6 addr add failed)";
  SshCluster ssh(vh, dir, SIZE_MAX, /*ipv6=*/true);
  if (!ssh.skip().empty()) GTEST_SKIP() << ssh.skip();
  ASSERT_EQ(ssh.error(), "");
  std::vector<std::string> argv = {Svmrun(),
                                   "--preload",
                                   "none",
                                   "--ssh",
                                   ssh.ssh_command(),
                                   "--hosts",
                                   vh.ip6(0) + ",[" + vh.ip6(1) + "]," + vh.ip6(2),
                                   "-x",
                                   "GIVEN_BY_X=6",
                                   "--"};
  for (auto& a : FakeJob()) argv.push_back(a);
  Child c(argv, {kVar + "=" + kValue});
  CheckFakeJob(c, kHosts, 0, "6");
  for (size_t h = 0; h < kHosts; ++h)
    EXPECT_NE(c.out.find("[" + vh.ip6(h) + "]:"), std::string::npos) << c.out;  // NIC addresses
}

TEST(LauncherSsh, HostfileSlotsPlaceTheNodes) {
  TempDir dir;  // outlives the servers that write into it
  VirtualHosts vh(2, "cf");
  if (!vh.skip().empty()) GTEST_SKIP() << vh.skip();
  ASSERT_TRUE(vh.ok());
  SshCluster ssh(vh, dir);
  if (!ssh.skip().empty()) GTEST_SKIP() << ssh.skip();
  ASSERT_EQ(ssh.error(), "");
  WriteFile(dir.path + "/hosts", "# two hosts\n" + vh.ip(0) + " slots=2\n" + vh.ip(1) + "\n");
  // No -n: one node a slot, filled host by host, as mpirun does.
  std::vector<std::string> argv = {Svmrun(),     "--preload",         "none", "--ssh",      ssh.ssh_command(),
                                   "--hostfile", dir.path + "/hosts", "-x",   "GIVEN_BY_X", "--"};
  for (auto& a : FakeJob()) argv.push_back(a);
  Child c(argv, {kVar + "=" + kValue, "GIVEN_BY_X=from svmrun"});
  CheckFakeJob(c, 3, 0, "from svmrun");
  EXPECT_EQ(NicHost(c.out, 0), vh.ip(0)) << c.out;
  EXPECT_EQ(NicHost(c.out, 1), vh.ip(0)) << c.out;
  EXPECT_EQ(NicHost(c.out, 2), vh.ip(1)) << c.out;
}

// A host whose sshd refuses: the job ends at once, with one line naming it.
TEST(LauncherSsh, RefusedHostEndsTheJobNamingIt) {
  TempDir dir;  // outlives the servers that write into it
  VirtualHosts vh(kHosts, "cr");
  if (!vh.skip().empty()) GTEST_SKIP() << vh.skip();
  ASSERT_TRUE(vh.ok());
  SshCluster ssh(vh, dir, /*with_sshd=*/2);
  if (!ssh.skip().empty()) GTEST_SKIP() << ssh.skip();
  ASSERT_EQ(ssh.error(), "");
  const auto start = std::chrono::steady_clock::now();
  Child c({Svmrun(), "--preload", "none", "--ssh", ssh.ssh_command(), "--hosts",
           vh.ip(0) + "," + vh.ip(1) + "," + vh.ip(2), "--", FakeNode(), "--wait"});
  const int code = c.ExitCode();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(code, 0);
  EXPECT_LT(seconds, 10.0) << c.err;
  EXPECT_EQ(CountLines(c.err, "\n"), 1) << c.err;
  EXPECT_NE(c.err.find("host " + vh.ip(2) + ":"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("Connection refused"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, "");  // the nodes that did start were ended before they printed
}

// Two hosts with an sshd each, for the tests that make host 1 fall silent
// under a job of one node a host with a 1 s liveness timeout.
class SshPair {
 public:
  explicit SshPair(const std::string& tag) : vh_(2, tag) {
    if (!vh_.skip().empty()) {
      skip_ = vh_.skip();
    } else if (!vh_.ok()) {
      error_ = "the virtual hosts could not be set up";
    } else {
      ssh_.emplace(vh_, dir_);
      skip_ = ssh_->skip();
      error_ = ssh_->error();
    }
  }
  const std::string& skip() const { return skip_; }
  const std::string& error() const { return error_; }
  VirtualHosts& vh() { return vh_; }

  std::vector<std::string> Job(const std::vector<std::string>& fake_node_args) {
    std::vector<std::string> argv = {Svmrun(),           "--preload", "none", "--ssh", ssh_->ssh_command(),
                                     "--hosts",          vh_.ip(0) + "," + vh_.ip(1), "--liveness-timeout", "1",
                                     "--",               FakeNode()};
    argv.insert(argv.end(), fake_node_args.begin(), fake_node_args.end());
    return argv;
  }
  // The job's end once host 1 fell silent at `since`: 255 within 8 s,
  // naming the agent there.
  void ExpectEndNamingHostOne(Child& c, std::chrono::steady_clock::time_point since,
                              const std::function<void()>& at_end = {}) {
    const int code = c.ExitCode();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
    if (at_end) at_end();
    EXPECT_EQ(code, 255) << c.out << c.err;
    EXPECT_LT(seconds, 8.0) << c.err;
    EXPECT_NE(c.err.find("the agent on " + vh_.ip(1) + ": no answer"), std::string::npos) << c.err;
  }

 private:
  TempDir dir_;  // outlives the servers that write into it
  VirtualHosts vh_;
  std::optional<SshCluster> ssh_;
  std::string skip_, error_;
};

// A host agent that stops answering (SIGSTOP: a hung host) is given up
// like an svmd: its PINGs go unanswered, the job ends with 255 naming it.
TEST(LauncherSsh, StoppedAgentEndsTheJobNamingTheHost) {
  SshPair pair("cl");
  if (!pair.skip().empty()) GTEST_SKIP() << pair.skip();
  ASSERT_EQ(pair.error(), "");
  Child c(pair.Job({"--wait"}));
  ASSERT_TRUE(c.WaitFor("n1 control ")) << c.out << c.err;
  // Node 1's parent is the agent on host 1 (the namespaces share one pid space).
  const size_t at = c.out.find("n1 of 2 pid ");
  ASSERT_NE(at, std::string::npos) << c.out;
  const pid_t node = pid_t(std::stol(c.out.substr(at + 12)));
  std::ifstream stat("/proc/" + std::to_string(node) + "/stat");
  std::string pid, comm, state;
  pid_t agent = 0;
  ASSERT_TRUE(stat >> pid >> comm >> state >> agent) << "node pid " << node;
  std::ifstream cmdline("/proc/" + std::to_string(agent) + "/cmdline");
  const std::string args((std::istreambuf_iterator<char>(cmdline)), {});
  ASSERT_NE(args.find("--agent"), std::string::npos) << "parent " << agent << " of node 1 is not an agent";
  ASSERT_EQ(::kill(agent, SIGSTOP), 0);
  // Once continued, the agent finds its connection closed and leaves.
  pair.ExpectEndNamingHostOne(c, std::chrono::steady_clock::now(), [agent] { ::kill(agent, SIGCONT); });
}

// A link cut while the nodes are on their way to the join (each waits 3 s
// before its rendezvous): svmrun names the host whose agent fell silent, and
// on that host the agent, hearing nothing from svmrun, takes its node with it.
TEST(LauncherSsh, CutBeforeTheJoinEndsTheJobAndLeavesNothing) {
  SshPair pair("cj");
  if (!pair.skip().empty()) GTEST_SKIP() << pair.skip();
  ASSERT_EQ(pair.error(), "");
  VirtualHosts& vh = pair.vh();
  Child c(pair.Job({"--delay-rendezvous", "3000", "--wait"}));
  std::vector<pid_t> nodes;
  for (int i = 0; i < 200 && nodes.empty(); ++i) {
    nodes = vh.Pids(1, FakeNode());
    if (nodes.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(nodes.size(), 1u) << "node 1 did not start on " << vh.ip(1) << ": " << c.err;
  ASSERT_EQ(vh.Pids(1, Svmd()).size(), 1u) << "no agent on " << vh.ip(1);
  ASSERT_TRUE(vh.SetLink(1, false));
  pair.ExpectEndNamingHostOne(c, std::chrono::steady_clock::now());
  EXPECT_EQ(c.out.find(" control "), std::string::npos) << "a node joined before the cut: " << c.out;
  for (int i = 0; i < 500 && Alive(nodes[0]); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(Alive(nodes[0])) << "the link is still cut: node 1 (pid " << nodes[0] << ") must be gone";
  EXPECT_TRUE(vh.Pids(1, Svmd()).empty()) << "the agent on " << vh.ip(1) << " is still there";
  vh.SetLink(1, true);
}

// A real program on the runtime: fft verifies its own result.
void CheckFft(Child& c) {
  EXPECT_EQ(c.ExitCode(120), 0) << c.out << c.err;
  EXPECT_NE(c.out.find("Verification: PASSED"), std::string::npos) << c.out << c.err;
}
std::string Libsvm() { return BuildDir() + "/libsvm/libsvm.so"; }
std::string Fft() { return BuildDir() + "/splash2/fft"; }
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // a sanitized libsvm cannot be preloaded
#else
constexpr bool kSanitized = false;
#endif
bool HaveRuntime() {
  return !kSanitized && std::filesystem::exists(Libsvm()) && std::filesystem::exists(Fft());
}

TEST(LauncherSsh, SplashFftAcrossThreeHosts) {
  if (!HaveRuntime()) GTEST_SKIP() << "needs libsvm.so and splash2/fft (not built under SVM_SANITIZE)";
  TempDir dir;  // outlives the servers that write into it
  VirtualHosts vh(kHosts, "cp");
  if (!vh.skip().empty()) GTEST_SKIP() << vh.skip();
  ASSERT_TRUE(vh.ok());
  SshCluster ssh(vh, dir);
  if (!ssh.skip().empty()) GTEST_SKIP() << ssh.skip();
  ASSERT_EQ(ssh.error(), "");
  // fft wants a power of two threads: 4 nodes on 3 hosts.
  Child c({Svmrun(), "--preload", Libsvm(), "--timeout", "100", "-n", "4", "--ssh", ssh.ssh_command(), "--hosts",
           vh.ip(0) + "," + vh.ip(1) + "," + vh.ip(2), "--", Fft(), "-p", "4", "-m", "10", "-t"});
  CheckFft(c);
}

struct Slurm {
  TempDir dir;  // outlives the servers that write into it
  VirtualHosts vh{kHosts, "cl"};
  std::unique_ptr<SlurmCluster> cluster;
  std::string skip;
  Slurm() {
    skip = vh.skip();
    if (skip.empty() && vh.ok()) cluster = std::make_unique<SlurmCluster>(vh, dir);
    if (skip.empty() && cluster) skip = cluster->skip();
  }
  // salloc -N 3 [-n TASKS] ARGV..., with the client's environment.
  std::unique_ptr<Child> Salloc(std::vector<std::string> argv, std::vector<std::string> env, int tasks = 0) {
    if (tasks) argv.insert(argv.begin(), {"-n", std::to_string(tasks)});
    argv.insert(argv.begin(), {"salloc", "-N", std::to_string(kHosts), "-t", "3", "--quiet"});
    for (auto& e : cluster->env()) env.push_back(e);
    return std::make_unique<Child>(argv, env);
  }
};

// `salloc -N 3 svmrun -- ...` with no launcher flag: svmrun finds the
// allocation and starts one node a host with srun.
TEST(LauncherSlurm, SallocThreeHostsWithTheUsersEnvironment) {
  Slurm s;
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  ASSERT_TRUE(s.vh.ok());
  ASSERT_EQ(s.cluster->error(), "");
  std::vector<std::string> argv = {Svmrun(), "--preload", "none", "-x", "GIVEN_BY_X=by x", "--"};
  for (auto& a : FakeJob()) argv.push_back(a);
  auto c = s.Salloc(argv, {kVar + "=" + kValue});
  CheckFakeJob(*c, kHosts, 0, "by x");
  for (size_t h = 0; h < kHosts; ++h) EXPECT_EQ(NicHost(c->out, h), s.vh.ip(h)) << c->out;
}

TEST(LauncherSlurm, SplashFftUnderSalloc) {
  if (!HaveRuntime()) GTEST_SKIP() << "needs libsvm.so and splash2/fft (not built under SVM_SANITIZE)";
  Slurm s;
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  ASSERT_TRUE(s.vh.ok());
  ASSERT_EQ(s.cluster->error(), "");
  // salloc -N 3: one node a host; 8 threads, 3 a node, so all three work.
  auto c =
      s.Salloc({Svmrun(), "--preload", Libsvm(), "--timeout", "100", "-t", "3", "--tag-output", "--", Fft(), "-p", "8",
                "-m", "10", "-t"},
               {});
  CheckFft(*c);
  EXPECT_NE(c->out.find("[n0] Verification: PASSED"), std::string::npos) << c->out;
  // salloc -N 3 -n 4: Slurm puts 2 tasks on h0, so svmrun 2 nodes there.
  c = s.Salloc({Svmrun(), "--preload", Libsvm(), "--timeout", "100", "--", Fft(), "-p", "4", "-m", "10", "-t"}, {}, 4);
  CheckFft(*c);
}

// A host whose slurmd is gone: srun fails there, and the job ends within
// seconds with one line naming the host.
TEST(LauncherSlurm, SrunFailureEndsTheJobNamingTheHost) {
  Slurm s;
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  ASSERT_TRUE(s.vh.ok());
  ASSERT_EQ(s.cluster->error(), "");
  kill(s.cluster->slurmd(2).pid(), SIGKILL);
  s.cluster->slurmd(2).Wait(10);
  const auto start = std::chrono::steady_clock::now();
  auto c = s.Salloc({Svmrun(), "--preload", "none", "--", FakeNode(), "--wait"}, {});
  const int code = c->ExitCode(60);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(code, 0);
  EXPECT_LT(seconds, 15.0) << c->err;
  EXPECT_EQ(CountLines(c->err, "svmrun:"), 1) << c->err;
  EXPECT_NE(c->err.find("svmrun: cannot start the nodes on host h2: srun"), std::string::npos) << c->err;
}

}  // namespace
}  // namespace svm::launch_test
