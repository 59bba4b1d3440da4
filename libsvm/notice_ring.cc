#include "libsvm/notice_ring.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include "util/coding.h"

namespace svm::rt {
namespace {

using coding::DecodeFixed;
using coding::EncodeFixed;

uint32_t Pad8(uint32_t n) { return (n + 7) & ~7u; }

// Zeroed memory in a memory file, which the shm transport hands its peers;
// nullptr on failure.
void* MapZeroed(const char* name, size_t bytes, SharedMemory* mem) {
  return SharedMemory::Create(name, bytes, mem).ok() ? mem->data() : nullptr;
}

constexpr size_t kNoticeHeader = 12;  // node, interval, page count

}  // namespace

bool ReadNoticeRecords(const uint8_t* ring, uint64_t ring_bytes, uint64_t* head, uint64_t tail,
                       std::vector<uint8_t>* partial, const std::function<void(std::vector<uint8_t>&)>& on_notice,
                       std::string* error) {
  constexpr uint64_t kHeader = NoticeRings::kRecordHeader;
  if (tail - *head > ring_bytes) {
    *error = fmt::format("{} bytes outstanding in a ring of {}", tail - *head, ring_bytes);
    return false;
  }
  while (*head != tail) {
    const uint64_t at = *head % ring_bytes;
    if (tail - *head < kHeader || at + kHeader > ring_bytes) {
      *error = "a record header cut by the tail or the ring's end";
      return false;
    }
    const uint32_t length = DecodeFixed<uint32_t>(ring + at);
    const uint32_t flags = DecodeFixed<uint32_t>(ring + at + 4);
    const uint64_t size = kHeader + Pad8(length);
    if (length > ring_bytes - kHeader || size > tail - *head) {
      *error = fmt::format("a record of {} bytes with {} outstanding", length, tail - *head);
      return false;
    }
    if (partial->size() + length > kMaxNoticeBytes) {
      *error = fmt::format("a notice longer than {} bytes", kMaxNoticeBytes);
      return false;
    }
    // The payload may wrap around the ring's end.
    const uint64_t from = (at + kHeader) % ring_bytes;
    const uint64_t first = std::min<uint64_t>(length, ring_bytes - from);
    partial->insert(partial->end(), ring + from, ring + from + first);
    partial->insert(partial->end(), ring, ring + (length - first));
    *head += size;
    if (flags & NoticeRings::kLastFragment) {
      on_notice(*partial);
      partial->clear();
    }
  }
  return true;
}

std::vector<uint8_t> EncodeNotice(const WriteNotice& n) {
  std::vector<uint8_t> out(kNoticeHeader + 8 * n.pages.size());
  EncodeFixed<uint32_t>(out.data(), n.node);
  EncodeFixed<uint32_t>(out.data() + 4, n.interval);
  EncodeFixed<uint32_t>(out.data() + 8, uint32_t(n.pages.size()));
  for (size_t i = 0; i < n.pages.size(); ++i)
    EncodeFixed<uint64_t>(out.data() + kNoticeHeader + 8 * i, n.pages[i]);
  return out;
}

Status DecodeNotice(const std::vector<uint8_t>& bytes, uint32_t nodes, WriteNotice* out) {
  if (bytes.size() < kNoticeHeader) return Status::Malformed("deposited notice shorter than its header");
  WriteNotice n;
  n.node = DecodeFixed<uint32_t>(bytes.data());
  n.interval = DecodeFixed<uint32_t>(bytes.data() + 4);
  const uint32_t count = DecodeFixed<uint32_t>(bytes.data() + 8);
  if (n.node >= nodes) return Status::Malformed(fmt::format("deposited notice of node {}", n.node));
  if (bytes.size() != kNoticeHeader + 8ull * count)
    return Status::Malformed(fmt::format("deposited notice: {} bytes for {} pages", bytes.size(), count));
  n.pages.resize(count);
  for (uint32_t i = 0; i < count; ++i) n.pages[i] = DecodeFixed<uint64_t>(bytes.data() + kNoticeHeader + 8 * i);
  *out = std::move(n);
  return Status::Ok();
}

struct NoticeRings::Outgoing {
  std::vector<uint8_t> record;
  uint64_t tail = 0;
};

NoticeRings::NoticeRings(const NoticeRingOptions& options, nic::Nic* nic)
    : opt_(options),
      nic_(nic),
      tail_(options.nodes, 0),
      head_(options.nodes, 0),
      drained_(new std::atomic<uint64_t>[options.nodes]()),
      head_shadow_(new uint64_t[options.nodes]()),
      partial_(options.nodes) {
  assert(opt_.ring_bytes % 8 == 0 && opt_.ring_bytes >= 64);
  deposit_bytes_ = RingsOffset() + uint64_t(opt_.nodes) * opt_.ring_bytes;
  heads_bytes_ = opt_.nodes * sizeof(uint64_t);
  deposit_ = static_cast<uint8_t*>(MapZeroed("svm-notice-rings", deposit_bytes_, &deposit_mem_));
  heads_ = static_cast<uint64_t*>(MapZeroed("svm-notice-heads", heads_bytes_, &heads_mem_));
}

NoticeRings::~NoticeRings() = default;

nic::MemoryRegion NoticeRings::DepositRegion() const {
  return {opt_.deposit_region, deposit_, deposit_bytes_, deposit_mem_.fd(), 0};
}
nic::MemoryRegion NoticeRings::HeadsRegion() const {
  return {opt_.heads_region, heads_, heads_bytes_, heads_mem_.fd(), 0};
}

uint64_t NoticeRings::RingsOffset() const {
  constexpr uint64_t kPage = 4096;
  return (uint64_t(opt_.nodes) * sizeof(uint64_t) + kPage - 1) / kPage * kPage;
}

uint64_t& NoticeRings::Tail(NodeId writer) const { return reinterpret_cast<uint64_t*>(deposit_)[writer]; }
uint64_t& NoticeRings::HeadOf(NodeId target) { return heads_[target]; }
uint8_t* NoticeRings::Ring(NodeId writer) { return deposit_ + RingsOffset() + uint64_t(writer) * opt_.ring_bytes; }

Status NoticeRings::Deposit(const WriteNotice& notice) {
  const std::vector<uint8_t> bytes = EncodeNotice(notice);
  const uint64_t ring = opt_.ring_bytes;
  for (NodeId t = 0; t < opt_.nodes; ++t) {
    if (t == opt_.self) continue;
    size_t pos = 0;
    auto deadline = std::chrono::steady_clock::time_point::max();
    while (pos < bytes.size()) {
      const uint64_t head = std::atomic_ref<uint64_t>(HeadOf(t)).load(std::memory_order_acquire);
      const uint64_t free = ring - (tail_[t] - head);
      if (free < kRecordHeader + 8) {
        // Full: let the target catch up; meanwhile take what is deposited
        // here, which may be what the target itself waits on.
        auto now = std::chrono::steady_clock::now();
        if (deadline == std::chrono::steady_clock::time_point::max()) {
          ++full_waits_;
          deadline = now + opt_.full_timeout;
        } else if (now > deadline) {
          return Status::Unsupported(fmt::format(
              "write-notice ring at node {} stayed full for {} ms (node not draining)", t,
              opt_.full_timeout.count()));
        }
        ReapOutgoing();
        if (!Drain()) sched_yield();
        continue;
      }
      const uint32_t chunk = uint32_t(std::min<uint64_t>(bytes.size() - pos, free - kRecordHeader));
      const bool last = pos + chunk == bytes.size();
      if (Status st = PostRecord(t, bytes.data() + pos, chunk, last); !st.ok()) return st;
      pos += chunk;
    }
  }
  ReapOutgoing();
  return Status::Ok();
}

Status NoticeRings::PostRecord(NodeId target, const uint8_t* payload, uint32_t length, bool last) {
  auto out = std::make_unique<Outgoing>();
  const uint32_t size = kRecordHeader + Pad8(length);
  out->record.assign(size, 0);
  EncodeFixed<uint32_t>(out->record.data(), length);
  EncodeFixed<uint32_t>(out->record.data() + 4, last ? kLastFragment : 0);
  std::memcpy(out->record.data() + kRecordHeader, payload, length);
  const uint64_t ring = opt_.ring_bytes;
  const uint64_t at = tail_[target] % ring;
  out->tail = tail_[target] + size;
  const uint64_t ring_at = RingsOffset() + uint64_t(opt_.self) * ring;
  const uint64_t id = next_wr_++;

  nic::WorkRequest wrs[3];
  size_t n = 0;
  const uint32_t first = uint32_t(std::min<uint64_t>(size, ring - at));
  nic::Sge a{out->record.data(), first};
  wrs[n] = nic::WorkRequest::Write(target, opt_.deposit_region, ring_at + at, {&a, 1}, id);
  wrs[n++].signaled = false;
  nic::Sge b{out->record.data() + first, size - first};
  if (first < size) {
    wrs[n] = nic::WorkRequest::Write(target, opt_.deposit_region, ring_at, {&b, 1}, id);
    wrs[n++].signaled = false;
  }
  nic::Sge t{&out->tail, sizeof(out->tail)};
  wrs[n++] = nic::WorkRequest::Write(target, opt_.deposit_region, uint64_t(opt_.self) * sizeof(uint64_t), {&t, 1}, id);
  while (true) {
    Status st = nic_->Post(&out_cq_, {wrs, n});
    if (st.ok()) break;
    if (st.code() != Status::Code::kOutOfRange) return st;
    ReapOutgoing();  // the NIC has too much in flight: wait for some of it
    sched_yield();
  }
  tail_[target] = out->tail;
  ++records_sent_;
  outgoing_.emplace(id, std::move(out));
  return Status::Ok();
}

void NoticeRings::ReapOutgoing() {
  nic::Completion done[32];
  while (size_t n = out_cq_.Poll(done)) {
    for (size_t i = 0; i < n; ++i) {
      // A failed WRITE means the target is gone; the job ends through the
      // runtime's own failure handling, so only forget the buffers here.
      outgoing_.erase(done[i].wr_id);
    }
  }
}

bool NoticeRings::Drain() {
  std::lock_guard<std::mutex> l(in_mu_);
  return DrainLocked();
}

bool NoticeRings::DrainLocked() {
  nic::Completion errors[8];
  while (in_cq_.Poll(errors) != 0) {
  }
  const uint64_t ring = opt_.ring_bytes;
  bool took = false;
  for (NodeId w = 0; w < opt_.nodes; ++w) {
    if (w == opt_.self) continue;
    const uint64_t tail = std::atomic_ref<uint64_t>(Tail(w)).load(std::memory_order_acquire);
    if (tail == head_[w]) continue;
    std::string error;
    const bool ok = ReadNoticeRecords(
        Ring(w), ring, &head_[w], tail, &partial_[w],
        [&](std::vector<uint8_t>& p) {
          WriteNotice n;
          if (Status st = DecodeNotice(p, opt_.nodes, &n); st.ok()) {
            ready_.push_back(std::move(n));
            has_ready_.store(true, std::memory_order_relaxed);
          } else {
            spdlog::error("notice deposited by node {} dropped: {}", w, st.ToString());
          }
        },
        &error);
    if (!ok) {
      // A writer that breaks the format: what it wrote is skipped.
      spdlog::error("notice ring of node {}: {}; skipping its records", w, error);
      head_[w] = tail;
      partial_[w].clear();
    }
    took = true;
    drained_[w].store(head_[w], std::memory_order_relaxed);
    // Hand the space back to the writer.
    head_shadow_[w] = head_[w];
    nic::Sge s{&head_shadow_[w], sizeof(uint64_t)};
    nic::WorkRequest wr = nic::WorkRequest::Write(w, opt_.heads_region, uint64_t(opt_.self) * 8, {&s, 1});
    wr.signaled = false;
    while (nic_->Post(&in_cq_, {&wr, 1}).code() == Status::Code::kOutOfRange) sched_yield();
  }
  return took;
}

bool NoticeRings::Pending() const {
  if (has_ready_.load(std::memory_order_relaxed)) return true;
  for (NodeId w = 0; w < opt_.nodes; ++w) {
    if (w == opt_.self) continue;
    const uint64_t tail = std::atomic_ref<uint64_t>(Tail(w)).load(std::memory_order_acquire);
    if (tail != drained_[w].load(std::memory_order_relaxed)) return true;
  }
  return false;
}

void NoticeRings::Take(std::vector<WriteNotice>* out) {
  std::lock_guard<std::mutex> l(in_mu_);
  DrainLocked();
  while (!ready_.empty()) {
    out->push_back(std::move(ready_.front()));
    ready_.pop_front();
  }
  has_ready_.store(false, std::memory_order_relaxed);
}

}  // namespace svm::rt
