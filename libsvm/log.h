// Logging of the runtime: spdlog, with a sink that writes straight to file
// descriptor 2. Not through stdio: the program's `stderr` may live in its
// shared globals, which a runtime thread must never fault on.
#pragma once

#include <string>

#include "protocol/types.h"

namespace svm::rt {

// Installs the default spdlog logger ("[svm n3] ..."). level: spdlog's names.
void InitLogging(const std::string& level, NodeId node);

}  // namespace svm::rt
