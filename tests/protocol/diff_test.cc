// Diffs: every supported run finder against a byte-at-a-time oracle and the
// scalar reference; Encode -> Apply round trips; malformed encodings rejected
// with the page untouched. Impls the CPU lacks are skipped, with the reason.
#include "protocol/diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace svm::diff {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kPageSizes[] = {4096, 8192, 65536};

// The definition, one byte at a time: maximal stretches of differing bytes.
std::vector<diff::Run> Oracle(const Bytes& page, const Bytes& twin) {
  std::vector<diff::Run> runs;
  for (size_t i = 0; i < page.size(); ++i) {
    if (page[i] == twin[i]) continue;
    if (!runs.empty() && runs.back().offset + runs.back().length == i) {
      ++runs.back().length;
    } else {
      runs.push_back(diff::Run{static_cast<uint32_t>(i), 1});
    }
  }
  return runs;
}

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// Makes byte i of page differ from the twin (any non-zero flip will do).
void Flip(Bytes& page, size_t i, uint8_t by = 0xff) { page[i] ^= by; }

class DiffTest : public testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    if (!Supported(GetParam())) {
      GTEST_SKIP() << "skipped [CPU lacks " << ToString(GetParam()) << "]";
    }
  }

  // Checks one page/twin pair under the impl being tested.
  void Check(const Bytes& page, const Bytes& twin, const std::string& what) {
    SCOPED_TRACE(what + " size=" + std::to_string(page.size()));
    const Impl impl = GetParam();
    const std::vector<diff::Run> want = Oracle(page, twin);

    // FindRuns appends: a run already there stays first.
    const diff::Run sentinel{12345, 6789};
    std::vector<diff::Run> got{sentinel};
    FindRuns(page, twin, &got, impl);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.front(), sentinel);
    got.erase(got.begin());
    ASSERT_EQ(got, want);

    std::vector<diff::Run> scalar;
    FindRuns(page, twin, &scalar, Impl::kScalar);
    EXPECT_EQ(scalar, want);

    // Encode appends after what is in out, and matches the scalar bytes.
    const Bytes prefix = {1, 2, 3};
    Bytes enc = prefix;
    const EncodeResult r = Encode(page, twin, &enc, impl);
    size_t changed = 0;
    for (const diff::Run& run : want) changed += run.length;
    EXPECT_EQ(r.runs, want.size());
    EXPECT_EQ(r.bytes, changed);
    ASSERT_EQ(enc.size(), prefix.size() + EncodedSize(want));
    ASSERT_TRUE(std::equal(prefix.begin(), prefix.end(), enc.begin()));
    enc.erase(enc.begin(), enc.begin() + prefix.size());
    Bytes enc_scalar;
    Encode(page, twin, &enc_scalar, Impl::kScalar);
    EXPECT_EQ(enc, enc_scalar);

    // Round trip: applying the diff to the twin reproduces the page.
    EXPECT_TRUE(Validate(enc, page.size()).ok());
    Bytes copy = twin;
    const Status s = Apply(enc, copy);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(copy, page);

    // The smallest form: the same changes in no more bytes than the runs.
    Bytes small = prefix;
    const EncodeResult rs = Encode(page, twin, &small, impl, Form::kSmallest);
    ASSERT_TRUE(std::equal(prefix.begin(), prefix.end(), small.begin()));
    small.erase(small.begin(), small.begin() + prefix.size());
    EXPECT_EQ(rs.runs, want.size());
    EXPECT_EQ(rs.bytes, changed);
    if (rs.masked) {
      EXPECT_LT(small.size(), enc.size());
      EXPECT_EQ(page.size() % kMaskedGrain, 0u);
    } else {
      EXPECT_EQ(small, enc);
    }
    EXPECT_TRUE(Validate(small, page.size()).ok());
    // Applied to a copy in which another writer changed every byte this
    // diff does not carry, it writes this diff's bytes and no other.
    Bytes other = twin, merged = page;
    for (size_t i = 0; i < page.size(); ++i) {
      if (page[i] == twin[i]) merged[i] = other[i] = static_cast<uint8_t>(twin[i] ^ 0x5c);
    }
    for (Impl apply : {Impl::kScalar, impl}) {
      SCOPED_TRACE(std::string("apply ") + ToString(apply) + (rs.masked ? " masked" : " runs"));
      Bytes target = other;
      ASSERT_TRUE(Apply(small, target, apply).ok());
      EXPECT_EQ(target, merged);
    }
  }
};

TEST_P(DiffTest, RandomSparseChanges) {
  for (size_t size : kPageSizes) {
    for (uint64_t seed = 0; seed < 100; ++seed) {
      std::mt19937_64 rng(seed);
      const Bytes twin = RandomBytes(rng, size);
      Bytes page = twin;
      const size_t changes = rng() % 40;
      for (size_t c = 0; c < changes; ++c) {
        const size_t at = rng() % size;
        const size_t len = 1 + (rng() % 4 == 0 ? rng() % 300 : rng() % 12);
        for (size_t i = at; i < at + len && i < size; ++i) {
          Flip(page, i, static_cast<uint8_t>(1 + rng() % 255));
        }
      }
      Check(page, twin, "seed=" + std::to_string(seed));
    }
  }
}

TEST_P(DiffTest, NoneDiffer) {
  for (size_t size : kPageSizes) {
    std::mt19937_64 rng(size);
    const Bytes twin = RandomBytes(rng, size);
    Check(twin, twin, "none");
  }
}

TEST_P(DiffTest, AllDiffer) {
  for (size_t size : kPageSizes) {
    std::mt19937_64 rng(size);
    const Bytes twin = RandomBytes(rng, size);
    Bytes page = twin;
    for (size_t i = 0; i < size; ++i) Flip(page, i);
    Check(page, twin, "all");
  }
}

// Every offset of a 4 KiB page, so every word (8) and cache-line (64) edge.
TEST_P(DiffTest, SingleByteAtEveryOffset) {
  const Bytes twin(4096, 0x5a);
  for (size_t i = 0; i < twin.size(); ++i) {
    Bytes page = twin;
    Flip(page, i);
    Check(page, twin, "byte=" + std::to_string(i));
  }
}

TEST_P(DiffTest, SingleBytesAtWordAndLineEdges) {
  for (size_t size : kPageSizes) {
    const Bytes twin(size, 0);
    for (size_t edge : {size_t{8}, size_t{64}}) {
      Bytes page = twin;
      for (size_t i = edge; i < size; i += edge) {
        Flip(page, i - 1);  // last byte before the edge
        Flip(page, i + 1 < size ? i + 1 : i);  // not touching it
      }
      Check(page, twin, "edge=" + std::to_string(edge));
    }
  }
}

TEST_P(DiffTest, RunsCrossingBlockBoundaries) {
  const Bytes twin(8192, 0x11);
  for (size_t start = 40; start < 136; ++start) {
    for (size_t len : {1, 2, 7, 8, 9, 23, 24, 25, 63, 64, 65, 127, 128, 129, 200, 1000}) {
      Bytes page = twin;
      for (size_t i = start; i < start + len; ++i) Flip(page, i);
      // A second run that ends exactly at, and one that starts exactly at, a
      // later block edge.
      Flip(page, 4095);
      Flip(page, 4160);
      Check(page, twin, "start=" + std::to_string(start) + " len=" + std::to_string(len));
    }
  }
}

TEST_P(DiffTest, FirstAndLastByte) {
  for (size_t size : kPageSizes) {
    const Bytes twin(size, 0xee);
    Bytes first = twin, last = twin, both = twin;
    Flip(first, 0);
    Flip(last, size - 1);
    Flip(both, 0);
    Flip(both, size - 1);
    Check(first, twin, "first");
    Check(last, twin, "last");
    Check(both, twin, "both");
    // A run that reaches the end of the page stays open to the very end.
    Bytes tail = twin;
    for (size_t i = size - 100; i < size; ++i) Flip(tail, i);
    Check(tail, twin, "tail run");
  }
}

TEST_P(DiffTest, Patterns) {
  for (size_t size : kPageSizes) {
    const Bytes twin(size, 0);
    for (size_t period : {2, 3, 4, 5, 63, 65}) {
      for (size_t phase = 0; phase < 2; ++phase) {
        Bytes page = twin;
        for (size_t i = phase; i < size; i += period) Flip(page, i);
        Check(page, twin, "every " + std::to_string(period) + " phase " + std::to_string(phase));
        // The complement: runs of period-1 bytes separated by one equal byte.
        Bytes inverse = twin;
        for (size_t i = 0; i < size; ++i) {
          if (page[i] == twin[i]) Flip(inverse, i);
        }
        Check(inverse, twin, "all but every " + std::to_string(period));
      }
    }
  }
}

// Sizes that are not multiples of a block exercise the SIMD tails.
TEST_P(DiffTest, OddSizes) {
  for (size_t size : {0, 1, 7, 8, 63, 64, 65, 100, 127, 129, 255, 257, 4095, 4097, 4159}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      std::mt19937_64 rng(seed);
      const Bytes twin = RandomBytes(rng, size);
      Bytes page = twin;
      for (size_t i = 0; i < size; ++i) {
        if (rng() % (seed % 4 + 2) == 0) Flip(page, i);
      }
      Check(page, twin, "seed=" + std::to_string(seed));
    }
    Bytes twin(size, 1), all(size, 2);
    Check(all, twin, "all");
  }
}

// Pages seen through views that are not 64-byte aligned (the SIMD loads are
// unaligned; nothing may assume otherwise).
TEST_P(DiffTest, UnalignedViews) {
  std::mt19937_64 rng(3);
  const Bytes twin_buf = RandomBytes(rng, 4096 + 64);
  Bytes page_buf = twin_buf;
  for (size_t i = 0; i < page_buf.size(); ++i) {
    if (rng() % 3 == 0) Flip(page_buf, i);
  }
  for (size_t shift : {1, 3, 8, 31, 33}) {
    const std::span<const uint8_t> page(page_buf.data() + shift, 4096);
    const std::span<const uint8_t> twin(twin_buf.data() + 64 - shift, 4096);
    std::vector<diff::Run> got, want;
    FindRuns(page, twin, &got, GetParam());
    FindRuns(page, twin, &want, Impl::kScalar);
    EXPECT_EQ(got, want) << "shift=" << shift;
    EXPECT_FALSE(got.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(AllImpls, DiffTest,
                         testing::Values(Impl::kScalar, Impl::kAvx2, Impl::kAvx512),
                         [](const testing::TestParamInfo<Impl>& info) {
                           return std::string(ToString(info.param));
                         });

TEST(DiffImplTest, BestIsSupported) {
  EXPECT_TRUE(Supported(Best()));
  EXPECT_EQ(Best(), Best());
  EXPECT_TRUE(Supported(Impl::kScalar));
  EXPECT_STREQ(ToString(Impl::kScalar), "scalar");
  EXPECT_STREQ(ToString(Impl::kAvx2), "avx2");
  EXPECT_STREQ(ToString(Impl::kAvx512), "avx512");
  // A wider ISA is never chosen over a narrower one that is missing.
  if (Best() == Impl::kAvx512) {
    EXPECT_TRUE(Supported(Impl::kAvx2));
  }
}

TEST(DiffEncodingTest, LayoutIsLittleEndianHeaderThenBytes) {
  Bytes twin(4096, 0), page = twin;
  page[0x0102] = 0xaa;
  page[0x0103] = 0xbb;
  Bytes enc;
  Encode(page, twin, &enc);
  const Bytes want = {0x02, 0x01, 0, 0, 2, 0, 0, 0, 0xaa, 0xbb};
  EXPECT_EQ(enc, want);
  const diff::Run runs[] = {{0x0102, 2}, {7, 1}};
  EXPECT_EQ(EncodedSize(runs), 2 * kRunHeaderBytes + 3);
  EXPECT_EQ(EncodedSize({}), 0u);
}

// Two writers change neighbouring bytes of one word; their diffs carry only
// their own bytes, so applying both to the home copy keeps both writes.
TEST(DiffEncodingTest, ConcurrentWritersToOneWordMerge) {
  const Bytes twin(4096, 0);
  Bytes a = twin, b = twin;
  a[16] = 1;
  a[18] = 3;
  b[17] = 2;
  b[19] = 4;
  Bytes da, db;
  Encode(a, twin, &da);
  Encode(b, twin, &db);
  Bytes home = twin;
  ASSERT_TRUE(Apply(da, home).ok());
  ASSERT_TRUE(Apply(db, home).ok());
  EXPECT_EQ(home[16], 1);
  EXPECT_EQ(home[17], 2);
  EXPECT_EQ(home[18], 3);
  EXPECT_EQ(home[19], 4);
}

// Scattered writes (a few bytes every few, as radix's keys land) take a
// masked block: the blocks from the first changed to the last, a mask word
// and 64 bytes each.
TEST(DiffEncodingTest, ScatteredWritesTakeOneMaskedBlock) {
  const Bytes twin(4096, 0);
  Bytes page = twin;
  for (size_t i = 640; i < 1408; i += 8) page[i] = page[i + 1] = page[i + 2] = 7;
  Bytes enc;
  const EncodeResult r = Encode(page, twin, &enc, Best(), Form::kSmallest);
  EXPECT_TRUE(r.masked);
  EXPECT_EQ(r.runs, 96u);
  EXPECT_EQ(r.bytes, 288u);
  const size_t blocks = (1408 - 640) / 64;
  ASSERT_EQ(enc.size(), kRunHeaderBytes + blocks * (8 + 64));
  EXPECT_EQ(enc[0] | enc[1] << 8, 640);                                // offset
  EXPECT_EQ(enc[4] | enc[5] << 8 | enc[6] << 16 | enc[7] << 24, int(kMasked | (blocks * 64)));  // length
  EXPECT_EQ(enc[8], 0x07);  // bytes 0, 1, 2 of the block changed
  EXPECT_EQ(enc[9], 0x07);  // and 8, 9, 10
  Bytes runs;
  EXPECT_FALSE(Encode(page, twin, &runs, Best(), Form::kRuns).masked);
  EXPECT_EQ(runs.size(), 96 * (kRunHeaderBytes + 3));
  // A few long runs stay runs.
  Bytes few = twin;
  std::fill(few.begin() + 100, few.begin() + 2000, 1);
  Bytes enc_few;
  EXPECT_FALSE(Encode(few, twin, &enc_few, Best(), Form::kSmallest).masked);
  EXPECT_EQ(enc_few.size(), kRunHeaderBytes + 1900);
}

// Two writers interleave bytes all over a page: each masked diff carries the
// other's bytes unchanged, and applying both keeps both writes.
TEST(DiffEncodingTest, ConcurrentScatteredWritersMerge) {
  const Bytes twin(4096, 0);
  Bytes a = twin, b = twin;
  for (size_t i = 0; i < 4096; i += 4) {
    a[i] = 1;
    b[i + 1] = 2;
  }
  Bytes da, db;
  ASSERT_TRUE(Encode(a, twin, &da, Best(), Form::kSmallest).masked);
  ASSERT_TRUE(Encode(b, twin, &db, Best(), Form::kSmallest).masked);
  for (Impl impl : {Impl::kScalar, Best()}) {
    Bytes home = twin;
    ASSERT_TRUE(Apply(da, home, impl).ok());
    ASSERT_TRUE(Apply(db, home, impl).ok());
    for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(home[i], i % 4 == 0 ? 1 : i % 4 == 1 ? 2 : 0) << i;
  }
}

// A masked block as raw bytes: header, then `masks` (one per 64 bytes of
// `length` unless given otherwise), then the data bytes present.
Bytes RawMasked(uint32_t offset, uint32_t length, std::vector<uint64_t> masks, size_t data) {
  Bytes b;
  for (uint32_t v : {offset, kMasked | length}) {
    for (int s = 0; s < 32; s += 8) b.push_back(static_cast<uint8_t>(v >> s));
  }
  for (uint64_t m : masks) {
    for (int s = 0; s < 64; s += 8) b.push_back(static_cast<uint8_t>(m >> s));
  }
  b.insert(b.end(), data, 0xcd);
  return b;
}

TEST(DiffValidateTest, RejectsMalformedMaskedBlocks) {
  std::mt19937_64 rng(11);
  const Bytes original = RandomBytes(rng, 4096);
  Bytes after_run = {0, 0, 0, 0, 1, 0, 0, 0, 9};
  const Bytes block = RawMasked(64, 64, {1}, 64);
  after_run.insert(after_run.end(), block.begin(), block.end());
  Bytes trailing = RawMasked(0, 64, {1}, 64);
  trailing.push_back(0);
  const std::pair<const char*, Bytes> cases[] = {
      {"length 0", RawMasked(0, 0, {}, 0)},
      {"length not whole blocks", RawMasked(0, 100, {1, 1}, 100)},
      {"offset not on a block", RawMasked(8, 64, {1}, 64)},
      {"past page end", RawMasked(4032, 128, {1, 1}, 128)},
      {"offset at page end", RawMasked(4096, 64, {1}, 64)},
      {"length wraps", RawMasked(0x7fffffc0, 0x7fffffc0, {1}, 64)},
      {"data short", RawMasked(0, 128, {1, 1}, 127)},
      {"masks short", RawMasked(0, 128, {1}, 0)},
      {"trailing byte", trailing},
      {"after a run", after_run},
      {"first block empty", RawMasked(0, 128, {0, 1}, 128)},
      {"last block empty", RawMasked(0, 128, {1, 0}, 128)},
  };
  for (const auto& [name, enc] : cases) {
    SCOPED_TRACE(name);
    const Status v = Validate(enc, 4096);
    EXPECT_FALSE(v.ok());
    for (Impl impl : {Impl::kScalar, Best()}) {
      Bytes page = original;
      EXPECT_FALSE(Apply(enc, page, impl).ok());
      EXPECT_EQ(page, original);
    }
  }
  // Well formed: an empty block between the first and the last is allowed.
  const Bytes ok = RawMasked(4096 - 192, 192, {1, 0, uint64_t{1} << 63}, 192);
  EXPECT_TRUE(Validate(ok, 4096).ok());
  Bytes page(4096, 0);
  ASSERT_TRUE(Apply(ok, page).ok());
  EXPECT_EQ(page[4096 - 192], 0xcd);
  EXPECT_EQ(page[4095], 0xcd);
  EXPECT_EQ(std::count(page.begin(), page.end(), 0xcd), 2);
}

// Raw encodings for the malformed cases: headers as given, payload bytes as
// given (so lengths can lie).
struct RawRun {
  uint32_t offset;
  uint32_t length;
  size_t payload;  // bytes actually present
};

Bytes Raw(std::initializer_list<RawRun> runs) {
  Bytes b;
  for (const RawRun& r : runs) {
    for (uint32_t v : {r.offset, r.length}) {
      for (int s = 0; s < 32; s += 8) b.push_back(static_cast<uint8_t>(v >> s));
    }
    b.insert(b.end(), r.payload, 0xcd);
  }
  return b;
}

struct MalformedCase {
  const char* name;
  Bytes encoded;
};

std::vector<MalformedCase> MalformedCases() {
  Bytes one_run = Raw({{0, 1, 1}});
  std::vector<MalformedCase> cases = {
      {"header 1 byte", {0}},
      {"header 7 bytes", {0, 0, 0, 0, 1, 0, 0}},
      {"second header 4 bytes", one_run},
      {"payload short", Raw({{0, 10, 5}})},
      {"payload missing", Raw({{0, 10, 0}})},
      {"length 2^32-1, no payload", Raw({{0, 0xffffffff, 0}})},
      {"second payload short", Raw({{0, 1, 1}, {8, 4, 3}})},
      {"zero length", Raw({{0, 0, 0}})},
      {"zero length later", Raw({{0, 1, 1}, {8, 0, 0}})},
      {"offset+length wraps u32", Raw({{0xffffffff, 2, 2}})},
      {"offset+length wraps u32, big", Raw({{0xfffffff0, 0x20, 0x20}})},
      {"past page end", Raw({{4090, 7, 7}})},
      {"offset at page end", Raw({{4096, 1, 1}})},
      {"length over page", Raw({{0, 4097, 4097}})},
      {"offsets decrease", Raw({{100, 1, 1}, {50, 1, 1}})},
      {"offsets repeat", Raw({{100, 1, 1}, {100, 1, 1}})},
      {"overlap", Raw({{100, 10, 10}, {105, 1, 1}})},
      {"overlap at last byte", Raw({{100, 10, 10}, {109, 3, 3}})},
      {"touching", Raw({{100, 10, 10}, {110, 1, 1}})},
      {"valid then touching", Raw({{0, 1, 1}, {10, 2, 2}, {12, 1, 1}})},
      {"valid then trailing byte", Raw({{0, 1, 1}, {4095, 1, 1}})},
  };
  cases[2].encoded.insert(cases[2].encoded.end(), {9, 0, 0, 0});
  cases.back().encoded.push_back(0);
  return cases;
}

TEST(DiffValidateTest, RejectsMalformedAndLeavesPageUntouched) {
  std::mt19937_64 rng(7);
  const Bytes original = RandomBytes(rng, 4096);
  for (const MalformedCase& c : MalformedCases()) {
    SCOPED_TRACE(c.name);
    const Status v = Validate(c.encoded, 4096);
    EXPECT_FALSE(v.ok());
    Bytes page = original;
    const Status a = Apply(c.encoded, page);
    EXPECT_FALSE(a.ok());
    EXPECT_EQ(a.code(), v.code());
    EXPECT_EQ(page, original);
  }
}

TEST(DiffValidateTest, AcceptsEdgeCases) {
  const std::pair<const char*, Bytes> cases[] = {
      {"empty", {}},
      {"last byte", Raw({{4095, 1, 1}})},
      {"whole page", Raw({{0, 4096, 4096}})},
      {"gap of one", Raw({{0, 1, 1}, {2, 1, 1}})},
      {"first and last", Raw({{0, 1, 1}, {4095, 1, 1}})},
  };
  for (const auto& [name, enc] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(Validate(enc, 4096).ok()) << Validate(enc, 4096).ToString();
    Bytes page(4096, 0);
    EXPECT_TRUE(Apply(enc, page).ok());
  }
  // The same encoding can be valid for a bigger page and not a smaller one.
  const Bytes big = Raw({{5000, 10, 10}});
  EXPECT_TRUE(Validate(big, 8192).ok());
  EXPECT_FALSE(Validate(big, 4096).ok());
}

// Random corruptions of valid diffs: Validate never reads out of bounds (the
// sanitizer build checks that) and Apply never half-applies.
TEST(DiffValidateTest, CorruptedEncodingsNeverHalfApply) {
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    std::mt19937_64 rng(seed);
    const Bytes twin = RandomBytes(rng, 4096);
    Bytes page = twin;
    // Dense changes half the time: a masked block.
    const int changes = seed % 2 == 0 ? 6 : 1500;
    for (int c = 0; c < changes; ++c) Flip(page, rng() % page.size());
    Bytes enc;
    const EncodeResult r = Encode(page, twin, &enc, Impl::kScalar, Form::kSmallest);
    ASSERT_EQ(r.masked, seed % 2 == 1) << "seed=" << seed;
    switch (rng() % 3) {
      case 0: enc[rng() % enc.size()] ^= static_cast<uint8_t>(1 + rng() % 255); break;
      case 1: enc.resize(rng() % enc.size()); break;
      case 2: enc.push_back(static_cast<uint8_t>(rng())); break;
    }
    Bytes target = twin;
    const Status s = Apply(enc, target);
    EXPECT_EQ(s.ok(), Validate(enc, 4096).ok());
    if (!s.ok()) {
      EXPECT_EQ(target, twin) << "seed=" << seed;
    }
  }
}

}  // namespace
}  // namespace svm::diff
