/* Small helpers shared by the test programs: a deterministic RNG, bf16 and
 * fp16 conversions written independently of the library (so tests can
 * check it), and error measures. Uses only the C library. */
#ifndef UQ_TESTUTIL_H
#define UQ_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: the same seed gives the same
 * stream on every machine. */
typedef struct tu_rng {
  uint64_t s[4];
  int has_spare;   /* a second normal draw is cached */
  double spare;
} tu_rng;

void tu_rng_seed(tu_rng *rng, uint64_t seed);
uint64_t tu_rng_u64(tu_rng *rng);
uint32_t tu_rng_u32(tu_rng *rng);
/* Uniform integer in [0, n) (n > 0). */
uint64_t tu_rng_below(tu_rng *rng, uint64_t n);
/* Uniform double in [0, 1) with 53 random bits. */
double tu_rng_uniform(tu_rng *rng);
/* Uniform double in [lo, hi). */
double tu_rng_range(tu_rng *rng, double lo, double hi);
/* Standard normal (Box-Muller). */
double tu_rng_normal(tu_rng *rng);
/* Fisher-Yates shuffle of n int32 values. */
void tu_rng_shuffle_i32(tu_rng *rng, int32_t *v, size_t n);

/* fp32 <-> bits. */
uint32_t tu_f32_bits(float f);
float tu_f32_from_bits(uint32_t u);

/* bf16 / fp16 conversions (round to nearest even; NaN stays NaN), written
 * with double arithmetic rather than bit tricks. */
float tu_bf16_to_f32(uint16_t h);
uint16_t tu_f32_to_bf16(float f);
float tu_fp16_to_f32(uint16_t h);
uint16_t tu_f32_to_fp16(float f);
/* One rounding from double (for checking outputs cast from double). */
uint16_t tu_f64_to_bf16(double x);
uint16_t tu_f64_to_fp16(double x);

/* Fill with sigma * N(0,1) values, rounded to the element type. */
void tu_fill_normal_f32(tu_rng *rng, float *x, size_t n, double sigma);
void tu_fill_normal_bf16(tu_rng *rng, uint16_t *x, size_t n, double sigma);
void tu_fill_normal_fp16(tu_rng *rng, uint16_t *x, size_t n, double sigma);

/* ||x - ref|| / ||ref|| (0 when both are 0; inf when only ref is 0). */
double tu_rel_l2(const double *x, const double *ref, size_t n);
double tu_rel_l2_f32(const float *x, const double *ref, size_t n);
/* max_i |x_i - ref_i|. */
double tu_max_abs_diff(const double *x, const double *ref, size_t n);

#endif
