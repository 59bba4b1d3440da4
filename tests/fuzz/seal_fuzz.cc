// libFuzzer target for the sealing layer (util/seal.h) as its readers use it:
// the control FrameReader on a sealed connection, and the tcp NIC's
// SealedStream (nic_ext/tcp/sealed_stream.h).
//
// Mode 0: the input is the byte stream from a peer (forged records). No
// record may open (a forged tag would be a broken cipher), and the readers
// must fail cleanly. Mode 1: the input is plaintext that an honest peer
// seals; one byte of the sealed stream may be flipped in flight. The reader
// must give back exactly the frames sent before the flipped record and none
// after, whatever the chunking (a flipped length may leave it waiting for
// bytes that never come; it must never deliver).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "control/frame.h"
#include "nic_ext/tcp/sealed_stream.h"
#include "util/seal.h"

namespace {

using namespace svm::svmd;
using svm::Status;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "seal_fuzz: %s\n", what);
  std::abort();
}

Key Session() {
  Key k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = uint8_t(i * 13 + 1);
  return k;
}

// Feeds `wire` to a control FrameReader in chunks; returns the frames read.
std::vector<Frame> ReadControl(const std::string& wire, size_t chunk, Opener* open, bool* failed) {
  FrameReader r;
  r.set_opener(open);
  std::vector<Frame> got;
  Status err;
  *failed = false;
  for (size_t pos = 0; pos < wire.size(); pos += chunk) {
    r.Append(wire.data() + pos, std::min(chunk, wire.size() - pos));
    Frame f;
    while (r.Next(&f, &err)) got.push_back(f);
    if (!err.ok()) {
      *failed = true;
      break;
    }
  }
  return got;
}

// Feeds `wire` to a SealedStream in chunks; returns the plaintext opened.
std::vector<uint8_t> ReadNic(const std::vector<uint8_t>& wire, size_t chunk, bool* failed) {
  std::unique_ptr<Seal> seal;
  if (!Seal::Make(Session(), AuthRole::kServer, &seal).ok()) Die("no seal");
  svm::nic::SealedStream s(std::move(seal));
  std::vector<uint8_t> plain;
  *failed = false;
  for (size_t pos = 0; pos < wire.size() && !*failed;) {
    auto room = s.RecvRoom();
    if (room.size() < svm::nic::SealedStream::kMinRoom) Die("too little room");
    const size_t n = std::min({chunk, wire.size() - pos, room.size()});
    std::memcpy(room.data(), wire.data() + pos, n);
    s.Received(n);
    pos += n;
    size_t len = 0;
    Status err;
    while (s.Front(&len, &err)) {
      const size_t at = plain.size();
      plain.resize(at + len);
      if (!s.OpenFront(plain.data() + at).ok()) {
        plain.resize(at);
        *failed = true;
        break;
      }
    }
    if (!err.ok()) *failed = true;
  }
  return plain;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int mode = data[0] & 1;
  const size_t chunk = size_t(data[1] % 64) + 1;
  const size_t flip = size_t(data[2]) | size_t(data[3]) << 8;  // 0xffff: no flip
  std::string in(reinterpret_cast<const char*>(data) + 4, size - 4);
  std::unique_ptr<Seal> server, client;
  if (!Seal::Make(Session(), AuthRole::kServer, &server).ok() ||
      !Seal::Make(Session(), AuthRole::kClient, &client).ok())
    Die("no seal");

  if (mode == 0) {
    bool failed = false;
    if (!ReadControl(in, chunk, &server->in, &failed).empty()) Die("a forged record opened (control)");
    if (!ReadNic(std::vector<uint8_t>(in.begin(), in.end()), chunk, &failed).empty())
      Die("a forged record opened (nic)");
    return 0;
  }

  // Mode 1: the input, cut into frames of the sizes its bytes say, sealed by
  // an honest client.
  std::vector<std::string> sent;
  std::string wire;
  std::vector<size_t> record_end;  // wire offset where each record ends
  for (size_t pos = 0; pos < in.size();) {
    const size_t n = std::min<size_t>(size_t(uint8_t(in[pos])) * 3, in.size() - pos - 1);
    const std::string body = in.substr(pos + 1, n);
    pos += 1 + n;
    const std::string frame = EncodeFrame(MsgType::kStdin, 5, body);
    client->out.Append(frame.data(), frame.size(), &wire);
    sent.push_back(body);
    record_end.push_back(wire.size());
  }
  const bool flipped = flip < wire.size();
  if (flipped) wire[flip] ^= 0x20;
  size_t intact = sent.size();  // records wholly before the flip
  if (flipped)
    for (size_t i = 0; i < record_end.size(); ++i)
      if (flip < record_end[i]) {
        intact = i;
        break;
      }
  bool failed = false;
  const std::vector<Frame> got = ReadControl(wire, chunk, &server->in, &failed);
  if (got.size() != intact) Die("frames read differ from the records before the flip");
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].body != sent[i] || got[i].epoch != 5) Die("a frame differs from what was sent");

  // The NIC's stream: the same plaintext, in one record per frame.
  std::unique_ptr<Seal> nic_client;
  if (!Seal::Make(Session(), AuthRole::kClient, &nic_client).ok()) Die("no seal");
  std::vector<uint8_t> nic_wire, expect;
  record_end.clear();
  for (const std::string& b : sent) {
    nic_client->out.Append(b.data(), b.size(), &nic_wire);
    record_end.push_back(nic_wire.size());
  }
  intact = sent.size();
  if (flip < nic_wire.size()) {
    nic_wire[flip] ^= 0x20;
    for (size_t i = 0; i < record_end.size(); ++i)
      if (flip < record_end[i]) {
        intact = i;
        break;
      }
  }
  for (size_t i = 0; i < intact; ++i) expect.insert(expect.end(), sent[i].begin(), sent[i].end());
  const std::vector<uint8_t> plain = ReadNic(nic_wire, chunk, &failed);
  if (plain != expect) Die("the NIC stream opened other bytes than were sent");
  return 0;
}
