// maps: what the kernel says about this process's mappings.
//
// Reads /proc/self/maps and /proc/sys/vm/max_map_count. CountMappings uses
// only open/read/close and a stack buffer (no malloc), so it may be called
// from any thread; DescribeMappings allocates and is for error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace svm::prim {

// Number of mappings (VMAs) of this process that overlap [lo, hi).
// Returns the count, or -errno when /proc/self/maps cannot be read.
// CountMappings(0, UINTPTR_MAX) counts them all.
int CountMappings(uintptr_t lo, uintptr_t hi);

// The lines of /proc/self/maps that overlap [lo, hi), joined with "; ".
// Empty if none (or on a read error).
std::string DescribeMappings(uintptr_t lo, uintptr_t hi);

// Copies the line of /proc/self/maps that holds addr (its padding
// collapsed, no newline, NUL-terminated, cut at cap) into line. Returns its
// length, 0 if no mapping holds addr, or -errno. No malloc: it may run in a
// signal handler.
int FindMapping(uintptr_t addr, char* line, size_t cap);

// vm.max_map_count, or -errno.
long ReadMaxMapCount();

}  // namespace svm::prim
