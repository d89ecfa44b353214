/* uq_decode on the GPU against the CPU double-precision reference, and
 * stale cache bytes that must not reach the output (the case matrix:
 * decode_matrix.c). Exits 77 without a device. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/decode_matrix.h"

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

int main(void) {
  ctx = gpu_open_or_skip();
  const decode_backend be = {uq_context_target(ctx), gpu_make, gpu_poison,
                             gpu_decode, gpu_fetch, gpu_release};
  /* Every case runs on each layer the device's target has: the default
   * (the warpgroup layer on sm_90a, i.e. an H100/H200; the matrix layer on
   * other NVIDIA targets from sm_90 on), UQJIT_VARIANT=matrix,
   * UQJIT_VARIANT=portable, UQJIT_VARIANT=gfx950-emu and
   * UQJIT_VARIANT=gfx942-emu (the gfx950 and gfx942 layers with every AMD
   * instruction emulated, on sm_90 and newer). A layer the target lacks
   * falls back to a lower one (the plan says which: printed per run).
   * UQ_TEST_VARIANT=default|matrix|portable|gfx950-emu|gfx942-emu runs one
   * of them only. */
  static const char *const variants[] = {NULL, "matrix", "portable",
                                         "gfx950-emu", "gfx942-emu"};
  int failed = decode_matrix_main(&be, variants, 5, 70000);
  uq_stats s;
  if (uq_get_stats(ctx, &s) == 0)
    printf("table: %llu hits, %llu misses, %llu disk hits, %llu compiles "
           "(%.2f s)\n",
           (unsigned long long)s.hits, (unsigned long long)s.misses,
           (unsigned long long)s.disk_hits, (unsigned long long)s.compiles,
           s.compile_seconds);
  uq_context_destroy(ctx);
  return failed;
}
