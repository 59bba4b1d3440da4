#include "svmd/job_dir.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>

namespace svm::svmd {
namespace {

// The owner pid in "PREFIX-<pid>-XXXXXX", or 0.
pid_t OwnerOf(const std::string& name, const std::string& prefix) {
  if (!name.starts_with(prefix + "-")) return 0;
  const char* p = name.data() + prefix.size() + 1;
  const char* end = name.data() + name.size();
  int pid = 0;
  auto [next, ec] = std::from_chars(p, end, pid);
  if (ec != std::errc() || next == end || *next != '-' || pid <= 0) return 0;
  return pid_t(pid);
}

}  // namespace

Status MakeJobDir(const std::string& prefix, std::string* path) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string parent = tmp && *tmp ? tmp : "/tmp";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(parent, ec)) {
    const pid_t owner = OwnerOf(e.path().filename().string(), prefix);
    struct stat st;
    if (owner == 0 || ::lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
      continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code rm;
    std::filesystem::remove_all(e.path(), rm);
  }
  std::string templ = parent + "/" + prefix + "-" + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(templ.data())) return Status::Errno("mkdtemp " + templ, errno);
  *path = templ;
  return Status::Ok();
}

}  // namespace svm::svmd
