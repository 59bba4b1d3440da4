m4_divert(-1)
# c.m4: the ANL parallel macros, expanded to POSIX threads (ours; written for
# svm from the macro names and their documented meaning, no SPLASH code).
#
# Processed with `m4 -P` (GNU m4's builtins need the m4_ prefix, so C words
# such as index or len are never taken for macros). Quotes are [[[ ]]].
#
#   m4 -P c.m4 app.C > app.c                      threads (pthreads)
#   m4 -P -DANL_SEQUENTIAL c.m4 app.C > app.c     one thread, no pthreads:
#                                                 locks, barriers and pauses
#                                                 vanish, CREATE is refused;
#                                                 the speedup baseline.
#
# Programs are plain C; nothing here calls svm. Memory model: every shared
# access is ordered by a lock, barrier, pause flag, or create/join, so the
# program is data-race free and runs unchanged on release consistency.
#
# Macro            expands to
#   MAIN_ENV         includes, thread table, helpers (in the file with main)
#   EXTERN_ENV       includes and declarations (other files)
#   MAIN_INITENV     nothing needed; kept for the ANL shape
#   MAIN_END(code)   exit(code), code 0 when left out
#   G_MALLOC(n)      shared allocation; 4 KiB aligned from 4 KiB up
#   NU_MALLOC(n, i)  as G_MALLOC (node hint ignored)
#   G_FREE(p)        free(p)
#   CREATE(f)        new thread running void f(void); k-th call: id k
#   GET_PID(v)       v = id of the calling thread (main: 0, k-th CREATE: k)
#   WAIT_FOR_END(n)  join the first n created threads
#   LOCKDEC(l) LOCKINIT(l) LOCK(l) UNLOCK(l)            pthread mutex
#   ALOCKDEC(a, n) ALOCKINIT(a, n) ALOCK(a, i) AULOCK(a, i)  mutex array
#   BARDEC(b) BARINIT(b, n) BARRIER(b, n)               pthread barrier (count
#                                                     fixed by BARINIT)
#   PAUSEDEC(f) PAUSEINIT(f) SETPAUSE(f) CLEARPAUSE(f) WAITPAUSE(f)
#                    a flag under a mutex with a condition variable:
#                    SETPAUSE sets and wakes, WAITPAUSE waits until set (does
#                    not clear), CLEARPAUSE clears. Never a spinning plain
#                    variable (a remote write would never be seen on svm).
#   CLOCK(t)         t = microseconds (unsigned long, gettimeofday)

m4_changequote([[[,]]])

m4_define([[[ANL_INCLUDES]]], [[[
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
m4_ifdef([[[ANL_SEQUENTIAL]]], [[[#define ANL_MAX_THREADS 1]]], [[[#include <pthread.h>
#define ANL_MAX_THREADS 1024]]])
m4_ifdef([[[ANL_SEQUENTIAL]]], [[[typedef struct anl_pause { int flag; } anl_pause_t;]]],
[[[typedef struct anl_pause {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int flag;
} anl_pause_t;]]])
void *anl_g_malloc(size_t n);
int anl_get_pid(void);
]]])

m4_define([[[MAIN_ENV]]], [[[ANL_INCLUDES
m4_ifdef([[[ANL_SEQUENTIAL]]], [[[
int anl_get_pid(void) { return 0; }
static void anl_create(void (*f)(void)) {
  (void)f;
  fprintf(stderr, "anl_create: this is the sequential build (one thread)\n");
  exit(2);
}
static void anl_wait_for_end(int n) { (void)n; }
]]], [[[
static pthread_t anl_threads[ANL_MAX_THREADS];
static void (*anl_funcs[ANL_MAX_THREADS])(void);
static int anl_nthreads;
static __thread int anl_tid;
int anl_get_pid(void) { return anl_tid; }
static void *anl_start(void *arg) {
  anl_tid = (int)(intptr_t)arg;
  anl_funcs[anl_tid]();
  return NULL;
}
static void anl_create(void (*f)(void)) {
  int id = anl_nthreads + 1;
  if (id >= ANL_MAX_THREADS) {
    fprintf(stderr, "anl_create: more than %d threads\n", ANL_MAX_THREADS - 1);
    exit(2);
  }
  anl_funcs[id] = f;
  int rc = pthread_create(&anl_threads[id], NULL, anl_start, (void *)(intptr_t)id);
  if (rc != 0) {
    fprintf(stderr, "anl_create: pthread_create: %s\n", strerror(rc));
    exit(1);
  }
  anl_nthreads = id;
}
static void anl_wait_for_end(int n) {
  for (int i = 1; i <= n && i <= anl_nthreads; i++) {
    int rc = pthread_join(anl_threads[i], NULL);
    if (rc != 0) {
      fprintf(stderr, "anl_wait_for_end: pthread_join: %s\n", strerror(rc));
      exit(1);
    }
  }
}
]]])
void *anl_g_malloc(size_t n) {
  void *p = NULL;
  if (n >= 4096) {
    if (posix_memalign(&p, 4096, n) != 0) p = NULL;
  } else {
    p = malloc(n ? n : 1);
  }
  if (p == NULL) {
    fprintf(stderr, "G_MALLOC: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}
]]])

m4_define([[[EXTERN_ENV]]], [[[ANL_INCLUDES]]])
m4_define([[[MAIN_INITENV]]], [[[]]])
m4_define([[[MAIN_END]]], [[[exit(m4_ifelse([[[$1]]], [[[]]], 0, [[[$1]]]))]]])

m4_define([[[G_MALLOC]]], [[[anl_g_malloc($1)]]])
m4_define([[[NU_MALLOC]]], [[[anl_g_malloc($1)]]])
m4_define([[[G_FREE]]], [[[free($1)]]])
m4_define([[[CREATE]]], [[[anl_create($1)]]])
m4_define([[[GET_PID]]], [[[($1) = anl_get_pid()]]])
m4_define([[[WAIT_FOR_END]]], [[[anl_wait_for_end($1)]]])
m4_define([[[CLOCK]]], [[[{ struct timeval anl_tv; gettimeofday(&anl_tv, NULL); ($1) = (unsigned long)anl_tv.tv_sec * 1000000UL + (unsigned long)anl_tv.tv_usec; }]]])

m4_ifdef([[[ANL_SEQUENTIAL]]], [[[
m4_define([[[LOCKDEC]]], [[[int $1;]]])
m4_define([[[LOCKINIT]]], [[[(void)($1)]]])
m4_define([[[LOCK]]], [[[(void)($1)]]])
m4_define([[[UNLOCK]]], [[[(void)($1)]]])
m4_define([[[ALOCKDEC]]], [[[int $1[$2];]]])
m4_define([[[ALOCKINIT]]], [[[(void)($1)]]])
m4_define([[[ALOCK]]], [[[(void)($1)[$2]]]])
m4_define([[[AULOCK]]], [[[(void)($1)[$2]]]])
m4_define([[[BARDEC]]], [[[int $1;]]])
m4_define([[[BARINIT]]], [[[(void)($1)]]])
m4_define([[[BARRIER]]], [[[(void)($1)]]])
m4_define([[[PAUSEDEC]]], [[[anl_pause_t $1;]]])
m4_define([[[PAUSEINIT]]], [[[(($1).flag = 0)]]])
m4_define([[[SETPAUSE]]], [[[(($1).flag = 1)]]])
m4_define([[[CLEARPAUSE]]], [[[(($1).flag = 0)]]])
m4_define([[[WAITPAUSE]]], [[[{ if (!($1).flag) { fprintf(stderr, "anl_waitpause: would block forever (sequential build)\n"); exit(1); } }]]])
]]], [[[
m4_define([[[LOCKDEC]]], [[[pthread_mutex_t $1;]]])
m4_define([[[LOCKINIT]]], [[[pthread_mutex_init(&($1), NULL)]]])
m4_define([[[LOCK]]], [[[pthread_mutex_lock(&($1))]]])
m4_define([[[UNLOCK]]], [[[pthread_mutex_unlock(&($1))]]])
m4_define([[[ALOCKDEC]]], [[[pthread_mutex_t $1[$2];]]])
m4_define([[[ALOCKINIT]]], [[[{ for (long anl_i = 0; anl_i < (long)($2); anl_i++) pthread_mutex_init(&($1)[anl_i], NULL); }]]])
m4_define([[[ALOCK]]], [[[pthread_mutex_lock(&($1)[$2])]]])
m4_define([[[AULOCK]]], [[[pthread_mutex_unlock(&($1)[$2])]]])
m4_define([[[BARDEC]]], [[[pthread_barrier_t $1;]]])
m4_define([[[BARINIT]]], [[[pthread_barrier_init(&($1), NULL, (unsigned)($2))]]])
m4_define([[[BARRIER]]], [[[pthread_barrier_wait(&($1))]]])
m4_define([[[PAUSEDEC]]], [[[anl_pause_t $1;]]])
m4_define([[[PAUSEINIT]]], [[[{ pthread_mutex_init(&($1).mu, NULL); pthread_cond_init(&($1).cv, NULL); ($1).flag = 0; }]]])
m4_define([[[SETPAUSE]]], [[[{ pthread_mutex_lock(&($1).mu); ($1).flag = 1; pthread_cond_broadcast(&($1).cv); pthread_mutex_unlock(&($1).mu); }]]])
m4_define([[[CLEARPAUSE]]], [[[{ pthread_mutex_lock(&($1).mu); ($1).flag = 0; pthread_mutex_unlock(&($1).mu); }]]])
m4_define([[[WAITPAUSE]]], [[[{ pthread_mutex_lock(&($1).mu); while (!($1).flag) pthread_cond_wait(&($1).cv, &($1).mu); pthread_mutex_unlock(&($1).mu); }]]])
]]])
m4_divert(0)m4_dnl
