/* oom P: an allocation larger than the whole shared heap (run with a small
 * --region-size) returns NULL with ENOMEM, every time, and svm says once on
 * stderr which limit was hit; smaller allocations still work. Prints
 * "oom ok". */
#include <errno.h>

#include "prog.h"

int main(int argc, char** argv) {
  (void)arg_workers(argc, argv);
  for (int i = 0; i < 2; ++i) {
    errno = 0;
    void* p = malloc((size_t)4 << 30);
    CHECK(p == NULL && errno == ENOMEM, "malloc of 4 GiB: %p, errno %d", p, errno);
  }
  void* q = NULL;
  CHECK(posix_memalign(&q, 4096, (size_t)4 << 30) == ENOMEM, "posix_memalign of 4 GiB");
  char* small = malloc(1000);
  CHECK(small != NULL, "malloc of 1000 bytes after the failures");
  small[999] = 1;
  free(small);
  printf("oom ok\n");
  return 0;
}
