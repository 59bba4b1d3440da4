#include "libsvm/prim/fault.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "libsvm/prim/fault_backends.h"

namespace svm::prim {

const char* ToString(Backend b) {
  switch (b) {
    case Backend::kUffd: return "uffd";
    case Backend::kUffdThread: return "uffd-thread";
    case Backend::kMprotect: return "mprotect";
  }
  return "?";
}

bool ParseBackend(std::string_view name, Backend* out) {
  for (Backend b : kAllBackends) {
    if (name == ToString(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

bool NeedsPrefault(Backend b) { return b != Backend::kUffdThread; }

Status Probe(Backend b) {
  static std::mutex mu;
  static std::optional<Status> cached[3];
  std::lock_guard<std::mutex> lock(mu);
  std::optional<Status>& c = cached[int(b)];
  if (!c) {
    switch (b) {
      case Backend::kUffd: c = ProbeUffd(true); break;
      case Backend::kUffdThread: c = ProbeUffd(false); break;
      case Backend::kMprotect: c = ProbeMprotect(); break;
    }
  }
  return *c;
}

Status ProbeAsyncWrites(Backend b) {
  if (b == Backend::kMprotect) return Status::Unsupported("the mprotect backend finds writes by faults only");
  if (Status st = Probe(b); !st.ok()) return st;
  static std::mutex mu;
  static std::optional<Status> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (!cached) cached = ProbeUffdAsyncWrites();
  return *cached;
}

FaultTrap::FaultTrap(Backend backend, Region* region, FaultHandler* handler, bool async_writes)
    : backend_(backend),
      async_writes_(async_writes),
      region_(region),
      handler_(handler),
      state_(MapStates(region->page_count())) {
  static_assert(uint8_t(Prot::kNone) == 0, "a fresh state page must read as kNone");
}

// Zero pages mapped on demand: a sparse region of any size costs nothing
// here until its pages are used (start-up time and memory do not grow with
// the region). Without the lazy mapping, a plain zeroed array.
FaultTrap::States FaultTrap::MapStates(size_t pages) {
  void* p = mmap(nullptr, pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p != MAP_FAILED) return States(static_cast<std::atomic<uint8_t>*>(p), StateDeleter{pages});
  return States(new std::atomic<uint8_t>[pages](), StateDeleter{0});
}

void FaultTrap::StateDeleter::operator()(std::atomic<uint8_t>* p) const {
  if (mapped_bytes != 0) {
    munmap(p, mapped_bytes);
  } else {
    delete[] p;
  }
}

FaultTrap::~FaultTrap() {
  // The backend's destructor has stopped trapping; close the view for good.
  mprotect(region_->app(), region_->size(), PROT_NONE);
  region_->trapped_.store(false, std::memory_order_release);
}

Status FaultTrap::Open(Backend backend, Region* region, FaultHandler* handler,
                       std::unique_ptr<FaultTrap>* out, const TrapOptions& options) {
  if (region == nullptr || handler == nullptr) {
    return Status::InvalidArgument("FaultTrap::Open needs a region and a handler");
  }
  Status probe = options.async_writes ? ProbeAsyncWrites(backend) : Probe(backend);
  if (!probe.ok()) return probe;
  if (region->trapped_.exchange(true, std::memory_order_acq_rel)) {
    return Status::InvalidArgument("a fault trap is already open on this region");
  }
  Status s;
  switch (backend) {
    case Backend::kUffd: s = OpenUffd(true, region, handler, options, out); break;
    case Backend::kUffdThread: s = OpenUffd(false, region, handler, options, out); break;
    case Backend::kMprotect: s = OpenMprotect(region, handler, options, out); break;
  }
  // A backend that failed after constructing its trap has already released
  // the claim in ~FaultTrap; releasing it again is harmless.
  if (!s.ok()) region->trapped_.store(false, std::memory_order_release);
  return s;
}

int FaultTrap::FindWritten(PageId, size_t, std::vector<PageId>*) { return EOPNOTSUPP; }

size_t FaultTrap::Fill(PageId, size_t, const void*, Prot) { return 0; }

Status FaultTrap::ProtectStatus(PageId first, size_t count, Prot prot) {
  int err = Protect(first, count, prot);
  return err == 0 ? Status::Ok() : Explain(err, first, count, prot);
}

Status FaultTrap::Explain(int err, PageId first, size_t count, Prot prot) const {
  char range[96];
  snprintf(range, sizeof(range), "pages [%" PRIu64 ", %" PRIu64 ") of %zu", uint64_t(first),
           uint64_t(first + count), region_->page_count());
  std::string what = std::string(ToString(backend_)) + " backend: protecting " + range +
                     " as " + ToString(prot);
  if (err == EINVAL) return Status::InvalidArgument(what + ": range is empty or out of bounds");
  return Status::Unsupported(what + ": " + strerror(err));
}

FaultStats FaultTrap::stats() const {
  FaultStats s;
  s.faults = stats_.faults.load(std::memory_order_relaxed);
  s.read_faults = stats_.read_faults.load(std::memory_order_relaxed);
  s.write_faults = stats_.write_faults.load(std::memory_order_relaxed);
  s.protect_calls = stats_.protect_calls.load(std::memory_order_relaxed);
  s.scans = stats_.scans.load(std::memory_order_relaxed);
  s.pages_written = stats_.pages_written.load(std::memory_order_relaxed);
  s.pages_filled = stats_.pages_filled.load(std::memory_order_relaxed);
  s.region_vmas = stats_.region_vmas.load(std::memory_order_relaxed);
  s.vma_budget = stats_.vma_budget.load(std::memory_order_relaxed);
  return s;
}

void Prefault(const void* addr, size_t len, Access access) {
  if (len == 0) return;
  const size_t page = size_t(getpagesize());  // reads a libc global; signal-safe
  uintptr_t p = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  // Touch the byte at addr in the first page (it is in the caller's buffer),
  // and the first byte of each later page.
  uintptr_t at = reinterpret_cast<uintptr_t>(addr);
  for (; p < end; p += page, at = p) {
    auto* b = reinterpret_cast<unsigned char*>(at);
    if (access == Access::kWrite) {
      __atomic_fetch_or(b, static_cast<unsigned char>(0), __ATOMIC_RELAXED);
    } else {
      (void)__atomic_load_n(b, __ATOMIC_RELAXED);
    }
  }
}

}  // namespace svm::prim

namespace svm::prim {
namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Opens the page read-write and notes how long that took.
class TimingHandler final : public FaultHandler {
 public:
  void OnFault(PageId page, Access) override {
    const int64_t t0 = MonotonicNs();
    trap->Protect(page, 1, Prot::kReadWrite);
    handler_ns.store(MonotonicNs() - t0, std::memory_order_relaxed);
    handled.fetch_add(1, std::memory_order_release);
  }
  FaultTrap* trap = nullptr;
  std::atomic<int64_t> handler_ns{0};
  // Faults whose handler_ns is stored: with a handler thread (uffd-thread)
  // the faulting thread resumes at Protect, before the store, and read the
  // previous fault's time (a median of 0 in one ASan CI run).
  std::atomic<int> handled{0};
};

}  // namespace

Status MeasureFaultDelivery(Backend b, int faults, uint64_t* ns) {
  std::unique_ptr<Region> region;
  RegionOptions ro;
  ro.size = size_t(getpagesize());
  ro.name = "svm-calibrate";
  if (Status st = Region::Create(ro, &region); !st.ok()) return st;
  TimingHandler handler;
  std::unique_ptr<FaultTrap> trap;
  if (Status st = FaultTrap::Open(b, region.get(), &handler, &trap); !st.ok()) return st;
  handler.trap = trap.get();
  volatile const char* page = region->app();
  std::vector<int64_t> samples;
  for (int i = 0; i < faults; ++i) {
    if (int err = trap->Protect(0, 1, Prot::kNone); err != 0)
      return Status::Unsupported(std::string("calibrating faults: ") + strerror(err));
    const int64_t t0 = MonotonicNs();
    (void)*page;
    const int64_t wall = MonotonicNs() - t0;
    // Bounded: a fault that never reached the handler must not hang start-up.
    const int64_t give_up = MonotonicNs() + 100'000'000;
    while (handler.handled.load(std::memory_order_acquire) <= i && MonotonicNs() < give_up)
      __builtin_ia32_pause();
    const int64_t t = wall - handler.handler_ns.load(std::memory_order_relaxed);
    samples.push_back(std::max<int64_t>(t, 0));
  }
  if (samples.empty()) return Status::InvalidArgument("no faults to measure");
  std::nth_element(samples.begin(), samples.begin() + ptrdiff_t(samples.size() / 2), samples.end());
  *ns = uint64_t(samples[samples.size() / 2]);
  return Status::Ok();
}

}  // namespace svm::prim
