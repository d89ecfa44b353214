/* uq_decode on the GPU against the CPU double-precision reference, and
 * stale cache bytes that must not reach the output (the case matrix:
 * decode_matrix.c). Exits 77 without a device. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/runtime/decode_matrix.h"

static uq_context *ctx;

static int gpu_make(const decode_case *c, decode_problem *p) {
  return problem_make(ctx, c, p);
}
static int gpu_poison(decode_problem *p) { return problem_poison(ctx, p); }
static int gpu_decode(decode_problem *p) {
  return uq_decode(ctx, &p->shape, &p->d_args, p->d_ws, p->ws_bytes, NULL);
}
static int gpu_fetch(const decode_problem *p, uint16_t *raw, double *out) {
  return problem_fetch(ctx, p, raw, out);
}
static void gpu_release(decode_problem *p) { problem_free(ctx, p); }

/* The context's table counters, then the context, gone. */
static void close_context(void) {
  uq_stats s;
  if (ctx != NULL && uq_get_stats(ctx, &s) == 0)
    printf("table: %llu hits, %llu misses, %llu disk hits, %llu compiles "
           "(%.2f s)\n",
           (unsigned long long)s.hits, (unsigned long long)s.misses,
           (unsigned long long)s.disk_hits, (unsigned long long)s.compiles,
           s.compile_seconds);
  uq_context_destroy(ctx);
  ctx = NULL;
}

/* A context per variant: the layer is fixed when a context is made. */
static int gpu_select(const char *variant) {
  close_context();
  ctx = gpu_open_variant_or_skip(variant);
  return 0;
}

int main(void) {
  ctx = gpu_open_or_skip();
  char target[UQ_TARGET_MAX];
  snprintf(target, sizeof target, "%s", uq_context_target(ctx));
  const decode_backend be = {target,     gpu_select, gpu_make,   gpu_poison,
                             gpu_decode, gpu_fetch,  gpu_release};
  /* Every case runs on each layer the device's target has: the default
   * (the warpgroup layer on sm_90a, i.e. an H100/H200; the matrix layer on
   * other NVIDIA targets from sm_90 on), then a context asking for the
   * matrix, the portable, the gfx950-emu and the gfx942-emu layer (the
   * gfx950 and gfx942 layers with every AMD instruction emulated, on sm_90
   * and newer). A layer the target lacks falls back to a lower one (the
   * plan says which: printed per run).
   * UQ_TEST_VARIANT=default|matrix|portable|gfx950-emu|gfx942-emu runs one
   * of them only. */
  static const char *const variants[] = {NULL, "matrix", "portable",
                                         "gfx950-emu", "gfx942-emu"};
  int failed = decode_matrix_main(&be, variants, 5, 70000);
  close_context();
  return failed;
}
