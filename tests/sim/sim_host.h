// SimHost: the svm::Host of one simulated node.
//
// Frames are page_size bytes, zero-initialised, allocated when first touched.
// The application view is modelled as the frame itself plus a protection per
// page (starting at Prot::kNone): simulated threads read and write the frame
// only when the protection allows.
//
// Host calls never re-enter the Node: Send queues on the SimNetwork, Wake
// tells the listener (the simulated threads), which only marks a thread
// runnable. Anything the Node asks that breaks the Host contract (a page out
// of range, a send to itself, a wake of a thread that does not exist) is
// recorded as a contract error for the case to report.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "protocol/host.h"
#include "protocol/types.h"
#include "tests/sim/sim_network.h"

namespace svm::sim {

class WakeListener {
 public:
  virtual ~WakeListener() = default;
  virtual void OnWake(NodeId node, ThreadId t) = 0;
};

class SimHost final : public Host {
 public:
  SimHost(NodeId self, uint32_t threads, uint64_t pages, uint64_t page_size, SimNetwork* network,
          WakeListener* listener);

  // Host.
  void Send(NodeId to, std::vector<uint8_t> bytes) override;
  std::span<uint8_t> Frame(PageId p) override;
  void Protect(PageId p, Prot prot) override;
  void Wake(ThreadId t) override;

  Prot protection(PageId p) const { return prot_[p]; }
  // The frame if it was ever touched, else an empty span (all zero).
  std::span<const uint8_t> PeekFrame(PageId p) const;
  uint64_t pages() const { return pages_; }
  uint64_t page_size() const { return page_size_; }

  // The first contract violation, or empty.
  const std::string& contract_error() const { return contract_error_; }

 private:
  void ContractError(const std::string& what);

  NodeId self_;
  uint32_t threads_;
  uint64_t pages_;
  uint64_t page_size_;
  SimNetwork* network_;
  WakeListener* listener_;
  std::vector<std::unique_ptr<uint8_t[]>> frames_;
  std::vector<Prot> prot_;
  std::unique_ptr<uint8_t[]> scratch_;  // handed out for out-of-range pages
  std::string contract_error_;
};

}  // namespace svm::sim
