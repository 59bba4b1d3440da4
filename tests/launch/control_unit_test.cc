// Unit tests of the svmd building blocks: key files, the HMAC handshake,
// frame and message codecs (bounds checks), option parsing and choices.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "util/auth.h"
#include "control/frame.h"
#include "svmd/liveness.h"
#include "svmd/local_node.h"
#include "svmd/options.h"
#include "svmd/wake_probe.h"
#include "tests/launch/launch_util.h"

namespace svm::svmd {
namespace {

struct Pair {
  UniqueFd a, b;
  Pair() {
    int fds[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

TEST(Auth, RightKeyBothSidesAgreeOnSession) {
  Key k, sa, sb;
  ASSERT_TRUE(GenerateKey(&k).ok());
  Pair p;
  Status server;
  std::thread t([&] { server = Authenticate(p.b.get(), k, AuthRole::kServer, NowMs() + 10000, &sb); });
  Status client = Authenticate(p.a.get(), k, AuthRole::kClient, NowMs() + 10000, &sa);
  t.join();
  EXPECT_TRUE(client.ok()) << client.ToString();
  EXPECT_TRUE(server.ok()) << server.ToString();
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, k);
}

TEST(Auth, WrongKeyRefusedAndServerSendsNothingMore) {
  Key k1, k2;
  GenerateKey(&k1);
  GenerateKey(&k2);
  Pair p;
  Status server;
  std::thread t([&] {
    server = Authenticate(p.b.get(), k1, AuthRole::kServer, NowMs() + 10000);
    p.b.reset();
  });
  Status client = Authenticate(p.a.get(), k2, AuthRole::kClient, NowMs() + 10000);
  t.join();
  EXPECT_EQ(server.code(), Status::Code::kAuthFailed);
  EXPECT_EQ(client.code(), Status::Code::kAuthFailed);
}

TEST(Auth, SameRoleOnBothSidesIsRefused) {
  Key k;
  GenerateKey(&k);
  Pair p;
  Status other;
  std::thread t([&] { other = Authenticate(p.b.get(), k, AuthRole::kServer, NowMs() + 10000); });
  Status s = Authenticate(p.a.get(), k, AuthRole::kServer, NowMs() + 10000);
  p.a.reset();
  t.join();
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(other.ok());
}

TEST(Auth, GarbagePeerIsMalformed) {
  Key k;
  GenerateKey(&k);
  Pair p;
  std::string junk(40, 'x');
  ASSERT_TRUE(WriteAll(p.b.get(), junk.data(), junk.size()).ok());
  Status s = Authenticate(p.a.get(), k, AuthRole::kClient, NowMs() + 10000);
  EXPECT_EQ(s.code(), Status::Code::kMalformed);
}

TEST(Auth, SilentPeerTimesOut) {
  Key k;
  GenerateKey(&k);
  Pair p;
  Status s = Authenticate(p.a.get(), k, AuthRole::kClient, NowMs() + 200);
  EXPECT_EQ(s.code(), Status::Code::kTimeout);
}

TEST(Auth, KeyFiles) {
  launch_test::TempDir dir;
  Key k;
  GenerateKey(&k);
  std::string path = dir.path + "/key";
  ASSERT_TRUE(WriteKeyFile(path, k).ok());
  Key back;
  ASSERT_TRUE(LoadKeyFromFile(path, &back).ok());
  EXPECT_EQ(back, k);
  EXPECT_FALSE(WriteKeyFile(path, k).ok());  // never overwrites
  std::string hex = dir.WriteKey("hex", std::string(64, 'f') + "\n");
  ASSERT_TRUE(LoadKeyFromFile(hex, &back).ok());
  EXPECT_EQ(back[0], 0xff);
  Status s = LoadKeyFromFile(dir.WriteKey("open", std::string(32, 'x'), 0640), &back);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chmod 600"), std::string::npos);
  EXPECT_FALSE(LoadKeyFromFile(dir.WriteKey("short", "abc"), &back).ok());
  EXPECT_FALSE(LoadKeyFromFile(dir.path + "/none", &back).ok());
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_TRUE(WriteAll(fds[1], k.data(), k.size()).ok());
  close(fds[1]);
  ASSERT_TRUE(LoadKeyFromFd(fds[0], &back).ok());
  EXPECT_EQ(back, k);
  close(fds[0]);
}

TEST(Frame, RoundTripsAndSplitsAStream) {
  JobRequest j;
  j.nodes_total = 4;
  j.node_ids = {2, 3};
  j.argv = {"prog", "-x"};
  j.env = {"A=1"};
  j.cwd = "/tmp";
  j.control = "1.2.3.4:5";
  std::string stream = EncodeFrame(MsgType::kJob, 77, Encode(j)) +
                       EncodeFrame(MsgType::kHello, 77, Encode(HelloMsg{3, "nic"}));
  FrameReader r;
  Frame f;
  Status err;
  for (char c : stream) r.Append(&c, 1);  // byte by byte
  ASSERT_TRUE(r.Next(&f, &err));
  EXPECT_EQ(f.type, MsgType::kJob);
  EXPECT_EQ(f.epoch, 77u);
  JobRequest back;
  ASSERT_TRUE(Decode(f.body, &back).ok());
  EXPECT_EQ(back.node_ids, j.node_ids);
  EXPECT_EQ(back.argv, j.argv);
  EXPECT_EQ(back.control, j.control);
  ASSERT_TRUE(r.Next(&f, &err));
  HelloMsg h;
  ASSERT_TRUE(Decode(f.body, &h).ok());
  EXPECT_EQ(h.node, 3u);
  EXPECT_EQ(h.nic_address, "nic");
  EXPECT_FALSE(r.Next(&f, &err));
  EXPECT_TRUE(err.ok());
}

TEST(Frame, MalformedInputIsAnErrorNeverACrash) {
  std::string body = Encode(JobRequest{Key{}, 2, {0, 1}, {"p"}, {}, "/", "c:1"});
  for (size_t cut = 0; cut < body.size(); ++cut) {
    JobRequest j;
    EXPECT_FALSE(Decode(body.substr(0, cut), &j).ok()) << cut;
  }
  JobRequest j;
  EXPECT_FALSE(Decode(body + "x", &j).ok());
  // A node id out of range, a huge list count.
  EXPECT_FALSE(Decode(Encode(JobRequest{Key{}, 1, {5}, {"p"}, {}, "/", "c"}), &j).ok());
  std::vector<std::string> v;
  std::string huge = EncodeI32(-1);
  EXPECT_FALSE(DecodeStrings(huge, MsgType::kPeers, &v).ok());
  // Headers: bad magic, unknown type, oversized body.
  for (std::string bad : {std::string(16, 'z'), EncodeFrame(MsgType::kHello, 1, "").replace(6, 2, "\x63\x00", 2),
                          EncodeFrame(MsgType::kHello, 1, "").replace(8, 4, "\xff\xff\xff\x7f", 4)}) {
    FrameReader r;
    r.Append(bad.data(), bad.size());
    Frame f;
    Status err;
    EXPECT_FALSE(r.Next(&f, &err));
    EXPECT_FALSE(err.ok());
  }
  NodeExitMsg m;
  std::string e = Encode(NodeExitMsg{1, ExitKind::kSignaled, 9, ""});
  e[4] = 9;  // bad kind
  EXPECT_FALSE(Decode(e, &m).ok());
}

TEST(Options, ChoicesAndSizes) {
  for (const char* m : {"base", "dw", "rf", "dd", "nil"}) EXPECT_TRUE(CheckChoice(kModes, "--mode", m).ok()) << m;
  Status s = CheckChoice(kModes, "--mode", "fast");
  EXPECT_EQ(s.message(), "--mode 'fast' is unknown; valid choices: base, dw, rf, dd, nil");
  EXPECT_FALSE(CheckChoice(kTransports, "--transport", "verbs").ok() && !kHaveVerbs);
  uint64_t v;
  ASSERT_TRUE(ParseSize("64K", &v).ok());
  EXPECT_EQ(v, 65536u);
  ASSERT_TRUE(ParseSize("2G", &v).ok());
  EXPECT_EQ(v, 2ull << 30);
  ASSERT_TRUE(ParseSize("0x1000", &v).ok());
  EXPECT_EQ(v, 4096u);
  EXPECT_FALSE(ParseSize("-1", &v).ok());
  ASSERT_TRUE(ParseSize("1T", &v).ok());
  EXPECT_EQ(v, 1ull << 40);
  EXPECT_FALSE(ParseSize("1P", &v).ok());
  EXPECT_FALSE(ParseSize("99999999999999999999G", &v).ok());
  // Network injection: durations and rates.
  ASSERT_TRUE(ParseDuration("2us", &v).ok());
  EXPECT_EQ(v, 2000u);
  ASSERT_TRUE(ParseDuration("1.5ms", &v).ok());
  EXPECT_EQ(v, 1500000u);
  ASSERT_TRUE(ParseDuration("0", &v).ok());
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(ParseDuration("2", &v).ok());
  EXPECT_FALSE(ParseDuration("-2us", &v).ok());
  EXPECT_FALSE(ParseDuration("2 weeks", &v).ok());
  ASSERT_TRUE(ParseRate("10Gbit", &v).ok());
  EXPECT_EQ(v, 1250000000u);
  ASSERT_TRUE(ParseRate("100MB/s", &v).ok());
  EXPECT_EQ(v, 100000000u);
  EXPECT_FALSE(ParseRate("fast", &v).ok());
  EXPECT_NE(ParseRate("10Gbps", &v).message().find("Gbit"), std::string::npos);
  // Every option of the table has an SVM_ twin.
  for (const OptionSpec& o : OptionTable()) EXPECT_EQ(std::string(o.env).rfind("SVM_", 0), 0u) << o.flags;
}

TEST(LineSplitter, LinesPartialsAndOverlong) {
  LineSplitter ls;
  std::vector<std::string> got;
  auto sink = [&](std::string_view l) { got.emplace_back(l); };
  ls.Feed("a\nb", 3, sink);
  ls.Feed("c\n\nd", 4, sink);
  ls.Flush(sink);
  EXPECT_EQ(got, (std::vector<std::string>{"a\n", "bc\n", "\n", "d\n"}));
  got.clear();
  std::string big(LineSplitter::kMax + 10, 'x');
  ls.Feed(big.data(), big.size(), sink);
  ls.Flush(sink);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].size(), LineSplitter::kMax + 1);
}

// --pin node: shares of the launcher's CPUs, contiguous while there are
// enough, else one each in turn.
TEST(DealCpus, SharesAreContiguousThenWrap) {
  using V = std::vector<std::vector<int>>;
  EXPECT_EQ(DealCpus({0, 1}, 2), (V{{0}, {1}}));
  EXPECT_EQ(DealCpus({0, 1}, 4), (V{{0}, {1}, {0}, {1}}));
  EXPECT_EQ(DealCpus({0, 1}, 3), (V{{0}, {1}, {0}}));
  EXPECT_EQ(DealCpus({0, 1, 2, 3}, 2), (V{{0, 1}, {2, 3}}));
  EXPECT_EQ(DealCpus({0, 1, 2, 3, 4}, 3), (V{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(DealCpus({2, 5, 7}, 1), (V{{2, 5, 7}}));  // the CPUs it was given, not 0..n
  EXPECT_EQ(DealCpus({3}, 2), (V{{3}, {3}}));
  EXPECT_EQ(DealCpus({0, 1}, 0), V{});
}

// The wake-up probe needs two CPUs and its time; without either it says
// "unknown" (0) rather than a figure that measures something else.
TEST(WakeProbe, MeasuresAWakeUpBetweenTwoCpus) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "needs two CPUs";
  const uint64_t ns = MeasureWakeUpNs(mine);
  EXPECT_GT(ns, 0u);
  EXPECT_LT(ns, 50'000'000u);  // within the probe's budget
  cpu_set_t same;
  ASSERT_EQ(sched_getaffinity(0, sizeof(same), &same), 0);
  EXPECT_TRUE(CPU_EQUAL(&mine, &same)) << "the probe's threads bind themselves, not the caller";
}

TEST(WakeProbe, OneCpuOrNoTimeIsUnknown) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  EXPECT_EQ(MeasureWakeUpNs(one), 0u);
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  if (CPU_COUNT(&mine) < 2) return;
  EXPECT_EQ(MeasureWakeUpNs(mine, 15, /*budget_ns=*/1), 0u);
  EXPECT_EQ(MeasureWakeUpNs(mine, 0), 0u);
}

TEST(Liveness, StatFlagsIsTheNinthField) {
  EXPECT_EQ(StatFlags("20294 (bigcore) R 1 20294 20294 0 -1 4195840 1153 0 0"), 0x400600u);
  EXPECT_EQ(StatFlags("7 (a) b) (c) D 1 7 7 0 -1 512 0"), 512u);  // comm with ") " inside
  EXPECT_EQ(StatFlags("7 (short) R 1 7"), 0u);
  EXPECT_EQ(StatFlags("garbage"), 0u);
}

// A node that crashed and writes its core stops answering; svmrun and svmd
// must see why and let it finish (a kill cuts the core short).
TEST(Liveness, DumpingCoreIsSeenWhileTheCoreIsWritten) {
  EXPECT_FALSE(DumpingCore(getpid()));
  char dir[] = "/tmp/svm-core-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
    if (setrlimit(RLIMIT_CORE, &unlimited) != 0 || chdir(dir) != 0) _exit(3);
    const size_t n = size_t(256) << 20;  // long enough a dump to be seen
    // mmap, not malloc: another thread may hold malloc's lock at the fork.
    void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) _exit(4);
    auto* p = static_cast<char*>(m);
    for (size_t i = 0; i < n; i += 4096) p[i] = char(i | 1);
    abort();
  }
  bool seen = false;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (DumpingCore(child)) {
      seen = true;
      const std::string why = DescribeSilence(child);
      if (DumpingCore(child)) {  // still: the answer was about the dump
        EXPECT_EQ(why, "crashed and is writing a core dump");
      }
    }
    usleep(200);
  }
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  const bool dumped = WCOREDUMP(status);
  std::string cleanup = std::string("rm -rf ") + dir;
  EXPECT_EQ(system(cleanup.c_str()), 0);
  if (!dumped) GTEST_SKIP() << "skipped [no core written: core_pattern or limits of this machine]";
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace svm::svmd
