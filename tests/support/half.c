/* The testkit's own conversions: bit casts, and bf16 / fp16 from float and
 * filled with normal values, on the independent conversions of synth/. */
#include "tests/support/testkit.h"

#include <string.h>

uint32_t tk_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

float tk_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t tk_f32_to_bf16(float f) { return synth_f64_to_bf16((double)f); }
uint16_t tk_f32_to_fp16(float f) { return synth_f64_to_fp16((double)f); }

void tk_fill_normal_bf16(synth_rng *rng, uint16_t *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++)
    x[i] = synth_f64_to_bf16(sigma * synth_rng_normal(rng));
}

void tk_fill_normal_fp16(synth_rng *rng, uint16_t *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++)
    x[i] = synth_f64_to_fp16(sigma * synth_rng_normal(rng));
}
