// End-to-end tests of svmrun (local jobs) and svmd (remote jobs over
// loopback), driven through tests/launch/fake_node with --preload none.
// No timing assertions: deadlines are generous and only bound a hang.
#include <gtest/gtest.h>
#include <sched.h>

#include <regex>

#include "util/auth.h"
#include "control/control_client.h"
#include "svmd/local_node.h"
#include "util/net.h"
#include "tests/launch/launch_util.h"

namespace svm::launch_test {
namespace {

std::vector<std::string> SvmrunArgs(std::vector<std::string> svmrun_args, std::vector<std::string> program) {
  std::vector<std::string> argv = {Svmrun(), "--preload", "none"};
  argv.insert(argv.end(), svmrun_args.begin(), svmrun_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

class NodesTest : public ::testing::TestWithParam<int> {};

TEST_P(NodesTest, ExitCodeAndOutputOfEveryNode) {
  int n = GetParam();
  // Node 0 exits 3 last (after stdin EOF), so no output is cut short.
  Child c(SvmrunArgs({"-n", std::to_string(n)}, {FakeNode(), "--exit-node", "0", "3", "--lines", "3", "--read-stdin"}));
  for (int k = 0; k < n; ++k) ASSERT_TRUE(c.WaitFor("n" + std::to_string(k) + " line 2\n")) << c.out;
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 3) << c.err;
  for (int k = 0; k < n; ++k) {
    EXPECT_NE(c.out.find("n" + std::to_string(k) + " of " + std::to_string(n) + " pid"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("n" + std::to_string(k) + " line 2\n"), std::string::npos) << c.out;
  }
  EXPECT_EQ(CountLines(c.out, " peers "), n);
}

TEST_P(NodesTest, ZeroExitAndTaggedOutput) {
  int n = GetParam();
  Child c(SvmrunArgs({"-n", std::to_string(n), "--tag-output"}, {FakeNode(), "--lines", "2"}));
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 0) << c.err;
  for (int k = 0; k < n; ++k) {
    std::string tag = "[n" + std::to_string(k) + "] n" + std::to_string(k) + " line 1\n";
    EXPECT_NE(c.out.find(tag), std::string::npos) << c.out;
  }
  // Every line is tagged.
  size_t pos = 0;
  while (pos < c.out.size()) {
    EXPECT_EQ(c.out.compare(pos, 2, "[n"), 0) << c.out.substr(pos, 40);
    pos = c.out.find('\n', pos) + 1;
  }
}

TEST_P(NodesTest, StdinReachesNodeZero) {
  int n = GetParam();
  Child c(SvmrunArgs({"-n", std::to_string(n)}, {FakeNode(), "--read-stdin"}));
  c.WriteStdin("hello\nworld\n");
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 0) << c.err;
  // Node 0's lines in order and whole. Not back to back: node 0 writes each
  // one on its own (cin flushes cout before every read), and other nodes'
  // lines may come between them.
  std::vector<std::string> n0, all;
  for (size_t pos = 0, end; (end = c.out.find('\n', pos)) != std::string::npos; pos = end + 1) {
    all.push_back(c.out.substr(pos, end - pos));
    if (all.back().rfind("n0 stdin", 0) == 0) n0.push_back(all.back());
  }
  EXPECT_EQ(n0, (std::vector<std::string>{"n0 stdin: hello", "n0 stdin: world", "n0 stdin eof"})) << c.out;
  const std::regex whole(R"(n\d+ (of \d+ pid \d+|peers \S+|control \S+|stdin: (hello|world)|stdin eof))");
  for (const std::string& line : all) EXPECT_TRUE(std::regex_match(line, whole)) << "a garbled line: " << line;
}

TEST_P(NodesTest, SigkillOfOneNodeEndsTheJobWithNothingLeft) {
  int n = GetParam();
  auto shm_before = ShmEntries();
  Child c(SvmrunArgs({"-n", std::to_string(n)}, {FakeNode(), "--wait"}));
  for (int k = 0; k < n; ++k) ASSERT_TRUE(c.WaitFor("n" + std::to_string(k) + " control")) << c.out << c.err;
  std::vector<pid_t> pids = NodePids(c.out);
  ASSERT_EQ(int(pids.size()), n);
  int victim = n - 1;
  ASSERT_EQ(kill(NodePid(c.out, victim), SIGKILL), 0);
  EXPECT_EQ(c.ExitCode(), 137) << c.err;
  EXPECT_NE(c.err.find("node " + std::to_string(victim) + " "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("SIGKILL"), std::string::npos) << c.err;
  for (pid_t p : pids) {
    EXPECT_FALSE(Alive(p)) << "node pid " << p << " survived";
    EXPECT_FALSE(GroupAlive(p)) << "process group " << p << " survived";
  }
  auto shm_after = ShmEntries();
  for (auto& e : shm_after) EXPECT_TRUE(shm_before.count(e)) << "new /dev/shm entry " << e;
}

INSTANTIATE_TEST_SUITE_P(Nodes, NodesTest, ::testing::Values(1, 2, 4));

TEST(Launch, ExitCodeOfOneNode) {
  Child c(SvmrunArgs({"-n", "3"}, {FakeNode(), "--exit-node", "1", "9"}));
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 9) << c.err;
}

TEST(Launch, SigtermToSvmrunTearsDown) {
  Child c(SvmrunArgs({"-n", "2"}, {FakeNode(), "--wait"}));
  ASSERT_TRUE(c.WaitFor("n0 control"));
  ASSERT_TRUE(c.WaitFor("n1 control"));
  std::vector<pid_t> pids = NodePids(c.out);
  kill(c.pid(), SIGTERM);
  EXPECT_EQ(c.ExitCode(), 143) << c.err;
  EXPECT_NE(c.err.find("SIGTERM"), std::string::npos) << c.err;
  for (pid_t p : pids) EXPECT_FALSE(Alive(p));
}

TEST(Launch, SigkillOfSvmrunLeavesNoOrphan) {
  Child c(SvmrunArgs({"-n", "2"}, {FakeNode(), "--wait"}));
  ASSERT_TRUE(c.WaitFor("n0 control"));
  ASSERT_TRUE(c.WaitFor("n1 control"));
  std::vector<pid_t> pids = NodePids(c.out);
  kill(c.pid(), SIGKILL);
  c.Wait();
  for (pid_t p : pids) {
    for (int i = 0; i < 500 && Alive(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(Alive(p)) << "orphan node " << p;
  }
}

TEST(Launch, TimeoutExits124) {
  Child c(SvmrunArgs({"-n", "2", "--timeout", "0.5"}, {FakeNode(), "--wait"}));
  EXPECT_EQ(c.ExitCode(), 124) << c.err;
  EXPECT_NE(c.err.find("timed out"), std::string::npos) << c.err;
}

TEST(Launch, ReportedExitEndsTheJobWithThatStatus) {
  Child c(SvmrunArgs({"-n", "3"}, {FakeNode(), "--wait", "--report-exit", "--exit", "5"}));
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 5) << c.err;
  EXPECT_NE(c.out.find("n1 terminate requested"), std::string::npos) << c.out;
}

TEST(Launch, EnvironmentTwinsAndFlagPrecedence) {
  Child c(SvmrunArgs({}, {"/bin/sh", "-c", "echo id=$SVM_NODE_ID nodes=$SVM_NODES mode=$SVM_MODE size=$SVM_REGION_SIZE"}),
          {"SVM_NODES=2", "SVM_REGION_SIZE=64M"});
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 0) << c.err;
  EXPECT_NE(c.out.find("id=1 nodes=2 mode=base size=67108864"), std::string::npos) << c.out;
  Child d(SvmrunArgs({"-n", "1"}, {"/bin/sh", "-c", "echo nodes=$SVM_NODES"}), {"SVM_NODES=3"});
  d.CloseStdin();
  EXPECT_EQ(d.ExitCode(), 0) << d.err;
  EXPECT_EQ(d.out, "nodes=1\n");
}

TEST(Launch, NodeEnvironment) {
  Child c(SvmrunArgs({"-n", "2", "--stats", "s.json"},
              {"/bin/sh", "-c",
               "echo $SVM_NODE_ID:$SVM_THREADS_PER_NODE:$SVM_PLACE:$SVM_FAULT:$SVM_TRANSPORT:$SVM_HOME:"
               "$SVM_REGION_BASE:${SVM_STATS:+stats}:${SVM_KEY_FD:+key}:${SVM_CONTROL:+ctl}:"
               "${SVM_JOB_EPOCH:+epoch}:$LD_BIND_NOW"}));
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 0) << c.err;
  EXPECT_NE(c.out.find("0:1:block:uffd:shm:first-touch:0x200000000000:stats:key:ctl:epoch:1\n"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("1:1:block:uffd:shm:first-touch:0x200000000000::key:ctl:epoch:1\n"), std::string::npos)
      << c.out;
}

// --pin node: each node prints its CPUs, which must be its DealCpus share of
// the launcher's (svmrun's, or svmd's: both run with this test's affinity;
// every node of the job on one launcher).
const std::vector<std::string> kPrintCpus = {
    "/bin/sh", "-c", "echo node $SVM_NODE_ID: $(grep Cpus_allowed_list /proc/$$/status | cut -f2)"};

void ExpectPinned(Child& c, uint32_t nodes) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  std::vector<int> cpus;
  for (int k = 0; k < CPU_SETSIZE; ++k)
    if (CPU_ISSET(k, &mine)) cpus.push_back(k);
  const auto shares = svmd::DealCpus(cpus, nodes);
  for (uint32_t n = 0; n < nodes; ++n) {
    const std::vector<int>& share = shares[n];
    std::string want;  // as the kernel prints it: 0-3,6
    for (size_t i = 0; i < share.size();) {
      size_t j = i;
      while (j + 1 < share.size() && share[j + 1] == share[j] + 1) ++j;
      want += (want.empty() ? "" : ",") + std::to_string(share[i]) +
              (j > i ? "-" + std::to_string(share[j]) : "");
      i = j + 1;
    }
    EXPECT_NE(c.out.find("node " + std::to_string(n) + ": " + want + "\n"), std::string::npos)
        << "want " << want << " in " << c.out;
  }
}

TEST(Launch, PinBindsEachNodeToItsShare) {
  Child c(SvmrunArgs({"-n", "3", "--pin", "node"}, kPrintCpus));
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 0) << c.err;
  ExpectPinned(c, 3);
}

// Bad flags: a clear message, a non-zero exit, and nothing started.
TEST(Launch, BadFlagsStartNothing) {
  TempDir dir;
  std::string marker = dir.path + "/started";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"-n", "0"}, "--nodes"},
      {{"--nodes", "many"}, "--nodes"},
      {{"--bogus"}, "--bogus"},
      {{"--mode", "fast"}, "valid choices: base, dw, rf, dd, nil"},
      {{"--mode", "NIL"}, "valid choices: base, dw, rf, dd, nil"},
      // Built with verbs: refused for want of a device here (svmrun, exit 2)
      // or, on RDMA hardware, by the nodes at start-up; either way named.
      {{"--transport", "verbs"}, "--transport verbs"},
      {{"--transport", "udp"}, "--transport"},
      // shm joins nodes of one host and has no network to model.
      {{"--transport", "shm", "--net-latency", "2us"}, "need --transport tcp"},
      {{"--fault", "magic"}, "uffd, uffd-thread, mprotect"},
      {{"--home", "x"}, "first-touch, cyclic, block"},
      {{"--place", "x"}, "block, cyclic"},
      {{"--region-size", "12Q"}, "--region-size"},
      {{"--region-size", "100T"}, "past the end of the user address space"},
      {{"--region-base", "0x1001"}, "--region-base"},
      {{"--timeout", "-1"}, "--timeout"},
      {{"--log-level", "loud"}, "--log-level"},
      {{"--net-latency", "2"}, "--net-latency: '2': unknown unit ''"},
      {{"--net-bandwidth", "10Gbps"}, "--net-bandwidth"},
      {{"--launcher", "svmd", "--hosts", "127.0.0.1:1"}, "--key-file"},
      {{"--launcher", "ssh"}, "--launcher ssh needs --hosts or --hostfile"},
      {{"--hosts", "a", "--hostfile", "f"}, "give one of them"},
      {{"--hostfile", "/no/such/hostfile"}, "--hostfile /no/such/hostfile"},
      {{"--stdin", "first"}, "--stdin"},
      {{"-n", "2", "--stdin", "2"}, "--stdin 2: the job has nodes 0..1"},
      {{"-x", "SVM_TEST_UNSET_VARIABLE"}, "-x SVM_TEST_UNSET_VARIABLE: not set"},
  };
  for (auto& k : cases) {
    Child c(SvmrunArgs(k.args, {"/usr/bin/touch", marker}));
    c.CloseStdin();
    int code = c.ExitCode();
    EXPECT_NE(code, 0) << k.message;
    EXPECT_NE(code, -1) << k.message;
    EXPECT_NE(c.err.find(k.message), std::string::npos) << "stderr: " << c.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << k.message;
  }
  Child none({Svmrun(), "--preload", "none"});
  EXPECT_EQ(none.ExitCode(), 2);
  EXPECT_NE(none.err.find("no program"), std::string::npos) << none.err;
  Child missing({Svmrun(), "--preload", "none", "--", dir.path + "/no-such-program"});
  EXPECT_EQ(missing.ExitCode(), 127);
  EXPECT_NE(missing.err.find("no-such-program"), std::string::npos) << missing.err;
}

TEST(Launch, MissingRuntimeLibraryIsRefused) {
  TempDir dir;
  std::string marker = dir.path + "/started";
  Child c({Svmrun(), "--", "/usr/bin/touch", marker}, {"SVM_PRELOAD=" + dir.path + "/libsvm.so"});
  EXPECT_EQ(c.ExitCode(), 2);
  EXPECT_NE(c.err.find("libsvm.so"), std::string::npos) << c.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  if (!std::filesystem::exists(BuildDir() + "/libsvm/libsvm.so") &&
      !std::filesystem::exists(BuildDir() + "/lib/libsvm.so")) {
    Child d({Svmrun(), "--", "/usr/bin/touch", marker});
    EXPECT_EQ(d.ExitCode(), 2);
    EXPECT_NE(d.err.find("--preload none"), std::string::npos) << d.err;
    EXPECT_FALSE(std::filesystem::exists(marker));
  }
}

TEST(Launch, HelpAndVersion) {
  Child h({Svmrun(), "--help"});
  EXPECT_EQ(h.ExitCode(), 0);
  for (const char* f : {"--nodes", "--threads-per-node", "--place", "--mode", "--fault", "--transport",
                        "--region-base", "--region-size", "--home", "--stats", "--timeout", "--tag-output",
                        "--log-level", "--hosts", "--preload", "--key-file", "--net-latency",
                        "--net-bandwidth", "SVM_NODES"})
    EXPECT_NE(h.out.find(f), std::string::npos) << f;
  Child v({Svmrun(), "--version"});
  EXPECT_EQ(v.ExitCode(), 0);
  EXPECT_NE(v.out.find("svmrun "), std::string::npos);
}

// A client with the wrong key gets nothing from the job: neither the control
// socket (no PEERS, no way in) nor a node's NIC (not a byte of memory).
// Issue 18: a node cut off from svmrun before it joins gives up within the
// liveness timeout (at least kMinConnectMs), not a fixed 30 s.
TEST(Control, ConnectWaitsTheLivenessTimeoutAtMost) {
  char dir[] = "/tmp/svm-control-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string key_file = std::string(dir) + "/key";
  svmd::Key key;
  ASSERT_TRUE(svmd::GenerateKey(&key).ok());
  ASSERT_TRUE(svmd::WriteKeyFile(key_file, key).ok());
  setenv("SVM_NODE_ID", "0", 1);
  setenv("SVM_NODES", "1", 1);
  setenv("SVM_JOB_EPOCH", "1", 1);
  setenv("SVM_CONTROL", "127.0.0.1:1", 1);
  setenv("SVM_KEY_FILE", key_file.c_str(), 1);
  for (auto [liveness, connect] : std::vector<std::pair<const char*, int64_t>>{
           {nullptr, 30000}, {"8", 8000}, {"1", svmd::kMinConnectMs}, {"100", 30000}, {"0", 30000}}) {
    if (liveness) {
      setenv("SVM_LIVENESS_TIMEOUT", liveness, 1);
    } else {
      unsetenv("SVM_LIVENESS_TIMEOUT");
    }
    svmd::ControlConfig cfg;
    ASSERT_TRUE(svmd::ControlConfig::FromEnv(&cfg).ok());
    EXPECT_EQ(cfg.connect_timeout_ms, connect) << (liveness ? liveness : "unset");
  }
  unlink(key_file.c_str());
  rmdir(dir);
}

// A control socket that takes the connection and never answers: the
// rendezvous ends at the deadline and says svmrun is silent.
TEST(Control, SilentSvmrunEndsTheRendezvousNamingIt) {
  svmd::UniqueFd listener;
  uint16_t port = 0;
  ASSERT_TRUE(svmd::Listen("127.0.0.1", 0, &listener, &port).ok());  // never accepts
  svmd::ControlConfig cfg;
  cfg.control_host = "127.0.0.1";
  cfg.control_port = port;
  ASSERT_TRUE(svmd::GenerateKey(&cfg.key).ok());
  cfg.connect_timeout_ms = 300;
  svmd::ControlClient client;
  std::vector<std::string> peers;
  const int64_t start = svmd::NowMs();
  Status s = client.Rendezvous(cfg, "1.2.3.4:5", &peers);
  EXPECT_EQ(s.code(), Status::Code::kTimeout) << s.ToString();
  EXPECT_LT(svmd::NowMs() - start, 5000);
  EXPECT_NE(s.message().find("did not answer within 0.3 s (cut off?)"), std::string::npos) << s.ToString();
}

TEST(Launch, WrongKeyIsRefusedEverywhere) {
  Child c(SvmrunArgs({"-n", "2"}, {FakeNode(), "--read-stdin", "--wait"}));
  ASSERT_TRUE(c.WaitFor("n0 control"));
  ASSERT_TRUE(c.WaitFor("n1 peers"));
  std::string out = c.out;
  size_t at = out.find("n0 control ") + 11;
  std::string control = out.substr(at, out.find('\n', at) - at);
  at = out.find("n1 peers ") + 9;
  std::string peers = out.substr(at, out.find('\n', at) - at);
  std::string nic1 = peers.substr(peers.find(',') + 1);

  svmd::Key wrong;
  ASSERT_TRUE(svmd::GenerateKey(&wrong).ok());
  svmd::ControlConfig cfg;
  ASSERT_TRUE(svmd::ParseHostPort(control, &cfg.control_host, &cfg.control_port).ok());
  cfg.node_id = 1;
  cfg.nodes = 2;
  cfg.key = wrong;
  cfg.rendezvous_timeout_ms = 20000;
  svmd::ControlClient client;
  std::vector<std::string> got;
  Status s = client.Rendezvous(cfg, "1.2.3.4:5", &got);
  EXPECT_EQ(s.code(), Status::Code::kAuthFailed) << s.ToString();
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE(c.WaitFor("refused control connection"));

  std::string host;
  uint16_t port;
  ASSERT_TRUE(svmd::ParseHostPort(nic1, &host, &port).ok());
  svmd::UniqueFd fd;
  ASSERT_TRUE(svmd::Connect(host, port, svmd::NowMs() + 20000, &fd).ok());
  s = svmd::Authenticate(fd.get(), wrong, svmd::AuthRole::kClient, svmd::NowMs() + 20000);
  EXPECT_EQ(s.code(), Status::Code::kAuthFailed) << s.ToString();
  char byte;
  EXPECT_LE(read(fd.get(), &byte, 1), 0) << "a byte of node memory leaked";
  ASSERT_TRUE(c.WaitFor("n1: refused NIC connection"));

  c.CloseStdin();  // node 0 exits 0; node 1 waits for TERMINATE
  kill(c.pid(), SIGTERM);
  EXPECT_NE(c.ExitCode(), -1);
}

// svmd over loopback: two sessions of one svmd play two hosts.
class SvmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = dir_.WriteKey("admin.key", std::string(64, 'a'));
    svmd_ = std::make_unique<Child>(std::vector<std::string>{Svmd(), "--listen", "127.0.0.1:0", "--key-file", key_});
    ASSERT_TRUE(svmd_->WaitFor("listening on 127.0.0.1:"));
    size_t at = svmd_->out.find("listening on 127.0.0.1:") + 23;
    port_ = svmd_->out.substr(at, svmd_->out.find('\n', at) - at);
  }
  void TearDown() override {
    kill(svmd_->pid(), SIGTERM);
    EXPECT_EQ(svmd_->ExitCode(), 0) << svmd_->err;
  }
  std::string Hosts(int n) {
    std::string h;
    for (int i = 0; i < n; ++i) h += (i ? "," : "") + std::string("127.0.0.1:") + port_;
    return h;
  }
  TempDir dir_;
  std::string key_, port_;
  std::unique_ptr<Child> svmd_;
};

TEST_F(SvmdTest, RemoteJobOutputStdinAndExitCode) {
  Child c(SvmrunArgs({"-n", "3", "--tag-output", "--hosts", Hosts(2), "--key-file", key_},
              {FakeNode(), "--read-stdin", "--exit-node", "0", "6"}));
  c.WriteStdin("over the wire\n");
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 6) << c.err;
  EXPECT_NE(c.out.find("[n0] n0 stdin: over the wire\n"), std::string::npos) << c.out;
  for (int k = 0; k < 3; ++k) EXPECT_NE(c.out.find("[n" + std::to_string(k) + "] n" + std::to_string(k) + " of 3"), std::string::npos);
}

// svmd deals its own nodes of the job out over its CPUs.
TEST_F(SvmdTest, RemoteNodesArePinned) {
  Child c(SvmrunArgs({"-n", "2", "--pin", "node", "--hosts", Hosts(1), "--key-file", key_}, kPrintCpus));
  c.CloseStdin();
  EXPECT_EQ(c.ExitCode(), 0) << c.err;
  ExpectPinned(c, 2);
}

TEST_F(SvmdTest, RemoteNodeKilled) {
  Child c(SvmrunArgs({"-n", "2", "--hosts", Hosts(2), "--key-file", key_}, {FakeNode(), "--wait"}));
  ASSERT_TRUE(c.WaitFor("n0 control"));
  ASSERT_TRUE(c.WaitFor("n1 control"));
  std::vector<pid_t> pids = NodePids(c.out);
  ASSERT_EQ(pids.size(), 2u);
  kill(NodePid(c.out, 1), SIGKILL);
  EXPECT_EQ(c.ExitCode(), 137) << c.err;
  EXPECT_NE(c.err.find("node 1"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("SIGKILL"), std::string::npos) << c.err;
  for (pid_t p : pids)
    for (int i = 0; i < 500 && Alive(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (pid_t p : pids) EXPECT_FALSE(Alive(p));
}

TEST_F(SvmdTest, WrongKeyCannotStartAJob) {
  std::string wrong = dir_.WriteKey("wrong.key", std::string(32, 'w'));
  std::string marker = dir_.path + "/started";
  Child c(SvmrunArgs({"-n", "2", "--hosts", Hosts(1), "--key-file", wrong}, {"/usr/bin/touch", marker}));
  EXPECT_NE(c.ExitCode(), 0);
  EXPECT_NE(c.err.find("authentication failed"), std::string::npos) << c.err;
  ASSERT_TRUE(svmd_->WaitFor("refused connection"));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Svmd, RefusesAKeyFileOthersCanRead) {
  TempDir dir;
  std::string key = dir.WriteKey("k", std::string(32, 'k'), 0644);
  Child d({Svmd(), "--listen", "127.0.0.1:0", "--key-file", key});
  EXPECT_EQ(d.ExitCode(), 2);
  EXPECT_NE(d.err.find("chmod 600"), std::string::npos) << d.err;
}

}  // namespace
}  // namespace svm::launch_test
