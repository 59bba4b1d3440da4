#!/usr/bin/env python3
"""exports_test: libsvm.so exports the interposed names and svm.h's, nothing else.

LD_PRELOAD puts every dynamic symbol of libsvm.so into the program's scope,
so an exported svm:: function or fmt/spdlog instantiation could capture the
program's own calls. Checks, one line each, then a summary:
  - every `nm -D --defined-only` name matches ALLOWED (patterns, not a count);
  - no C++ name at all (svm::, fmt, spdlog, nlohmann, std);
  - every C function libsvm's own objects define with default visibility
    (interpose.cc, svm.h's API) is exported: a name added to interpose.cc but
    not to libsvm/libsvm.map would silently stop interposing.
Usage: exports_test.py LIBSVM.so OBJECT.o...
"""
import fnmatch
import subprocess
import sys

ALLOWED = [
    "svm_*",                                          # svm.h
    "__libc_start_main", "exit", "fork",              # start-up and process
    "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
    "pthread_*", "sem_*",                             # threads and synchronisation
    "read", "readv", "pread", "pread64", "preadv", "preadv64", "recv", "recvfrom", "recvmsg",
    "write", "writev", "pwrite", "pwrite64", "pwritev", "pwritev64", "send", "sendto", "sendmsg",
    "__*_chk",                                        # fortified forms of the above
    "fread", "fwrite", "fgets", "fgetc", "getc", "_IO_getc", "getchar", "__uflow",
    "getdelim", "__getdelim", "getline", "*scanf",    # stdio on program buffers
    "thrd_*", "mtx_*", "cnd_*", "tss_*", "call_once",  # C11 threads
    "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort",  # C++ local statics
    # System calls that take shared buffers (the gate, libsvm/syscalls.h):
    "accept", "accept4", "access", "bind", "chdir", "chmod", "chown", "chroot",
    "clock_nanosleep", "connect", "creat", "creat64", "epoll_ctl", "epoll_wait", "faccessat",
    "fchmodat", "fchownat", "fcntl", "fcntl64", "fdopendir", "fopen", "fopen64", "freopen",
    "fstat", "fstat64", "fstatat", "fstatat64", "fstatfs", "futimens", "get_current_dir_name",
    "getcwd", "getdents64", "getitimer", "getpeername", "getrandom", "getrlimit", "getrusage",
    "getsockname", "getsockopt", "ioctl", "lchown", "link", "linkat", "lstat", "lstat64",
    "mkdir", "mkdirat", "mkdtemp", "mkfifo", "mknod", "mkstemp", "nanosleep", "open", "open64",
    "openat", "openat64", "opendir", "pipe", "pipe2", "poll", "ppoll", "readlink",
    "readlinkat", "rename", "renameat", "rmdir", "sched_getaffinity", "sched_setaffinity",
    "select", "setitimer", "setrlimit", "setsockopt", "sigpending", "sigprocmask",
    "sigsuspend", "socketpair", "stat", "stat64", "statfs", "statx", "symlink", "symlinkat",
    "syscall", "sysinfo", "times", "truncate", "uname", "unlink", "unlinkat", "utime",
    "utimensat", "utimes", "wait", "waitid", "waitpid",
    "clock_getres", "clock_gettime", "copy_file_range", "eventfd_read", "fgetxattr", "flistxattr", "fsetxattr", "getentropy", "getgroups", "getresgid", "getresuid", "getxattr", "inotify_add_watch", "lgetxattr", "listxattr", "mincore", "prctl", "prlimit", "sched_getparam", "sched_rr_get_interval", "sched_setparam", "sched_setscheduler", "sendfile", "sendfile64", "setgroups", "setxattr", "sigtimedwait", "sigwait", "sigwaitinfo", "splice", "statvfs", "statvfs64", "timer_create", "timer_gettime", "timer_settime", "timerfd_gettime", "timerfd_settime", "wait3", "wait4",
]

failures = []


def check(name, ok, detail=""):
    print("%-60s %s" % (name, "ok" if ok else "FAILED"))
    if not ok:
        print("  " + detail)
        failures.append(name)


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


lib, objects = sys.argv[1], sys.argv[2:]
exported = set()
for line in run("nm", "-D", "--defined-only", lib).splitlines():
    parts = line.split()
    if len(parts) >= 3:
        exported.add(parts[2].split("@")[0])
print("%s: %d defined dynamic symbols" % (lib, len(exported)))

stray = sorted(n for n in exported if not any(fnmatch.fnmatchcase(n, p) for p in ALLOWED))
check("only interposed and svm_* names exported", not stray,
      "%d others, e.g. %s" % (len(stray), ", ".join(stray[:15])))
cxx = sorted(n for n in exported if n.startswith("_Z"))
check("no C++ names (svm::, fmt, spdlog, nlohmann, std)", not cxx,
      "%d, e.g. %s" % (len(cxx), ", ".join(cxx[:5])))

# readelf -sW: Num: Value Size Type Bind Vis Ndx Name
meant = set()
for obj in objects:
    for line in run("readelf", "-sW", obj).splitlines():
        f = line.split()
        if len(f) == 8 and f[3] in ("FUNC", "IFUNC") and f[4] in ("GLOBAL", "WEAK") \
                and f[5] == "DEFAULT" and f[6] != "UND" and not f[7].startswith("_Z"):
            meant.add(f[7])
check("libsvm's objects define C functions to export (%d)" % len(meant), len(meant) > 50,
      "found %s" % sorted(meant))
hidden = sorted(meant - exported)
check("every one of them is exported (libsvm.map is complete)", not hidden,
      "defined with default visibility but not exported: %s" % ", ".join(hidden))
unmeant = sorted(n for n in meant if not any(fnmatch.fnmatchcase(n, p) for p in ALLOWED))
check("and each is in ALLOWED", not unmeant, ", ".join(unmeant))

print("exports_test: %d failed" % len(failures))
sys.exit(1 if failures else 0)
