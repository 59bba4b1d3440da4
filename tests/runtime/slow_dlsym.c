/* Test shim, preloaded after libsvm: the lookup of "syscall" through dlsym
 * takes 200 ms, so that threads calling syscall() meanwhile find its
 * resolution under way (see first_syscall.c). */
#include <dlfcn.h>
#include <string.h>
#include <time.h>

typedef void* (*DlsymFn)(void*, const char*);

void* dlsym(void* handle, const char* name) {
  static DlsymFn real;
  if (real == NULL) real = (DlsymFn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (real == NULL) real = (DlsymFn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (strcmp(name, "syscall") == 0) {
    const struct timespec d = {0, 200 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  return real(handle, name);
}
