#include "libsvm/ofi_nic.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "nic_ext/ofi/ofi_transport.h"
#include "util/auth.h"

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
  // The fabric's authorisation key, for providers that take one: a key of
  // its own derived from the job key (not the job key itself, which would
  // then sit in provider memory and on the wire of some fabrics).
  static constexpr char kLabel[] = "svm-ofi-auth-key-1";
  const svmd::Key auth = svmd::Hmac(cc.key, kLabel, sizeof kLabel - 1);
  oo.auth_key.assign(auth.begin(), auth.end());
  std::unique_ptr<nic::OfiNic> ofi;
  const auto t0 = std::chrono::steady_clock::now();
  if (Status st = nic::OfiNic::Create(oo, &ofi); !st.ok()) {
    return Status::Unsupported("--transport ofi: " + st.message());
  }
  // Most of the start-up time is libfabric's first fi_getinfo (doc/ofi.md, Start-up).
  spdlog::debug("node {}: ofi provider {} open in {} ms, {}", o->node, ofi->provider(),
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count(),
                ofi->auth_key_applied() ? "job authorisation key" : "the provider takes no authorisation key");
  o->max_send = std::min<uint64_t>(o->max_send, nic::kOfiMaxMessage);
  *address = ofi->listen_address();
  *nic = std::move(ofi);
  return Status::Ok();
}

}  // namespace svm::rt
