// OFI transport: the verbs-shaped NIC over libfabric RDM endpoints (DESIGN.md,
// nic_ext/ `ofi`; doc/ofi.md). The same code runs over every provider that
// offers FI_MSG, FI_RMA and 8-byte FI_ATOMIC on FI_EP_RDM: tcp;ofi_rxm and
// shm here, verbs;ofi_rxm, efa, cxi, opx on clusters.
//
// READ/WRITE are fi_read/fi_write straight into the peer's registered
// regions, CAS/FAA fi_compare_atomic/fi_fetch_atomic; the target's CPU never
// sees them (the provider's progress engine serves them: with manual
// progress that is this Nic's progress thread, or a thread waiting on a
// queue). SEND is fi_send into receive buffers pre-posted at the target, with
// credits per pair. LOCK/UNLOCK are a ticket lock on remote atomics of an
// internal lock region at the home (as on verbs), plus an owner word so that
// an UNLOCK by a non-holder fails.
//
// Ordering: a WR to a peer is issued once every WR posted to that peer before
// it has completed (a software fence: providers order few operation pairs,
// e.g. tcp;ofi_rxm does not order a SEND behind a WRITE), except that a run
// of READs goes out together; completions are held back to posting order.
// So the per-pair FIFO of transport.h holds on every provider; the price is
// a round trip per WR to the same peer (per run, for READs), none across
// peers.
//
// When all kMaxOutstanding slots are taken, Post waits (reading the CQ) for
// some to free, up to setup_timeout, before it answers OutOfRange: WRs to a
// peer drain one at a time, so bursts queue deeper than on tcp.
//
// Shutdown stops the progress thread and flushes; the endpoint closes in the
// destructor (shm peers in the same process map our region through our own
// mapping): stop every Nic of a process before destroying any.
//
// Stricter limits than transport.h: SEND <= kOfiMaxMessage. Where the provider needs local buffers registered
// (FI_MR_LOCAL: verbs, efa) a buffer outside the registered regions is
// registered for the one WR.
//
// A Nic learns of a peer's end from its goodbye message (Shutdown) or from a
// provider error on an operation to it; from then on its WRs to that peer
// complete kFlushed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "nic_ext/transport.h"

namespace svm::nic {

inline constexpr uint32_t kOfiMaxMessage = 64 << 10;  // SEND payload bytes
inline constexpr uint32_t kOfiCredits = 32;           // SENDs in flight per ordered pair
inline constexpr uint32_t kOfiMaxLocks = kMaxLocks;  // lock words are mapped lazily
static_assert(kOfiMaxMessage <= kMaxMessage && kOfiMaxLocks <= kMaxLocks);

struct OfiOptions {
  NodeId self = 0;
  uint32_t num_nodes = 1;
  std::string provider;   // e.g. "tcp;ofi_rxm", "shm"; empty: libfabric's first choice
  std::string source;     // IP providers: the local address to bind; empty: the first interface
  uint32_t epoch = 0;     // job epoch; messages of another epoch are dropped
  uint64_t key_salt = 0;  // mixed into the memory keys this Nic asks for
  // The fabric authorisation key (domain_attr->auth_key) where the provider
  // takes one of this size; empty: none. The runtime derives it from the job
  // key. A provider that ignores it, or refuses a key of this size, runs
  // without one (auth_key_applied() says which).
  std::vector<uint8_t> auth_key;
  WaitPolicy recv_policy;
  std::chrono::milliseconds setup_timeout{20'000};
  // The progress thread keeps reading its CQ this long after the last work
  // before it sleeps (SVM_OFI_SPIN_US overrides): peers' one-sided
  // operations are served only while it does (doc/ofi.md, Waiting).
  std::chrono::microseconds idle_spin{50};
};

// Ok if `provider` (empty: any) offers what this backend needs; otherwise
// Unsupported with one line naming what is missing. *name gets the provider
// actually chosen ("tcp;ofi_rxm").
Status ProbeOfi(const std::string& provider, std::string* name = nullptr);

class OfiNic : public Nic {
 public:
  // Opens the fabric, domain and endpoint. The endpoint's name is known from
  // here on: listen_address() is what the peers pass to Connect.
  static Status Create(const OfiOptions& options, std::unique_ptr<OfiNic>* out);

  // "ofi:" + the endpoint name in hex. Connect accepts these in place of
  // "host:port".
  virtual std::string listen_address() const = 0;
  // The provider in use, e.g. "tcp;ofi_rxm".
  virtual std::string provider() const = 0;
  // Whether the provider took OfiOptions::auth_key.
  virtual bool auth_key_applied() const = 0;

 protected:
  using Nic::Nic;
};

}  // namespace svm::nic
