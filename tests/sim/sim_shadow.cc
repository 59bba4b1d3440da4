#include "tests/sim/sim_shadow.h"

#include <cassert>
#include <cstdio>
#include <cstring>

namespace svm::sim {

std::string HexBytes(std::span<const uint8_t> bytes) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    if (i) s += ' ';
    s += buf;
  }
  return "[" + s + "]";
}

ShadowMemory::ShadowMemory(const Program& program)
    : program_(program),
      threads_(program.threads),
      bytes_(program.region_bytes(), 0),
      var_at_(program.region_bytes(), -1),
      history_(program.vars.size()) {
  for (size_t v = 0; v < program.vars.size(); ++v) {
    const Var& var = program.vars[v];
    for (uint64_t a = var.addr; a < var.addr + var.len; ++a) var_at_[a] = static_cast<int32_t>(v);
  }
}

void ShadowMemory::Write(uint32_t var, uint64_t addr, uint32_t len, uint64_t value, uint32_t g,
                         size_t op) {
  const Var& v = program_.vars[var];
  assert(addr >= v.addr && addr + len <= v.addr + v.len);
  for (uint32_t i = 0; i < len; ++i) {
    bytes_[addr + i] = static_cast<uint8_t>(value >> (8 * (addr - v.addr + i)));
  }
  auto& h = history_[var];
  if (h.empty() || h.back().g != g || h.back().op != op) h.push_back({g, op, value});
}

bool ShadowMemory::Matches(uint64_t addr, std::span<const uint8_t> actual) const {
  return std::memcmp(bytes_.data() + addr, actual.data(), actual.size()) == 0;
}

std::string ShadowMemory::Who(uint32_t g, size_t op) const {
  return "n" + std::to_string(g / threads_) + ".t" + std::to_string(g % threads_) + " op " +
         std::to_string(op);
}

std::string ShadowMemory::Explain(uint32_t var, uint64_t addr,
                                  std::span<const uint8_t> actual) const {
  const Var& v = program_.vars[var];
  const auto& h = history_[var];
  const uint64_t shift = addr - v.addr;
  auto piece = [&](uint64_t value) {
    std::vector<uint8_t> out(actual.size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<uint8_t>(value >> (8 * (shift + i)));
    return out;
  };
  std::string s = "expected " + HexBytes(Expected(addr, actual.size()));
  s += h.empty() ? " (never written)" : " (last written by " + Who(h.back().g, h.back().op) + ")";
  s += ", actual " + HexBytes(actual);
  // Which write did the actual bytes come from, most recent first?
  std::string source;
  std::vector<uint8_t> a(actual.begin(), actual.end());
  for (size_t k = h.size(); k-- > 0;) {
    if (piece(h[k].value) == a) {
      source = "the write by " + Who(h[k].g, h[k].op) + ", " + std::to_string(h.size() - 1 - k) +
               " write(s) stale";
      break;
    }
  }
  if (source.empty() && piece(0) == a) source = "the initial zeros";
  s += " (" + (source.empty() ? std::string("no write of this variable") : "matches " + source) +
       ")";
  s += "; variable " + std::to_string(var) + " is " + ToString(v.cls);
  if (v.cls != VarClass::kOwned) s += " by lock " + std::to_string(v.lock);
  return s;
}

}  // namespace svm::sim
