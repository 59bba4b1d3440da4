// libFuzzer target for the wire codecs (protocol/wire.h).
//
// Decodes the input as a message of epoch kFuzzEpoch for a few node counts.
// Whatever decodes must re-encode to exactly the input (every message has one
// encoding) and decode again to an equal message; anything else aborts.
// Memory errors and undefined behaviour are caught by the sanitizers the
// target is built with (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "protocol/wire.h"
#include "tests/fuzz/wire_fuzz.h"

namespace {

[[noreturn]] void Die(const char* what, uint32_t nodes) {
  std::fprintf(stderr, "wire_fuzz: %s (nodes %u)\n", what, nodes);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  for (uint32_t nodes : svm::wire::kFuzzNodeCounts) {
    svm::Message m;
    if (!svm::wire::Decode(in, svm::wire::kFuzzEpoch, nodes, &m).ok()) continue;
    std::vector<uint8_t> again = svm::wire::Encode(m, svm::wire::kFuzzEpoch);
    if (again.size() != size || !std::equal(again.begin(), again.end(), in.begin()))
      Die("re-encoding differs from the input", nodes);
    svm::Message m2;
    if (!svm::wire::Decode(again, svm::wire::kFuzzEpoch, nodes, &m2).ok())
      Die("re-encoded message does not decode", nodes);
    if (!(m2 == m)) Die("decoded message changed across a round trip", nodes);
  }
  return 0;
}
