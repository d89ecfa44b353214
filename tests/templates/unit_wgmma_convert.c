/* The warpgroup layer's conversions (part of test_wgmma_maps,
 * wgmma_host.h): K's FP4 -> E4M3 words, V's two words -> eight bf16 pairs,
 * V's per-token scales and limit (raise, rescale, unscale, the fold over
 * chunks), and K's scale bits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tests/templates/wgmma_host.h"

/* ---- 1. K: FP4 -> E4M3 ---- */

/* Byte i of *even is code 2 i, byte i of *odd code 2 i + 1, each the
 * E4M3 of value(code) * 2^-6 exactly, with the table's sign (+0 for code
 * 0, -0 only for code 8). */
static void check_e4m3_word(uq_u32 w) {
  uq_u32 even = 0xdeadbeefu, odd = 0xdeadbeefu;
  uq_wg_fp4x8_e4m3(w, &even, &odd);
  for (int i = 0; i < 4; i++)
    for (int par = 0; par < 2; par++) {
      uq_u32 byte = ((par ? odd : even) >> (8 * i)) & 0xffu;
      uq_u32 code = nib(w, 2 * i + par);
      double v = e4m3_value(byte);
      assert_false(isnan(v));
      assert_true(v == ldexp(fp4_value[code], -6));
      assert_int_equal(!!signbit(v), !!signbit(fp4_value[code]));
    }
}

void fp4x8_to_e4m3_is_value_times_2_pow_minus_6_even_odd_split(void **st) {
  (void)st;
  for (int pos = 0; pos < 8; pos++)
    for (uq_u32 c = 0; c < 16; c++) {
      /* The code alone, among zeros and among all-ones (the neighbours'
       * bits must not leak into its byte), and among random codes. */
      check_e4m3_word(c << (4 * pos));
      check_e4m3_word((0xffffffffu & ~(15u << (4 * pos))) | (c << (4 * pos)));
      for (int rep = 0; rep < 16; rep++)
        check_e4m3_word((rnd32() & ~(15u << (4 * pos))) | (c << (4 * pos)));
    }
  for (int rep = 0; rep < 20000; rep++)
    check_e4m3_word(rnd32());
  /* Code 0 is the E4M3 +0 byte itself, code 8 its -0. */
  uq_u32 even, odd;
  uq_wg_fp4x8_e4m3(0x00000000u, &even, &odd);
  assert_int_equal(even, 0u);
  assert_int_equal(odd, 0u);
  uq_wg_fp4x8_e4m3(0x88888888u, &even, &odd);
  assert_int_equal(even, 0x80808080u);
  assert_int_equal(odd, 0x80808080u);
  assert_true((double)UQ_WG_K_UNSCALE == 64.0);
}

/* ---- 2. V: two words -> eight bf16 pairs ---- */

static void check_bf16_pairs(uq_u32 x, uq_u32 y) {
  uq_u32 r[8];
  memset(r, 0xa5, sizeof r);
  uq_wg_fp4x8x2_bf16s(x, y, r);
  for (int n = 0; n < 8; n++)
    for (int half = 0; half < 2; half++) {
      uq_u32 code = nib(half ? y : x, n);
      double v = bf16_value((r[n] >> (16 * half)) & 0xffffu);
      assert_false(isnan(v));
      assert_true(v == ldexp(fp4_value[code], -126));
      assert_int_equal(!!signbit(v), !!signbit(fp4_value[code]));
    }
}

void fp4x8x2_to_bf16_pairs_code_n_of_x_low_of_y_high_times_2_pow_minus_126(void **st) {
  (void)st;
  for (int pos = 0; pos < 8; pos++)
    for (uq_u32 c = 0; c < 16; c++) {
      uq_u32 m = 15u << (4 * pos), c2 = 15u - c;
      check_bf16_pairs(c << (4 * pos), c2 << (4 * pos));
      check_bf16_pairs(~m | (c << (4 * pos)), ~m | (c2 << (4 * pos)));
      for (int rep = 0; rep < 16; rep++)
        check_bf16_pairs((rnd32() & ~m) | (c << (4 * pos)), (rnd32() & ~m) | (c2 << (4 * pos)));
    }
  for (int rep = 0; rep < 20000; rep++)
    check_bf16_pairs(rnd32(), rnd32());
}

/* bf16 multiply whose exact product the caller expects to be a bf16:
 * checks that it is, and returns its bits. */
static uq_u32 bf16_mul_exact(uq_u32 a, uq_u32 b) {
  double v = bf16_value(a) * bf16_value(b);
  float f = (float)v;
  uq_u32 bits;
  memcpy(&bits, &f, sizeof bits);
  assert_true((double)f == v);
  assert_int_equal(bits & 0xffffu, 0);
  return bits >> 16;
}

/* The kernel's V scale fold: the factor pairs of uq_wg_vscale_lo2 (token
 * a low, token b high) under a group limit L times the halves of
 * uq_wg_fp4x8x2_bf16s give each token's codes times its own group scale
 * 2^(byte - 127), divided by 2^(L - 128): exactly for every byte down to
 * 120 below the limit (lower ones may round in bf16's subnormal range, by
 * less than 2^-133), every factor finite. Byte 0 (the zero-group
 * sentinel) only ever comes with all-zero codes (FORMAT.md 2, 3), so it
 * is checked with codes 0 and 8 only: zero either way. */
static uq_u32 bf16_mul(uq_u32 a, uq_u32 b) {
  float f = (float)(bf16_value(a) * bf16_value(b)); /* exact in fp32 here */
  uq_u32 bits;
  memcpy(&bits, &f, sizeof bits);
  /* round to nearest even, as mul.rn.bf16x2 */
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}
void v_scale_pairs_scale_each_token_by_its_own_byte(void **st) {
  (void)st;
  for (int rep = 0; rep < 8000; rep++) {
    uq_u32 lim = UQ_WG_VLIM_MIN + rnd() % (UQ_WG_VLIM_MAX - UQ_WG_VLIM_MIN + 1u);
    if (rep < 2)
      lim = rep ? UQ_WG_VLIM_MAX : UQ_WG_VLIM_MIN;
    uq_u32 x = rnd32(), y = rnd32();
    uq_u32 ba = rnd() % (lim + 1u), bb = rnd() % (lim + 1u);
    if (rep % 3 == 0) { /* bytes near the limit, where served data lives */
      ba = lim - rnd() % 24u;
      bb = lim - rnd() % 24u;
    }
    if (ba == 0)
      x &= 0x88888888u;
    if (bb == 0)
      y &= 0x88888888u;
    uq_u32 r[8];
    uq_wg_fp4x8x2_bf16s(x, y, r);
    uq_u32 lo = uq_wg_vscale_lo2(ba, bb, lim);
    for (int n = 0; n < 8; n++)
      for (int half = 0; half < 2; half++) {
        uq_u32 s = 16u * (uq_u32)half;
        uq_u32 f = (lo >> s) & 0xffffu;
        assert_true(isfinite(bf16_value(f)));
        uq_u32 byte = half ? bb : ba;
        uq_u32 v = byte + 120u >= lim ? bf16_mul_exact((r[n] >> s) & 0xffffu, f)
                                     : bf16_mul((r[n] >> s) & 0xffffu, f);
        double scale = byte ? ldexp(1.0, (int)byte - 127 - ((int)lim - 128)) : 0.0;
        double want = fp4_value[nib(half ? y : x, n)] * scale;
        if (byte + 120u >= lim)
          assert_true(bf16_value(v) == want);
        else
          assert_true(fabs(bf16_value(v) - want) <= ldexp(1.0, -133));
      }
  }
}

/* A group's limit only rises, to the largest byte seen (never past 254);
 * the accumulators' rescale is 2^(old - new) and the output's unscale
 * 2^(L - 128), as fp32 bits; the two-at-once constants are the limit and
 * the exponent offset in both halves. */
void v_limit_raise_rescale_and_unscale(void **st) {
  (void)st;
  for (uq_u32 old = UQ_WG_VLIM_MIN; old <= UQ_WG_VLIM_MAX; old++)
    for (uq_u32 a = 0; a < 256u; a += 3u) {
      uq_u32 b = (a * 37u + old) & 255u;
      uq_u32 m = a > b ? a : b;
      uq_u32 want = m > UQ_WG_VLIM_MAX ? UQ_WG_VLIM_MAX : m;
      if (want < old)
        want = old;
      uq_u32 lim = uq_wg_vlim_raise(old, a, b);
      assert_int_equal(lim, want);
      uq_u32 bits = uq_wg_vlim_rescale_bits(old, lim);
      float f;
      memcpy(&f, &bits, sizeof f);
      assert_true((double)f == ldexp(1.0, (int)old - (int)lim));
    }
  for (uq_u32 lim = UQ_WG_VLIM_MIN; lim <= UQ_WG_VLIM_MAX; lim++) {
    uq_u32 bits = uq_wg_vlim_unscale_bits(lim);
    float f;
    memcpy(&f, &bits, sizeof f);
    assert_true((double)f == ldexp(1.0, (int)lim - 128));
    assert_int_equal(uq_wg_vlim_x2(lim), lim | lim << 16);
    assert_int_equal(uq_wg_vlim_offset_x2(lim), uq_wg_vscale_lo2(0, 0, lim));
  }
}

/* A group's output across chunks, folded as the kernel folds it: each
 * chunk's products under the limit of that chunk (raised first when a
 * byte passes it, the accumulator rescaled), times 2^(L - 128) at the
 * end, equals the sum of P times the dequantized values, whatever the
 * order in which large bytes arrive. */
void v_limit_fold_over_chunks_gives_the_scaled_sum(void **st) {
  (void)st;
  for (int trial = 0; trial < 200; trial++) {
    uq_u32 lim = UQ_WG_VLIM_MIN;
    double acc = 0.0, want = 0.0;
    for (int chunk = 0; chunk < 16; chunk++) {
      uq_u32 bytes[64], codes[64];
      uq_u32 top = UQ_WG_VLIM_MIN;
      for (int t = 0; t < 64; t++) {
        /* served-like bytes around 127, with rare large ones */
        bytes[t] = 110u + rnd() % 24u + (rnd() % 97u == 0 ? rnd() % 100u : 0u);
        codes[t] = rnd() & 15u;
        top = uq_wg_vlim_raise(top, bytes[t], bytes[t]);
      }
      if (top > lim) {
        uq_u32 bits = uq_wg_vlim_rescale_bits(lim, top);
        float f;
        memcpy(&f, &bits, sizeof f);
        acc *= f;
        lim = top;
      }
      for (int t = 0; t < 64; t++) {
        double p = ldexp(1.0 + (rnd() % 128u) / 128.0, -(int)(rnd() % 8u));
        uq_u32 r[8];
        uq_wg_fp4x8x2_bf16s(codes[t], codes[t], r);
        uq_u32 v = bf16_mul_exact(r[0] & 0xffffu, uq_wg_vscale_lo1(bytes[t], lim));
        acc += p * bf16_value(v);
        want += p * fp4_value[codes[t]] * ldexp(1.0, (int)bytes[t] - 127);
      }
    }
    uq_u32 bits = uq_wg_vlim_unscale_bits(lim);
    float f;
    memcpy(&f, &bits, sizeof f);
    double got = acc * f;
    assert_true(fabs(got - want) <= 1e-12 * fabs(want) + 1e-300);
  }
}

/* K scales: byte j of a word of scale bytes as the fp32 bits of 2^(byte
 * - 127), 0 for byte 0, whatever the other bytes. */
void kscale_bits_give_byte_j_as_fp32_power_of_two(void **st) {
  (void)st;
  for (int j = 0; j < 4; j++)
    for (uq_u32 b = 0; b < 255; b++)
      for (int rep = 0; rep < 8; rep++) {
        uq_u32 w = rep == 0 ? 0u : rep == 1 ? 0xffffffffu : rnd32();
        w = (w & ~(0xffu << (8 * j))) | (b << (8 * j));
        uq_u32 bits = uq_wg_kscale_bits(w, j);
        float f;
        memcpy(&f, &bits, sizeof f);
        assert_true((double)f == (b ? ldexp(1.0, (int)b - 127) : 0.0));
      }
}
