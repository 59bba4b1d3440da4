#include "nic_ext/tcp/frame.h"

#include <fmt/format.h>

#include "util/coding.h"

namespace svm::nic::frame {

using coding::Reader;
using coding::Writer;

const char* ToString(Type t) {
  switch (t) {
    case Type::kHello: return "hello";
    case Type::kSend: return "send";
    case Type::kWrite: return "write";
    case Type::kRead: return "read";
    case Type::kCas: return "cas";
    case Type::kFaa: return "faa";
    case Type::kLock: return "lock";
    case Type::kUnlock: return "unlock";
    case Type::kResponse: return "response";
    case Type::kWriteRuns: return "write-runs";
  }
  return "?";
}

bool IsValid(Type t) {
  auto v = static_cast<uint8_t>(t);
  return v >= static_cast<uint8_t>(Type::kHello) && v <= static_cast<uint8_t>(Type::kWriteRuns);
}

namespace {

// Writes a header with a zero length; returns where the frame starts.
size_t Begin(Type t, uint32_t epoch, Writer* w) {
  size_t at = w->size();
  w->PutU32(kMagic);
  w->PutU8(kVersion);
  w->PutU8(static_cast<uint8_t>(t));
  w->PutU16(0);
  w->PutU32(0);
  w->PutU32(epoch);
  return at;
}

void End(size_t at, Writer* w) {
  w->PatchU32(at + 8, static_cast<uint32_t>(w->size() - at - kHeaderBytes));
}

void PutSges(std::span<const Sge> sges, std::vector<uint8_t>* out) {
  for (const Sge& s : sges) {
    auto* p = static_cast<const uint8_t*>(s.addr);
    if (s.length != 0) out->insert(out->end(), p, p + s.length);
  }
}

Decoded Bad(std::string* error, std::string msg) {
  *error = std::move(msg);
  return Decoded::kMalformed;
}

bool IsValidStatus(uint8_t s) { return s <= static_cast<uint8_t>(WcStatus::kFlushed); }

}  // namespace

Decoded Decode(std::span<const uint8_t> in, uint32_t epoch, Frame* out, size_t* consumed,
               std::string* error) {
  if (in.size() < kHeaderBytes) return Decoded::kNeedMore;
  Reader h(in.first(kHeaderBytes));
  uint32_t magic = 0, length = 0, ep = 0;
  uint8_t version = 0, type = 0;
  uint16_t zero = 0;
  (void)(h.GetU32(&magic) && h.GetU8(&version) && h.GetU8(&type) && h.GetU16(&zero) &&
         h.GetU32(&length) && h.GetU32(&ep));
  if (magic != kMagic) return Bad(error, fmt::format("bad magic {:#010x}", magic));
  if (version != kVersion) return Bad(error, fmt::format("unsupported version {}", version));
  Frame f;
  f.type = static_cast<Type>(type);
  if (!IsValid(f.type)) return Bad(error, fmt::format("unknown frame type {}", type));
  if (zero != 0) return Bad(error, "reserved header bits set");
  if (ep != epoch) return Bad(error, fmt::format("epoch {} != job epoch {}", ep, epoch));
  if (length > kMaxBody) return Bad(error, fmt::format("body of {} bytes > {}", length, kMaxBody));

  // Fixed part of each body: anything shorter is malformed, and only some
  // types carry data after it.
  size_t fixed = 0;
  bool has_data = false;
  switch (f.type) {
    case Type::kHello: fixed = 8; break;
    case Type::kSend: has_data = true; break;
    case Type::kWrite:
    case Type::kWriteRuns: fixed = kOneSidedBytes; has_data = true; break;
    case Type::kRead: fixed = kOneSidedBytes + 4; break;
    case Type::kCas: fixed = kOneSidedBytes + 16; break;
    case Type::kFaa: fixed = kOneSidedBytes + 8; break;
    case Type::kLock:
    case Type::kUnlock: fixed = 8; break;
    case Type::kResponse: fixed = kResponseBytes; has_data = true; break;
  }
  if (length < fixed || (!has_data && length != fixed)) {
    return Bad(error, fmt::format("{} body of {} bytes", ToString(f.type), length));
  }
  const size_t data_len = length - fixed;
  if (f.type == Type::kSend && data_len > kMaxMessage) return Bad(error, "SEND too large");
  if (f.type != Type::kSend && data_len > kMaxTransfer) return Bad(error, "data too large");
  if (in.size() - kHeaderBytes < length) return Decoded::kNeedMore;

  Reader r(in.subspan(kHeaderBytes, length));
  bool ok = true;
  switch (f.type) {
    case Type::kHello:
      ok = r.GetU32(&f.node) && r.GetU32(&f.num_nodes);
      break;
    case Type::kSend:
      break;
    case Type::kWrite:
    case Type::kWriteRuns:
    case Type::kRead:
    case Type::kCas:
    case Type::kFaa:
      ok = r.GetU32(&f.req) && r.GetU32(&f.region) && r.GetU64(&f.offset);
      if (f.type == Type::kRead) ok = ok && r.GetU32(&f.length);
      if (f.type == Type::kCas) ok = ok && r.GetU64(&f.compare) && r.GetU64(&f.operand);
      if (f.type == Type::kFaa) ok = ok && r.GetU64(&f.operand);
      break;
    case Type::kLock:
    case Type::kUnlock:
      ok = r.GetU32(&f.req) && r.GetU32(&f.lock);
      break;
    case Type::kResponse: {
      uint8_t op = 0, status = 0;
      uint16_t z = 0;
      ok = r.GetU32(&f.req) && r.GetU8(&op) && r.GetU8(&status) && r.GetU16(&z) &&
           r.GetU64(&f.value);
      if (!ok) break;
      f.op = static_cast<Opcode>(op);
      if (!IsValid(f.op) || f.op == Opcode::kSend) return Bad(error, fmt::format("response to opcode {}", op));
      if (!IsValidStatus(status)) return Bad(error, fmt::format("bad status {}", status));
      if (z != 0) return Bad(error, "reserved response bits set");
      f.status = static_cast<WcStatus>(status);
      if (data_len != 0 && (f.op != Opcode::kRead || f.status != WcStatus::kSuccess)) {
        return Bad(error, fmt::format("{} response carries data", ToString(f.op)));
      }
      break;
    }
  }
  if (!ok) return Bad(error, "truncated body");  // unreachable: length checked above
  if (f.type == Type::kRead && f.length > kMaxTransfer) {
    return Bad(error, fmt::format("READ of {} bytes > {}", f.length, kMaxTransfer));
  }
  if (has_data) {
    std::span<const uint8_t> d;
    (void)r.GetBytes(data_len, &d);
    f.data = d;
  }
  *out = f;
  *consumed = kHeaderBytes + length;
  return Decoded::kOk;
}

void Encode(const Frame& f, uint32_t epoch, std::vector<uint8_t>* out) {
  Writer w(out);
  size_t at = Begin(f.type, epoch, &w);
  switch (f.type) {
    case Type::kHello:
      w.PutU32(f.node);
      w.PutU32(f.num_nodes);
      break;
    case Type::kSend:
      w.PutBytes(f.data);
      break;
    case Type::kWrite:
    case Type::kWriteRuns:
    case Type::kRead:
    case Type::kCas:
    case Type::kFaa:
      w.PutU32(f.req);
      w.PutU32(f.region);
      w.PutU64(f.offset);
      if (f.type == Type::kWrite || f.type == Type::kWriteRuns) w.PutBytes(f.data);
      if (f.type == Type::kRead) w.PutU32(f.length);
      if (f.type == Type::kCas) w.PutU64(f.compare);
      if (f.type == Type::kCas || f.type == Type::kFaa) w.PutU64(f.operand);
      break;
    case Type::kLock:
    case Type::kUnlock:
      w.PutU32(f.req);
      w.PutU32(f.lock);
      break;
    case Type::kResponse:
      w.PutU32(f.req);
      w.PutU8(static_cast<uint8_t>(f.op));
      w.PutU8(static_cast<uint8_t>(f.status));
      w.PutU16(0);
      w.PutU64(f.value);
      w.PutBytes(f.data);
      break;
  }
  End(at, &w);
}

void EncodeSend(uint32_t epoch, std::span<const Sge> sges, std::vector<uint8_t>* out) {
  Writer w(out);
  size_t at = Begin(Type::kSend, epoch, &w);
  PutSges(sges, out);
  End(at, &w);
}

void EncodeWrite(uint32_t epoch, uint32_t req, RegionId region, uint64_t offset,
                 std::span<const Sge> sges, std::vector<uint8_t>* out, bool runs) {
  Writer w(out);
  size_t at = Begin(runs ? Type::kWriteRuns : Type::kWrite, epoch, &w);
  w.PutU32(req);
  w.PutU32(region);
  w.PutU64(offset);
  PutSges(sges, out);
  End(at, &w);
}

void EncodeResponse(uint32_t epoch, uint32_t req, Opcode op, WcStatus status, uint64_t value,
                    std::span<const uint8_t> data, std::vector<uint8_t>* out) {
  Frame f;
  f.type = Type::kResponse;
  f.req = req;
  f.op = op;
  f.status = status;
  f.value = value;
  f.data = data;
  Encode(f, epoch, out);
}

}  // namespace svm::nic::frame
