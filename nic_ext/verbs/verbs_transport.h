// Verbs transport: RDMA RC queue pairs set up with librdmacm (DESIGN.md,
// nic_ext/ `verbs`). Skeleton: it compiles and links everywhere the verbs
// libraries exist, but has only ever run where an RDMA device is present
// (none here). READ, WRITE, CAS and FAA map onto the hardware verbs; the lock
// extension is a ticket lock built on remote atomics of an internal lock
// region at the target (FAA on `next`, then READ of `serving` until it equals
// the ticket; UNLOCK is FAA on `serving`): FIFO, with no help from the
// target's CPU. SEND uses pre-posted receive buffers.
//
// Stricter limits than transport.h: SEND <= kVerbsMaxMessage; local buffers of
// WRITE, READ and SEND must lie in a region registered with this Nic (so the
// HCA can reach them; Post refuses others); lock ids < kVerbsMaxLocks.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "nic_ext/transport.h"

namespace svm::nic {

inline constexpr uint32_t kVerbsMaxMessage = 64 << 10;
inline constexpr uint32_t kVerbsRecvDepth = 64;      // receive buffers per QP
inline constexpr uint32_t kVerbsSendDepth = 256;     // send queue depth per QP
inline constexpr uint32_t kVerbsMaxLocks = 1u << 16;
inline constexpr uint32_t kVerbsCqDepth = 4096;
static_assert(kVerbsMaxMessage <= kMaxMessage && kVerbsMaxLocks <= kMaxLocks);

struct VerbsOptions {
  NodeId self = 0;
  uint32_t num_nodes = 1;
  std::string listen = "0.0.0.0:0";
  uint32_t epoch = 0;
  WaitPolicy recv_policy;
  std::chrono::milliseconds setup_timeout{20'000};
};

// Ok if at least one RDMA device is visible; otherwise Unsupported naming why.
Status ProbeRdmaDevice();

class VerbsNic : public Nic {
 public:
  static Status Create(const VerbsOptions& options, std::unique_ptr<VerbsNic>* out);
  virtual std::string listen_address() const = 0;

 protected:
  using Nic::Nic;
};

}  // namespace svm::nic
