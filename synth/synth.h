/* synth: the synthetic decode problems that the uqjit command's demo and
 * bench and the tests share. A seeded random source, bf16/fp16 conversions
 * written independently of the library (so that tests can check it), error
 * measures, and the synthetic problem: K/V rows for every token of every
 * sequence, stored through a shuffled block table. Uses only the public
 * header uqjit.h, so it links against either the static or the shared
 * library; it is never installed (the command links it statically). */
#ifndef SYNTH_H
#define SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

/* ---- random source (rng.c) -------------------------------------------
 * splitmix64: small, seedable, the same stream on every machine. The demo
 * and bench reports depend on this stream: keep the algorithm. */
typedef struct synth_rng {
  uint64_t state;
} synth_rng;

void synth_rng_seed(synth_rng *rng, uint64_t seed);
uint64_t synth_rng_u64(synth_rng *rng);
/* The high 32 bits of one draw. */
uint32_t synth_rng_u32(synth_rng *rng);
/* Integer in [0, n) (n > 0) from one draw, u64 % n: the bias, below
 * n / 2^64, does not matter for tests, and one draw keeps streams fixed. */
uint64_t synth_rng_below(synth_rng *rng, uint64_t n);
/* Uniform double in [0, 1) with 53 random bits. */
double synth_rng_uniform(synth_rng *rng);
/* Uniform double in [lo, hi). */
double synth_rng_range(synth_rng *rng, double lo, double hi);
/* Standard normal (Box-Muller, two draws, cosine branch only). */
double synth_rng_normal(synth_rng *rng);
/* Fisher-Yates shuffle of n values (synth_rng_below for each swap). */
void synth_rng_shuffle_i32(synth_rng *rng, int32_t *v, size_t n);
/* Fills x with n values sigma * N(0,1). */
void synth_fill_normal_f32(synth_rng *rng, float *x, size_t n, double sigma);

/* ---- independent conversions (half.c) --------------------------------
 * bf16 / fp16 (round to nearest even; NaN stays NaN), written with double
 * arithmetic rather than bit tricks, independently of the library's. */
float synth_bf16_to_f32(uint16_t h);
float synth_fp16_to_f32(uint16_t h);
/* One rounding from double (for checking outputs cast from double). */
uint16_t synth_f64_to_bf16(double x);
uint16_t synth_f64_to_fp16(double x);

/* ---- error measures (metrics.c) -------------------------------------- */
/* ||x - ref|| / ||ref|| (0 when both are 0; inf when only ref is 0). */
double synth_rel_l2(const double *x, const double *ref, size_t n);
double synth_rel_l2_f32(const float *x, const double *ref, size_t n);
/* The same for `out` of `dtype` (bf16 or fp16 bits, read with the
 * library's conversions), skipping non-finite outputs, which it counts in
 * *nonfinite; also raises *max_abs to the largest absolute error. */
double synth_rel_l2_half(uq_dtype dtype, const uint16_t *out, const double *ref,
                         size_t n, double *max_abs, size_t *nonfinite);
/* max_i |x_i - ref_i| (NaN when any difference is NaN). */
double synth_max_abs_diff(const double *x, const double *ref, size_t n);

/* ---- synthetic decode problem (problem.c) ---------------------------- */

/* Elements a query buffer of `shape` spans (its strides honoured); 0 when
 * that does not fit a size_t of bytes. */
size_t synth_query_elems(const uq_shape *shape);

typedef struct synth_problem_opts {
  uint64_t seed;
  int spare_blocks; /* physical blocks no sequence uses, shuffled in */
  int garbage;      /* stale random bytes in the cache before the store,
                     * invalid table entries past every sequence */
  double k_ramp;    /* token t's K times 1 + k_ramp t / seq_len: rising
                     * scores, so maxima keep growing along the sequence
                     * (0: plain normal rows) */
  int v_spread;     /* token t's V row (per kv head) times 2^e, e drawn
                     * from 0 .. v_spread t / seq_len, one row in eight
                     * moved v_spread / 2 lower: V scale bytes far from
                     * 127 whose largest keeps rising along the sequence
                     * (0: plain normal rows; bf16 only) */
  int nan_gaps;     /* query elements outside every (batch, head) row (the
                     * gaps of a strided query) hold NaN, so that reading
                     * one shows in the output (0: random like the rows) */
} synth_problem_opts;

/* Defaults: `seed`, no spare blocks, no garbage, no ramp, no NaN gaps. */
void synth_problem_opts_init(synth_problem_opts *o, uint64_t seed);

/* A synthetic decode problem on the host. All buffers owned here
 * (synth_problem_free). */
typedef struct synth_problem {
  uq_shape shape;          /* resolved: q_dtype and padded_slot filled in */
  synth_problem_opts opts;
  int32_t *seq_lens;       /* [B] */
  int32_t *block_table;    /* [B, max_blocks_per_seq]; unused entries 0
                            * (or invalid with opts.garbage) */
  int64_t num_blocks;      /* blocks the cache holds */
  int64_t num_tokens;      /* sum of seq_lens: rows of k and v */
  int64_t *slot_mapping;   /* [num_tokens] */
  uint16_t *k, *v;         /* [num_tokens, Hk, D] of shape.q_dtype */
  uint16_t *query;         /* query_elems elements */
  size_t query_elems;
  size_t cache_bytes;      /* num_blocks * block_size * Hk * padded_slot */
  uint8_t *cache;          /* cache_bytes, after synth_problem_store;
                            * else NULL */
} synth_problem;

/* Builds the problem for `shape` and seq_lens[B] (each in 1..block_size x
 * max_blocks_per_seq) with normal(0,1) rows drawn from o->seed: the
 * block shuffle first, then K and V element by element, then the query.
 * o NULL: synth_problem_opts_init(seed 1). UQ_EINVAL for a bad length,
 * UQ_ENOMEM; the problem is empty on failure. */
int synth_problem_make(synth_problem *p, const uq_shape *shape,
                       const int32_t *seq_lens, const synth_problem_opts *o);
/* Encodes K/V into p->cache (allocated here) with the CPU store,
 * uq_reference_store. UQ_* status (library error set). */
int synth_problem_store(synth_problem *p);
void synth_problem_free(synth_problem *p);

/* Store arguments writing p's rows (or k, v, map when not NULL: device
 * copies) into `cache`. */
uq_store_args synth_problem_store_args(const synth_problem *p, const void *k,
                                       const void *v, const int64_t *map,
                                       void *cache);
/* Decode arguments over p's host buffers and p->cache, writing `out`. */
uq_decode_args synth_problem_decode_args(const synth_problem *p, void *out);

#endif
