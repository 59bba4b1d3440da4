/* syscalls P DIR: system calls on shared memory another node owns. Main
 * (node 0) writes the input files and fills every buffer (so their pages
 * live on node 0); the last worker (the last node) then moves file and
 * socket data with read, pread, readv, fread, fscanf and fgets into those
 * buffers and shared globals, and with write, pwrite, writev, fwrite, send,
 * sendto and sendmsg out of them; main checks everything after the join.
 * Prints "syscalls BYTES" (bytes checked). */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "prog.h"

#define SZ (5 * 4096 + 321)
#define MSG 6000
static const char* dir;
static int workers;
/* Filled by main, written by the I/O worker. */
static unsigned char *in_read, *in_pread, *in_readv, *in_fread, *in_recv, *in_recvfrom, *in_recvmsg;
/* Filled by main, read by the I/O worker. */
static unsigned char* out;
static int g_a, g_b;
static char g_word[16], g_line[32];

static unsigned char pattern(size_t k) { return (unsigned char)(k * 7 + 3 + k / 4096); }
static unsigned char out_pattern(size_t k) { return (unsigned char)(k * 13 + 1); }

static void path(char* buf, size_t n, const char* name) { snprintf(buf, n, "%s/%s", dir, name); }

static int open_in(const char* name, int flags) {
  char p[512];
  path(p, sizeof(p), name);
  const int fd = open(p, flags, 0600);
  CHECK(fd >= 0, "open %s", p);
  return fd;
}

static void io(void) {
  int fd = open_in("input.bin", O_RDONLY);
  CHECK(read(fd, in_read, SZ) == SZ, "read");
  CHECK(pread(fd, in_pread, 5000, 1000) == 5000, "pread");
  CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek");
  struct iovec iov[2] = {{in_readv, 3000}, {in_readv + 3000, SZ - 3000}};
  CHECK(readv(fd, iov, 2) == SZ, "readv");
  close(fd);

  char p[512];
  path(p, sizeof(p), "input.bin");
  FILE* f = fopen(p, "r");
  CHECK(f, "fopen");
  CHECK(fread(in_fread, 1, SZ, f) == SZ, "fread");
  fclose(f);
  path(p, sizeof(p), "input.txt");
  f = fopen(p, "r");
  CHECK(f, "fopen");
  CHECK(fscanf(f, "%d %d %15s ", &g_a, &g_b, g_word) == 3, "fscanf");
  CHECK(fgets(g_line, sizeof(g_line), f) != NULL, "fgets");
  fclose(f);

  fd = open_in("out.write", O_WRONLY | O_CREAT | O_TRUNC);
  CHECK(write(fd, out, SZ) == SZ, "write");
  CHECK(pwrite(fd, out + 100, 1000, SZ) == 1000, "pwrite");
  struct iovec wv[2] = {{out, 2000}, {out + 2000, SZ - 2000}};
  CHECK(lseek(fd, SZ + 1000, SEEK_SET) == SZ + 1000, "lseek");
  CHECK(writev(fd, wv, 2) == SZ, "writev");
  close(fd);
  path(p, sizeof(p), "out.fwrite");
  f = fopen(p, "w");
  CHECK(f && fwrite(out, 1, SZ, f) == SZ, "fwrite");
  CHECK(fclose(f) == 0, "fclose");

  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  CHECK(send(sv[0], out, MSG, 0) == MSG, "send");
  CHECK(recv(sv[1], in_recv, MSG, MSG_WAITALL) == MSG, "recv");
  CHECK(sendto(sv[0], out + 1, MSG, 0, NULL, 0) == MSG, "sendto");
  CHECK(recvfrom(sv[1], in_recvfrom, MSG, MSG_WAITALL, NULL, NULL) == MSG, "recvfrom");
  struct iovec sv_out[2] = {{out + 2, 100}, {out + 102, MSG - 100}};
  struct msghdr mo = {.msg_iov = sv_out, .msg_iovlen = 2};
  CHECK(sendmsg(sv[0], &mo, 0) == MSG, "sendmsg");
  struct iovec sv_in[2] = {{in_recvmsg, 4097}, {in_recvmsg + 4097, MSG - 4097}};
  struct msghdr mi = {.msg_iov = sv_in, .msg_iovlen = 2};
  CHECK(recvmsg(sv[1], &mi, MSG_WAITALL) == MSG, "recvmsg");
  close(sv[0]);
  close(sv[1]);
}

static void* work(void* arg) {
  if ((long)arg == workers - 1) io();
  return NULL;
}

static unsigned char* filled(size_t n) {
  unsigned char* b = malloc(n);
  CHECK(b, "malloc");
  memset(b, 0xee, n);
  return b;
}

static long expect_equal(const unsigned char* got, size_t n, size_t from, unsigned char (*want)(size_t),
                         const char* what) {
  for (size_t k = 0; k < n; ++k)
    CHECK(got[k] == want(from + k), "%s: byte %zu is %d, want %d", what, k, got[k], want(from + k));
  return (long)n;
}

static long check_file(const char* name, size_t n, size_t pos, size_t from) {
  unsigned char* b = filled(n);
  int fd = open_in(name, O_RDONLY);
  CHECK(pread(fd, b, n, (off_t)pos) == (ssize_t)n, "reading back %s", name);
  close(fd);
  const long checked = expect_equal(b, n, from, out_pattern, name);
  free(b);
  return checked;
}

int main(int argc, char** argv) {
  CHECK(argc >= 3, "usage: syscalls P DIR");
  workers = arg_workers(argc, argv);
  dir = argv[2];
  unsigned char* src = malloc(SZ);
  for (size_t k = 0; k < SZ; ++k) src[k] = pattern(k);
  int fd = open_in("input.bin", O_WRONLY | O_CREAT | O_TRUNC);
  CHECK(write(fd, src, SZ) == SZ, "write input");
  close(fd);
  fd = open_in("input.txt", O_WRONLY | O_CREAT | O_TRUNC);
  const char text[] = "123 -456 hello\nsecond line\n";
  CHECK(write(fd, text, sizeof(text) - 1) == (ssize_t)sizeof(text) - 1, "write text");
  close(fd);
  in_read = filled(SZ);
  in_pread = filled(SZ);
  in_readv = filled(SZ);
  in_fread = filled(SZ);
  in_recv = filled(MSG);
  in_recvfrom = filled(MSG);
  in_recvmsg = filled(MSG);
  out = malloc(SZ);
  for (size_t k = 0; k < SZ; ++k) out[k] = out_pattern(k);
  memset(g_word, 'x', sizeof(g_word));
  memset(g_line, 'x', sizeof(g_line));

  run_workers(workers, work);

  long n = 0;
  n += expect_equal(in_read, SZ, 0, pattern, "read");
  n += expect_equal(in_pread, 5000, 1000, pattern, "pread");
  n += expect_equal(in_readv, SZ, 0, pattern, "readv");
  n += expect_equal(in_fread, SZ, 0, pattern, "fread");
  CHECK(g_a == 123 && g_b == -456 && strcmp(g_word, "hello") == 0, "fscanf gave %d %d %s", g_a, g_b, g_word);
  CHECK(strcmp(g_line, "second line\n") == 0, "fgets gave '%s'", g_line);
  n += expect_equal(in_recv, MSG, 0, out_pattern, "recv");
  n += expect_equal(in_recvfrom, MSG, 1, out_pattern, "recvfrom");
  n += expect_equal(in_recvmsg, MSG, 2, out_pattern, "recvmsg");
  n += check_file("out.write", SZ, 0, 0);
  n += check_file("out.write", 1000, SZ, 100);
  n += check_file("out.write", SZ, SZ + 1000, 0);
  n += check_file("out.fwrite", SZ, 0, 0);
  printf("syscalls %ld\n", n);
  return 0;
}
