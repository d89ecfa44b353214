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

int cli_cmd_warm(int argc, char **argv) {
  cli_shape in;
  cli_shape_init(&in);
  int64_t batches[MAX_BATCHES];
  size_t nbatches = 0;
  char target_buf[1024] = "";
  const char *cache_dir = NULL;
  int json = 0, have_sizes = 0;
  int32_t jobs = 0;
  const cli_flag flags[] = {{"--json", &json, 1}, {NULL, NULL, 0}};
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if ((r = cli_option(CMD, argc, argv, &i, "--target", &v)) != 0) {
      if (r < 0)
        return CLI_EXIT_USAGE;
      size_t used = strlen(target_buf);
      if (!v[0] || used + strlen(v) + 2 > sizeof target_buf)
        return cli_usage_error(CMD, "--target: '%s' is not a target list",
                                  v);
      snprintf(target_buf + used, sizeof target_buf - used, "%s%s",
               used ? "," : "", v);
      continue;
    }
    if ((r = cli_option(CMD, argc, argv, &i, "--batch-sizes", &v)) != 0) {
      if (r < 0)
        return CLI_EXIT_USAGE;
      if (have_sizes)
        return cli_usage_error(CMD, "option '--batch-sizes' given twice");
      have_sizes = 1;
      if (cli_parse_list(CMD, "--batch-sizes", v, 1, INT32_MAX, batches,
                             MAX_BATCHES, &nbatches) != 0)
        return CLI_EXIT_USAGE;
      continue;
    }
    if ((r = cli_option(CMD, argc, argv, &i, "--cache-dir", &v)) != 0) {
      if (r < 0)
        return CLI_EXIT_USAGE;
      cache_dir = v;
      continue;
    }
    if ((r = cli_option(CMD, argc, argv, &i, "--jobs", &v)) != 0) {
      if (r < 0 || cli_parse_i32(CMD, "--jobs", v, 0, 256, &jobs) != 0)
        return CLI_EXIT_USAGE;
      continue;
    }
    r = cli_shape_command_arg(CMD, &in, NULL, flags, warm_usage, argc, argv,
                                 &i);
    if (r != CLI_NEXT)
      return r;
  }
  /* --batch-sizes stands in for the required --batch. */
  if (have_sizes && in.shape.batch == 0) {
    char fake_arg[] = "--batch=1";
    char *fake[] = {fake_arg, NULL};
    int j = 0;
    if (cli_shape_option(CMD, &in, 1, fake, &j) != 1)
      return CLI_EXIT_USAGE;
  } else if (in.shape.batch > 0 && nbatches < MAX_BATCHES) {
    batches[nbatches++] = in.shape.batch;
  }
  if (cli_shape_finish(CMD, &in) != 0)
    return CLI_EXIT_USAGE;

  const char *targets[MAX_TARGETS];
  size_t ntargets = 0;
  if (!target_buf[0])
    snprintf(target_buf, sizeof target_buf, "gfx950");
  for (char *save = NULL, *t = strtok_r(target_buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    if (ntargets == MAX_TARGETS)
      return cli_usage_error(CMD, "at most %d targets", MAX_TARGETS);
    targets[ntargets++] = t;
  }
  if (ntargets == 0)
    return cli_usage_error(CMD, "--target: no target given");

  /* One context per target (its canonical name may differ from the text). */
  size_t cap = MAX_BATCHES * UQ_PLAN_MAX_KERNELS + 2;
  uq_key *keys = calloc(cap, sizeof *keys);
  uq_context **ctxs = calloc(ntargets, sizeof *ctxs);
  size_t *key_start = calloc(ntargets + 1, sizeof *key_start);
  size_t *key_count = calloc(ntargets, sizeof *key_count);
  char *dir_owned = NULL;
  uq_key *all = NULL;
  int code = CLI_EXIT_OK;
  if (!keys || !ctxs || !key_start || !key_count) {
    code = cli_fail(CMD, UQ_ENOMEM, "out of memory");
    goto done;
  }
  all = calloc(cap * ntargets, sizeof *all);
  if (all == NULL) {
    code = cli_fail(CMD, UQ_ENOMEM, "out of memory");
    goto done;
  }
  size_t nall = 0;
  for (size_t t = 0; t < ntargets; t++) {
    size_t n = 0;
    int32_t padded = 0;
    /* Canonical target text, as the plans spell it. */
    char canon_buf[UQ_TARGET_MAX];
    snprintf(canon_buf, sizeof canon_buf, "%s", targets[t]);
    for (size_t bi = 0; bi < nbatches; bi++) {
      uq_shape s = in.shape;
      s.batch = (int32_t)batches[bi];
      uq_plan plan;
      int rc = uq_plan_make(&s, targets[t], &plan);
      if (rc != 0) {
        code = cli_fail(CMD, rc, "cannot plan this shape");
        goto done;
      }
      if (!plan.eligible) {
        fprintf(stderr,
                "uqjit warm: batch %lld is not eligible for the fast path: "
                "%s\n",
                (long long)batches[bi], plan.reason);
        code = CLI_EXIT_FAILURE;
        goto done;
      }
      padded = plan.padded_slot;
      snprintf(canon_buf, sizeof canon_buf, "%s", plan.kernels[0].target);
      for (int k = 0; k < plan.num_kernels; k++)
        if (add_key(keys, &n, cap, &plan.kernels[k]) != 0)
          goto toomany;
    }
    uq_dtype dts[2] = {UQ_DTYPE_BF16, in.shape.q_dtype};
    for (int d = 0; d < (dts[1] == UQ_DTYPE_BF16 ? 1 : 2); d++) {
      uq_key sk;
      int rc = uq_store_key(in.shape.head_dim, in.shape.num_kv_heads, padded,
                            dts[d], canon_buf, &sk);
      if (rc != 0) {
        code = cli_fail(CMD, rc, "cannot make the store key");
        goto done;
      }
      if (add_key(keys, &n, cap, &sk) != 0)
        goto toomany;
    }
    int rc = cli_compile_context(canon_buf, cache_dir, &ctxs[t]);
    if (rc != 0) {
      code = cli_fail(CMD, rc, "cannot create a compile context");
      goto done;
    }
    key_start[t] = nall;
    key_count[t] = n;
    memcpy(all + nall, keys, n * sizeof *keys);
    nall += n;
  }

  progress_state ps = {isatty(2), 0, nall};
  uq_compile_summary total;
  memset(&total, 0, sizeof total);
  int first_rc = 0;
  char first_detail[2048] = "";
  double t0 = cli_now();
  for (size_t t = 0; t < ntargets; t++) {
    uq_compile_summary sum;
    int rc = uq_compile_keys(ctxs[t], all + key_start[t], key_count[t], jobs,
                             on_progress, &ps, &sum);
    if (rc != 0 && first_rc == 0) {
      first_rc = rc;
      snprintf(first_detail, sizeof first_detail, "%s", uq_last_error());
    }
    ps.offset += key_count[t];
    total.keys += sum.keys;
    total.compiled += sum.compiled;
    total.hits += sum.hits;
    total.failed += sum.failed;
  }
  total.seconds = cli_now() - t0;
  if (ps.tty)
    fprintf(stderr, "\r\033[K");

  const char *dir_shown = cache_dir;
  if (dir_shown == NULL) {
    if (uq_cache_default_dir(&dir_owned) == 0)
      dir_shown = dir_owned;
    else
      dir_shown = "";
  }
  if (json) {
    printf("{\"keys\": %llu, \"compiled\": %llu, \"hits\": %llu, "
           "\"failed\": %llu, \"seconds\": %.3f, \"cache_dir\": ",
           (unsigned long long)total.keys, (unsigned long long)total.compiled,
           (unsigned long long)total.hits, (unsigned long long)total.failed,
           total.seconds);
    cli_json_string(stdout, dir_shown);
    printf(", \"targets\": [");
    for (size_t t = 0; t < ntargets; t++) {
      printf("%s", t ? ", " : "");
      cli_json_string(stdout, uq_context_target(ctxs[t]));
    }
    printf("], \"batch_sizes\": [");
    for (size_t b = 0; b < nbatches; b++)
      printf("%s%lld", b ? ", " : "", (long long)batches[b]);
    printf("]}\n");
  } else {
    printf("targets:    ");
    for (size_t t = 0; t < ntargets; t++)
      printf("%s%s", t ? ", " : "", uq_context_target(ctxs[t]));
    printf("\nbatch sizes:");
    for (size_t b = 0; b < nbatches; b++)
      printf("%s%lld", b ? ", " : " ", (long long)batches[b]);
    printf("\nkernels:    %llu (%llu compiled, %llu from cache, %llu "
           "failed)\n",
           (unsigned long long)total.keys, (unsigned long long)total.compiled,
           (unsigned long long)total.hits, (unsigned long long)total.failed);
    printf("time:       %.2f s\ncache:      %s\n", total.seconds, dir_shown);
  }
  if (first_rc != 0) {
    fprintf(stderr, "uqjit warm: %llu kernel(s) failed: %s%s%s\n",
            (unsigned long long)total.failed, uq_strerror(first_rc),
            first_detail[0] ? ": " : "", first_detail);
    code = CLI_EXIT_FAILURE;
  }
  goto done;
toomany:
  code = cli_usage_error(CMD, "too many kernels");
done:
  if (ctxs != NULL)
    for (size_t t = 0; t < ntargets; t++)
      uq_context_destroy(ctxs[t]);
  uq_free(dir_owned);
  free(all);
  free(keys);
  free(ctxs);
  free(key_start);
  free(key_count);
  return code;
}
