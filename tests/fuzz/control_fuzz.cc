// libFuzzer target for what svmrun, svmd and the nodes read from each other
// before and after the key proof (issue 18): the server side of the HMAC
// exchange (util/auth.h ServerHandshake, what the gate runs for strangers),
// control frames (control/frame.h FrameReader, FrameBodyLength) and every
// message body, svmd's JOB request included.
//
// The first byte picks how the rest is cut into reads (a stream arrives in
// pieces); the rest is the peer's bytes. Handshake: fed at most Wanted()
// bytes at a time, it must refuse or finish, never read past what it asked
// for, and never "prove" a key from random bytes. Frames: every frame the
// reader yields must have come whole from the input, every body that
// decodes must re-encode to the same bytes, and a bad header must stop the
// stream for good. Memory errors and undefined behaviour are caught by the
// sanitizers the target is built with.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <algorithm>

#include "control/frame.h"
#include "util/auth.h"

namespace {

using namespace svm::svmd;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "control_fuzz: %s\n", what);
  std::abort();
}

// Decodes body as type t and checks that what decodes re-encodes exactly.
void CheckBody(MsgType t, const std::string& body) {
  auto same = [&](const std::string& again) {
    if (again != body) Die("a body decoded but did not re-encode to its bytes");
  };
  switch (t) {
    case MsgType::kHello: {
      HelloMsg m;
      if (Decode(body, &m).ok()) same(Encode(m));
      break;
    }
    case MsgType::kJob: {
      JobRequest m;
      if (Decode(body, &m).ok()) same(Encode(m));
      break;
    }
    case MsgType::kNodeExit: {
      NodeExitMsg m;
      if (Decode(body, &m).ok()) same(Encode(m));
      break;
    }
    case MsgType::kNodeStats: {
      NodeStatsMsg m;
      if (Decode(body, &m).ok()) same(Encode(m));
      break;
    }
    case MsgType::kOutput: {
      OutputMsg m;
      if (Decode(body, &m).ok()) same(Encode(m));
      break;
    }
    case MsgType::kPeers:
    case MsgType::kJobError: {
      std::vector<std::string> v;
      if (DecodeStrings(body, t, &v).ok()) same(EncodeStrings(v));
      break;
    }
    case MsgType::kExit:
    case MsgType::kKill: {
      int32_t v = 0;
      if (DecodeI32(body, t, &v).ok()) same(EncodeI32(v));
      break;
    }
    default: break;  // empty bodies, or bytes passed through (STDIN)
  }
}

void FuzzFrames(std::string_view in, size_t chunk) {
  FrameReader reader;
  size_t consumed = 0;
  for (size_t pos = 0; pos < in.size();) {
    const size_t n = std::min(chunk, in.size() - pos);
    reader.Append(in.data() + pos, n);
    pos += n;
    Frame f;
    svm::Status err;
    while (reader.Next(&f, &err)) {
      if (!IsValid(uint16_t(f.type))) Die("an invalid type decoded");
      if (f.body.size() > kMaxBody) Die("a body past kMaxBody");
      const std::string again = EncodeFrame(f.type, f.epoch, f.body);
      if (in.substr(consumed, again.size()) != again) Die("a frame that is not the input's bytes");
      uint32_t len = 0;
      if (!FrameBodyLength(again, &len).ok() || len != f.body.size()) Die("FrameBodyLength disagrees");
      consumed += again.size();
      CheckBody(f.type, f.body);
    }
    if (!err.ok()) {
      uint32_t len = 0;
      if (FrameBodyLength(in.substr(consumed), &len).ok())
        Die("the reader refused a header FrameBodyLength accepts");
      return;
    }
  }
}

void FuzzHandshake(std::string_view in, size_t chunk) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
  Key key{};
  key[0] = 1;
  ServerHandshake hs;
  if (hs.Start(sv[0], key).ok()) {
    size_t pos = 0;
    while (pos < in.size() && !hs.done()) {
      const size_t n = std::min({chunk, in.size() - pos, hs.Wanted()});
      if (n == 0) Die("a handshake that wants nothing and is not done");
      if (!hs.Feed(sv[0], reinterpret_cast<const uint8_t*>(in.data()) + pos, n).ok()) break;
      pos += n;
    }
    // 72 random bytes proving a 256-bit key: a broken verifier.
    if (hs.done()) Die("random bytes passed the key proof");
  }
  close(sv[0]);
  close(sv[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = size_t(data[0] % 64) + 1;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  FuzzFrames(in, chunk);
  FuzzHandshake(in, chunk);
  return 0;
}
