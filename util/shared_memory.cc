#include "util/shared_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace svm {

Status SharedMemory::Create(const char* name, size_t bytes, SharedMemory* out) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  if (bytes == 0) return Status::InvalidArgument("SharedMemory: zero bytes");
  auto fail = [&](const char* call) {
    return Status::Unsupported(std::string(call) + " for " + name + " (" + std::to_string(bytes) +
                               " bytes): " + std::strerror(errno));
  };
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return fail("memfd_create");
  if (ftruncate(fd, off_t(bytes)) != 0) {
    Status s = fail("ftruncate");
    close(fd);
    return s;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    Status s = fail("mmap");
    close(fd);
    return s;
  }
  // Not in core dumps: a sparse memfd is written page by page, zeros too.
  (void)madvise(p, bytes, MADV_DONTDUMP);
  out->Reset();
  out->data_ = p;
  out->size_ = bytes;
  out->fd_ = fd;
  return Status::Ok();
}

SharedMemory& SharedMemory::operator=(SharedMemory&& o) noexcept {
  if (this != &o) {
    Reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void SharedMemory::Reset() {
  if (data_ != nullptr) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

}  // namespace svm
