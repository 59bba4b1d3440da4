// Framing and messages of the control protocol (svmd/README.md has the prose).
//
// Every frame: a 16-byte header, then the body.
//   u32 magic "SVMC" | u16 version | u16 type | u32 body length | u32 job epoch
// Integers little-endian; strings and byte runs carry a u32 length; lists a
// u32 count. Decoding is bounds-checked: a short, long or otherwise malformed
// body yields a Malformed status, never undefined behaviour, and no length is
// trusted before it is checked against kMaxBody / the bytes that remain.
// Thread-safe: no shared state (a FrameReader belongs to one connection).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/auth.h"
#include "util/seal.h"
#include "util/status.h"

namespace svm::svmd {

inline constexpr uint32_t kFrameMagic = 0x434d5653;  // "SVMC" as little-endian bytes
inline constexpr uint16_t kFrameVersion = 1;
inline constexpr size_t kFrameHeader = 16;
inline constexpr uint32_t kMaxBody = 4u << 20;
inline constexpr uint32_t kMaxListItems = 65536;

enum class MsgType : uint16_t {
  // node <-> svmrun (the node's control connection)
  kHello = 1,      // node -> svmrun: {u32 node, str nic_address}
  kPeers = 2,      // svmrun -> node: {list<str> nic addresses, index = node id}
  kExit = 3,       // node -> svmrun: {i32 status}: the program called exit()
  kTerminate = 4,  // svmrun -> node: {} the job is over; leave now
  // Liveness, on both kinds of connection: svmrun asks, the node or svmd
  // answers at once from its reader thread; either side that hears nothing
  // for the job's liveness timeout ends the job (svmd/README.md).
  kPing = 5,  // svmrun -> node / svmd: {}
  kPong = 6,  // node / svmd -> svmrun: {}
  // svmrun <-> svmd
  kJob = 16,         // svmrun -> svmd: JobRequest
  kJobStarted = 17,  // svmd -> svmrun: {list<u32> pids}
  kJobError = 18,    // svmd -> svmrun: {str message}; the job did not start
  kOutput = 19,      // svmd -> svmrun: {u32 node, u8 stream (1,2), bytes}
  kNodeExit = 20,    // svmd -> svmrun: NodeExit
  kStdin = 21,       // svmrun -> svmd: {bytes} for node 0
  kStdinEof = 22,    // svmrun -> svmd: {}
  kKill = 23,        // svmrun -> svmd: {i32 signal}: tear the job down
  kNodeStats = 24,   // svmd -> svmrun: NodeStatsMsg, before the node's NODE_EXIT (--stats)
  // A host agent (svmd --agent, started by ssh or srun) connects to svmrun
  // and says which host it is; then the svmrun <-> svmd exchange above.
  kAgentHello = 25,  // agent -> svmrun: AgentHelloMsg
};
const char* ToString(MsgType t);
bool IsValid(uint16_t t);

struct Frame {
  MsgType type = MsgType::kHello;
  uint32_t epoch = 0;
  std::string body;
};

// Appends little-endian fields; Finish() prepends nothing: use EncodeFrame.
class Encoder {
 public:
  void U8(uint8_t v) { out_.push_back(char(v)); }
  void U32(uint32_t v);
  void I32(int32_t v) { U32(uint32_t(v)); }
  void Str(std::string_view s);
  void Strs(const std::vector<std::string>& v);
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Reads fields in order; any read past the end sets failed() and yields 0/"".
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  uint8_t U8();
  uint32_t U32();
  int32_t I32() { return int32_t(U32()); }
  std::string Str();
  std::vector<std::string> Strs();
  void Raw(void* p, size_t n);
  bool failed() const { return failed_; }
  // Ok only if every field read fit and nothing is left over.
  Status Done(MsgType t) const;

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

std::string EncodeFrame(MsgType type, uint32_t epoch, std::string_view body);

// Accumulates bytes from a stream and splits them into frames. On a sealed
// connection (set_opener) the bytes are records (util/seal.h), one frame
// each, opened as they complete.
class FrameReader {
 public:
  // The connection's receiving direction; it must outlive the reader.
  void set_opener(Opener* opener) { opener_ = opener; }
  void Append(const char* p, size_t n);
  // true and *f when a whole frame is buffered; false when more bytes are
  // needed; a malformed header or a record that does not authenticate sets
  // *err (the connection must be dropped).
  bool Next(Frame* f, Status* err);

 private:
  Opener* opener_ = nullptr;
  std::string sealed_;  // records not yet whole
  std::string buf_;
  Status error_;
};

// The body length a frame header announces, once the header is checked
// (magic, version, type, length <= kMaxBody). header: kFrameHeader bytes.
Status FrameBodyLength(std::string_view header, uint32_t* len);

// On a sealed connection, `seal` is its sending direction (the frame goes as
// one record) or `open` its receiving one.
Status SendFrame(int fd, MsgType type, uint32_t epoch, std::string_view body, Sealer* seal = nullptr);
// Blocking read of one frame (deadline as in net.h).
Status RecvFrame(int fd, int64_t deadline_ms, Frame* f, Opener* open = nullptr);
// The largest record a sealed control connection carries.
inline constexpr size_t kMaxSealedFrame = kFrameHeader + kMaxBody;
static_assert(kMaxSealedFrame <= kMaxSealedPlain);

// ---- message bodies -------------------------------------------------------

struct HelloMsg {
  uint32_t node = 0;
  std::string nic_address;
};
struct JobRequest {
  Key wrapped_key{};  // job key XOR the connection's session secret
  uint32_t nodes_total = 0;
  std::vector<uint32_t> node_ids;  // nodes to start on this host
  std::vector<std::string> argv;   // argv[0] is the program
  std::vector<std::string> env;    // "NAME=value", added to svmd's environment
  std::string cwd;
  std::string control;  // SVM_CONTROL for the nodes
  uint32_t stdin_node = 0;  // the node fed by STDIN; kStdinAll / kStdinNone
};
inline constexpr uint32_t kStdinAll = 0xfffffffe;
inline constexpr uint32_t kStdinNone = 0xffffffff;
struct AgentHelloMsg {
  uint32_t index = 0;    // which of the hosts svmrun started (ssh: argv; srun: SLURM_NODEID)
  std::string hostname;  // gethostname(), for messages
};
// kUnresponsive: svmd killed the node, which could not answer (stopped,
// traced or stuck in the kernel) for the liveness timeout; `message` says how.
enum class ExitKind : uint8_t { kExited = 0, kSignaled = 1, kStartFailed = 2, kUnresponsive = 3 };
const char* ToString(ExitKind k);
struct NodeExitMsg {
  uint32_t node = 0;
  ExitKind kind = ExitKind::kExited;
  int32_t value = 0;  // exit status or signal number
  std::string message;
};
// A node's statistics report (libsvm/stats.h's JSON, node-<id>.json).
struct NodeStatsMsg {
  uint32_t node = 0;
  std::string json;
};
struct OutputMsg {
  uint32_t node = 0;
  uint8_t stream = 1;
  std::string data;
};

std::string Encode(const HelloMsg& m);
Status Decode(std::string_view body, HelloMsg* m);
std::string Encode(const JobRequest& m);
Status Decode(std::string_view body, JobRequest* m);
std::string Encode(const AgentHelloMsg& m);
Status Decode(std::string_view body, AgentHelloMsg* m);
std::string Encode(const NodeExitMsg& m);
Status Decode(std::string_view body, NodeExitMsg* m);
std::string Encode(const NodeStatsMsg& m);
Status Decode(std::string_view body, NodeStatsMsg* m);
std::string Encode(const OutputMsg& m);
Status Decode(std::string_view body, OutputMsg* m);
std::string EncodeStrings(const std::vector<std::string>& v);
Status DecodeStrings(std::string_view body, MsgType t, std::vector<std::string>* v);
std::string EncodeI32(int32_t v);
Status DecodeI32(std::string_view body, MsgType t, int32_t* v);

}  // namespace svm::svmd
