/* rss: prints the resident memory of the process (VmRSS, KiB) and exits;
 * under svmrun it runs on node 0 once the node is up (scripts/bench-startup). */
#include <stdio.h>
#include <string.h>

int main(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof(line), f))
    if (strncmp(line, "VmRSS:", 6) == 0) printf("rss %s", line + 6);
  if (f) fclose(f);
  return 0;
}
