// libFuzzer target for the tcp NIC's frame decoder (nic_ext/tcp/frame.h).
//
// Treats the input as a byte stream from a peer and decodes frames from its
// front until the decoder wants more bytes or reports a malformed frame, as
// the NIC thread does. Every frame that decodes must lie inside the input and
// re-encode to exactly the bytes it was decoded from (one encoding per
// frame); anything else aborts. Memory errors and undefined behaviour are
// caught by the sanitizers the target is built with.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "nic_ext/tcp/frame.h"

namespace {

constexpr uint32_t kEpoch = 1;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "nic_frame_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace svm::nic::frame;
  std::span<const uint8_t> in(data, size);
  std::vector<uint8_t> again;
  std::string error;
  while (!in.empty()) {
    Frame f;
    size_t used = 0;
    Decoded d = Decode(in, kEpoch, &f, &used, &error);
    if (d == Decoded::kMalformed) {
      if (error.empty()) Die("malformed without a reason");
      break;
    }
    if (d == Decoded::kNeedMore) break;
    if (used < kHeaderBytes || used > in.size()) Die("consumed outside the input");
    if (!IsValid(f.type)) Die("invalid type decoded");
    if (!f.data.empty() && (f.data.data() < in.data() || f.data.data() + f.data.size() > in.data() + used)) {
      Die("data outside the frame");
    }
    again.clear();
    Encode(f, kEpoch, &again);
    if (again.size() != used || std::memcmp(again.data(), in.data(), used) != 0) {
      Die("re-encoding differs from the input");
    }
    in = in.subspan(used);
  }
  return 0;
}
