// The userfaultfd backends: kUffd (faults arrive as SIGBUS in the faulting
// thread) and kUffdThread (a handler thread reads fault events).
//
// The application view is a MAP_SHARED mapping of the region's memfd,
// PROT_READ|PROT_WRITE, registered MISSING|MINOR|WP. What the program may do
// with a page is decided by its page-table entry alone:
//   none        no PTE (MADV_DONTNEED zaps it; the memfd keeps the frame).
//               An access faults MISSING if the memfd has no frame there,
//               MINOR if it has one.
//   read        PTE present and uffd-write-protected: UFFDIO_CONTINUE with
//               UFFDIO_CONTINUE_MODE_WP maps it so in one step (never briefly
//               writable); UFFDIO_WRITEPROTECT if it is mapped already.
//   read-write  PTE present, not write-protected: UFFDIO_CONTINUE, or
//               UFFDIO_WRITEPROTECT clearing the bit.
// UFFDIO_CONTINUE needs a frame in the memfd; a page that never held data is
// zero-filled with fallocate first.
//
// Per page the trap keeps a hint whether the PTE is present, to choose
// WRITEPROTECT (one ioctl) over CONTINUE (which fails with EEXIST on a
// mapped page). A wrong hint costs time, never correctness: a fault on a
// page that is not mapped clears the hint, and the handler's Protect then
// maps it.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "libsvm/prim/fault_backends.h"
#include "libsvm/prim/signal.h"
#include "libsvm/prim/uffd_compat.h"

namespace svm::prim {
namespace {

constexpr uint8_t kMapped = 4;  // state_ bit: the PTE is (probably) present

constexpr uint64_t kShmemFeatures =
    UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_MINOR_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
constexpr uint64_t kRegisterModes =
    UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR | UFFDIO_REGISTER_MODE_WP;
constexpr uint64_t kNeededIoctls =
    (uint64_t(1) << _UFFDIO_CONTINUE) | (uint64_t(1) << _UFFDIO_WRITEPROTECT);

Status SysError(const std::string& what, int err) {
  return Status::Unsupported(what + ": " + strerror(err));
}

// A userfaultfd with the API handshake done. Returns the fd or -errno.
// Without CAP_SYS_PTRACE (and vm.unprivileged_userfaultfd = 0) only a
// user-mode-only fd is allowed; that is enough for kUffd, where kernel-mode
// faults fail with EFAULT anyway, but not for kUffdThread.
// *available (if given) receives the kernel's full feature mask.
int NewUffd(bool sigbus, uint64_t features, uint64_t* available = nullptr) {
  int fd = int(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (fd < 0 && errno == EPERM && sigbus) {
    fd = int(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  }
  if (fd < 0) return -errno;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = features;
  if (ioctl(fd, UFFDIO_API, &api) != 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  if (available != nullptr) *available = api.features;
  return fd;
}

class UffdTrap final : public FaultTrap, private SignalTarget {
 public:
  UffdTrap(bool sigbus, Region* region, FaultHandler* handler, bool async_writes)
      : FaultTrap(sigbus ? Backend::kUffd : Backend::kUffdThread, region, handler, async_writes),
        sigbus_(sigbus) {}

  ~UffdTrap() override {
    if (thread_.joinable()) {
      uint64_t one = 1;
      (void)!write(stop_fd_, &one, sizeof(one));
      thread_.join();
    }
    if (stop_fd_ >= 0) close(stop_fd_);
    if (pagemap_ >= 0) close(pagemap_);
    if (slot_ >= 0) RemoveSignalTarget(slot_);
    if (uffd_ >= 0) {
      uffdio_range range{uintptr_t(region_->app()), region_->size()};
      ioctl(uffd_, UFFDIO_UNREGISTER, &range);
      close(uffd_);
    }
  }

  Status Start() {
    const uint64_t features = kShmemFeatures | (sigbus_ ? UFFD_FEATURE_SIGBUS : 0) |
                              (async_writes_ ? UFFD_FEATURE_WP_ASYNC : 0);
    uffd_ = NewUffd(sigbus_, features);
    if (uffd_ < 0) return SysError("userfaultfd", -uffd_);
    if (async_writes_) {
      pagemap_ = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
      if (pagemap_ < 0) return SysError("opening /proc/self/pagemap", errno);
    }

    char* app = region_->app();
    const size_t size = region_->size();
    if (mprotect(app, size, PROT_READ | PROT_WRITE) != 0) {
      return SysError("mprotect of the application view", errno);
    }
    // Start with no PTEs: every page "none", whatever an earlier trap left.
    if (madvise(app, size, MADV_DONTNEED) != 0) return SysError("madvise(DONTNEED)", errno);

    uffdio_register reg{};
    reg.range = {uintptr_t(app), size};
    reg.mode = kRegisterModes;
    if (ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) {
      return SysError("UFFDIO_REGISTER (MISSING|MINOR|WP) of the application view", errno);
    }
    if ((reg.ioctls & kNeededIoctls) != kNeededIoctls) {
      return Status::Unsupported("userfaultfd: CONTINUE or WRITEPROTECT not offered on shmem");
    }

    if (sigbus_) {
      slot_ = AddSignalTarget(SIGBUS, uintptr_t(app), uintptr_t(app) + size, this);
      if (slot_ < 0) return SysError("installing the SIGBUS handler", -slot_);
    } else {
      stop_fd_ = eventfd(0, EFD_CLOEXEC);
      if (stop_fd_ < 0) return SysError("eventfd", errno);
      thread_ = std::thread([this] { Serve(); });
    }
    return Status::Ok();
  }

  int Protect(PageId first, size_t count, Prot prot) override {
    if (!RangeOk(first, count)) return EINVAL;
    stats_.protect_calls.fetch_add(1, std::memory_order_relaxed);
    const PageId end = first + count;
    if (prot == Prot::kNone) {
      for (PageId p = first; p < end; ++p) {
        state_[p].store(uint8_t(Prot::kNone), std::memory_order_relaxed);
      }
      if (madvise(region_->AppPage(first), count << region_->page_shift(), MADV_DONTNEED) != 0) {
        return errno;
      }
      return 0;
    }
    const bool wp = prot == Prot::kRead;
    // Async writes: a page that is read already keeps its record of writes
    // (write-protecting it again would forget a write made since it was
    // last looked at); it is only mapped if it is not.
    const bool keep_record = wp && async_writes_;
    enum Action : uint8_t { kSkip, kWriteProtect, kContinue, kContinueKeep };
    auto action = [&](uint8_t old) {
      const bool mapped = old & kMapped;
      if (keep_record && Prot(old & kProtMask) == Prot::kRead) return mapped ? kSkip : kContinueKeep;
      return mapped ? kWriteProtect : kContinue;
    };
    // The new protection is recorded before the ioctl that may wake a
    // waiting thread (kUffdThread), so that the thread sees it; the old
    // state is kept in the low bits' place until then.
    Action actions[64];
    for (PageId i = first; i < end;) {
      const PageId stop = std::min<PageId>(end, i + std::size(actions));
      for (PageId p = i; p < stop; ++p) {
        const uint8_t old = state_[p].load(std::memory_order_relaxed);
        actions[p - i] = action(old);
        state_[p].store(uint8_t((old & ~kProtMask) | uint8_t(prot)), std::memory_order_relaxed);
      }
      // Runs of pages with the same action: WRITEPROTECT for mapped pages,
      // CONTINUE for the others.
      for (PageId a = i; a < stop;) {
        const Action act = actions[a - i];
        PageId b = a + 1;
        while (b < stop && actions[b - i] == act) ++b;
        const uintptr_t lo = uintptr_t(region_->AppPage(a)), hi = uintptr_t(region_->AppPage(b));
        int err = 0;
        if (act == kWriteProtect) err = WriteProtect(lo, hi - lo, wp);
        if (act == kContinue || act == kContinueKeep) err = Continue(lo, hi, wp, act == kContinue);
        if (err != 0) return err;
        a = b;
      }
      i = stop;
    }
    for (PageId p = first; p < end; ++p) {
      state_[p].fetch_or(kMapped, std::memory_order_relaxed);
    }
    return 0;
  }

  // UFFDIO_COPY allocates each frame and copies into it, with no zero-fill
  // first (shmem_mfill_atomic_pte); EEXIST ends it at a page with a frame.
  size_t Fill(PageId first, size_t count, const void* src, Prot prot) override {
    if (!RangeOk(first, count) || prot == Prot::kNone) return 0;
    const unsigned shift = region_->page_shift();
    size_t done = 0;
    while (done < count) {
      const size_t n = std::min<size_t>(count - done, 64);
      const size_t filled = FillSome(first + done, n, static_cast<const char*>(src) + (done << shift), prot);
      done += filled;
      if (filled < n) break;
    }
    stats_.pages_filled.fetch_add(done, std::memory_order_relaxed);
    return done;
  }

  // One PAGEMAP_SCAN walk per vec_len ranges found: the written pages (no
  // uffd-wp bit on a present PTE), write-protected by the same walk.
  int FindWritten(PageId first, size_t count, std::vector<PageId>* written) override {
    if (!async_writes_) return EOPNOTSUPP;
    if (!RangeOk(first, count)) return EINVAL;
    page_region ranges[32];
    const uintptr_t base = uintptr_t(region_->app());
    const unsigned shift = region_->page_shift();
    const uintptr_t end = base + ((first + count) << shift);
    pm_scan_arg arg{};
    arg.size = sizeof(arg);
    arg.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC;
    arg.start = uintptr_t(region_->AppPage(first));
    arg.end = end;
    arg.vec = uintptr_t(ranges);
    arg.vec_len = std::size(ranges);
    arg.category_mask = PAGE_IS_WRITTEN;
    arg.return_mask = PAGE_IS_WRITTEN;
    while (arg.start < end) {
      stats_.scans.fetch_add(1, std::memory_order_relaxed);
      const int n = ioctl(pagemap_, PAGEMAP_SCAN, &arg);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return errno;
      }
      for (int i = 0; i < n; ++i) {
        for (uintptr_t a = ranges[i].start; a < ranges[i].end; a += uintptr_t(1) << shift)
          written->push_back(PageId((a - base) >> shift));
        stats_.pages_written.fetch_add((ranges[i].end - ranges[i].start) >> shift,
                                       std::memory_order_relaxed);
      }
      arg.start = arg.walk_end;  // the walk stops early when ranges is full
    }
    return 0;
  }

 private:
  // Fill of at most 64 pages.
  size_t FillSome(PageId first, size_t count, const char* src, Prot prot) {
    // Recorded before the ioctl wakes a waiting thread (kUffdThread), as in
    // Protect; given back below to the pages it did not install.
    uint8_t old[64];
    for (size_t i = 0; i < count; ++i) {
      old[i] = state_[first + i].load(std::memory_order_relaxed);
      state_[first + i].store(uint8_t((old[i] & ~kProtMask) | uint8_t(prot)), std::memory_order_relaxed);
    }
    const unsigned shift = region_->page_shift();
    uffdio_copy c{};
    c.dst = uintptr_t(region_->AppPage(first));
    c.src = uintptr_t(src);
    c.len = uint64_t(count) << shift;
    c.mode = prot == Prot::kRead ? UFFDIO_COPY_MODE_WP : 0;
    size_t done = 0;
    while (done < count) {
      c.copy = 0;
      const int r = ioctl(uffd_, UFFDIO_COPY, &c);
      const size_t copied = c.copy > 0 ? size_t(c.copy) >> shift : 0;
      done += r == 0 ? count - done : copied;
      if (r == 0 || errno != EAGAIN) break;  // EAGAIN: part done, or the mm is changing
      c.dst += uint64_t(copied) << shift;
      c.src += uint64_t(copied) << shift;
      c.len -= uint64_t(copied) << shift;
    }
    for (size_t i = 0; i < count; ++i) {
      if (i < done) {
        state_[first + i].fetch_or(kMapped, std::memory_order_relaxed);
      } else {
        state_[first + i].store(old[i], std::memory_order_relaxed);
      }
    }
    return done;
  }

  int WriteProtect(uintptr_t addr, size_t len, bool wp) {
    uffdio_writeprotect w{};
    w.range = {addr, len};
    w.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
    while (ioctl(uffd_, UFFDIO_WRITEPROTECT, &w) != 0) {
      if (errno != EAGAIN) return errno;  // EAGAIN: the mm is changing; retry
    }
    return 0;
  }

  // Maps [lo, hi) from the memfd, write-protected if wp. A page mapped
  // already gets wp set by WRITEPROTECT, unless !set_mapped (it keeps
  // what it has).
  int Continue(uintptr_t lo, uintptr_t hi, bool wp, bool set_mapped = true) {
    const size_t page = region_->page_size();
    bool filled = false;
    for (uintptr_t pos = lo; pos < hi;) {
      uffdio_continue c{};
      c.range = {pos, hi - pos};
      c.mode = wp ? UFFDIO_CONTINUE_MODE_WP : 0;
      if (ioctl(uffd_, UFFDIO_CONTINUE, &c) == 0) return 0;
      const int err = errno;
      if (err == EAGAIN) {  // part done (c.mapped bytes), or the mm is changing
        if (c.mapped > 0) pos += uint64_t(c.mapped);
      } else if (err == EEXIST) {  // this page is mapped already (stale hint)
        if (set_mapped) {
          int e = WriteProtect(pos, page, wp);
          if (e != 0) return e;
        }
        pos += page;
      } else if (err == EFAULT && !filled) {
        // No frame in the memfd here (never written): zero-fill the rest of
        // the range (fallocate keeps frames that exist) and go on. A fill
        // that starts where an earlier one ended (first touches in a row, as
        // a sweep over fresh memory makes them) fills ahead, twice as far
        // each time up to kMaxFillAhead pages: the next first touches map at
        // the first try (1 syscall a page, not 3), and a sweep that stops
        // leaves at most kMaxFillAhead zero frames unused. kFillSweeps
        // sweeps are followed at once (fft initialises three arrays in one
        // loop: with one, no fill went ahead).
        filled = true;
        const uintptr_t app = uintptr_t(region_->app());
        FillSweep* sweep = SweepEndingAt(pos);
        const size_t ahead =
            sweep ? std::clamp<size_t>(2 * sweep->ahead.load(std::memory_order_relaxed), 1, kMaxFillAhead) : 0;
        if (!sweep) sweep = &fill_sweeps_[fill_next_.fetch_add(1, std::memory_order_relaxed) % kFillSweeps];
        const uintptr_t fill_hi = std::min<uintptr_t>(app + region_->size(), hi + ahead * page);
        sweep->ahead.store(ahead, std::memory_order_relaxed);
        sweep->end.store(fill_hi, std::memory_order_relaxed);
        if (fallocate(region_->fd(), 0, off_t(pos - app), off_t(fill_hi - pos))) return errno;
      } else {
        return err;
      }
    }
    return 0;
  }

  // kUffd: a SIGBUS at addr in the application view.
  void OnSignal(uintptr_t addr, void* ucontext) override {
    const PageId page = region_->PageOf(reinterpret_cast<void*>(addr));
    const FaultKind k = DecodeFault(ucontext);
    if (k.present != 1) state_[page].fetch_and(uint8_t(~kMapped), std::memory_order_relaxed);
    Access access;
    if (k.write >= 0) {
      access = k.write ? Access::kWrite : Access::kRead;
    } else {  // the hardware does not say: a mapped read-only page can only fault on a write
      access = prot(page) == Prot::kRead ? Access::kWrite : Access::kRead;
    }
    Deliver(page, access);
  }

  // kUffdThread: the handler thread.
  void Serve() {
    pthread_setname_np(pthread_self(), "svm-uffd");
    uffd_msg msgs[16];
    for (;;) {
      pollfd fds[2] = {{uffd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      ssize_t n = read(uffd_, msgs, sizeof(msgs));
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return;
      }
      for (size_t i = 0; i < size_t(n) / sizeof(uffd_msg); ++i) {
        if (msgs[i].event != UFFD_EVENT_PAGEFAULT) continue;
        const uintptr_t addr = msgs[i].arg.pagefault.address;
        const uint64_t flags = msgs[i].arg.pagefault.flags;
        const PageId page = region_->PageOf(reinterpret_cast<void*>(addr));
        if (!(flags & UFFD_PAGEFAULT_FLAG_WP)) {  // MISSING or MINOR: not mapped
          state_[page].fetch_and(uint8_t(~kMapped), std::memory_order_relaxed);
        }
        Deliver(page, (flags & UFFD_PAGEFAULT_FLAG_WRITE) ? Access::kWrite : Access::kRead);
        // Protect woke the waiter already, unless the page was in the state
        // asked for; wake it in any case.
        uffdio_range range{uintptr_t(region_->AppPage(page)), region_->page_size()};
        ioctl(uffd_, UFFDIO_WAKE, &range);
      }
    }
  }

  // Continue's zero-fills, per sweep: where its last fill ended and how far
  // past its range it filled (a hint: racing fills only fill more or less
  // ahead).
  struct FillSweep {
    std::atomic<uintptr_t> end{0};
    std::atomic<size_t> ahead{0};
  };
  // The sweep whose last fill ended at pos (nullptr: none; a new one
  // starts there, in the slots in turn).
  FillSweep* SweepEndingAt(uintptr_t pos) {
    for (FillSweep& s : fill_sweeps_)
      if (s.end.load(std::memory_order_relaxed) == pos) return &s;
    return nullptr;
  }

  const bool sigbus_;
  static constexpr size_t kMaxFillAhead = 64;
  static constexpr size_t kFillSweeps = 4;
  FillSweep fill_sweeps_[kFillSweeps];
  std::atomic<uint32_t> fill_next_{0};
  int uffd_ = -1;
  int pagemap_ = -1;  // async writes: /proc/self/pagemap, for PAGEMAP_SCAN
  int slot_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

// Maps one page of a fresh memfd, registers it and tries
// UFFDIO_CONTINUE_MODE_WP, which has no feature bit. Returns 0 or errno.
int TryContinueWp(int uffd) {
  const size_t page = size_t(getpagesize());
  int fd = memfd_create("svm-probe", MFD_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  void* map = MAP_FAILED;
  if (ftruncate(fd, off_t(page)) != 0 || fallocate(fd, 0, 0, off_t(page)) != 0) {
    err = errno;
  } else {
    map = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) err = errno;
  }
  if (err == 0) {
    uffdio_register reg{};
    reg.range = {uintptr_t(map), page};
    reg.mode = kRegisterModes;
    uffdio_continue c{};
    c.range = {uintptr_t(map), page};
    c.mode = UFFDIO_CONTINUE_MODE_WP;
    if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0 || ioctl(uffd, UFFDIO_CONTINUE, &c) != 0) {
      err = errno;
    }
  }
  if (map != MAP_FAILED) munmap(map, page);
  close(fd);
  return err;
}

}  // namespace

Status ProbeUffd(bool sigbus) {
  uint64_t available = 0;
  int fd = NewUffd(sigbus, 0, &available);
  if (fd < 0) {
    return SysError(std::string("userfaultfd") +
                        (-fd == EPERM ? " (needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)"
                                      : ""),
                    -fd);
  }
  close(fd);
  struct {
    uint64_t bit;
    const char* name;
  } const needed[] = {
      {UFFD_FEATURE_MISSING_SHMEM, "UFFD_FEATURE_MISSING_SHMEM"},
      {UFFD_FEATURE_MINOR_SHMEM, "UFFD_FEATURE_MINOR_SHMEM"},
      {UFFD_FEATURE_WP_HUGETLBFS_SHMEM, "UFFD_FEATURE_WP_HUGETLBFS_SHMEM"},
      {sigbus ? uint64_t(UFFD_FEATURE_SIGBUS) : 0, "UFFD_FEATURE_SIGBUS"},
  };
  for (const auto& n : needed) {
    if ((available & n.bit) != n.bit) {
      return Status::Unsupported(std::string("kernel lacks ") + n.name);
    }
  }
  fd = NewUffd(sigbus, kShmemFeatures);
  if (fd < 0) return SysError("userfaultfd", -fd);
  int err = TryContinueWp(fd);
  close(fd);
  if (err == EINVAL) return Status::Unsupported("kernel lacks UFFDIO_CONTINUE_MODE_WP (6.5+)");
  if (err != 0) return SysError("probing UFFDIO_CONTINUE_MODE_WP", err);
  return Status::Ok();
}

// A trap with async writes on a scratch region: write one read page, scan.
Status ProbeUffdAsyncWrites() {
  uint64_t available = 0;
  int fd = NewUffd(true, 0, &available);
  if (fd < 0) return SysError("userfaultfd", -fd);
  close(fd);
  if (!(available & UFFD_FEATURE_WP_ASYNC)) return Status::Unsupported("kernel lacks UFFD_FEATURE_WP_ASYNC (6.7+)");
  std::unique_ptr<Region> region;
  if (Status st = Region::Create({0, size_t(getpagesize()), "svm-probe"}, &region); !st.ok()) return st;
  struct Nothing final : FaultHandler {
    void OnFault(PageId, Access) override {}
  } handler;
  UffdTrap trap(true, region.get(), &handler, true);
  if (Status st = trap.Start(); !st.ok()) return st;
  if (int err = trap.Protect(0, 1, Prot::kRead); err != 0) return SysError("probing async writes", err);
  std::atomic_ref<char>(*region->app()).store(1, std::memory_order_relaxed);  // no fault: async
  std::vector<PageId> written;
  int err = trap.FindWritten(0, 1, &written);
  if (err == ENOTTY || err == EINVAL) return Status::Unsupported("kernel lacks PAGEMAP_SCAN (6.7+)");
  if (err != 0) return SysError("PAGEMAP_SCAN", err);
  if (written.size() != 1) return Status::Unsupported("PAGEMAP_SCAN did not find a written page");
  return Status::Ok();
}

Status OpenUffd(bool sigbus, Region* region, FaultHandler* handler, const TrapOptions& options,
                std::unique_ptr<FaultTrap>* out) {
  std::unique_ptr<UffdTrap> trap(new UffdTrap(sigbus, region, handler, options.async_writes));
  Status s = trap->Start();
  if (!s.ok()) return s;
  *out = std::move(trap);
  return Status::Ok();
}

}  // namespace svm::prim
