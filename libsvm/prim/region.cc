#include "libsvm/prim/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "libsvm/prim/maps.h"

namespace svm::prim {
namespace {

std::string Hex(uintptr_t v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%#" PRIxPTR, v);
  return buf;
}

Status SysError(const char* what, int err) {
  return Status::Unsupported(std::string(what) + ": " + strerror(err));
}

}  // namespace

Status Region::Create(const RegionOptions& options, std::unique_ptr<Region>* out) {
  const long ps = sysconf(_SC_PAGESIZE);
  if (ps <= 0 || (ps & (ps - 1)) != 0) return Status::Unsupported("odd page size");
  const size_t page = size_t(ps);
  if (options.size == 0 || options.size % page != 0) {
    return Status::InvalidArgument("region size " + std::to_string(options.size) +
                                   " is not a positive multiple of the page size " +
                                   std::to_string(page));
  }
  if (options.base % page != 0) {
    return Status::InvalidArgument("region base " + Hex(options.base) + " is not page-aligned");
  }
  if (options.base != 0 && options.base + options.size < options.base) {
    return Status::InvalidArgument("region [" + Hex(options.base) + ", +" +
                                   std::to_string(options.size) + ") wraps around");
  }

  std::unique_ptr<Region> r(new Region());
  r->page_size_ = page;
  r->page_shift_ = unsigned(__builtin_ctzl(page));
  r->size_ = options.size;

  r->fd_ = memfd_create(options.name, MFD_CLOEXEC);
  if (r->fd_ < 0) return SysError("memfd_create", errno);
  if (ftruncate(r->fd_, off_t(options.size)) != 0) return SysError("ftruncate(memfd)", errno);

  const uintptr_t lo = options.base, hi = options.base + options.size;
  int flags = MAP_SHARED | MAP_NORESERVE;
  if (options.base != 0) flags |= MAP_FIXED_NOREPLACE;
  void* app = mmap(reinterpret_cast<void*>(options.base), options.size, PROT_NONE, flags,
                   r->fd_, 0);
  if (app == MAP_FAILED) {
    int err = errno;
    if (err == EEXIST) {
      std::string in_way = DescribeMappings(lo, hi);
      return Status::InvalidArgument(
          "application view [" + Hex(lo) + ", " + Hex(hi) +
          ") collides with an existing mapping" + (in_way.empty() ? "" : ": " + in_way) +
          "; choose another base");
    }
    return SysError(("mmap of the application view at " + Hex(lo)).c_str(), err);
  }
  if (options.base != 0 && app != reinterpret_cast<void*>(options.base)) {
    // A kernel older than 4.17 treats MAP_FIXED_NOREPLACE as a hint.
    munmap(app, options.size);
    return Status::InvalidArgument("application view [" + Hex(lo) + ", " + Hex(hi) +
                                   ") is not available (kernel placed it elsewhere)");
  }
  r->app_ = static_cast<char*>(app);
  if (!options.dump_app && madvise(app, options.size, MADV_DONTDUMP) != 0)
    return SysError("madvise(MADV_DONTDUMP) of the application view", errno);

  void* proto = mmap(nullptr, options.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                     r->fd_, 0);
  if (proto == MAP_FAILED) return SysError("mmap of the protocol view", errno);
  r->proto_ = static_cast<char*>(proto);
  if (madvise(proto, options.size, MADV_DONTDUMP) != 0)
    return SysError("madvise(MADV_DONTDUMP) of the protocol view", errno);
  *out = std::move(r);
  return Status::Ok();
}

Region::~Region() {
  if (proto_ != nullptr) munmap(proto_, size_);
  if (app_ != nullptr) munmap(app_, size_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace svm::prim
