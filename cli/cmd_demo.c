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
#include "uqjit.h"

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
    double rel = cli_rel_l2(s->q_dtype, out + b * per, ref + b * per,
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

static int make_store_args(uq_store_args *a, const cli_problem *p,
                           const void *k, const void *v, const int64_t *map,
                           void *cache) {
  memset(a, 0, sizeof *a);
  a->k = k;
  a->v = v;
  a->slot_mapping = map;
  a->num_tokens = p->num_tokens;
  a->kv_cache = cache;
  a->num_blocks = p->num_blocks;
  a->block_size = p->shape.block_size;
  a->num_kv_heads = p->shape.num_kv_heads;
  a->head_dim = p->shape.head_dim;
  a->padded_slot = p->shape.padded_slot;
  a->dtype = p->shape.q_dtype;
  return 0;
}

/* Offline compile for the first target whose compiler exists. */
static void offline_compile(const cli_problem *p, const char *want,
                            const char *cache_dir) {
  static const char *const defaults[] = {"gfx950", "sm_90"};
  const char *const *targets = want ? &want : defaults;
  size_t nt = want ? 1 : 2;
  printf("== JIT and cache (offline: no GPU is used)\n");
  for (size_t t = 0; t < nt; t++) {
    uq_plan plan;
    if (uq_plan_make(&p->shape, targets[t], &plan) != 0 || !plan.eligible) {
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
      printf("  %s: compile failed: %s: %s\n", targets[t], uq_strerror(rc),
             uq_last_error());
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

/* The decode arguments over p's host buffers and the encoded `cache`. */
static uq_decode_args host_args(const cli_problem *p,
                                const uint8_t *cache, void *out) {
  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = p->query;
  a.kv_cache = cache;
  a.num_blocks = p->num_blocks;
  a.block_table = p->block_table;
  a.seq_lens = p->seq_lens;
  a.out = out;
  return a;
}

static int run_cpu(const cli_problem *p, const uint8_t *cache,
                   const char *target, const char *cache_dir) {
  offline_compile(p, target, cache_dir);
  const uq_shape *s = &p->shape;
  size_t n = (size_t)s->batch * s->num_q_heads * s->head_dim;
  uint16_t *out = calloc(n, sizeof *out);
  double *ref = calloc(n, sizeof *ref);
  int code = CLI_EXIT_FAILURE;
  if (out == NULL || ref == NULL) {
    cli_fail(CMD, UQ_ENOMEM, "out of memory");
    goto done;
  }
  uq_decode_args a = host_args(p, cache, out);
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

typedef struct dev_bufs {
  void *k, *v, *map, *cache, *query, *bt, *sl, *out, *ws;
} dev_bufs;

static int gpu_decode(uq_context *ctx, const cli_problem *p,
                      const uq_decode_args *a, void *ws, size_t ws_bytes,
                      double *seconds) {
  double t0 = cli_now();
  int rc = uq_decode(ctx, &p->shape, a, ws, ws_bytes, NULL);
  if (rc == 0)
    rc = uq_synchronize(ctx);
  *seconds = cli_now() - t0;
  return rc;
}

static int run_gpu(const cli_problem *p, const uint8_t *host_cache,
                   const char *cache_dir) {
  const uq_shape *s = &p->shape;
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = 0;
  o.cache_dir = cache_dir;
  uq_context *ctx = NULL;
  dev_bufs d;
  memset(&d, 0, sizeof d);
  size_t n = (size_t)s->batch * s->num_q_heads * s->head_dim;
  size_t rows = (size_t)p->num_tokens * s->num_kv_heads * s->head_dim;
  uint16_t *out = calloc(n, sizeof *out);
  double *ref = calloc(n, sizeof *ref);
  uint8_t *back = malloc(p->cache_bytes);
  int code = CLI_EXIT_FAILURE;
  int rc = 0;
  const char *what = "";
  if (!out || !ref || !back) {
    rc = UQ_ENOMEM;
    what = "out of memory";
    goto fail;
  }
  double t0 = cli_now();
  rc = uq_context_create(&o, &ctx);
  what = "cannot create a context on device 0";
  if (rc != 0)
    goto fail;
  char dev_name[128] = "?";
  if (uq_device_name(ctx, dev_name, sizeof dev_name) != 0)
    snprintf(dev_name, sizeof dev_name, "?");
  uq_plan plan;
  rc = uq_plan_make(s, uq_context_target(ctx), &plan);
  what = "cannot plan the shape for the device";
  if (rc != 0)
    goto fail;
  printf("== GPU: %s (%s), context in %.1f ms\n", dev_name,
         uq_context_target(ctx), 1e3 * (cli_now() - t0));
  print_plan(s, &plan, p->seq_lens);
  if (!plan.eligible) {
    fprintf(stderr, "uqjit demo: not eligible on %s: %s\n",
            uq_context_target(ctx), plan.reason);
    goto done;
  }
  size_t elt = 2;
  what = "device allocation failed";
#define ALLOC(ptr, bytes)                                                   \
  if ((rc = uq_device_alloc(ctx, (bytes) > 0 ? (bytes) : 1, &(ptr))) != 0)  \
    goto fail;
  ALLOC(d.k, rows * elt);
  ALLOC(d.v, rows * elt);
  ALLOC(d.map, (size_t)p->num_tokens * sizeof(int64_t));
  ALLOC(d.cache, p->cache_bytes);
  ALLOC(d.query, p->query_elems * elt);
  ALLOC(d.bt, (size_t)s->batch * s->max_blocks_per_seq * sizeof(int32_t));
  ALLOC(d.sl, (size_t)s->batch * sizeof(int32_t));
  ALLOC(d.out, n * elt);
  ALLOC(d.ws, plan.workspace_bytes);
#undef ALLOC
  what = "copy to the device failed";
  if ((rc = uq_memcpy_h2d(ctx, d.k, p->k, rows * elt)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, d.v, p->v, rows * elt)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, d.map, p->slot_mapping,
                          (size_t)p->num_tokens * sizeof(int64_t))) != 0 ||
      (rc = uq_memcpy_h2d(ctx, d.query, p->query, p->query_elems * elt)) !=
          0 ||
      (rc = uq_memcpy_h2d(ctx, d.bt, p->block_table,
                          (size_t)s->batch * s->max_blocks_per_seq *
                              sizeof(int32_t))) != 0 ||
      (rc = uq_memcpy_h2d(ctx, d.sl, p->seq_lens,
                          (size_t)s->batch * sizeof(int32_t))) != 0 ||
      (rc = uq_memset_d8(ctx, d.cache, 0, p->cache_bytes)) != 0)
    goto fail;

  /* Store on the GPU; its bytes must equal the CPU store's. */
  uq_store_args sa;
  make_store_args(&sa, p, d.k, d.v, d.map, d.cache);
  uq_stats st0, st1, st2;
  uq_get_stats(ctx, &st0);
  t0 = cli_now();
  rc = uq_store(ctx, &sa, NULL);
  if (rc == 0)
    rc = uq_synchronize(ctx);
  double t_store = cli_now() - t0;
  what = "store kernel failed";
  if (rc != 0)
    goto fail;
  rc = uq_memcpy_d2h(ctx, back, d.cache, p->cache_bytes);
  what = "copy from the device failed";
  if (rc != 0)
    goto fail;
  size_t diff = 0;
  for (size_t i = 0; i < p->cache_bytes; i++)
    diff += back[i] != host_cache[i];
  uq_get_stats(ctx, &st1);
  printf("== store: %" PRId64 " tokens x %d heads, %.2f ms (first call, "
         "incl. %s)\n",
         p->num_tokens, (int)s->num_kv_heads, 1e3 * t_store,
         st1.compiles > st0.compiles ? "compile and load"
                                     : "cache load");
  printf("  GPU store vs CPU store: %s (%zu of %zu bytes differ)\n",
         diff == 0 ? "identical" : "DIFFERENT", diff, p->cache_bytes);

  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = d.query;
  a.kv_cache = d.cache;
  a.num_blocks = p->num_blocks;
  a.block_table = d.bt;
  a.seq_lens = d.sl;
  a.out = d.out;
  double first = 0, warm = 0;
  rc = gpu_decode(ctx, p, &a, d.ws, plan.workspace_bytes, &first);
  what = "decode failed";
  if (rc != 0)
    goto fail;
  uq_get_stats(ctx, &st2);
  double best = INFINITY;
  for (int i = 0; i < 10; i++) {
    rc = gpu_decode(ctx, p, &a, d.ws, plan.workspace_bytes, &warm);
    if (rc != 0)
      goto fail;
    if (warm < best)
      best = warm;
  }
  uq_stats st3;
  uq_get_stats(ctx, &st3);
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
  rc = uq_memcpy_d2h(ctx, out, d.out, n * elt);
  what = "copy from the device failed";
  if (rc != 0)
    goto fail;
  uq_decode_args ha = host_args(p, host_cache, NULL);
  rc = uq_reference_decode_f64(s, &ha, ref);
  what = "double-precision reference failed";
  if (rc != 0)
    goto fail;
  int ok = verify(s, out, ref);
  code = ok && diff == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
  goto done;
fail:
  code = cli_fail(CMD, rc, what);
done:
  if (ctx != NULL) {
    void *bufs[] = {d.k, d.v, d.map, d.cache, d.query, d.bt, d.sl, d.out,
                    d.ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      if (bufs[i] != NULL)
        uq_device_free(ctx, bufs[i]);
  }
  uq_context_destroy(ctx);
  free(out);
  free(ref);
  free(back);
  return code;
}

int cli_cmd_demo(int argc, char **argv) {
  cli_shape in;
  cli_shape_init(&in);
  uq_shape *s = &in.shape;
  s->batch = 4;
  s->num_q_heads = 16;
  s->num_kv_heads = 2;
  s->head_dim = 256;
  s->block_size = 64;
  s->max_blocks_per_seq = 64;
  int cpu = 0;
  int64_t seed = 1;
  const char *cache_dir = NULL, *lens_text = NULL;
  const cli_flag flags[] = {{"--cpu", &cpu, 1}, {NULL, NULL, 0}};
  const cli_text texts[] = {{"--cache-dir", &cache_dir},
                               {"--seq-lens", &lens_text},
                               {NULL, NULL}};
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if ((r = cli_option(CMD, argc, argv, &i, "--seed", &v)) != 0) {
      if (r < 0 ||
          cli_parse_i64(CMD, "--seed", v, 0, INT64_MAX, &seed) != 0)
        return CLI_EXIT_USAGE;
      continue;
    }
    r = cli_shape_command_arg(CMD, &in, texts, flags, demo_usage, argc, argv,
                                 &i);
    if (r != CLI_NEXT)
      return r;
  }
  if (s->batch > MAX_B)
    return cli_usage_error(CMD, "--batch: at most %d for the demo",
                              MAX_B);
  int64_t w = (int64_t)s->block_size * s->max_blocks_per_seq;
  if (w > (1 << 20))
    return cli_usage_error(CMD, "block size x max blocks per sequence: at "
                                   "most 1048576 tokens for the demo");
  static int32_t lens[MAX_B];
  if (lens_text != NULL) {
    int64_t vals[MAX_B];
    size_t nv = 0;
    if (cli_parse_list(CMD, "--seq-lens", lens_text, 1, w, vals, MAX_B,
                           &nv) != 0)
      return CLI_EXIT_USAGE;
    if ((int64_t)nv != s->batch)
      return cli_usage_error(CMD, "--seq-lens: %zu lengths for batch %d",
                                nv, (int)s->batch);
    for (size_t b = 0; b < nv; b++)
      lens[b] = (int32_t)vals[b];
  } else {
    /* Mixed lengths: full, about a quarter, one block-crossing 257, one. */
    int64_t pattern[4] = {w, w * 1000 / 4096, 257, 1};
    for (int b = 0; b < s->batch; b++) {
      int64_t l = pattern[b % 4];
      lens[b] = (int32_t)(l < 1 ? 1 : l > w ? w : l);
    }
  }

  int devices = 0;
  if (!cpu && uq_device_count(&devices) != 0)
    devices = 0;
  uq_plan plan;
  int rc = uq_plan_make(s, in.target, &plan);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot plan this shape");
  printf("uqjit %s demo: %s\n", uq_version_string(),
         devices > 0 ? "GPU path" : cpu ? "CPU path (--cpu)"
                                        : "CPU path (no GPU found)");
  if (devices == 0 || cpu)
    print_plan(s, &plan, lens);
  if (!plan.eligible)
    printf("  not eligible for the fast path: %s\n", plan.reason);

  cli_problem p;
  rc = cli_problem_make(&p, s, lens, (uint64_t)seed);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot build the problem");
  int code = CLI_EXIT_FAILURE;
  uint8_t *cache = calloc(p.cache_bytes ? p.cache_bytes : 1, 1);
  if (cache == NULL) {
    code = cli_fail(CMD, UQ_ENOMEM, "out of memory for the cache");
    goto done;
  }
  uq_store_args sa;
  make_store_args(&sa, &p, p.k, p.v, p.slot_mapping, cache);
  double t0 = cli_now();
  rc = uq_reference_store(&sa);
  if (rc != 0) {
    code = cli_fail(CMD, rc, "CPU store failed");
    goto done;
  }
  char hb[32];
  printf("== data (seed %lld)\n  %" PRId64 " tokens x %d KV heads of "
         "random normal K/V, %" PRId64 " blocks (shuffled), cache %s;\n"
         "  CPU store %.1f ms\n",
         (long long)seed, p.num_tokens, (int)s->num_kv_heads, p.num_blocks,
         cli_bytes(p.cache_bytes, hb, sizeof hb),
         1e3 * (cli_now() - t0));
  if (devices > 0 && !cpu) {
    if (!plan.eligible) {
      fprintf(stderr, "uqjit demo: the shape is not eligible: %s\n",
              plan.reason);
      goto done;
    }
    code = run_gpu(&p, cache, cache_dir);
  } else {
    code = run_cpu(&p, cache, in.target, cache_dir);
  }
done:
  free(cache);
  cli_problem_free(&p);
  return code;
}
