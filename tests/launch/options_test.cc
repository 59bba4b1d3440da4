// svmrun's command line: the -np alias, SVM_VERBOSE, and the runtime knobs
// svmrun forwards to its nodes.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "svmd/options.h"
#include "tests/launch/launch_util.h"

namespace svm::launch_test {
namespace {

using svmd::Options;

// Parses argv (svmrun's name first) into *o; the exit code ParseCommandLine
// asked for (-1 = run).
int Parse(std::vector<std::string> argv, Options* o) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  int exit_now = -1;
  EXPECT_TRUE(svmd::ParseCommandLine(int(ptrs.size()), ptrs.data(), o, &exit_now).ok());
  return exit_now;
}

TEST(Options, NpIsAnAliasOfN) {
  Options a;
  ASSERT_EQ(Parse({"svmrun", "-np", "3", "--", "prog"}, &a), -1);
  EXPECT_EQ(a.nodes, 3u);
  Options b;
  ASSERT_EQ(Parse({"svmrun", "--mode", "dw", "-np=2", "--", "prog", "x"}, &b), -1);
  EXPECT_EQ(b.nodes, 2u);
  EXPECT_EQ(b.mode, "dw");
  EXPECT_EQ(b.program, (std::vector<std::string>{"prog", "x"}));
}

TEST(Options, NpInTheProgramsArgumentsIsTheProgramsOwn) {
  Options a;  // without "--": the program starts at its name
  ASSERT_EQ(Parse({"svmrun", "-n", "2", "--tag-output", "prog", "-np", "5"}, &a), -1);
  EXPECT_EQ(a.nodes, 2u);
  EXPECT_EQ(a.program, (std::vector<std::string>{"prog", "-np", "5"}));
  Options b;
  ASSERT_EQ(Parse({"svmrun", "-np", "2", "--", "prog", "-np", "5"}, &b), -1);
  EXPECT_EQ(b.nodes, 2u);
  EXPECT_EQ(b.program, (std::vector<std::string>{"prog", "-np", "5"}));
}

TEST(Options, ValuesAreTypedAndValidatedByCli11) {
  setenv("SVM_REGION_SIZE", "2M", 1);
  Options o;
  ASSERT_EQ(Parse({"svmrun", "-t", "3", "--net-latency", "2us", "--net-bandwidth", "10Gbit", "--timeout",
                   "1.5", "--hosts", "a,b:7000", "--tag-output", "--", "prog"},
                  &o),
            -1);
  unsetenv("SVM_REGION_SIZE");
  EXPECT_EQ(o.threads_per_node, 3u);
  EXPECT_EQ(o.region_size, 2u << 20);
  EXPECT_EQ(o.region_base, 0x200000000000ull);  // the default
  EXPECT_EQ(o.net_latency_ns, 2000u);
  EXPECT_EQ(o.net_bandwidth, 1250000000u);
  EXPECT_EQ(o.timeout_s, 1.5);
  EXPECT_EQ(o.hosts, (std::vector<std::string>{"a", "b:7000"}));
  EXPECT_TRUE(o.tag_output);
  // --help shows each option's type and its range or choices.
  testing::internal::CaptureStdout();
  Options h;
  EXPECT_EQ(Parse({"svmrun", "--help"}, &h), 0);
  const std::string help = testing::internal::GetCapturedStdout();
  for (const char* want : {"-n,--nodes N:UINT in [1 - 1024]", "--mode TEXT:{base,dw,rf,dd,nil}",
                           "--region-size SIZE", "--net-latency DURATION", "--net-bandwidth RATE",
                           "--timeout SECONDS:FLOAT in [0 - 1e+07]"})
    EXPECT_NE(help.find(want), std::string::npos) << want << "\n" << help;
  EXPECT_EQ(help.find(" TEXT (Env"), std::string::npos) << help;  // no untyped option left
}

// A FILE that looks like a flag is refused, with the way to name such a file.
TEST(Options, AFileNamedLikeAFlagIsRefused) {
  for (const char* flag : {"--stats", "--hostfile", "--key-file", "--preload"}) {
    std::vector<std::string> argv = {"svmrun", flag, "--", "prog"};
    std::vector<char*> ptrs;
    for (auto& a : argv) ptrs.push_back(a.data());
    Options o;
    int exit_now = -1;
    testing::internal::CaptureStderr();
    ASSERT_TRUE(svmd::ParseCommandLine(int(ptrs.size()), ptrs.data(), &o, &exit_now).ok());
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(exit_now, 2) << flag;
    EXPECT_NE(err.find(std::string(flag) + ": '--' is not a file name (write ./-- for a file named so)"),
              std::string::npos)
        << err;
  }
  Options o;
  ASSERT_EQ(Parse({"svmrun", "--stats", "./--", "--", "prog"}, &o), -1);
  EXPECT_EQ(o.stats, "./--");
}

TEST(Options, VerbosePrintsTheOptionsInEffect) {
  setenv("SVM_VERBOSE", "1", 1);
  setenv("SVM_MODE", "rf", 1);
  testing::internal::CaptureStderr();
  Options o;
  const int rc = Parse({"svmrun", "-n", "2", "--", "prog"}, &o);
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("SVM_VERBOSE");
  unsetenv("SVM_MODE");
  ASSERT_EQ(rc, -1) << err;
  EXPECT_NE(err.find("options in effect"), std::string::npos) << err;
  EXPECT_NE(err.find("--nodes = 2  (flag)"), std::string::npos) << err;
  EXPECT_NE(err.find("--mode = rf  (SVM_MODE)"), std::string::npos) << err;
  EXPECT_NE(err.find("--fault = uffd  (default)"), std::string::npos) << err;
}

TEST(Options, RuntimeKnobsReachTheNodes) {
  // libsvm's own variables (no svmrun flag) pass through to every node.
  Child c({Svmrun(), "--preload", "none", "--", "/usr/bin/env"},
          {"SVM_VERBOSE=1", "SVM_SHOW_STATS=1", "SVM_SHARE_GLOBALS=0", "SVM_NOTICE_RING=4096", "SVM_SPIN=off"});
  ASSERT_EQ(c.ExitCode(), 0) << c.err;
  for (const char* v :
       {"SVM_VERBOSE=1", "SVM_SHOW_STATS=1", "SVM_SHARE_GLOBALS=0", "SVM_NOTICE_RING=4096", "SVM_SPIN=off"})
    EXPECT_NE(("\n" + c.out).find(std::string("\n") + v + "\n"), std::string::npos) << v << "\n" << c.out;
}

// Issue 17: a node learns how many of the job's nodes share its host and how
// many CPUs they have (with more nodes than CPUs its waiters do not spin);
// the user's own values do not pass (svmrun's count is the truth).
TEST(Options, HostCountsReachTheNodes) {
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  Child c({Svmrun(), "--preload", "none", "-n", "3", "--", "/usr/bin/env"}, {"SVM_HOST_NODES=99"});
  ASSERT_EQ(c.ExitCode(), 0) << c.err;
  const std::string env = "\n" + c.out;
  const std::string want = "\nSVM_HOST_NODES=3\n";
  size_t nodes = 0;
  for (size_t at = env.find("\nSVM_HOST_NODES="); at != std::string::npos; at = env.find("\nSVM_HOST_NODES=", at + 1)) {
    EXPECT_EQ(env.compare(at, want.size(), want), 0) << c.out;
    ++nodes;
  }
  EXPECT_EQ(nodes, 3u) << c.out;
  EXPECT_NE(env.find("\nSVM_HOST_CPUS=" + std::to_string(CPU_COUNT(&cpus)) + "\n"), std::string::npos) << c.out;
}

// Pinned nodes learn what a wake-up from another CPU costs on their host
// (their spin policy weighs it); unpinned ones are not made to wait for
// the probe, and the user's own value does not pass.
TEST(Options, PinnedNodesLearnTheWakeUpCost) {
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  if (CPU_COUNT(&cpus) < 2) GTEST_SKIP() << "needs two CPUs";
  Child pinned({Svmrun(), "--preload", "none", "-n", "2", "--pin", "node", "--", "/usr/bin/env"},
               {"SVM_HOST_WAKE_NS=7"});
  ASSERT_EQ(pinned.ExitCode(), 0) << pinned.err;
  size_t nodes = 0;
  const std::string env = "\n" + pinned.out;
  for (size_t at = env.find("\nSVM_HOST_WAKE_NS="); at != std::string::npos;
       at = env.find("\nSVM_HOST_WAKE_NS=", at + 1)) {
    const uint64_t ns = std::stoull(env.substr(at + strlen("\nSVM_HOST_WAKE_NS=")));
    EXPECT_GT(ns, 7u) << pinned.out;
    ++nodes;
  }
  EXPECT_EQ(nodes, 2u) << pinned.out;
  Child loose({Svmrun(), "--preload", "none", "-n", "2", "--", "/usr/bin/env"}, {"SVM_HOST_WAKE_NS=7"});
  ASSERT_EQ(loose.ExitCode(), 0) << loose.err;
  EXPECT_EQ(loose.out.find("SVM_HOST_WAKE_NS"), std::string::npos) << loose.out;
}

// --spin reaches every node as SVM_SPIN (the runtime reads it there).
TEST(Options, SpinPolicyReachesTheNodes) {
  Child c({Svmrun(), "--preload", "none", "-n", "2", "--spin", "on", "--", "/usr/bin/env"});
  ASSERT_EQ(c.ExitCode(), 0) << c.err;
  size_t at = 0, nodes = 0;
  while ((at = c.out.find("SVM_SPIN=on\n", at)) != std::string::npos) ++nodes, ++at;
  EXPECT_EQ(nodes, 2u) << c.out;
}

TEST(Options, NetworkKnobsReachTheNodesUnderTheirOwnNames) {
  // One name per knob: the nodes read SVM_NET_LATENCY / SVM_NET_BANDWIDTH,
  // in svmrun's syntax (no SVM_NET_LATENCY_NS beside SVM_NET_LATENCY).
  Child c({Svmrun(), "--preload", "none", "--net-latency", "2us", "--net-bandwidth", "10Gbit", "--",
           "/usr/bin/env"});
  ASSERT_EQ(c.ExitCode(), 0) << c.err;
  const std::string env = "\n" + c.out;
  EXPECT_NE(env.find("\nSVM_NET_LATENCY=2000ns\n"), std::string::npos) << c.out;
  EXPECT_NE(env.find("\nSVM_NET_BANDWIDTH=1250000000B\n"), std::string::npos) << c.out;
  EXPECT_EQ(env.find("SVM_NET_LATENCY_NS"), std::string::npos) << c.out;
  uint64_t v;
  ASSERT_TRUE(svmd::ParseDuration("2000ns", &v).ok());
  EXPECT_EQ(v, 2000u);
  ASSERT_TRUE(svmd::ParseRate("1250000000B", &v).ok());
  EXPECT_EQ(v, 1250000000u);
}

TEST(Options, OversubscriptionIsWarnedAbout) {
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  const std::string over = std::to_string(CPU_COUNT(&cpus) + 1);
  Child c({Svmrun(), "--preload", "none", "-t", over, "--", "/bin/true"});
  ASSERT_EQ(c.ExitCode(), 0) << c.err;
  EXPECT_NE(c.err.find("1 nodes x " + over + " threads = " + over + " application threads on"), std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find("oversubscribed"), std::string::npos) << c.err;
  Child fits({Svmrun(), "--preload", "none", "--", "/bin/true"});
  ASSERT_EQ(fits.ExitCode(), 0) << fits.err;
  EXPECT_EQ(fits.err.find("oversubscribed"), std::string::npos) << fits.err;
}

}  // namespace
}  // namespace svm::launch_test
