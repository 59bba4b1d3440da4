#include "libsvm/fragment.h"

#include <algorithm>
#include <cassert>

#include "util/coding.h"

namespace svm::rt {

std::vector<std::vector<uint8_t>> Fragment(std::vector<uint8_t> bytes, size_t max_send) {
  assert(max_send > kFragmentHeader && bytes.size() <= kMaxJoined);
  std::vector<std::vector<uint8_t>> out;
  if (bytes.size() <= max_send) {
    out.push_back(std::move(bytes));
    return out;
  }
  const size_t chunk = max_send - kFragmentHeader;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    const size_t n = std::min(chunk, bytes.size() - at);
    std::vector<uint8_t> f(kFragmentHeader + n);
    coding::EncodeFixed<uint32_t>(f.data(), kFragmentMagic);
    coding::EncodeFixed<uint32_t>(f.data() + 4, uint32_t(bytes.size()));
    std::copy_n(bytes.begin() + ptrdiff_t(at), n, f.begin() + kFragmentHeader);
    out.push_back(std::move(f));
  }
  return out;
}

Status Reassembler::Feed(NodeId from, std::vector<uint8_t>* bytes, bool* whole) {
  *whole = false;
  if (from >= joining_.size()) return Status::InvalidArgument("fragment from an unknown node");
  Joining& j = joining_[from];
  const bool fragment =
      bytes->size() >= kFragmentHeader && coding::DecodeFixed<uint32_t>(bytes->data()) == kFragmentMagic;
  if (!fragment) {
    if (j.total != 0) {
      j = Joining{};
      return Status::Malformed("a whole message inside a fragmented one");
    }
    *whole = true;
    return Status::Ok();
  }
  const uint64_t total = coding::DecodeFixed<uint32_t>(bytes->data() + 4);
  const size_t n = bytes->size() - kFragmentHeader;
  if (j.total == 0) {
    if (total == 0 || total > kMaxJoined) return Status::Malformed("fragmented message of a bad length");
    j.total = total;
    j.bytes.reserve(total);
  }
  if (total != j.total || n == 0 || j.bytes.size() + n > total) {
    j = Joining{};
    return Status::Malformed("fragments that do not add up to their message");
  }
  j.bytes.insert(j.bytes.end(), bytes->begin() + kFragmentHeader, bytes->end());
  if (j.bytes.size() == total) {
    *bytes = std::move(j.bytes);
    j = Joining{};
    *whole = true;
  }
  return Status::Ok();
}

}  // namespace svm::rt
