// The backends behind FaultTrap::Open (internal to prim/).
#pragma once

#include <memory>

#include "libsvm/prim/fault.h"

namespace svm::prim {

// userfaultfd, SIGBUS (sigbus = true, Backend::kUffd) or handler thread.
Status ProbeUffd(bool sigbus);
// UFFD_FEATURE_WP_ASYNC and PAGEMAP_SCAN with WP matching on a shmem mapping.
Status ProbeUffdAsyncWrites();
Status OpenUffd(bool sigbus, Region* region, FaultHandler* handler, const TrapOptions& options,
                std::unique_ptr<FaultTrap>* out);

// SIGSEGV + mprotect.
Status ProbeMprotect();
Status OpenMprotect(Region* region, FaultHandler* handler, const TrapOptions& options,
                    std::unique_ptr<FaultTrap>* out);

}  // namespace svm::prim
