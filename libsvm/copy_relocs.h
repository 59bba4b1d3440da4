// Library data that lives in the program's shared globals.
//
// A program that refers to a library's variable gets its own copy of it in
// .bss (a copy relocation), and every library's GOT points at that copy.
// Under svm the program's .bss is shared memory, so the libraries read and
// write the variable there, the runtime's own threads included, and a
// runtime thread must never fault on shared memory (it may hold the node's
// lock, or be the thread that would serve the fault; before the NIC is up
// nothing can serve it at all).
#pragma once

#include <stdint.h>

namespace svm::rt {

// glibc's __libc_single_threaded, which C++ programs refer to (libstdc++'s
// reference counts read it: shared_ptr, locales). Every svm job is
// multi-threaded, so the program's copy in [globals_lo, globals_hi) is set
// to false, and every other loaded object's GOT entry for it is pointed at
// a private variable that says the same. Call before the globals are
// shared; nothing happens if the program has no copy.
void PrivatizeSingleThreadedFlag(uintptr_t globals_lo, uintptr_t globals_hi);

}  // namespace svm::rt
