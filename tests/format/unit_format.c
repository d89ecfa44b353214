/* The format of FORMAT.md sections 1-2: the slot layout, the decoder
 * tables and the group encoder, checked against vectors derived by hand
 * here, independent models written in this file, and the golden vectors.
 * The haircut, rotation and conversions: unit_format_numerics.c; whole
 * slots: unit_format_slot.c. */
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
  synth_rng rng;
  synth_rng_seed(&rng, 0x5eed0001);
  for (int g = 0; g < 6000; g++) {
    float x[32];
    double sigma = ldexp(1.0, (int)synth_rng_below(&rng, 80) - 40);
    for (int i = 0; i < 32; i++)
      x[i] = (float)(sigma * synth_rng_normal(&rng));
    if (g % 3 == 0) /* an outlier */
      x[synth_rng_below(&rng, 32)] *= 50.0f;
    if (g % 5 == 0) /* tiny negatives must become +0, not -0 */
      for (int i = 0; i < 32; i += 4)
        x[i] = -(float)(sigma * 1e-4 * synth_rng_uniform(&rng));
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
      if (synth_bf16_to_f32(kb[i]) != k[i] || synth_bf16_to_f32(vb[i]) != v[i])
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
