#include "tests/sim/sim_trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "protocol/messages.h"
#include "protocol/node.h"
#include "protocol/types.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_program.h"

namespace svm::sim {

TraceRing::TraceRing(size_t capacity, uint32_t threads_per_node, bool echo)
    : ring_(std::max<size_t>(capacity, 1)), per_node_(threads_per_node), echo_(echo) {}

void TraceRing::Add(const TraceEvent& e) {
  ring_[next_] = e;
  next_ = (next_ + 1) % ring_.size();
  size_ = std::min(size_ + 1, ring_.size());
  if (echo_) std::fprintf(stderr, "%s\n", Format(e).c_str());
}

std::string TraceRing::Tail(size_t n) const {
  n = std::min(n, size_);
  std::string s;
  for (size_t k = n; k > 0; --k) {
    s += "  " + Format(ring_[(next_ + ring_.size() - k) % ring_.size()]) + "\n";
  }
  return s;
}

std::string TraceRing::Format(const TraceEvent& e) const {
  auto thread = [&](uint32_t g) {
    return "n" + std::to_string(g / per_node_) + ".t" + std::to_string(g % per_node_);
  };
  auto outcome = [](uint8_t z) { return z == 0 ? "done" : "blocked"; };
  char buf[200];
  switch (e.ev) {
    case Ev::kFault:
      std::snprintf(buf, sizeof buf, "%s Fault(page %" PRIu64 ", %s) -> %s", thread(e.a).c_str(),
                    e.x, ToString(static_cast<Access>(e.y)), outcome(e.z));
      break;
    case Ev::kAcquire:
      std::snprintf(buf, sizeof buf, "%s Acquire(%" PRIu64 ") -> %s", thread(e.a).c_str(), e.x,
                    outcome(e.z));
      break;
    case Ev::kRelease:
      std::snprintf(buf, sizeof buf, "%s Release(%" PRIu64 ")", thread(e.a).c_str(), e.x);
      break;
    case Ev::kBarrier:
      std::snprintf(buf, sizeof buf, "%s Barrier(%" PRIu64 ") -> %s", thread(e.a).c_str(), e.x,
                    outcome(e.z));
      break;
    case Ev::kRead:
    case Ev::kWrite:
      std::snprintf(buf, sizeof buf, "%s op %u %s @0x%" PRIx64 " len %" PRIu64, thread(e.a).c_str(),
                    e.b, e.ev == Ev::kRead ? "read" : "write", e.x, e.y);
      break;
    case Ev::kDeliver: {
      const auto type = static_cast<MessageType>(e.x);
      std::snprintf(buf, sizeof buf, "deliver n%u -> n%u %s (%" PRIu64 " bytes)", e.a, e.b,
                    IsValid(type) ? ToString(type) : "?", e.y);
      break;
    }
    case Ev::kWake:
      std::snprintf(buf, sizeof buf, "wake n%u.t%u", e.a, e.b);
      break;
    case Ev::kSignal:
      std::snprintf(buf, sizeof buf, "%s signal %" PRIu64, thread(e.a).c_str(), e.x);
      break;
    case Ev::kAwait:
      std::snprintf(buf, sizeof buf, "%s await %" PRIu64 "%s", thread(e.a).c_str(), e.x,
                    e.z ? " (waits)" : "");
      break;
    case Ev::kOneSided: {
      const auto kind = static_cast<EventKind>(e.z);
      const bool lock = kind == EventKind::kLockSwap || kind == EventKind::kLockSwapped;
      std::snprintf(buf, sizeof buf, "nic n%u -> n%u %s (%s %" PRIu64 ")", e.a, e.b,
                    ToString(kind), lock ? "lock" : "page", e.x);
      break;
    }
    case Ev::kPoll:
      std::snprintf(buf, sizeof buf, "poll n%u%s", e.a, e.z ? " (still waiting)" : "");
      break;
    case Ev::kGiveUp:
      std::snprintf(buf, sizeof buf, "n%u gives up gathering", e.a);
      break;
    case Ev::kLife: {
      const auto kind = static_cast<OpKind>(e.z);
      const std::string other = kind == OpKind::kExit ? "" : " " + thread(uint32_t(e.x));
      std::snprintf(buf, sizeof buf, "%s %s%s%s", thread(e.a).c_str(), ToString(kind),
                    other.c_str(), e.y ? " (waits)" : "");
      break;
    }
  }
  return "[" + std::to_string(e.step) + "] " + buf;
}

}  // namespace svm::sim
