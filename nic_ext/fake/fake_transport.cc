#include "nic_ext/fake/fake_transport.h"

#include <atomic>
#include <cassert>
#include <cstring>
#include <mutex>
#include <vector>

#include "nic_ext/lock_table.h"
#include "nic_ext/region_table.h"

namespace svm::nic {
namespace {

class FakeNic;

struct Waiter {
  NodeId node = 0;
  CompletionQueue* cq = nullptr;
  uint64_t wr_id = 0;
  bool signaled = true;
};

}  // namespace

class FakeFabric {
 public:
  explicit FakeFabric(uint32_t n) : nics(n, nullptr) {}
  std::mutex mu;
  std::vector<FakeNic*> nics;  // guarded by mu; nullptr: absent or shut down
};

namespace {

class FakeNic final : public Nic {
 public:
  FakeNic(std::shared_ptr<FakeFabric> fabric, NodeId self, WaitPolicy policy)
      : Nic(self, static_cast<uint32_t>(fabric->nics.size()), policy), fabric_(std::move(fabric)) {
    std::lock_guard<std::mutex> l(fabric_->mu);
    assert(fabric_->nics[self] == nullptr);
    fabric_->nics[self] = this;
  }
  ~FakeNic() override { Shutdown(); }

  Status RegisterRegion(const MemoryRegion& r) override {
    std::lock_guard<std::mutex> l(fabric_->mu);
    return regions_.Add(r);
  }

  Status Connect(std::span<const std::string>) override { return Status::Ok(); }
  bool Supports(Opcode op) const override { return IsValid(op); }
  bool StoresMaskedBlocks() const override { return true; }

  Status Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) override {
    for (const WorkRequest& wr : wrs) {
      if (Status s = Validate(wr); !s.ok()) return s;
    }
    std::lock_guard<std::mutex> l(fabric_->mu);
    for (const WorkRequest& wr : wrs) ExecuteLocked(cq, wr);
    return Status::Ok();
  }

  void Shutdown() override {
    std::lock_guard<std::mutex> l(fabric_->mu);
    if (gone_) return;
    gone_ = true;
    fabric_->nics[self()] = nullptr;
    // Waiters queued here are flushed; locks this node holds elsewhere pass on.
    for (FakeNic* other : fabric_->nics) {
      if (other == nullptr) continue;
      std::vector<std::pair<LockNo, Waiter>> grants;
      other->locks_.DropNode(self(), &grants);
      for (auto& [lock, w] : grants) Complete(w, Opcode::kLock, other->self(), WcStatus::kSuccess);
    }
    std::vector<Waiter> waiting;
    locks_.Clear(&waiting);
    for (const Waiter& w : waiting) Complete(w, Opcode::kLock, self(), WcStatus::kFlushed);
  }

 private:
  static void Complete(const Waiter& w, Opcode op, NodeId peer, WcStatus st) {
    if (!w.signaled && st == WcStatus::kSuccess) return;
    Completion c;
    c.wr_id = w.wr_id;
    c.op = op;
    c.peer = peer;
    c.status = st;
    w.cq->Push(c);
  }

  void ExecuteLocked(CompletionQueue* cq, const WorkRequest& wr) {
    Completion c;
    c.wr_id = wr.wr_id;
    c.op = wr.op;
    c.peer = wr.peer;
    FakeNic* target = gone_ ? nullptr : fabric_->nics[wr.peer];
    if (target == nullptr) {
      c.status = WcStatus::kFlushed;
      cq->Push(c);
      return;
    }
    const uint64_t bytes = wr.Bytes();
    switch (wr.op) {
      case Opcode::kSend: {
        Message m;
        m.from = self();
        m.bytes.reserve(bytes);
        for (uint32_t i = 0; i < wr.num_sge; ++i) {
          auto* p = static_cast<const uint8_t*>(wr.sge[i].addr);
          m.bytes.insert(m.bytes.end(), p, p + wr.sge[i].length);
        }
        target->recv_queue().Push(std::move(m));
        c.byte_len = static_cast<uint32_t>(bytes);
        break;
      }
      case Opcode::kWrite:
      case Opcode::kWriteRuns:
      case Opcode::kRead:
      case Opcode::kCas:
      case Opcode::kFaa:
        target->regions_.Serve(wr, &c);
        break;
      case Opcode::kLock: {
        Waiter w{self(), cq, wr.wr_id, wr.signaled};
        if (target->locks_.Acquire(wr.lock, w) == LockTable<Waiter>::Result::kQueued) return;
        break;
      }
      case Opcode::kUnlock: {
        bool passed = false;
        Waiter next;
        if (!target->locks_.Release(wr.lock, self(), &passed, &next)) {
          c.status = WcStatus::kRemoteInvalidRequest;
          break;
        }
        if (passed) Complete(next, Opcode::kLock, target->self(), WcStatus::kSuccess);
        break;
      }
    }
    if (wr.signaled || c.status != WcStatus::kSuccess) cq->Push(c);
  }

  std::shared_ptr<FakeFabric> fabric_;
  // All below guarded by fabric_->mu.
  RegionTable regions_;
  LockTable<Waiter> locks_;
  bool gone_ = false;
};

}  // namespace

std::shared_ptr<FakeFabric> MakeFakeFabric(uint32_t num_nodes) {
  assert(num_nodes > 0 && num_nodes <= kMaxNodes);
  return std::make_shared<FakeFabric>(num_nodes);
}

std::unique_ptr<Nic> MakeFakeNic(std::shared_ptr<FakeFabric> fabric, NodeId self,
                                 WaitPolicy recv_policy) {
  assert(self < fabric->nics.size());
  return std::make_unique<FakeNic>(std::move(fabric), self, recv_policy);
}

}  // namespace svm::nic
