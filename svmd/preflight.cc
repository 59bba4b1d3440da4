#include "svmd/preflight.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "nic_ext/transport.h"
#include "util/net.h"

namespace svm::svmd {
namespace {

enum class Linkage { kDynamic, kStatic, kUnknown };

// PT_INTERP is what makes the kernel start the dynamic loader, which is what
// honours LD_PRELOAD; a static-pie has PT_DYNAMIC but no PT_INTERP.
template <class Ehdr, class Phdr>
Linkage ElfLinkage(int fd) {
  Ehdr eh;
  if (::pread(fd, &eh, sizeof(eh), 0) != ssize_t(sizeof(eh))) return Linkage::kUnknown;
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) return Linkage::kUnknown;
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) return Linkage::kUnknown;
  std::vector<Phdr> ph(eh.e_phnum);
  const ssize_t want = ssize_t(ph.size() * sizeof(Phdr));
  if (::pread(fd, ph.data(), size_t(want), off_t(eh.e_phoff)) != want) return Linkage::kUnknown;
  for (const Phdr& p : ph)
    if (p.p_type == PT_INTERP) return Linkage::kDynamic;
  return Linkage::kStatic;
}

Linkage FileLinkage(const std::string& path, std::string* interpreter) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Linkage::kUnknown;
  unsigned char head[256];
  const ssize_t n = ::pread(fd.get(), head, sizeof(head), 0);
  if (n >= 2 && head[0] == '#' && head[1] == '!') {
    std::string_view line(reinterpret_cast<const char*>(head) + 2, size_t(n - 2));
    line = line.substr(0, line.find('\n'));
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) return Linkage::kUnknown;
    line = line.substr(start);
    *interpreter = std::string(line.substr(0, line.find_first_of(" \t")));
    return Linkage::kUnknown;
  }
  if (n < EI_NIDENT || std::memcmp(head, ELFMAG, SELFMAG) != 0) return Linkage::kUnknown;
  if (head[EI_CLASS] == ELFCLASS64) return ElfLinkage<Elf64_Ehdr, Elf64_Phdr>(fd.get());
  if (head[EI_CLASS] == ELFCLASS32) return ElfLinkage<Elf32_Ehdr, Elf32_Phdr>(fd.get());
  return Linkage::kUnknown;
}

}  // namespace

Status CheckDynamic(const std::string& path) {
  // The loader runs a set-id program in secure mode, ignoring LD_PRELOAD.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && ((st.st_mode & S_ISUID && st.st_uid != ::geteuid()) ||
                                         (st.st_mode & S_ISGID && st.st_gid != ::getegid())))
    return Status::Unsupported(path + " is set-user-ID or set-group-ID: the dynamic loader ignores "
                                      "LD_PRELOAD for it, so svm cannot run it");
  std::string interpreter;
  Linkage l = FileLinkage(path, &interpreter);
  std::string what = path;
  if (!interpreter.empty()) {
    std::string nested;
    l = FileLinkage(interpreter, &nested);
    what = interpreter + " (the interpreter of " + path + ")";
  }
  if (l == Linkage::kStatic)
    return Status::Unsupported(what + " is statically linked; svm needs a dynamically linked program");
  return Status::Ok();
}

Status CheckLimits(const Options& o, bool runtime) {
  if (runtime && o.nodes > nic::kMaxNodes)
    return Status::InvalidArgument("--nodes " + std::to_string(o.nodes) + ": a job has at most " +
                                   std::to_string(nic::kMaxNodes) + " nodes (--transport " + o.transport +
                                   ")");
  return Status::Ok();
}

}  // namespace svm::svmd
