// fake_node: a node without the runtime, for testing the launcher path
// (svmrun --preload none -- fake_node ...).
//
// It serves a "NIC": a TCP listener whose connections must prove the job key
// (util/auth.h) before it sends a line of pretend node memory. It
// rendezvouses through svm_control with that listener's address, prints its
// node id and peers, then acts as told:
//   --exit CODE            exit status of every node (default 0)
//   --exit-node K CODE     exit status of node K
//   --read-stdin           node 0 echoes stdin lines as "n0 stdin: LINE"
//   --stdin-node K         node K does instead (svmrun --stdin K)
//   --print-env NAME       print "nK env NAME=VALUE" (or "nK env NAME unset")
//   --print-cwd            print "nK cwd DIR"
//   --wait                 every node waits for TERMINATE (node 0: for stdin EOF
//                          if --read-stdin is given too)
//   --report-exit          node 0 (--stdin-node) reports its exit status through EXIT first
//   --check-peers          connect to every other node's NIC with the key
//   --lines N              print N numbered lines
//   --no-rendezvous        skip the control connection (a plain program)
//   --delay-rendezvous MS  sleep this long first (a slow start-up)
// Lines it prints: "nK of N pid P", "nK peers A,B,..", "nK control HOST:PORT".
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "util/auth.h"
#include "control/control_client.h"
#include "util/net.h"

using namespace svm::svmd;
using svm::Status;

namespace {

ControlConfig g_cfg;
std::atomic<bool> g_exiting{false};

void ServeNic(int listen_fd) {
  for (;;) {
    int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    UniqueFd fd(c);
    std::string peer = PeerString(c);
    Status s = Authenticate(c, g_cfg.key, AuthRole::kServer, NowMs() + 5000);
    if (!s.ok()) {
      std::fprintf(stderr, "n%u: refused NIC connection from %s: %s\n", g_cfg.node_id, peer.c_str(),
                   s.ToString().c_str());
      continue;
    }
    std::string mem = "MEMORY-OF-NODE-" + std::to_string(g_cfg.node_id) + "\n";
    WriteAll(c, mem.data(), mem.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int code = 0, lines = 0, delay_ms = 0;
  std::vector<std::pair<int, int>> node_codes;
  bool read_stdin = false, wait = false, report_exit = false, check_peers = false, rendezvous = true;
  bool print_cwd = false;
  unsigned stdin_node = 0;
  std::vector<std::string> print_env;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--exit" && i + 1 < argc) code = std::atoi(argv[++i]);
    else if (a == "--exit-node" && i + 2 < argc) {
      int k = std::atoi(argv[++i]);
      node_codes.push_back({k, std::atoi(argv[++i])});
    } else if (a == "--read-stdin") read_stdin = true;
    else if (a == "--wait") wait = true;
    else if (a == "--report-exit") report_exit = true;
    else if (a == "--check-peers") check_peers = true;
    else if (a == "--lines" && i + 1 < argc) lines = std::atoi(argv[++i]);
    else if (a == "--no-rendezvous") rendezvous = false;
    else if (a == "--delay-rendezvous" && i + 1 < argc) delay_ms = std::atoi(argv[++i]);
    else if (a == "--stdin-node" && i + 1 < argc) stdin_node = unsigned(std::atoi(argv[++i]));
    else if (a == "--print-env" && i + 1 < argc) print_env.push_back(argv[++i]);
    else if (a == "--print-cwd") print_cwd = true;
    else {
      std::fprintf(stderr, "fake_node: unknown argument %s\n", a.c_str());
      return 64;
    }
  }
  const char* id_env = std::getenv("SVM_NODE_ID");
  unsigned id = id_env ? unsigned(std::atoi(id_env)) : 0;
  for (auto [k, c] : node_codes)
    if (unsigned(k) == id) code = c;

  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  if (rendezvous) {
    Status s = ControlConfig::FromEnv(&g_cfg);
    if (!s.ok()) {
      std::fprintf(stderr, "fake_node: %s\n", s.ToString().c_str());
      return 70;
    }
    std::string ip = "127.0.0.1";
    if (Status r = LocalIpToward(g_cfg.control_host, &ip); !r.ok()) ip = "127.0.0.1";
    UniqueFd lfd;
    uint16_t port = 0;
    if (s = Listen(ip, 0, &lfd, &port); !s.ok()) {
      std::fprintf(stderr, "fake_node: %s\n", s.ToString().c_str());
      return 70;
    }
    std::thread(ServeNic, lfd.release()).detach();
    std::vector<std::string> peers;
    s = Rendezvous(g_cfg, JoinHostPort(ip, port), &peers);
    if (!s.ok()) {
      std::fprintf(stderr, "fake_node n%u: rendezvous: %s\n", id, s.ToString().c_str());
      return 71;
    }
    std::string list;
    for (const auto& p : peers) list += (list.empty() ? "" : ",") + p;
    std::printf("n%u of %u pid %d\nn%u peers %s\nn%u control %s:%u\n", id, g_cfg.nodes, int(getpid()), id,
                list.c_str(), id, g_cfg.control_host.c_str(), unsigned(g_cfg.control_port));
    std::fflush(stdout);
    OnTerminate([id] {
      if (g_exiting) return;  // our own EXIT was acknowledged
      std::printf("n%u terminate requested\n", id);
      std::fflush(stdout);
      _exit(0);
    });
    if (check_peers) {
      for (size_t j = 0; j < peers.size(); ++j) {
        if (j == id) continue;
        std::string host;
        uint16_t p = 0;
        UniqueFd fd;
        Status c = ParseHostPort(peers[j], &host, &p);
        if (c.ok()) c = Connect(host, p, NowMs() + 10000, &fd);
        if (c.ok()) c = Authenticate(fd.get(), g_cfg.key, AuthRole::kClient, NowMs() + 10000);
        char buf[64] = {};
        if (c.ok()) c = ReadFull(fd.get(), buf, std::strlen("MEMORY-OF-NODE-") + 1, NowMs() + 10000);
        std::printf("n%u peer %zu %s\n", id, j, c.ok() ? "ok" : c.ToString().c_str());
      }
      std::fflush(stdout);
    }
  } else {
    std::printf("n%u of %s pid %d\n", id, std::getenv("SVM_NODES") ? std::getenv("SVM_NODES") : "?", int(getpid()));
  }
  for (int i = 0; i < lines; ++i) std::printf("n%u line %d\n", id, i);
  for (const std::string& name : print_env) {
    const char* v = std::getenv(name.c_str());
    if (v) std::printf("n%u env %s=%s\n", id, name.c_str(), v);
    else std::printf("n%u env %s unset\n", id, name.c_str());
  }
  if (print_cwd) {
    char cwd[4096] = "?";
    std::printf("n%u cwd %s\n", id, getcwd(cwd, sizeof(cwd)) ? cwd : "?");
  }
  std::fflush(stdout);

  if (read_stdin && id == stdin_node) {
    std::string line;
    while (std::getline(std::cin, line)) std::printf("n%u stdin: %s\n", id, line.c_str());
    std::printf("n%u stdin eof\n", id);
    std::fflush(stdout);
  } else if (wait && !(report_exit && id == stdin_node)) {
    for (;;) pause();
  }
  if (report_exit && id == stdin_node && rendezvous) {
    g_exiting = true;
    Status s = ReportExit(code);
    if (!s.ok()) std::fprintf(stderr, "n0: ReportExit: %s\n", s.ToString().c_str());
  }
  std::fflush(nullptr);
  _exit(code);
}
