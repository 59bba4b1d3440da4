// libfabric opened when a job first uses it (--transport ofi), for libsvm.so
// only: linked, it is loaded into every node of every job, and with it its
// providers' libraries; Debian's psm provider pulls in libinfinipath, whose
// constructor probes for its device for about 200 ms. The ofi backend calls
// these five functions of the library; the rest is reached through the
// function tables of the objects they return.
#include <dlfcn.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <mutex>
#include <string>

#include "util/signal_dispositions.h"

namespace {

constexpr char kLibrary[] = "libfabric.so.1";

struct Library {
  void* handle = nullptr;
  std::string error;  // dlerror() when it did not open
};

const Library& Open() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    // libfabric's psm providers (Debian's libinfinipath, libpsm2) install
    // handlers for SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM in
    // their constructors, which run here: they would become the program's
    // (hiding its core dumps), and the handlers svm's fault handler passes
    // the program's own faults to.
    svm::KeepSignalDispositions keep;
    lib.handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib.handle == nullptr) {
      const char* e = dlerror();
      lib.error = std::string(kLibrary) + " could not be loaded: " + (e ? e : "?");
    }
  });
  return lib;
}

template <typename F>
F Symbol(const char* name) {
  const Library& lib = Open();
  return lib.handle ? reinterpret_cast<F>(dlsym(lib.handle, name)) : nullptr;
}

}  // namespace

extern "C" {

int fi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
               const struct fi_info* hints, struct fi_info** info) {
  static const auto real = Symbol<decltype(&fi_getinfo)>("fi_getinfo");
  return real ? real(version, node, service, flags, hints, info) : -FI_ENOSYS;
}

void fi_freeinfo(struct fi_info* info) {
  static const auto real = Symbol<decltype(&fi_freeinfo)>("fi_freeinfo");
  if (real) real(info);
}

struct fi_info* fi_dupinfo(const struct fi_info* info) {
  static const auto real = Symbol<decltype(&fi_dupinfo)>("fi_dupinfo");
  return real ? real(info) : nullptr;
}

int fi_fabric(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  static const auto real = Symbol<decltype(&fi_fabric)>("fi_fabric");
  return real ? real(attr, fabric, context) : -FI_ENOSYS;
}

const char* fi_strerror(int errnum) {
  static const auto real = Symbol<decltype(&fi_strerror)>("fi_strerror");
  return real ? real(errnum) : Open().error.c_str();
}

}  // extern "C"
