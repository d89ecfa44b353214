/* Shared setup of the 'gpu' suite: opening the device (or exit 77), and
 * building decode problems on the host with the CPU encoder, then on the
 * device. */
#ifndef UQ_GPU_COMMON_H
#define UQ_GPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "tests/support/testkit.h"
#include "uqjit_tools.h"

/* Exits 77 (Meson: SKIP) when there is no device or no runtime, printing
 * why; otherwise a context on device 0 (destroyed by the caller). */
uq_context *gpu_open_or_skip(void);
/* The same with the decode layer `variant` names (NULL: UQJIT_VARIANT). */
uq_context *gpu_open_variant_or_skip(const char *variant);

/* UQ_TEST_FILTER=<cmocka pattern> runs the matching tests only and
 * UQ_TEST_SKIP=<pattern> skips the matching ones (tools/gpu-sanitize.sh
 * runs the suite under compute-sanitizer with both). Call before the
 * group runs. */
void gpu_test_filters(void);

/* How the query sits in memory. */
typedef enum {
  Q_CONTIGUOUS = 0, /* [B, Hq, D] */
  Q_QKV_SLICE = 1,  /* the q part of a fused [B, (Hq + 2 Hk), D] projection */
  Q_STRIDED = 2,    /* heads D + 64 elements apart: the prologue path */
  Q_ELEM_STRIDED = 3 /* every other element of a [B, Hq, 2 D] tensor (a
                        last stride of 2, vLLM's contiguous_query=False
                        views): the prologue path */
} q_layout;

typedef struct decode_case {
  int qg, hk, block_size, batch;
  int head_dim;            /* 0 = 256 */
  const int32_t *seq_lens; /* batch of them */
  int max_kv_splits;       /* 0 = default */
  uq_dtype dtype;
  q_layout layout;
  int garbage;             /* poison stale slots, unused blocks, table tail */
  int padded_slot;         /* bytes per slot in the cache; 0 = the slot size */
  int v_spread;            /* synth_problem_opts.v_spread */
  double k_ramp;           /* token t's K times 1 + k_ramp t / seq_len: rising
                            * scores, so maxima keep growing along the
                            * sequence (0: plain randn) */
  uint64_t seed;
} decode_case;

/* A decode problem on host and device. */
typedef struct decode_problem {
  uq_shape shape;    /* host.shape */
  synth_problem host;   /* rows, tables, query and the CPU-encoded cache */
  size_t table_bytes, q_elems, out_elems;
  void *d_cache, *d_table, *d_lens, *d_qbuf, *d_out, *d_ws;
  size_t ws_bytes;
  uq_decode_args d_args; /* device pointers */
} decode_problem;

/* Builds the host side of the problem (p->host, the sizes; no device
 * buffers): what problem_make uploads. 0 or a status. */
int problem_build(const decode_case *c, decode_problem *p);
/* Builds the problem with the testkit (random bf16/fp16 K/V/Q ~ randn
 * encoded with uq_reference_store, shuffled block table, three blocks no
 * sequence uses, one spare table column) and uploads it, with a workspace
 * the size the context's plan says (uq_context_plan). Returns 0 or a
 * status; on failure prints why. */
int problem_make(uq_context *ctx, const decode_case *c, decode_problem *p);
void problem_free(uq_context *ctx, decode_problem *p);
/* Fills out and workspace with 0xFF bytes (NaN patterns). */
int problem_poison(uq_context *ctx, decode_problem *p);
/* Host reference in double: out64 [B, Hq, D]. */
int problem_reference(const decode_problem *p, double *out64);
/* Copies the device output back as doubles. */
int problem_fetch(uq_context *ctx, const decode_problem *p, uint16_t *raw,
                  double *out);
/* The output's bf16/fp16 bits `raw` as doubles (what problem_fetch does
 * after copying them back). */
void problem_widen(const decode_problem *p, const uint16_t *raw,
                   double *out);

#endif
