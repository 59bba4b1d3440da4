// Fake transport: every node in one process, for tests (always built).
//
// A FakeFabric joins the Nics made from it. Work requests execute
// synchronously inside Post, under the fabric's one mutex: one-sided ops are
// memcpy / atomics on the peer's registered regions, checked like the real
// backends; SEND pushes onto the peer's receive queue; LOCK and UNLOCK use the
// peer's LockTable. So FIFO per pair holds trivially. Posting to a node that
// was shut down (or never made) completes kFlushed.
// Thread-safe: any thread may post on any Nic.
#pragma once

#include <memory>

#include "nic_ext/transport.h"

namespace svm::nic {

class FakeFabric;

// One fabric per simulated cluster of `num_nodes` nodes.
std::shared_ptr<FakeFabric> MakeFakeFabric(uint32_t num_nodes);

// The Nic of node `self` on the fabric. REQUIRES: self < num_nodes, no live
// Nic of that node on the fabric.
std::unique_ptr<Nic> MakeFakeNic(std::shared_ptr<FakeFabric> fabric, NodeId self,
                                 WaitPolicy recv_policy = {});

}  // namespace svm::nic
