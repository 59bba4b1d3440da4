/* signals: under svm the program starts with the signal dispositions it
 * would have natively. libfabric's psm providers (libinfinipath, libpsm2),
 * which libsvm opens for --transport ofi, install backtrace printers for
 * SIGINT, SIGTERM, SIGABRT, SIGSEGV... in their constructors, and its shm
 * provider handlers for SIGINT and SIGTERM in its endpoints: they hid core
 * dumps, printed no backtrace and crashed in the handler. SIGSEGV and SIGBUS
 * may be svm's own (its fault backends) and nobody else's. Prints
 * "signals default", or each foreign handler and where it lives. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const int sigs[] = {SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM, SIGUSR1};
  int foreign = 0;
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); ++i) {
    struct sigaction sa;
    if (sigaction(sigs[i], NULL, &sa) != 0) continue;
    void* h = (sa.sa_flags & SA_SIGINFO) ? (void*)sa.sa_sigaction : (void*)sa.sa_handler;
    if (h == (void*)SIG_DFL || h == (void*)SIG_IGN) continue;
    Dl_info info;
    const char* where = dladdr(h, &info) && info.dli_fname ? info.dli_fname : "?";
    if ((sigs[i] == SIGSEGV || sigs[i] == SIGBUS) && strstr(where, "libsvm")) continue;
    printf("signal %d (%s) has a handler in %s\n", sigs[i], strsignal(sigs[i]), where);
    ++foreign;
  }
  if (!foreign) printf("signals default\n");
  return 0;
}
