/* options_test: splash2/common/options.h (defaults, flags, presets, bad
 * input, the -h text). Prints one line per failed check; exit 1 on any. */
#define _GNU_SOURCE
#include "options.h"

static int failures;
#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      failures++;                                                      \
    }                                                                  \
  } while (0)

static long N, STEPS;
static double TOL;
static int TEST;

static const struct app_preset SIZES[] = {
  {"small", "-n32 -s2", NULL},
  {"seed", "-n512  -s4", "a big one"},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('n', "cells", "N", &N, "16", "cells (<= " APP_STR(1024) ")"),
  OPT_PRESETS('S', SIZES),
  OPT_LONG('s', "steps", "S", &STEPS, "3", "time steps"),
  OPT_DOUBLE('e', "tol", "E", &TOL, "1e-7", "tolerance"),
  OPT_SWITCH('t', &TEST, "verify"),
  OPT_END,
};

/* Parses a NULL-terminated argument list (argv[0] is "app"). */
static int parse(const struct app_opt *opts, const char *const *args) {
  char *argv[16];
  int argc = 0;
  argv[argc++] = (char *)"app";
  while (*args != NULL) argv[argc++] = (char *)*args++;
  argv[argc] = NULL;
  optind = 0; /* glibc: start afresh */
  FILE *saved = stderr;
  stderr = fopen("/dev/null", "w"); /* usage and getopt's complaints */
  int rc = app_opts_parse(opts, argc, argv);
  fclose(stderr);
  stderr = saved;
  return rc;
}
#define PARSE(...) parse(OPTS, (const char *const[]){__VA_ARGS__, NULL})

int main(void) {
  TEST = 1;
  N = STEPS = -1;
  CHECK(parse(OPTS, (const char *const[]){NULL}) == -1);
  CHECK(N == 16 && STEPS == 3 && TOL == 1e-7 && TEST == 0);

  CHECK(PARSE("-n", "64", "-s5", "-e", "0.5", "-t") == -1);
  CHECK(N == 64 && STEPS == 5 && TOL == 0.5 && TEST == 1);
  CHECK(PARSE("-n", "64", "-n", " 8") == -1 && N == 8); /* the last wins; strtol's blanks */

  /* A preset sets what it lists, in order with the other flags. */
  CHECK(PARSE("-S", "seed") == -1 && N == 512 && STEPS == 4);
  CHECK(PARSE("-S", "small", "-n", "100") == -1 && N == 100 && STEPS == 2);
  CHECK(PARSE("-n", "100", "-S", "small") == -1 && N == 32 && STEPS == 2);

  /* Bad input: exit status 2. */
  CHECK(PARSE("-Z") == 2);
  CHECK(PARSE("-n") == 2);
  CHECK(PARSE("-n", "abc") == 2);
  CHECK(PARSE("-n", "2x") == 2);
  CHECK(PARSE("-n", "") == 2);
  CHECK(PARSE("-e", "1e-5x") == 2);
  CHECK(PARSE("-S", "huge") == 2);
  CHECK(PARSE("-S", "SMALL") == 2);
  CHECK(PARSE("stray") == 2);
  CHECK(PARSE("-n", "8", "--", "stray") == 2);
  CHECK(PARSE("-t", "-h", "-Z") == 0 && TEST == 1); /* -h wins over what follows */

  /* A broken table is reported, not half applied. */
  static const struct app_preset BAD[] = {{"x", "-q1", NULL}};
  static const struct app_opt BAD_PRESET[] = {OPT_PRESETS('S', BAD), OPT_END};
  CHECK(parse(BAD_PRESET, (const char *const[]){"-S", "x", NULL}) == 2);
  static const struct app_opt BAD_DEFAULT[] = {OPT_LONG('n', "n", "N", &N, "ten", "n"), OPT_END};
  CHECK(parse(BAD_DEFAULT, (const char *const[]){NULL}) == 2);

  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  app_opts_usage(f, OPTS, "app");
  fclose(f);
  const char *want =
      "usage: app [-n cells] [-S small|seed] [-s steps] [-e tol] [-t] [-h]\n"
      "  -n N   cells (<= 1024); default 16\n"
      "  -S     preset: small (-n32 -s2) or seed (-n512  -s4, a big one)\n"
      "  -s S   time steps; default 3\n"
      "  -e E   tolerance; default 1e-7\n"
      "  -t     verify\n"
      "  -h     this help\n";
  CHECK(strcmp(text, want) == 0);
  if (strcmp(text, want) != 0) fprintf(stderr, "got:\n%s", text);
  free(text);

  static const struct app_preset THREE[] = {{"a", "-n1", NULL}, {"b", "-n2", NULL}, {"c", "-n3", "x"}};
  static const struct app_opt ONLY_PRESETS[] = {OPT_PRESETS('S', THREE), OPT_END};
  f = open_memstream(&text, &len);
  app_opts_usage(f, ONLY_PRESETS, "app");
  fclose(f);
  CHECK(strcmp(text, "usage: app [-S a|b|c] [-h]\n"
                     "  -S     preset: a (-n1), b (-n2) or c (-n3, x)\n"
                     "  -h     this help\n") == 0);
  free(text);

  printf("options_test: %s (%d failed)\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
