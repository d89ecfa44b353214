/* uqjit demo: the whole path on one small problem. Plan a shape, make
 * random K/V, store them into the UltraQuant cache, decode, and check the
 * result against the double-precision reference: on the GPU when there is
 * one, else with the CPU reference (after compiling the kernels offline to
 * show the JIT and cache path). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_util.h"
#include "cli/commands.h"
#include "synth/synth.h"
#include "uqjit_tools.h"

#define CMD "demo"
#define NAME_LEN 512
#define MAX_B 4096
#define TOLERANCE 1e-2

static void demo_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit demo [--cpu] [--seed N] [--cache-dir D] [--target T]\n"
          "                  [--seq-lens LIST] [shape options]\n\n"
          "Plans a decode (default: batch 4, 16 query heads over 2 KV heads, "
          "head_dim\n"
          "256, block size 64, 64 blocks per sequence, sequence lengths "
          "4096, 1000,\n"
          "257, 1, bf16), generates random K/V and a query, and:\n"
          "  with a GPU: compiles (or loads from the cache) the kernels, "
          "writes the\n"
          "    cache with the store kernel and with the CPU store and checks "
          "the bytes\n"
          "    are identical, decodes, and compares with the double-precision "
          "reference;\n"
          "  without one (or with --cpu): compiles the kernels offline for a "
          "target\n"
          "    whose compiler is present (skipped when none), decodes with "
          "the CPU\n"
          "    reference and checks its cast output against double "
          "precision.\n"
          "Exit status 0 only when the relative L2 error of every sequence "
          "is below\n"
          "1e-2 and no output is NaN or Inf.\n\n"
          "options:\n"
          "  --cpu                      use the CPU path even when a GPU is "
          "present\n"
          "  --seed N                   random seed (default 1)\n"
          "  --cache-dir D              cache directory (default: "
          "UQJIT_CACHE_DIR, ...)\n"
          "  --seq-lens LIST            one length per sequence, each <= "
          "block size x\n"
          "                             max blocks per sequence\n"
          "  -h, --help                 this help\n\n"
          "shape options (all optional here):\n");
  cli_shape_help(out);
}

static void print_plan(const uq_shape *s, const uq_plan *p,
                       const int32_t *lens) {
  char name[NAME_LEN];
  printf("== plan (%s)\n", p->num_kernels ? p->kernels[0].target : "?");
  printf("  shape       B=%d Hq=%d Hk=%d (QG=%d) D=%d block=%d "
         "max_blocks/seq=%d (W=%lld) %s\n",
         (int)s->batch, (int)s->num_q_heads, (int)s->num_kv_heads,
         (int)p->query_group_size, (int)s->head_dim, (int)s->block_size,
         (int)s->max_blocks_per_seq,
         (long long)s->block_size * s->max_blocks_per_seq,
         cli_dtype_name(s->q_dtype));
  printf("  seq lens   ");
  for (int b = 0; b < s->batch && b < 16; b++)
    printf(" %d", (int)lens[b]);
  printf("%s\n", s->batch > 16 ? " ..." : "");
  printf("  partitions  P=%d, %d tile group(s) of 256 tokens per partition, "
         "fuse_qrot=%d\n",
         (int)p->num_partitions, (int)p->tile_groups_per_partition,
         (int)p->fuse_qrot);
  printf("  grids       decode (%u,%u,%u) reduce (%u,%u,%u), %u "
         "threads/block\n",
         p->decode_grid[0], p->decode_grid[1], p->decode_grid[2],
         p->reduce_grid[0], p->reduce_grid[1], p->reduce_grid[2],
         p->block_threads);
  printf("  workspace   %zu bytes\n", p->workspace_bytes);
  for (int k = 0; k < p->num_kernels; k++)
    if (uq_key_name(&p->kernels[k], name, sizeof name) >= 0)
      printf("  %-10s  %s\n", cli_kind_name(p->kernels[k].kind), name);
}

/* Per-sequence relative L2 against out64; returns 1 when all pass. */
static int verify(const uq_shape *s, const uint16_t *out, const double *ref) {
  size_t per = (size_t)s->num_q_heads * (size_t)s->head_dim;
  double worst = 0.0, max_abs = 0.0;
  size_t bad = 0;
  int ok = 1;
  printf("== verification against the double-precision reference\n");
  for (int b = 0; b < s->batch; b++) {
    double rel = synth_rel_l2_half(s->q_dtype, out + b * per, ref + b * per,
                                   per, &max_abs, &bad);
    if (!(rel < TOLERANCE))
      ok = 0;
    if (rel > worst || isnan(rel))
      worst = rel;
    if (b < 16)
      printf("  seq %-3d relative L2 error %.3e%s\n", b, rel,
             rel < TOLERANCE ? "" : "  FAIL");
  }
  printf("  max abs error %.3e, non-finite outputs %zu\n", max_abs, bad);
  if (bad > 0)
    ok = 0;
  printf("  %s (tolerance %.0e, worst %.3e)\n", ok ? "PASS" : "FAIL",
         TOLERANCE, worst);
  return ok;
}

/* 1 when the code object of every key is at hand in ctx: a failure of
 * uq_compile_keys was then the cache store's alone. */
static int all_compiled(uq_context *ctx, const uq_key *keys, size_t n) {
  for (size_t i = 0; i < n; i++) {
    void *obj = NULL;
    size_t len = 0;
    int rc = uq_code_object(ctx, &keys[i], &obj, &len, NULL);
    uq_free(obj);
    if (rc != 0)
      return 0;
  }
  return 1;
}

/* Offline compile for the first target whose compiler exists, with the
 * decode layer `variant` names (NULL: UQJIT_VARIANT). */
static void offline_compile(const synth_problem *p, const char *want,
                            const char *variant, const char *cache_dir) {
  static const char *const defaults[] = {UQ_DEFAULT_TARGET, "sm_90"};
  const char *const *targets = want ? &want : defaults;
  size_t nt = want ? 1 : 2;
  printf("== JIT and cache (offline: no GPU is used)\n");
  for (size_t t = 0; t < nt; t++) {
    uq_plan plan;
    if (uq_plan_make_variant(&p->shape, targets[t], variant, &plan) != 0 ||
        !plan.eligible) {
      printf("  %s: not planned (%s)\n", targets[t],
             plan.eligible ? uq_last_error() : plan.reason);
      continue;
    }
    uq_key keys[UQ_PLAN_MAX_KERNELS + 1];
    size_t n = 0;
    for (int k = 0; k < plan.num_kernels; k++)
      keys[n++] = plan.kernels[k];
    if (uq_store_key(p->shape.head_dim, p->shape.num_kv_heads,
                     plan.padded_slot, p->shape.q_dtype, plan.kernels[0].target,
                     &keys[n]) == 0)
      n++;
    uq_context *ctx = NULL;
    int rc = cli_compile_context(plan.kernels[0].target, cache_dir, &ctx);
    uq_compile_summary sum;
    memset(&sum, 0, sizeof sum);
    if (rc == 0)
      rc = uq_compile_keys(ctx, keys, n, 0, NULL, NULL, &sum);
    if (rc == UQ_ENOCOMPILER || rc == UQ_ENOJIT) {
      printf("  %s: skipped: %s (%s)\n", targets[t], uq_strerror(rc),
             uq_last_error());
      uq_context_destroy(ctx);
      continue;
    }
    if (rc != 0) {
      char why[2048];
      snprintf(why, sizeof why, "%s", uq_last_error());
      if (all_compiled(ctx, keys, n)) {
        printf("  %s: %llu kernels compiled, but not stored in the cache "
               "(they run from memory): %s: %s\n",
               targets[t], (unsigned long long)sum.keys, uq_strerror(rc),
               why);
        uq_context_destroy(ctx);
        return;
      }
      printf("  %s: compile failed: %s: %s\n", targets[t], uq_strerror(rc),
             why);
      uq_context_destroy(ctx);
      continue;
    }
    char *dir = NULL;
    int have_dir = cache_dir == NULL && uq_cache_default_dir(&dir) == 0;
    printf("  %s: %llu kernels: %llu compiled, %llu found in the cache, "
           "%.2f s\n  cache: %s\n",
           uq_context_target(ctx), (unsigned long long)sum.keys,
           (unsigned long long)sum.compiled, (unsigned long long)sum.hits,
           sum.seconds, cache_dir ? cache_dir : have_dir ? dir : "?");
    uq_free(dir);
    uq_context_destroy(ctx);
    return;
  }
  printf("  no kernel could be compiled for any target tried: JIT step "
         "skipped\n");
}

static int run_cpu(const synth_problem *p, const char *target,
                   const char *variant, const char *cache_dir) {
  offline_compile(p, target, variant, cache_dir);
  const uq_shape *s = &p->shape;
  size_t n = (size_t)s->batch * s->num_q_heads * s->head_dim;
  uint16_t *out = calloc(n, sizeof *out);
  double *ref = calloc(n, sizeof *ref);
  int code = CLI_EXIT_FAILURE;
  if (out == NULL || ref == NULL) {
    cli_fail(CMD, UQ_ENOMEM, "out of memory");
    goto done;
  }
  uq_decode_args a = synth_problem_decode_args(p, out);
  printf("== decode on the CPU (reference, %s output)\n",
         cli_dtype_name(s->q_dtype));
  double t0 = cli_now();
  int rc = uq_reference_decode(s, &a);
  double t1 = cli_now();
  if (rc != 0) {
    cli_fail(CMD, rc, "CPU decode failed");
    goto done;
  }
  rc = uq_reference_decode_f64(s, &a, ref);
  if (rc != 0) {
    cli_fail(CMD, rc, "double-precision reference failed");
    goto done;
  }
  printf("  %.1f ms\n", 1e3 * (t1 - t0));
  code = verify(s, out, ref) ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
done:
  free(out);
  free(ref);
  return code;
}

/* The GPU path's state: the device buffers hold a copy of the problem's
 * rows, query and tables, and the cache the store kernel writes. On
 * failure `what` says which step failed. */
typedef struct gpu_run {
  const synth_problem *p;
  uq_context *ctx;
  uq_plan plan;
  size_t out_elems, rows;
  void *k, *v, *map, *cache, *query, *bt, *sl, *out, *ws;
  const char *what;
} gpu_run;

static void gpu_free(gpu_run *g) {
  if (g->ctx != NULL) {
    void *bufs[] = {g->k,  g->v,  g->map, g->cache, g->query,
                    g->bt, g->sl, g->out, g->ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      if (bufs[i] != NULL)
        uq_device_free(g->ctx, bufs[i]);
  }
  uq_context_destroy(g->ctx);
  g->ctx = NULL;
}

/* Context on device 0 and the plan for it, both printed. */
static int gpu_open(gpu_run *g, const char *variant, const char *cache_dir) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = 0;
  o.cache_dir = cache_dir;
  o.variant = variant;
  double t0 = cli_now();
  g->what = "cannot create a context on device 0";
  int rc = uq_context_create(&o, &g->ctx);
  if (rc != 0)
    return rc;
  char dev_name[128] = "?";
  if (uq_device_name(g->ctx, dev_name, sizeof dev_name) != 0)
    snprintf(dev_name, sizeof dev_name, "?");
  g->what = "cannot plan the shape for the device";
  rc = uq_context_plan(g->ctx, &g->p->shape, &g->plan);
  if (rc != 0)
    return rc;
  printf("== GPU: %s (%s), context in %.1f ms\n", dev_name,
         uq_context_target(g->ctx), 1e3 * (cli_now() - t0));
  print_plan(&g->p->shape, &g->plan, g->p->seq_lens);
  return 0;
}

/* Device buffers, filled from the host problem; the cache zeroed. */
static int gpu_upload(gpu_run *g) {
  const synth_problem *p = g->p;
  const uq_shape *s = &p->shape;
  uq_context *ctx = g->ctx;
  size_t elt = 2, map_bytes = (size_t)p->num_tokens * sizeof(int64_t);
  size_t bt_bytes = (size_t)s->batch * s->max_blocks_per_seq * sizeof(int32_t);
  size_t sl_bytes = (size_t)s->batch * sizeof(int32_t);
  struct {
    void **ptr;
    size_t bytes;
  } bufs[] = {{&g->k, g->rows * elt},      {&g->v, g->rows * elt},
              {&g->map, map_bytes},        {&g->cache, p->cache_bytes},
              {&g->query, p->query_elems * elt}, {&g->bt, bt_bytes},
              {&g->sl, sl_bytes},          {&g->out, g->out_elems * elt},
              {&g->ws, g->plan.workspace_bytes}};
  int rc;
  g->what = "device allocation failed";
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if ((rc = uq_device_alloc(ctx, bufs[i].bytes > 0 ? bufs[i].bytes : 1,
                              bufs[i].ptr)) != 0)
      return rc;
  g->what = "copy to the device failed";
  if ((rc = uq_memcpy_h2d(ctx, g->k, p->k, g->rows * elt)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, g->v, p->v, g->rows * elt)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, g->map, p->slot_mapping, map_bytes)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, g->query, p->query, p->query_elems * elt)) !=
          0 ||
      (rc = uq_memcpy_h2d(ctx, g->bt, p->block_table, bt_bytes)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, g->sl, p->seq_lens, sl_bytes)) != 0 ||
      (rc = uq_memset_d8(ctx, g->cache, 0, p->cache_bytes)) != 0)
    return rc;
  return 0;
}

/* Stores on the GPU and counts the bytes that differ from the CPU store's
 * in *diff; prints both. */
static int gpu_store_check(gpu_run *g, size_t *diff) {
  const synth_problem *p = g->p;
  uint8_t *back = malloc(p->cache_bytes ? p->cache_bytes : 1);
  g->what = "out of memory";
  if (back == NULL)
    return UQ_ENOMEM;
  uq_store_args sa = synth_problem_store_args(p, g->k, g->v, g->map, g->cache);
  uq_stats st0, st1;
  uq_get_stats(g->ctx, &st0);
  double t0 = cli_now();
  int rc = uq_store(g->ctx, &sa, NULL);
  if (rc == 0)
    rc = uq_synchronize(g->ctx);
  double t_store = cli_now() - t0;
  g->what = "store kernel failed";
  if (rc == 0) {
    g->what = "copy from the device failed";
    rc = uq_memcpy_d2h(g->ctx, back, g->cache, p->cache_bytes);
  }
  if (rc == 0) {
    *diff = 0;
    for (size_t i = 0; i < p->cache_bytes; i++)
      *diff += back[i] != p->cache[i];
    uq_get_stats(g->ctx, &st1);
    printf("== store: %" PRId64 " tokens x %d heads, %.2f ms (first call, "
           "incl. %s)\n",
           p->num_tokens, (int)p->shape.num_kv_heads, 1e3 * t_store,
           st1.compiles > st0.compiles ? "compile and load" : "cache load");
    printf("  GPU store vs CPU store: %s (%zu of %zu bytes differ)\n",
           *diff == 0 ? "identical" : "DIFFERENT", *diff, p->cache_bytes);
  }
  free(back);
  return rc;
}

static int gpu_decode(gpu_run *g, const uq_decode_args *a, double *seconds) {
  double t0 = cli_now();
  int rc = uq_decode(g->ctx, &g->p->shape, a, g->ws, g->plan.workspace_bytes,
                     NULL);
  if (rc == 0)
    rc = uq_synchronize(g->ctx);
  *seconds = cli_now() - t0;
  return rc;
}

/* The first decode (which loads or compiles the kernels) and the best of
 * ten warm ones, printed with the table's counters. */
static int gpu_decode_timed(gpu_run *g) {
  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = g->query;
  a.kv_cache = g->cache;
  a.num_blocks = g->p->num_blocks;
  a.block_table = g->bt;
  a.seq_lens = g->sl;
  a.out = g->out;
  uq_stats st1, st2, st3;
  uq_get_stats(g->ctx, &st1);
  double first = 0, warm = 0, best = INFINITY;
  g->what = "decode failed";
  int rc = gpu_decode(g, &a, &first);
  if (rc != 0)
    return rc;
  uq_get_stats(g->ctx, &st2);
  for (int i = 0; i < 10; i++) {
    if ((rc = gpu_decode(g, &a, &warm)) != 0)
      return rc;
    if (warm < best)
      best = warm;
  }
  uq_get_stats(g->ctx, &st3);
  printf("== decode\n");
  printf("  first call  %9.3f ms (incl. %llu compile(s), %llu disk hit(s), "
         "%.3f s compiling)\n",
         1e3 * first, (unsigned long long)(st2.compiles - st1.compiles),
         (unsigned long long)(st2.disk_hits - st1.disk_hits),
         st2.compile_seconds - st1.compile_seconds);
  printf("  warm call   %9.3f ms (best of 10, host time incl. "
         "synchronize)\n",
         1e3 * best);
  printf("  table: %llu hits, %llu misses, %llu disk hits, %llu compiles "
         "(%.2f s)\n",
         (unsigned long long)st3.hits, (unsigned long long)st3.misses,
         (unsigned long long)st3.disk_hits, (unsigned long long)st3.compiles,
         st3.compile_seconds);
  return 0;
}

/* Copies the output back and checks it against the double-precision
 * reference; *ok says whether every sequence passed. */
static int gpu_verify(gpu_run *g, int *ok) {
  const synth_problem *p = g->p;
  uint16_t *out = calloc(g->out_elems, sizeof *out);
  double *ref = calloc(g->out_elems, sizeof *ref);
  int rc = UQ_ENOMEM;
  g->what = "out of memory";
  if (out != NULL && ref != NULL) {
    g->what = "copy from the device failed";
    rc = uq_memcpy_d2h(g->ctx, out, g->out, g->out_elems * 2);
  }
  if (rc == 0) {
    uq_decode_args ha = synth_problem_decode_args(p, NULL);
    g->what = "double-precision reference failed";
    rc = uq_reference_decode_f64(&p->shape, &ha, ref);
  }
  if (rc == 0)
    *ok = verify(&p->shape, out, ref);
  free(out);
  free(ref);
  return rc;
}

static int run_gpu(const synth_problem *p, const char *variant,
                   const char *cache_dir) {
  const uq_shape *s = &p->shape;
  gpu_run g;
  memset(&g, 0, sizeof g);
  g.p = p;
  g.out_elems = (size_t)s->batch * s->num_q_heads * s->head_dim;
  g.rows = (size_t)p->num_tokens * s->num_kv_heads * s->head_dim;
  int code = CLI_EXIT_FAILURE, ok = 0;
  size_t diff = 0;
  int rc = gpu_open(&g, variant, cache_dir);
  if (rc == 0 && !g.plan.eligible) {
    fprintf(stderr, "uqjit demo: not eligible on %s: %s\n",
            uq_context_target(g.ctx), g.plan.reason);
    gpu_free(&g);
    return code;
  }
  if (rc == 0)
    rc = gpu_upload(&g);
  if (rc == 0)
    rc = gpu_store_check(&g, &diff);
  if (rc == 0)
    rc = gpu_decode_timed(&g);
  if (rc == 0)
    rc = gpu_verify(&g, &ok);
  if (rc != 0)
    code = cli_fail(CMD, rc, g.what);
  else
    code = ok && diff == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
  gpu_free(&g);
  return code;
}

/* What the command line asks for. */
typedef struct demo_args {
  cli_shape in;
  int cpu;
  int64_t seed;
  const char *cache_dir;
  int32_t lens[MAX_B];
} demo_args;

/* The sequence lengths: --seq-lens, else a mix of full, about a quarter,
 * one block-crossing 257 and one. */
static int parse_lens(demo_args *d, const char *lens_text) {
  const uq_shape *s = &d->in.shape;
  int64_t w = (int64_t)s->block_size * s->max_blocks_per_seq;
  if (lens_text != NULL) {
    int64_t vals[MAX_B];
    size_t nv = 0;
    if (cli_parse_list(CMD, "--seq-lens", lens_text, 1, w, vals, MAX_B,
                       &nv) != 0)
      return CLI_EXIT_USAGE;
    if ((int64_t)nv != s->batch)
      return cli_usage_error(CMD, "--seq-lens: %zu lengths for batch %d", nv,
                             (int)s->batch);
    for (size_t b = 0; b < nv; b++)
      d->lens[b] = (int32_t)vals[b];
    return CLI_NEXT;
  }
  int64_t pattern[4] = {w, w * 1000 / 4096, 257, 1};
  for (int b = 0; b < s->batch; b++) {
    int64_t l = pattern[b % 4];
    d->lens[b] = (int32_t)(l < 1 ? 1 : l > w ? w : l);
  }
  return CLI_NEXT;
}

/* CLI_NEXT when the demo should run, else the exit status. */
static int parse_demo(demo_args *d, int argc, char **argv) {
  cli_shape_init(&d->in);
  uq_shape *s = &d->in.shape;
  s->batch = 4;
  s->num_q_heads = 16;
  s->num_kv_heads = 2;
  s->head_dim = 256;
  s->block_size = 64;
  s->max_blocks_per_seq = 64;
  d->seed = 1;
  const char *lens_text = NULL;
  const cli_flag flags[] = {{"--cpu", &d->cpu, 1}, {NULL, NULL, 0}};
  const cli_text texts[] = {{"--cache-dir", &d->cache_dir},
                            {"--seq-lens", &lens_text},
                            {NULL, NULL}};
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if ((r = cli_option(CMD, argc, argv, &i, "--seed", &v)) != 0) {
      if (r < 0 || cli_parse_i64(CMD, "--seed", v, 0, INT64_MAX, &d->seed) != 0)
        return CLI_EXIT_USAGE;
      continue;
    }
    r = cli_shape_command_arg(CMD, &d->in, texts, flags, demo_usage, argc,
                              argv, &i);
    if (r != CLI_NEXT)
      return r;
  }
  if (s->batch > MAX_B)
    return cli_usage_error(CMD, "--batch: at most %d for the demo", MAX_B);
  int64_t w = (int64_t)s->block_size * s->max_blocks_per_seq;
  if (w > (1 << 20))
    return cli_usage_error(CMD, "block size x max blocks per sequence: at "
                                "most 1048576 tokens for the demo");
  return parse_lens(d, lens_text);
}

/* Builds the problem and encodes it with the CPU store, printed. */
static int make_data(const demo_args *d, synth_problem *p) {
  const uq_shape *s = &d->in.shape;
  synth_problem_opts o;
  synth_problem_opts_init(&o, (uint64_t)d->seed);
  int rc = synth_problem_make(p, s, d->lens, &o);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot build the problem");
  double t0 = cli_now();
  rc = synth_problem_store(p);
  if (rc != 0)
    return cli_fail(CMD, rc, rc == UQ_ENOMEM ? "out of memory for the cache"
                                             : "CPU store failed");
  char hb[32];
  printf("== data (seed %lld)\n  %" PRId64 " tokens x %d KV heads of "
         "random normal K/V, %" PRId64 " blocks (shuffled), cache %s;\n"
         "  CPU store %.1f ms\n",
         (long long)d->seed, p->num_tokens, (int)s->num_kv_heads,
         p->num_blocks, cli_bytes(p->cache_bytes, hb, sizeof hb),
         1e3 * (cli_now() - t0));
  return 0;
}

int cli_cmd_demo(int argc, char **argv) {
  static demo_args d;
  memset(&d, 0, sizeof d);
  int r = parse_demo(&d, argc, argv);
  if (r != CLI_NEXT)
    return r;
  const uq_shape *s = &d.in.shape;
  int devices = 0;
  if (!d.cpu && uq_device_count(&devices) != 0)
    devices = 0;
  uq_plan plan;
  int rc = uq_plan_make_variant(s, d.in.target, d.in.variant, &plan);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot plan this shape");
  printf("uqjit %s demo: %s\n", uq_version_string(),
         devices > 0 ? "GPU path" : d.cpu ? "CPU path (--cpu)"
                                          : "CPU path (no GPU found)");
  if (devices == 0 || d.cpu)
    print_plan(s, &plan, d.lens);
  if (!plan.eligible)
    printf("  not eligible for the fast path: %s\n", plan.reason);

  synth_problem p;
  int code = make_data(&d, &p);
  if (code != 0) {
    synth_problem_free(&p);
    return code;
  }
  if (devices > 0 && !d.cpu) {
    if (plan.eligible) {
      code = run_gpu(&p, d.in.variant, d.cache_dir);
    } else {
      fprintf(stderr, "uqjit demo: the shape is not eligible: %s\n",
              plan.reason);
      code = CLI_EXIT_FAILURE;
    }
  } else {
    code = run_cpu(&p, d.in.target, d.in.variant, d.cache_dir);
  }
  synth_problem_free(&p);
  return code;
}
