/* uqjit warm: compile ahead of time, without a GPU, every kernel a
 * deployment will ask for, into a cache directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_util.h"
#include "cli/commands.h"
#include "uqjit.h"

#define CMD "warm"
#define MAX_BATCHES 64
#define MAX_TARGETS 16
#define NAME_LEN 512

static void warm_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit warm --q-heads HQ --kv-heads HK --head-dim D "
          "--block-size BS\n"
          "                  --max-blocks-per-seq N (--batch B | "
          "--batch-sizes LIST)\n"
          "                  [--target T[,T...]] [--cache-dir D] [--jobs N] "
          "[--json]\n\n"
          "Compiles (or finds in the cache) every kernel that decodes of the "
          "shape\n"
          "will use: one plan per batch size and target (decode, reduce and, "
          "when\n"
          "the query is strided, prologue kernels) plus the store kernels "
          "for bf16\n"
          "rows (and --dtype rows). Needs no GPU. Keys are deduplicated.\n"
          "Exit status 1 when any kernel failed.\n\n"
          "shape options:\n");
  cli_shape_help(out);
  fprintf(out,
          "\nother options:\n"
          "  --batch-sizes LIST         comma-separated batch sizes, e.g. "
          "1,2,4,8,16\n"
          "  --target T[,T...]          targets (repeatable; default "
          "gfx950)\n"
          "  --cache-dir D              cache directory to fill (default: "
          "UQJIT_CACHE_DIR,\n"
          "                             XDG_CACHE_HOME/uqjit, "
          "~/.cache/uqjit)\n"
          "  --jobs N                   compile threads (default: number of "
          "CPUs)\n"
          "  --json                     one JSON object on stdout: keys, "
          "compiled, hits,\n"
          "                             failed, seconds, cache_dir, "
          "targets\n"
          "  -h, --help                 this help\n");
}

typedef struct progress_state {
  int tty;
  size_t offset, grand_total;
} progress_state;

static void on_progress(void *user, size_t done, size_t total,
                        const uq_key *key, int status, int from_cache) {
  progress_state *ps = user;
  (void)total;
  char name[NAME_LEN];
  if (uq_key_name(key, name, sizeof name) < 0)
    snprintf(name, sizeof name, "?");
  if (status != 0) {
    fprintf(stderr, "%suqjit warm: %s: %s\n", ps->tty ? "\r\033[K" : "",
            name, uq_strerror(status));
    return;
  }
  if (!ps->tty)
    return;
  fprintf(stderr, "\r\033[K[%zu/%zu] %s %s", ps->offset + done,
          ps->grand_total, from_cache ? "cached  " : "compiled", name);
  fflush(stderr);
}

static int add_key(uq_key *keys, size_t *n, size_t cap, const uq_key *k) {
  for (size_t i = 0; i < *n; i++)
    if (memcmp(&keys[i], k, sizeof *k) == 0)
      return 0;
  if (*n == cap)
    return -1;
  keys[(*n)++] = *k;
  return 0;
}

/* ---- parse ---- */

typedef struct warm_options {
  cli_shape in;
  int64_t batches[MAX_BATCHES]; /* --batch-sizes, then --batch */
  size_t nbatches;
  int have_sizes;
  char target_buf[1024]; /* every --target, joined by commas */
  const char *targets[MAX_TARGETS]; /* point into target_buf */
  size_t ntargets;
  const char *cache_dir; /* NULL: the library's default */
  int json;
  int32_t jobs;
} warm_options;

/* The options with values that are warm's own. CLI_NEXT when argv[*i] was
 * taken, 0 when it is not one of them, else the exit status (a usage
 * error: none of them ends the command with CLI_EXIT_OK, so 0 is free). */
static int warm_parse_own(warm_options *o, int argc, char **argv, int *i) {
  const char *v;
  int r;
  if ((r = cli_option(CMD, argc, argv, i, "--target", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    size_t used = strlen(o->target_buf);
    if (!v[0] || used + strlen(v) + 2 > sizeof o->target_buf)
      return cli_usage_error(CMD, "--target: '%s' is not a target list", v);
    snprintf(o->target_buf + used, sizeof o->target_buf - used, "%s%s",
             used ? "," : "", v);
    return CLI_NEXT;
  }
  if ((r = cli_option(CMD, argc, argv, i, "--batch-sizes", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    if (o->have_sizes)
      return cli_usage_error(CMD, "option '--batch-sizes' given twice");
    o->have_sizes = 1;
    if (cli_parse_list(CMD, "--batch-sizes", v, 1, INT32_MAX, o->batches,
                       MAX_BATCHES, &o->nbatches) != 0)
      return CLI_EXIT_USAGE;
    return CLI_NEXT;
  }
  if ((r = cli_option(CMD, argc, argv, i, "--cache-dir", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    o->cache_dir = v;
    return CLI_NEXT;
  }
  if ((r = cli_option(CMD, argc, argv, i, "--jobs", &v)) != 0) {
    if (r < 0 || cli_parse_i32(CMD, "--jobs", v, 0, 256, &o->jobs) != 0)
      return CLI_EXIT_USAGE;
    return CLI_NEXT;
  }
  return 0;
}

/* Splits the joined --target text (default gfx950) into o->targets. */
static int warm_split_targets(warm_options *o) {
  if (!o->target_buf[0])
    snprintf(o->target_buf, sizeof o->target_buf, "gfx950");
  for (char *save = NULL, *t = strtok_r(o->target_buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    if (o->ntargets == MAX_TARGETS)
      return cli_usage_error(CMD, "at most %d targets", MAX_TARGETS);
    o->targets[o->ntargets++] = t;
  }
  if (o->ntargets == 0)
    return cli_usage_error(CMD, "--target: no target given");
  return CLI_NEXT;
}

/* argv -> *o. CLI_NEXT when the command should run; otherwise the exit
 * status (help printed, or a usage error printed). */
static int warm_parse(int argc, char **argv, warm_options *o) {
  memset(o, 0, sizeof *o);
  cli_shape_init(&o->in);
  const cli_flag flags[] = {{"--json", &o->json, 1}, {NULL, NULL, 0}};
  for (int i = 1; i < argc; i++) {
    int r = warm_parse_own(o, argc, argv, &i);
    if (r == 0)
      r = cli_shape_command_arg(CMD, &o->in, NULL, flags, warm_usage, argc,
                                argv, &i);
    if (r != CLI_NEXT)
      return r;
  }
  /* --batch-sizes stands in for the required --batch. */
  if (o->have_sizes && o->in.shape.batch == 0) {
    char fake_arg[] = "--batch=1";
    char *fake[] = {fake_arg, NULL};
    int j = 0;
    if (cli_shape_option(CMD, &o->in, 1, fake, &j) != 1)
      return CLI_EXIT_USAGE;
  } else if (o->in.shape.batch > 0 && o->nbatches < MAX_BATCHES) {
    o->batches[o->nbatches++] = o->in.shape.batch;
  }
  if (cli_shape_finish(CMD, &o->in) != 0)
    return CLI_EXIT_USAGE;
  return warm_split_targets(o);
}

/* ---- run ---- */

typedef struct warm_result {
  /* One context per target: its canonical name may differ from the text. */
  uq_context *ctxs[MAX_TARGETS];
  uq_key *all; /* every target's keys, deduplicated per target */
  size_t nall;
  size_t key_start[MAX_TARGETS], key_count[MAX_TARGETS];
  uq_compile_summary total;
  int first_rc;           /* the first failed target's status, or 0 */
  char first_detail[2048]; /* and its uq_last_error() */
  char *dir_owned;        /* the default cache directory, when looked up */
  const char *dir_shown;  /* the cache directory, for the output */
} warm_result;

/* Appends to keys[*n] (at most cap) every kernel of target t: the plans of
 * each batch size, then the store kernels. canon gets the target as the
 * plans spell it. An exit status. */
static int collect_target_keys(const warm_options *o, size_t t, uq_key *keys,
                               size_t cap, size_t *n,
                               char canon[UQ_TARGET_MAX]) {
  int32_t padded = 0;
  snprintf(canon, UQ_TARGET_MAX, "%s", o->targets[t]);
  for (size_t bi = 0; bi < o->nbatches; bi++) {
    uq_shape s = o->in.shape;
    s.batch = (int32_t)o->batches[bi];
    uq_plan plan;
    int rc = uq_plan_make(&s, o->targets[t], &plan);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot plan this shape");
    if (!plan.eligible) {
      fprintf(stderr,
              "uqjit warm: batch %lld is not eligible for the fast path: "
              "%s\n",
              (long long)o->batches[bi], plan.reason);
      return CLI_EXIT_FAILURE;
    }
    padded = plan.padded_slot;
    snprintf(canon, UQ_TARGET_MAX, "%s", plan.kernels[0].target);
    for (int k = 0; k < plan.num_kernels; k++)
      if (add_key(keys, n, cap, &plan.kernels[k]) != 0)
        return cli_usage_error(CMD, "too many kernels");
  }
  uq_dtype dts[2] = {UQ_DTYPE_BF16, o->in.shape.q_dtype};
  for (int d = 0; d < (dts[1] == UQ_DTYPE_BF16 ? 1 : 2); d++) {
    uq_key sk;
    int rc = uq_store_key(o->in.shape.head_dim, o->in.shape.num_kv_heads,
                          padded, dts[d], canon, &sk);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot make the store key");
    if (add_key(keys, n, cap, &sk) != 0)
      return cli_usage_error(CMD, "too many kernels");
  }
  return CLI_EXIT_OK;
}

/* Every target's keys into res->all, and a compile context per target. */
static int warm_collect(const warm_options *o, warm_result *res) {
  size_t cap = MAX_BATCHES * UQ_PLAN_MAX_KERNELS + 2;
  uq_key *keys = calloc(cap, sizeof *keys);
  res->all = calloc(cap * o->ntargets, sizeof *res->all);
  int code = CLI_EXIT_OK;
  if (keys == NULL || res->all == NULL)
    code = cli_fail(CMD, UQ_ENOMEM, "out of memory");
  for (size_t t = 0; t < o->ntargets && code == CLI_EXIT_OK; t++) {
    size_t n = 0;
    char canon[UQ_TARGET_MAX];
    code = collect_target_keys(o, t, keys, cap, &n, canon);
    if (code != CLI_EXIT_OK)
      break;
    int rc = cli_compile_context(canon, o->cache_dir, &res->ctxs[t]);
    if (rc != 0) {
      code = cli_fail(CMD, rc, "cannot create a compile context");
      break;
    }
    res->key_start[t] = res->nall;
    res->key_count[t] = n;
    memcpy(res->all + res->nall, keys, n * sizeof *keys);
    res->nall += n;
  }
  free(keys);
  return code;
}

/* Compiles each target's keys, adding up the summaries; a failure is kept
 * in res->first_rc for the report and the other targets still compile. */
static void warm_compile(const warm_options *o, warm_result *res) {
  progress_state ps = {isatty(2), 0, res->nall};
  double t0 = cli_now();
  for (size_t t = 0; t < o->ntargets; t++) {
    uq_compile_summary sum;
    int rc = uq_compile_keys(res->ctxs[t], res->all + res->key_start[t],
                             res->key_count[t], o->jobs, on_progress, &ps,
                             &sum);
    if (rc != 0 && res->first_rc == 0) {
      res->first_rc = rc;
      snprintf(res->first_detail, sizeof res->first_detail, "%s",
               uq_last_error());
    }
    ps.offset += res->key_count[t];
    res->total.keys += sum.keys;
    res->total.compiled += sum.compiled;
    res->total.hits += sum.hits;
    res->total.failed += sum.failed;
  }
  res->total.seconds = cli_now() - t0;
  if (ps.tty)
    fprintf(stderr, "\r\033[K");
}

/* *o -> *res (zeroed first; warm_result_free releases it in any case). An
 * exit status; kernels that failed to compile are CLI_EXIT_OK here and
 * reported by warm_print. */
static int warm_run(const warm_options *o, warm_result *res) {
  memset(res, 0, sizeof *res);
  int code = warm_collect(o, res);
  if (code != CLI_EXIT_OK)
    return code;
  warm_compile(o, res);
  res->dir_shown = o->cache_dir;
  if (res->dir_shown == NULL) {
    if (uq_cache_default_dir(&res->dir_owned) == 0)
      res->dir_shown = res->dir_owned;
    else
      res->dir_shown = "";
  }
  return CLI_EXIT_OK;
}

static void warm_result_free(const warm_options *o, warm_result *res) {
  for (size_t t = 0; t < o->ntargets; t++)
    uq_context_destroy(res->ctxs[t]);
  uq_free(res->dir_owned);
  free(res->all);
}

/* ---- print ---- */

static void print_json(const warm_options *o, const warm_result *res) {
  const uq_compile_summary *total = &res->total;
  printf("{\"keys\": %llu, \"compiled\": %llu, \"hits\": %llu, "
         "\"failed\": %llu, \"seconds\": %.3f, \"cache_dir\": ",
         (unsigned long long)total->keys, (unsigned long long)total->compiled,
         (unsigned long long)total->hits, (unsigned long long)total->failed,
         total->seconds);
  cli_json_string(stdout, res->dir_shown);
  printf(", \"targets\": [");
  for (size_t t = 0; t < o->ntargets; t++) {
    printf("%s", t ? ", " : "");
    cli_json_string(stdout, uq_context_target(res->ctxs[t]));
  }
  printf("], \"batch_sizes\": [");
  for (size_t b = 0; b < o->nbatches; b++)
    printf("%s%lld", b ? ", " : "", (long long)o->batches[b]);
  printf("]}\n");
}

static void print_text(const warm_options *o, const warm_result *res) {
  const uq_compile_summary *total = &res->total;
  printf("targets:    ");
  for (size_t t = 0; t < o->ntargets; t++)
    printf("%s%s", t ? ", " : "", uq_context_target(res->ctxs[t]));
  printf("\nbatch sizes:");
  for (size_t b = 0; b < o->nbatches; b++)
    printf("%s%lld", b ? ", " : " ", (long long)o->batches[b]);
  printf("\nkernels:    %llu (%llu compiled, %llu from cache, %llu "
         "failed)\n",
         (unsigned long long)total->keys, (unsigned long long)total->compiled,
         (unsigned long long)total->hits, (unsigned long long)total->failed);
  printf("time:       %.2f s\ncache:      %s\n", total->seconds,
         res->dir_shown);
}

/* The summary on stdout, then any compile failure on stderr. The exit
 * status. */
static int warm_print(const warm_options *o, const warm_result *res) {
  if (o->json)
    print_json(o, res);
  else
    print_text(o, res);
  if (res->first_rc == 0)
    return CLI_EXIT_OK;
  fprintf(stderr, "uqjit warm: %llu kernel(s) failed: %s%s%s\n",
          (unsigned long long)res->total.failed, uq_strerror(res->first_rc),
          res->first_detail[0] ? ": " : "", res->first_detail);
  return CLI_EXIT_FAILURE;
}

int cli_cmd_warm(int argc, char **argv) {
  warm_options o;
  int code = warm_parse(argc, argv, &o);
  if (code != CLI_NEXT)
    return code;
  warm_result res;
  code = warm_run(&o, &res);
  if (code == CLI_EXIT_OK)
    code = warm_print(&o, &res);
  warm_result_free(&o, &res);
  return code;
}
