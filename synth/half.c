/* bf16 / fp16 conversions written with double arithmetic, independently of
 * the library's, so that tests can check the library's against them. */
#include "synth/synth.h"

#include <math.h>

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

float synth_bf16_to_f32(uint16_t h) {
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

float synth_fp16_to_f32(uint16_t h) {
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

uint16_t synth_f64_to_bf16(double x) {
  if (x != x)
    return signbit(x) ? 0xffc0 : 0x7fc0;
  return encode_format(round_format(x, 7, -126, 0x1.fep127), 7, 8);
}

uint16_t synth_f64_to_fp16(double x) {
  if (x != x)
    return signbit(x) ? 0xfe00 : 0x7e00;
  return encode_format(round_format(x, 10, -14, 65504.0), 10, 5);
}
