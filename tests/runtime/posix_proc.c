/* posix_proc P: reads whose size the kernel decides, into shared buffers
 * whose pages another node holds (issue 13, failure 3: a read from /proc
 * failed with EFAULT on a remote node, the prefault being sized from the
 * file size, which /proc reports as 0). Main fills the buffers; the last
 * worker reads /proc/self/status with read and pread, a pipe with read and
 * a socket pair with recv; main checks what arrived. */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "posix.h"

#define BUF (3 * 4096)
static char *status_read, *status_pread, *from_pipe, *from_socket;
static long got_read, got_pread, got_pipe, got_socket;

static char* shared_page_buffer(void) {
  char* b = NULL;
  CHECK(posix_memalign((void**)&b, 4096, BUF) == 0, "posix_memalign");
  memset(b, 'x', BUF);
  return b;
}

static void io(void) {
  int fd = open("/proc/self/status", O_RDONLY);
  CHECK(fd >= 0, "open /proc/self/status");
  got_read = read(fd, status_read, BUF);
  CHECK(got_read > 0, "read /proc/self/status: %ld errno %d", got_read, errno);
  got_pread = pread(fd, status_pread, BUF, 0);
  CHECK(got_pread > 0, "pread /proc/self/status: %ld errno %d", got_pread, errno);
  close(fd);

  int pp[2];
  CHECK(pipe(pp) == 0, "pipe");
  CHECK(write(pp[1], "through the pipe", 16) == 16, "write pipe");
  got_pipe = read(pp[0], from_pipe, BUF);
  CHECK(got_pipe == 16, "read pipe: %ld errno %d", got_pipe, errno);
  close(pp[0]);
  close(pp[1]);

  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  CHECK(send(sv[1], "through the socket", 18, 0) == 18, "send");
  got_socket = recv(sv[0], from_socket, BUF, 0);
  CHECK(got_socket == 18, "recv: %ld errno %d", got_socket, errno);
  close(sv[0]);
  close(sv[1]);
}

static int workers;
static void* work(void* arg) {
  if ((long)arg == workers - 1) io();
  return 0;
}

int main(int argc, char** argv) {
  const int p = workers = arg_workers(argc, argv);
  status_read = shared_page_buffer();
  status_pread = shared_page_buffer();
  from_pipe = shared_page_buffer();
  from_socket = shared_page_buffer();
  run_workers(p, work); /* the last worker does the I/O */
  CHECK(strncmp(status_read, "Name:", 5) == 0, "status starts '%.10s'", status_read);
  CHECK(strncmp(status_pread, "Name:", 5) == 0, "pread status starts '%.10s'", status_pread);
  CHECK(memcmp(from_pipe, "through the pipe", 16) == 0 && from_pipe[16] == 'x', "pipe data");
  CHECK(memcmp(from_socket, "through the socket", 18) == 0 && from_socket[18] == 'x', "socket data");
  printf("posix_proc ok\n");
  return 0;
}
