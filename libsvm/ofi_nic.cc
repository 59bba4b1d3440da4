#include "libsvm/ofi_nic.h"

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "nic_ext/ofi/ofi_transport.h"

namespace svm::rt {

Status MakeOfiNic(Options* o, const svmd::ControlConfig& cc, const std::string& source,
                  std::unique_ptr<nic::Nic>* nic, std::string* address) {
  nic::OfiOptions oo;
  oo.self = o->node;
  oo.num_nodes = o->nodes;
  oo.epoch = o->epoch;
  oo.provider = o->ofi_provider;
  oo.source = source;
  // Memory keys differ from job to job (where the provider lets us choose).
  std::memcpy(&oo.key_salt, cc.key.data(), sizeof oo.key_salt);
  std::unique_ptr<nic::OfiNic> ofi;
  if (Status st = nic::OfiNic::Create(oo, &ofi); !st.ok()) {
    return Status::Unsupported("--transport ofi: " + st.message());
  }
  spdlog::debug("node {}: ofi provider {}", o->node, ofi->provider());
  o->max_send = std::min<uint64_t>(o->max_send, nic::kOfiMaxMessage);
  *address = ofi->listen_address();
  *nic = std::move(ofi);
  return Status::Ok();
}

}  // namespace svm::rt
