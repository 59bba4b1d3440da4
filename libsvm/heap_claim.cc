// Runtime::ClaimHeap: the job-wide break of the shared heap's large area.
//
// Node 0 exports one word, the bytes of the large area claimed so far; any
// node claims a chunk with the NIC's compare-and-swap on it, so a claim is
// one round trip, needs no handler on node 0, and one that does not fit
// takes nothing (a fetch-and-add would move the break past the end and
// starve smaller claims after it).
#include <atomic>

#include "libsvm/runtime.h"
#include "libsvm/thread_state.h"

namespace svm::rt {

bool Runtime::ClaimHeap(uint64_t bytes, uint64_t limit, uint64_t* offset) {
  RuntimeScope scope;
  uint64_t seen = 0;
  if (!nic_) {  // one node: the word is here
    std::atomic_ref<uint64_t> word(*heap_break_);
    seen = word.load(std::memory_order_relaxed);
    do {
      if (seen > limit || bytes > limit - seen) return false;
    } while (!word.compare_exchange_weak(seen, seen + bytes, std::memory_order_relaxed));
    *offset = seen;
    return true;
  }
  for (;;) {
    if (seen > limit || bytes > limit - seen) return false;
    nic::CompletionQueue cq;
    const nic::WorkRequest wr = nic::WorkRequest::Cas(0, kHeapBreak, 0, seen, seen + bytes);
    if (Status st = nic_->Post(&cq, {&wr, 1}); !st.ok()) return false;
    nic::Completion c;
    while (cq.Wait({&c, 1}, std::chrono::seconds(1)) == 0) {
    }
    if (c.status != nic::WcStatus::kSuccess) return false;
    if (c.value == seen) {
      *offset = seen;
      return true;
    }
    seen = c.value;  // another node claimed meanwhile: try on top of it
  }
}

}  // namespace svm::rt
