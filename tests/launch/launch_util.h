// Helpers for the launcher tests: find the built programs, run svmrun (or
// svmd) as a child with pipes, read its output incrementally, wait with
// generous deadlines, and inspect /proc and /dev/shm afterwards.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace svm::launch_test {

inline std::string BuildDir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().parent_path().string();
}
inline std::string Svmrun() { return BuildDir() + "/svmd/svmrun"; }
inline std::string Svmd() { return BuildDir() + "/svmd/svmd"; }
inline std::string FakeNode() { return BuildDir() + "/tests/fake_node"; }

// A child process with its stdin, stdout and stderr on pipes.
class Child {
 public:
  // argv[0] is the program path. env: extra NAME=value entries (added to ours,
  // SVM_* of ours removed). prefix: e.g. {"ip","netns","exec","ns1"}.
  Child(std::vector<std::string> argv, std::vector<std::string> env = {}) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      std::vector<std::string> names;
      for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "SVM_", 4) == 0 && std::strchr(*e, '='))
          names.emplace_back(*e, size_t(std::strchr(*e, '=') - *e));
      for (auto& n : names) unsetenv(n.c_str());
      for (auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> av;
      for (auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
      av.push_back(nullptr);
      execvp(av[0], av.data());
      _exit(126);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    CloseStdin();
    if (!reaped_) {
      kill(pid_, SIGKILL);
      Wait(30);
    }
    if (out_ >= 0) close(out_);
    if (err_ >= 0) close(err_);
  }
  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }  // its pid may name another process now
  void WriteStdin(const std::string& s) {
    if (in_ >= 0 && write(in_, s.data(), s.size()) < 0) {
    }
  }
  void CloseStdin() {
    if (in_ >= 0) close(in_);
    in_ = -1;
  }
  // Reads what is available for up to ms milliseconds.
  void Pump(int ms) {
    pollfd p[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    if (poll(p, 2, ms) <= 0) return;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (!p[i].revents) continue;
      int& fd = i == 0 ? out_ : err_;
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) (i == 0 ? out : err).append(buf, size_t(n));
      else {
        close(fd);
        fd = -1;
      }
    }
  }
  // Waits until stdout+stderr contain needle; false after seconds.
  bool WaitFor(const std::string& needle, int seconds = 60) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (out.find(needle) != std::string::npos || err.find(needle) != std::string::npos) return true;
      if (out_ < 0 && err_ < 0) return false;
      Pump(100);
    }
    return false;
  }
  // Drains output and reaps; returns the wait status, or -1 on timeout.
  int Wait(int seconds = 60) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while ((out_ >= 0 || err_ >= 0) && std::chrono::steady_clock::now() < end) Pump(100);
    while (std::chrono::steady_clock::now() < end) {
      int ws;
      pid_t r = waitpid(pid_, &ws, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        status_ = ws;
        return ws;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  // Exit code (WEXITSTATUS) after Wait; -1 if it did not exit normally.
  int ExitCode(int seconds = 60) {
    int ws = Wait(seconds);
    return ws >= 0 && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  }

  std::string out, err;

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// Pids printed by fake_node as "nK of N pid P".
inline std::vector<pid_t> NodePids(const std::string& out) {
  std::vector<pid_t> pids;
  size_t pos = 0;
  while ((pos = out.find(" pid ", pos)) != std::string::npos) {
    pos += 5;
    pids.push_back(pid_t(std::atoi(out.c_str() + pos)));
  }
  return pids;
}

// Pid of node k, from its "nK of N pid P" line (-1 if absent).
inline pid_t NodePid(const std::string& out, int k) {
  std::string tag = "n" + std::to_string(k) + " of ";
  for (size_t pos = 0; (pos = out.find(tag, pos)) != std::string::npos; pos += tag.size()) {
    if (pos != 0 && out[pos - 1] != '\n' && out[pos - 1] != ' ') continue;
    size_t p = out.find(" pid ", pos);
    if (p != std::string::npos) return pid_t(std::atoi(out.c_str() + p + 5));
  }
  return -1;
}

// True when pid names a live (non-zombie) process.
inline bool Alive(pid_t pid) {
  std::string stat = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = fopen(stat.c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  const char* rp = std::strrchr(buf, ')');
  return n > 0 && rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

// Any process left in the process group of each pid?
inline bool GroupAlive(pid_t pgid) { return kill(-pgid, 0) == 0; }

inline std::set<std::string> ShmEntries() {
  std::set<std::string> s;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) s.insert(e.path().filename().string());
  return s;
}

inline int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = 0; (p = text.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

// A private temporary directory, removed at destruction.
struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/svm-launch-test-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string WriteKey(const std::string& name, const std::string& bytes, mode_t mode = 0600) {
    std::string p = path + "/" + name;
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (write(fd, bytes.data(), bytes.size()) < 0) {
    }
    fchmod(fd, mode);
    close(fd);
    return p;
  }
};

}  // namespace svm::launch_test
