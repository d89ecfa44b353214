#include "tests/support/testkit.h"

#include <math.h>

void tk_rng_seed(tk_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t tk_rng_u64(tk_rng *rng) {
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t tk_rng_u32(tk_rng *rng) { return (uint32_t)(tk_rng_u64(rng) >> 32); }

uint64_t tk_rng_below(tk_rng *rng, uint64_t n) { return tk_rng_u64(rng) % n; }

double tk_rng_uniform(tk_rng *rng) {
  return (double)(tk_rng_u64(rng) >> 11) * 0x1p-53;
}

double tk_rng_range(tk_rng *rng, double lo, double hi) {
  return lo + (hi - lo) * tk_rng_uniform(rng);
}

double tk_rng_normal(tk_rng *rng) {
  /* u1 in (0, 1]: log(0) never happens. */
  double u1 = ((double)(tk_rng_u64(rng) >> 11) + 1.0) * 0x1p-53;
  double u2 = (double)(tk_rng_u64(rng) >> 11) * 0x1p-53;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tk_rng_shuffle_i32(tk_rng *rng, int32_t *v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)tk_rng_below(rng, i);
    int32_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}
