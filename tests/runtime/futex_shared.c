/* futex_shared: futex waits (what std::atomic<T>::wait and std::future do)
 * with a value that does not match, so that none sleeps: on a private word,
 * then twice on a word of the shared heap. Under svm with several nodes
 * only the first shared one draws a line on stderr (a futex wake-up does
 * not cross nodes). The private wait and the second shared one run with
 * stderr caught in a pipe, which must stay empty. Prints
 * "futex_shared EAGAIN private quiet, again quiet". */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static int Wait(uint32_t* word) {
  long r = syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, *word + 1, NULL, NULL, 0);
  return r == -1 && errno == EAGAIN;
}

/* Waits on word with stderr caught: whether it returned EAGAIN and nothing
 * was written to stderr meanwhile. */
static const char* QuietWait(uint32_t* word) {
  int p[2];
  if (pipe2(p, O_NONBLOCK) != 0) return "no-pipe";
  const int saved = dup(2);
  dup2(p[1], 2);
  const int ok = Wait(word);
  dup2(saved, 2);
  close(saved);
  char c;
  const ssize_t n = read(p[0], &c, 1);
  close(p[0]);
  close(p[1]);
  return !ok ? "unexpected" : n > 0 ? "said" : "quiet";
}

int main(void) {
  uint32_t private_word = 7;
  uint32_t* shared = malloc(sizeof *shared);
  if (shared == NULL) return 1;
  *shared = 3;
  const char* private_wait = QuietWait(&private_word);
  const int first = Wait(shared);
  printf("futex_shared %s private %s, again %s\n", first ? "EAGAIN" : "unexpected", private_wait,
         QuietWait(shared));
  free(shared);
  return 0;
}
