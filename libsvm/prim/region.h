// Region: one node's frames in a memfd, mapped twice.
//
//   application view  at a fixed base (MAP_FIXED_NOREPLACE). Accesses by the
//                     program go here; a FaultTrap (fault.h) traps them. Until
//                     a trap is opened the view is PROT_NONE.
//   protocol view     anywhere, always read-write. The runtime installs
//                     fetched pages, makes twins, applies diffs and serves
//                     remote fetches through it; it never faults.
//
// Both views show the same frames: a byte written through one is visible
// through the other at the same offset. Frames are allocated lazily by the
// kernel (the memfd is sparse) on first touch through the protocol view, or
// by FaultTrap::Protect when a never-written page is opened (zero-filled).
//
// Thread-safety: immutable after Create; every accessor may be called from
// any thread and from signal handlers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "util/status.h"
#include "protocol/types.h"

namespace svm::prim {

struct RegionOptions {
  // Where the application view goes. Must be page-aligned. 0 lets the kernel
  // choose (tests and benchmarks); the runtime always passes its fixed base.
  uintptr_t base = 0;
  // Bytes in each view. Must be a positive multiple of the page size.
  size_t size = 0;
  // memfd name, shown in /proc/self/maps as "/memfd:NAME".
  const char* name = "svm-frames";
  // Whether a core dump holds the application view (the program's globals:
  // small, and what a debugger wants). The protocol view never does: it
  // shows the same frames, and the kernel writes a sparse view of a memfd
  // page by page (a node's 128 GiB heap made cores of tens of GiB).
  bool dump_app = false;
};

class Region {
 public:
  // Creates the memfd and both views.
  // On failure *out is untouched and the Status says why:
  //   InvalidArgument  bad base/size, or the application view would overlap an
  //                    existing mapping (the message names the requested range
  //                    and the mappings in the way);
  //   Unsupported      a system call failed (message: call and errno text).
  static Status Create(const RegionOptions& options, std::unique_ptr<Region>* out);

  // Unmaps both views and closes the memfd.
  // REQUIRES: no FaultTrap is open on this region.
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  size_t page_size() const { return page_size_; }
  unsigned page_shift() const { return page_shift_; }
  size_t page_count() const { return size_ >> page_shift_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  char* app() const { return app_; }
  char* proto() const { return proto_; }

  bool Contains(const void* app_addr) const {
    return uintptr_t(app_addr) - uintptr_t(app_) < size_;
  }
  // REQUIRES: Contains(app_addr).
  PageId PageOf(const void* app_addr) const {
    return (uintptr_t(app_addr) - uintptr_t(app_)) >> page_shift_;
  }
  // REQUIRES: page < page_count().
  char* AppPage(PageId page) const { return app_ + (page << page_shift_); }
  char* ProtoPage(PageId page) const { return proto_ + (page << page_shift_); }

 private:
  friend class FaultTrap;  // claims trapped_: one trap per region at a time
  Region() = default;

  size_t page_size_ = 0;
  unsigned page_shift_ = 0;
  size_t size_ = 0;
  int fd_ = -1;
  char* app_ = nullptr;
  char* proto_ = nullptr;
  std::atomic<bool> trapped_{false};
};

}  // namespace svm::prim
