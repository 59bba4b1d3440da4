// libFuzzer target for the notice rings (libsvm/notice_ring.h): what a peer
// deposits by remote WRITE into this node's memory, and its tail word.
//
// The input is a ring size, a head, a tail and the ring's bytes, as a writer
// could leave them. ReadNoticeRecords must never read outside the ring, must
// consume exactly up to the tail or refuse, and every notice that decodes
// must re-encode to the bytes it was decoded from.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libsvm/notice_ring.h"

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "notice_ring_fuzz: %s\n", what);
  std::abort();
}

uint64_t Read64(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 17) return 0;
  // A ring of 64..4096 bytes (a multiple of 8, as the runtime's).
  const uint64_t ring_bytes = 64 + 8 * uint64_t(data[0] % 505);
  const uint64_t head0 = Read64(data + 1) & ~uint64_t(7);
  // Tails near the head mostly, any value sometimes.
  uint64_t tail = Read64(data + 9);
  if ((tail & 0xff) != 0xff) tail = head0 + (tail % (2 * ring_bytes));
  std::vector<uint8_t> ring(ring_bytes);  // exact size: ASan sees any overrun
  const size_t n = std::min<size_t>(ring_bytes, size - 17);
  std::memcpy(ring.data(), data + 17, n);

  uint64_t head = head0;
  std::vector<uint8_t> partial;
  std::string error;
  size_t notices = 0;
  const bool ok = svm::rt::ReadNoticeRecords(
      ring.data(), ring_bytes, &head, tail, &partial,
      [&](std::vector<uint8_t>& bytes) {
        ++notices;
        svm::WriteNotice wn;
        if (!svm::rt::DecodeNotice(bytes, 64, &wn).ok()) return;
        if (svm::rt::EncodeNotice(wn) != bytes) Die("a notice re-encodes differently");
      },
      &error);
  if (ok && head != tail) Die("accepted without reaching the tail");
  if (!ok && error.empty()) Die("refused without a reason");
  if (head - head0 > ring_bytes) Die("consumed more than a ring");
  if (partial.size() > svm::rt::kMaxNoticeBytes) Die("a notice past the bound");
  return 0;
}
