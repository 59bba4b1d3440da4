// LockTable: the lock extension served by a target NIC (DESIGN.md, `nil`).
//
// Lock id -> owner and a FIFO of waiting requesters. A lock is held by a node
// (a NIC cannot tell a node's threads apart): any request from the owner node
// may release it. Requester is backend data with a `node` member saying where
// the request came from. Invariants:
//   1. a lock with no owner has no waiters (entries are erased when free);
//   2. grants follow request order per lock (FIFO among all requesters);
//   3. a waiter appears at most once per request.
// Not thread-safe: one NIC thread (or a mutex around it) owns a table.
#pragma once

#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nic_ext/transport.h"

namespace svm::nic {

template <typename Requester>
class LockTable {
 public:
  enum class Result { kGranted, kQueued };

  // Grants `lock` to r if it is free, else queues r behind the waiters.
  Result Acquire(LockNo lock, const Requester& r) {
    auto [it, fresh] = locks_.try_emplace(lock);
    if (fresh) {
      it->second.owner = r;
      return Result::kGranted;
    }
    it->second.waiters.push_back(r);
    return Result::kQueued;
  }

  // Releases `lock` held by `node`. Returns false (and changes nothing) when
  // node does not hold it. On success, *next says whom the lock passed to.
  bool Release(LockNo lock, NodeId node, bool* passed, Requester* next) {
    *passed = false;
    auto it = locks_.find(lock);
    if (it == locks_.end() || it->second.owner.node != node) return false;
    PassOn(it, passed, next);
    return true;
  }

  // Forgets `node` (its connection is gone): drops its waits and releases the
  // locks it holds. Appends every resulting grant to *grants.
  void DropNode(NodeId node, std::vector<std::pair<LockNo, Requester>>* grants) {
    for (auto it = locks_.begin(); it != locks_.end();) {
      auto& w = it->second.waiters;
      std::erase_if(w, [node](const Requester& r) { return r.node == node; });
      if (it->second.owner.node != node) {
        ++it;
        continue;
      }
      bool passed = false;
      Requester next{};
      LockNo lock = it->first;
      it = PassOn(it, &passed, &next);
      if (passed) grants->emplace_back(lock, next);
    }
  }

  // Empties the table (the NIC stops); appends every waiting requester to
  // *waiting.
  void Clear(std::vector<Requester>* waiting) {
    for (auto& [lock, st] : locks_) waiting->insert(waiting->end(), st.waiters.begin(), st.waiters.end());
    locks_.clear();
  }

  bool held(LockNo lock) const { return locks_.count(lock) != 0; }
  size_t waiters(LockNo lock) const {
    auto it = locks_.find(lock);
    return it == locks_.end() ? 0 : it->second.waiters.size();
  }

 private:
  struct State {
    Requester owner{};
    std::deque<Requester> waiters;
  };
  using Map = std::unordered_map<LockNo, State>;

  typename Map::iterator PassOn(typename Map::iterator it, bool* passed, Requester* next) {
    auto& st = it->second;
    if (st.waiters.empty()) return locks_.erase(it);
    st.owner = st.waiters.front();
    st.waiters.pop_front();
    *passed = true;
    *next = st.owner;
    return std::next(it);
  }

  Map locks_;
};

}  // namespace svm::nic
