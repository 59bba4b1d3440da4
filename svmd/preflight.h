// Checks svmrun (and svmd, for its share of a job) makes before a node
// starts: what would otherwise fail N times over, or worse, run N
// independent copies of the program.
//
// Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>

#include "control/control_client.h"  // kStartupFailedStatus
#include "svmd/options.h"
#include "util/status.h"

namespace svm::svmd {

// Exit status of svmrun for a program that cannot run under svm (static),
// next to kStartupFailedStatus (a node's runtime did not start or join) and
// its own usage errors (2). README.md, "Exit status".
inline constexpr int kCannotRunStatus = 126;

// A runtime job (libsvm preloaded) needs a dynamically linked program: the
// preload cannot enter a static one, and every node would run it alone.
// Follows "#!" to the interpreter (one level, as the kernel does; "env"
// stays the program then). A set-user/group-ID program (for another user)
// is refused too: the loader ignores LD_PRELOAD for it. Ok for programs it
// cannot read or that are not ELF: exec will say what is wrong with them.
Status CheckDynamic(const std::string& path);

// Limits of the runtime (runtime: libsvm preloaded) that options.cc's ranges
// cannot know: more nodes than the transport connects. One line naming the
// flag and the limit.
Status CheckLimits(const Options& o, bool runtime);

}  // namespace svm::svmd
