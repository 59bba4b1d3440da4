/* options.h: table-driven command-line options for the splash2 apps (ours).
 *
 * An app declares its options once, in the order -h lists them: flag, the
 * variable it sets, its default and its help. The default is text, parsed
 * like a command-line value, so -h shows it as written. -S NAME applies a
 * size preset written as the flags it stands for ("-n512 -s4"), so -h and
 * what the preset does cannot drift apart. -h is always there, last.
 *
 *   static const struct app_preset SIZES[] = {
 *     {"small", "-n64", NULL}, {"seed", "-n4096", "4K items"}};
 *   static const struct app_opt OPTS[] = {
 *     OPT_LONG('n', "items", "N", &N, "64", "items"),
 *     OPT_PRESETS('S', SIZES),
 *     OPT_SWITCH('t', &TEST, "verify"),
 *     OPT_END};
 *   int rc = app_opts_parse(OPTS, argc, argv);
 *   if (rc >= 0) return rc;
 *
 * Bad input (an unknown flag or a missing value, which getopt names; a
 * value that is not all a number, an unknown preset, a stray argument,
 * which the parser names) prints the usage on stderr and gives exit
 * status 2.
 *
 * Not thread-safe (getopt): call from main before any thread starts.
 */
#ifndef SPLASH2_OPTIONS_H
#define SPLASH2_OPTIONS_H

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum app_opt_kind { APP_OPT_END, APP_OPT_LONG, APP_OPT_DOUBLE, APP_OPT_SWITCH, APP_OPT_PRESET };

struct app_preset {
  const char *name;  /* the argument of -S */
  const char *flags; /* what it sets: "-n512 -s4" (no spaces in a value) */
  const char *note;  /* shown after the flags by -h, or NULL */
};

struct app_opt {
  enum app_opt_kind kind;
  char flag;
  const char *word; /* usage line: [-p threads] */
  const char *meta; /* help line: -p P */
  const char *def;  /* default as text; NULL: none */
  const char *help;
  long *l;                          /* APP_OPT_LONG */
  double *d;                        /* APP_OPT_DOUBLE */
  int *on;                          /* APP_OPT_SWITCH: set to 1 */
  const struct app_preset *presets; /* APP_OPT_PRESET */
  size_t npresets;
};

/* Typed fields: a variable of the wrong type is a compiler diagnostic. */
#define OPT_LONG(f_, w_, m_, v_, def_, h_) \
  { .kind = APP_OPT_LONG, .flag = (f_), .word = (w_), .meta = (m_), .def = (def_), .help = (h_), .l = (v_) }
#define OPT_DOUBLE(f_, w_, m_, v_, def_, h_) \
  { .kind = APP_OPT_DOUBLE, .flag = (f_), .word = (w_), .meta = (m_), .def = (def_), .help = (h_), .d = (v_) }
#define OPT_SWITCH(f_, v_, h_) { .kind = APP_OPT_SWITCH, .flag = (f_), .help = (h_), .on = (v_) }
/* p_: the array itself (its size is taken), not a pointer. */
#define OPT_PRESETS(f_, p_) \
  { .kind = APP_OPT_PRESET, .flag = (f_), .presets = (p_), .npresets = sizeof(p_) / sizeof((p_)[0]) }
#define OPT_END { .kind = APP_OPT_END }

#define APP_STR_(x) #x
#define APP_STR(x) APP_STR_(x) /* a macro's value as a string, for help text */

static inline void app_opts_usage(FILE *f, const struct app_opt *opts, const char *prog) {
  fprintf(f, "usage: %s", prog);
  for (const struct app_opt *o = opts; o->kind != APP_OPT_END; o++) {
    if (o->kind == APP_OPT_SWITCH) {
      fprintf(f, " [-%c]", o->flag);
    } else if (o->kind == APP_OPT_PRESET) {
      fprintf(f, " [-%c ", o->flag);
      for (size_t i = 0; i < o->npresets; i++) fprintf(f, "%s%s", i == 0 ? "" : "|", o->presets[i].name);
      fputs("]", f);
    } else {
      fprintf(f, " [-%c %s]", o->flag, o->word);
    }
  }
  fputs(" [-h]\n", f);
  for (const struct app_opt *o = opts; o->kind != APP_OPT_END; o++) {
    fprintf(f, "  -%c %-3s ", o->flag, o->meta != NULL ? o->meta : "");
    if (o->kind == APP_OPT_PRESET) {
      fputs("preset:", f);
      for (size_t i = 0; i < o->npresets; i++) {
        const struct app_preset *p = &o->presets[i];
        const char *sep = i == 0 ? " " : i + 1 < o->npresets ? ", " : " or ";
        fprintf(f, "%s%s (%s%s%s)", sep, p->name, p->flags, p->note != NULL ? ", " : "",
                p->note != NULL ? p->note : "");
      }
    } else {
      fputs(o->help, f);
      if (o->def != NULL) fprintf(f, "; default %s", o->def);
    }
    fputs("\n", f);
  }
  fputs("  -h     this help\n", f);
}

/* Sets o's variable from text; -1 when the text is not all a number. */
static inline int app_opt_set(const struct app_opt *o, const char *text) {
  char *end;
  if (o->kind == APP_OPT_LONG) {
    long v = strtol(text, &end, 10);
    if (*end != '\0' || end == text) return -1;
    *o->l = v;
  } else if (o->kind == APP_OPT_DOUBLE) {
    double v = strtod(text, &end);
    if (*end != '\0' || end == text) return -1;
    *o->d = v;
  } else {
    return -1;
  }
  return 0;
}

static inline const struct app_opt *app_opt_find(const struct app_opt *opts, int flag) {
  for (const struct app_opt *o = opts; o->kind != APP_OPT_END; o++)
    if (o->flag == flag) return o;
  return NULL;
}

/* Applies a preset's flags ("-n512 -s4"); -1 on a malformed one. */
static inline int app_opt_apply(const struct app_opt *opts, const char *flags) {
  const char *s = flags;
  for (;;) {
    while (*s == ' ') s++;
    if (*s == '\0') return 0;
    size_t len = strcspn(s, " ");
    char value[32];
    const struct app_opt *o = len >= 3 && s[0] == '-' ? app_opt_find(opts, s[1]) : NULL;
    if (o == NULL || len - 2 >= sizeof value) return -1;
    memcpy(value, s + 2, len - 2);
    value[len - 2] = '\0';
    if (app_opt_set(o, value) != 0) return -1;
    s += len;
  }
}

/* Sets the defaults, then reads argv. Returns -1 to go on, else the status
 * main should return: 0 after -h, 2 after bad input (usage printed). */
static inline int app_opts_parse(const struct app_opt *opts, int argc, char **argv) {
  char spec[128];
  size_t n = 0;
  for (const struct app_opt *o = opts; o->kind != APP_OPT_END; o++) {
    if (o->kind == APP_OPT_SWITCH) *o->on = 0;
    if (o->def != NULL && app_opt_set(o, o->def) != 0) {
      fprintf(stderr, "%s: bad built-in default for -%c: %s\n", argv[0], o->flag, o->def);
      return 2;
    }
    if (n + 3 > sizeof spec) {
      fprintf(stderr, "%s: too many options\n", argv[0]);
      return 2;
    }
    spec[n++] = o->flag;
    if (o->kind != APP_OPT_SWITCH) spec[n++] = ':';
  }
  spec[n++] = 'h';
  spec[n] = '\0';
  int c;
  while ((c = getopt(argc, argv, spec)) != -1) {
    if (c == 'h') {
      app_opts_usage(stdout, opts, argv[0]);
      return 0;
    }
    const struct app_opt *o = app_opt_find(opts, c); /* NULL on '?': getopt said why */
    int bad = o == NULL;
    if (!bad && o->kind == APP_OPT_SWITCH) {
      *o->on = 1;
    } else if (!bad && o->kind == APP_OPT_PRESET) {
      const struct app_preset *p = o->presets, *last = o->presets + o->npresets;
      while (p != last && strcmp(p->name, optarg) != 0) p++;
      bad = p == last;
      if (bad) fprintf(stderr, "%s: -%c %s: no such preset\n", argv[0], c, optarg);
      if (!bad && app_opt_apply(opts, p->flags) != 0) {
        fprintf(stderr, "%s: bad built-in preset %s: %s\n", argv[0], p->name, p->flags);
        return 2;
      }
    } else if (!bad) {
      bad = app_opt_set(o, optarg) != 0;
      if (bad) fprintf(stderr, "%s: -%c '%s': not a number\n", argv[0], c, optarg);
    }
    if (bad) {
      app_opts_usage(stderr, opts, argv[0]);
      return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    app_opts_usage(stderr, opts, argv[0]);
    return 2;
  }
  return -1;
}

#endif /* SPLASH2_OPTIONS_H */
