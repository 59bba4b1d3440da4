// libFuzzer target for the shm transport's ring decoder
// (nic_ext/shm/ring_reader.h): the bytes and the tail another process wrote
// into this node's shared memory.
//
// The input is a ring size, a head, a tail, the ring's bytes and how many
// bytes each call sees (the sender's tail advancing). The reader must never
// read outside the ring, consume at most up to the tail, deliver messages
// no longer than kMaxMessage, and deliver exactly the messages a reference
// parse of the same byte stream finds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nic_ext/shm/ring_reader.h"

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "shm_ring_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using svm::nic::Message;
  using svm::nic::RingReader;
  if (size < 12) return 0;
  const uint32_t ring_bytes = 16u << (data[0] % 9);  // 16 B .. 4 KiB
  uint64_t head = 0;
  std::memcpy(&head, data + 1, 8);
  const size_t step = size_t(data[9] % 32) + 1;
  uint64_t tail = head + uint64_t(data[10] | data[11] << 8) % (2 * ring_bytes);
  std::vector<uint8_t> ring(ring_bytes);  // exact size: ASan sees any overrun
  std::memcpy(ring.data(), data + 12, std::min<size_t>(ring_bytes, size - 12));

  // Reference: the stream the ring holds from head, parsed in one go.
  std::vector<uint8_t> stream;
  const bool too_much = tail - head > ring_bytes;
  if (!too_much)
    for (uint64_t p = head; p != tail; ++p) stream.push_back(ring[p & (ring_bytes - 1)]);
  std::vector<std::vector<uint8_t>> expect;
  bool expect_too_long = false;
  for (size_t at = 0; at + 4 <= stream.size();) {
    uint32_t len = 0;
    std::memcpy(&len, stream.data() + at, 4);
    if (len > svm::nic::kMaxMessage) {
      expect_too_long = true;
      break;
    }
    if (stream.size() - at - 4 < len) break;
    expect.emplace_back(stream.begin() + long(at) + 4, stream.begin() + long(at + 4 + len));
    at += 4 + len;
  }

  RingReader reader;
  std::vector<std::vector<uint8_t>> got;
  uint64_t at = head;
  RingReader::Result r = RingReader::Result::kOk;
  while (at != tail && r == RingReader::Result::kOk) {
    const uint64_t upto = too_much ? tail : at + std::min<uint64_t>(step, tail - at);  // positions wrap
    const uint64_t before = at;
    r = reader.Read(ring.data(), ring_bytes, &at, upto, 7, [&](Message&& m) {
      if (m.from != 7) Die("wrong sender");
      if (m.bytes.size() > svm::nic::kMaxMessage) Die("message over kMaxMessage");
      got.push_back(std::move(m.bytes));
    });
    if (r == RingReader::Result::kOk && at != upto) Die("stopped short of the tail");
    if (at - before > upto - before) Die("consumed past the tail");
  }
  if (too_much != (r == RingReader::Result::kTooMuch)) Die("more than a ring outstanding went unnoticed");
  if (!too_much) {
    if (expect_too_long != (r == RingReader::Result::kTooLong)) Die("a too long message went unnoticed");
    if (got != expect) Die("messages differ from the stream's");
  }
  return 0;
}
