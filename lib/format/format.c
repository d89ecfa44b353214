/* The UltraQuant 4-bit format (FORMAT.md sections 1-4), bit for bit. The
 * GPU store and decode paths must agree with this file exactly, so every
 * step is spelled out in fp32 arithmetic without library rounding (no
 * log2f, no FMA: the project compiles with -ffp-contract=off). */
#include "lib/format/format.h"

#include <float.h>
#include <math.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"

/* Rows up to this length are converted on the stack. */
#define UQ__FORMAT_STACK_ELEMS 1024

static const float fp4_values[16] = {0.0f,  0.5f,  1.0f,  1.5f, 2.0f,  3.0f,
                                     4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                     -2.0f, -3.0f, -4.0f, -6.0f};

const double uq__fp4_values_f64[16] = {0.0,  0.5,  1.0,  1.5, 2.0,  3.0,
                                       4.0,  6.0,  -0.0, -0.5, -1.0, -1.5,
                                       -2.0, -3.0, -4.0, -6.0};

/* Midpoints between consecutive sorted levels (-6 ... 6). */
static const float midpoints[14] = {-5.0f,  -3.5f, -2.5f, -1.75f, -1.25f,
                                    -0.75f, -0.25f, 0.25f, 0.75f,  1.25f,
                                    1.75f,  2.5f,  3.5f,  5.0f};

float uq_fp4_value(unsigned code) { return fp4_values[code & 15u]; }

double uq__ue8m0_to_double(uint8_t byte) {
  if (byte == 0)
    return 0.0;
  return ldexp(1.0, (int)byte - 127);
}

/* Byte 255 is 2^128, which fp32 cannot hold: it decodes to +inf here (the
 * encoder never writes it; uq__ue8m0_to_double gives the finite value). */
float uq_ue8m0_value(uint8_t byte) {
  if (byte == 0)
    return 0.0f;
  /* Bytes 1..254 are exactly the fp32 exponent field of 2^(byte-127);
   * 255 lands on the +inf pattern. */
  return uq__f32_from_bits((uint32_t)byte << 23);
}

int uq__scale_exponent(float s_raw) {
  uint32_t bits = uq__f32_bits(s_raw);
  uint32_t biased = (bits >> 23) & 0xffu;
  if (biased == 0)
    return -126; /* subnormal: below the clamp anyway */
  int e = (int)biased - 127 + ((bits & 0x7fffffu) >= 0x3504F4u ? 1 : 0);
  if (e < -126)
    e = -126;
  if (e > 127)
    e = 127;
  return e;
}

static void encode_group(const float *x, uint8_t *scale_byte,
                         uint8_t *packed) {
  float amax = 0.0f;
  int finite = 1;
  for (int i = 0; i < 32; i++) {
    /* A comparison with NaN is false, so a max alone would drop it. */
    if (!isfinite(x[i]))
      finite = 0;
    float a = fabsf(x[i]);
    if (a > amax)
      amax = a;
  }
  float s_raw = UQ__SCALE_FACTOR * amax;
  if (!finite || !(s_raw > 0.0f) || !isfinite(s_raw)) {
    *scale_byte = 0;
    memset(packed, 0, 16);
    return;
  }
  int e = uq__scale_exponent(s_raw);
  *scale_byte = (uint8_t)(e + 127);
  /* 2^e for e in [-126, 127] is a normal fp32. */
  float s = uq__f32_from_bits((uint32_t)(e + 127) << 23);
  uint8_t codes[32];
  for (int i = 0; i < 32; i++) {
    float y = x[i] / s;
    unsigned level = 0;
    for (int m = 0; m < 14; m++)
      level += midpoints[m] < y ? 1u : 0u;
    codes[i] = (uint8_t)(level < 7 ? 15u - level : level - 7u);
  }
  for (int j = 0; j < 16; j++)
    packed[j] = (uint8_t)(codes[2 * j] | (codes[2 * j + 1] << 4));
}

void uq_encode_group(const float x[32], uint8_t *scale_byte,
                     uint8_t packed[16]) {
  encode_group(x, scale_byte, packed);
}

void uq__encode_row(const float *x, int n, uint8_t *codes, uint8_t *scales) {
  for (int g = 0; g < n / 32; g++)
    encode_group(x + 32 * g, scales + g, codes + 16 * g);
}

void uq__fwht_f32(float *x, int n) {
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; j++) {
        float a = x[j];
        float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const float norm = (float)(1.0 / sqrt((double)n));
  for (int i = 0; i < n; i++)
    x[i] = x[i] * norm;
}

int uq__is_pow2(int64_t n) { return n >= 1 && (n & (n - 1)) == 0; }

int uq_fwht(float *x, int n) {
  uq__error_clear();
  if (!uq__is_pow2(n))
    return uq__errorf(UQ_EINVAL, "uq_fwht: n = %d is not a power of two", n);
  if (x == NULL)
    return uq__errorf(UQ_EINVAL, "uq_fwht: x is NULL");
  uq__fwht_f32(x, n);
  return 0;
}

float uq_haircut_e4m3(float x) {
  if (isnan(x))
    return x;
  float a = fabsf(x);
  if (a >= 448.0f)
    return copysignf(448.0f, x);
  uint32_t biased = (uq__f32_bits(a) >> 23) & 0xffu;
  /* E4M3FN keeps 3 mantissa bits for exponents >= -6 and a fixed quantum
   * of 2^-9 below (subnormals). */
  int e = (int)biased - 127;
  if (e < -6)
    e = -6;
  int qexp = e - 3; /* quantum = 2^qexp, in [-9, 5] */
  float quantum = uq__f32_from_bits((uint32_t)(qexp + 127) << 23);
  /* a / quantum < 16 is exact (power-of-two scaling of a value whose
   * exponent is >= qexp - 23 or which lands in the normal range). */
  float q = rintf(a / quantum);
  return copysignf(q * quantum, x);
}

float uq_bf16_to_float(uint16_t h) { return uq__f32_from_bits((uint32_t)h << 16); }

uint16_t uq_float_to_bf16(float f) {
  uint32_t b = uq__f32_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((b >> 16) | 0x0040u); /* keep NaN a (quiet) NaN */
  b += 0x7fffu + ((b >> 16) & 1u);
  return (uint16_t)(b >> 16);
}

float uq_fp16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    /* Zero or subnormal: mant * 2^-24, exact in fp32. */
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31)
    return uq__f32_from_bits(sign | 0x7f800000u | (mant << 13));
  return uq__f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t uq_float_to_fp16(float f) {
  uint32_t b = uq__f32_bits(f);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a == 0x7f800000u)
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) {
    /* Below 2^-14: the fp16 subnormal quantum is 2^-24; scaling is exact
     * and rintf rounds to nearest even. 1024 carries into the exponent. */
    float q = rintf(uq__f32_from_bits(a) * 0x1p24f);
    return (uint16_t)(sign | (uint16_t)q);
  }
  uint32_t r = a - 0x38000000u; /* rebias 127 -> 15 */
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  if (r >= 0x7c00u)
    return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | r);
}

/* Rounds x once to a binary format with `mant_bits` fraction bits, minimum
 * normal exponent `emin` and largest finite value `max_finite`. */
static double round_to_format(double x, int mant_bits, int emin,
                              double max_finite) {
  if (isnan(x) || isinf(x) || x == 0.0)
    return x;
  double a = fabs(x);
  int e = ilogb(a);
  if (e < emin)
    e = emin;
  double y = ldexp(nearbyint(ldexp(a, mant_bits - e)), e - mant_bits);
  if (y > max_finite)
    y = INFINITY;
  return copysign(y, x);
}

uint16_t uq__double_to_bf16(double x) {
  if (isnan(x))
    return (uint16_t)(signbit(x) ? 0xffc0u : 0x7fc0u);
  /* The rounded value is a bf16 value, so the fp32 steps below are exact. */
  double y = round_to_format(x, 7, -126, 0x1.fep127);
  return uq_float_to_bf16((float)y);
}

uint16_t uq__double_to_fp16(double x) {
  if (isnan(x))
    return (uint16_t)(signbit(x) ? 0xfe00u : 0x7e00u);
  double y = round_to_format(x, 10, -14, 65504.0);
  return uq_float_to_fp16((float)y);
}

size_t uq__dtype_size(int dtype) {
  switch (dtype) {
  case UQ_DTYPE_BF16:
  case UQ_DTYPE_FP16:
    return 2;
  case UQ_DTYPE_FP32:
    return 4;
  default:
    return 0;
  }
}

float uq__load_f32(const void *base, int dtype, int64_t idx) {
  switch (dtype) {
  case UQ_DTYPE_BF16:
    return uq_bf16_to_float(((const uint16_t *)base)[idx]);
  case UQ_DTYPE_FP16:
    return uq_fp16_to_float(((const uint16_t *)base)[idx]);
  default:
    return ((const float *)base)[idx];
  }
}

int uq_slot_layout_get(int head_dim, uq_slot_layout *out) {
  uq__error_clear();
  if (out == NULL)
    return uq__errorf(UQ_EINVAL, "uq_slot_layout_get: out is NULL");
  if (head_dim <= 0 || head_dim % 32 != 0)
    return uq__errorf(UQ_EINVAL,
                      "head_dim = %d is not a positive multiple of 32",
                      head_dim);
  /* The slot size (and its padding to 4) must fit the int32 fields. */
  if (uq_slot_size(head_dim) > (size_t)INT32_MAX - 3)
    return uq__errorf(UQ_EOVERFLOW, "head_dim = %d: slot size overflows",
                      head_dim);
  uint32_t d = (uint32_t)head_dim;
  memset(out, 0, sizeof *out);
  out->head_dim = d;
  out->k_codes = 0;
  out->k_scales = d / 2;
  out->v_codes = d / 2 + d / 32;
  out->v_scales = d + d / 32;
  out->size = d + 2 * (d / 32);
  return 0;
}

size_t uq_slot_size(int head_dim) {
  if (head_dim <= 0 || head_dim % 32 != 0)
    return 0;
  return (size_t)head_dim + 2 * (size_t)(head_dim / 32);
}

int uq__resolve_padded_slot(int head_dim, int padded_slot, int32_t *resolved) {
  size_t size = uq_slot_size(head_dim);
  if (size == 0)
    return uq__errorf(UQ_EINVAL,
                      "head_dim = %d is not a positive multiple of 32",
                      head_dim);
  if (size > (size_t)INT32_MAX - 3)
    return uq__errorf(UQ_EOVERFLOW, "head_dim = %d: slot size overflows",
                      head_dim);
  if (padded_slot == 0) {
    *resolved = (int32_t)((size + 3) / 4 * 4);
    return 0;
  }
  if (padded_slot < 0 || (size_t)padded_slot < size)
    return uq__errorf(UQ_EINVAL,
                      "padded_slot = %d is smaller than the slot size %zu "
                      "of head_dim %d",
                      padded_slot, size, head_dim);
  if (padded_slot % 4 != 0)
    return uq__errorf(UQ_EINVAL, "padded_slot = %d is not a multiple of 4",
                      padded_slot);
  *resolved = padded_slot;
  return 0;
}

void uq__encode_slot_f32(int head_dim, float *k, const float *v,
                         uint8_t *slot) {
  int d = head_dim;
  uq__fwht_f32(k, d);
  uq__encode_row(k, d, slot, slot + d / 2);
  uq__encode_row(v, d, slot + d / 2 + d / 32, slot + d + d / 32);
}

int uq_encode_slot(int head_dim, uq_dtype dtype, const void *k, const void *v,
                   uint8_t *slot) {
  uq__error_clear();
  if (head_dim < 32 || !uq__is_pow2(head_dim))
    return uq__errorf(UQ_EINVAL,
                      "uq_encode_slot: head_dim = %d is not a power of two "
                      ">= 32",
                      head_dim);
  if (uq__dtype_size(dtype) == 0)
    return uq__errorf(UQ_EINVAL, "uq_encode_slot: dtype = %d is not bf16, "
                                 "fp16 or fp32",
                      (int)dtype);
  if (k == NULL || v == NULL || slot == NULL)
    return uq__errorf(UQ_EINVAL, "uq_encode_slot: %s is NULL",
                      k == NULL ? "k" : v == NULL ? "v" : "slot");
  float stack[2 * UQ__FORMAT_STACK_ELEMS];
  float *buf = stack;
  if (head_dim > UQ__FORMAT_STACK_ELEMS) {
    buf = uq__malloc(2 * (size_t)head_dim * sizeof *buf);
    if (buf == NULL)
      return uq__errorf(UQ_ENOMEM, "uq_encode_slot: no memory for %d floats",
                        2 * head_dim);
  }
  float *kf = buf;
  float *vf = buf + head_dim;
  for (int i = 0; i < head_dim; i++) {
    kf[i] = uq__load_f32(k, dtype, i);
    vf[i] = uq__load_f32(v, dtype, i);
  }
  uq__encode_slot_f32(head_dim, kf, vf, slot);
  if (buf != stack)
    uq__free(buf);
  return 0;
}

static void decode_row(const uint8_t *codes, const uint8_t *scales, int n,
                       float *out) {
  for (int i = 0; i < n; i++) {
    unsigned code = (codes[i / 2] >> ((i & 1) * 4)) & 15u;
    out[i] = fp4_values[code] * uq_ue8m0_value(scales[i / 32]);
  }
}

int uq_decode_slot(int head_dim, const uint8_t *slot, float *k_rot, float *v) {
  uq__error_clear();
  if (head_dim <= 0 || head_dim % 32 != 0)
    return uq__errorf(UQ_EINVAL,
                      "uq_decode_slot: head_dim = %d is not a positive "
                      "multiple of 32",
                      head_dim);
  if (slot == NULL)
    return uq__errorf(UQ_EINVAL, "uq_decode_slot: slot is NULL");
  int d = head_dim;
  if (k_rot != NULL)
    decode_row(slot, slot + d / 2, d, k_rot);
  if (v != NULL)
    decode_row(slot + d / 2 + d / 32, slot + d + d / 32, d, v);
  return 0;
}
