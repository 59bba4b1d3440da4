// userfaultfd constants newer than Debian 12's kernel headers (linux 6.1).
//
// The machines run a much newer kernel (6.18) than the headers describe. This
// is the ONE place where the missing values are defined; every other file
// includes this header instead of <linux/userfaultfd.h>. Values are the
// kernel's ABI (include/uapi/linux/userfaultfd.h) and never change once
// released, so defining them here is safe; whether the running kernel has a
// feature is still probed at run time (UFFDIO_API answers the feature mask;
// UFFDIO_CONTINUE_MODE_WP has no feature bit and is probed by trying it).
#pragma once

#include <linux/userfaultfd.h>

// --- UFFDIO_API features ---------------------------------------------------
#ifndef UFFD_FEATURE_WP_UNPOPULATED  // 6.4: WP also on never-populated PTEs
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_POISON  // 6.6: UFFDIO_POISON
#define UFFD_FEATURE_POISON (1 << 14)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC  // 6.7: the kernel resolves WP faults itself
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_FEATURE_MOVE  // 6.8: UFFDIO_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif

// --- UFFDIO_CONTINUE modes --------------------------------------------------
// Map the page write-protected in the same step (6.5), so a "read" page is
// never writable even for an instant.
#ifndef UFFDIO_CONTINUE_MODE_WP
#define UFFDIO_CONTINUE_MODE_WP ((__u64)1 << 1)
#endif

// --- userfaultfd(2) flags ---------------------------------------------------
// Handle only faults from user mode (allowed without CAP_SYS_PTRACE when
// vm.unprivileged_userfaultfd is 0). Present in 6.1 headers; kept for
// symmetry with older ones.
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
