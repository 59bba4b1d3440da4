#include "libsvm/tsd.h"

#include <errno.h>

#include <cstdint>
#include <unordered_map>

#include "libsvm/entry.h"
#include "libsvm/next_symbol.h"
#include "libsvm/runtime.h"
#include "libsvm/sync.h"
#include "libsvm/thread_state.h"

namespace svm::rt {
namespace {

constexpr uint32_t kSvmKey = 1u << 31;
// Keys are few: 8 KiB each lets offset / 8192 name the largest region (16 TiB).
constexpr uint64_t kKeyAlign = 8192;
constexpr uint64_t kKeyMagic = 0x5356'4d4b'4559'0001ull;  // "SVMKEY"

struct KeyRecord {
  uint64_t magic;
  void (*destructor)(void*);
};

SVM_NEXT_FN(real_key_create, int (*)(pthread_key_t*, void (*)(void*)), "pthread_key_create");
SVM_NEXT_FN(real_key_delete, int (*)(pthread_key_t), "pthread_key_delete");
SVM_NEXT_FN(real_getspecific, void* (*)(pthread_key_t), "pthread_getspecific");
SVM_NEXT_FN(real_setspecific, int (*)(pthread_key_t, const void*), "pthread_setspecific");

bool IsSvmKey(pthread_key_t k) { return (k & kSvmKey) != 0; }

KeyRecord* Record(pthread_key_t k) {
  const uint64_t base = Runtime::Get()->options().region_base;
  return reinterpret_cast<KeyRecord*>(base + uint64_t(k & ~kSvmKey) * kKeyAlign);
}

// The record if the key is live (a shared-memory read: it may fault).
KeyRecord* Live(pthread_key_t k) {
  if (!Runtime::Get()) return nullptr;
  KeyRecord* r = Record(k);
  if (!Runtime::Get()->IsShared(r) || r->magic != kKeyMagic) return nullptr;
  return r;
}

// This thread's values (private memory, made inside the runtime).
thread_local std::unordered_map<pthread_key_t, void*>* t_values = nullptr;

}  // namespace

int KeyCreate(pthread_key_t* key, void (*destructor)(void*)) {
  if (!Managed()) return real_key_create.get()(key, destructor);
  auto* r = static_cast<KeyRecord*>(AlignedAlloc(kKeyAlign, sizeof(KeyRecord)));
  if (!r) return ENOMEM;
  const uint64_t offset = (reinterpret_cast<uint64_t>(r) - Runtime::Get()->options().region_base) / kKeyAlign;
  if (offset >= kSvmKey) {
    Free(r);
    return EAGAIN;
  }
  r->magic = kKeyMagic;
  r->destructor = destructor;
  *key = pthread_key_t(kSvmKey | offset);
  return 0;
}

int KeyDelete(pthread_key_t key) {
  if (!IsSvmKey(key)) return real_key_delete.get()(key);
  KeyRecord* r = Live(key);
  if (!r) return EINVAL;
  r->magic = 0;
  Free(r);
  return 0;
}

void* GetSpecific(pthread_key_t key) {
  if (!IsSvmKey(key)) return real_getspecific.get()(key);
  if (!t_values) return nullptr;
  auto it = t_values->find(key);
  return it == t_values->end() ? nullptr : it->second;
}

int SetSpecific(pthread_key_t key, const void* value) {
  if (!IsSvmKey(key)) return real_setspecific.get()(key, value);
  if (!Live(key)) return EINVAL;
  RuntimeScope scope;  // the table is private memory
  if (!t_values) t_values = new std::unordered_map<pthread_key_t, void*>;
  if (value) (*t_values)[key] = const_cast<void*>(value);
  else t_values->erase(key);
  return 0;
}

void RunKeyDestructors() {
  for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS && t_values && !t_values->empty(); ++round) {
    std::unordered_map<pthread_key_t, void*> values;
    {
      RuntimeScope scope;
      values.swap(*t_values);
    }
    for (auto [key, value] : values)
      if (KeyRecord* r = Live(key); r && r->destructor) r->destructor(value);
    RuntimeScope scope;
    values.clear();
  }
  RuntimeScope scope;
  delete t_values;
  t_values = nullptr;
}

}  // namespace svm::rt
