#include "libsvm/prim/maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace svm::prim {
namespace {

// Reads /proc/self/maps one line at a time through a fixed buffer and calls
// fn(start, end, line, line_len) for each. Returns 0 or -errno.
template <typename Fn>
int ForEachMapping(Fn&& fn) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  char buf[8192];
  size_t have = 0;
  int rc = 0;
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof(buf) - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      rc = -errno;
      break;
    }
    have += size_t(n);
    size_t pos = 0;
    for (;;) {
      char* nl = static_cast<char*>(memchr(buf + pos, '\n', have - pos));
      if (nl == nullptr) break;
      // "start-end perms offset dev inode path"
      uintptr_t start = 0, end = 0;
      const char* p = buf + pos;
      while (p < nl && *p != '-') {
        int d = (*p >= 'a') ? *p - 'a' + 10 : *p - '0';
        start = start * 16 + uintptr_t(d);
        ++p;
      }
      for (++p; p < nl && *p != ' '; ++p) {
        int d = (*p >= 'a') ? *p - 'a' + 10 : *p - '0';
        end = end * 16 + uintptr_t(d);
      }
      fn(start, end, buf + pos, size_t(nl - (buf + pos)));
      pos = size_t(nl - buf) + 1;
    }
    if (n == 0) break;  // a last line without '\n' is ignored; the kernel always ends lines
    memmove(buf, buf + pos, have - pos);
    have -= pos;
    if (have == sizeof(buf)) {  // a line longer than the buffer: drop it
      have = 0;
    }
  }
  close(fd);
  return rc;
}

}  // namespace

int CountMappings(uintptr_t lo, uintptr_t hi) {
  int count = 0;
  int rc = ForEachMapping([&](uintptr_t s, uintptr_t e, const char*, size_t) {
    if (s < hi && e > lo) ++count;
  });
  return rc < 0 ? rc : count;
}

// Calls put(c) for each character of a maps line but the column padding
// the kernel inserts before the path.
template <typename Put>
void Collapse(const char* line, size_t len, Put&& put) {
  for (size_t i = 0; i < len; ++i) {
    if (line[i] == ' ' && i > 0 && line[i - 1] == ' ') continue;
    put(line[i]);
  }
}

std::string DescribeMappings(uintptr_t lo, uintptr_t hi) {
  std::string out;
  ForEachMapping([&](uintptr_t s, uintptr_t e, const char* line, size_t len) {
    if (s < hi && e > lo) {
      if (!out.empty()) out += "; ";
      Collapse(line, len, [&](char c) { out.push_back(c); });
    }
  });
  return out;
}

int FindMapping(uintptr_t addr, char* line, size_t cap) {
  if (cap == 0) return -EINVAL;
  size_t n = 0;
  const int rc = ForEachMapping([&](uintptr_t s, uintptr_t e, const char* l, size_t len) {
    if (addr < s || addr >= e || n != 0) return;
    Collapse(l, len, [&](char c) {
      if (n + 1 < cap) line[n++] = c;
    });
  });
  line[n] = '\0';
  return rc < 0 ? rc : int(n);
}

long ReadMaxMapCount() {
  int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  char buf[32];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  int err = errno;
  close(fd);
  if (n <= 0) return n < 0 ? -err : -EINVAL;
  long v = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) v = v * 10 + (buf[i] - '0');
  return v > 0 ? v : -EINVAL;
}

}  // namespace svm::prim
