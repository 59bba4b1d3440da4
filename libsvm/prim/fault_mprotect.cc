// The mprotect backend: the application view's protection is the page
// protection of the mapping itself, and a forbidden access raises SIGSEGV.
//
// Every run of pages with equal protection is one VMA: the kernel merges a
// run with its neighbours when their protections become equal (same file,
// contiguous offsets), so the region uses exactly
//   1 + #{i : prot(i - 1) != prot(i)}
// VMAs. The trap keeps that count and refuses (ENOSPC) a Protect that would
// push it past a budget below vm.max_map_count, instead of letting mprotect
// fail with ENOMEM halfway through the program (or, worse, fail some other
// library's mmap).
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "libsvm/prim/fault_backends.h"
#include "libsvm/prim/maps.h"
#include "libsvm/prim/signal.h"

namespace svm::prim {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int ProtFlags(Prot p) {
  switch (p) {
    case Prot::kNone: return PROT_NONE;
    case Prot::kRead: return PROT_READ;
    case Prot::kReadWrite: return PROT_READ | PROT_WRITE;
  }
  return PROT_NONE;
}

class MprotectTrap final : public FaultTrap, private SignalTarget {
 public:
  MprotectTrap(Region* region, FaultHandler* handler)
      : FaultTrap(Backend::kMprotect, region, handler) {}

  ~MprotectTrap() override {
    if (slot_ >= 0) RemoveSignalTarget(slot_);
  }

  Status Start(const TrapOptions& options) {
    const uintptr_t lo = uintptr_t(region_->app()), hi = lo + region_->size();
    limit_ = ReadMaxMapCount();
    const int all = CountMappings(0, UINTPTR_MAX);
    const int mine = CountMappings(lo, hi);
    if (limit_ < 0 || all < 0 || mine < 0) {
      return Status::Unsupported("mprotect backend: cannot read /proc/sys/vm/max_map_count or "
                                 "/proc/self/maps");
    }
    others_ = all - mine;
    headroom_ = std::max<long>(limit_ / 8, 256);
    long budget = limit_ - others_ - headroom_;
    if (options.max_vmas != 0) budget = std::min<long>(budget, long(options.max_vmas));
    if (budget < 1) {
      return Status::OutOfRange("mprotect backend: vm.max_map_count is " +
                                std::to_string(limit_) + " and " + std::to_string(others_) +
                                " mappings exist already; no VMAs left for the region");
    }
    budget_ = uint64_t(budget);
    stats_.vma_budget.store(budget_, std::memory_order_relaxed);

    if (mprotect(region_->app(), region_->size(), PROT_NONE) != 0) {
      return Status::Unsupported(std::string("mprotect of the application view: ") +
                                 strerror(errno));
    }
    runs_ = 1;
    stats_.region_vmas.store(1, std::memory_order_relaxed);
    slot_ = AddSignalTarget(SIGSEGV, lo, hi, this);
    if (slot_ < 0) {
      return Status::Unsupported(std::string("installing the SIGSEGV handler: ") +
                                 strerror(-slot_));
    }
    return Status::Ok();
  }

  int Protect(PageId first, size_t count, Prot prot) override {
    if (!RangeOk(first, count)) return EINVAL;
    const PageId end = first + count, n = region_->page_count();
    const uint8_t want = uint8_t(prot);
    auto at = [&](PageId p) { return uint8_t(state_[p].load(std::memory_order_relaxed) & kProtMask); };

    Lock();
    // Nothing to do if the whole range has this protection already.
    PageId p = first;
    while (p < end && at(p) == want) ++p;
    if (p == end) {
      Unlock();
      return 0;
    }
    // Change in the number of protection runs: boundaries between
    // neighbours inside [first - 1, end] before and after.
    long before = 0, after = 0;
    for (PageId b = std::max<PageId>(first, 1); b <= std::min<PageId>(end, n - 1); ++b) {
      before += at(b - 1) != at(b);
    }
    if (first > 0) after += at(first - 1) != want;
    if (end < n) after += want != at(end);
    const uint64_t runs = uint64_t(long(runs_) + after - before);
    if (runs > budget_) {
      refused_runs_.store(runs, std::memory_order_relaxed);
      Unlock();
      return ENOSPC;
    }
    stats_.protect_calls.fetch_add(1, std::memory_order_relaxed);
    if (mprotect(region_->AppPage(first), count << region_->page_shift(), ProtFlags(prot)) != 0) {
      const int err = errno;
      Unlock();
      return err;
    }
    for (PageId q = first; q < end; ++q) state_[q].store(want, std::memory_order_relaxed);
    runs_ = runs;
    stats_.region_vmas.store(runs, std::memory_order_relaxed);
    Unlock();
    return 0;
  }

 private:
  // A spin lock: Protect runs inside the SIGSEGV handler, where a mutex is
  // not allowed. It is held only around bookkeeping and one mprotect, and
  // nothing inside touches the application view, so a fault can never
  // find it held by its own thread.
  void Lock() {
    while (lock_.exchange(true, std::memory_order_acquire)) {
      while (lock_.load(std::memory_order_relaxed)) CpuRelax();
    }
  }
  void Unlock() { lock_.store(false, std::memory_order_release); }

  void OnSignal(uintptr_t addr, void* ucontext) override {
    const PageId page = region_->PageOf(reinterpret_cast<void*>(addr));
    const FaultKind k = DecodeFault(ucontext);
    Access access;
    if (k.write >= 0) {
      access = k.write ? Access::kWrite : Access::kRead;
    } else {
      access = prot(page) == Prot::kRead ? Access::kWrite : Access::kRead;
    }
    Deliver(page, access);
  }

  Status Explain(int err, PageId first, size_t count, Prot prot) const override {
    if (err != ENOSPC) return FaultTrap::Explain(err, first, count, prot);
    char buf[512];
    snprintf(buf, sizeof(buf),
             "mprotect backend: protecting pages [%" PRIu64 ", %" PRIu64
             ") as %s would split the region into %" PRIu64
             " VMAs, over its budget of %" PRIu64
             " (vm.max_map_count %ld, %ld other mappings, %ld kept in reserve); "
             "page protections are too fragmented for this backend: use the uffd backend or "
             "raise vm.max_map_count",
             uint64_t(first), uint64_t(first + count), ToString(prot),
             refused_runs_.load(std::memory_order_relaxed), budget_, limit_, others_, headroom_);
    return Status::OutOfRange(buf);
  }

  int slot_ = -1;
  long limit_ = 0, others_ = 0, headroom_ = 0;
  uint64_t budget_ = 0;
  uint64_t runs_ = 1;  // guarded by lock_
  std::atomic<bool> lock_{false};
  std::atomic<uint64_t> refused_runs_{0};
};

}  // namespace

Status ProbeMprotect() {
  if (ReadMaxMapCount() < 0) {
    return Status::Unsupported("mprotect backend: cannot read /proc/sys/vm/max_map_count");
  }
  return Status::Ok();
}

Status OpenMprotect(Region* region, FaultHandler* handler, const TrapOptions& options,
                    std::unique_ptr<FaultTrap>* out) {
  std::unique_ptr<MprotectTrap> trap(new MprotectTrap(region, handler));
  Status s = trap->Start(options);
  if (!s.ok()) return s;
  *out = std::move(trap);
  return Status::Ok();
}

}  // namespace svm::prim
