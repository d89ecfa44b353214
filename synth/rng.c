/* The seeded random source: splitmix64, and normal values drawn from it. */
#include "synth/synth.h"

#include <math.h>

void synth_rng_seed(synth_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t synth_rng_u64(synth_rng *rng) {
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t synth_rng_u32(synth_rng *rng) {
  return (uint32_t)(synth_rng_u64(rng) >> 32);
}

uint64_t synth_rng_below(synth_rng *rng, uint64_t n) {
  return synth_rng_u64(rng) % n;
}

double synth_rng_uniform(synth_rng *rng) {
  return (double)(synth_rng_u64(rng) >> 11) * 0x1p-53;
}

double synth_rng_range(synth_rng *rng, double lo, double hi) {
  return lo + (hi - lo) * synth_rng_uniform(rng);
}

double synth_rng_normal(synth_rng *rng) {
  /* u1 in (0, 1]: log(0) never happens. */
  double u1 = ((double)(synth_rng_u64(rng) >> 11) + 1.0) * 0x1p-53;
  double u2 = (double)(synth_rng_u64(rng) >> 11) * 0x1p-53;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void synth_rng_shuffle_i32(synth_rng *rng, int32_t *v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)synth_rng_below(rng, i);
    int32_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

void synth_fill_normal_f32(synth_rng *rng, float *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(sigma * synth_rng_normal(rng));
}
