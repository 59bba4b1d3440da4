#include "control/frame.h"

#include <cstring>

#include "util/net.h"

namespace svm::svmd {

const char* ToString(MsgType t) {
  switch (t) {
    case MsgType::kHello: return "HELLO";
    case MsgType::kPeers: return "PEERS";
    case MsgType::kExit: return "EXIT";
    case MsgType::kTerminate: return "TERMINATE";
    case MsgType::kPing: return "PING";
    case MsgType::kPong: return "PONG";
    case MsgType::kJob: return "JOB";
    case MsgType::kJobStarted: return "JOB_STARTED";
    case MsgType::kJobError: return "JOB_ERROR";
    case MsgType::kOutput: return "OUTPUT";
    case MsgType::kNodeExit: return "NODE_EXIT";
    case MsgType::kStdin: return "STDIN";
    case MsgType::kStdinEof: return "STDIN_EOF";
    case MsgType::kKill: return "KILL";
    case MsgType::kNodeStats: return "NODE_STATS";
    case MsgType::kAgentHello: return "AGENT_HELLO";
  }
  return "?";
}

bool IsValid(uint16_t t) { return (t >= 1 && t <= 6) || (t >= 16 && t <= 25); }

const char* ToString(ExitKind k) {
  switch (k) {
    case ExitKind::kExited: return "exited";
    case ExitKind::kSignaled: return "signaled";
    case ExitKind::kStartFailed: return "start-failed";
    case ExitKind::kUnresponsive: return "unresponsive";
  }
  return "?";
}

void Encoder::U32(uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(char((v >> (8 * i)) & 0xff));
}
void Encoder::Str(std::string_view s) {
  U32(uint32_t(s.size()));
  out_.append(s);
}
void Encoder::Strs(const std::vector<std::string>& v) {
  U32(uint32_t(v.size()));
  for (const auto& s : v) Str(s);
}

uint8_t Decoder::U8() {
  if (failed_ || in_.size() - pos_ < 1) return failed_ = true, 0;
  return uint8_t(in_[pos_++]);
}
uint32_t Decoder::U32() {
  if (failed_ || in_.size() - pos_ < 4) return failed_ = true, 0;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(in_[pos_ + i])) << (8 * i);
  pos_ += 4;
  return v;
}
std::string Decoder::Str() {
  uint32_t n = U32();
  if (failed_ || in_.size() - pos_ < n) return failed_ = true, std::string();
  std::string s(in_.substr(pos_, n));
  pos_ += n;
  return s;
}
std::vector<std::string> Decoder::Strs() {
  uint32_t n = U32();
  std::vector<std::string> v;
  // Each string needs at least its 4-byte length: bound n before reserving.
  if (failed_ || n > kMaxListItems || n > (in_.size() - pos_) / 4) return failed_ = true, v;
  v.reserve(n);
  for (uint32_t i = 0; i < n && !failed_; ++i) v.push_back(Str());
  return v;
}
void Decoder::Raw(void* p, size_t n) {
  if (failed_ || in_.size() - pos_ < n) {
    failed_ = true;
    std::memset(p, 0, n);
    return;
  }
  std::memcpy(p, in_.data() + pos_, n);
  pos_ += n;
}
Status Decoder::Done(MsgType t) const {
  if (failed_) return Status::Malformed(std::string("truncated ") + ToString(t) + " message");
  if (pos_ != in_.size())
    return Status::Malformed(std::string("trailing bytes in ") + ToString(t) + " message");
  return Status::Ok();
}

std::string EncodeFrame(MsgType type, uint32_t epoch, std::string_view body) {
  Encoder e;
  e.U32(kFrameMagic);
  e.U8(uint8_t(kFrameVersion & 0xff));
  e.U8(uint8_t(kFrameVersion >> 8));
  e.U8(uint8_t(uint16_t(type) & 0xff));
  e.U8(uint8_t(uint16_t(type) >> 8));
  e.U32(uint32_t(body.size()));
  e.U32(epoch);
  e.Raw(body.data(), body.size());
  return std::move(e.bytes());
}

static Status ParseHeader(std::string_view h, MsgType* type, uint32_t* len, uint32_t* epoch) {
  Decoder d(h.substr(0, kFrameHeader));
  uint32_t magic = d.U32();
  uint16_t version = uint16_t(d.U8() | d.U8() << 8);
  uint16_t t = uint16_t(d.U8() | d.U8() << 8);
  *len = d.U32();
  *epoch = d.U32();
  if (magic != kFrameMagic) return Status::Malformed("bad frame magic");
  if (version != kFrameVersion)
    return Status::Malformed("unsupported frame version " + std::to_string(version));
  if (!IsValid(t)) return Status::Malformed("unknown message type " + std::to_string(t));
  if (*len > kMaxBody) return Status::Malformed("frame body too long: " + std::to_string(*len));
  *type = MsgType(t);
  return Status::Ok();
}

Status FrameBodyLength(std::string_view header, uint32_t* len) {
  if (header.size() < kFrameHeader) return Status::Malformed("short frame header");
  MsgType type;
  uint32_t epoch = 0;
  return ParseHeader(header, &type, len, &epoch);
}

void FrameReader::Append(const char* p, size_t n) {
  if (opener_ == nullptr) {
    buf_.append(p, n);
    return;
  }
  sealed_.append(p, n);
  size_t pos = 0;
  while (error_.ok() && sealed_.size() - pos >= kSealHeader) {
    const auto* rec = reinterpret_cast<const uint8_t*>(sealed_.data() + pos);
    size_t size = 0;
    error_ = Opener::RecordSize(rec, kMaxSealedFrame, &size);
    if (!error_.ok() || sealed_.size() - pos < size) break;
    const size_t at = buf_.size();
    buf_.resize(at + size - kSealOverhead);
    error_ = opener_->Open(rec, size, reinterpret_cast<uint8_t*>(buf_.data() + at));
    if (!error_.ok()) buf_.resize(at);
    pos += size;
  }
  sealed_.erase(0, pos);
}

bool FrameReader::Next(Frame* f, Status* err) {
  if (!error_.ok() && buf_.size() < kFrameHeader) {
    *err = error_;
    return false;
  }
  if (buf_.size() < kFrameHeader) return false;
  uint32_t len = 0, epoch = 0;
  MsgType type;
  Status s = ParseHeader(buf_, &type, &len, &epoch);
  if (!s.ok()) {
    *err = s;
    return false;
  }
  if (buf_.size() < kFrameHeader + len) return false;
  f->type = type;
  f->epoch = epoch;
  f->body = buf_.substr(kFrameHeader, len);
  buf_.erase(0, kFrameHeader + len);
  return true;
}

Status SendFrame(int fd, MsgType type, uint32_t epoch, std::string_view body, Sealer* seal) {
  std::string bytes = EncodeFrame(type, epoch, body);
  if (seal == nullptr) return WriteAll(fd, bytes.data(), bytes.size());
  if (bytes.size() > kMaxSealedFrame) return Status::InvalidArgument("frame too long to seal");
  std::string sealed;
  seal->Append(bytes.data(), bytes.size(), &sealed);
  return WriteAll(fd, sealed.data(), sealed.size());
}

Status RecvFrame(int fd, int64_t deadline_ms, Frame* f, Opener* open) {
  if (open != nullptr) {
    std::string rec(kSealHeader, '\0');
    Status s = ReadFull(fd, rec.data(), kSealHeader, deadline_ms);
    if (!s.ok()) return s;
    size_t size = 0;
    if (s = Opener::RecordSize(reinterpret_cast<const uint8_t*>(rec.data()), kMaxSealedFrame, &size); !s.ok())
      return s;
    rec.resize(size);
    if (s = ReadFull(fd, rec.data() + kSealHeader, size - kSealHeader, deadline_ms); !s.ok()) return s;
    FrameReader r;
    r.set_opener(open);
    r.Append(rec.data(), rec.size());
    if (r.Next(f, &s)) return Status::Ok();
    return s.ok() ? Status::Malformed("a sealed record that is not one whole frame") : s;
  }
  char h[kFrameHeader];
  Status s = ReadFull(fd, h, sizeof(h), deadline_ms);
  if (!s.ok()) return s;
  uint32_t len = 0;
  if (s = ParseHeader(std::string_view(h, sizeof(h)), &f->type, &len, &f->epoch); !s.ok()) return s;
  f->body.resize(len);
  return ReadFull(fd, f->body.data(), len, deadline_ms);
}

std::string Encode(const HelloMsg& m) {
  Encoder e;
  e.U32(m.node);
  e.Str(m.nic_address);
  return std::move(e.bytes());
}
Status Decode(std::string_view body, HelloMsg* m) {
  Decoder d(body);
  m->node = d.U32();
  m->nic_address = d.Str();
  return d.Done(MsgType::kHello);
}

std::string Encode(const JobRequest& m) {
  Encoder e;
  e.Raw(m.wrapped_key.data(), m.wrapped_key.size());
  e.U32(m.nodes_total);
  e.U32(uint32_t(m.node_ids.size()));
  for (uint32_t id : m.node_ids) e.U32(id);
  e.Strs(m.argv);
  e.Strs(m.env);
  e.Str(m.cwd);
  e.Str(m.control);
  e.U32(m.stdin_node);
  return std::move(e.bytes());
}
Status Decode(std::string_view body, JobRequest* m) {
  Decoder d(body);
  d.Raw(m->wrapped_key.data(), m->wrapped_key.size());
  m->nodes_total = d.U32();
  uint32_t n = d.U32();
  if (n > kMaxListItems || n > body.size() / 4) return Status::Malformed("JOB: node list too long");
  m->node_ids.clear();
  for (uint32_t i = 0; i < n && !d.failed(); ++i) m->node_ids.push_back(d.U32());
  m->argv = d.Strs();
  m->env = d.Strs();
  m->cwd = d.Str();
  m->control = d.Str();
  m->stdin_node = d.U32();
  Status s = d.Done(MsgType::kJob);
  if (!s.ok()) return s;
  if (m->argv.empty()) return Status::Malformed("JOB: empty argv");
  for (uint32_t id : m->node_ids)
    if (id >= m->nodes_total) return Status::Malformed("JOB: node id out of range");
  return Status::Ok();
}

std::string Encode(const AgentHelloMsg& m) {
  Encoder e;
  e.U32(m.index);
  e.Str(m.hostname);
  return std::move(e.bytes());
}
Status Decode(std::string_view body, AgentHelloMsg* m) {
  Decoder d(body);
  m->index = d.U32();
  m->hostname = d.Str();
  return d.Done(MsgType::kAgentHello);
}

std::string Encode(const NodeExitMsg& m) {
  Encoder e;
  e.U32(m.node);
  e.U8(uint8_t(m.kind));
  e.I32(m.value);
  e.Str(m.message);
  return std::move(e.bytes());
}
Status Decode(std::string_view body, NodeExitMsg* m) {
  Decoder d(body);
  m->node = d.U32();
  uint8_t k = d.U8();
  m->value = d.I32();
  m->message = d.Str();
  Status s = d.Done(MsgType::kNodeExit);
  if (!s.ok()) return s;
  if (k > uint8_t(ExitKind::kUnresponsive)) return Status::Malformed("NODE_EXIT: bad kind");
  m->kind = ExitKind(k);
  return Status::Ok();
}

std::string Encode(const NodeStatsMsg& m) {
  Encoder e;
  e.U32(m.node);
  e.Str(m.json);
  return std::move(e.bytes());
}
Status Decode(std::string_view body, NodeStatsMsg* m) {
  Decoder d(body);
  m->node = d.U32();
  m->json = d.Str();
  return d.Done(MsgType::kNodeStats);
}

std::string Encode(const OutputMsg& m) {
  Encoder e;
  e.U32(m.node);
  e.U8(m.stream);
  e.Str(m.data);
  return std::move(e.bytes());
}
Status Decode(std::string_view body, OutputMsg* m) {
  Decoder d(body);
  m->node = d.U32();
  m->stream = d.U8();
  m->data = d.Str();
  Status s = d.Done(MsgType::kOutput);
  if (s.ok() && m->stream != 1 && m->stream != 2) return Status::Malformed("OUTPUT: bad stream");
  return s;
}

std::string EncodeStrings(const std::vector<std::string>& v) {
  Encoder e;
  e.Strs(v);
  return std::move(e.bytes());
}
Status DecodeStrings(std::string_view body, MsgType t, std::vector<std::string>* v) {
  Decoder d(body);
  *v = d.Strs();
  return d.Done(t);
}
std::string EncodeI32(int32_t v) {
  Encoder e;
  e.I32(v);
  return std::move(e.bytes());
}
Status DecodeI32(std::string_view body, MsgType t, int32_t* v) {
  Decoder d(body);
  *v = d.I32();
  return d.Done(t);
}

}  // namespace svm::svmd
