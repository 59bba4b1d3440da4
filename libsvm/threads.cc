// Runtime: program threads across nodes. A thread is placed on a node by its
// number (block or cyclic over threads-per-node); creating it elsewhere is a
// SpawnRequest to that node's handler, joining it a JoinRequest. Handles are
// (tag | node | number); node 0's main thread is number 0.
#include <errno.h>

#include <spdlog/spdlog.h>

#include "libsvm/next_symbol.h"
#include "libsvm/runtime.h"
#include "libsvm/runtime_state.h"
#include "libsvm/stacks.h"
#include "libsvm/stats.h"
#include "libsvm/thread_state.h"
#include "libsvm/tsd.h"

namespace svm::rt {
namespace {

thread_local uint64_t t_handle __attribute__((tls_model("initial-exec"))) = 0;
thread_local void* t_exit_value = nullptr;
// glibc's handle of node 0's main thread (AdoptMainThread).
pthread_t g_main_thread{};

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

SVM_NEXT_FN(real_create, CreateFn, "pthread_create");
CreateFn RealCreate() { return real_create.get(); }

uint64_t MakeHandle(NodeId node, uint64_t number) {
  return kHandleTag | (uint64_t(node) << 32) | (number & 0xffffffffu);
}

// Creation and joining are release/acquire pairs. The creator holds the
// thread's birth lock (pinned to the creator's node) until the thread
// exists, and the thread takes it first; the thread holds its death lock
// (pinned to its own node) for its whole life, and the joiner takes it
// last. So the thread sees what its creator wrote, and the joiner what the
// thread wrote, through the protocol's ordinary lock hand-offs.
LockId BirthLock(NodeId creator, uint64_t handle) { return PinnedLock(creator, handle & 0xffffffffu); }
LockId DeathLock(uint64_t handle) {
  return PinnedLock(HandleNode(handle), (1ull << 40) | (handle & 0xffffffffu));
}

}  // namespace

uint64_t Runtime::CurrentHandle() { return t_handle; }
void Runtime::SetExitValue(void* value) { t_exit_value = value; }
void Runtime::AdoptMainThread() {
  using SelfFn = pthread_t (*)();
  static SelfFn real_self = NextSymbol<SelfFn>("pthread_self");
  g_main_thread = real_self();
  t_handle = MakeHandle(0, 0);
  stats::RegisterThread(stats::ThreadKind::kApp, 0, 0);
}

// Threads are numbered and counted job-wide on node 0, with the NIC's
// fetch-and-add so that any node may create threads.
std::optional<uint64_t> Runtime::CountThreads(uint64_t delta) {
  if (!nic_) return std::atomic_ref<uint64_t>(*job_threads_).fetch_add(delta);
  nic::CompletionQueue cq;
  const nic::WorkRequest wr = nic::WorkRequest::Faa(0, kCounterRegion, 0, delta);
  if (Status st = nic_->Post(&cq, {&wr, 1}); !st.ok()) return std::nullopt;
  nic::Completion c;
  while (cq.Wait({&c, 1}, std::chrono::seconds(1)) == 0) {
  }
  if (c.status != nic::WcStatus::kSuccess) return std::nullopt;
  return c.value;
}

// Barriers collect garbage only when every thread is in them (node_barrier.cc);
// so a thread counts as alive before it can act and until its last release.
// A count left too high (a failed decrement) only costs collections.
uint32_t Runtime::JobThreads() {
  return uint32_t(std::atomic_ref<uint64_t>(*job_threads_).load(std::memory_order_acquire));
}

NodeId Runtime::PlaceThread(uint64_t number) const {
  if (opts_.place == Placement::kCyclic) return NodeId(number % opts_.nodes);
  return NodeId((number / opts_.threads_per_node) % opts_.nodes);
}

int Runtime::CreateThread(uint64_t* handle, const pthread_attr_t* attr, void* (*start)(void*),
                          void* arg) {
  RuntimeScope scope;
  stats::Scope timing(stats::Category::kThreads);
  const std::optional<uint64_t> counts = CountThreads(kThreadCreated + kThreadAlive);
  if (!counts) return EAGAIN;
  const uint64_t number = (*counts >> 32) + 1;
  const NodeId target = PlaceThread(number);
  const uint64_t h = MakeHandle(target, number);
  Acquire(BirthLock(self(), h));
  int err = 0;
  if (target == self()) {
    err = StartLocal(h, self(), start, arg, attr);
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    const ThreadId t = SlotOfCaller();
    spawns_[h] = Pending{false, 0, t};
    SendMessage(target, SpawnRequest{h, reinterpret_cast<uint64_t>(start),
                                     reinterpret_cast<uint64_t>(arg)});
    RunToCompletion(lock, t, [&] { return spawns_[h].done ? Outcome::kDone : Outcome::kBlocked; });
    err = int(spawns_[h].value);
    spawns_.erase(h);
  }
  Release(BirthLock(self(), h));
  if (err == 0)
    *handle = h;
  else
    CountThreads(-kThreadAlive);
  return err;
}

int Runtime::StartLocal(uint64_t handle, NodeId creator, void* (*start)(void*), void* arg,
                        const pthread_attr_t* attr) {
  auto record = std::make_unique<ThreadRecord>();
  ThreadRecord* r = record.get();
  r->handle = handle;
  r->creator = creator;
  r->start = start;
  r->arg = arg;
  // The carrier thread runs on a stack in this node's window (stacks.h),
  // unless the program gave one, and stays joinable: svm joins it to free
  // the stack (Retire). A shallow copy of glibc's attributes, never
  // destroyed: its extension (CPU set, signal mask) stays the program's.
  pthread_attr_t a;
  if (attr != nullptr) {
    a = *attr;
  } else {
    pthread_attr_init(&a);
  }
  void* given = nullptr;
  size_t given_size = 0;
  pthread_attr_getstack(&a, &given, &given_size);
  int detach = PTHREAD_CREATE_JOINABLE;
  pthread_attr_getdetachstate(&a, &detach);
  r->detached = detach == PTHREAD_CREATE_DETACHED;
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE);
  if (given == nullptr) {
    r->stack_size = StackSize(attr);
    r->stack = NewStack(r->stack_size);  // nullptr: glibc's stack, as without windows
    if (r->stack != nullptr) pthread_attr_setstack(&a, r->stack, r->stack_size);
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    threads_[handle] = std::move(record);
  }
  void* stack = r->stack;
  const size_t stack_size = r->stack_size;
  int err = RealCreate()(&r->thread, &a, Trampoline, r);
  if (err != 0) {
    {
      std::lock_guard<std::mutex> l(mu_);
      threads_.erase(handle);
    }
    if (stack != nullptr) FreeStack(stack, stack_size);
  }
  return err;
}

// The carrier of a finished thread that nobody will join: the spawner joins
// it (it has ended or is ending) and frees its stack. REQUIRES: mu_ held.
void Runtime::Retire(ThreadRecord& r) {
  {
    std::lock_guard<std::mutex> l(spawn_mu_);
    retired_.push_back({r.thread, r.stack, r.stack_size});
  }
  spawn_cv_.notify_one();
}

void* Runtime::Trampoline(void* p) {
  auto* r = static_cast<ThreadRecord*>(p);
  t_app = true;
  t_handle = r->handle;
  t_exit_value = nullptr;
  stats::RegisterThread(stats::ThreadKind::kApp, HandleNode(r->handle), r->handle & 0xffffffffu);
  Runtime* rt = Runtime::Get();
  // A thread takes its creator's name; one this node starts for another
  // node's request would take the spawner's: it gets the program's.
  if (r->creator != rt->self()) pthread_setname_np(pthread_self(), rt->program_name_);
  rt->Acquire(BirthLock(r->creator, r->handle));
  rt->Release(BirthLock(r->creator, r->handle));
  rt->Acquire(DeathLock(r->handle));
  // Runs on return and when pthread_exit unwinds the thread.
  struct Finisher {
    ThreadRecord* r;
    ~Finisher() {
      RunKeyDestructors();  // the program's code, before the thread counts as gone
      Runtime::Get()->Finish(r, t_exit_value);
    }
  } finisher{r};
  t_exit_value = r->start(r->arg);
  return t_exit_value;
}

void Runtime::Finish(ThreadRecord* r, void* value) {
  RuntimeScope scope;
  Release(DeathLock(r->handle));
  CountThreads(-kThreadAlive);
  std::lock_guard<std::mutex> l(mu_);
  ReleaseSlotOfCaller();
  r->done = true;
  r->value = value;
  for (ThreadId t : r->local_joiners) Wake(t);
  for (NodeId n : r->remote_joiners) {
    SendMessage(n, JoinReply{r->handle, reinterpret_cast<uint64_t>(value)});
    r->detached = true;  // a remote joiner takes the value; nothing left to join
  }
  if (r->detached) {
    Retire(*r);
    threads_.erase(r->handle);
  }
  stats::EndThread();
}

int Runtime::RealThread(uint64_t h, pthread_t* out) {
  // Called from the program's pthread_*_np calls: mu_ is glibc's mutex here,
  // never a program lock (the DSM's, which would not exclude the runtime).
  RuntimeScope scope;
  if (HandleNode(h) >= opts_.nodes) return ESRCH;
  if (HandleNode(h) != self()) return ENOTSUP;
  if (h == MakeHandle(0, 0)) {
    *out = g_main_thread;
    return 0;
  }
  std::lock_guard<std::mutex> l(mu_);
  auto it = threads_.find(h);
  if (it == threads_.end()) return ESRCH;
  *out = it->second->thread;
  return 0;
}

int Runtime::JoinThread(uint64_t h, void** value) {
  RuntimeScope scope;
  stats::Scope timing(stats::Category::kThreads);
  if (h == t_handle) return EDEADLK;
  std::unique_lock<std::mutex> lock(mu_);
  const ThreadId t = SlotOfCaller();
  const NodeId node = HandleNode(h);
  if (node >= opts_.nodes) return ESRCH;
  uint64_t result = 0;
  if (node == self()) {
    auto it = threads_.find(h);
    if (it == threads_.end()) return ESRCH;
    ThreadRecord* r = it->second.get();
    if (r->detached) return EINVAL;
    r->local_joiners.push_back(t);
    AwaitOthers(lock, t, [&] { return r->done; });
    result = reinterpret_cast<uint64_t>(r->value);
    pthread_t thread = r->thread;
    void* stack = r->stack;
    const size_t stack_size = r->stack_size;
    threads_.erase(it);
    lock.unlock();
    pthread_join(thread, nullptr);  // real join of the finished carrier thread
    if (stack != nullptr) FreeStack(stack, stack_size);
  } else {
    joins_[h] = Pending{false, 0, t};
    SendMessage(node, JoinRequest{h});
    AwaitOthers(lock, t, [&] { return joins_[h].done; });
    result = joins_[h].value;
    joins_.erase(h);
    lock.unlock();
  }
  Acquire(DeathLock(h));
  Release(DeathLock(h));
  if (value) *value = reinterpret_cast<void*>(result);
  return 0;
}

int Runtime::DetachThread(uint64_t h) {
  RuntimeScope scope;
  const NodeId node = HandleNode(h);
  if (node >= opts_.nodes) return ESRCH;
  std::lock_guard<std::mutex> l(mu_);
  if (node != self()) {
    SendMessage(node, DetachRequest{h});
    return 0;
  }
  auto it = threads_.find(h);
  if (it == threads_.end()) return ESRCH;
  ThreadRecord* r = it->second.get();
  r->detached = true;
  if (r->done) {
    Retire(*r);
    threads_.erase(it);
  }
  return 0;
}

// Runtime messages arrive on the handler thread.
void Runtime::OnRuntimeMessage(NodeId from, Message& m) {
  if (auto* s = std::get_if<SpawnRequest>(&m)) {
    // Not here: pthread_create may wait for the dynamic loader's lock, which
    // a program thread can hold while it waits for this handler (a fault
    // inside dlopen, as pthread_exit's first unwind does).
    {
      std::lock_guard<std::mutex> l(spawn_mu_);
      spawn_queue_.push_back({from, *s});
    }
    spawn_cv_.notify_one();
    return;
  }
  if (auto* w = std::get_if<SyncWake>(&m)) {
    WakeSyncHere(reinterpret_cast<const void*>(w->object), true);
    return;
  }
  if (auto* f = std::get_if<svm::RemoteFree>(&m)) {
    // Not here either: the heap's lock may be held by a program thread that
    // faulted inside the allocator and waits for this handler (a home
    // claim, a page); freeing here would deadlock both. The spawner frees.
    {
      std::lock_guard<std::mutex> l(spawn_mu_);
      free_queue_.insert(free_queue_.end(), f->blocks.begin(), f->blocks.end());
    }
    spawn_cv_.notify_one();
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (auto* r = std::get_if<SpawnReply>(&m)) {
    auto it = spawns_.find(r->thread);
    if (it == spawns_.end()) return (void)spdlog::error("spawn reply nobody asked for");
    it->second = Pending{true, r->error, it->second.waiter};
    Wake(it->second.waiter);
  } else if (auto* j = std::get_if<JoinRequest>(&m)) {
    auto it = threads_.find(j->thread);
    if (it == threads_.end() || it->second->detached)
      return (void)spdlog::error("join of unknown thread {:#x} from node {}", j->thread, from);
    ThreadRecord* r = it->second.get();
    if (r->done) {
      SendMessage(from, JoinReply{r->handle, reinterpret_cast<uint64_t>(r->value)});
      Retire(*r);
      threads_.erase(it);
    } else {
      r->remote_joiners.push_back(from);
    }
  } else if (auto* j = std::get_if<JoinReply>(&m)) {
    auto it = joins_.find(j->thread);
    if (it == joins_.end()) return (void)spdlog::error("join reply nobody asked for");
    it->second = Pending{true, j->value, it->second.waiter};
    Wake(it->second.waiter);
  } else if (auto* d = std::get_if<DetachRequest>(&m)) {
    auto it = threads_.find(d->thread);
    if (it == threads_.end()) return;
    it->second->detached = true;
    if (it->second->done) {
      Retire(*it->second);
      threads_.erase(it);
    }
  }
}

void Runtime::SpawnLoop() {
  pthread_setname_np(pthread_self(), "svm-spawner");
  std::unique_lock<std::mutex> l(spawn_mu_);
  while (!stopping_.load()) {
    if (!retired_.empty()) {
      std::vector<Retired> done(retired_.begin(), retired_.end());
      retired_.clear();
      l.unlock();
      for (const Retired& c : done) {
        pthread_join(c.thread, nullptr);
        if (c.stack != nullptr) FreeStack(c.stack, c.stack_size);
      }
      l.lock();
      continue;
    }
    if (!free_queue_.empty()) {
      std::vector<uint64_t> blocks(free_queue_.begin(), free_queue_.end());
      free_queue_.clear();
      l.unlock();
      // Not under mu_: the heap's locks come before mu_ (Free -> RemoteFree).
      for (uint64_t b : blocks) heap_->FreeLocal(reinterpret_cast<void*>(b));
      l.lock();
      continue;
    }
    if (spawn_queue_.empty()) {
      spawn_cv_.wait_for(l, std::chrono::milliseconds(200));
      continue;
    }
    auto [from, s] = spawn_queue_.front();
    spawn_queue_.pop_front();
    l.unlock();
    const int err = HandleNode(s.thread) == self()
                        ? StartLocal(s.thread, from, reinterpret_cast<void* (*)(void*)>(s.start),
                                     reinterpret_cast<void*>(s.arg), nullptr)
                        : EINVAL;
    {
      std::lock_guard<std::mutex> g(mu_);
      SendMessage(from, SpawnReply{s.thread, uint32_t(err)});
    }
    l.lock();
  }
}

void Runtime::RemoteFree(uint32_t owner, void* p) {
  // Batching would save messages; one per free keeps the order simple.
  RuntimeScope scope;
  std::lock_guard<std::mutex> l(mu_);
  SendMessage(owner, svm::RemoteFree{{reinterpret_cast<uint64_t>(p)}});
}

}  // namespace svm::rt
