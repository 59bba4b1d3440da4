// FaultTrap: traps accesses to a Region's application view that its per-page
// protection does not allow, and hands them to a FaultHandler.
//
// The runtime sets each page's protection in the application view to none,
// read or read-write (Protect); an access that the protection forbids calls
// FaultHandler::OnFault, which fixes the page (typically: fetch it into the
// protocol view, make a twin) and calls Protect so the access can go on.
//
// Backends (libsvm/prim/README.md has the measurements and kernel findings):
//   kUffd        userfaultfd with UFFD_FEATURE_SIGBUS on the application view,
//                registered MISSING|MINOR|WP. A fault raises SIGBUS in the
//                faulting thread, and OnFault runs there, in signal context.
//                none = PTE zapped (the memfd keeps the data); read =
//                UFFDIO_CONTINUE write-protected (or WRITEPROTECT if mapped);
//                read-write = CONTINUE / WRITEPROTECT cleared.
//   kUffdThread  the same registration without SIGBUS; a handler thread reads
//                fault events and runs OnFault; the faulting thread sleeps in
//                the kernel until woken. Transparent to system calls.
//   kMprotect    SIGSEGV + mprotect. Each run of equal protection is one VMA;
//                Protect refuses (ENOSPC) a change that would push the
//                region's VMA count past its budget, well before
//                vm.max_map_count.
//
// Kernel-mode accesses: under kUffd and kMprotect a system call that reads or
// writes a page the program may not access (read(2) into a "none" page) fails
// with EFAULT instead of faulting; call Prefault on the buffer first (and if
// the call still fails with EFAULT because the page was invalidated in
// between, Prefault again and retry). kUffdThread needs none of this.
//
// Thread-safety: Protect, prot, stats and Prefault may be called from any
// thread and from OnFault, which may run in a fault's signal handler: they
// use no malloc and only system calls (kMprotect: plus a spin lock around its
// VMA bookkeeping, so Protect must not be called from an asynchronous signal
// handler). Calls that change the same page must be serialized by the caller
// (the runtime's page lock); calls on different pages may run concurrently.
// Open and the destructor are control-path calls.
//
// Signals: kUffd and kMprotect install one SIGBUS / SIGSEGV handler for the
// process (libsvm/prim/README.md); faults outside every region go to the
// handler installed before. A thread that blocks SIGBUS (kUffd) or SIGSEGV
// (kMprotect) and then touches a trapped page is killed by the kernel.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "libsvm/prim/region.h"
#include "util/status.h"
#include "protocol/types.h"

namespace svm::prim {

enum class Backend : uint8_t { kUffd, kUffdThread, kMprotect };
inline constexpr Backend kAllBackends[] = {Backend::kUffd, Backend::kUffdThread,
                                           Backend::kMprotect};

// "uffd", "uffd-thread", "mprotect".
const char* ToString(Backend b);
// Parses the names above. Returns false (and leaves *out) on anything else.
bool ParseBackend(std::string_view name, Backend* out);
// Whether system calls on the application view need Prefault first.
bool NeedsPrefault(Backend b);

// Ok if this kernel and process can run backend b; otherwise Unsupported with
// the reason (e.g. "userfaultfd: Operation not permitted", "kernel lacks
// UFFD_FEATURE_MINOR_SHMEM"). The answer is computed once and cached.
Status Probe(Backend b);

class FaultHandler {
 public:
  virtual ~FaultHandler() = default;

  // An access to `page` (index within the region) was not allowed.
  //
  // Runs in the faulting thread inside a SIGBUS/SIGSEGV handler (kUffd,
  // kMprotect) or on the trap's handler thread (kUffdThread). Must return
  // only once the page's protection allows `access`: it calls
  // FaultTrap::Protect itself, and must call it even when it believes the
  // page already has that protection (the kernel may have dropped the
  // mapping; Protect then re-installs it). Several threads may be in
  // OnFault for the same page at once (kUffd, kMprotect).
  //
  // Must be async-signal-safe: no malloc, printf, getenv, no locks that the
  // interrupted thread could hold. Must not touch the application view
  // (kUffdThread: it would wait for itself).
  //
  // `access` is exact on x86-64 for every backend (the page-fault error
  // code). Where the hardware does not say, a fault on a page whose
  // protection is read is reported as a write and any other as a read; a
  // write to a "none" page then faults twice (read, then write).
  virtual void OnFault(PageId page, Access access) = 0;
};

// Counters since Open. Approximate while faults are in flight.
struct FaultStats {
  uint64_t faults = 0;         // OnFault calls
  uint64_t read_faults = 0;    // ... with Access::kRead
  uint64_t write_faults = 0;   // ... with Access::kWrite
  uint64_t protect_calls = 0;  // Protect calls that reached the kernel
  uint64_t pages_filled = 0;   // pages Fill installed
  uint64_t scans = 0;          // FindWritten calls that reached the kernel
  uint64_t pages_written = 0;  // ... and the pages they found written
  uint64_t region_vmas = 0;    // kMprotect: VMAs the region uses now; else 1
  uint64_t vma_budget = 0;     // kMprotect: most VMAs Protect will create; else 1
};

struct TrapOptions {
  // kMprotect only: cap on the region's VMAs. 0 = derive from
  // vm.max_map_count (limit minus mappings outside the region minus
  // max(limit/8, 256) headroom); a value above that is lowered to it.
  size_t max_vmas = 0;
  // kUffd, kUffdThread: a write to a read page goes through without a fault
  // (UFFD_FEATURE_WP_ASYNC), and FindWritten reports it later. Read then
  // means "writes allowed and recorded", no longer "writes trap". Open fails
  // with Unsupported where ProbeAsyncWrites does.
  bool async_writes = false;
};

// Ok if a trap of backend b can be opened with async_writes here: a uffd
// backend on a kernel with UFFD_FEATURE_WP_ASYNC and PAGEMAP_SCAN (6.7+).
// Otherwise Unsupported with the reason. Cached like Probe.
Status ProbeAsyncWrites(Backend b);

class FaultTrap {
 public:
  // Opens a trap of kind `backend` on `region`. All pages start as none
  // (their frames keep whatever the protocol view wrote). At most one trap
  // per region at a time.
  // REQUIRES: region and handler outlive the trap.
  // On failure *out is untouched: Unsupported (Probe failed or a system call
  // failed; the message says which), InvalidArgument (a trap is already open
  // on the region), OutOfRange (kMprotect: no VMA budget left).
  static Status Open(Backend backend, Region* region, FaultHandler* handler,
                     std::unique_ptr<FaultTrap>* out, const TrapOptions& options = {});

  // Stops trapping and makes the application view inaccessible (PROT_NONE).
  // REQUIRES: no thread accesses the application view or is inside OnFault.
  virtual ~FaultTrap();
  FaultTrap(const FaultTrap&) = delete;
  FaultTrap& operator=(const FaultTrap&) = delete;

  // Sets the application-view protection of pages [first, first + count).
  // Returns 0 or an errno value:
  //   EINVAL  the range is empty or outside the region;
  //   ENOSPC  kMprotect: the change would exceed the VMA budget (nothing
  //           changed; ProtectStatus explains it);
  //   other   the failing system call's errno (the range may be partly done).
  // Async-signal-safe. Pages that never held data are zero-filled when
  // opened. Takes effect for every thread before it returns (TLBs flushed).
  // With async writes, setting read on a page that is read already keeps its
  // record of writes (FindWritten still reports a write made before): it
  // only maps the page again if the kernel dropped it.
  virtual int Protect(PageId first, size_t count, Prot prot) = 0;

  // Protect for the control path: the same, with a Status that explains an
  // error (allocates; not for OnFault).
  Status ProtectStatus(PageId first, size_t count, Prot prot);

  // Installs pages [first, first + count) that have no frame yet: the kernel
  // copies them from src (count pages) into fresh frames and maps them with
  // `prot` (read or read-write) in one step, so a fetched page is neither
  // zero-filled first nor copied in user space (uffd: UFFDIO_COPY). Returns
  // how many pages from first on it installed; it stops before a page that
  // has a frame, or at any error, and the caller writes the rest through the
  // protocol view and Protects them. kMprotect installs none.
  // Async-signal-safe.
  virtual size_t Fill(PageId first, size_t count, const void* src, Prot prot);

  // Async writes only: appends to *written the pages of [first, first +
  // count) written since they were last set to read or found here, and
  // write-protects them again in the same step, so a write that comes after
  // is found by the next call, never lost between. Pages last set read-write
  // count as written (and are re-armed too: their writes then still go
  // through, recorded). Returns 0 or an errno value (EOPNOTSUPP without
  // async writes, EINVAL for a bad range). Async-signal-safe apart from the
  // vector's growth.
  virtual int FindWritten(PageId first, size_t count, std::vector<PageId>* written);
  bool async_writes() const { return async_writes_; }

  // The protection last set for `page` by Protect.
  Prot prot(PageId page) const { return Prot(state_[page].load(std::memory_order_relaxed) & 3); }

  FaultStats stats() const;
  Backend backend() const { return backend_; }

  // Tests only: forget the backend's per-page hints (uffd: which pages are
  // mapped), as if they had all gone stale. Protect must still be right.
  void TEST_ForgetHints() {
    for (size_t p = 0; p < region_->page_count(); ++p) {
      state_[p].fetch_and(kProtMask, std::memory_order_relaxed);
    }
  }
  Region& region() const { return *region_; }

 protected:
  FaultTrap(Backend backend, Region* region, FaultHandler* handler, bool async_writes = false);

  // Validates a Protect range. Async-signal-safe.
  bool RangeOk(PageId first, size_t count) const {
    return count > 0 && first < region_->page_count() && count <= region_->page_count() - first;
  }
  // Backend-specific explanation of an error code returned by Protect.
  virtual Status Explain(int err, PageId first, size_t count, Prot prot) const;
  // Counts a fault and calls the handler.
  void Deliver(PageId page, Access access) {
    stats_.faults.fetch_add(1, std::memory_order_relaxed);
    (access == Access::kWrite ? stats_.write_faults : stats_.read_faults)
        .fetch_add(1, std::memory_order_relaxed);
    handler_->OnFault(page, access);
  }

  // Per page: bits 0-1 the Prot last set; the rest is backend-private.
  static constexpr uint8_t kProtMask = 3;
  const Backend backend_;
  const bool async_writes_;
  Region* const region_;
  FaultHandler* const handler_;
  struct StateDeleter {
    size_t mapped_bytes;  // 0: allocated with new[]
    void operator()(std::atomic<uint8_t>* p) const;
  };
  using States = std::unique_ptr<std::atomic<uint8_t>[], StateDeleter>;
  static States MapStates(size_t pages);
  States state_;
  struct {
    std::atomic<uint64_t> faults{0}, read_faults{0}, write_faults{0}, protect_calls{0};
    std::atomic<uint64_t> scans{0}, pages_written{0}, pages_filled{0};
    std::atomic<uint64_t> region_vmas{1}, vma_budget{1};
  } stats_;
};

// The kernel's part of one fault on backend b, in *ns: from the faulting
// access to the handler and back (page-fault entry, signal frame and
// sigreturn; uffd-thread: the hand-offs to the handler thread and back),
// less the handler's own time. Median of `faults` faults on a scratch page.
// Control path (opens a region and a trap of its own).
Status MeasureFaultDelivery(Backend b, int faults, uint64_t* ns);

// Touches every page of [addr, addr + len) from user mode, so that a fault
// on it runs the handler now rather than failing a later system call with
// EFAULT. kWrite touches with an atomic read-modify-write of zero (a write
// for the MMU that changes no byte); kRead with a load. Addresses outside any
// region are touched too (harmless for mapped memory; len == 0 touches
// nothing). Async-signal-safe.
void Prefault(const void* addr, size_t len, Access access);

// Adds to the one-line report of a fatal SIGSEGV or SIGBUS what the caller
// knows of the address: note(addr, buf, n) writes text after "the address
// is in [...]" into buf (NUL-terminated) and returns its length, 0 for
// nothing. Async-signal-safe. Installs the reporting handler if no trap has.
void SetFatalFaultNote(size_t (*note)(uintptr_t addr, char* buf, size_t n));

}  // namespace svm::prim
