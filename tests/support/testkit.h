/* testkit: what the test programs share to make and check synthetic decode
 * problems. The problems themselves, the random source, the independent
 * bf16/fp16 conversions and the error measures live in synth/ (synth.h),
 * which the uqjit command's demo and bench use too, and which the tests
 * call by their synth_ names; the testkit adds the helpers only tests
 * need. Uses only the public header uqjit.h, so it links against either
 * the static or the shared library. */
#ifndef TK_TESTKIT_H
#define TK_TESTKIT_H

#include <stddef.h>
#include <stdint.h>

#include "synth/synth.h"
#include "uqjit.h"

/* ---- test helpers (half.c) -------------------------------------------- */
/* fp32 <-> its bits. */
uint32_t tk_f32_bits(float f);
float tk_f32_from_bits(uint32_t u);
/* bf16 / fp16 of a float: one rounding (round to nearest even; NaN stays
 * NaN), with the independent conversions. */
uint16_t tk_f32_to_bf16(float f);
uint16_t tk_f32_to_fp16(float f);

/* Fill with sigma * N(0,1) values, rounded to the element type. */
void tk_fill_normal_bf16(synth_rng *rng, uint16_t *x, size_t n, double sigma);
void tk_fill_normal_fp16(synth_rng *rng, uint16_t *x, size_t n, double sigma);

#endif
