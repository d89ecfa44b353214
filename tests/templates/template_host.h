/* What a kernel template needs from its prelude to compile as host C, so
 * that host tests can include a template's pure helpers (lane maps,
 * layouts, conversions) and check them against independent models. */
#ifndef UQ_TESTS_TEMPLATE_HOST_H
#define UQ_TESTS_TEMPLATE_HOST_H

#include <stdint.h>
#include <string.h>

typedef unsigned char uq_u8;
typedef unsigned short uq_u16;
typedef uint32_t uq_u32;

#define UQ_DEV static inline __attribute__((unused))

UQ_DEV uq_u32 uq_f32_bits(float x) {
  uq_u32 u;
  memcpy(&u, &x, sizeof u);
  return u;
}
UQ_DEV float uq_bits_f32(uq_u32 u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* PTX prmt.b32, default mode: selector nibble n (low 16 bits) picks byte
 * (nibble & 7) of the 8 bytes {y, x} (x = bytes 0..3); with the nibble's
 * bit 3 set, that byte's sign bit replicated. */
UQ_DEV uq_u32 uq_prmt(uq_u32 x, uq_u32 y, uq_u32 s) {
  uint64_t v = ((uint64_t)y << 32) | x;
  uq_u32 r = 0;
  for (int n = 0; n < 4; n++) {
    uq_u32 sel = (s >> (4 * n)) & 15u;
    uq_u32 byte = (uq_u32)(v >> (8 * (sel & 7u))) & 0xffu;
    if (sel & 8u)
      byte = (byte & 0x80u) ? 0xffu : 0u;
    r |= byte << (8 * n);
  }
  return r;
}

#endif
