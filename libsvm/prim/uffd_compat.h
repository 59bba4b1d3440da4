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

// --- PAGEMAP_SCAN (6.7) -------------------------------------------------------
// An ioctl on /proc/self/pagemap: the pages of a range in given categories,
// as ranges; with PM_SCAN_WP_MATCHING it write-protects those it returns in
// the same walk. With UFFD_FEATURE_WP_ASYNC that finds the pages written
// since they were last write-protected, and re-arms them, with no fault.
// linux/fs.h of 6.7 defines these; older headers do not.
#include <linux/fs.h>
#ifndef PAGEMAP_SCAN
#include <linux/ioctl.h>
#include <linux/types.h>
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
struct page_region {
  __u64 start;
  __u64 end;
  __u64 categories;
};
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
struct pm_scan_arg {
  __u64 size;
  __u64 flags;
  __u64 start;
  __u64 end;
  __u64 walk_end;
  __u64 vec;
  __u64 vec_len;
  __u64 max_pages;
  __u64 category_inverted;
  __u64 category_mask;
  __u64 category_anyof_mask;
  __u64 return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

// --- userfaultfd(2) flags ---------------------------------------------------
// Handle only faults from user mode (allowed without CAP_SYS_PTRACE when
// vm.unprivileged_userfaultfd is 0). Present in 6.1 headers; kept for
// symmetry with older ones.
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
