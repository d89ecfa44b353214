/* The decode case matrix (decode_matrix.c) with the kernels running on the
 * CPU: the library's NVRTC-route sources for sm_90a, compiled by the host
 * C++ compiler and run thread by thread by the fiber model
 * (tests/simt/host_kernels.h). Three layers run this way: the gfx950 and
 * gfx942 layers with every CDNA4 / CDNA3 instruction emulated (gfx950-emu,
 * gfx942-emu) and the portable layer, whose GPU runs pass, which shows the
 * model sound; the portable layer also over head dims 64 and 128 and query
 * groups outside {6, 8, 16}, which no other layer serves. Exits 77
 * without a host C++ compiler. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/decode_matrix.h"
#include "tests/simt/host_kernels.h"

#define TARGET "sm_90a"

/* The layer of the problems made now (decode_backend.select). */
static const char *variant = "auto";

static int host_select(const char *v) {
  variant = v;
  return 0;
}

static int host_make(const decode_case *c, decode_problem *p) {
  int rc = problem_build(c, p);
  if (rc != 0)
    return rc;
  uq_plan plan;
  if ((rc = uq_plan_make_variant(&p->shape, TARGET, variant, &plan)) != 0)
    return rc;
  p->ws_bytes = plan.workspace_bytes;
  p->d_out = malloc(p->out_elems * 2);
  p->d_ws = malloc(p->ws_bytes);
  if (p->d_out == NULL || p->d_ws == NULL)
    return UQ_ENOMEM;
  p->d_args = synth_problem_decode_args(&p->host, p->d_out);
  return 0;
}

static int host_poison(decode_problem *p) {
  memset(p->d_out, 0xFF, p->out_elems * 2);
  memset(p->d_ws, 0xFF, p->ws_bytes);
  return 0;
}

static int host_decode(decode_problem *p) {
  return hk_decode(&p->shape, TARGET, variant, &p->d_args, p->d_ws,
                   p->ws_bytes);
}

static int host_fetch(const decode_problem *p, uint16_t *raw, double *out) {
  memcpy(raw, p->d_out, p->out_elems * 2);
  problem_widen(p, raw, out);
  return 0;
}

static void host_release(decode_problem *p) {
  free(p->d_out);
  free(p->d_ws);
  synth_problem_free(&p->host);
  memset(p, 0, sizeof *p);
}

int main(void) {
  char cxx[PATH_MAX];
  if (hk_find_compiler(cxx, sizeof cxx) != 0) {
    printf("SKIP: no host C++ compiler (c++, g++, clang++; or UQ_TEST_CXX)\n");
    return 77;
  }
  printf("host C++ compiler: %s\n", cxx);
  const decode_backend be = {TARGET,      host_select, host_make,
                             host_poison, host_decode, host_fetch,
                             host_release};
  static const char *const variants[] = {"gfx950-emu", "gfx942-emu", "portable"};
  /* 9000 tokens: two tile groups a partition at 32 partitions. */
  int failed = decode_matrix_main(&be, variants, 3, 9000);
  hk_shutdown();
  return failed;
}
