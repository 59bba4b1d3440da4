// The symbols a program sees from libsvm: each forwards to the runtime in one
// line. Nothing else lives here.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "libsvm/entry.h"

using namespace svm::rt;

extern "C" {

// Start-up: the runtime comes up before the program's constructors; node 0
// then runs main, the other nodes serve.
int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                      void (*init)(), void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  return StartMain(main, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int status) { ExitJob(status); }

void* malloc(size_t n) { return Malloc(n); }
void free(void* p) { Free(p); }
void* calloc(size_t n, size_t size) { return Calloc(n, size); }
void* realloc(void* p, size_t n) { return Realloc(p, n); }
void* reallocarray(void* p, size_t n, size_t size) { return ReallocArray(p, n, size); }
int posix_memalign(void** out, size_t align, size_t n) { return PosixMemalign(out, align, n); }
void* aligned_alloc(size_t align, size_t n) { return AlignedAlloc(align, n); }
void* memalign(size_t align, size_t n) { return Memalign(align, n); }
void* valloc(size_t n) { return Valloc(n); }
void* pvalloc(size_t n) { return Pvalloc(n); }
size_t malloc_usable_size(void* p) { return UsableSize(p); }

int pthread_create(pthread_t* t, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  return ThreadCreate(t, attr, start, arg);
}
int pthread_join(pthread_t t, void** value) { return ThreadJoin(t, value); }
int pthread_detach(pthread_t t) { return ThreadDetach(t); }
pthread_t pthread_self(void) { return ThreadSelf(); }
int pthread_equal(pthread_t a, pthread_t b) { return a == b; }
void pthread_exit(void* value) { ThreadExit(value); }

int svm_node_id(void) { return NodeIdOfCaller(); }
int svm_nodes(void) { return NodeCount(); }

}  // extern "C"
