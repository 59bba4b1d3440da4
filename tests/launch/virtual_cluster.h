// A virtual cluster for the launcher tests: H network namespaces ("hosts")
// joined by veth pairs to a bridge in the root namespace (where svmrun
// runs), and the real servers a cluster has, started on them by the test:
// an OpenSSH sshd on every host, or a Slurm controller (root namespace) with
// one slurmd per host. Everything is removed at destruction, also when a
// check failed. skip() says why the cluster cannot exist on this machine.
#pragma once

#include <signal.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/launch/launch_util.h"

namespace svm::launch_test {

inline int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// stdout of a shell command.
inline std::string ShOut(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

inline void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class VirtualHosts {
 public:
  // tag: two letters that keep this test's links apart from others'.
  VirtualHosts(int hosts, const std::string& tag) {
    // Names and subnet unique per cluster, not only per process: a
    // namespace's links go away asynchronously, so a second cluster in one
    // process must not reuse the first one's.
    static int made = 0;
    const int id = int(getpid() % 100000), n = made++;
    const std::string t = tag + std::to_string(id) + (n == 0 ? "" : "x" + std::to_string(n % 10));
    subnet_ = "10." + std::to_string(216 + (id / 250) % 30) + "." + std::to_string((id + n) % 250) + ".";
    bridge_ = "b" + t;
    if (Sh("ip netns add " + t + "probe") != 0) {
      skip_ = "cannot create network namespaces here (ip netns add failed; needs root and iproute2)";
      return;
    }
    Sh("ip netns del " + t + "probe");
    ok_ = Sh("ip link add " + bridge_ + " type bridge") == 0 &&
          Sh("ip addr add " + bridge_ip() + "/24 dev " + bridge_) == 0 && Sh("ip link set " + bridge_ + " up") == 0;
    for (int h = 0; ok_ && h < hosts; ++h) {
      const std::string ns = t + "h" + std::to_string(h), veth = "v" + t + "h" + std::to_string(h);
      namespaces_.push_back(ns);
      veths_.push_back(veth);
      ips_.push_back(subnet_ + std::to_string(10 + h));
      ok_ = Sh("ip netns add " + ns) == 0 && Sh("ip link add " + veth + " type veth peer name eth0 netns " + ns) == 0 &&
            Sh("ip link set " + veth + " master " + bridge_) == 0 && Sh("ip link set " + veth + " up") == 0 &&
            Sh("ip netns exec " + ns + " ip addr add " + ips_.back() + "/24 dev eth0") == 0 &&
            Sh("ip netns exec " + ns + " ip link set eth0 up") == 0 &&
            Sh("ip netns exec " + ns + " ip link set lo up") == 0;
    }
    if (!ok_) skip_ = "could not set up veth/bridge links between namespaces";
  }
  ~VirtualHosts() {
    // Throw-away servers: no orderly shutdown (slurmctld's takes seconds),
    // and nothing the test started on a host outlives it.
    for (auto& d : daemons_)
      if (!d->reaped()) kill(d->pid(), SIGKILL);
    for (auto& ns : namespaces_) Sh("ip netns pids " + ns + " | xargs -r kill -9");
    daemons_.clear();
    for (auto& ns : namespaces_) Sh("ip netns del " + ns);
    Sh("ip link del " + bridge_);
  }
  const std::string& skip() const { return skip_; }
  bool ok() const { return ok_ && skip_.empty(); }
  size_t size() const { return ips_.size(); }
  // IPv6 addresses too (fd00:...::1 on the bridge, ::1K on host K); false
  // where this kernel has IPv6 turned off.
  bool AddIpv6() {
    const std::string v6 = "fd00:" + subnet_.substr(3, subnet_.find('.', 3) - 3) + ":" +
                           subnet_.substr(subnet_.find('.', 3) + 1, subnet_.size() - subnet_.find('.', 3) - 2) + "::";
    if (Sh("ip -6 addr add " + v6 + "1/64 dev " + bridge_ + " nodad") != 0) return false;
    for (size_t h = 0; h < namespaces_.size(); ++h) {
      ips6_.push_back(v6 + std::to_string(10 + h));
      if (Sh("ip netns exec " + namespaces_[h] + " ip -6 addr add " + ips6_.back() + "/64 dev eth0 nodad") != 0)
        return false;
    }
    return true;
  }
  const std::string& ip6(size_t h) const { return ips6_[h]; }
  const std::string& ip(size_t h) const { return ips_[h]; }
  const std::string& ns(size_t h) const { return namespaces_[h]; }
  std::string bridge_ip() const { return subnet_ + "1"; }
  // Cuts (or restores) host h's link to the bridge, as a pulled cable would.
  bool SetLink(size_t h, bool up) { return Sh("ip link set " + veths_[h] + (up ? " up" : " down")) == 0; }
  // The root namespace's end of host h's link.
  const std::string& veth(size_t h) const { return veths_[h]; }
  // The processes on host h running `program` (the namespaces share one pid space).
  std::vector<pid_t> Pids(size_t h, const std::string& program) const {
    std::vector<pid_t> pids;
    const std::string list = ShOut("ip netns pids " + namespaces_[h]);
    for (size_t at = 0, end; at < list.size(); at = end + 1) {
      end = list.find('\n', at);
      if (end == std::string::npos) end = list.size();
      const std::string pid = list.substr(at, end - at);
      if (pid.empty()) continue;
      std::ifstream f("/proc/" + pid + "/cmdline");
      std::string argv0;
      if (std::getline(f, argv0, '\0') && argv0 == program) pids.push_back(pid_t(std::stol(pid)));
    }
    return pids;
  }

  // A daemon on host h (h < 0: the root namespace), stopped at destruction.
  Child& Start(int h, std::vector<std::string> argv, std::vector<std::string> env = {}) {
    if (h >= 0) argv.insert(argv.begin(), {"ip", "netns", "exec", namespaces_[size_t(h)]});
    daemons_.push_back(std::make_unique<Child>(std::move(argv), std::move(env)));
    return *daemons_.back();
  }

 private:
  bool ok_ = false;
  std::string skip_, subnet_, bridge_;
  std::vector<std::string> namespaces_, veths_, ips_, ips6_;
  std::vector<std::unique_ptr<Child>> daemons_;
};

// An sshd on every host that lets root in with a key made for the test;
// ssh_command() is what svmrun --ssh takes.
class SshCluster {
 public:
  // sshd on hosts 0..with_sshd-1 (default: all), on IPv6 too if asked.
  SshCluster(VirtualHosts& vh, const TempDir& dir, size_t with_sshd = SIZE_MAX, bool ipv6 = false) : dir_(dir.path) {
    if (access("/usr/sbin/sshd", X_OK) != 0 || access("/usr/bin/ssh-keygen", X_OK) != 0) {
      skip_ = "/usr/sbin/sshd not installed (openssh-server; scripts/install-deps installs it)";
      return;
    }
    ::mkdir("/run/sshd", 0755);  // sshd's privilege-separation directory
    if (Sh("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/host_key") != 0 ||
        Sh("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/user_key") != 0 ||
        Sh("cp " + dir_ + "/user_key.pub " + dir_ + "/authorized_keys") != 0) {
      error_ = "ssh-keygen failed";
      return;
    }
    WriteFile(dir_ + "/sshd_config", "HostKey " + dir_ + "/host_key\nAuthorizedKeysFile " + dir_ +
                                         "/authorized_keys\nStrictModes no\nUsePAM no\nPidFile none\n"
                                         "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                                         "PermitRootLogin prohibit-password\nLogLevel INFO\n");
    WriteFile(dir_ + "/ssh_config", "Host *\n  IdentityFile " + dir_ +
                                        "/user_key\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n"
                                        "  LogLevel ERROR\n  BatchMode yes\n  ConnectTimeout 10\n");
    for (size_t h = 0; h < vh.size() && h < with_sshd; ++h) {
      std::vector<std::string> argv = {"/usr/sbin/sshd",           "-D", "-e", "-f", dir_ + "/sshd_config", "-o",
                                       "ListenAddress=" + vh.ip(h)};
      if (ipv6) argv.insert(argv.end(), {"-o", "ListenAddress=[" + vh.ip6(h) + "]:22"});
      Child& d = vh.Start(int(h), argv);
      if (!d.WaitFor("Server listening", 20)) {
        error_ = "sshd on " + vh.ip(h) + " did not start: " + d.err;
        return;
      }
    }
  }
  const std::string& skip() const { return skip_; }
  const std::string& error() const { return error_; }
  std::string ssh_command() const { return "ssh -F " + dir_ + "/ssh_config -T"; }

 private:
  std::string dir_, skip_, error_;
};

// slurmctld in the root namespace (on the bridge) and one slurmd a host
// (NodeName hK), no accounting, no cgroup confinement; env() is what a
// client (salloc, srun) needs: SLURM_CONF.
class SlurmCluster {
 public:
  SlurmCluster(VirtualHosts& vh, const TempDir& dir) : dir_(dir.path) {
    for (const char* b : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/salloc", "/usr/bin/srun"})
      if (access(b, X_OK) != 0) {
        skip_ = std::string(b) + " not installed (slurmctld, slurmd, slurm-client; scripts/install-deps installs them)";
        return;
      }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    std::string short_host(host);
    short_host = short_host.substr(0, short_host.find('.'));
    const int ctl_port = FreePort();
    std::string conf =
        "ClusterName=svmtest\nSlurmctldHost=" + short_host + "(" + vh.bridge_ip() + ")\n" +
        "SlurmctldPort=" + std::to_string(ctl_port) + "\nSlurmdPort=" + std::to_string(ctl_port + 1) +
        "\nAuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\n"
        "StateSaveLocation=" +
        dir_ + "/state\nSlurmdSpoolDir=" + dir_ + "/spool-%n\n" + "SlurmctldPidFile=" + dir_ +
        "/slurmctld.pid\nSlurmdPidFile=" + dir_ + "/slurmd-%n.pid\n" + "SlurmctldLogFile=" + dir_ +
        "/slurmctld.log\nSlurmdLogFile=" + dir_ + "/slurmd-%n.log\n" +
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
        "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nMpiDefault=none\n"
        "SelectType=select/linear\nReturnToService=2\nSlurmctldTimeout=30\nSlurmdTimeout=30\n"
        "SlurmdParameters=config_overrides\n"
        // srun gives up on a host whose slurmd is gone after this
        "MessageTimeout=3\n";
    std::string names;
    for (size_t h = 0; h < vh.size(); ++h) {
      conf += "NodeName=h" + std::to_string(h) + " NodeAddr=" + vh.ip(h) + " CPUs=2 State=UNKNOWN\n";
      names += (names.empty() ? "h" : ",h") + std::to_string(h);
    }
    conf += "PartitionName=test Nodes=" + names + " Default=YES MaxTime=INFINITE State=UP\n";
    ::mkdir((dir_ + "/state").c_str(), 0700);
    WriteFile(dir_ + "/slurm.conf", conf);
    // slurmd loads a cgroup plugin even for task/none: the hierarchy this
    // machine has.
    struct statfs fs {};
    const bool v2 = statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == 0x63677270;  // CGROUP2_SUPER_MAGIC
    WriteFile(dir_ + "/cgroup.conf",
              std::string(v2 ? "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n" : "CgroupPlugin=cgroup/v1\n") +
                  "CgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n");
    vh.Start(-1, {"/usr/sbin/slurmctld", "-D", "-i", "-f", dir_ + "/slurm.conf"}, env());
    for (size_t h = 0; h < vh.size(); ++h)
      slurmd_.push_back(&vh.Start(
          int(h), {"/usr/sbin/slurmd", "-D", "-N", "h" + std::to_string(h), "-f", dir_ + "/slurm.conf"}, env()));
    // Up when sinfo shows every node idle.
    const std::string sinfo = "SLURM_CONF=" + dir_ + "/slurm.conf sinfo -h -o '%D %t' 2>/dev/null";
    const std::string want = std::to_string(vh.size()) + " idle";
    for (int i = 0; i < 200; ++i) {
      if (ShOut(sinfo).find(want) == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const std::string why = ShOut("grep -h -i error " + dir_ + "/slurmd-h0.log " + dir_ + "/slurmctld.log | tail -n 1");
    // A machine without the cgroup hierarchy slurmd insists on cannot run it.
    (why.find("cgroup") != std::string::npos ? skip_ : error_) =
        "Slurm did not come up within 20 s (sinfo: " + ShOut(sinfo) + "): " + why;
  }
  const std::string& skip() const { return skip_; }
  const std::string& error() const { return error_; }
  Child& slurmd(size_t h) { return *slurmd_[h]; }
  std::vector<std::string> env() const { return {"SLURM_CONF=" + dir_ + "/slurm.conf"}; }
  std::string log(const std::string& name) const { return ShOut("cat " + dir_ + "/" + name); }

 private:
  // Two ports in a row (ctld, slurmd) that no socket uses now, in any state,
  // and below the kernel's ephemeral range: a port taken from inside it can
  // be the local end of another test's connection by the time slurmctld
  // binds ("Address already in use", seen once under ctest -j2).
  static int FreePort() {
    int ephemeral_low = 32768, high = 0;
    if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
      if (std::fscanf(f, "%d %d", &ephemeral_low, &high) != 2) ephemeral_low = 32768;
      std::fclose(f);
    }
    const int first = 10000, span = std::max(ephemeral_low - first - 2, 1000);
    for (int tries = 0; tries < 50; ++tries) {
      const int p = first + int((getpid() * 7 + tries * 131) % span);
      if (Sh("ss -tanH '( sport = :" + std::to_string(p) + " or sport = :" + std::to_string(p + 1) +
             " )' | grep -q .") != 0)
        return p;
    }
    return 26817;
  }
  std::string dir_, skip_, error_;
  std::vector<Child*> slurmd_;
};

}  // namespace svm::launch_test
