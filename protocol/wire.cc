#include "protocol/wire.h"

#include <cassert>
#include <string>
#include <utility>

#include "util/coding.h"

namespace svm::wire {
namespace {

using coding::Reader;
using coding::Writer;

// Header layout (doc/wire.md): offsets of the fields.
constexpr size_t kLengthOffset = 8;
// Smallest encodings of list items, for bounding counts before allocating.
constexpr size_t kMinNoticeBytes = 12;  // node, interval, page count
constexpr size_t kPageBytes = 8;
constexpr size_t kEntryBytes = 4;

// ---- Encoding ----

void PutBool(Writer& w, bool b) { w.PutU8(b ? 1 : 0); }

void PutVector(Writer& w, const VectorTime& v) {
  assert(v.size() <= kMaxNodes);
  w.PutU32(static_cast<uint32_t>(v.size()));
  for (IntervalId e : v.entries()) w.PutU32(e);
}

void PutNotices(Writer& w, const std::vector<WriteNotice>& notices) {
  w.PutU32(static_cast<uint32_t>(notices.size()));
  for (const WriteNotice& n : notices) {
    w.PutU32(n.node);
    w.PutU32(n.interval);
    w.PutU32(static_cast<uint32_t>(n.pages.size()));
    for (PageId p : n.pages) w.PutU64(p);
  }
}

void PutBody(Writer& w, const FetchRequest& m) {
  w.PutU64(m.page);
  PutVector(w, m.need);
  w.PutU32(m.count);
  w.PutU32(m.stride);
  w.PutU64(m.mark);
}

// A PageReply up to its data (EncodePageReply writes the data from frames).
void PutPageReplyHead(Writer& w, PageId page, uint32_t stride, std::span<const VectorTime> versions) {
  w.PutU64(page);
  w.PutU32(stride);
  w.PutU32(static_cast<uint32_t>(versions.size()));
  for (const VectorTime& v : versions) PutVector(w, v);
}

void PutBody(Writer& w, const PageReply& m) {
  PutPageReplyHead(w, m.page, m.stride, m.versions);
  w.PutLengthPrefixed(m.data);
}

void PutBody(Writer& w, const DiffMessage& m) {
  w.PutU64(m.page);
  w.PutU32(m.interval);
  w.PutLengthPrefixed(m.runs);
}

void PutBody(Writer& w, const LockRequest& m) {
  w.PutU64(m.lock);
  w.PutU32(m.requester);
  PutBool(w, m.forwarded);
  PutVector(w, m.known);
}

void PutBody(Writer& w, const LockGrant& m) {
  w.PutU64(m.lock);
  PutVector(w, m.timestamp);
  PutNotices(w, m.notices);
}

void PutBody(Writer& w, const BarrierArrive& m) {
  w.PutU64(m.barrier);
  w.PutU32(m.arrivals);
  w.PutU32(m.total);
  PutVector(w, m.known);
  PutNotices(w, m.notices);
  PutVector(w, m.floor);
  w.PutU32(m.nodes);
}

void PutBody(Writer& w, const BarrierRelease& m) {
  w.PutU64(m.barrier);
  PutVector(w, m.time);
  PutBool(w, m.collect);
  PutNotices(w, m.notices);
  PutBool(w, m.serial);
  w.PutU64(m.covers);
}

void PutBody(Writer& w, const HomeClaim& m) {
  w.PutU64(m.page);
  w.PutU32(m.ahead);
}

void PutBody(Writer& w, const HomeReply& m) {
  w.PutU64(m.page);
  w.PutU32(m.home);
  w.PutU32(m.same);
}

void PutBody(Writer& w, const SpawnRequest& m) {
  w.PutU64(m.thread);
  w.PutU64(m.start);
  w.PutU64(m.arg);
}

void PutBody(Writer& w, const SpawnReply& m) {
  w.PutU64(m.thread);
  w.PutU32(m.error);
}

void PutBody(Writer& w, const JoinRequest& m) { w.PutU64(m.thread); }

void PutBody(Writer& w, const JoinReply& m) {
  w.PutU64(m.thread);
  w.PutU64(m.value);
}

void PutBody(Writer& w, const DetachRequest& m) { w.PutU64(m.thread); }

void PutBody(Writer& w, const SyncWake& m) { w.PutU64(m.object); }

void PutBody(Writer& w, const RemoteFree& m) {
  w.PutU32(static_cast<uint32_t>(m.blocks.size()));
  for (uint64_t b : m.blocks) w.PutU64(b);
}

void PutBody(Writer& w, const MarksDropped& m) {
  w.PutU32(static_cast<uint32_t>(m.pages.size()));
  for (PageId p : m.pages) w.PutU64(p);
}

// ---- Decoding ----

// Reads the fields of one body in order. The first failure is kept, and every
// read after it does nothing, so a body decoder is a plain list of reads
// followed by Finish().
class BodyReader {
 public:
  BodyReader(std::span<const uint8_t> body, MessageType type, uint32_t nodes)
      : r_(body), type_(type), nodes_(nodes) {}

  void U32(uint32_t* v, const char* field) {
    if (ok() && !r_.GetU32(v)) Fail(field, "truncated");
  }

  void U64(uint64_t* v, const char* field) {
    if (ok() && !r_.GetU64(v)) Fail(field, "truncated");
  }

  // A u8 that must be 0 or 1.
  void Bool(bool* v, const char* field) {
    uint8_t b = 0;
    if (!ok()) return;
    if (!r_.GetU8(&b)) return Fail(field, "truncated");
    if (b > 1) return Fail(field, "bool not 0 or 1");
    *v = b == 1;
  }

  // A node id, which must be < nodes.
  void Node(NodeId* v, const char* field) {
    U32(v, field);
    if (ok() && *v >= nodes_) Fail(field, "node id out of range");
  }

  // u32 count (== nodes), then count u32 entries.
  void Vector(VectorTime* v, const char* field) {
    uint32_t count = 0;
    U32(&count, field);
    if (!ok()) return;
    if (count != nodes_) return Fail(field, "vector size is not the node count");
    if (!r_.CanHold(count, kEntryBytes)) return Fail(field, "truncated");
    v->Reset(count);  // in place: a reused body keeps its storage
    for (NodeId n = 0; n < count; ++n) U32(&(*v)[n], field);
  }

  // A u32 below limit.
  void Below(uint32_t* v, uint32_t limit, const char* field) {
    U32(v, field);
    if (ok() && *v >= limit) Fail(field, "out of range");
  }

  // A u32 in [1, max].
  void Count(uint32_t* v, uint32_t max, const char* field) {
    U32(v, field);
    if (ok() && (*v == 0 || *v > max)) Fail(field, "count out of range");
  }

  // u32 count in [1, max], then count vectors.
  void Vectors(std::vector<VectorTime>* v, uint32_t max, const char* field) {
    uint32_t count = 0;
    Count(&count, max, field);
    if (!ok()) return;
    if (!r_.CanHold(count, kEntryBytes * (size_t(nodes_) + 1))) return Fail(field, "count exceeds body");
    v->resize(count);  // the vectors kept keep their storage
    for (VectorTime& x : *v) Vector(&x, field);
  }

  // u32 length, then that many bytes.
  void Bytes(std::vector<uint8_t>* v, const char* field) {
    std::span<const uint8_t> b;
    BytesView(&b, field);
    if (ok()) v->assign(b.begin(), b.end());
  }

  // As Bytes, without the copy: *v points into the body.
  void BytesView(std::span<const uint8_t>* v, const char* field) {
    if (ok() && !r_.GetLengthPrefixed(v)) Fail(field, "truncated");
  }

  // u32 count, then count u64 values.
  void U64List(std::vector<uint64_t>* v, const char* field) {
    uint32_t count = 0;
    U32(&count, field);
    if (!ok()) return;
    if (!r_.CanHold(count, kPageBytes)) return Fail(field, "count exceeds body");
    std::vector<uint64_t> values(count);
    for (uint64_t& x : values) U64(&x, field);
    if (ok()) *v = std::move(values);
  }

  // u32 count, then count notices: u32 node | u32 interval | u32 page count |
  // page count u64 pages.
  void Notices(std::vector<WriteNotice>* v, const char* field) {
    uint32_t count = 0;
    U32(&count, field);
    if (!ok()) return;
    if (!r_.CanHold(count, kMinNoticeBytes)) return Fail(field, "count exceeds body");
    std::vector<WriteNotice> notices(count);
    for (WriteNotice& n : notices) {
      uint32_t pages = 0;
      Node(&n.node, field);
      U32(&n.interval, field);
      U32(&pages, field);
      if (!ok()) return;
      if (!r_.CanHold(pages, kPageBytes)) return Fail(field, "page count exceeds body");
      n.pages.resize(pages);
      for (PageId& p : n.pages) U64(&p, field);
      if (!ok()) return;
    }
    *v = std::move(notices);
  }

  // Ok when every read succeeded and consumed the whole body.
  Status Finish() {
    if (ok() && r_.remaining() != 0) Fail("body", "trailing bytes");
    return status_;
  }

 private:
  bool ok() const { return status_.ok(); }
  void Fail(const char* field, const char* what) {
    status_ = Status::Malformed(std::string("wire: ") + ToString(type_) + " " + field + ": " + what);
  }

  Reader r_;
  MessageType type_;
  uint32_t nodes_;
  Status status_;
};

void ReadBody(BodyReader& r, FetchRequest* m) {
  r.U64(&m->page, "page");
  r.Vector(&m->need, "need");
  r.Count(&m->count, kMaxPageRun, "count");
  r.Count(&m->stride, kMaxPageStride, "stride");
  r.U64(&m->mark, "mark");
}

// A PageReply up to its data.
void ReadPageReplyHead(BodyReader& r, PageReply* m) {
  r.U64(&m->page, "page");
  r.Count(&m->stride, kMaxPageStride, "stride");
  r.Vectors(&m->versions, kMaxPageRun, "versions");
}

void ReadBody(BodyReader& r, PageReply* m) {
  ReadPageReplyHead(r, m);
  r.Bytes(&m->data, "data");
}

void ReadBody(BodyReader& r, DiffMessage* m) {
  r.U64(&m->page, "page");
  r.U32(&m->interval, "interval");
  r.Bytes(&m->runs, "runs");
}

void ReadBody(BodyReader& r, LockRequest* m) {
  r.U64(&m->lock, "lock");
  r.Node(&m->requester, "requester");
  r.Bool(&m->forwarded, "forwarded");
  r.Vector(&m->known, "known");
}

void ReadBody(BodyReader& r, LockGrant* m) {
  r.U64(&m->lock, "lock");
  r.Vector(&m->timestamp, "timestamp");
  r.Notices(&m->notices, "notices");
}

void ReadBody(BodyReader& r, BarrierArrive* m) {
  r.U64(&m->barrier, "barrier");
  r.U32(&m->arrivals, "arrivals");
  r.U32(&m->total, "total");
  r.Vector(&m->known, "known");
  r.Notices(&m->notices, "notices");
  r.Vector(&m->floor, "floor");
  r.U32(&m->nodes, "nodes");
}

void ReadBody(BodyReader& r, BarrierRelease* m) {
  r.U64(&m->barrier, "barrier");
  r.Vector(&m->time, "time");
  r.Bool(&m->collect, "collect");
  r.Notices(&m->notices, "notices");
  r.Bool(&m->serial, "serial");
  r.U64(&m->covers, "covers");
}

void ReadBody(BodyReader& r, HomeClaim* m) {
  r.U64(&m->page, "page");
  r.Below(&m->ahead, kMaxPageRun, "ahead");
}

void ReadBody(BodyReader& r, HomeReply* m) {
  r.U64(&m->page, "page");
  r.Node(&m->home, "home");
  r.Below(&m->same, kMaxPageRun, "same");
}

void ReadBody(BodyReader& r, SpawnRequest* m) {
  r.U64(&m->thread, "thread");
  r.U64(&m->start, "start");
  r.U64(&m->arg, "arg");
}

void ReadBody(BodyReader& r, SpawnReply* m) {
  r.U64(&m->thread, "thread");
  r.U32(&m->error, "error");
}

void ReadBody(BodyReader& r, JoinRequest* m) { r.U64(&m->thread, "thread"); }

void ReadBody(BodyReader& r, JoinReply* m) {
  r.U64(&m->thread, "thread");
  r.U64(&m->value, "value");
}

void ReadBody(BodyReader& r, DetachRequest* m) { r.U64(&m->thread, "thread"); }

void ReadBody(BodyReader& r, RemoteFree* m) { r.U64List(&m->blocks, "blocks"); }

void ReadBody(BodyReader& r, SyncWake* m) { r.U64(&m->object, "object"); }

void ReadBody(BodyReader& r, MarksDropped* m) { r.U64List(&m->pages, "pages"); }

// The bodies DecodeReusing decodes in place: those of the fault path. Their
// ReadBody writes every field.
template <typename T>
constexpr bool kDecodedInPlace =
    std::is_same_v<T, FetchRequest> || std::is_same_v<T, PageReply> || std::is_same_v<T, DiffMessage>;

// Decodes a body of type T; *out is assigned only on success, unless
// `reuse` lets a body of the fault path be decoded into *out in place.
template <typename T>
Status DecodeAs(BodyReader& r, Message* out, bool reuse) {
  if constexpr (kDecodedInPlace<T>) {
    if (reuse) {
      if (!std::holds_alternative<T>(*out)) out->template emplace<T>();
      ReadBody(r, &std::get<T>(*out));
      return r.Finish();
    }
  }
  T m;
  ReadBody(r, &m);
  Status s = r.Finish();
  if (s.ok()) *out = std::move(m);
  return s;
}

}  // namespace

namespace {

// Writes a header whose body length EndMessage patches; returns its offset.
size_t BeginMessage(Writer& w, MessageType type, uint32_t epoch) {
  const size_t start = w.size();
  w.PutU32(kMagic);
  w.PutU16(kVersion);
  w.PutU16(static_cast<uint16_t>(type));
  w.PutU32(0);
  w.PutU32(epoch);
  return start;
}

void EndMessage(Writer& w, size_t start) {
  const size_t body = w.size() - start - kHeaderBytes;
  assert(body <= kMaxBodyBytes);
  w.PatchU32(start + kLengthOffset, static_cast<uint32_t>(body));
}

}  // namespace

void Encode(const Message& m, uint32_t epoch, std::vector<uint8_t>* out) {
  Writer w(out);
  const size_t start = BeginMessage(w, TypeOf(m), epoch);
  std::visit([&w](const auto& body) { PutBody(w, body); }, m);
  EndMessage(w, start);
}

void EncodePageReply(PageId page, uint32_t stride, std::span<const VectorTime> versions,
                     std::span<const std::span<const uint8_t>> pages, uint32_t epoch,
                     std::vector<uint8_t>* out) {
  Writer w(out);
  const size_t start = BeginMessage(w, MessageType::kPageReply, epoch);
  PutPageReplyHead(w, page, stride, versions);
  size_t bytes = 0;
  for (std::span<const uint8_t> p : pages) bytes += p.size();
  assert(bytes <= UINT32_MAX);
  w.PutU32(static_cast<uint32_t>(bytes));  // as PutLengthPrefixed
  for (std::span<const uint8_t> p : pages) w.PutBytes(p);
  EndMessage(w, start);
}

std::vector<uint8_t> Encode(const Message& m, uint32_t epoch) {
  std::vector<uint8_t> out;
  Encode(m, epoch, &out);
  return out;
}

Status DecodeHeader(std::span<const uint8_t> bytes, Header* out) {
  Reader r(bytes);
  uint32_t magic = 0;
  uint16_t type = 0;
  Header h;
  if (!r.GetU32(&magic) || !r.GetU16(&h.version) || !r.GetU16(&type) ||
      !r.GetU32(&h.length) || !r.GetU32(&h.epoch)) {
    return Status::Malformed("wire: header truncated (" + std::to_string(bytes.size()) +
                             " bytes)");
  }
  if (magic != kMagic) return Status::Malformed("wire: bad magic");
  if (h.version != kVersion)
    return Status::Unsupported("wire: version " + std::to_string(h.version));
  h.type = static_cast<MessageType>(type);
  if (!IsValid(h.type)) return Status::Malformed("wire: unknown type " + std::to_string(type));
  if (h.length > kMaxBodyBytes)
    return Status::OutOfRange("wire: body length " + std::to_string(h.length));
  *out = h;
  return Status::Ok();
}

namespace {
// The header of a whole message of this job (epoch, nodes), checked.
Status CheckMessage(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, Header* h) {
  if (nodes > kMaxNodes) return Status::InvalidArgument("wire: more nodes than kMaxNodes");
  Status s = DecodeHeader(bytes, h);
  if (!s.ok()) return s;
  if (h->length != bytes.size() - kHeaderBytes) {
    return Status::Malformed("wire: body length " + std::to_string(h->length) + " but " +
                             std::to_string(bytes.size() - kHeaderBytes) + " bytes follow");
  }
  if (h->epoch != epoch) {
    return Status::Malformed("wire: epoch " + std::to_string(h->epoch) + ", expected " +
                             std::to_string(epoch));
  }
  return Status::Ok();
}

Status DecodeMessage(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, Message* out,
                     bool reuse) {
  Header h;
  if (Status s = CheckMessage(bytes, epoch, nodes, &h); !s.ok()) return s;
  BodyReader r(bytes.subspan(kHeaderBytes), h.type, nodes);
  switch (h.type) {
    case MessageType::kFetchRequest: return DecodeAs<FetchRequest>(r, out, reuse);
    case MessageType::kPageReply: return DecodeAs<PageReply>(r, out, reuse);
    case MessageType::kDiff: return DecodeAs<DiffMessage>(r, out, reuse);
    case MessageType::kLockRequest: return DecodeAs<LockRequest>(r, out, reuse);
    case MessageType::kLockGrant: return DecodeAs<LockGrant>(r, out, reuse);
    case MessageType::kBarrierArrive: return DecodeAs<BarrierArrive>(r, out, reuse);
    case MessageType::kBarrierRelease: return DecodeAs<BarrierRelease>(r, out, reuse);
    case MessageType::kHomeClaim: return DecodeAs<HomeClaim>(r, out, reuse);
    case MessageType::kHomeReply: return DecodeAs<HomeReply>(r, out, reuse);
    case MessageType::kSpawnRequest: return DecodeAs<SpawnRequest>(r, out, reuse);
    case MessageType::kSpawnReply: return DecodeAs<SpawnReply>(r, out, reuse);
    case MessageType::kJoinRequest: return DecodeAs<JoinRequest>(r, out, reuse);
    case MessageType::kJoinReply: return DecodeAs<JoinReply>(r, out, reuse);
    case MessageType::kDetachRequest: return DecodeAs<DetachRequest>(r, out, reuse);
    case MessageType::kRemoteFree: return DecodeAs<RemoteFree>(r, out, reuse);
    case MessageType::kSyncWake: return DecodeAs<SyncWake>(r, out, reuse);
    case MessageType::kMarksDropped: return DecodeAs<MarksDropped>(r, out, reuse);
  }
  return Status::Malformed("wire: unknown type");  // unreachable: DecodeHeader checked
}
}  // namespace

Status Decode(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, Message* out) {
  return DecodeMessage(bytes, epoch, nodes, out, false);
}

Status DecodeReusing(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, Message* out) {
  return DecodeMessage(bytes, epoch, nodes, out, true);
}

Status DecodePageReplyView(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, PageReply* head,
                           std::span<const uint8_t>* data) {
  Header h;
  if (Status s = CheckMessage(bytes, epoch, nodes, &h); !s.ok()) return s;
  if (h.type != MessageType::kPageReply) return Status::InvalidArgument("wire: not a page reply");
  BodyReader r(bytes.subspan(kHeaderBytes), h.type, nodes);
  ReadPageReplyHead(r, head);
  r.BytesView(data, "data");
  return r.Finish();
}

}  // namespace svm::wire
