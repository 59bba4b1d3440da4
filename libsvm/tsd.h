// Thread-specific data (pthread_key_*, tss_*) that works on every node.
//
// glibc's keys live in one process, so a key made on node 0 means nothing on
// node 1. A key a program thread makes is instead a record in the shared
// heap (its destructor), and the key's number names the record: bit 31 set,
// then the record's offset in the region / 8192 (the largest region, 16 TiB,
// fits in 31 bits). Every node reads the
// same record, so a key made before pthread_create is valid in the new
// thread wherever it runs. Values are per thread and private (a
// thread_local table); destructors run when an svm thread ends, on its node.
// Keys made by anyone else (library constructors before the job starts, the
// runtime's threads) are glibc's (numbers below PTHREAD_KEYS_MAX) and go to
// glibc.
#pragma once

#include <pthread.h>

namespace svm::rt {

int KeyCreate(pthread_key_t* key, void (*destructor)(void*));
int KeyDelete(pthread_key_t key);
void* GetSpecific(pthread_key_t key);
int SetSpecific(pthread_key_t key, const void* value);
// Runs the destructors of the calling thread's values (up to
// PTHREAD_DESTRUCTOR_ITERATIONS rounds). REQUIRES: an svm thread ending.
void RunKeyDestructors();

}  // namespace svm::rt
