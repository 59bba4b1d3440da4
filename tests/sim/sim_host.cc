#include "tests/sim/sim_host.h"

#include <utility>

namespace svm::sim {

SimHost::SimHost(NodeId self, uint32_t threads, uint64_t pages, uint64_t page_size,
                 SimNetwork* network, WakeListener* listener)
    : self_(self),
      threads_(threads),
      pages_(pages),
      page_size_(page_size),
      network_(network),
      listener_(listener),
      frames_(pages),
      prot_(pages, Prot::kNone) {}

void SimHost::ContractError(const std::string& what) {
  if (contract_error_.empty()) {
    contract_error_ = "node " + std::to_string(self_) + ": " + what;
  }
}

void SimHost::Send(NodeId to, std::vector<uint8_t> bytes) {
  if (to >= network_->nodes() || to == self_) {
    ContractError("Send to node " + std::to_string(to));
    return;
  }
  network_->Send(self_, to, std::move(bytes));
}

std::span<uint8_t> SimHost::Frame(PageId p) {
  if (p >= pages_) {
    ContractError("Frame(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    if (!scratch_) scratch_ = std::make_unique<uint8_t[]>(page_size_);
    return {scratch_.get(), page_size_};
  }
  if (!frames_[p]) frames_[p] = std::make_unique<uint8_t[]>(page_size_);  // zeroed
  return {frames_[p].get(), page_size_};
}

std::span<const uint8_t> SimHost::PeekFrame(PageId p) const {
  if (p >= pages_ || !frames_[p]) return {};
  return {frames_[p].get(), page_size_};
}

void SimHost::Protect(PageId p, Prot prot) {
  if (p >= pages_) {
    ContractError("Protect(" + std::to_string(p) + ") beyond " + std::to_string(pages_) + " pages");
    return;
  }
  prot_[p] = prot;
}

void SimHost::Wake(ThreadId t) {
  if (t >= threads_) {
    ContractError("Wake(" + std::to_string(t) + ") of a thread that does not exist");
    return;
  }
  listener_->OnWake(self_, t);
}

}  // namespace svm::sim
