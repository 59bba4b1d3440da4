// The bootstrap arena: where malloc & co are served before the runtime has
// mapped the global region (dynamic loader, libc and C++ start-up, the
// runtime's own constructors). 1 MiB of private .bss, bump-allocated.
//
// Each block has a 16-byte header (size, check word) just before it. Freeing
// the most recent block gives its space back; other frees only mark the
// block dead (the arena is small and short-lived). Heap::Free, UsableSize
// and Realloc recognise these pointers by address forever after.
//
// Thread-safety: lock-free (a CAS on the bump pointer). Safe before main.
#pragma once

#include <cstddef>

namespace svm::alloc {

inline constexpr size_t kBootstrapBytes = 1 << 20;

// nullptr when the arena is full. align: a power of two (16 if less).
void* BootstrapMalloc(size_t size, size_t align = 16);
void* BootstrapCalloc(size_t n, size_t size);
// REQUIRES: IsBootstrap(p). Invalid or double frees are fatal.
void BootstrapFree(void* p);
size_t BootstrapUsableSize(const void* p);
// Reallocates within the arena (before the heap exists).
void* BootstrapRealloc(void* p, size_t size);

bool IsBootstrap(const void* p);
size_t BootstrapBytesUsed();  // for tests

}  // namespace svm::alloc
