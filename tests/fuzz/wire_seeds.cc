// wire_seeds DIR: writes a seed corpus for wire_fuzz into DIR, one file per
// message type and node count (kFuzzNodeCounts), each a valid encoding with
// epoch kFuzzEpoch. Exits non-zero if a file cannot be written.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "protocol/wire.h"
#include "tests/fuzz/wire_fuzz.h"

namespace {

using svm::VectorTime;
using svm::WriteNotice;

std::vector<svm::Message> SeedMessages(uint32_t nodes) {
  VectorTime v(nodes);
  for (uint32_t i = 0; i < nodes; ++i) v[i] = i + 1;
  std::vector<WriteNotice> notices = {{0, 1, {1, 2}}, {nodes - 1, 2, {}}};
  return {
      svm::FetchRequest{3, v},
      svm::PageReply{3, {v}, std::vector<uint8_t>(64, 0x5a)},
      svm::FetchRequest{3, v, 8},
      svm::PageReply{3, {v, v}, std::vector<uint8_t>(128, 0x5a)},
      svm::FetchRequest{3, v, 8, 4},
      svm::PageReply{3, {v, v}, std::vector<uint8_t>(128, 0x5b), 4},
      svm::DiffMessage{3, 2, {0, 0, 0, 0, 2, 0, 0, 0, 0xab, 0xcd}},
      svm::LockRequest{9, nodes - 1, true, v},
      svm::LockGrant{9, v, notices},
      svm::BarrierArrive{4, 1, 2, v, notices, v, 1},
      svm::BarrierRelease{4, v, true, notices},
      svm::HomeClaim{3},
      svm::HomeReply{3, nodes - 1},
      svm::SpawnRequest{1, 2, 3},
      svm::SpawnReply{1, 0},
      svm::JoinRequest{1},
      svm::JoinReply{1, 4},
      svm::DetachRequest{1},
      svm::RemoteFree{{8, 16}},
      svm::SyncWake{64},
      svm::MarksDropped{{3, 5}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  for (uint32_t nodes : svm::wire::kFuzzNodeCounts) {
    for (const svm::Message& m : SeedMessages(nodes)) {
      std::vector<uint8_t> bytes = svm::wire::Encode(m, svm::wire::kFuzzEpoch);
      std::string path = std::string(argv[1]) + "/" + svm::ToString(svm::TypeOf(m)) + "-n" +
                         std::to_string(nodes);
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() ||
          std::fclose(f) != 0) {
        std::fprintf(stderr, "wire_seeds: cannot write %s\n", path.c_str());
        return 1;
      }
    }
  }
  return 0;
}
