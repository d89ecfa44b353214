#include "tests/testutil.h"

#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void tu_rng_seed(tu_rng *rng, uint64_t seed) {
  uint64_t st = seed;
  for (int i = 0; i < 4; i++)
    rng->s[i] = splitmix64(&st);
  rng->has_spare = 0;
  rng->spare = 0.0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tu_rng_u64(tu_rng *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint32_t tu_rng_u32(tu_rng *rng) { return (uint32_t)(tu_rng_u64(rng) >> 32); }

uint64_t tu_rng_below(tu_rng *rng, uint64_t n) {
  /* Rejection keeps it unbiased. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do
    r = tu_rng_u64(rng);
  while (r >= limit);
  return r % n;
}

double tu_rng_uniform(tu_rng *rng) {
  return (double)(tu_rng_u64(rng) >> 11) * 0x1p-53;
}

double tu_rng_range(tu_rng *rng, double lo, double hi) {
  return lo + (hi - lo) * tu_rng_uniform(rng);
}

double tu_rng_normal(tu_rng *rng) {
  if (rng->has_spare) {
    rng->has_spare = 0;
    return rng->spare;
  }
  double u1 = tu_rng_uniform(rng);
  double u2 = tu_rng_uniform(rng);
  double r = sqrt(-2.0 * log(1.0 - u1)); /* 1 - u1 is in (0, 1] */
  double th = 2.0 * 3.14159265358979323846 * u2;
  rng->spare = r * sin(th);
  rng->has_spare = 1;
  return r * cos(th);
}

void tu_rng_shuffle_i32(tu_rng *rng, int32_t *v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)tu_rng_below(rng, i);
    int32_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

uint32_t tu_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

float tu_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Rounds x to nearest even in a binary format with `mant` fraction bits,
 * minimum normal exponent `emin` and largest finite value `maxf`. */
static double round_format(double x, int mant, int emin, double maxf) {
  if (x != x || x == 0.0 || isinf(x))
    return x;
  double a = fabs(x);
  int e;
  frexp(a, &e); /* a = f * 2^e with f in [0.5, 1) */
  e -= 1;
  if (e < emin)
    e = emin;
  double q = ldexp(a, mant - e);
  double fl = floor(q);
  double diff = q - fl;
  if (diff > 0.5 || (diff == 0.5 && fmod(fl, 2.0) != 0.0))
    fl += 1.0;
  double y = ldexp(fl, e - mant);
  if (y > maxf)
    y = INFINITY;
  return x < 0 ? -y : y;
}

float tu_bf16_to_f32(uint16_t h) {
  int sign = h >> 15, exp = (h >> 7) & 0xff, mant = h & 0x7f;
  double v;
  if (exp == 0xff)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexp(mant, -126 - 7);
  else
    v = ldexp(128 + mant, exp - 127 - 7);
  return (float)(sign ? -v : v);
}

float tu_fp16_to_f32(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexp(mant, -14 - 10);
  else
    v = ldexp(1024 + mant, exp - 15 - 10);
  return (float)(sign ? -v : v);
}

/* Encodes a value already representable in the format (or +-inf). */
static uint16_t encode_format(double y, int mant, int ebits) {
  uint16_t sign = signbit(y) ? (uint16_t)(1u << (mant + ebits)) : 0;
  double a = fabs(y);
  int bias = (1 << (ebits - 1)) - 1;
  if (isinf(a))
    return (uint16_t)(sign | (((1u << ebits) - 1) << mant));
  if (a == 0.0)
    return sign;
  int e;
  frexp(a, &e);
  e -= 1;
  if (e < 1 - bias) /* subnormal */
    return (uint16_t)(sign | (uint16_t)ldexp(a, mant - (1 - bias)));
  uint16_t m = (uint16_t)(ldexp(a, mant - e) - ldexp(1.0, mant));
  return (uint16_t)(sign | ((unsigned)(e + bias) << mant) | m);
}

uint16_t tu_f64_to_bf16(double x) {
  if (x != x)
    return signbit(x) ? 0xffc0 : 0x7fc0;
  return encode_format(round_format(x, 7, -126, 0x1.fep127), 7, 8);
}

uint16_t tu_f64_to_fp16(double x) {
  if (x != x)
    return signbit(x) ? 0xfe00 : 0x7e00;
  return encode_format(round_format(x, 10, -14, 65504.0), 10, 5);
}

uint16_t tu_f32_to_bf16(float f) { return tu_f64_to_bf16((double)f); }
uint16_t tu_f32_to_fp16(float f) { return tu_f64_to_fp16((double)f); }

void tu_fill_normal_f32(tu_rng *rng, float *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(sigma * tu_rng_normal(rng));
}

void tu_fill_normal_bf16(tu_rng *rng, uint16_t *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++)
    x[i] = tu_f64_to_bf16(sigma * tu_rng_normal(rng));
}

void tu_fill_normal_fp16(tu_rng *rng, uint16_t *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++)
    x[i] = tu_f64_to_fp16(sigma * tu_rng_normal(rng));
}

double tu_rel_l2(const double *x, const double *ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

double tu_rel_l2_f32(const float *x, const double *ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)x[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

double tu_max_abs_diff(const double *x, const double *ref, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs(x[i] - ref[i]);
    if (d > m || d != d)
      m = d;
  }
  return m;
}
