#include "util/units.h"

#include <cerrno>
#include <cstdlib>
#include <span>
#include <utility>

namespace svm::svmd {

Status ParseSize(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] == '-') return Status::InvalidArgument("'" + text + "' is not a size");
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (end == text.c_str() || errno != 0) return Status::InvalidArgument("'" + text + "' is not a size");
  std::string suffix(end);
  uint64_t mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = 1ull << 30;
  else if (suffix == "T" || suffix == "t" || suffix == "TiB") mult = 1ull << 40;
  else if (!suffix.empty())
    return Status::InvalidArgument("'" + text + "': unknown suffix '" + suffix + "' (use K, M, G or T)");
  if (v > UINT64_MAX / mult) return Status::InvalidArgument("'" + text + "' is too large");
  *out = uint64_t(v) * mult;
  return Status::Ok();
}

namespace {

// A non-negative decimal number followed by a unit from `units`.
Status ParseScaled(const std::string& text, std::span<const std::pair<const char*, double>> units,
                   const char* what, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || errno != 0 || !(v >= 0) || text[0] == '-')
    return Status::InvalidArgument("'" + text + "' is not a " + what);
  const std::string unit(end);
  if (v == 0 && unit.empty()) {
    *out = 0;
    return Status::Ok();
  }
  std::string known;
  for (const auto& [name, scale] : units) {
    if (unit == name) {
      const double r = v * scale;
      if (r > 1e18) return Status::InvalidArgument("'" + text + "' is too large");
      *out = uint64_t(r + 0.5);
      return Status::Ok();
    }
    known += std::string(known.empty() ? "" : ", ") + name;
  }
  return Status::InvalidArgument("'" + text + "': unknown unit '" + unit + "' (use " + known + ")");
}

}  // namespace

Status ParseDuration(const std::string& text, uint64_t* ns) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  return ParseScaled(text, kUnits, "duration", ns);
}

Status ParseRate(const std::string& text, uint64_t* bytes_per_s) {
  std::string t = text;
  if (t.size() > 2 && t.compare(t.size() - 2, 2, "/s") == 0) t.resize(t.size() - 2);
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"bit", 1.0 / 8}, {"Kbit", 1e3 / 8}, {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8},
      {"B", 1},         {"KB", 1e3},       {"MB", 1e6},       {"GB", 1e9}};
  return ParseScaled(t, kUnits, "rate", bytes_per_s);
}

}  // namespace svm::svmd
