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

#endif
