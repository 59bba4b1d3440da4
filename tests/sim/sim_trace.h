// TraceRing: the last events of a simulated execution, for failure reports.
//
// Events are small fixed records (formatted only when asked), kept in a ring
// of bounded size; optionally each one is also printed to stderr as it
// happens (sim_replay --trace). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace svm::sim {

enum class Ev : uint8_t {
  kFault,    // a = thread, x = page, y = access, z = outcome
  kAcquire,  // a = thread, x = lock, z = outcome
  kRelease,  // a = thread, x = lock
  kBarrier,  // a = thread, x = barrier, z = outcome
  kRead,     // a = thread, b = op index, x = addr, y = len
  kWrite,    // a = thread, b = op index, x = addr, y = len
  kDeliver,  // a = from, b = to, x = message type, y = bytes
  kWake,     // a = node, b = local thread
  kSignal,   // a = thread, x = flag
  kAwait,    // a = thread, x = flag, z = 1 if it must wait
  kOneSided, // a = from, b = to, x = page or lock, z = EventKind
  kPoll,     // a = node, z = 1 if it still needs polling afterwards
  kLife,     // a = thread, x = other thread, z = OpKind (Spawn, Exit, Join), y = 1 if it must wait
  kGiveUp,   // a = node: it reports the arrivals it held back (the runtime's kGatherNs)
};

struct TraceEvent {
  uint64_t step = 0;
  Ev ev = Ev::kFault;
  uint32_t a = 0;
  uint32_t b = 0;
  uint64_t x = 0;
  uint64_t y = 0;
  uint8_t z = 0;
};

class TraceRing {
 public:
  TraceRing(size_t capacity, uint32_t threads_per_node, bool echo);

  void Add(const TraceEvent& e);
  // The last `n` events, oldest first, one per line.
  std::string Tail(size_t n) const;
  std::string Format(const TraceEvent& e) const;

 private:
  std::vector<TraceEvent> ring_;
  size_t next_ = 0;
  size_t size_ = 0;
  uint32_t per_node_;
  bool echo_;
};

}  // namespace svm::sim
