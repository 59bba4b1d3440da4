// libFuzzer target for the tcp NIC's frame decoder (nic_ext/tcp/frame.h).
//
// Treats the input as a byte stream from a peer and decodes frames from its
// front until the decoder wants more bytes or reports a malformed frame, as
// the NIC thread does. Every frame that decodes must lie inside the input and
// re-encode to exactly the bytes it was decoded from (one encoding per
// frame); anything else aborts. A WRITE_RUNS frame's runs are then stored
// as the target does (RegionTable::StoreRuns, into a 4 KiB region): all or
// none, never outside the region. Memory errors and undefined behaviour are
// caught by the sanitizers the target is built with.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "nic_ext/region_table.h"
#include "nic_ext/tcp/frame.h"
#include "util/coding.h"

namespace {

constexpr uint32_t kEpoch = 1;
constexpr size_t kRegionBytes = 4096;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "nic_frame_fuzz: %s\n", what);
  std::abort();
}

// Stores f's runs into a fresh region of 0xee bytes: refused, the region
// must be untouched; stored, it must equal the runs applied in order to a
// shadow copy (checked here, run by run, against the region's bounds).
void StoreRuns(const svm::nic::frame::Frame& f) {
  using namespace svm::nic;
  static uint8_t region[kRegionBytes], shadow[kRegionBytes];
  std::memset(region, 0xee, sizeof region);
  std::memset(shadow, 0xee, sizeof shadow);
  RegionTable table;
  if (!table.Add({0, region, sizeof region}).ok()) Die("region refused");
  const RegionId id = f.region % 2;  // 1 is unknown
  const uint64_t base = f.offset % (2 * kRegionBytes);
  const WcStatus st = table.StoreRuns(id, base, f.data);
  if (st != WcStatus::kSuccess) {
    if (std::memcmp(region, shadow, sizeof region) != 0) Die("a refused WRITE_RUNS stored bytes");
    return;
  }
  for (size_t at = 0; at < f.data.size();) {
    if (f.data.size() - at < kRunHeaderBytes) Die("stored a truncated header");
    const uint32_t off = svm::coding::DecodeFixed<uint32_t>(f.data.data() + at);
    const uint32_t len = svm::coding::DecodeFixed<uint32_t>(f.data.data() + at + 4);
    at += kRunHeaderBytes;
    if (id != 0 || len == 0 || len > f.data.size() - at || base + off + len > sizeof region)
      Die("stored a run it should have refused");
    std::memcpy(shadow + base + off, f.data.data() + at, len);
    at += len;
  }
  if (std::memcmp(region, shadow, sizeof region) != 0) Die("stored runs differ from the runs");
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
    if (f.type == Type::kWriteRuns) StoreRuns(f);
    again.clear();
    Encode(f, kEpoch, &again);
    if (again.size() != used || std::memcmp(again.data(), in.data(), used) != 0) {
      Die("re-encoding differs from the input");
    }
    in = in.subspan(used);
  }
  return 0;
}
