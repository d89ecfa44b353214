/* Internal helpers of the UltraQuant format (FORMAT.md sections 1-4),
 * shared by the CPU reference, the store path and the launch paths. The
 * public entry points are declared in uqjit.h and defined in format.c. */
#ifndef UQ_FORMAT_H
#define UQ_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uqjit.h"

/* The fp32 constant of FORMAT.md section 3 step 1. */
#define UQ__SCALE_FACTOR 0.156f

/* The FP4 E2M1 values of uq_fp4_value in double, indexed by code (0..15);
 * code 8 is -0. */
extern const double uq__fp4_values_f64[16];

/* UE8M0 byte -> 2^(byte-127) in double (byte 255 -> 2^128, finite here);
 * byte 0 -> 0. */
double uq__ue8m0_to_double(uint8_t byte);

/* Exponent e of FORMAT.md section 3 step 3 for a positive finite s_raw:
 * computed on the fp32 bits, clamped to [-126, 127]. */
int uq__scale_exponent(float s_raw);

/* Encodes n values (n a positive multiple of 32) group by group: n/2 code
 * bytes to `codes` and n/32 UE8M0 bytes to `scales`. */
void uq__encode_row(const float *x, int n, uint8_t *codes, uint8_t *scales);

/* Encodes one slot from fp32 rows; `k` is rotated in place (it is the
 * caller's scratch). head_dim must be a power of two >= 32. Never fails. */
void uq__encode_slot_f32(int head_dim, float *k, const float *v,
                         uint8_t *slot);

/* The canonical fp32 FWHT of uq_fwht without checks (n a power of two). */
void uq__fwht_f32(float *x, int n);

/* Bytes per element of a row dtype (bf16, fp16, fp32); 0 for anything else. */
size_t uq__dtype_size(int dtype);
/* Element `idx` of a bf16/fp16/fp32 array as fp32 (dtype must be valid). */
float uq__load_f32(const void *base, int dtype, int64_t idx);
/* Rounds a double once (to nearest even) to bf16 or fp16 bits. */
uint16_t uq__double_to_bf16(double x);
uint16_t uq__double_to_fp16(double x);

/* 1 when n is a power of two (n >= 1). */
int uq__is_pow2(int64_t n);

/* Resolves a shape's padded_slot for head_dim (a positive multiple of 32):
 * 0 -> slot size rounded up to a multiple of 4; otherwise it must be >= the
 * slot size and a multiple of 4. Returns 0 and *resolved, or UQ_EINVAL with
 * the detail recorded (uq__errorf). */
int uq__resolve_padded_slot(int head_dim, int padded_slot, int32_t *resolved);

static inline uint32_t uq__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float uq__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#endif
