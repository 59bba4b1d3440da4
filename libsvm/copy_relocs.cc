#include "libsvm/copy_relocs.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace svm::rt {
namespace {

// What libraries read instead of the program's copy: "threads exist".
char g_single_threaded = 0;

struct Redirect {
  uintptr_t from;  // the program's copy
  uintptr_t to;
};

// Rewrites the words of an object's RELRO data (its GOT among them) that
// hold `from`. ld.so made the region read-only from the start of its
// first page up to the start of its last; what follows is still writable.
int RedirectIn(dl_phdr_info* info, size_t, void* arg) {
  const auto& r = *static_cast<const Redirect*>(arg);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && r.from >= lo && r.from < lo + ph.p_memsz) return 0;  // the program
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_GNU_RELRO) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    const auto page = uintptr_t(getpagesize());
    const uintptr_t ro_lo = lo & ~(page - 1), ro_hi = hi & ~(page - 1);
    bool opened = false;
    for (uintptr_t a = (lo + 7) & ~uintptr_t(7); a + 8 <= hi; a += 8) {
      uintptr_t v;
      std::memcpy(&v, reinterpret_cast<const void*>(a), 8);
      if (v != r.from) continue;
      if (!opened && ro_lo < ro_hi) {
        if (mprotect(reinterpret_cast<void*>(ro_lo), ro_hi - ro_lo, PROT_READ | PROT_WRITE) != 0) return 0;
        opened = true;
      }
      std::memcpy(reinterpret_cast<void*>(a), &r.to, 8);
    }
    if (opened) mprotect(reinterpret_cast<void*>(ro_lo), ro_hi - ro_lo, PROT_READ);
  }
  return 0;
}

}  // namespace

void PrivatizeSingleThreadedFlag(uintptr_t globals_lo, uintptr_t globals_hi) {
  // The definition that interposes: the program's copy, if it has one.
  auto* copy = static_cast<char*>(dlsym(RTLD_DEFAULT, "__libc_single_threaded"));
  const auto at = reinterpret_cast<uintptr_t>(copy);
  if (copy == nullptr || at < globals_lo || at >= globals_hi) return;
  *copy = 0;
  Redirect r{at, reinterpret_cast<uintptr_t>(&g_single_threaded)};
  dl_iterate_phdr(RedirectIn, &r);
}

}  // namespace svm::rt
