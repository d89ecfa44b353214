/* The format of FORMAT.md sections 1-4: encoder, decoder tables, rotation,
 * haircut and conversions, checked against vectors derived by hand here,
 * independent models written in this file, and the golden vectors. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/format/golden.h"
#include "lib/format/format.h"
#include "tests/support/testkit.h"
#include "uqjit.h"

/* Sorted levels and the code each one is written as (FORMAT.md 2 and 3.5). */
static const double levels[15] = {-6, -4, -3, -2, -1.5, -1, -0.5, 0,
                                  0.5, 1,  1.5, 2,  3,    4,  6};
static const unsigned level_code[15] = {15, 14, 13, 12, 11, 10, 9, 0,
                                        1,  2,  3,  4,  5,  6,  7};
static const float mids[14] = {-5,    -3.5, -2.5, -1.75, -1.25, -0.75, -0.25,
                               0.25, 0.75, 1.25, 1.75,  2.5,   3.5,   5};
/* Code expected at a midpoint (ties to the lower level), one ulp below and
 * one ulp above it, worked out from the level table by hand. */
static const unsigned code_at_mid[14] = {15, 14, 13, 12, 11, 10, 9,
                                         0,  1,  2,  3,  4,  5,  6};
static const unsigned code_above_mid[14] = {14, 13, 12, 11, 10, 9, 0,
                                            1,  2,  3,  4,  5, 6, 7};

static unsigned code_of(const uint8_t packed[16], int i) {
  return (packed[i / 2] >> ((i & 1) * 4)) & 15u;
}

static float pow2f(int e) { return (float)ldexp(1.0, e); }

static void encode(const float *x, uint8_t *byte, uint8_t packed[16]) {
  *byte = 0xee;
  memset(packed, 0xee, 16);
  uq_encode_group(x, byte, packed);
}

/* ------------------------------------------------------------------ */

static void slot_layout_matches_format_table(void **state) {
  (void)state;
  uq_slot_layout lay;
  assert_int_equal(uq_slot_layout_get(256, &lay), 0);
  assert_int_equal(lay.head_dim, 256);
  assert_int_equal(lay.k_codes, 0);
  assert_int_equal(lay.k_scales, 128);
  assert_int_equal(lay.v_codes, 136);
  assert_int_equal(lay.v_scales, 264);
  assert_int_equal(lay.size, 272);
  assert_int_equal(uq_slot_layout_get(128, &lay), 0);
  assert_int_equal(lay.k_scales, 64);
  assert_int_equal(lay.v_codes, 68);
  assert_int_equal(lay.v_scales, 132);
  assert_int_equal(lay.size, 136);
  assert_int_equal(uq_slot_layout_get(96, &lay), 0);
  assert_int_equal(lay.size, 102);
  assert_int_equal(uq_slot_size(256), 272);
  assert_int_equal(uq_slot_size(128), 136);
  assert_int_equal(uq_slot_size(32), 34);
  const int bad[] = {0, -32, 16, 48, 100};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(uq_slot_layout_get(bad[i], &lay), UQ_EINVAL);
    assert_int_equal(uq_slot_size(bad[i]), 0);
  }
  assert_int_equal(uq_slot_layout_get(256, NULL), UQ_EINVAL);
}

static void fp4_value_table_matches_format(void **state) {
  (void)state;
  const float expect[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6,
                            -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (unsigned c = 0; c < 16; c++) {
    assert_true(tk_f32_bits(uq_fp4_value(c)) == tk_f32_bits(expect[c]));
    assert_true(uq__fp4_values_f64[c] == (double)expect[c]);
  }
  assert_true(signbit(uq_fp4_value(8)));
  assert_false(signbit(uq_fp4_value(0)));
}

static void ue8m0_value_decodes_bytes(void **state) {
  (void)state;
  assert_true(tk_f32_bits(uq_ue8m0_value(0)) == 0u);
  assert_true(tk_f32_bits(uq_ue8m0_value(1)) == 0x00800000u); /* 2^-126 */
  assert_true(uq_ue8m0_value(126) == 0.5f);
  assert_true(uq_ue8m0_value(127) == 1.0f);
  assert_true(uq_ue8m0_value(128) == 2.0f);
  assert_true(tk_f32_bits(uq_ue8m0_value(254)) == 0x7f000000u); /* 2^127 */
  /* 2^128 does not fit fp32: documented to decode to +inf there; the
   * double-precision reference uses the finite 2^128. */
  assert_true(isinf(uq_ue8m0_value(255)) && uq_ue8m0_value(255) > 0);
  assert_true(uq__ue8m0_to_double(255) == 0x1p128);
  assert_true(uq__ue8m0_to_double(0) == 0.0);
  for (int b = 1; b < 255; b++) {
    assert_true((double)uq_ue8m0_value((uint8_t)b) == ldexp(1.0, b - 127));
    assert_true(uq__ue8m0_to_double((uint8_t)b) == ldexp(1.0, b - 127));
  }
}

/* ------------------------------------------------------------------ */
/* The encoder, by hand. */

static void encode_ties_at_midpoints_go_to_lower_level(void **state) {
  (void)state;
  const int exps[] = {0, -3, 5, -100, 60};
  for (size_t ei = 0; ei < sizeof exps / sizeof exps[0]; ei++) {
    float s = pow2f(exps[ei]);
    float x[32] = {0};
    /* amax 6s: s_raw = 0.936 s has mantissa 1.872 >= sqrt(2) -> e = E. */
    x[0] = 6.0f * s;
    for (int m = 0; m < 14; m++)
      x[1 + m] = mids[m] * s;
    x[15] = -6.0f * s;
    x[16] = -0.0f;
    uint8_t byte, packed[16];
    encode(x, &byte, packed);
    assert_int_equal(byte, 127 + exps[ei]);
    assert_int_equal(code_of(packed, 0), 7);
    for (int m = 0; m < 14; m++) {
      if (code_of(packed, 1 + m) != code_at_mid[m])
        fail_msg("scale 2^%d midpoint %g: code %u, want %u", exps[ei],
                 (double)mids[m], code_of(packed, 1 + m), code_at_mid[m]);
    }
    assert_int_equal(code_of(packed, 15), 15);
    for (int i = 16; i < 32; i++)
      assert_int_equal(code_of(packed, i), 0);
  }
}

static void encode_one_ulp_around_midpoints(void **state) {
  (void)state;
  const int exps[] = {0, -7, 20};
  for (size_t ei = 0; ei < sizeof exps / sizeof exps[0]; ei++) {
    float s = pow2f(exps[ei]);
    float x[32] = {0};
    x[0] = 6.0f * s;
    for (int m = 0; m < 14; m++) {
      x[1 + m] = nextafterf(mids[m] * s, -INFINITY);
      x[15 + m] = nextafterf(mids[m] * s, INFINITY);
    }
    uint8_t byte, packed[16];
    encode(x, &byte, packed);
    assert_int_equal(byte, 127 + exps[ei]);
    for (int m = 0; m < 14; m++) {
      if (code_of(packed, 1 + m) != code_at_mid[m])
        fail_msg("midpoint %g minus 1 ulp: code %u, want %u", (double)mids[m],
                 code_of(packed, 1 + m), code_at_mid[m]);
      if (code_of(packed, 15 + m) != code_above_mid[m])
        fail_msg("midpoint %g plus 1 ulp: code %u, want %u", (double)mids[m],
                 code_of(packed, 15 + m), code_above_mid[m]);
    }
  }
}

static void encode_saturates_beyond_five(void **state) {
  (void)state;
  float x[32] = {0};
  /* amax 8: s_raw = 1.248 (mantissa below sqrt(2)) -> e = 0, y = x. */
  x[0] = 8.0f;
  x[1] = 5.5f;
  x[2] = -5.5f;
  x[3] = -8.0f;
  x[4] = nextafterf(5.0f, INFINITY);
  x[5] = 5.0f;
  x[6] = 7.99f;
  x[7] = nextafterf(-5.0f, -INFINITY);
  x[8] = -5.0f;
  uint8_t byte, packed[16];
  encode(x, &byte, packed);
  assert_int_equal(byte, 127);
  const unsigned want[9] = {7, 7, 15, 15, 7, 6, 7, 15, 15};
  for (int i = 0; i < 9; i++)
    assert_int_equal(code_of(packed, i), want[i]);
}

static void encode_zero_groups_give_zero_byte(void **state) {
  (void)state;
  float x[32];
  uint8_t byte, packed[16];
  const uint8_t zero[16] = {0};
  for (int variant = 0; variant < 3; variant++) {
    for (int i = 0; i < 32; i++)
      x[i] = variant == 0 ? 0.0f : variant == 1 ? -0.0f
                                                : (i & 1 ? -0.0f : 0.0f);
    encode(x, &byte, packed);
    assert_int_equal(byte, 0);
    assert_memory_equal(packed, zero, 16);
  }
  /* The smallest subnormal times 0.156 rounds to s_raw = 0. */
  memset(x, 0, sizeof x);
  x[5] = -tk_f32_from_bits(1);
  encode(x, &byte, packed);
  assert_int_equal(byte, 0);
  assert_memory_equal(packed, zero, 16);
}

static void encode_nonfinite_anywhere_gives_zero_group(void **state) {
  (void)state;
  const uint32_t bad[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f800000u,
                          0xff800000u};
  const int pos[] = {0, 1, 15, 16, 30, 31};
  const uint8_t zero[16] = {0};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    for (size_t p = 0; p < sizeof pos / sizeof pos[0]; p++) {
      float x[32];
      for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) * 0.37f;
      x[pos[p]] = tk_f32_from_bits(bad[b]);
      uint8_t byte, packed[16];
      encode(x, &byte, packed);
      if (byte != 0 || memcmp(packed, zero, 16) != 0)
        fail_msg("non-finite %08x at %d: byte %d", bad[b], pos[p], byte);
    }
  }
}

static void encode_scale_exponent_clamps_at_both_ends(void **state) {
  (void)state;
  uint8_t byte, packed[16];
  float x[32] = {0};
  /* amax 2^-126: s_raw = 0.156 * 2^-126 is subnormal -> e = -126, s = 2^-126. */
  x[0] = pow2f(-126);
  x[1] = -pow2f(-127);          /* y = -0.5 -> code 9 */
  x[2] = 3.0f * pow2f(-127);    /* y = 1.5 -> code 3 */
  x[3] = tk_f32_from_bits(1);   /* y = 2^-23 -> code 0 */
  x[4] = -tk_f32_from_bits(1);  /* y = -2^-23 -> +0 (code 0, never 8) */
  encode(x, &byte, packed);
  assert_int_equal(byte, 1);
  const unsigned want_tiny[5] = {2, 9, 3, 0, 0};
  for (int i = 0; i < 5; i++)
    assert_int_equal(code_of(packed, i), want_tiny[i]);

  /* A subnormal s_raw from subnormal inputs: 4 * 2^-149 * 0.156 rounds to
   * 2^-149 > 0 -> e = -126 (byte 1); y = 2^-21 -> code 0. */
  memset(x, 0, sizeof x);
  x[7] = 4.0f * tk_f32_from_bits(1);
  encode(x, &byte, packed);
  assert_int_equal(byte, 1);
  assert_int_equal(code_of(packed, 7), 0);

  /* The largest finite input: s_raw ~ 1.248 * 2^125 -> e = 125, byte 252.
   * e = 127 (byte 254) is unreachable from finite fp32 input. */
  memset(x, 0, sizeof x);
  x[0] = FLT_MAX;                /* y = 8 - 2^-21 -> 7 */
  x[1] = -FLT_MAX;               /* -> 15 */
  x[2] = 2.5f * pow2f(125);      /* tie -> 2 -> code 4 */
  x[3] = pow2f(100);             /* y = 2^-25 -> 0 */
  x[4] = -1.75f * pow2f(126);    /* y = -3.5, tie -> -4 -> code 14 */
  encode(x, &byte, packed);
  assert_int_equal(byte, 252);
  const unsigned want_huge[5] = {7, 15, 4, 0, 14};
  for (int i = 0; i < 5; i++)
    assert_int_equal(code_of(packed, i), want_huge[i]);

  /* The clamp itself, on s_raw values the encoder cannot produce. */
  assert_int_equal(uq__scale_exponent(FLT_MAX), 127);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x7f3504f4u)), 127);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x7f3504f3u)), 127);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x7eb504f4u)), 127);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x7eb504f3u)), 126);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(1)), -126);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x007fffffu)), -126);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x00800000u)), -126);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x00b504f3u)), -126);
  assert_int_equal(uq__scale_exponent(tk_f32_from_bits(0x00b504f4u)), -125);
}

static void encode_sqrt2_mantissa_boundary(void **state) {
  (void)state;
  /* e = k + (mantissa bits >= 0x3504F4): sqrt(2) = 1.0110101000001001111001
   * 1001100..., so 0x3504F3 is just below and 0x3504F4 just above. */
  for (int k = -120; k <= 120; k += 30) {
    uint32_t expf = (uint32_t)(k + 127) << 23;
    assert_int_equal(uq__scale_exponent(tk_f32_from_bits(expf | 0x3504f3u)), k);
    assert_int_equal(uq__scale_exponent(tk_f32_from_bits(expf | 0x3504f4u)),
                     k + 1);
    assert_int_equal(uq__scale_exponent(tk_f32_from_bits(expf)), k);
    assert_int_equal(uq__scale_exponent(tk_f32_from_bits(expf | 0x7fffffu)),
                     k + 1);
  }
  /* Through the encoder: scan amax upward from 9.0 (0.156 * 9.0655 ~ sqrt 2)
   * for the last s_raw below the boundary and the first at or above it. */
  float below = 0, above = 0;
  for (float a = 9.0f; a < 9.2f; a = nextafterf(a, INFINITY)) {
    uint32_t sb = tk_f32_bits(0.156f * a);
    assert_int_equal(sb >> 23, 127);
    if ((sb & 0x7fffff) < 0x3504f4)
      below = a;
    else {
      above = a;
      break;
    }
  }
  assert_true(below > 0 && above > 0);
  float x[32] = {0};
  uint8_t byte, packed[16];
  x[3] = below;
  encode(x, &byte, packed);
  assert_int_equal(byte, 127); /* s = 1: y = 9.06 saturates */
  assert_int_equal(code_of(packed, 3), 7);
  x[3] = above;
  encode(x, &byte, packed);
  assert_int_equal(byte, 128); /* s = 2: y = 4.53 -> 4 (code 6) */
  assert_int_equal(code_of(packed, 3), 6);
}

/* Independent check of one encoded group: the byte from real log2 (via a
 * comparison with sqrt(2) * 2^k in double), every code the nearest level
 * with ties to the lower one, and never -0. */
static void check_group_independently(const float *x, uint8_t byte,
                                      const uint8_t *packed) {
  double amax = 0;
  int finite = 1;
  for (int i = 0; i < 32; i++) {
    if (!isfinite(x[i]))
      finite = 0;
    else if (fabs(x[i]) > amax)
      amax = fabs(x[i]);
  }
  float s_raw = 0.156f * (float)amax;
  if (!finite || s_raw == 0.0f) {
    assert_int_equal(byte, 0);
    for (int i = 0; i < 32; i++)
      assert_int_equal(code_of(packed, i), 0);
    return;
  }
  int k;
  double f = frexp((double)s_raw, &k); /* s_raw = f 2^k, f in [0.5, 1) */
  int e = (k - 1) + (2.0 * f >= sqrt(2.0) ? 1 : 0);
  if (e < -126)
    e = -126;
  assert_int_equal(byte, e + 127);
  for (int i = 0; i < 32; i++) {
    double y = ldexp((double)x[i], -e);
    unsigned c = code_of(packed, i);
    assert_int_not_equal(c, 8);
    int li = -1;
    for (int l = 0; l < 15; l++)
      if (level_code[l] == c)
        li = l;
    assert_true(li >= 0);
    double dist = fabs(y - levels[li]);
    for (int l = 0; l < 15; l++) {
      double dl = fabs(y - levels[l]);
      if (dl < dist || (dl == dist && l < li))
        fail_msg("x=%a y=%a: code %u (level %g), level %g is nearer/lower",
                 (double)x[i], y, c, levels[li], levels[l]);
    }
  }
}

static void encode_random_groups_pick_nearest_level(void **state) {
  (void)state;
  tk_rng rng;
  tk_rng_seed(&rng, 0x5eed0001);
  for (int g = 0; g < 6000; g++) {
    float x[32];
    double sigma = ldexp(1.0, (int)tk_rng_below(&rng, 80) - 40);
    for (int i = 0; i < 32; i++)
      x[i] = (float)(sigma * tk_rng_normal(&rng));
    if (g % 3 == 0) /* an outlier */
      x[tk_rng_below(&rng, 32)] *= 50.0f;
    if (g % 5 == 0) /* tiny negatives must become +0, not -0 */
      for (int i = 0; i < 32; i += 4)
        x[i] = -(float)(sigma * 1e-4 * tk_rng_uniform(&rng));
    uint8_t byte, packed[16];
    encode(x, &byte, packed);
    check_group_independently(x, byte, packed);
  }
}

static void encode_packs_even_element_in_low_nibble(void **state) {
  (void)state;
  float x[32] = {0};
  x[0] = 6.0f;  /* code 7 */
  x[1] = -0.5f; /* code 9 */
  x[2] = 1.0f;  /* code 2 */
  x[3] = -6.0f; /* code 15 */
  x[4] = -1.5f; /* code 11 */
  x[5] = 3.0f;  /* code 5 */
  x[30] = 0.5f; /* code 1 */
  x[31] = -4.0f; /* code 14 */
  uint8_t byte, packed[16];
  encode(x, &byte, packed);
  assert_int_equal(byte, 127);
  assert_int_equal(packed[0], 0x97);
  assert_int_equal(packed[1], 0xf2);
  assert_int_equal(packed[2], 0x5b);
  assert_int_equal(packed[15], 0xe1);
  for (int j = 3; j < 15; j++)
    assert_int_equal(packed[j], 0);
}

/* ------------------------------------------------------------------ */
/* Golden vectors. */

static golden_value *golden;

static int load_golden(void **state) {
  (void)state;
  golden = golden_load_testdata("format_golden.json");
  return golden == NULL ? -1 : 0;
}

static int free_golden(void **state) {
  (void)state;
  golden_free(golden);
  golden = NULL;
  return 0;
}

static int read_floats(const golden_value *arr, float *out, size_t n) {
  if (golden_count(arr) != n)
    return -1;
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    if (golden_hex_u32(golden_at(arr, i), &u) != 0)
      return -1;
    out[i] = tk_f32_from_bits(u);
  }
  return 0;
}

static void golden_groups_match_bit_for_bit(void **state) {
  (void)state;
  const golden_value *groups = golden_get(golden, "groups");
  assert_true(golden_count(groups) > 100);
  int bad = 0;
  for (size_t gi = 0; gi < golden_count(groups); gi++) {
    const golden_value *g = golden_at(groups, gi);
    const char *name = golden_string(golden_get(g, "name"));
    float x[32];
    long long want_byte;
    uint8_t want_packed[16];
    assert_int_equal(read_floats(golden_get(g, "x_bits"), x, 32), 0);
    assert_int_equal(golden_int(golden_get(g, "scale_byte"), &want_byte), 0);
    assert_int_equal(
        golden_hex_bytes(golden_get(g, "packed_hex"), want_packed, 16), 0);
    const golden_value *codes = golden_get(g, "codes");
    assert_int_equal(golden_count(codes), 32);
    uint8_t byte, packed[16];
    encode(x, &byte, packed);
    int ok = byte == want_byte && memcmp(packed, want_packed, 16) == 0;
    for (int i = 0; i < 32; i++) {
      long long c;
      assert_int_equal(golden_int(golden_at(codes, (size_t)i), &c), 0);
      /* The vector's own codes and packed_hex must agree, too. */
      assert_int_equal(code_of(want_packed, i), c);
      if (code_of(packed, i) != c)
        ok = 0;
    }
    if (!ok) {
      fprintf(stderr, "golden group %s: byte %d (want %lld)\n",
              name ? name : "?", byte, want_byte);
      bad++;
    }
    /* The independent model of this file agrees as well. */
    check_group_independently(x, byte, packed);
  }
  assert_int_equal(bad, 0);
}

static void golden_slots_match_bit_for_bit(void **state) {
  (void)state;
  const golden_value *slots = golden_get(golden, "slots");
  assert_true(golden_count(slots) > 0);
  int bad = 0;
  for (size_t si = 0; si < golden_count(slots); si++) {
    const golden_value *s = golden_at(slots, si);
    float k[256], v[256];
    uint8_t want[272], got[272];
    assert_int_equal(read_floats(golden_get(s, "k_bits"), k, 256), 0);
    assert_int_equal(read_floats(golden_get(s, "v_bits"), v, 256), 0);
    assert_int_equal(golden_hex_bytes(golden_get(s, "slot_hex"), want, 272),
                     0);
    memset(got, 0xee, sizeof got);
    assert_int_equal(uq_encode_slot(256, UQ_DTYPE_FP32, k, v, got), 0);
    if (memcmp(got, want, 272) != 0) {
      fprintf(stderr, "golden slot %zu (fp32 rows) differs\n", si);
      bad++;
    }
    /* Where the inputs are bf16-representable (all but one slot, whose K
     * has an fp32 outlier), bf16 rows give the same slot. */
    uint16_t kb[256], vb[256];
    int exact = 1;
    for (int i = 0; i < 256; i++) {
      kb[i] = tk_f32_to_bf16(k[i]);
      vb[i] = tk_f32_to_bf16(v[i]);
      if (tk_bf16_to_f32(kb[i]) != k[i] || tk_bf16_to_f32(vb[i]) != v[i])
        exact = 0;
    }
    if (!exact)
      continue;
    memset(got, 0xee, sizeof got);
    assert_int_equal(uq_encode_slot(256, UQ_DTYPE_BF16, kb, vb, got), 0);
    if (memcmp(got, want, 272) != 0) {
      fprintf(stderr, "golden slot %zu (bf16 rows) differs\n", si);
      bad++;
    }
  }
  assert_int_equal(bad, 0);
}

static void golden_haircut_matches_bit_for_bit(void **state) {
  (void)state;
  const golden_value *hc = golden_get(golden, "haircut");
  assert_true(golden_count(hc) > 100);
  int bad = 0;
  for (size_t i = 0; i < golden_count(hc); i++) {
    const golden_value *h = golden_at(hc, i);
    uint32_t xb, yb;
    assert_int_equal(golden_hex_u32(golden_get(h, "x_bits"), &xb), 0);
    assert_int_equal(golden_hex_u32(golden_get(h, "y_bits"), &yb), 0);
    float y = uq_haircut_e4m3(tk_f32_from_bits(xb));
    float want = tk_f32_from_bits(yb);
    int ok = isnan(want) ? isnan(y) : tk_f32_bits(y) == yb;
    if (!ok) {
      fprintf(stderr, "golden haircut %08x: got %08x want %08x\n", xb,
              tk_f32_bits(y), yb);
      bad++;
    }
  }
  assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------------ */
/* The E4M3 haircut against a model that enumerates all E4M3FN values. */

static double e4m3_values[127]; /* codes 0x00..0x7e (0x7f is NaN) */

static void build_e4m3_table(void) {
  for (int c = 0; c < 127; c++) {
    int e = c >> 3, m = c & 7;
    e4m3_values[c] = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
  }
}

static double e4m3_model(double x) {
  if (isnan(x))
    return x;
  double a = fabs(x);
  double r;
  if (a >= 448.0) {
    r = 448.0;
  } else {
    int c = 0;
    while (c + 1 < 127 && e4m3_values[c + 1] <= a)
      c++;
    double lo = e4m3_values[c], hi = e4m3_values[c + 1];
    double dlo = a - lo, dhi = hi - a;
    if (dlo < dhi)
      r = lo;
    else if (dhi < dlo)
      r = hi;
    else /* tie: the even mantissa (code LSB 0) */
      r = (c & 1) == 0 ? lo : hi;
  }
  return signbit(x) ? -r : r;
}

static void haircut_all_bf16_patterns_match_model(void **state) {
  (void)state;
  build_e4m3_table();
  assert_true(e4m3_values[126] == 448.0);
  assert_true(e4m3_values[1] == ldexp(1.0, -9));
  assert_true(e4m3_values[8] == ldexp(1.0, -6));
  for (uint32_t h = 0; h < 65536; h++) {
    float x = tk_bf16_to_f32((uint16_t)h);
    float y = uq_haircut_e4m3(x);
    double want = e4m3_model((double)x);
    if (isnan(want)) {
      assert_true(isnan(y));
      continue;
    }
    if (tk_f32_bits(y) != tk_f32_bits((float)want))
      fail_msg("bf16 %04x (%a): haircut %a, model %a", h, (double)x,
               (double)y, want);
  }
}

static void haircut_ties_saturation_and_nan(void **state) {
  (void)state;
  const struct {
    float x, y;
  } cases[] = {
      {1.0625f, 1.0f},       /* tie 1 | 1.125 -> even 1.0 */
      {1.1875f, 1.25f},      /* tie 1.125 | 1.25 -> even 1.25 */
      {-1.1875f, -1.25f},
      {0x1p-10f, 0.0f},      /* tie 0 | 2^-9 -> 0 */
      {0x3p-10f, 0x1p-8f},   /* tie 2^-9 | 2^-8 -> even 2^-8 */
      {0x5p-10f, 0x2p-9f},   /* tie 2*2^-9 | 3*2^-9 -> even 2^-8 */
      {nextafterf(0x1p-10f, 1.0f), 0x1p-9f},
      {432.0f, 448.0f},      /* tie 416 | 448 -> even 448 */
      {nextafterf(432.0f, 0.0f), 416.0f},
      {240.0f, 240.0f},
      {248.0f, 256.0f},      /* tie 240 | 256 -> 256 */
      {448.0f, 448.0f},
      {449.0f, 448.0f},
      {464.0f, 448.0f},
      {1e30f, 448.0f},
      {-1e30f, -448.0f},
      {INFINITY, 448.0f},
      {-INFINITY, -448.0f},
      {-0.0f, -0.0f},
      {-0x1p-11f, -0.0f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float y = uq_haircut_e4m3(cases[i].x);
    if (tk_f32_bits(y) != tk_f32_bits(cases[i].y))
      fail_msg("haircut(%a) = %a, want %a", (double)cases[i].x, (double)y,
               (double)cases[i].y);
  }
  assert_true(isnan(uq_haircut_e4m3(NAN)));
  assert_true(isnan(uq_haircut_e4m3(tk_f32_from_bits(0xffc00001u))));
  /* fp32 inputs between bf16 values: random bits against the model. */
  build_e4m3_table();
  tk_rng rng;
  tk_rng_seed(&rng, 77);
  for (int i = 0; i < 20000; i++) {
    uint32_t u = tk_rng_u32(&rng);
    u = (u & 0x807fffffu) | ((uint32_t)(110 + tk_rng_below(&rng, 30)) << 23);
    float x = tk_f32_from_bits(u);
    assert_true(tk_f32_bits(uq_haircut_e4m3(x)) ==
                tk_f32_bits((float)e4m3_model(x)));
  }
}

/* ------------------------------------------------------------------ */
/* Hadamard. */

static void fwht_matches_explicit_matrix_product(void **state) {
  (void)state;
  tk_rng rng;
  tk_rng_seed(&rng, 3);
  for (int n = 32; n <= 512; n *= 2) {
    float *x = malloc((size_t)n * sizeof *x);
    float *y = malloc((size_t)n * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    tk_fill_normal_f32(&rng, x, (size_t)n, 1.0);
    memcpy(y, x, (size_t)n * sizeof *x);
    assert_int_equal(uq_fwht(y, n), 0);
    double norm = 0;
    for (int j = 0; j < n; j++)
      norm += (double)x[j] * x[j];
    norm = sqrt(norm);
    for (int i = 0; i < n; i++) {
      double r = 0;
      for (int j = 0; j < n; j++)
        r += (__builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * x[j];
      r /= sqrt((double)n);
      if (fabs(y[i] - r) > 1e-6 * norm)
        fail_msg("n=%d i=%d: fwht %g, H x %g", n, i, (double)y[i], r);
    }
    free(x);
    free(y);
  }
}

static void fwht_columns_are_orthonormal_hadamard(void **state) {
  (void)state;
  for (int n = 32; n <= 512; n *= 2) {
    float *h = calloc((size_t)n * n, sizeof *h); /* column j at h + j*n */
    assert_non_null(h);
    const float c = (float)(1.0 / sqrt((double)n));
    for (int j = 0; j < n; j++) {
      h[(size_t)j * n + j] = 1.0f;
      assert_int_equal(uq_fwht(h + (size_t)j * n, n), 0);
      for (int i = 0; i < n; i++) {
        float want = __builtin_popcount((unsigned)(i & j)) & 1 ? -c : c;
        assert_true(h[(size_t)j * n + i] == want);
      }
    }
    if (n <= 128) {
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
          double dot = 0;
          for (int i = 0; i < n; i++)
            dot += (double)h[(size_t)a * n + i] * h[(size_t)b * n + i];
          assert_true(fabs(dot - (a == b ? 1.0 : 0.0)) < 1e-6);
        }
    }
    free(h);
  }
}

static void fwht_is_bit_exact_to_the_canonical_butterflies(void **state) {
  (void)state;
  tk_rng rng;
  tk_rng_seed(&rng, 4);
  for (int n = 1; n <= 512; n *= 2) {
    for (int rep = 0; rep < 20; rep++) {
      float x[512], y[512];
      tk_fill_normal_f32(&rng, x, (size_t)n, ldexp(1.0, rep - 10));
      memcpy(y, x, sizeof x);
      for (int h = 1; h < n; h *= 2)
        for (int i = 0; i < n; i += 2 * h)
          for (int j = i; j < i + h; j++) {
            float a = x[j], b = x[j + h];
            x[j] = a + b;
            x[j + h] = a - b;
          }
      float c = (float)(1.0 / sqrt((double)n));
      for (int i = 0; i < n; i++)
        x[i] = x[i] * c;
      assert_int_equal(uq_fwht(y, n), 0);
      assert_memory_equal(x, y, (size_t)n * sizeof(float));
    }
  }
}

static void fwht_refuses_non_power_of_two(void **state) {
  (void)state;
  float x[96] = {1, 2, 3};
  float copy[96];
  memcpy(copy, x, sizeof x);
  const int bad[] = {0, -1, -32, 3, 6, 48, 96};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(uq_fwht(x, bad[i]), UQ_EINVAL);
    assert_true(uq_last_error()[0] != '\0');
    assert_memory_equal(x, copy, sizeof x);
  }
  assert_int_equal(uq_fwht(NULL, 32), UQ_EINVAL);
  assert_int_equal(uq_fwht(x, 1), 0);
  assert_true(x[0] == 1.0f);
}

/* ------------------------------------------------------------------ */
/* Conversions. */

static void half_to_float_matches_model_for_all_patterns(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = uq_bf16_to_float((uint16_t)h), b = tk_bf16_to_f32((uint16_t)h);
    assert_true(isnan(b) ? isnan(a) : tk_f32_bits(a) == tk_f32_bits(b));
    a = uq_fp16_to_float((uint16_t)h);
    b = tk_fp16_to_f32((uint16_t)h);
    assert_true(isnan(b) ? isnan(a) : tk_f32_bits(a) == tk_f32_bits(b));
    /* Round trip of every non-NaN pattern. */
    if (!isnan(b))
      assert_int_equal(uq_float_to_fp16(b), h);
    if (!isnan(a = uq_bf16_to_float((uint16_t)h)))
      assert_int_equal(uq_float_to_bf16(a), h);
  }
}

static void float_to_half_rounds_to_nearest_even(void **state) {
  (void)state;
  /* Hand cases. */
  assert_int_equal(uq_float_to_bf16(tk_f32_from_bits(0x3f808000u)), 0x3f80);
  assert_int_equal(uq_float_to_bf16(tk_f32_from_bits(0x3f818000u)), 0x3f82);
  assert_int_equal(uq_float_to_bf16(tk_f32_from_bits(0x3f808001u)), 0x3f81);
  assert_int_equal(uq_float_to_bf16(FLT_MAX), 0x7f80);
  assert_int_equal(uq_float_to_bf16(-INFINITY), 0xff80);
  assert_true((uq_float_to_bf16(NAN) & 0x7fff) > 0x7f80);
  assert_true((uq_float_to_bf16(tk_f32_from_bits(0x7f800001u)) & 0x7fff) >
              0x7f80);
  assert_int_equal(uq_float_to_fp16(65504.0f), 0x7bff);
  assert_int_equal(uq_float_to_fp16(65519.0f), 0x7bff);
  assert_int_equal(uq_float_to_fp16(65520.0f), 0x7c00);
  assert_int_equal(uq_float_to_fp16(-1e10f), 0xfc00);
  assert_int_equal(uq_float_to_fp16(0x1p-25f), 0x0000);  /* tie -> 0 */
  assert_int_equal(uq_float_to_fp16(0x3p-25f), 0x0002);  /* tie -> even */
  assert_int_equal(uq_float_to_fp16(0x1p-24f), 0x0001);
  assert_int_equal(uq_float_to_fp16(0x1p-14f), 0x0400);
  assert_int_equal(uq_float_to_fp16(nextafterf(0x1p-14f, 0)), 0x0400);
  assert_int_equal(uq_float_to_fp16(-0.0f), 0x8000);
  assert_int_equal(uq_float_to_fp16(1.0f + 0x1p-11f), 0x3c00);
  assert_int_equal(uq_float_to_fp16(1.0f + 0x3p-11f), 0x3c02);
  assert_true((uq_float_to_fp16(NAN) & 0x7fff) > 0x7c00);
  /* Random patterns over the whole fp32 range against the model. */
  tk_rng rng;
  tk_rng_seed(&rng, 5);
  for (int i = 0; i < 100000; i++) {
    uint32_t u = tk_rng_u32(&rng);
    if (i & 1) /* concentrate on the fp16 range */
      u = (u & 0x807fffffu) | ((uint32_t)(95 + tk_rng_below(&rng, 50)) << 23);
    float f = tk_f32_from_bits(u);
    if (isnan(f))
      continue;
    assert_int_equal(uq_float_to_bf16(f), tk_f32_to_bf16(f));
    assert_int_equal(uq_float_to_fp16(f), tk_f32_to_fp16(f));
  }
}

static void double_to_half_rounds_once(void **state) {
  (void)state;
  /* 1 + 2^-8 + 2^-30 is above the bf16 tie: rounding through fp32 first
   * would land on the tie and go to even (down). */
  assert_int_equal(uq__double_to_bf16(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);
  assert_int_equal(uq__double_to_fp16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  assert_int_equal(uq__double_to_fp16(65520.0), 0x7c00);
  assert_int_equal(uq__double_to_bf16(-0.0), 0x8000);
  tk_rng rng;
  tk_rng_seed(&rng, 6);
  for (int i = 0; i < 50000; i++) {
    double x = tk_rng_normal(&rng) * ldexp(1.0, (int)tk_rng_below(&rng, 60) - 30);
    assert_int_equal(uq__double_to_bf16(x), tk_f64_to_bf16(x));
    assert_int_equal(uq__double_to_fp16(x), tk_f64_to_fp16(x));
  }
}

/* ------------------------------------------------------------------ */
/* Slots. */

static void expect_decoded_row(const uint8_t *codes, const uint8_t *scales,
                               int d, const float *got) {
  for (int i = 0; i < d; i++) {
    unsigned c = (codes[i / 2] >> ((i % 2) * 4)) & 15u;
    uint8_t b = scales[i / 32];
    double s = b == 0 ? 0.0 : ldexp(1.0, b - 127);
    const double value[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6,
                              -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    float want = (float)(value[c] * s);
    if (tk_f32_bits(got[i]) != tk_f32_bits(want))
      fail_msg("element %d: decoded %a want %a", i, (double)got[i],
               (double)want);
  }
}

static void slot_encode_decode_round_trip(void **state) {
  (void)state;
  tk_rng rng;
  tk_rng_seed(&rng, 8);
  const uq_dtype dtypes[3] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16, UQ_DTYPE_FP32};
  for (int d = 32; d <= 512; d *= 2) {
    uq_slot_layout lay;
    assert_int_equal(uq_slot_layout_get(d, &lay), 0);
    for (int t = 0; t < 3; t++) {
      for (int rep = 0; rep < 4; rep++) {
        float kf[512], vf[512], kdec[512], vdec[512];
        uint16_t kh[512], vh[512];
        uint8_t slot[600], want[600];
        double sigma = rep == 3 ? 1e-3 : 1.0 + rep;
        for (int i = 0; i < d; i++) {
          double a = sigma * tk_rng_normal(&rng);
          double b = sigma * tk_rng_normal(&rng);
          if (dtypes[t] == UQ_DTYPE_BF16) {
            kh[i] = tk_f64_to_bf16(a);
            vh[i] = tk_f64_to_bf16(b);
            kf[i] = tk_bf16_to_f32(kh[i]);
            vf[i] = tk_bf16_to_f32(vh[i]);
          } else if (dtypes[t] == UQ_DTYPE_FP16) {
            kh[i] = tk_f64_to_fp16(a);
            vh[i] = tk_f64_to_fp16(b);
            kf[i] = tk_fp16_to_f32(kh[i]);
            vf[i] = tk_fp16_to_f32(vh[i]);
          } else {
            kf[i] = (float)a;
            vf[i] = (float)b;
          }
        }
        const void *kin = dtypes[t] == UQ_DTYPE_FP32 ? (const void *)kf : kh;
        const void *vin = dtypes[t] == UQ_DTYPE_FP32 ? (const void *)vf : vh;
        memset(slot, 0xa5, sizeof slot);
        assert_int_equal(uq_encode_slot(d, dtypes[t], kin, vin, slot), 0);
        /* Nothing past the slot is written. */
        for (size_t i = lay.size; i < sizeof slot; i++)
          assert_int_equal(slot[i], 0xa5);
        /* Layout: K (rotated) groups then V groups, as uq_encode_group
         * writes them. */
        float krot[512];
        memcpy(krot, kf, (size_t)d * sizeof(float));
        for (int h = 1; h < d; h *= 2)
          for (int i = 0; i < d; i += 2 * h)
            for (int j = i; j < i + h; j++) {
              float a = krot[j], b = krot[j + h];
              krot[j] = a + b;
              krot[j + h] = a - b;
            }
        float c = (float)(1.0 / sqrt((double)d));
        for (int i = 0; i < d; i++)
          krot[i] = krot[i] * c;
        for (int g = 0; g < d / 32; g++) {
          uq_encode_group(krot + 32 * g, want + lay.k_scales + g,
                          want + lay.k_codes + 16 * g);
          uq_encode_group(vf + 32 * g, want + lay.v_scales + g,
                          want + lay.v_codes + 16 * g);
        }
        assert_memory_equal(slot, want, lay.size);
        /* Decode equals value(code) * 2^(byte-127), element by element. */
        memset(kdec, 0, sizeof kdec);
        memset(vdec, 0, sizeof vdec);
        assert_int_equal(uq_decode_slot(d, slot, kdec, vdec), 0);
        expect_decoded_row(slot + lay.k_codes, slot + lay.k_scales, d, kdec);
        expect_decoded_row(slot + lay.v_codes, slot + lay.v_scales, d, vdec);
        /* And it is a 4-bit approximation of the rotated K and of V. */
        double kref[512], vref[512];
        for (int i = 0; i < d; i++) {
          kref[i] = krot[i];
          vref[i] = vf[i];
        }
        assert_true(tk_rel_l2_f32(kdec, kref, (size_t)d) < 0.2);
        assert_true(tk_rel_l2_f32(vdec, vref, (size_t)d) < 0.2);
        /* Either output may be skipped. */
        float only_v[512];
        assert_int_equal(uq_decode_slot(d, slot, NULL, only_v), 0);
        assert_memory_equal(only_v, vdec, (size_t)d * sizeof(float));
      }
    }
  }
}

static void slot_encode_refuses_bad_arguments(void **state) {
  (void)state;
  float k[256] = {1}, v[256] = {2};
  uint8_t slot[300], copy[300];
  memset(slot, 0x3c, sizeof slot);
  memcpy(copy, slot, sizeof slot);
  const int bad_d[] = {0, 16, 48, 96, -64};
  for (size_t i = 0; i < sizeof bad_d / sizeof bad_d[0]; i++)
    assert_int_equal(uq_encode_slot(bad_d[i], UQ_DTYPE_FP32, k, v, slot),
                     UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, (uq_dtype)0, k, v, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, (uq_dtype)4, k, v, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, UQ_DTYPE_FP32, NULL, v, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, UQ_DTYPE_FP32, k, NULL, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, UQ_DTYPE_FP32, k, v, NULL), UQ_EINVAL);
  assert_memory_equal(slot, copy, sizeof slot);
  float out[256];
  assert_int_equal(uq_decode_slot(48, slot, out, out), UQ_EINVAL);
  assert_int_equal(uq_decode_slot(0, slot, out, out), UQ_EINVAL);
  assert_int_equal(uq_decode_slot(64, NULL, out, out), UQ_EINVAL);
  assert_true(strstr(uq_last_error(), "slot") != NULL);
}

static void padded_slot_resolves_and_refuses(void **state) {
  (void)state;
  int32_t r = -1;
  assert_int_equal(uq__resolve_padded_slot(256, 0, &r), 0);
  assert_int_equal(r, 272);
  assert_int_equal(uq__resolve_padded_slot(64, 0, &r), 0); /* 68 */
  assert_int_equal(r, 68);
  assert_int_equal(uq__resolve_padded_slot(32, 0, &r), 0); /* 34 -> 36 */
  assert_int_equal(r, 36);
  assert_int_equal(uq__resolve_padded_slot(256, 288, &r), 0);
  assert_int_equal(r, 288);
  assert_int_equal(uq__resolve_padded_slot(256, 268, &r), UQ_EINVAL);
  assert_int_equal(uq__resolve_padded_slot(256, 274, &r), UQ_EINVAL);
  assert_int_equal(uq__resolve_padded_slot(256, -4, &r), UQ_EINVAL);
  assert_int_equal(uq__resolve_padded_slot(48, 0, &r), UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(slot_layout_matches_format_table),
      cmocka_unit_test(fp4_value_table_matches_format),
      cmocka_unit_test(ue8m0_value_decodes_bytes),
      cmocka_unit_test(encode_ties_at_midpoints_go_to_lower_level),
      cmocka_unit_test(encode_one_ulp_around_midpoints),
      cmocka_unit_test(encode_saturates_beyond_five),
      cmocka_unit_test(encode_zero_groups_give_zero_byte),
      cmocka_unit_test(encode_nonfinite_anywhere_gives_zero_group),
      cmocka_unit_test(encode_scale_exponent_clamps_at_both_ends),
      cmocka_unit_test(encode_sqrt2_mantissa_boundary),
      cmocka_unit_test(encode_random_groups_pick_nearest_level),
      cmocka_unit_test(encode_packs_even_element_in_low_nibble),
      cmocka_unit_test(haircut_all_bf16_patterns_match_model),
      cmocka_unit_test(haircut_ties_saturation_and_nan),
      cmocka_unit_test(fwht_matches_explicit_matrix_product),
      cmocka_unit_test(fwht_columns_are_orthonormal_hadamard),
      cmocka_unit_test(fwht_is_bit_exact_to_the_canonical_butterflies),
      cmocka_unit_test(fwht_refuses_non_power_of_two),
      cmocka_unit_test(half_to_float_matches_model_for_all_patterns),
      cmocka_unit_test(float_to_half_rounds_to_nearest_even),
      cmocka_unit_test(double_to_half_rounds_once),
      cmocka_unit_test(slot_encode_decode_round_trip),
      cmocka_unit_test(slot_encode_refuses_bad_arguments),
      cmocka_unit_test(padded_slot_resolves_and_refuses),
  };
  const struct CMUnitTest golden_tests[] = {
      cmocka_unit_test(golden_groups_match_bit_for_bit),
      cmocka_unit_test(golden_slots_match_bit_for_bit),
      cmocka_unit_test(golden_haircut_matches_bit_for_bit),
  };
  int failed = cmocka_run_group_tests_name("format", tests, NULL, NULL);
  failed += cmocka_run_group_tests_name("format_golden", golden_tests,
                                        load_golden, free_golden);
  return failed != 0;
}
