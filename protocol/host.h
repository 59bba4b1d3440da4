// Host: everything a protocol Node needs from the world, behind one narrow
// interface, so that the runtime (libsvm) and the deterministic simulator
// (tests/sim) can each provide it.
//
// A Node calls these only from inside its own methods. Calls must not re-enter
// the Node (queue a message or a wake-up instead of handling it inline).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "protocol/types.h"

namespace svm {

class Host {
 public:
  virtual ~Host() = default;

  // Sends an encoded message (wire.h) to node `to` != self. Reliable and FIFO
  // per pair of nodes; delivery is asynchronous.
  virtual void Send(NodeId to, std::vector<uint8_t> bytes) = 0;

  // The protocol's view of page p's frame on this node: always readable and
  // writable, whatever the application view's protection. Page-sized.
  virtual std::span<uint8_t> Frame(PageId p) = 0;

  // Sets the protection of page p in the application's view.
  virtual void Protect(PageId p, Prot prot) = 0;

  // Thread t, blocked by an operation that returned Outcome::kBlocked, should
  // retry that operation. A wake may also reach a thread that is not blocked
  // (for instance the caller of the operation that woke it); it must then be
  // harmless: at most one retry that returns kBlocked again.
  virtual void Wake(ThreadId t) = 0;
};

}  // namespace svm
