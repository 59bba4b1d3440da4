// FaultTrap: a table of cases run against every backend, in the manner of the
// kernel's uffd-unit-tests. Each case names the backends it applies to and
// what it needs; a backend this machine cannot run, or a missing need, is
// reported as "skipped [reason]". Cases check fault counts (the handler's and
// the trap's), not just data.
//
//   fault_test --gtest_list_tests                 # the case x backend list
//   fault_test --gtest_filter='*uffd_thread*'     # one backend
#include "libsvm/prim/fault.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "libsvm/prim/maps.h"

namespace svm::prim {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

constexpr uintptr_t kBase = 0x320000000000;  // inside ASan's high memory too
constexpr size_t kPages = 64;

uint8_t Pattern(PageId page) { return uint8_t(0x40 + page); }

// Writes a message and aborts: a failed Protect inside a fault handler would
// otherwise refault forever. Async-signal-safe.
[[noreturn]] void Die(const char* msg) {
  (void)!write(2, msg, strlen(msg));
  abort();
}

// Installs the page's pattern through the protocol view the first time it
// faults (unless fill is off), then opens it for the access. Counts all.
class TestHandler : public FaultHandler {
 public:
  void OnFault(PageId page, Access access) override {
    calls.fetch_add(1);
    (access == Access::kWrite ? writes : reads).fetch_add(1);
    page_calls[page].fetch_add(1);
    while (lock.exchange(true, std::memory_order_acquire)) {
    }
    const Prot prot = access == Access::kWrite ? Prot::kReadWrite : Prot::kRead;
    bool filled = false;
    if (fill && !installed[page].load()) {
      if (by_fill) {  // as the runtime installs a fetched page: FaultTrap::Fill
        static thread_local char src[4096];
        std::memset(src, Pattern(page), sizeof src);
        filled = trap->Fill(page, 1, src, prot) == 1;
      }
      if (!filled) std::memset(region->ProtoPage(page), Pattern(page), region->page_size());
      installed[page].store(true);
      installs.fetch_add(1);
    }
    int err = filled ? 0 : trap->Protect(page, 1, prot);
    lock.store(false, std::memory_order_release);
    if (err != 0) Die("TestHandler: Protect failed\n");
    returned.fetch_add(1, std::memory_order_release);
  }

  Region* region = nullptr;
  FaultTrap* trap = nullptr;
  bool fill = true;
  bool by_fill = false;  // install with FaultTrap::Fill where it can
  std::atomic<bool> lock{false};
  std::atomic<int> calls{0}, reads{0}, writes{0}, installs{0};
  std::atomic<int> returned{0};  // OnFault calls that have finished
  std::atomic<int> page_calls[kPages] = {};
  std::atomic<bool> installed[kPages] = {};
};

// What a case runs against: a region, a trap on it and the handler.
struct Env {
  Backend backend;
  std::unique_ptr<Region> region;
  std::unique_ptr<FaultTrap> trap;
  TestHandler handler;

  // Waits (at most 1 s) until every handler call has returned. Under
  // uffd-thread the faulting threads resume as the handler's ioctl maps the
  // page, before the handler and Fill have counted the install (a flaky
  // ManyThreadsFillOnePage in CI: installs 0, pages_filled 0 after join).
  void WaitForHandler() {
    for (int i = 0; i < 1000 && handler.returned.load(std::memory_order_acquire) < handler.calls.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  char* app(PageId p) { return region->AppPage(p); }
  char* proto(PageId p) { return region->ProtoPage(p); }
  FaultStats stats() { return trap->stats(); }
  void Protect(PageId p, size_t n, Prot prot) {
    Status s = trap->ProtectStatus(p, n, prot);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
};

uint8_t Read(const char* p) { return *reinterpret_cast<const volatile uint8_t*>(p); }
void Write(char* p, uint8_t v) { *reinterpret_cast<volatile uint8_t*>(p) = v; }

// --- the cases ---------------------------------------------------------------

void ReadFaultOnNone(Env& e) {
  EXPECT_EQ(Read(e.app(3)), Pattern(3));
  EXPECT_EQ(Read(e.app(3) + 4095), Pattern(3));
  EXPECT_EQ(e.handler.calls, 1);
  EXPECT_EQ(e.handler.reads, 1);
  EXPECT_EQ(e.handler.installs, 1);
  FaultStats s = e.stats();
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.read_faults, 1u);
  EXPECT_EQ(s.write_faults, 0u);
  EXPECT_EQ(e.trap->prot(3), Prot::kRead);
}

void WriteFaultOnReadOnly(Env& e) {
  std::memset(e.proto(5), 7, e.region->page_size());
  e.handler.installed[5] = true;
  e.Protect(5, 1, Prot::kRead);
  EXPECT_EQ(Read(e.app(5) + 10), 7);  // readable without a fault
  EXPECT_EQ(e.handler.calls, 0);
  Write(e.app(5) + 10, 9);
  EXPECT_EQ(e.handler.calls, 1);
  EXPECT_EQ(e.handler.writes, 1);
  EXPECT_EQ(e.stats().write_faults, 1u);
  EXPECT_EQ(e.proto(5)[10], 9);
  EXPECT_EQ(e.trap->prot(5), Prot::kReadWrite);
  Write(e.app(5) + 11, 10);  // now writable: no second fault
  EXPECT_EQ(e.handler.calls, 1);
}

void WriteFaultOnNone(Env& e) {
  Write(e.app(7) + 1, 0x11);
  EXPECT_EQ(e.proto(7)[0], char(Pattern(7)));
  EXPECT_EQ(e.proto(7)[1], 0x11);
  // On x86-64 the fault says it was a write: one fault. Elsewhere a read
  // fault would come first.
  EXPECT_EQ(e.handler.calls, 1);
  EXPECT_EQ(e.handler.writes, 1);
  EXPECT_EQ(e.stats().write_faults, 1u);
  EXPECT_EQ(e.trap->prot(7), Prot::kReadWrite);
}

void DowngradeToNone(Env& e) {
  Write(e.app(2) + 8, 0x5a);  // fault: none -> read-write
  ASSERT_EQ(e.handler.calls, 1);
  Write(e.app(2) + 9, 0x5b);  // no fault
  e.Protect(2, 1, Prot::kNone);
  // Written through the application view, kept by the frame.
  EXPECT_EQ(e.proto(2)[8], 0x5a);
  EXPECT_EQ(e.proto(2)[9], 0x5b);
  EXPECT_EQ(Read(e.app(2) + 9), 0x5b);  // faults again (frame kept: no refill)
  EXPECT_EQ(e.handler.calls, 2);
  EXPECT_EQ(e.handler.reads, 1);
  EXPECT_EQ(e.handler.installs, 1);
  // Read-write -> read: the next write faults.
  Write(e.app(2) + 10, 1);
  EXPECT_EQ(e.handler.calls, 3);
  e.Protect(2, 1, Prot::kRead);
  EXPECT_EQ(Read(e.app(2) + 10), 1);
  EXPECT_EQ(e.handler.calls, 3);
  Write(e.app(2) + 10, 2);
  EXPECT_EQ(e.handler.calls, 4);
  EXPECT_EQ(e.stats().faults, 4u);
  EXPECT_EQ(e.proto(2)[10], 2);
}

void NeverWrittenPageIsZero(Env& e) {
  // No data installed: the frame does not exist yet (uffd: a MISSING
  // fault); opening the page zero-fills it.
  e.handler.fill = false;
  struct stat before;
  ASSERT_EQ(fstat(e.region->fd(), &before), 0);
  EXPECT_EQ(before.st_blocks, 0);
  EXPECT_EQ(Read(e.app(9) + 123), 0);
  EXPECT_EQ(e.handler.calls, 1);
  Write(e.app(9) + 123, 4);
  EXPECT_EQ(e.handler.calls, 2);
  EXPECT_EQ(e.proto(9)[123], 4);
}

void FirstTouchesInARowStayInTheRegion(Env& e) {
  // One never-written page makes one frame; a sweep from it to the
  // region's end (uffd: each zero-fill goes further ahead, up to 64 pages)
  // makes a frame per page swept and none past the end.
  e.handler.fill = false;
  const size_t page = e.region->page_size();
  const PageId first = kPages - 44;
  Write(e.app(first), 1);
  struct stat st;
  ASSERT_EQ(fstat(e.region->fd(), &st), 0);
  EXPECT_EQ(size_t(st.st_blocks) * 512, page);
  // The second first touch in a row fills the page after it too (uffd);
  // mprotect's frames are made by the accesses themselves.
  Write(e.app(first + 1), 1);
  ASSERT_EQ(fstat(e.region->fd(), &st), 0);
  EXPECT_EQ(size_t(st.st_blocks) * 512, (e.backend == Backend::kMprotect ? 2 : 3) * page);
  for (PageId p = first + 1; p < kPages; ++p) {
    ASSERT_EQ(Read(e.app(p) + 7), 0) << p;
    Write(e.app(p) + 7, uint8_t(p));
  }
  ASSERT_EQ(fstat(e.region->fd(), &st), 0);
  EXPECT_EQ(size_t(st.st_size), kPages * page);
  EXPECT_EQ(size_t(st.st_blocks) * 512, (kPages - first) * page);
  for (PageId p = first + 1; p < kPages; ++p) EXPECT_EQ(e.proto(p)[7], uint8_t(p)) << p;
  EXPECT_EQ(Read(e.app(3)), 0);
}

void InterleavedFirstTouchSweepsEachFillAhead(Env& e) {
  // Three sweeps over fresh memory in one loop (fft's initialisation): from
  // each one's second first touch on, a touch fills the page after it too
  // (uffd); mprotect's frames are made by the accesses themselves.
  e.handler.fill = false;
  const size_t page = e.region->page_size();
  const PageId starts[] = {10, 25, 40};
  auto frames = [&] {
    struct stat st;
    EXPECT_EQ(fstat(e.region->fd(), &st), 0);
    return size_t(st.st_blocks) * 512 / page;
  };
  for (PageId s : starts) Write(e.app(s), 1);
  EXPECT_EQ(frames(), 3u);
  for (PageId s : starts) Write(e.app(s + 1), 1);
  EXPECT_EQ(frames(), e.backend == Backend::kMprotect ? 6u : 9u);
  for (PageId i = 2; i < 8; ++i)
    for (PageId s : starts) Write(e.app(s + i), uint8_t(s + i));
  for (PageId i = 0; i < 8; ++i)
    for (PageId s : starts) EXPECT_EQ(e.proto(s + i)[0], i == 0 || i == 1 ? 1 : uint8_t(s + i)) << s + i;
  EXPECT_EQ(e.handler.calls, 24);
}

void DroppedPageRefaults(Env& e) {
  // The frame exists (written through the protocol view): a MINOR fault.
  std::memset(e.proto(4), 3, e.region->page_size());
  e.handler.fill = false;
  EXPECT_EQ(Read(e.app(4)), 3);
  e.Protect(4, 1, Prot::kNone);
  e.proto(4)[1] = 8;  // a diff applied meanwhile
  EXPECT_EQ(Read(e.app(4) + 1), 8);
  EXPECT_EQ(e.handler.calls, 2);
  EXPECT_EQ(e.stats().read_faults, 2u);
}

void ProtectRanges(Env& e) {
  // A mix: some pages hold data, some are mapped, some never touched.
  for (PageId p = 0; p < kPages; p += 3) std::memset(e.proto(p), int(p), e.region->page_size());
  for (PageId p = 0; p < kPages; p += 5) (void)Read(e.app(p));
  const int faults = e.handler.calls;
  e.handler.fill = false;
  e.Protect(0, kPages, Prot::kRead);
  for (PageId p = 0; p < kPages; ++p) {
    const uint8_t want = p % 5 == 0 ? Pattern(p) : p % 3 == 0 ? uint8_t(p) : 0;
    ASSERT_EQ(Read(e.app(p) + 1), want) << "page " << p;
  }
  EXPECT_EQ(e.handler.calls, faults);  // every page readable at once
  e.Protect(10, 20, Prot::kReadWrite);
  for (PageId p = 10; p < 30; ++p) Write(e.app(p), 1);
  EXPECT_EQ(e.handler.calls, faults);
  for (PageId p = 30; p < 40; ++p) Write(e.app(p), 1);  // still read-only
  EXPECT_EQ(e.handler.calls, faults + 10);
  EXPECT_EQ(e.handler.writes, 10);
  e.Protect(0, kPages, Prot::kNone);
  for (PageId p = 0; p < kPages; ++p) (void)Read(e.app(p));
  EXPECT_EQ(e.handler.calls, faults + 10 + int(kPages));
  EXPECT_EQ(e.stats().faults, uint64_t(e.handler.calls));
}

void ProtectWithStaleHints(Env& e) {
  // uffd: Protect believes no page is mapped, so it maps with CONTINUE,
  // which stops at each page that is mapped (EAGAIN, then EEXIST) and
  // falls back to WRITEPROTECT there. Holes in the memfd are zero-filled.
  e.handler.fill = false;
  for (PageId p = 0; p < kPages; p += 2) std::memset(e.proto(p), 5, e.region->page_size());
  e.Protect(0, kPages / 2, Prot::kRead);  // first half mapped
  e.Protect(8, 4, Prot::kNone);           // ... but for a hole
  e.trap->TEST_ForgetHints();
  e.Protect(0, kPages, Prot::kReadWrite);
  for (PageId p = 0; p < kPages; ++p) {
    ASSERT_EQ(Read(e.app(p)), p % 2 == 0 ? 5 : 0) << "page " << p;
    Write(e.app(p) + 1, 6);
  }
  EXPECT_EQ(e.handler.calls, 0);
  e.trap->TEST_ForgetHints();
  e.Protect(0, kPages, Prot::kRead);
  for (PageId p = 0; p < kPages; ++p) ASSERT_EQ(Read(e.app(p) + 1), 6);
  EXPECT_EQ(e.handler.calls, 0);
  for (PageId p = 0; p < kPages; p += 7) Write(e.app(p) + 2, 7);  // read-only again
  EXPECT_EQ(e.handler.writes, int((kPages + 6) / 7));
  EXPECT_EQ(e.handler.calls, e.handler.writes.load());
}

void ManyThreadsOnePage(Env& e) {
  constexpr int kThreads = 8;
  std::atomic<int> ready{0};
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      if (Read(e.app(11) + 77) == Pattern(11)) ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  e.WaitForHandler();
  EXPECT_EQ(ok, kThreads);
  EXPECT_EQ(e.handler.installs, 1);
  EXPECT_GE(e.handler.calls, 1);
  EXPECT_LE(e.handler.calls, kThreads);
  EXPECT_EQ(e.stats().faults, uint64_t(e.handler.calls));
  EXPECT_EQ(e.handler.writes, 0);
}

// Fill installs pages that have no frame, mapped with the protection asked,
// without a fault; a backend that cannot (kMprotect) installs none.
void FillInstallsFreshPages(Env& e) {
  const size_t page = e.region->page_size();
  std::vector<char> src(4 * page);
  for (PageId i = 0; i < 4; ++i) std::memset(src.data() + i * page, Pattern(10 + i), page);
  const size_t filled = e.trap->Fill(10, 4, src.data(), Prot::kRead);
  if (e.backend == Backend::kMprotect) {
    EXPECT_EQ(filled, 0u);
    EXPECT_EQ(e.trap->prot(10), Prot::kNone);
    EXPECT_EQ(Read(e.app(10)), Pattern(10));  // the handler installs it
    EXPECT_EQ(e.handler.calls, 1);
    return;
  }
  ASSERT_EQ(filled, 4u);
  for (PageId p = 10; p < 14; ++p) {
    e.handler.installed[p] = true;
    EXPECT_EQ(e.trap->prot(p), Prot::kRead);
    EXPECT_EQ(Read(e.app(p)), Pattern(p));
    EXPECT_EQ(Read(e.app(p) + page - 1), Pattern(p));
    EXPECT_EQ(uint8_t(e.proto(p)[100]), Pattern(p));  // the frame is the memfd's
  }
  EXPECT_EQ(e.handler.calls, 0);
  EXPECT_EQ(e.stats().pages_filled, 4u);
  Write(e.app(12) + 5, 99);  // read: a write still traps
  EXPECT_EQ(e.handler.writes, 1);
  EXPECT_EQ(uint8_t(e.proto(12)[5]), 99);
  EXPECT_EQ(e.trap->Fill(20, 1, src.data(), Prot::kReadWrite), 1u);
  Write(e.app(20) + 7, 98);  // read-write: no fault
  EXPECT_EQ(e.handler.calls, 1);
  EXPECT_EQ(uint8_t(e.proto(20)[7]), 98);
  EXPECT_EQ(e.trap->Fill(30, 1, src.data(), Prot::kNone), 0u);  // not a protection it maps
  EXPECT_EQ(e.trap->Fill(kPages - 1, 2, src.data(), Prot::kRead), 0u);  // beyond the region
}

// Fill stops before a page whose frame exists, leaving it and the pages
// after it as they were.
void FillStopsAtAFrame(Env& e) {
  const size_t page = e.region->page_size();
  std::vector<char> src(4 * page, 5);
  std::memset(e.proto(22), 6, page);  // page 22 has a frame, never mapped
  e.handler.installed[22] = true;
  EXPECT_EQ(e.trap->Fill(20, 4, src.data(), Prot::kRead), 2u);
  EXPECT_EQ(e.trap->prot(21), Prot::kRead);
  EXPECT_EQ(e.trap->prot(22), Prot::kNone);
  EXPECT_EQ(e.trap->prot(23), Prot::kNone);
  EXPECT_EQ(Read(e.app(21)), 5);
  EXPECT_EQ(e.handler.calls, 0);
  EXPECT_EQ(Read(e.app(22)), 6);  // faults, and keeps its frame
  EXPECT_EQ(e.handler.calls, 1);
  EXPECT_EQ(Read(e.app(23)), Pattern(23));
  EXPECT_EQ(e.handler.calls, 2);
  EXPECT_EQ(e.stats().pages_filled, 2u);
}

// Threads faulting on one fresh page at once, installed by Fill: the first
// fills it and wakes the others (uffd-thread: they sleep in the kernel).
void ManyThreadsFillOnePage(Env& e) {
  e.handler.by_fill = true;
  ManyThreadsOnePage(e);
  if (e.backend != Backend::kMprotect) {
    EXPECT_EQ(e.stats().pages_filled, 1u);
  }
}

void ManyThreadsManyPages(Env& e) {
  constexpr int kThreads = 4, kEach = int(kPages) / kThreads;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        char* p = e.app(PageId(t * kEach + i));
        if (Read(p) != Pattern(PageId(t * kEach + i))) bad.fetch_add(1);
        Write(p + 1, uint8_t(t));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad, 0);
  // Each page: one read fault, then one write fault on the read-only page.
  EXPECT_EQ(e.handler.reads, int(kPages));
  EXPECT_EQ(e.handler.writes, int(kPages));
  EXPECT_EQ(e.stats().faults, 2 * kPages);
  for (PageId p = 0; p < kPages; ++p) EXPECT_EQ(e.proto(p)[1], char(p / kEach));
}

void MappingLostBehindTheTrapsBack(Env& e) {
  // The kernel may drop a PTE on its own (reclaim). Simulate it: the access
  // faults although the trap thinks the page is read-write; the handler
  // calls Protect again, which maps it.
  Write(e.app(6), 1);
  ASSERT_EQ(e.handler.calls, 1);
  ASSERT_EQ(madvise(e.app(6), e.region->page_size(), MADV_DONTNEED), 0);
  Write(e.app(6) + 1, 2);
  EXPECT_EQ(e.handler.calls, 2);
  EXPECT_EQ(e.proto(6)[0], 1);
  EXPECT_EQ(e.proto(6)[1], 2);
  Write(e.app(6) + 2, 3);
  EXPECT_EQ(e.handler.calls, 2);
}

void PrefaultMakesReadSyscallWork(Env& e) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const char msg[] = "from a pipe";
  ASSERT_EQ(write(fds[1], msg, sizeof(msg)), ssize_t(sizeof(msg)));
  char* dst = e.app(12) + 4090;  // straddles pages 12 and 13
  Prefault(dst, sizeof(msg), Access::kWrite);
  EXPECT_EQ(e.handler.writes, 2);
  EXPECT_EQ(read(fds[0], dst, sizeof(msg)), ssize_t(sizeof(msg))) << strerror(errno);
  EXPECT_EQ(std::memcmp(e.proto(12) + 4090, msg, 6), 0);
  EXPECT_EQ(std::memcmp(e.proto(13), msg + 6, sizeof(msg) - 6), 0);
  EXPECT_EQ(e.handler.calls, 2);
  // write(2) from a "none" page, prefaulted for reading.
  e.Protect(12, 2, Prot::kNone);
  Prefault(dst, sizeof(msg), Access::kRead);
  EXPECT_EQ(e.handler.reads, 2);
  EXPECT_EQ(write(fds[1], dst, sizeof(msg)), ssize_t(sizeof(msg))) << strerror(errno);
  char back[sizeof(msg)];
  EXPECT_EQ(read(fds[0], back, sizeof(back)), ssize_t(sizeof(back)));
  EXPECT_STREQ(back, msg);
  close(fds[0]);
  close(fds[1]);
}

void SyscallWithoutPrefault(Env& e) {
  // What the runtime must work around: under uffd and mprotect a system call
  // into a page the program may not access fails with EFAULT. uffd-thread
  // resolves it on the handler thread.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "abc", 3), 3);
  errno = 0;
  ssize_t n = read(fds[0], e.app(14), 3);
  if (NeedsPrefault(e.backend)) {
    EXPECT_EQ(n, -1);
    EXPECT_EQ(errno, EFAULT);
    EXPECT_EQ(e.handler.calls, 0);
  } else {
    EXPECT_EQ(n, 3);
    EXPECT_EQ(std::memcmp(e.proto(14), "abc", 3), 0);
    EXPECT_EQ(e.handler.writes, 1);
  }
  close(fds[0]);
  close(fds[1]);
}

int RegionVmas(Env& e) {
  return CountMappings(uintptr_t(e.region->app()), uintptr_t(e.region->app()) + e.region->size());
}

void MprotectCoalescesRuns(Env& e) {
  EXPECT_EQ(RegionVmas(e), 1);
  // The default budget stays well below vm.max_map_count.
  const long limit = ReadMaxMapCount();
  EXPECT_LE(long(e.stats().vma_budget), limit - std::max(limit / 8, 256L));
  EXPECT_GT(e.stats().vma_budget, uint64_t(kPages));
  for (PageId p = 0; p < kPages; p += 2) e.Protect(p, 1, Prot::kRead);
  EXPECT_EQ(RegionVmas(e), int(kPages));
  EXPECT_EQ(e.stats().region_vmas, kPages);
  for (PageId p = 1; p < kPages; p += 2) e.Protect(p, 1, Prot::kRead);
  EXPECT_EQ(RegionVmas(e), 1);  // all read: merged back into one
  e.Protect(0, kPages, Prot::kNone);
  EXPECT_EQ(RegionVmas(e), 1);
  // Random protections: the trap's count always matches the kernel's.
  std::mt19937 rng(12345);
  for (int i = 0; i < 300; ++i) {
    PageId first = rng() % kPages;
    size_t n = 1 + rng() % std::min<size_t>(4, kPages - first);
    e.Protect(first, n, Prot(rng() % 3));
    ASSERT_EQ(uint64_t(RegionVmas(e)), e.stats().region_vmas) << "step " << i;
  }
  e.Protect(0, kPages, Prot::kReadWrite);
  EXPECT_EQ(RegionVmas(e), 1);
  EXPECT_EQ(e.stats().region_vmas, 1u);
}

void MprotectVmaBudget(Env& e) {
  // Reopen with a budget of 9 VMAs.
  e.trap.reset();
  TrapOptions options;
  options.max_vmas = 9;
  ASSERT_TRUE(FaultTrap::Open(e.backend, e.region.get(), &e.handler, &e.trap, options).ok());
  e.handler.trap = e.trap.get();
  EXPECT_EQ(e.stats().vma_budget, 9u);
  for (PageId p = 1; p <= 7; p += 2) e.Protect(p, 1, Prot::kRead);  // 9 runs
  EXPECT_EQ(RegionVmas(e), 9);
  EXPECT_EQ(e.trap->Protect(9, 1, Prot::kRead), ENOSPC);
  Status s = e.trap->ProtectStatus(9, 1, Prot::kRead);
  EXPECT_EQ(s.code(), Status::Code::kOutOfRange);
  EXPECT_NE(s.message().find("11 VMAs, over its budget of 9"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("vm.max_map_count"), std::string::npos) << s.message();
  EXPECT_EQ(e.trap->prot(9), Prot::kNone);  // refused: nothing changed
  EXPECT_EQ(RegionVmas(e), 9);
  // A change that merges runs is still allowed.
  e.Protect(2, 1, Prot::kRead);
  EXPECT_EQ(RegionVmas(e), 7);
  EXPECT_EQ(e.stats().region_vmas, 7u);
}

void OneTrapPerRegion(Env& e) {
  std::unique_ptr<FaultTrap> second;
  Status s = FaultTrap::Open(e.backend, e.region.get(), &e.handler, &second);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(e.trap->Protect(kPages, 1, Prot::kRead), EINVAL);
  EXPECT_EQ(e.trap->Protect(0, 0, Prot::kRead), EINVAL);
  EXPECT_EQ(e.trap->Protect(kPages - 1, 2, Prot::kRead), EINVAL);
  // Closed and reopened: every page starts as none again, data kept.
  Write(e.app(1), 42);
  e.trap.reset();
  ASSERT_TRUE(FaultTrap::Open(e.backend, e.region.get(), &e.handler, &e.trap).ok());
  e.handler.trap = e.trap.get();
  EXPECT_EQ(Read(e.app(1)), 42);
  EXPECT_EQ(e.handler.calls, 2);
}

// Touches memory outside the region so that it raises `signo`.
[[noreturn]] void FaultOutside(int signo) {
  const size_t page = size_t(getpagesize());
  if (signo == SIGSEGV) {
    void* p = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    Write(static_cast<char*>(p), 1);
  } else {  // SIGBUS: a page past the end of a file
    int fd = memfd_create("svm-empty", MFD_CLOEXEC);
    void* p = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
    (void)Read(static_cast<char*>(p));
  }
  _exit(0);
}

int SignalOf(Backend b) { return b == Backend::kMprotect ? SIGSEGV : SIGBUS; }

void FaultOutsideRegionStillCrashes(Env& e) {
  const int signo = SignalOf(e.backend);
  (void)Read(e.app(0));  // the trap's handler is installed and working
  ASSERT_EQ(e.handler.calls, 1);
  if (kAsan) {
    // ASan's own handler was there before ours, so ours chains to it: it
    // reports the crash and exits instead of dying of the signal.
    EXPECT_DEATH(FaultOutside(signo), "");
  } else {
    // Dies of the signal, saying where (the kernel's default says nothing);
    // the fault signal the backend does not use too.
    const auto report = [](int sig) {
      return sig == SIGSEGV
                 ? "svm: SIGSEGV \\(the mapping forbids the access\\) at 0x[0-9a-f]+, pc 0x[0-9a-f]+ "
                   "in \\[[^]]*fault_test[^]]*\\]; the address is in \\[[0-9a-f]+-[0-9a-f]+ ---p"
                 : "svm: SIGBUS \\(no page behind the address\\) at 0x[0-9a-f]+, pc 0x[0-9a-f]+ "
                   "in \\[[^]]*fault_test[^]]*\\]; the address is in \\[[^]]*/memfd:svm-empty";
    };
    const int other = signo == SIGSEGV ? SIGBUS : SIGSEGV;
    EXPECT_EXIT(FaultOutside(signo), testing::KilledBySignal(signo), report(signo));
    EXPECT_EXIT(FaultOutside(other), testing::KilledBySignal(other), report(other));
  }
}

// A handler that itself touches a protected page of the region: the kernel
// would kill the process with no word (the signal is blocked in its
// handler); svm reports the nested fault, then dies of the signal.
void FaultInsideTheHandlerIsReported(Env& e) {
  if (kAsan) GTEST_SKIP() << "skipped [ASan's handler reports instead]";
  const int signo = SignalOf(e.backend);
  class Nested : public FaultHandler {
   public:
    explicit Nested(Region* r) : region_(r) {}
    void OnFault(PageId, Access) override { (void)Read(region_->AppPage(7)); }

   private:
    Region* region_;
  };
  EXPECT_EXIT(
      {
        Nested nested(e.region.get());
        e.trap.reset();
        if (!FaultTrap::Open(e.backend, e.region.get(), &nested, &e.trap).ok()) _exit(3);
        (void)Read(e.app(3));
        _exit(0);
      },
      testing::KilledBySignal(signo), "inside svm's handler of another fault, pc 0x[0-9a-f]+");
}

void SigUserHandler(int, siginfo_t* info, void*) {
  // Exit status 42 + whether the address was the one faulted on (the page
  // was made by FaultOutside; just check it is not in the region).
  _exit(uintptr_t(info->si_addr) - kBase < kPages * 4096 ? 1 : 42);
}

void ChainsToThePreviousHandler(Env& e) {
  // Runs in a fresh process (threadsafe death test, and no region or trap
  // set up by the table: kOwnSetup), so that the program's handler is
  // installed before the trap's.
  const int signo = SignalOf(e.backend);
  const Backend backend = e.backend;
  EXPECT_EXIT(
      {
        struct sigaction sa {};
        sa.sa_sigaction = SigUserHandler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(signo, &sa, nullptr);
        Env fresh;
        fresh.backend = backend;
        if (!Region::Create({kBase, kPages * 4096}, &fresh.region).ok()) _exit(2);
        fresh.handler.region = fresh.region.get();
        if (!FaultTrap::Open(backend, fresh.region.get(), &fresh.handler, &fresh.trap).ok()) {
          _exit(3);
        }
        fresh.handler.trap = fresh.trap.get();
        if (Read(fresh.app(0)) != Pattern(0)) _exit(4);
        FaultOutside(signo);
      },
      testing::ExitedWithCode(42), "");
}

// --- the table ------------------------------------------------------------------

constexpr unsigned kUffdSig = 1u << int(Backend::kUffd);
constexpr unsigned kUffdThr = 1u << int(Backend::kUffdThread);
constexpr unsigned kMprot = 1u << int(Backend::kMprotect);
constexpr unsigned kAny = kUffdSig | kUffdThr | kMprot;
constexpr unsigned kSignals = kUffdSig | kMprot;  // backends that handle a signal

enum Need : unsigned {
  kExactAccess = 1,  // the fault says read or write (x86-64 error code)
  kDeathTests = 2,
  kOwnSetup = 4,     // the case makes its own region and trap
};

struct Case {
  const char* name;
  unsigned backends;
  unsigned needs;
  void (*run)(Env&);
};

const Case kCases[] = {
    {"ReadFaultOnNone", kAny, 0, ReadFaultOnNone},
    {"WriteFaultOnReadOnly", kAny, 0, WriteFaultOnReadOnly},
    {"WriteFaultOnNone", kAny, kExactAccess, WriteFaultOnNone},
    {"DowngradeToNone", kAny, kExactAccess, DowngradeToNone},
    {"NeverWrittenPageIsZero", kAny, 0, NeverWrittenPageIsZero},
    {"FirstTouchesInARowStayInTheRegion", kAny, 0, FirstTouchesInARowStayInTheRegion},
    {"InterleavedFirstTouchSweepsEachFillAhead", kAny, 0, InterleavedFirstTouchSweepsEachFillAhead},
    {"DroppedPageRefaults", kAny, 0, DroppedPageRefaults},
    {"ProtectRanges", kAny, kExactAccess, ProtectRanges},
    {"ProtectWithStaleHints", kAny, kExactAccess, ProtectWithStaleHints},
    {"ManyThreadsOnePage", kAny, 0, ManyThreadsOnePage},
    {"ManyThreadsManyPages", kAny, kExactAccess, ManyThreadsManyPages},
    {"FillInstallsFreshPages", kAny, kExactAccess, FillInstallsFreshPages},
    {"FillStopsAtAFrame", kUffdSig | kUffdThr, 0, FillStopsAtAFrame},
    {"ManyThreadsFillOnePage", kAny, 0, ManyThreadsFillOnePage},
    {"MappingLostBehindTheTrapsBack", kUffdSig | kUffdThr, kExactAccess,
     MappingLostBehindTheTrapsBack},
    {"PrefaultMakesReadSyscallWork", kAny, kExactAccess, PrefaultMakesReadSyscallWork},
    {"SyscallWithoutPrefault", kAny, kExactAccess, SyscallWithoutPrefault},
    {"MprotectCoalescesRuns", kMprot, 0, MprotectCoalescesRuns},
    {"MprotectVmaBudget", kMprot, 0, MprotectVmaBudget},
    {"OneTrapPerRegion", kAny, kExactAccess, OneTrapPerRegion},
    {"FaultOutsideRegionStillCrashes", kSignals, kDeathTests, FaultOutsideRegionStillCrashes},
    {"FaultInsideTheHandlerIsReported", kSignals, kDeathTests, FaultInsideTheHandlerIsReported},
    {"ChainsToThePreviousHandler", kSignals, kDeathTests | kOwnSetup,
     ChainsToThePreviousHandler},
};

struct Param {
  const Case* c;
  Backend backend;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.c->name << "/" << ToString(p.backend); }

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (const Case& c : kCases) {
    for (Backend b : kAllBackends) {
      if (c.backends & (1u << int(b))) out.push_back({&c, b});
    }
  }
  return out;
}

class FaultCase : public testing::TestWithParam<Param> {};

TEST_P(FaultCase, Run) {
  const Case& c = *GetParam().c;
  Env e;
  e.backend = GetParam().backend;
  if (Status s = Probe(e.backend); !s.ok()) {
    GTEST_SKIP() << "skipped [" << ToString(e.backend) << ": " << s.message() << "]";
  }
#if !defined(__x86_64__)
  if (c.needs & kExactAccess) GTEST_SKIP() << "skipped [fault error code is x86-64 only]";
#endif
  if (c.needs & kDeathTests) GTEST_FLAG_SET(death_test_style, "threadsafe");
  if (c.needs & kOwnSetup) {
    c.run(e);
    return;
  }

  Status s = Region::Create({kBase, kPages * 4096, "svm-fault-test"}, &e.region);
  ASSERT_TRUE(s.ok()) << s.ToString();
  e.handler.region = e.region.get();
  s = FaultTrap::Open(e.backend, e.region.get(), &e.handler, &e.trap);
  ASSERT_TRUE(s.ok()) << s.ToString();
  e.handler.trap = e.trap.get();
  c.run(e);
  e.trap.reset();  // before the region and the handler
}

INSTANTIATE_TEST_SUITE_P(Table, FaultCase, testing::ValuesIn(AllParams()),
                         [](const testing::TestParamInfo<Param>& info) {
                           std::string name = info.param.c->name;
                           name += "_";
                           for (const char* p = ToString(info.param.backend); *p; ++p) {
                             name += *p == '-' ? '_' : *p;
                           }
                           return name;
                         });

}  // namespace
}  // namespace svm::prim

namespace svm::prim {
namespace {

// The kernel's part of a fault is measured on every backend this machine
// has, leaving the runtime's own regions alone (a scratch page of its own).
TEST(FaultDelivery, MeasuredOnEveryBackend) {
  for (Backend b : kAllBackends) {
    if (!Probe(b).ok()) continue;  // the table above reports why
    uint64_t ns = 0;
    Status s = MeasureFaultDelivery(b, 11, &ns);
    ASSERT_TRUE(s.ok()) << ToString(b) << ": " << s.ToString();
    EXPECT_GT(ns, 0u) << ToString(b);
    EXPECT_LT(ns, 1'000'000'000u) << ToString(b);
  }
}

}  // namespace
}  // namespace svm::prim

namespace svm::prim {
namespace {

// Async writes (uffd backends): writes to read pages go through with no
// fault; FindWritten returns exactly the pages written since they were last
// set to read or found, and arms them again.
TEST(AsyncWrites, FoundWithoutFaultsAndRearmed) {
  for (Backend b : kAllBackends) {
    SCOPED_TRACE(ToString(b));
    if (Status s = ProbeAsyncWrites(b); !s.ok()) {
      if (b == Backend::kMprotect) {
        std::unique_ptr<Region> region;
        ASSERT_TRUE(Region::Create({kBase, kPages * 4096, "svm-fault-test"}, &region).ok());
        TestHandler handler;
        std::unique_ptr<FaultTrap> trap;
        TrapOptions options;
        options.async_writes = true;
        EXPECT_FALSE(FaultTrap::Open(b, region.get(), &handler, &trap, options).ok());
      }
      continue;
    }
    Env e;
    e.backend = b;
    ASSERT_TRUE(Region::Create({kBase, kPages * 4096, "svm-fault-test"}, &e.region).ok());
    e.handler.region = e.region.get();
    TrapOptions options;
    options.async_writes = true;
    Status s = FaultTrap::Open(b, e.region.get(), &e.handler, &e.trap, options);
    ASSERT_TRUE(s.ok()) << s.ToString();
    e.handler.trap = e.trap.get();
    ASSERT_TRUE(e.trap->async_writes());

    // A page Fill installed read is armed like one Protect set read: its
    // writes go through and are found.
    std::vector<PageId> found;
    std::vector<char> src(2 * e.region->page_size(), 7);
    ASSERT_EQ(e.trap->Fill(40, 2, src.data(), Prot::kRead), 2u);
    Write(e.app(41) + 1, 8);
    EXPECT_EQ(e.handler.calls, 0);
    ASSERT_EQ(e.trap->FindWritten(40, 2, &found), 0);
    EXPECT_EQ(found, (std::vector<PageId>{41}));
    EXPECT_EQ(Read(e.app(40)), 7);

    found.clear();
    e.Protect(0, kPages, Prot::kRead);
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_TRUE(found.empty());

    Write(e.app(2) + 5, 1);
    Write(e.app(3), 2);
    Write(e.app(9) + 4095, 3);
    EXPECT_EQ(e.handler.calls, 0);  // no fault for any of them
    EXPECT_EQ(e.proto(9)[4095], 3);
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_EQ(found, (std::vector<PageId>{2, 3, 9}));

    // Re-armed: nothing new until the next write; a range sees only its own.
    found.clear();
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_TRUE(found.empty());
    Write(e.app(3), 4);
    Write(e.app(10), 5);
    ASSERT_EQ(e.trap->FindWritten(4, 7, &found), 0);
    EXPECT_EQ(found, (std::vector<PageId>{10}));
    found.clear();
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_EQ(found, (std::vector<PageId>{3}));

    // Setting read again (a fault that raced with another thread's, whose
    // handler re-installs the page) keeps the record, whatever the hints say.
    found.clear();
    Write(e.app(12), 8);
    Write(e.app(13), 9);
    e.Protect(12, 2, Prot::kRead);
    e.trap->TEST_ForgetHints();
    e.Protect(13, 1, Prot::kRead);
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_EQ(found, (std::vector<PageId>{12, 13}));
    EXPECT_EQ(Read(e.app(13)), 9);
    // From read-write, read arms the record afresh.
    found.clear();
    e.Protect(14, 1, Prot::kReadWrite);
    Write(e.app(14), 1);
    e.Protect(14, 1, Prot::kRead);
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_TRUE(found.empty());

    // A page dropped (none) and written again faults, and is found written.
    found.clear();
    e.Protect(6, 1, Prot::kNone);
    Write(e.app(6), 6);
    EXPECT_EQ(e.handler.calls, 1);
    EXPECT_EQ(e.trap->prot(6), Prot::kReadWrite);
    e.Protect(6, 1, Prot::kRead);
    Write(e.app(6), 7);
    ASSERT_EQ(e.trap->FindWritten(0, kPages, &found), 0);
    EXPECT_EQ(found, (std::vector<PageId>{6}));
    EXPECT_EQ(e.stats().pages_written, 9u);
    EXPECT_EQ(e.trap->FindWritten(0, 0, &found), EINVAL);
    e.trap.reset();
  }
}

}  // namespace
}  // namespace svm::prim
