// Tcp transport, datapath: posting, receiving (on the NIC thread or on a
// waiting thread that drives the NIC), serving one-sided ops and locks from
// registered memory, completions, the NIC thread's event loop.
// Per frame: one decode, one bounds check, one copy. No exceptions, no
// allocation in steady state beyond SEND payloads handed to the receiver.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "nic_ext/tcp/tcp_nic_impl.h"
#include "util/coding.h"

namespace svm::nic {

namespace {
// Each thread's own eventfd for sleeping in Driver::Sleep: signalled when its
// queue gets an item that no socket readiness announces.
int SleeperFd() {
  struct Fd {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ~Fd() {
      if (fd >= 0) close(fd);
    }
  };
  static thread_local Fd f;
  return f.fd;
}

void Signal(int fd) {
  uint64_t one = 1;
  ssize_t w = write(fd, &one, sizeof one);
  (void)w;  // cannot fail short of overflow
}
}  // namespace

// ---- posting (any thread) -------------------------------------------------

uint32_t TcpNicImpl::AllocSlot(const WorkRequest& wr, CompletionQueue* cq) {
  uint32_t slot = free_.back();
  free_.pop_back();
  Pending& p = slots_[slot];
  p.used = true;
  p.gen = (p.gen + 1) & ((1u << (32 - kSlotBits)) - 1);
  p.wr_id = wr.wr_id;
  p.op = wr.op;
  p.peer = wr.peer;
  p.signaled = wr.signaled;
  p.cq = cq;
  p.bytes = static_cast<uint32_t>(wr.Bytes());
  p.num_sge = wr.num_sge;
  p.sge = wr.sge;
  ++conns_[wr.peer].outstanding;
  return (p.gen << kSlotBits) | slot;
}

void TcpNicImpl::Deliver(CompletionQueue* cq, const Pending& p, WcStatus st, uint64_t value) {
  if (st == WcStatus::kSuccess && !p.signaled) return;
  Completion c;
  c.wr_id = p.wr_id;
  c.op = p.op;
  c.status = st;
  c.peer = p.peer;
  c.byte_len = p.bytes;
  c.value = value;
  cq->Push(c);
  WakeSleepers();
}

void TcpNicImpl::FlushSlots(NodeId peer) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    Pending& p = slots_[i];
    if (!p.used || p.peer != peer) continue;
    Deliver(p.cq, p, WcStatus::kFlushed, 0);
    p.used = false;
    --conns_[peer].outstanding;
    free_.push_back(i);
  }
}

Status TcpNicImpl::Post(CompletionQueue* cq, std::span<const WorkRequest> wrs) {
  if (!started_) return Status::InvalidArgument("Post before Connect");
  size_t slots_needed = 0;
  for (const WorkRequest& wr : wrs) {
    if (Status s = Validate(wr); !s.ok()) return s;
    slots_needed += wr.op != Opcode::kSend;
  }
  // The waiter on cq may receive the responses itself (unless the NIC thread
  // must time injected delays).
  if (slots_needed > 0 && !inject_ && cq->driver_id() != cq_driver_.get()) cq->set_driver(cq_driver_);
  std::lock_guard<std::mutex> l(mu_);
  if (slots_needed > free_.size()) {
    return Status::OutOfRange(fmt::format("{} requests outstanding (limit {})",
                                          kMaxOutstanding - free_.size(), kMaxOutstanding));
  }
  std::array<bool, kMaxNodes> touched{};
  for (const WorkRequest& wr : wrs) {
    if (Status s = PostOne(cq, wr); !s.ok()) return s;
    touched[wr.peer] = true;
  }
  for (NodeId n = 0; n < num_nodes(); ++n) {
    if (!touched[n]) continue;
    if (n == self()) {
      if (!conns_[n].tx_pending.empty()) Wake();
    } else {
      Flush(conns_[n], false);
    }
  }
  return Status::Ok();
}

Status TcpNicImpl::PostOne(CompletionQueue* cq, const WorkRequest& wr) {
  Conn& c = conns_[wr.peer];
  if (!c.alive || stopping_) {
    Completion done;
    done.wr_id = wr.wr_id;
    done.op = wr.op;
    done.status = WcStatus::kFlushed;
    done.peer = wr.peer;
    cq->Push(done);
    WakeSleepers();
    return Status::Ok();
  }
  const uint32_t epoch = opt_.epoch;
  std::span<const Sge> sges(wr.sge.data(), wr.num_sge);
  if (wr.op == Opcode::kSend) {
    frame::EncodeSend(epoch, sges, &c.tx_pending);
    if (wr.signaled) {
      Completion done;
      done.wr_id = wr.wr_id;
      done.op = wr.op;
      done.peer = wr.peer;
      done.byte_len = static_cast<uint32_t>(wr.Bytes());
      cq->Push(done);
      WakeSleepers();
    }
    return Status::Ok();
  }
  const uint32_t req = AllocSlot(wr, cq);
  frame::Frame f;
  f.req = req;
  f.region = wr.region;
  f.offset = wr.offset;
  switch (wr.op) {
    case Opcode::kWrite:
    case Opcode::kWriteRuns:
      frame::EncodeWrite(epoch, req, wr.region, wr.offset, sges, &c.tx_pending, wr.op == Opcode::kWriteRuns);
      return Status::Ok();
    case Opcode::kRead:
      f.type = frame::Type::kRead;
      f.length = static_cast<uint32_t>(wr.Bytes());
      break;
    case Opcode::kCas:
      f.type = frame::Type::kCas;
      f.compare = wr.compare;
      f.operand = wr.operand;
      break;
    case Opcode::kFaa:
      f.type = frame::Type::kFaa;
      f.operand = wr.operand;
      break;
    case Opcode::kLock:
    case Opcode::kUnlock:
      f.type = wr.op == Opcode::kLock ? frame::Type::kLock : frame::Type::kUnlock;
      f.lock = wr.lock;
      break;
    case Opcode::kSend:
      break;
  }
  frame::Encode(f, epoch, &c.tx_pending);
  return Status::Ok();
}

// MSG_DONTWAIT: the kernel answers -EAGAIN instead of arming a poll, so the
// operation is over when the submit returns and never outlives this thread.
template <typename Prep>
int TcpNicImpl::RunInline(Prep prep) {
  io_uring_sqe* sqe = io_uring_get_sqe(&inline_ring_);
  if (sqe == nullptr) return -EAGAIN;  // cannot happen: one SQE at a time
  prep(sqe);
  int rc = io_uring_submit_and_wait(&inline_ring_, 1);
  if (rc < 0) return rc;
  io_uring_cqe* cqe = nullptr;
  rc = io_uring_wait_cqe(&inline_ring_, &cqe);
  if (rc < 0) return rc;
  int res = cqe->res;
  io_uring_cqe_seen(&inline_ring_, cqe);
  return res;
}

int TcpNicImpl::InlineSend(int fd, const uint8_t* p, size_t n) {
  return RunInline([&](io_uring_sqe* sqe) { io_uring_prep_send(sqe, fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL); });
}

int TcpNicImpl::InlineRecv(int fd, uint8_t* p, size_t n) {
  return RunInline([&](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, fd, p, n, MSG_DONTWAIT); });
}

void TcpNicImpl::FlushAll(bool nic_thread) {
  for (Conn& c : conns_) {
    if (c.fd >= 0 && !c.send_armed && HasTx(c)) Flush(c, nic_thread);
  }
}

std::vector<uint8_t>& TcpNicImpl::Outgoing(Conn& c) {
  if (!c.sealed) return c.tx_pending;
  if (!c.tx_pending.empty()) c.sealed->Seal(&c.tx_pending);  // in send order: under mu_
  return c.sealed->wire();
}

void TcpNicImpl::Flush(Conn& c, bool nic_thread) {
  if (!c.alive) {
    c.tx_pending.clear();
    if (c.sealed) c.sealed->wire().clear();
    return;
  }
  if (c.send_armed || !HasTx(c) || (c.tx_handoff && !nic_thread)) return;
  std::vector<uint8_t>& out = Outgoing(c);
  const size_t n = out.size();
  int res = InlineSend(c.fd, out.data(), n);
  if (res >= 0 && static_cast<size_t>(res) == n) {
    out.clear();
    c.tx_handoff = false;
    return;
  }
  if (res < 0 && res != -EAGAIN) {
    DropConn(c, fmt::format("send: {}", std::strerror(-res)), !stopping_);
    return;
  }
  if (res > 0) out.erase(out.begin(), out.begin() + res);
  if (nic_thread) {
    SendOnRing_nt(c);
  } else {
    c.tx_handoff = true;
    Wake();
  }
}

void TcpNicImpl::Wake() {
  if (wake_posted_.exchange(true, std::memory_order_acq_rel)) return;
  uint64_t one = 1;
  ssize_t w = write(wake_fd_, &one, sizeof one);
  (void)w;  // an eventfd write of 1 cannot fail short of overflow
}

void TcpNicImpl::DropConn(Conn& c, const std::string& why, bool error) {
  if (!c.alive) return;
  if (error) {
    spdlog::error("nic {}: dropping the connection to node {}: {}", self(), c.peer, why);
  } else {
    spdlog::debug("nic {}: connection to node {} closed: {}", self(), c.peer, why);
  }
  c.alive = false;
  c.tx_pending.clear();
  if (c.sealed) c.sealed->wire().clear();
  c.tx_handoff = false;
  if (c.fd >= 0) shutdown(c.fd, SHUT_RDWR);  // armed ops complete; closed at destruction
  FlushSlots(c.peer);
  Wake();  // the NIC thread passes the peer's locks on
}

// ---- receiving (under mu_: the NIC thread, or a driving waiter) -------------

bool TcpNicImpl::Driver::Drive() {
  std::unique_lock<std::mutex> l(mu_, std::try_to_lock);
  if (!l.owns_lock() || nic_ == nullptr) return false;
  return nic_->DriveRx(all_peers_);
}

void TcpNicImpl::Driver::Leave(bool got) {
  if (active_.fetch_sub(1, std::memory_order_seq_cst) != 1 || got) return;
  // Going to sleep: the NIC thread must receive again now.
  std::unique_lock<std::mutex> l(mu_);
  if (nic_ != nullptr) nic_->Wake();
}

void TcpNicImpl::Driver::Retire() {
  {
    std::lock_guard<std::mutex> l(mu_);  // waits out a Drive in progress
    nic_ = nullptr;
  }
  std::unique_lock<std::mutex> l(sleep_mu_);
  interrupted_ = true;
  for (int fd : sleepers_) Signal(fd);
  slept_.wait(l, [this] { return sleepers_.empty(); });
}

void TcpNicImpl::Driver::Interrupt() {
  std::lock_guard<std::mutex> l(sleep_mu_);
  interrupted_ = true;
  for (int fd : sleepers_) Signal(fd);
}

void TcpNicImpl::Driver::Kick() {
  const int me = SleeperFd();  // a sleeper receiving for itself sees its items
  std::lock_guard<std::mutex> l(sleep_mu_);
  for (int fd : sleepers_) {
    if (fd != me) Signal(fd);
  }
}

bool TcpNicImpl::Driver::Sleep(std::chrono::nanoseconds timeout, const std::function<bool()>& ready, SleepRole role) {
  (void)role;  // only the completion queues' waiters sleep here, one kind
  const int me = SleeperFd();
  TcpNicImpl* nic;
  {
    std::lock_guard<std::mutex> l(mu_);
    nic = nic_;
  }
  {
    std::lock_guard<std::mutex> l(sleep_mu_);
    // Retire clears nic_ before it sets interrupted_: a sleeper that got the
    // NIC registers before Retire looks, so the NIC outlives its Sleep.
    if (nic == nullptr || interrupted_ || me < 0 || !CanSleep()) return false;
    sleepers_.push_back(me);
    sleeping_.fetch_add(1, std::memory_order_seq_cst);
  }
  // Counted as driving, so the NIC thread stays parked (its polls removed)
  // and an arrival wakes this thread alone.
  active_.fetch_add(1, std::memory_order_seq_cst);
  std::array<pollfd, kMaxNodes + 1> fds;
  nfds_t n = nic->SleepFds({fds.data(), kMaxNodes});
  fds[n++] = {me, POLLIN, 0};
  bool arrived = false;
  if (!ready()) {  // after registering: a push from now on signals `me`
    const int64_t ns = std::max<int64_t>(0, timeout.count());
    const timespec ts{ns / 1'000'000'000, ns % 1'000'000'000};
    arrived = ppoll(fds.data(), n, &ts, nullptr) > 0 && fds[n - 1].revents == 0;
  }
  // What woke us is received here, no hand-off (still registered: the NIC
  // lives until Retire has seen every sleeper go).
  if (arrived) nic->DriveRx(true);
  const bool got = ready();
  // Leaving without an item: the NIC thread must receive again now.
  if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1 && !got) nic->Wake();
  {
    std::lock_guard<std::mutex> l(sleep_mu_);
    std::erase(sleepers_, me);
    sleeping_.fetch_sub(1, std::memory_order_seq_cst);
    slept_.notify_all();
  }
  uint64_t drained;
  ssize_t r = read(me, &drained, sizeof drained);  // non-blocking
  (void)r;
  return true;
}

size_t TcpNicImpl::SleepFds(std::span<pollfd> out) {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const Conn& c : conns_) {
    if (c.fd >= 0 && c.alive && !stopping_ && n < out.size()) out[n++] = {c.fd, POLLIN | POLLRDHUP, 0};
  }
  return n;
}

bool TcpNicImpl::DriveRx(bool all_peers) {
  std::unique_lock<std::mutex> l(mu_, std::try_to_lock);
  if (!l.owns_lock() || stopping_) return false;  // someone else is receiving
  bool got = false;
  for (Conn& c : conns_) {
    if (c.fd >= 0 && c.alive && (all_peers || parked_ || c.outstanding > 0)) got |= Receive(c, false);
  }
  if (got) FlushAll(false);  // the responses go out now, from this thread
  if (!conns_[self()].tx_pending.empty()) Wake();  // e.g. a lock passed on to this node
  return got;
}

// Compacts or grows c.rx so that a recv has room. False: no room (frames
// stalled by injection fill it).
bool TcpNicImpl::PrepareRx(Conn& c) {
  if (c.rx_begin == c.rx_end) {
    c.rx_begin = c.rx_end = c.scan = 0;
  } else if (c.rx.size() - c.rx_end < kRxMinFree || c.rx_need > c.rx.size() - c.rx_begin) {
    std::memmove(c.rx.data(), c.rx.data() + c.rx_begin, c.rx_end - c.rx_begin);
    c.rx_end -= c.rx_begin;
    c.scan -= c.rx_begin;
    c.rx_begin = 0;
  }
  if (c.rx_need > c.rx.size()) c.rx.resize(c.rx_need + kRxMinFree);
  return c.rx_end < c.rx.size();
}

bool TcpNicImpl::Receive(Conn& c, bool to_eagain) {
  if (c.sealed) return ReceiveSealed(c, to_eagain);
  bool got = false;
  while (c.alive) {
    c.rx_blocked = !PrepareRx(c);
    if (c.rx_blocked) break;  // the NIC thread reads on once stalled frames are handled
    const size_t room = c.rx.size() - c.rx_end;
    int res = InlineRecv(c.fd, c.rx.data() + c.rx_end, room);
    if (res == -EAGAIN || res == -EINTR) break;
    if (res <= 0) {
      DropConn(c, res == 0 ? "peer closed" : std::strerror(-res), res < 0 && !stopping_);
      break;
    }
    got = true;
    c.rx_end += static_cast<size_t>(res);
    if (inject_) StampArrivals_nt(c);
    ProcessRx(c);
    // A short read drained the socket: what comes next fires the poll again.
    // Not so for a hang-up that came with the data (one poll event for both).
    if (!to_eagain && static_cast<size_t>(res) < room) break;
  }
  return got;
}

// As Receive, on a sealed connection: records are read, then opened onto
// rx (which grows instead of blocking: injection is a model knob).
bool TcpNicImpl::ReceiveSealed(Conn& c, bool to_eagain) {
  bool got = false;
  while (c.alive) {
    const std::span<uint8_t> room = c.sealed->RecvRoom();
    int res = InlineRecv(c.fd, room.data(), room.size());
    if (res == -EAGAIN || res == -EINTR) break;
    if (res <= 0) {
      DropConn(c, res == 0 ? "peer closed" : std::strerror(-res), res < 0 && !stopping_);
      break;
    }
    got = true;
    c.sealed->Received(static_cast<size_t>(res));
    if (!OpenRecords(c)) break;
    if (inject_) StampArrivals_nt(c);
    ProcessRx(c);
    if (!to_eagain && static_cast<size_t>(res) < room.size()) break;
  }
  return got;
}

bool TcpNicImpl::OpenRecords(Conn& c) {
  size_t n = 0;
  Status error;
  while (c.sealed->Front(&n, &error)) {
    if (c.rx_begin == c.rx_end) c.rx_begin = c.rx_end = c.scan = 0;
    if (c.rx.size() - c.rx_end < n && c.rx_begin > 0) {
      std::memmove(c.rx.data(), c.rx.data() + c.rx_begin, c.rx_end - c.rx_begin);
      c.rx_end -= c.rx_begin;
      c.scan -= c.rx_begin;
      c.rx_begin = 0;
    }
    if (c.rx.size() - c.rx_end < n) c.rx.resize(c.rx_end + n + kRxMinFree);
    if (error = c.sealed->OpenFront(c.rx.data() + c.rx_end); !error.ok()) break;
    c.rx_end += n;
  }
  if (error.ok()) return true;
  DropConn(c, fmt::format("sealed stream: {}", error.ToString()), true);
  return false;
}

// ---- the NIC thread --------------------------------------------------------

void TcpNicImpl::SendOnRing_nt(Conn& c) {
  std::swap(Outgoing(c), c.tx_inflight);
  c.tx_off = 0;
  c.tx_handoff = false;
  c.send_armed = true;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  io_uring_prep_send(sqe, c.fd, c.tx_inflight.data(), c.tx_inflight.size(),
                     MSG_NOSIGNAL | MSG_WAITALL);
  io_uring_sqe_set_data64(sqe, MakeTag(kTagSend, c.peer));
  ++ring_inflight_;
}

void TcpNicImpl::OnSent_nt(Conn& c, int res) {
  c.send_armed = false;
  if (res < 0 || !c.alive) {
    c.tx_inflight.clear();
    if (res < 0) DropConn(c, fmt::format("send: {}", std::strerror(-res)), !stopping_);
    return;
  }
  c.tx_off += static_cast<size_t>(res);
  if (c.tx_off < c.tx_inflight.size()) {
    c.send_armed = true;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_send(sqe, c.fd, c.tx_inflight.data() + c.tx_off,
                       c.tx_inflight.size() - c.tx_off, MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data64(sqe, MakeTag(kTagSend, c.peer));
    ++ring_inflight_;
    return;
  }
  c.tx_inflight.clear();
}

// Multishot: one CQE per arrival until cancelled (StopAll_nt), so a busy
// connection costs no re-arming.
void TcpNicImpl::ArmPoll_nt(Conn& c) {
  if (!c.alive || c.poll_armed || c.fd < 0) return;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  io_uring_prep_poll_multishot(sqe, c.fd, POLLIN | POLLRDHUP);
  io_uring_sqe_set_data64(sqe, MakeTag(kTagPoll, c.peer));
  c.poll_armed = true;
  ++ring_inflight_;
}

void TcpNicImpl::RemovePoll_nt(Conn& c) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  io_uring_prep_poll_remove(sqe, MakeTag(kTagPoll, c.peer));
  io_uring_sqe_set_data64(sqe, MakeTag(kTagPollRemove, c.peer));
  c.poll_removing = true;
  ++ring_inflight_;
}

void TcpNicImpl::StampArrivals_nt(Conn& c) {
  const auto now = Clock::now();
  while (c.rx_end - c.scan >= frame::kHeaderBytes) {
    uint32_t len = coding::DecodeFixed<uint32_t>(c.rx.data() + c.scan + 8);
    if (len > frame::kMaxBody) break;  // malformed; ProcessRx reports it
    size_t size = frame::kHeaderBytes + len;
    if (c.rx_end - c.scan < size) break;
    auto t = now;
    if (opt_.bandwidth_bytes_per_s != 0) {
      c.link_free = std::max(c.link_free, now) +
                    std::chrono::nanoseconds(size * 1'000'000'000ull / opt_.bandwidth_bytes_per_s);
      t = c.link_free;
    }
    c.ready_at.push_back(t + std::chrono::nanoseconds(opt_.latency_ns));
    c.scan += size;
  }
}

void TcpNicImpl::ProcessRx(Conn& c) {
  std::string error;
  while (c.alive && c.rx_begin < c.rx_end) {
    std::span<const uint8_t> in(c.rx.data() + c.rx_begin, c.rx_end - c.rx_begin);
    frame::Frame f;
    size_t used = 0;
    frame::Decoded d = frame::Decode(in, opt_.epoch, &f, &used, &error);
    if (d == frame::Decoded::kNeedMore) {
      c.rx_need = in.size() >= frame::kHeaderBytes
                      ? frame::kHeaderBytes + coding::DecodeFixed<uint32_t>(in.data() + 8)
                      : 0;
      return;
    }
    if (d == frame::Decoded::kMalformed) {
      DropConn(c, fmt::format("malformed frame: {}", error), true);
      return;
    }
    if (inject_) {
      if (!c.ready_at.empty()) {
        if (c.ready_at.front() > Clock::now()) return;  // the loop waits for it
        c.ready_at.pop_front();
      }
      if (opt_.per_message_ns != 0) {
        auto until = Clock::now() + std::chrono::nanoseconds(opt_.per_message_ns);
        while (Clock::now() < until) internal::CpuRelax();
      }
    }
    if (!HandleFrame(c, f, &error)) {
      DropConn(c, error, true);
      return;
    }
    c.rx_begin += used;
    c.rx_need = 0;
  }
}

void TcpNicImpl::ProcessLoopback_nt() {
  Conn& me = conns_[self()];
  std::string error;
  while (!me.tx_pending.empty()) {
    loop_buf_.clear();
    std::swap(loop_buf_, me.tx_pending);
    size_t pos = 0;
    while (pos < loop_buf_.size()) {
      frame::Frame f;
      size_t used = 0;
      std::span<const uint8_t> in(loop_buf_.data() + pos, loop_buf_.size() - pos);
      if (frame::Decode(in, opt_.epoch, &f, &used, &error) != frame::Decoded::kOk ||
          !HandleFrame(me, f, &error)) {
        spdlog::error("nic {}: bad loopback frame (a bug): {}", self(), error);
        break;
      }
      pos += used;
    }
  }
}

void TcpNicImpl::Respond(NodeId to, uint32_t req, Opcode op, WcStatus st, uint64_t value,
                            std::span<const uint8_t> data) {
  Conn& c = conns_[to];
  if (!c.alive) return;
  frame::EncodeResponse(opt_.epoch, req, op, st, value, data, &c.tx_pending);
}

bool TcpNicImpl::HandleFrame(Conn& c, const frame::Frame& f, std::string* error) {
  const NodeId from = c.peer;
  switch (f.type) {
    case frame::Type::kHello:
      *error = "hello after setup";
      return false;
    case frame::Type::kSend: {
      Message m;
      m.from = from;
      m.bytes = RecvBuffer(f.data.size());
      m.bytes.assign(f.data.begin(), f.data.end());
      recv_queue().Push(std::move(m));
      return true;
    }
    case frame::Type::kWrite: {
      uint8_t* p = regions_.Find(f.region, f.offset, f.data.size());
      if (p != nullptr && !f.data.empty()) std::memcpy(p, f.data.data(), f.data.size());
      Respond(from, f.req, Opcode::kWrite,
                 p != nullptr ? WcStatus::kSuccess : WcStatus::kRemoteAccessError, 0, {});
      return true;
    }
    case frame::Type::kWriteRuns:
      Respond(from, f.req, Opcode::kWriteRuns, regions_.StoreRuns(f.region, f.offset, f.data), 0, {});
      return true;
    case frame::Type::kRead: {
      const uint8_t* p = regions_.Find(f.region, f.offset, f.length);
      if (p == nullptr) {
        Respond(from, f.req, Opcode::kRead, WcStatus::kRemoteAccessError, 0, {});
      } else {
        Respond(from, f.req, Opcode::kRead, WcStatus::kSuccess, 0, {p, f.length});
      }
      return true;
    }
    case frame::Type::kCas:
    case frame::Type::kFaa: {
      const Opcode op = f.type == frame::Type::kCas ? Opcode::kCas : Opcode::kFaa;
      uint64_t* w = regions_.FindWord(f.region, f.offset);
      if (w == nullptr) {
        Respond(from, f.req, op, WcStatus::kRemoteAccessError, 0, {});
        return true;
      }
      std::atomic_ref<uint64_t> a(*w);
      uint64_t old = 0;
      if (op == Opcode::kCas) {
        old = f.compare;
        a.compare_exchange_strong(old, f.operand);
      } else {
        old = a.fetch_add(f.operand);
      }
      Respond(from, f.req, op, WcStatus::kSuccess, old, {});
      return true;
    }
    case frame::Type::kLock: {
      if (f.lock >= kMaxLocks) {
        Respond(from, f.req, Opcode::kLock, WcStatus::kRemoteInvalidRequest, 0, {});
      } else if (locks_.Acquire(f.lock, {from, f.req}) == LockTable<LockWaiter>::Result::kGranted) {
        Respond(from, f.req, Opcode::kLock, WcStatus::kSuccess, 0, {});
      }
      return true;
    }
    case frame::Type::kUnlock: {
      bool passed = false;
      LockWaiter next;
      if (f.lock >= kMaxLocks || !locks_.Release(f.lock, from, &passed, &next)) {
        Respond(from, f.req, Opcode::kUnlock, WcStatus::kRemoteInvalidRequest, 0, {});
        return true;
      }
      Respond(from, f.req, Opcode::kUnlock, WcStatus::kSuccess, 0, {});
      if (passed) Respond(next.node, next.req, Opcode::kLock, WcStatus::kSuccess, 0, {});
      return true;
    }
    case frame::Type::kResponse:
      return Complete(from, f, error);
  }
  *error = "unknown frame type";
  return false;
}

bool TcpNicImpl::Complete(NodeId from, const frame::Frame& f, std::string* error) {
  const uint32_t slot = f.req & (kMaxOutstanding - 1);
  Pending& p = slots_[slot];
  if (!p.used || p.gen != f.req >> kSlotBits || p.peer != from || p.op != f.op) {
    *error = fmt::format("{} response for unknown request {:#x}", ToString(f.op), f.req);
    return false;
  }
  if (f.op == Opcode::kRead && f.status == WcStatus::kSuccess) {
    if (f.data.size() != p.bytes) {
      *error = fmt::format("READ response of {} bytes for {}", f.data.size(), p.bytes);
      return false;
    }
    const uint8_t* src = f.data.data();
    for (uint32_t i = 0; i < p.num_sge; ++i) {
      if (p.sge[i].length == 0) continue;
      std::memcpy(p.sge[i].addr, src, p.sge[i].length);
      src += p.sge[i].length;
    }
  }
  Deliver(p.cq, p, f.status, f.value);
  p.used = false;
  --conns_[from].outstanding;
  free_.push_back(slot);
  return true;
}

void TcpNicImpl::HandleCqe_nt(const io_uring_cqe* cqe) {
  const uint64_t tag = io_uring_cqe_get_data64(cqe);
  const auto kind = static_cast<Tag>(tag >> 56);
  const uint32_t idx = static_cast<uint32_t>(tag & 0xffffffff);
  const bool more = (cqe->flags & IORING_CQE_F_MORE) != 0;  // a multishot poll stays armed
  if (!more) --ring_inflight_;
  switch (kind) {
    case kTagPoll:
      if (!more) conns_[idx].poll_armed = false;
      if (more && stopping_ && !conns_[idx].poll_removing) RemovePoll_nt(conns_[idx]);
      // A driving waiter may have been first: then nothing is read.
      Receive(conns_[idx], cqe->res < 0 || (cqe->res & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
      break;
    case kTagSend: OnSent_nt(conns_[idx], cqe->res); break;
    case kTagWake:
      wake_posted_.store(false, std::memory_order_release);
      wake_armed_ = false;
      break;
    case kTagCancel: break;
    case kTagPollRemove:
      conns_[idx].poll_removing = false;
      // -EALREADY: the poll was firing; it stays armed, so remove it again.
      if (cqe->res == -EALREADY && conns_[idx].poll_armed) RemovePoll_nt(conns_[idx]);
      break;
  }
}

void TcpNicImpl::StopAll_nt() {
  for (Conn& c : conns_) {
    if (c.fd >= 0) shutdown(c.fd, SHUT_RDWR);
    c.alive = false;
    c.tx_pending.clear();
    if (c.sealed) c.sealed->wire().clear();
    if (c.poll_armed) RemovePoll_nt(c);
  }
  for (NodeId n = 0; n < num_nodes(); ++n) FlushSlots(n);
  std::vector<LockWaiter> waiting;
  locks_.Clear(&waiting);  // their slots (if local) were flushed just above
  if (wake_armed_) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_cancel64(sqe, MakeTag(kTagWake, 0), 0);
    io_uring_sqe_set_data64(sqe, MakeTag(kTagCancel, 0));
    ++ring_inflight_;
  }
}

void TcpNicImpl::Loop_nt() {
  bool stop_begun = false;
  while (true) {
    // Prepare, under the lock, everything the ring should be doing.
    Clock::time_point next_ready = Clock::time_point::max();
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_ && !stop_begun) {
        StopAll_nt();
        stop_begun = true;
      }
      if (stop_begun && ring_inflight_ == 0) return;
      if (!stop_begun) {
        if (!wake_armed_) {
          io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
          io_uring_prep_read(sqe, wake_fd_, &wake_buf_, sizeof wake_buf_, 0);
          io_uring_sqe_set_data64(sqe, MakeTag(kTagWake, 0));
          wake_armed_ = true;
          ++ring_inflight_;
        }
        for (Conn& c : conns_) {
          if (c.fd < 0) continue;
          if (!c.alive && !c.locks_dropped) {
            std::vector<std::pair<LockNo, LockWaiter>> grants;
            locks_.DropNode(c.peer, &grants);
            for (auto& [lock, w] : grants) Respond(w.node, w.req, Opcode::kLock, WcStatus::kSuccess, 0, {});
            c.locks_dropped = true;
          }
        }
        ProcessLoopback_nt();
        parked_ = !inject_ && ActiveDrivers() > 0;
        for (Conn& c : conns_) {
          if (c.fd < 0) continue;
          if (!c.send_armed && HasTx(c)) Flush(c, true);
          if (c.rx_blocked) Receive(c, true);
          if (!parked_) {
            ArmPoll_nt(c);
          } else if (c.poll_armed && !c.poll_removing) {
            RemovePoll_nt(c);
          }
          if (inject_ && c.alive && !c.ready_at.empty() && c.rx_begin < c.rx_end) {
            next_ready = std::min(next_ready, c.ready_at.front());
          }
        }
      }
    }
    // Sleep in the kernel until something completes (or a stalled frame is due).
    if (opt_.nic_spin.count() > 0) {
      const auto until = Clock::now() + opt_.nic_spin;
      io_uring_submit(&ring_);
      while (io_uring_cq_ready(&ring_) == 0 && Clock::now() < until) {
        io_uring_get_events(&ring_);
        internal::CpuRelax();
      }
    }
    io_uring_cqe* cqe = nullptr;
    if (parked_) {  // read without mu_: only this thread writes it
      // Nap until something completes or the drivers are gone, without
      // taking mu_ from the drivers in between.
      do {
        __kernel_timespec ts{0, std::chrono::nanoseconds(kParkedNap).count()};
        io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
      } while (io_uring_cq_ready(&ring_) == 0 && ActiveDrivers() > 0);
    } else if (next_ready != Clock::time_point::max()) {
      auto left = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           next_ready - Clock::now()).count());
      __kernel_timespec ts{left / 1'000'000'000, left % 1'000'000'000};
      io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    } else {
      io_uring_submit_and_wait(&ring_, 1);
    }
    // Handle what completed.
    std::lock_guard<std::mutex> l(mu_);
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      HandleCqe_nt(cqe);
      ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
    if (inject_) {
      for (Conn& c : conns_) {
        if (c.fd >= 0 && c.alive) ProcessRx(c);
      }
    }
    FlushAll(true);  // responses leave now, not after another turn of the loop
  }
}

}  // namespace svm::nic
