// ShadowMemory: what every byte of the global region must hold.
//
// The simulated execution is a global order of performed accesses. Because
// the programs are data-race-free, release consistency promises that a read
// returns the most recent write to the same bytes in that order; the shadow is
// updated at each performed write, and every performed read is compared with
// it byte for byte. It also keeps each variable's write history, to say which
// write a wrong value came from.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tests/sim/sim_program.h"

namespace svm::sim {

class ShadowMemory {
 public:
  explicit ShadowMemory(const Program& program);

  // Thread g, executing op `op`, wrote bytes [addr, addr + len) of variable
  // `var`; `value` is the whole variable's new value (little-endian).
  // REQUIRES: the range lies inside the variable.
  void Write(uint32_t var, uint64_t addr, uint32_t len, uint64_t value, uint32_t g, size_t op);

  std::span<const uint8_t> Expected(uint64_t addr, size_t len) const {
    return {bytes_.data() + addr, len};
  }
  bool Matches(uint64_t addr, std::span<const uint8_t> actual) const;

  // The variable covering byte addr, or -1.
  int32_t VarAt(uint64_t addr) const { return var_at_[addr]; }

  // "expected ... (written by ...), actual ... (matches ...)" for a read of
  // bytes [addr, addr + actual.size()) of variable var.
  std::string Explain(uint32_t var, uint64_t addr, std::span<const uint8_t> actual) const;

  uint32_t threads() const { return threads_; }

 private:
  struct WriteRecord {
    uint32_t g;
    size_t op;
    uint64_t value;
  };
  std::string Who(uint32_t g, size_t op) const;

  const Program& program_;
  uint32_t threads_;
  std::vector<uint8_t> bytes_;
  std::vector<int32_t> var_at_;
  std::vector<std::vector<WriteRecord>> history_;  // by variable
};

std::string HexBytes(std::span<const uint8_t> bytes);

}  // namespace svm::sim
