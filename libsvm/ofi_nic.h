// The NIC of a multi-node job over libfabric (--transport ofi): kept apart
// from Runtime::Connect so that the transport choice there stays one branch.
#pragma once

#include <memory>
#include <string>

#include "control/control_client.h"
#include "libsvm/options.h"
#include "nic_ext/transport.h"
#include "util/status.h"

namespace svm::rt {

// Opens an ofi NIC for this node (provider o->ofi_provider; IP providers bind
// to `source`, this host's address toward the control host) and sets
// *address to what the peers pass to its Connect. Lowers o->max_send to the
// backend's SEND limit (longer messages go as fragments). A provider that
// lacks a capability is refused with one line naming it.
Status MakeOfiNic(Options* o, const svmd::ControlConfig& cc, const std::string& source,
                  std::unique_ptr<nic::Nic>* nic, std::string* address);

}  // namespace svm::rt
