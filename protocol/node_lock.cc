// Node: distributed locks. Each lock has a home that remembers the last
// requester (the tail of a distributed queue); a request goes to the home,
// which forwards it to that tail, which grants once it is done with the lock.
// Coherence rides on the grant: the releaser's view and (base) the notices
// the requester lacks; from dw on the notices are deposited instead, and a
// grant waits until the deposits it names have arrived.
// nil (AtNic): the home's part, remembering the tail, is a word in its memory
// that requesters swap by remote CAS; the rest is the same queue.
#include <algorithm>
#include <cassert>

#include "protocol/node.h"
#include "protocol/node_state.h"

namespace svm {

NodeId Node::LockHome(LockId l) const {
  if (IsPinnedLock(l)) return PinnedLockHome(l) % nodes();
  // Lock ids are addresses: mix the bits so aligned neighbours spread out.
  uint64_t x = l;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<NodeId>(x % nodes());
}

Node::Lock& Node::LockEntry(LockId l) {
  auto it = locks_.find(l);
  if (it != locks_.end()) return *it->second;
  auto lk = std::make_unique<Lock>();
  lk->timestamp = VectorTime(nodes());
  if (LockHome(l) == config_.self) {  // the home holds a fresh lock's token
    lk->have_token = true;
    lk->tail = config_.self;
  }
  return *locks_.emplace(l, std::move(lk)).first->second;
}

Outcome Node::Acquire(ThreadId t, LockId l) {
  const Outcome o = AcquireStep(t, l);
  WaitingElsewhere(t, o == Outcome::kBlocked);  // a barrier gathering for t reports without it
  return o;
}

Outcome Node::AcquireStep(ThreadId t, LockId l) {
  assert(t < config_.threads);
  Lock& lk = LockEntry(l);
  if (lk.held && lk.holder == t) return Outcome::kDone;  // handed to t while it waited
  const auto queued = std::find_if(lk.waiters.begin(), lk.waiters.end(),
                                   [&](const Lock::Waiter& w) { return w.thread == t; });
  const bool waiting = queued != lk.waiters.end();
  const bool oldest = waiting && queued == lk.waiters.begin();
  const bool was_woken = oldest && lk.woken == t;
  if (oldest) lk.woken.reset();  // it runs: a later hand-on wakes it again
  if (lk.have_token && !lk.held && (oldest || (!waiting && (lk.waiters.empty() || MayBarge(lk))))) {
    assert(!lk.waiters.empty() || !lk.remote_next);
    TakeLocal(t, lk);
    return Outcome::kDone;
  }
  if (waiting) {
    // Woken for an idle token that another thread of the node took first:
    // it gets the token at the next release, not another wake-up to race for.
    if (was_woken && lk.have_token && lk.held) lk.barges = kMaxBarges;
    return Outcome::kBlocked;
  }
  lk.waiters.push_back({t, ++lock_seq_});
  if (!lk.have_token && !lk.requested) SendLockRequest(l, lk);
  return Outcome::kBlocked;
}

bool Node::CancelAcquire(ThreadId t, LockId l) {
  Lock& lk = LockEntry(l);
  if (lk.held && lk.holder == t) return false;
  WaitingElsewhere(t, false);
  const bool oldest = !lk.waiters.empty() && lk.waiters.front().thread == t;
  std::erase_if(lk.waiters, [&](const Lock::Waiter& w) { return w.thread == t; });
  if (oldest) {
    lk.NewTurn();
    if (lk.have_token && !lk.held) HandOn(l, lk);  // the idle token kept for t
  }
  return true;
}

bool Node::HeldLocally(LockId l) const {
  auto it = locks_.find(l);
  return it != locks_.end() && it->second->held;
}

bool Node::MayBarge(const Lock& lk) const {
  return lk.barges < kMaxBarges && !(lk.remote_next && lk.local_run >= kMaxLocalBypasses);
}

void Node::TakeLocal(ThreadId t, Lock& lk) {
  if (!lk.waiters.empty() && lk.waiters.front().thread == t) {
    lk.waiters.pop_front();
    lk.NewTurn();
  } else if (!lk.waiters.empty()) {
    lk.barges++;
  }
  if (lk.remote_next) lk.local_run++;
  lk.takes_here++;
  AssignLocal(t, lk);
  stats_.local_acquires++;
}

bool Node::Holds(ThreadId t, LockId l) const {
  auto it = locks_.find(l);
  return it != locks_.end() && it->second->held && it->second->holder == t;
}

bool Node::MayBeWanted(LockId l) const {
  auto it = locks_.find(l);
  if (it == locks_.end()) return false;
  const Lock& lk = *it->second;
  return lk.have_token && !lk.held && lk.from_remote &&
         (lk.takes_here < kPoliteTakes || lk.takes_here % kPoliteTakes == 0);
}

uint32_t Node::TakesSinceArrival(LockId l) const {
  auto it = locks_.find(l);
  return it == locks_.end() ? 0 : it->second->takes_here;
}

void Node::Release(ThreadId t, LockId l) {
  Lock& lk = LockEntry(l);
  assert(lk.held && lk.holder == t);
  lk.held = false;
  lk.timestamp = views_[t];
  HandOn(l, lk);
}

// Every lock, the runtime's pinned ones (thread birth and death) included:
// in nil no handler runs at a lock's home.
bool Node::AtNic(LockId) const { return LocksAtNic(config_.mode); }

// Passes an idle token to whoever asked first: the oldest local waiter or the
// remote successor; but while a remote successor waits, up to
// kMaxLocalBypasses local takes may go first. A hand-off between nodes costs
// messages, wake-ups and usually a page fetch, one inside the node none; the
// bound keeps a stream of local acquires from starving the remote waiter.
// The oldest local waiter is woken to take the token itself, and until it
// runs another thread of the node may take it (MayBarge): a token handed to
// a sleeping thread would be held for its wake-up.
void Node::HandOn(LockId l, Lock& lk) {
  assert(lk.have_token && !lk.held);
  const bool remote_first =
      lk.remote_next &&
      (lk.waiters.empty() ||
       (lk.remote_next->seq < lk.waiters.front().seq && lk.local_run >= kMaxLocalBypasses));
  if (remote_first) {
    GrantRemote(l, lk);
  } else if (!lk.waiters.empty()) {
    const ThreadId next = lk.waiters.front().thread;
    if (MayBarge(lk)) {
      if (lk.woken != next) {
        lk.woken = next;
        WakeWaiter(next);
      }
      return;
    }
    TakeLocal(next, lk);
    WakeWaiter(next);
  }
}

void Node::AssignLocal(ThreadId t, Lock& lk) {
  lk.held = true;
  lk.holder = t;
  ApplyView(t, lk.timestamp);
}

void Node::SendLockRequest(LockId l, Lock& lk) {
  lk.requested = true;
  if (AtNic(l)) {  // the request goes to the predecessor once the swap says who
    stats_.nic_locks++;
    host_->NicLockTail(LockHome(l), l, lk.last_successor);
    return;
  }
  LockRequest req{l, config_.self, false, log_.known()};
  if (LockHome(l) == config_.self)
    OnLockRequestAtHome(req);
  else
    SendNudged(LockHome(l), req);
}

// A lock request is followed by a nudge of its target (Host::Nudge): a node
// that re-takes an idle token in a loop would otherwise see the request only
// when its handler thread gets the CPU, and take the token again meanwhile.
void Node::SendNudged(NodeId to, const LockRequest& req) {
  Send(to, req);
  host_->Nudge(to);
}

void Node::OnLockRequestAtHome(LockRequest req) {
  Lock& lk = LockEntry(req.lock);
  const NodeId previous = lk.tail;
  lk.tail = req.requester;
  req.forwarded = true;
  if (previous == config_.self)
    OnLockForward(std::move(req));
  else
    SendNudged(previous, req);
}

void Node::OnLockForward(LockRequest req) {
  Lock& lk = LockEntry(req.lock);
  const LockId l = req.lock;
  lk.remote_next = Lock::RemoteWaiter{std::move(req), ++lock_seq_};
  if (lk.have_token && !lk.held) HandOn(l, lk);
}

// Lazy diffing: the interval closes only now that the lock leaves the node.
void Node::GrantRemote(LockId l, Lock& lk) {
  LockRequest req = std::move(lk.remote_next->request);
  lk.remote_next.reset();
  lk.last_successor = req.requester;
  lk.local_run = 0;
  lk.NewTurn();  // a woken waiter finds the token gone and waits again
  CloseInterval();
  LockGrant grant{l, lk.timestamp, {}};
  grant.timestamp[config_.self] = log_.known()[config_.self];
  if (!DepositsNotices(config_.mode)) log_.Missing(req.known, &grant.notices);
  lk.have_token = false;
  Send(req.requester, grant);
  if (!lk.waiters.empty()) SendLockRequest(l, lk);
}

Status Node::OnLockRequest(NodeId from, LockRequest& m) {
  if (m.requester >= nodes() || m.requester == config_.self)
    return Status::Malformed("lock request names an impossible requester");
  if (AtNic(m.lock)) {  // straight from the requester, which swapped the tail
    if (!m.forwarded || from != m.requester)
      return Status::InvalidArgument("NIC lock request not from its requester");
  } else if (!m.forwarded) {
    if (from != m.requester || LockHome(m.lock) != config_.self)
      return Status::InvalidArgument("lock request sent to a node that is not the lock's home");
    auto it = locks_.find(m.lock);
    if (it != locks_.end() && it->second->tail == m.requester)
      return Status::InvalidArgument("lock request from the lock's current tail");
    OnLockRequestAtHome(std::move(m));
    return Status::Ok();
  } else if (from != LockHome(m.lock)) {
    return Status::InvalidArgument("lock forward not from the lock's home");
  }
  // m.known only says which notices a grant must carry (base).
  if (!DepositsNotices(config_.mode) && !m.known.Covers(log_.floor()))
    return Status::InvalidArgument("lock request older than collected write notices");
  auto it = locks_.find(m.lock);
  if (it != locks_.end() && it->second->remote_next)
    return Status::InvalidArgument("second successor forwarded for one lock");
  OnLockForward(std::move(m));
  return Status::Ok();
}

Status Node::OnLockGrant(NodeId, LockGrant& m) {
  auto it = locks_.find(m.lock);
  if (it == locks_.end() || !it->second->requested || it->second->grant ||
      (AtNic(m.lock) && !it->second->asked))
    return Status::InvalidArgument("lock grant nobody asked for");
  if (DepositsNotices(config_.mode)) {
    if (!m.notices.empty()) return Status::Malformed("lock grant with notices in a depositing mode");
    if (Status st = CheckOwnIntervals(m.timestamp); !st.ok()) return st;
  } else {
    if (Status st = CheckNotices(m.notices, &m.timestamp); !st.ok()) return st;
    AddNotices(m.notices);
  }
  AcceptGrant(m.lock, *it->second, std::move(m.timestamp));
  return Status::Ok();
}

// This node is the tail now: ask the one before it, which grants when done.
Status Node::OnNicLockTail(LockId l, NodeId previous) {
  auto it = locks_.find(l);
  if (!AtNic(l) || it == locks_.end() || !it->second->requested || it->second->asked)
    return Status::InvalidArgument("NIC lock swap nobody asked for");
  if (previous >= nodes() || previous == config_.self)
    return Status::InvalidArgument("NIC lock swap names an impossible predecessor");
  it->second->asked = true;
  SendNudged(previous, LockRequest{l, config_.self, true, log_.known()});
  return Status::Ok();
}

// The grant is ours, but its timestamp may name intervals whose notices are
// still being deposited (dw: no FIFO between different writers): then it
// waits for Poll().
void Node::AcceptGrant(LockId l, Lock& lk, VectorTime timestamp) {
  lk.grant = std::move(timestamp);
  TakeDeposits();
  if (log_.known().Covers(*lk.grant))
    FinishGrant(l, lk);
  else
    pending_grants_.push_back(l);
}

void Node::FinishGrant(LockId l, Lock& lk) {
  lk.requested = false;
  lk.asked = false;
  lk.have_token = true;
  lk.timestamp = std::move(*lk.grant);
  lk.grant.reset();
  lk.local_run = 0;
  lk.from_remote = true;
  lk.takes_here = 0;
  lk.NewTurn();
  if (lk.waiters.empty()) {  // every waiter gave up (CancelAcquire); pass it on
    if (lk.remote_next) HandOn(l, lk);
    return;
  }
  const ThreadId next = lk.waiters.front().thread;
  lk.waiters.pop_front();
  AssignLocal(next, lk);
  stats_.remote_acquires++;
  WakeWaiter(next);
}

}  // namespace svm
