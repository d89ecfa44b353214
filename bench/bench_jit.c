/* JIT benchmark (not a test; numbers go to docs/BENCHMARKS.md): for each
 * target whose compiler is present, the cold compile time of every kernel
 * kind, the disk-hit time of the same kernels from a new context, and the
 * time of a specialization-table hit (the lookup on uq_decode's hot path).
 * Needs no GPU.
 *
 *   build/bench/bench_jit [target ...]      (default: sm_90 gfx950 gfx942 gfx90a)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/runtime/table.h"
#include "uqjit.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n ? v[n / 2] : 0.0;
}

/* The kernels of a typical deployment: decode/reduce for a few batch sizes,
 * a prologue (strided query) and the bf16 store kernel. */
static size_t deployment_keys(const char *target, uq_key *keys, size_t cap) {
  size_t n = 0;
  static const int batches[] = {1, 16, 64};
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
    uq_shape s;
    uq_shape_init(&s);
    s.batch = batches[i];
    s.num_q_heads = 16;
    s.num_kv_heads = 2;
    s.head_dim = 256;
    s.block_size = 64;
    s.max_blocks_per_seq = 2048;
    if (i == 2)
      s.q_stride_head = 3 * 256; /* a strided query: adds the prologue */
    uq_plan plan;
    if (uq_plan_make(&s, target, &plan) != 0 || !plan.eligible)
      continue;
    for (int k = 0; k < plan.num_kernels && n < cap; k++) {
      int dup = 0; /* plans of different batch sizes share kernels */
      for (size_t j = 0; j < n; j++)
        dup |= memcmp(&keys[j], &plan.kernels[k], sizeof keys[j]) == 0;
      if (!dup)
        keys[n++] = plan.kernels[k];
    }
  }
  if (n < cap && uq_store_key(256, 2, 0, UQ_DTYPE_BF16, target, &keys[n]) == 0)
    n++;
  return n;
}

static uq_context *compile_context(const char *target, const char *dir) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = target;
  o.cache_dir = dir;
  uq_context *ctx = NULL;
  return uq_context_create(&o, &ctx) == 0 ? ctx : NULL;
}

static const char *kind_name(uint32_t kind) {
  switch (kind) {
  case UQ_KERNEL_DECODE: return "decode";
  case UQ_KERNEL_REDUCE: return "reduce";
  case UQ_KERNEL_PROLOGUE: return "prologue";
  case UQ_KERNEL_STORE: return "store";
  default: return "?";
  }
}

static int bench_target(const char *target) {
  char dir[] = "/tmp/uqjit-bench-XXXXXX";
  if (mkdtemp(dir) == NULL)
    return 1;
  uq_key keys[16];
  size_t n = deployment_keys(target, keys, 16);
  double cold[16] = {0}, disk[16] = {0}, hit[16] = {0};
  uq_context *ctx = compile_context(target, dir);
  int rc = ctx ? 0 : 1;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    uq_compile_summary sum;
    double t0 = now_s();
    rc = uq_compile_keys(ctx, &keys[i], 1, 1, NULL, NULL, &sum);
    cold[i] = now_s() - t0;
    if (rc == 0 && sum.compiled != 1)
      rc = 1;
  }
  uq_context_destroy(ctx);
  if (rc != 0) {
    printf("%-8s skipped: %s: %s\n", target, uq_strerror(rc), uq_last_error());
    goto done;
  }
  /* A new context: every key is a disk hit (read, verify, insert). */
  ctx = compile_context(target, dir);
  for (size_t i = 0; ctx && i < n; i++) {
    uq_compile_summary sum;
    double t0 = now_s();
    rc |= uq_compile_keys(ctx, &keys[i], 1, 1, NULL, NULL, &sum);
    disk[i] = now_s() - t0;
    rc |= sum.hits != 1;
  }
  /* Same context again: memory hits through the public call. */
  for (size_t i = 0; ctx && i < n; i++) {
    uq_compile_summary sum;
    double t0 = now_s();
    rc |= uq_compile_keys(ctx, &keys[i], 1, 1, NULL, NULL, &sum);
    hit[i] = now_s() - t0;
  }
  uq_context_destroy(ctx);
  for (size_t i = 0; i < n; i++) {
    char name[256];
    uq_key_name(&keys[i], name, sizeof name);
    printf("%-8s %-9s cold %7.3f s   disk hit %7.1f us   memory hit %6.1f us   %s\n",
           target, kind_name(keys[i].kind), cold[i], disk[i] * 1e6,
           hit[i] * 1e6, name);
  }
  double c2[16], d2[16];
  memcpy(c2, cold, sizeof cold);
  memcpy(d2, disk, sizeof disk);
  printf("%-8s median over %zu kernels: cold compile %.3f s, disk hit %.1f us\n",
         target, n, median(c2, n), median(d2, n) * 1e6);
done:;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "bench_jit: could not remove %s\n", dir);
  return rc != 0;
}

/* The raw table hit: uq__table_lookup of a READY entry, as uq_decode does
 * for each of its kernels. */
static int trivial_build(void *user, uq__table *t, uq__entry *e) {
  (void)user;
  (void)t;
  e->block_threads = 128;
  return 0;
}

static void bench_table_hit(void) {
  uq__table *t = NULL;
  if (uq__table_create(trivial_build, NULL, NULL, &t) != 0)
    return;
  uq_key keys[64];
  size_t n = 0;
  for (int b = 1; b <= 64 && n < 60; b++) {
    uq_shape s;
    uq_shape_init(&s);
    s.batch = b;
    s.num_q_heads = 16;
    s.num_kv_heads = 1;
    s.head_dim = 256;
    s.block_size = 64;
    s.max_blocks_per_seq = 64 * b;
    uq_plan plan;
    if (uq_plan_make(&s, "sm_90", &plan) == 0 && plan.eligible)
      keys[n++] = plan.kernels[0];
  }
  for (size_t i = 0; i < n; i++) {
    uq__entry *e;
    uq__table_lookup(t, &keys[i], 0, 1, &e, NULL);
  }
  enum { ROUNDS = 200000 };
  double t0 = now_s();
  for (int r = 0; r < ROUNDS; r++) {
    uq__entry *e;
    uq__table_lookup(t, &keys[(size_t)r % n], 0, 1, &e, NULL);
  }
  double per = (now_s() - t0) / ROUNDS;
  printf("table hit (uq__table_lookup, %zu entries): %.1f ns per lookup\n", n,
         per * 1e9);
  uq__table_destroy(t);
}

int main(int argc, char **argv) {
  static const char *const defaults[] = {"sm_90", "gfx950", "gfx942", "gfx90a"};
  int failed = 0;
  if (argc > 1)
    for (int i = 1; i < argc; i++)
      failed |= bench_target(argv[i]);
  else
    for (size_t i = 0; i < 4; i++)
      failed |= bench_target(defaults[i]);
  bench_table_hit();
  return failed;
}
