// Private to libsvm's runtime*.cc / host.cc / threads.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "libsvm/prim/fault.h"
#include "libsvm/prim/region.h"
#include "libsvm/runtime.h"

namespace svm::rt {

// A run of shared memory with its own frames and trap: the heap region, or
// the program's globals. Its pages are [first, first + pages) in the Node.
class Runtime::SegmentHandler final : public prim::FaultHandler {
 public:
  SegmentHandler(Runtime* rt, PageId first) : rt_(rt), first_(first) {}
  void OnFault(PageId page, Access access) override { rt_->OnFault(first_ + page, access); }

 private:
  Runtime* rt_;
  PageId first_;
};

struct Runtime::Segment {
  const char* name = "";
  PageId first = 0;
  std::unique_ptr<prim::Region> region;
  std::unique_ptr<SegmentHandler> handler;
  std::unique_ptr<prim::FaultTrap> trap;
  size_t pages() const { return region->page_count(); }
};

// A program thread hosted by this node.
struct Runtime::ThreadRecord {
  uint64_t handle = 0;
  NodeId creator = 0;  // whose birth lock the thread takes first
  void* (*start)(void*) = nullptr;
  void* arg = nullptr;
  pthread_t thread{};
  void* stack = nullptr;  // in this node's stack window (stacks.h), if svm made it
  size_t stack_size = 0;
  bool done = false;
  bool detached = false;
  void* value = nullptr;
  std::vector<ThreadId> local_joiners;  // slots waiting in JoinThread
  std::vector<NodeId> remote_joiners;   // nodes that sent JoinRequest
};

// Storage whose resize leaves new bytes uninitialised: a work request fills
// them (a page run's READ writes its buffer whole, and zeroing it first was
// a memset of the run before every cold fetch).
template <typename T>
struct UninitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// A one-sided operation in flight (onesided.cc), with the buffers its work
// requests read or fill.
struct Runtime::OneSided {
  enum class Kind : uint8_t { kReadPage, kWriteDiff, kLockClaim, kTailSwap, kNudge, kHomeClaim, kDropMarks };
  Kind kind = Kind::kReadPage;
  NodeId home = 0;
  PageId page = 0;
  uint32_t count = 1;  // kReadPage: pages read, from page on; kHomeClaim: words
  uint32_t stride = 1;  // kReadPage: the pages this far apart
  Host::Landing into;  // kReadPage: where the pages land (buf has the versions, and the pages if kBuffer)
  LockId lock = 0;
  nic::LockNo no = 0;
  uint32_t probes = 0;
  uint64_t expected = 0;  // kTailSwap: the word's value the CAS expects
  uint32_t ahead = 0;     // kHomeClaim: the pages after page to claim once it is won
  bool won = false;       // kHomeClaim: page's CAS won; its claims ahead made or posted
  std::vector<uint8_t, UninitAllocator<uint8_t>> buf;
  IntervalId interval = 0;
};


}  // namespace svm::rt
