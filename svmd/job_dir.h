// Private temporary directories of a job (svmrun's statistics directory,
// svmd's per-job directory) that outlive no one for long: each is named
// PREFIX-<owner pid>-XXXXXX, and whoever makes a new one first removes the
// ones whose owner died without cleaning up (kill -9), so a killed launcher
// leaves at most one behind, until the next job on the host.
//
// Thread-safety: no shared state.
#pragma once

#include <string>

#include "util/status.h"

namespace svm::svmd {

// Creates $TMPDIR (or /tmp)/PREFIX-<pid>-XXXXXX, mode 0700, after removing
// this user's PREFIX-<pid>-* directories whose pid is gone.
Status MakeJobDir(const std::string& prefix, std::string* path);

}  // namespace svm::svmd
