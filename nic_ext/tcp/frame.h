// Frame: the wire format of the tcp backend (one frame per work request,
// response or SEND), and its bounds-checked codec. Layout, little-endian:
//
//   header (16 bytes): u32 magic 'SVMN' | u8 version | u8 type | u16 zero
//                      | u32 body length | u32 job epoch
//   kHello     u32 node | u32 num_nodes                          (setup only)
//   kSend      payload (<= kMaxMessage)
//   kWrite     u32 req | u32 region | u64 offset | data (<= kMaxTransfer)
//   kWriteRuns u32 req | u32 region | u64 offset | runs (<= kMaxTransfer; the
//              encoding of Opcode::kWriteRuns, checked by the target)
//   kRead      u32 req | u32 region | u64 offset | u32 length (<= kMaxTransfer)
//   kCas       u32 req | u32 region | u64 offset | u64 compare | u64 swap
//   kFaa       u32 req | u32 region | u64 offset | u64 add
//   kLock      u32 req | u32 lock
//   kUnlock    u32 req | u32 lock
//   kResponse  u32 req | u8 opcode | u8 status | u16 zero | u64 value | data
//              (data only for READ)
// Version 2 added kWriteRuns.
//
// `req` names the initiator's pending request; the target echoes it. The
// decoder accepts exactly these shapes: any other magic, version, type,
// epoch, length or field value is malformed. It never reads outside its input
// and never allocates. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nic_ext/transport.h"

namespace svm::nic::frame {

inline constexpr uint32_t kMagic = 0x4e4d5653;  // "SVMN" as little-endian bytes
inline constexpr uint8_t kVersion = 2;
inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kOneSidedBytes = 16;  // req, region, offset
inline constexpr size_t kResponseBytes = 16;  // req, opcode, status, zero, value
inline constexpr uint32_t kMaxBody = kMaxTransfer + 64;
static_assert(kMaxMessage + 64 <= kMaxBody);
inline constexpr size_t kMaxFrame = kHeaderBytes + kMaxBody;

enum class Type : uint8_t {
  kHello = 1, kSend, kWrite, kRead, kCas, kFaa, kLock, kUnlock, kResponse, kWriteRuns,
};
const char* ToString(Type t);
bool IsValid(Type t);

// A decoded frame. Fields not used by its type are zero; `data` views the
// decoder's input.
struct Frame {
  Type type = Type::kSend;
  uint32_t req = 0;
  uint32_t node = 0, num_nodes = 0;  // kHello
  RegionId region = 0;
  uint64_t offset = 0;
  uint32_t length = 0;               // kRead
  uint64_t compare = 0, operand = 0; // kCas (compare, swap), kFaa (add)
  LockNo lock = 0;
  Opcode op = Opcode::kSend;         // kResponse
  WcStatus status = WcStatus::kSuccess;
  uint64_t value = 0;
  std::span<const uint8_t> data;     // kSend payload, kWrite data or runs, kResponse READ data
};

enum class Decoded { kOk, kNeedMore, kMalformed };

// Decodes the frame at the front of `in`. kOk: *out is set and *consumed is
// its size. kNeedMore: `in` holds a valid prefix of a frame (a bad header is
// reported as soon as its 16 bytes are in). kMalformed: *error says why.
Decoded Decode(std::span<const uint8_t> in, uint32_t epoch, Frame* out, size_t* consumed,
               std::string* error);

// Encoding appends one whole frame to *out.
void Encode(const Frame& f, uint32_t epoch, std::vector<uint8_t>* out);

// Gathering encoders for the datapath (no intermediate copy of the payload).
void EncodeSend(uint32_t epoch, std::span<const Sge> sges, std::vector<uint8_t>* out);
// kWrite, or kWriteRuns when `runs`.
void EncodeWrite(uint32_t epoch, uint32_t req, RegionId region, uint64_t offset,
                 std::span<const Sge> sges, std::vector<uint8_t>* out, bool runs = false);
// A response whose data is `data` (may be empty).
void EncodeResponse(uint32_t epoch, uint32_t req, Opcode op, WcStatus status, uint64_t value,
                    std::span<const uint8_t> data, std::vector<uint8_t>* out);

}  // namespace svm::nic::frame
