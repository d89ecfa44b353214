/* testkit: what the test programs share to make and check synthetic decode
 * problems. The problems themselves, the random source, the independent
 * bf16/fp16 conversions and the error measures live in synth/ (synth.h),
 * which the uqjit command's demo and bench use too; the testkit adds the
 * helpers only tests need and names the shared pieces with its own tk_
 * prefix, the one the test programs are written in. Uses only the public
 * header uqjit.h, so it links against either the static or the shared
 * library. */
#ifndef TK_TESTKIT_H
#define TK_TESTKIT_H

#include <stddef.h>
#include <stdint.h>

#include "synth/synth.h"
#include "uqjit.h"

/* ---- the shared pieces (synth/synth.h), by their testkit names -------- */
typedef synth_rng tk_rng;
#define tk_rng_seed synth_rng_seed
#define tk_rng_u64 synth_rng_u64
#define tk_rng_u32 synth_rng_u32
#define tk_rng_below synth_rng_below
#define tk_rng_uniform synth_rng_uniform
#define tk_rng_range synth_rng_range
#define tk_rng_normal synth_rng_normal
#define tk_rng_shuffle_i32 synth_rng_shuffle_i32
#define tk_fill_normal_f32 synth_fill_normal_f32

#define tk_bf16_to_f32 synth_bf16_to_f32
#define tk_fp16_to_f32 synth_fp16_to_f32
#define tk_f64_to_bf16 synth_f64_to_bf16
#define tk_f64_to_fp16 synth_f64_to_fp16

#define tk_rel_l2 synth_rel_l2
#define tk_rel_l2_f32 synth_rel_l2_f32
#define tk_rel_l2_half synth_rel_l2_half
#define tk_max_abs_diff synth_max_abs_diff

typedef synth_problem_opts tk_problem_opts;
typedef synth_problem tk_problem;
#define tk_query_elems synth_query_elems
#define tk_problem_opts_init synth_problem_opts_init
#define tk_problem_make synth_problem_make
#define tk_problem_store synth_problem_store
#define tk_problem_free synth_problem_free
#define tk_problem_store_args synth_problem_store_args
#define tk_problem_decode_args synth_problem_decode_args

/* ---- test helpers (half.c) -------------------------------------------- */
/* fp32 <-> its bits. */
uint32_t tk_f32_bits(float f);
float tk_f32_from_bits(uint32_t u);
/* bf16 / fp16 of a float: one rounding (round to nearest even; NaN stays
 * NaN), with the independent conversions. */
uint16_t tk_f32_to_bf16(float f);
uint16_t tk_f32_to_fp16(float f);

/* Fill with sigma * N(0,1) values, rounded to the element type. */
void tk_fill_normal_bf16(tk_rng *rng, uint16_t *x, size_t n, double sigma);
void tk_fill_normal_fp16(tk_rng *rng, uint16_t *x, size_t n, double sigma);

#endif
