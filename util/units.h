// The value syntax svm's knobs share: svmrun's flags and their SVM_* twins,
// and libsvm's runtime variables of the same names (libsvm links this).
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace svm::svmd {

// "4096", "64K", "1M", "2G", "1T", "0x200000000000" -> bytes.
Status ParseSize(const std::string& text, uint64_t* out);
// "0", "500ns", "2us", "1.5ms", "1s" -> nanoseconds.
Status ParseDuration(const std::string& text, uint64_t* ns);
// "0", "10Gbit", "100Mbit", "1.25GB" (decimal units, per second; "/s" may
// follow) -> bytes per second.
Status ParseRate(const std::string& text, uint64_t* bytes_per_s);

}  // namespace svm::svmd
