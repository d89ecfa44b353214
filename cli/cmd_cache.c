/* uqjit cache: list, verify, prune and summarise a code-object cache. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cmd_util.h"
#include "cli/commands.h"
#include "cli/manifest.h"
#include "uqjit.h"

#define CMD "cache"

static void cache_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit cache ls     [--cache-dir D] [--target T] [--key S] "
          "[--json]\n"
          "       uqjit cache verify [--cache-dir D] [--manifest FILE] "
          "[--json]\n"
          "       uqjit cache prune  --max-size BYTES [--cache-dir D] "
          "[--json]\n"
          "       uqjit cache stats  [--cache-dir D] [--json]\n\n"
          "Maintains a code-object cache directory (default: "
          "UQJIT_CACHE_DIR,\n"
          "XDG_CACHE_HOME/uqjit, ~/.cache/uqjit). ls, verify and stats "
          "report every\n"
          "layer a process searches, in order: that directory (writable), "
          "each\n"
          "UQJIT_CACHE_PATH layer and the system layer "
          "<prefix>/share/uqjit/cache\n"
          "(read-only), with each layer's path, kind, entries and bytes; "
          "prune works\n"
          "on the writable directory only.\n\n"
          "  ls       one line per entry: target, size, mtime, valid, kernel "
          "name,\n"
          "           compiler, path, under a '#' line per layer; --target T "
          "keeps\n"
          "           target T (a GPU name or bare gfx name: every feature "
          "form),\n"
          "           --key S kernel names containing S\n"
          "  verify   checks every entry's header and digests; exit status 1 "
          "when\n"
          "           any entry is bad, with a line 'bad: PATH: RULE' "
          "for each bad\n"
          "           entry or refused directory naming the rule it broke "
          "(bad\n"
          "           entries are kept: prune removes them).\n"
          "           With --manifest FILE (kernel names, one a line; blank "
          "lines\n"
          "           and '#' comments ignored; a name listed twice counts "
          "once;\n"
          "           at most 16 MiB): exit status 0 only when every\n"
          "           listed kernel has a valid entry in some layer, as a "
          "process with\n"
          "           UQJIT_DISABLE_JIT=1 finds it (each layer is credited "
          "with the\n"
          "           kernels it serves), 1 naming the missing ones, 2 for "
          "a malformed\n"
          "           name\n"
          "  prune    removes bad entries (each named as verify names it) "
          "and stale\n"
          "           temporary files, then the least\n"
          "           recently written entries until the total is <= "
          "--max-size\n"
          "           (BYTES, or with a K, M or G suffix; 0 empties the "
          "cache)\n"
          "  stats    entries, total bytes, and both per target, per layer "
          "and in all\n\n"
          "trust (docs/RELIABILITY.md): loading an entry runs its code on "
          "the GPU, so\n"
          "every directory below a cache root (v2, target, 2-hex) and every "
          "entry file\n"
          "must be owned by you or root, writable by neither group nor "
          "others, and\n"
          "never a symbolic link; entries must be regular files. The same "
          "rule holds\n"
          "for the writable cache and UQJIT_CACHE_PATH layers. Anything "
          "else is\n"
          "skipped by the loader and counted bad by verify; prune (and a "
          "writer) makes\n"
          "your own open directories 0700 and removes links, foreign "
          "directories and\n"
          "non-regular files in the writable cache.\n\n"
          "Entries of the cache format v1 (older uqjit) are ignored; `rm -r "
          "DIR/v1`\n"
          "removes them.\n\n"
          "options:\n"
          "  --cache-dir D              the cache directory\n"
          "  --json                     JSON on stdout\n"
          "  -h, --help                 this help\n");
}

static int note_legacy_dir(void *user, const char *path, int version) {
  fprintf(stderr,
          "uqjit cache: note: %s holds entries of cache format v%d, which "
          "this version ignores (`rm -r %s` removes them)\n",
          *(const char *const *)user, version, path);
  return 0;
}

/* Entries of older cache formats are never read: says so when the layer
 * `dir` still holds them (uq_cache_legacy_dirs finds them). */
static void note_legacy(const char *dir) {
  (void)uq_cache_legacy_dirs(dir, note_legacy_dir, &dir);
}

/* ---- layers ---- */

#define MAX_LAYERS 32
#define MAX_STAT_TARGETS 64

typedef struct target_stat {
  char target[UQ_TARGET_MAX + 16];
  uint64_t entries, bytes;
} target_stat;

/* One layer as the commands report it, with what was counted in it. */
typedef struct cli_layer {
  char path[4096];
  char origin[24];
  int writable, exists;
  uint64_t entries, bytes, bad, good, kernels;
  target_stat per[MAX_STAT_TARGETS];
  size_t nper;
} cli_layer;

typedef struct layer_set {
  cli_layer *v;
  size_t n;
} layer_set;

static int keep_layer(void *user, const uq_cache_layer *l) {
  layer_set *set = user;
  if (set->n == MAX_LAYERS)
    return 0;
  cli_layer *c = &set->v[set->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->path, sizeof c->path, "%s", l->path);
  snprintf(c->origin, sizeof c->origin, "%s", l->origin);
  c->writable = l->writable;
  c->exists = l->exists;
  return 0;
}

static const char *layer_kind(const cli_layer *l) {
  return l->writable ? "writable" : "read-only";
}

/* "path", "writable", "origin", "exists" of a layer's JSON object. */
static void layer_json_head(const cli_layer *l) {
  printf("{\"path\": ");
  cli_json_string(stdout, l->path);
  printf(", \"writable\": %s, \"origin\": ", l->writable ? "true" : "false");
  cli_json_string(stdout, l->origin);
  printf(", \"exists\": %s", l->exists ? "true" : "false");
}

/* ---- ls ---- */

typedef struct ls_state {
  int json;
  uint64_t n;         /* entries printed, all layers */
  const char *target; /* --target canonical, or NULL */
  const char *key;    /* --key, or NULL */
  cli_layer *layer;   /* the layer being listed */
} ls_state;

static void ls_print_json(const ls_state *st, const uq_cache_entry *e) {
  printf("%s\n  {\"target\": ", st->n ? "," : "");
  cli_json_string(stdout, e->target);
  printf(", \"size\": %" PRIu64 ", \"mtime\": %" PRId64
         ", \"created\": %" PRId64 ", \"valid\": %s, \"status\": \"%s\""
         ", \"key_name\": ",
         e->size, e->mtime, e->created, e->valid ? "true" : "false",
         e->valid ? "ok" : "bad");
  cli_json_string(stdout, e->key_name);
  printf(", \"compiler\": ");
  cli_json_string(stdout, e->compiler);
  printf(", \"route\": ");
  cli_json_string(stdout, e->route);
  printf(", \"path\": ");
  cli_json_string(stdout, e->path);
  printf(", \"layer\": ");
  cli_json_string(stdout, st->layer->path);
  printf("}");
}

/* --target T keeps T; a bare AMD architecture also keeps its feature
 * forms (gfx950 keeps gfx950:sramecc+:xnack-). */
static int target_matches(const char *want, const char *target) {
  size_t n = strlen(want);
  if (strcmp(want, target) == 0)
    return 1;
  return strncmp(want, "gfx", 3) == 0 && strchr(want, ':') == NULL &&
         strncmp(target, want, n) == 0 && target[n] == ':';
}

static int ls_visit(void *user, const uq_cache_entry *e) {
  ls_state *st = user;
  if ((st->target != NULL && !target_matches(st->target, e->target)) ||
      (st->key != NULL && strstr(e->key_name, st->key) == NULL))
    return 0;
  char when[32];
  time_t t = (time_t)e->mtime;
  struct tm tm;
  if (gmtime_r(&t, &tm) == NULL ||
      strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(when, sizeof when, "%" PRId64, e->mtime);
  if (st->json)
    ls_print_json(st, e);
  else
    printf("%-22s %10" PRIu64 "  %s  %-5s  %s  [%s]  %s\n",
           e->target[0] ? e->target : "?", e->size, when,
           e->valid ? "ok" : "BAD", e->key_name[0] ? e->key_name : "?",
           e->compiler[0] ? e->compiler : "?", e->path);
  st->n++;
  st->layer->entries++;
  st->layer->bytes += e->size;
  return 0;
}

/* ---- stats ---- */

static int stats_visit(void *user, const uq_cache_entry *e) {
  cli_layer *st = user;
  st->entries++;
  st->bytes += e->size;
  if (!e->valid)
    st->bad++;
  const char *name = e->valid && e->target[0] ? e->target : "(bad)";
  size_t i = 0;
  while (i < st->nper && strcmp(st->per[i].target, name) != 0)
    i++;
  if (i == st->nper) {
    if (st->nper == MAX_STAT_TARGETS)
      i = st->nper - 1; /* lumps the rest in the last row */
    else {
      snprintf(st->per[i].target, sizeof st->per[i].target, "%s", name);
      st->nper++;
    }
  }
  st->per[i].entries++;
  st->per[i].bytes += e->size;
  return 0;
}

static void print_dir_json(const char *dir) {
  printf("\"cache_dir\": ");
  if (dir != NULL)
    cli_json_string(stdout, dir);
  else
    printf("null");
}

/* ---- the subcommands: run, then print ---- */

typedef struct cache_options cache_options;

/* ls prints while it lists: a cache may be large, and the entries already
 * printed stay useful when the listing fails part way. */
static int cache_ls(const cache_options *o, const char *dir);
static int cache_verify(const cache_options *o, const char *dir);
static int cache_prune(const cache_options *o, const char *dir);
static int cache_stats(const cache_options *o, const char *dir);

typedef struct cache_subcommand {
  const char *name;
  /* Does the work and prints the result: on the writable directory `dir`
   * (NULL when none can be named), and on o->layers for the commands that
   * see every layer. Returns the exit status. */
  int (*run)(const cache_options *o, const char *dir);
  int takes_max_size; /* --max-size is accepted (and required) */
  int takes_filters;  /* --target and --key are accepted */
  int takes_manifest; /* --manifest is accepted */
  int all_layers;     /* reports every layer, not the writable one alone */
} cache_subcommand;

static const cache_subcommand subcommands[] = {
    {"ls", cache_ls, 0, 1, 0, 1},
    {"verify", cache_verify, 0, 0, 1, 1},
    {"prune", cache_prune, 1, 0, 0, 0},
    {"stats", cache_stats, 0, 0, 0, 1},
};
#define SUBCOMMAND_COUNT (sizeof subcommands / sizeof subcommands[0])

struct cache_options {
  const cache_subcommand *sub;
  const char *dir; /* --cache-dir, or NULL: the library's default */
  const char *target;   /* ls --target */
  char target_canon[UQ_TARGET_MAX];
  const char *key;      /* ls --key */
  const char *manifest; /* verify --manifest */
  int json;
  int have_max;
  uint64_t max_size;
  layer_set *layers;    /* every layer, in search order */
};

/* ls and stats walk each existing layer; an unreadable one fails the
 * command after the others were reported. */
static int cache_ls(const cache_options *o, const char *dir) {
  ls_state st = {o->json, 0, o->target ? o->target_canon : NULL, o->key,
                 NULL};
  int code = CLI_EXIT_OK;
  if (o->json) {
    printf("{");
    print_dir_json(dir);
    printf(", \"entries\": [");
  }
  for (size_t i = 0; i < o->layers->n; i++) {
    cli_layer *l = &o->layers->v[i];
    st.layer = l;
    if (!o->json)
      printf("# %s (%s, %s)%s\n", l->path, layer_kind(l), l->origin,
             l->exists ? "" : ": absent");
    if (!l->exists)
      continue;
    note_legacy(l->path);
    int rc = uq_cache_list(l->path, ls_visit, &st);
    if (rc != 0)
      code = cli_fail(CMD, rc, "cannot list the cache");
    else if (!o->json) {
      char h[32];
      printf("# %" PRIu64 " entr%s, %s\n", l->entries,
             l->entries == 1 ? "y" : "ies", cli_bytes(l->bytes, h, sizeof h));
    }
  }
  if (o->json) {
    printf("%s], \"layers\": [", st.n ? "\n" : "");
    for (size_t i = 0; i < o->layers->n; i++) {
      const cli_layer *l = &o->layers->v[i];
      printf("%s", i ? ", " : "");
      layer_json_head(l);
      printf(", \"entries\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
             l->entries, l->bytes);
    }
    printf("]}\n");
  }
  return code;
}

static int cache_verify_manifest(const cache_options *o, const char *dir);

/* One line per bad entry or refused directory, naming the rule it broke. */
static int print_bad(void *user, const uq_cache_entry *e) {
  (void)user;
  if (!e->valid)
    printf("bad: %s: %s\n", e->path, e->problem);
  return 0;
}

static int cache_verify(const cache_options *o, const char *dir) {
  if (o->manifest != NULL)
    return cache_verify_manifest(o, dir);
  uint64_t good = 0, bad = 0;
  for (size_t i = 0; i < o->layers->n; i++) {
    cli_layer *l = &o->layers->v[i];
    if (!l->exists)
      continue;
    int rc = uq_cache_verify(l->path, &l->good, &l->bad);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot verify the cache");
    if (l->bad > 0 && !o->json && (rc = uq_cache_list(l->path, print_bad, NULL)) != 0)
      return cli_fail(CMD, rc, "cannot list the bad entries");
    good += l->good;
    bad += l->bad;
  }
  if (o->json) {
    printf("{");
    print_dir_json(dir);
    printf(", \"good\": %" PRIu64 ", \"bad\": %" PRIu64 ", \"layers\": [",
           good, bad);
    for (size_t i = 0; i < o->layers->n; i++) {
      const cli_layer *l = &o->layers->v[i];
      printf("%s", i ? ", " : "");
      layer_json_head(l);
      printf(", \"good\": %" PRIu64 ", \"bad\": %" PRIu64 "}", l->good,
             l->bad);
    }
    printf("]}\n");
  } else {
    for (size_t i = 0; i < o->layers->n; i++) {
      const cli_layer *l = &o->layers->v[i];
      if (l->exists)
        printf("%s (%s, %s): %" PRIu64 " good, %" PRIu64 " bad\n", l->path,
               layer_kind(l), l->origin, l->good, l->bad);
      else
        printf("%s (%s, %s): absent\n", l->path, layer_kind(l), l->origin);
    }
  }
  if (bad == 0)
    return CLI_EXIT_OK;
  fprintf(stderr,
          "uqjit cache: %" PRIu64 " bad entr%s (`uqjit cache prune` "
          "removes them from the writable directory; `uqjit cache ls` "
          "names them)\n",
          bad, bad == 1 ? "y" : "ies");
  return CLI_EXIT_FAILURE;
}

static int cache_prune(const cache_options *o, const char *dir) {
  uint64_t removed = 0, left = 0;
  if (dir == NULL)
    return cli_fail(CMD, UQ_ENOENT, "no writable cache directory");
  int rc = o->json ? 0 : uq_cache_list(dir, print_bad, NULL);
  if (rc == 0)
    rc = uq_cache_prune(dir, o->max_size, &removed, &left);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot prune the cache");
  if (o->json) {
    printf("{");
    print_dir_json(dir);
    printf(", \"removed\": %" PRIu64 ", \"bytes_left\": %" PRIu64 "}\n",
           removed, left);
  } else {
    char h[32];
    printf("%s: removed %" PRIu64 " file%s, %" PRIu64 " bytes (%s) left\n",
           dir, removed, removed == 1 ? "" : "s", left,
           cli_bytes(left, h, sizeof h));
  }
  return CLI_EXIT_OK;
}

static void stats_print_targets_json(const target_stat *per, size_t n) {
  printf("{");
  for (size_t i = 0; i < n; i++) {
    printf("%s", i ? ", " : "");
    cli_json_string(stdout, per[i].target);
    printf(": {\"entries\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
           per[i].entries, per[i].bytes);
  }
  printf("}");
}

static void stats_print_json(const char *dir, const layer_set *set,
                             const cli_layer *all) {
  printf("{");
  print_dir_json(dir);
  printf(", \"entries\": %" PRIu64 ", \"bytes\": %" PRIu64
         ", \"bad\": %" PRIu64 ", \"targets\": ",
         all->entries, all->bytes, all->bad);
  stats_print_targets_json(all->per, all->nper);
  printf(", \"layers\": [");
  for (size_t i = 0; i < set->n; i++) {
    const cli_layer *l = &set->v[i];
    printf("%s", i ? ", " : "");
    layer_json_head(l);
    printf(", \"entries\": %" PRIu64 ", \"bytes\": %" PRIu64
           ", \"bad\": %" PRIu64 ", \"targets\": ",
           l->entries, l->bytes, l->bad);
    stats_print_targets_json(l->per, l->nper);
    printf("}");
  }
  printf("]}\n");
}

static void stats_print_text(const layer_set *set, const cli_layer *all) {
  char h[32];
  for (size_t i = 0; i < set->n; i++) {
    const cli_layer *l = &set->v[i];
    printf("layer:    %s (%s, %s)%s\n", l->path, layer_kind(l), l->origin,
           l->exists ? "" : ": absent");
    if (!l->exists)
      continue;
    printf("entries:  %" PRIu64 " (%" PRIu64 " bad)\nbytes:    %" PRIu64
           " (%s)\n",
           l->entries, l->bad, l->bytes, cli_bytes(l->bytes, h, sizeof h));
    for (size_t t = 0; t < l->nper; t++)
      printf("  %-22s %6" PRIu64 " entries %12" PRIu64 " bytes\n",
             l->per[t].target, l->per[t].entries, l->per[t].bytes);
  }
  printf("all:      %" PRIu64 " entries (%" PRIu64 " bad), %" PRIu64
         " bytes (%s)\n",
         all->entries, all->bad, all->bytes,
         cli_bytes(all->bytes, h, sizeof h));
}

/* Adds a layer's counts into the totals. */
static void stats_add(cli_layer *all, const cli_layer *l) {
  all->entries += l->entries;
  all->bytes += l->bytes;
  all->bad += l->bad;
  for (size_t t = 0; t < l->nper; t++) {
    size_t i = 0;
    while (i < all->nper && strcmp(all->per[i].target, l->per[t].target))
      i++;
    if (i == all->nper) {
      if (all->nper == MAX_STAT_TARGETS)
        i = all->nper - 1;
      else
        all->per[all->nper++] = (target_stat){{0}, 0, 0};
      snprintf(all->per[i].target, sizeof all->per[i].target, "%s",
               l->per[t].target);
    }
    all->per[i].entries += l->per[t].entries;
    all->per[i].bytes += l->per[t].bytes;
  }
}

static int cache_stats(const cache_options *o, const char *dir) {
  cli_layer *all = calloc(1, sizeof *all);
  if (all == NULL)
    return cli_fail(CMD, UQ_ENOMEM, "out of memory");
  int code = CLI_EXIT_OK;
  for (size_t i = 0; i < o->layers->n && code == CLI_EXIT_OK; i++) {
    cli_layer *l = &o->layers->v[i];
    if (!l->exists)
      continue;
    note_legacy(l->path);
    int rc = uq_cache_list(l->path, stats_visit, l);
    if (rc != 0)
      code = cli_fail(CMD, rc, "cannot read the cache");
    stats_add(all, l);
  }
  if (code == CLI_EXIT_OK && o->json)
    stats_print_json(dir, o->layers, all);
  else if (code == CLI_EXIT_OK)
    stats_print_text(o->layers, all);
  free(all);
  return code;
}

/* ---- verify --manifest ---- */

typedef struct manifest_state {
  uint64_t listed, present;
  int json;
  layer_set *layers;
} manifest_state;

/* Credits the layer that holds a found kernel. */
static int credit_layer(void *user, const uq_cache_entry *e) {
  layer_set *set = user;
  for (size_t i = 0; i < set->n; i++)
    if (e->layer != NULL && strcmp(set->v[i].path, e->layer) == 0) {
      set->v[i].kernels++;
      break;
    }
  return 0;
}

/* One kernel of the manifest: CLI_NEXT when checked, or the exit status
 * of a failed lookup. */
static int manifest_check(const char *dir, manifest_state *ms,
                          const char *name) {
  uq_key key;
  if (uq_key_parse(name, &key) != 0)
    return cli_fail(CMD, UQ_EINVAL, "cannot parse a kernel name");
  ms->listed++;
  int rc = uq_cache_find(dir, &key, credit_layer, ms->layers);
  if (rc == 0) {
    ms->present++;
    return CLI_NEXT;
  }
  if (rc != UQ_ENOENT)
    return cli_fail(CMD, rc, "cannot look the kernel up");
  if (ms->json) {
    printf("%s", ms->listed - ms->present > 1 ? ", " : "");
    cli_json_string(stdout, name);
  } else {
    printf("missing: %s\n", name);
  }
  return CLI_NEXT;
}

static void manifest_print_layers(const manifest_state *ms) {
  for (size_t i = 0; i < ms->layers->n; i++) {
    const cli_layer *l = &ms->layers->v[i];
    if (ms->json) {
      printf("%s", i ? ", " : "");
      layer_json_head(l);
      printf(", \"kernels\": %" PRIu64 "}", l->kernels);
    } else if (l->exists) {
      printf("  %s (%s, %s): %" PRIu64 " kernel%s\n", l->path,
             layer_kind(l), l->origin, l->kernels,
             l->kernels == 1 ? "" : "s");
    }
  }
}

static int cache_verify_manifest(const cache_options *o, const char *dir) {
  char **names = NULL;
  size_t count = 0;
  if (cli_manifest_read("cache", o->manifest, &names, &count) != 0)
    return CLI_EXIT_USAGE;
  manifest_state ms = {0, 0, o->json, o->layers};
  if (o->json) {
    printf("{");
    print_dir_json(dir);
    printf(", \"manifest\": ");
    cli_json_string(stdout, o->manifest);
    printf(", \"missing\": [");
  }
  int code = CLI_NEXT;
  for (size_t i = 0; i < count && code == CLI_NEXT; i++)
    code = manifest_check(dir, &ms, names[i]);
  cli_names_free(names, count);
  if (o->json) {
    printf("], \"kernels\": %" PRIu64 ", \"present\": %" PRIu64
           ", \"layers\": [",
           ms.listed, ms.present);
    manifest_print_layers(&ms);
    printf("]}\n");
  } else if (code == CLI_NEXT) {
    printf("%" PRIu64 " of %" PRIu64 " kernels of %s present\n", ms.present,
           ms.listed, o->manifest);
    manifest_print_layers(&ms);
  }
  if (code != CLI_NEXT)
    return code;
  return ms.present == ms.listed ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* ---- parse ---- */

/* One argument after the subcommand. CLI_NEXT when taken (*i advanced past
 * any value), otherwise the exit status. */
static int cache_parse_arg(cache_options *o, int argc, char **argv, int *i) {
  const char *v;
  int r;
  if ((r = cli_option(CMD, argc, argv, i, "--cache-dir", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    o->dir = v;
    return CLI_NEXT;
  }
  const char **text = NULL;
  if (o->sub->takes_filters &&
      (r = cli_option(CMD, argc, argv, i, "--target", &v)) != 0)
    text = &o->target;
  else if (o->sub->takes_filters &&
           (r = cli_option(CMD, argc, argv, i, "--key", &v)) != 0)
    text = &o->key;
  else if (o->sub->takes_manifest &&
           (r = cli_option(CMD, argc, argv, i, "--manifest", &v)) != 0)
    text = &o->manifest;
  if (text != NULL) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    *text = v;
    return CLI_NEXT;
  }
  if (o->sub->takes_max_size &&
      (r = cli_option(CMD, argc, argv, i, "--max-size", &v)) != 0) {
    if (r < 0 || cli_parse_size(CMD, "--max-size", v, &o->max_size) != 0)
      return CLI_EXIT_USAGE;
    o->have_max = 1;
    return CLI_NEXT;
  }
  const char *arg = argv[*i];
  if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
    cache_usage(stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(arg, "--json")) {
    o->json = 1;
    return CLI_NEXT;
  }
  if (arg[0] == '-')
    return cli_usage_error(CMD, "unknown option '%s' for '%s'", arg,
                           o->sub->name);
  return cli_usage_error(CMD, "unexpected argument '%s'", arg);
}

/* argv -> *o. CLI_NEXT when the subcommand should run; otherwise the exit
 * status (help printed, or a usage error printed). */
static int cache_parse(int argc, char **argv, cache_options *o) {
  memset(o, 0, sizeof *o);
  if (argc < 2)
    return cli_usage_error(CMD, "missing subcommand (ls, verify, prune "
                                "or stats)");
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    cache_usage(stdout);
    return CLI_EXIT_OK;
  }
  for (size_t k = 0; k < SUBCOMMAND_COUNT && o->sub == NULL; k++)
    if (!strcmp(sub, subcommands[k].name))
      o->sub = &subcommands[k];
  if (o->sub == NULL)
    return cli_usage_error(CMD, "unknown subcommand '%s'", sub);
  for (int i = 2; i < argc; i++) {
    int r = cache_parse_arg(o, argc, argv, &i);
    if (r != CLI_NEXT)
      return r;
  }
  if (o->sub->takes_max_size && !o->have_max)
    return cli_usage_error(CMD, "prune needs --max-size BYTES");
  if (o->target != NULL &&
      uq_target_canonical(o->target, o->target_canon,
                          sizeof o->target_canon) != 0)
    return cli_usage_error(CMD, "--target: %s", uq_last_error());
  return CLI_NEXT;
}

/* The writable directory of the command: --cache-dir, which must exist
 * when named, else the default (absent is fine: a serving machine may only
 * have read-only layers), or NULL when none can be named. */
static int writable_dir(const cache_options *o, char **owned,
                        const char **dir) {
  *dir = o->dir;
  if (o->dir != NULL) {
    struct stat st;
    if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
      fprintf(stderr, "uqjit cache: cache directory %s: %s\n", o->dir,
              errno ? strerror(errno) : "not a directory");
      return CLI_EXIT_FAILURE;
    }
    return CLI_NEXT;
  }
  int rc = uq_cache_default_dir(owned);
  if (rc == UQ_ENOMEM)
    return cli_fail(CMD, rc, "no cache directory");
  if (rc != 0 && !o->sub->all_layers)
    return cli_fail(CMD, rc, "no cache directory");
  *dir = *owned;
  return CLI_NEXT;
}

int cli_cmd_cache(int argc, char **argv) {
  cache_options o;
  int code = cache_parse(argc, argv, &o);
  if (code != CLI_NEXT)
    return code;
  char *dir_owned = NULL;
  const char *dir = NULL;
  layer_set layers = {calloc(MAX_LAYERS, sizeof(cli_layer)), 0};
  o.layers = &layers;
  if (layers.v == NULL)
    code = cli_fail(CMD, UQ_ENOMEM, "out of memory");
  else
    code = writable_dir(&o, &dir_owned, &dir);
  if (code == CLI_NEXT) {
    int rc = uq_cache_layers(o.dir, keep_layer, &layers);
    code = rc != 0 ? cli_fail(CMD, rc, "cannot list the cache layers")
                   : o.sub->run(&o, dir);
  }
  uq_free(dir_owned);
  free(layers.v);
  return code;
}
