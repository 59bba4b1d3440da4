// Wire encoding of protocol messages (layout in doc/wire.md).
//
// Every message: a 16-byte header, then a type-specific body.
//   u32 magic 'SVM1' | u16 version | u16 type | u32 body length | u32 job epoch
// All integers little-endian; every variable-length field carries an
// explicit count. Decoding is bounds-checked: any malformed input yields an
// error Status, never undefined behaviour. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/messages.h"
#include "util/status.h"

namespace svm::wire {

inline constexpr uint32_t kMagic = 0x314d5653;  // "SVM1" read as little-endian bytes
inline constexpr uint16_t kVersion = 5;  // 3: page runs (FetchRequest.count,
                                         // PageReply.versions, HomeReply.same);
                                         // 4: strided runs (.stride);
                                         // 5: HomeClaim.ahead
inline constexpr size_t kHeaderBytes = 16;
// Bound on any body; larger lengths are rejected before allocation.
inline constexpr uint32_t kMaxBodyBytes = 64u << 20;
// Bound on vector sizes (nodes). Lists (notices, pages, bytes) are bounded
// only by the body length: a count whose items cannot fit in the bytes that
// remain is rejected before anything is allocated.
inline constexpr uint32_t kMaxNodes = 4096;

struct Header {
  uint16_t version = kVersion;
  MessageType type = MessageType::kFetchRequest;
  uint32_t length = 0;  // body bytes
  uint32_t epoch = 0;
};

// Appends the encoding of m (header and body) to *out.
void Encode(const Message& m, uint32_t epoch, std::vector<uint8_t>* out);
std::vector<uint8_t> Encode(const Message& m, uint32_t epoch);
// The bytes of a PageReply whose data are `pages` one after the other (a
// home's frames), appended to *out without first copying them together.
void EncodePageReply(PageId page, uint32_t stride, std::span<const VectorTime> versions,
                     std::span<const std::span<const uint8_t>> pages, uint32_t epoch,
                     std::vector<uint8_t>* out);

// Decodes just the header (first kHeaderBytes of bytes). Checks magic,
// version, type and the length bound.
Status DecodeHeader(std::span<const uint8_t> bytes, Header* out);

// Decodes one whole message: bytes must be exactly header + body. The epoch
// must equal `epoch`; vectors must have `nodes` entries; node ids (requester,
// home, notice nodes) must be < nodes. *out is written only on success.
// nodes > kMaxNodes is an InvalidArgument. Every decoding rule: doc/wire.md.
Status Decode(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, Message* out);

// As Decode, except that a fetch request, page reply or diff is decoded into
// the body of its type *out already holds, in place: a receiver that decodes
// into one Message each time allocates nothing once its vectors have grown.
// On failure *out may hold a partly decoded body.
Status DecodeReusing(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, Message* out);

// As DecodeReusing for a page reply, but its data are not copied: *data
// points into bytes, and head->data is left as it was (a receiver installs
// the pages from the bytes received). Anything else is an InvalidArgument.
Status DecodePageReplyView(std::span<const uint8_t> bytes, uint32_t epoch, uint32_t nodes, PageReply* head,
                           std::span<const uint8_t>* data);

}  // namespace svm::wire
