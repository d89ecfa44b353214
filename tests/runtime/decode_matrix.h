/* The decode case matrix: every case the fast layers must get right,
 * checked against the CPU double-precision reference, run by a backend
 * that owns where the kernels execute (the GPU, gpu_decode.c; the host's
 * fiber model of the NVRTC-route kernels, host_decode.c). */
#ifndef UQ_TEST_DECODE_MATRIX_H
#define UQ_TEST_DECODE_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "tests/runtime/gpu_common.h"

typedef struct decode_backend {
  /* The target plans are made for (uq_plan_make's argument). */
  const char *target;
  /* Makes the next problems run with the decode layer `variant` names
   * ("auto" for the target's best; uq_plan_make_variant's argument). */
  int (*select)(const char *variant);
  /* problem_make's contract: the host problem and wherever it runs. */
  int (*make)(const decode_case *c, decode_problem *p);
  /* 0xFF bytes over the output and the workspace. */
  int (*poison)(decode_problem *p);
  /* One decode of p (uq_decode's launch sequence), complete on return of
   * fetch at the latest. */
  int (*decode)(decode_problem *p);
  /* problem_fetch's contract. */
  int (*fetch)(const decode_problem *p, uint16_t *raw, double *out);
  void (*release)(decode_problem *p);
} decode_backend;

/* Runs the matrix once per variant (NULL: the target's default layer; else
 * a layer name) on `be`; the cases of other head dims and query groups,
 * which only the portable layer serves, run with "portable" only.
 * UQ_TEST_VARIANT=<name> ("default" for NULL) runs one of them;
 * UQ_TEST_LONG_LEN sets the long sequences' length (default `long_len`);
 * UQ_TEST_FILTER / UQ_TEST_SKIP select tests. Returns the failure count,
 * or 1 for a bad environment value. */
int decode_matrix_main(const decode_backend *be, const char *const *variants,
                       int nvariants, int32_t long_len);

#endif
