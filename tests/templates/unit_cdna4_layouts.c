/* The CDNA4 layouts of templates/gfx950/cdna4_layouts.hip and the shared
 * CDNA ones of templates/cdna/cdna_layouts.hip (compiled here as host C,
 * the same text the gfx950-emu layer runs): each layout against
 * hand-worked examples (one-hot operands revealing which lane/register
 * lands where, a scale doubling one block, the transpose read of a numbered
 * tile, the swizzle patterns of the ISA guide), the conversions against
 * FORMAT.md's FP4 value table and an independent E4M3 nearest search, and
 * the emulated MFMAs on random data against a direct matrix product whose
 * operand packing is written here from the forward statements of the
 * layouts (lane, register -> element), not from the header's inverse maps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/templates/template_host.h"

#include "templates/cdna/cdna_layouts.hip"
#include "templates/gfx950/cdna4_layouts.hip"

/* FORMAT.md section 2: the E2M1 codes' values. */
static const double fp4_value[16] = {0,  0.5,  1,  1.5,  2,  3,  4,  6,
                                     -0, -0.5, -1, -1.5, -2, -3, -4, -6};

static uint64_t rng = 0x243f6a8885a308d3ull;
static uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 11);
}

/* The operands of one scaled MFMA as register files of all 64 lanes. */
typedef struct {
  uq_u32 a[64 * 4], sa[64], b[64 * 8], sb[64];
} qk_regs;

static void qk_init(qk_regs *r) {
  memset(r, 0, sizeof *r);
  for (int l = 0; l < 64; l++)
    r->sa[l] = r->sb[l] = 0x7f7f7f7fu;
}

static void qk_run(const qk_regs *r, int sel_a, int sel_b, float d[64][4]) {
  for (int l = 0; l < 64; l++)
    for (int g = 0; g < 4; g++)
      d[l][g] = uq_cdna4_mfma_scale_f4f8_elem(r->a, r->sa, sel_a, r->b, r->sb, sel_b,
                                              uq_cdna_d_row(l, g), uq_cdna_d_col(l), 0.0f);
}

/* Exactly one result register is `want`, at (lane, reg); all others 0. */
static void expect_single(float d[64][4], int lane, int reg, float want) {
  for (int l = 0; l < 64; l++)
    for (int g = 0; g < 4; g++) {
      if (l == lane && g == reg)
        assert_true(d[l][g] == want);
      else
        assert_true(d[l][g] == 0.0f);
    }
}

/* Worked by hand from the layout statements (cdna4_layouts.hip):
 * FP4 A (i, k): lane 16 (k >> 5) + i, nibble k & 31 -> register
 * (k & 31) >> 3, shift 4 ((k & 31) & 7); FP8 B (k, j): lane
 * 16 ((k >> 4) & 3) + j, byte (k & 15) + 16 (k >> 6) -> register byte >> 2,
 * shift 8 (byte & 3); D (i, j): lane j + 16 (i >> 2), register i & 3. */
static void mfma_scale_one_hot_lands_in_the_documented_lane(void **state) {
  (void)state;
  static const struct {
    int i, k, j, a_lane, a_reg, a_shift, b_lane, b_reg, b_shift, d_lane, d_reg;
  } cases[] = {
      {3, 70, 5, 35, 0, 24, 5, 5, 16, 5, 3},
      {12, 127, 9, 60, 3, 28, 57, 7, 24, 57, 0},
      {0, 0, 15, 0, 0, 0, 15, 0, 0, 15, 0},
      {7, 33, 0, 23, 0, 4, 32, 0, 8, 16, 3},
      {15, 64, 14, 47, 0, 0, 14, 4, 0, 62, 3},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    qk_regs r;
    qk_init(&r);
    r.a[4 * cases[c].a_lane + cases[c].a_reg] = 2u << cases[c].a_shift;     /* E2M1 1.0 */
    r.b[8 * cases[c].b_lane + cases[c].b_reg] = 0x38u << cases[c].b_shift; /* E4M3 1.0 */
    float d[64][4];
    qk_run(&r, 0, 0, d);
    expect_single(d, cases[c].d_lane, cases[c].d_reg, 1.0f);
  }
}

/* A row 2 all 1.0, B column 4 all 1.0: D[2][4] = 128 (lane 4, reg 2).
 * Scale byte 128 for row 2, block 1 (lane 16 + 2 = 18) doubles that block
 * only: 32 + 64 + 32 + 32 = 160; op_sel picks the byte; B's scale of
 * column 4, block 3 (lane 52) at 126 halves block 3; 255 (NaN) poisons. */
static void mfma_scale_bytes_scale_one_block_of_one_row(void **state) {
  (void)state;
  qk_regs r;
  qk_init(&r);
  for (int g = 0; g < 4; g++)
    for (int w = 0; w < 4; w++)
      r.a[4 * (16 * g + 2) + w] = 0x22222222u;
  for (int g = 0; g < 4; g++)
    for (int w = 0; w < 8; w++)
      r.b[8 * (16 * g + 4) + w] = 0x38383838u;
  float d[64][4];
  qk_run(&r, 0, 0, d);
  expect_single(d, 4, 2, 128.0f);

  r.sa[18] = 0x7f7f807fu; /* byte 1 = 128 */
  qk_run(&r, 0, 0, d);
  expect_single(d, 4, 2, 128.0f);
  qk_run(&r, 1, 0, d);
  expect_single(d, 4, 2, 160.0f);
  r.sb[52] = 0x7e7f7f7fu; /* byte 3 = 126 */
  qk_run(&r, 1, 3, d);
  expect_single(d, 4, 2, 144.0f);
  r.sa[18] = 0x7f7fff7fu;
  qk_run(&r, 1, 0, d);
  assert_true(isnan(d[4][2]));
  assert_true(d[4][1] == 0.0f); /* row 1 */
}

/* bf16 16x16x16: A (i, k) in lane 16 (k >> 2) + i, element k & 3; B the
 * same with the column. A (6, 9) = 1 -> lane 38, element 1 (bits 31:16 of
 * word 0); B (9, 11) = 2 -> lane 43, element 1; D (6, 11) -> lane 27,
 * register 2. */
static void mfma_bf16_one_hot_lands_in_the_documented_lane(void **state) {
  (void)state;
  uq_u32 a[128] = {0}, b[128] = {0};
  a[2 * 38] = 0x3f800000u;
  b[2 * 43] = 0x40000000u;
  for (int l = 0; l < 64; l++)
    for (int g = 0; g < 4; g++) {
      float v = uq_cdna_mfma_bf16_elem(a, b, uq_cdna_d_row(l, g), uq_cdna_d_col(l), 0.5f);
      assert_true(v == ((l == 27 && g == 2) ? 2.5f : 0.5f));
    }
  /* Element 2 (k = 4 g + 2) sits in the low half of word 1. */
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  a[2 * 17 + 1] = 0x3f80u;      /* A (1, 6) */
  b[2 * 16 + 1] = 0x4040u;      /* B (6, 0) = 3 */
  assert_true(uq_cdna_mfma_bf16_elem(a, b, 1, 0, 0.0f) == 3.0f);
  assert_int_equal(uq_cdna_d_lane(1, 0), 0);
  assert_int_equal(uq_cdna_d_reg(1), 1);
}

/* ds_read_b64_tr_b16 on lanes whose 8 bytes hold 4 L .. 4 L + 3. */
static void tr16_read_transposes_within_16_lane_groups(void **state) {
  (void)state;
  static const struct {
    int lane;
    int out[4];
  } cases[] = {
      {0, {0, 16, 32, 48}},       {5, {5, 21, 37, 53}},
      {15, {15, 31, 47, 63}},     {21, {69, 85, 101, 117}},
      {63, {207, 223, 239, 255}}, {40, {136, 152, 168, 184}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int e = 0; e < 4; e++) {
      int src = uq_cdna4_tr16_src_lane(cases[c].lane, e);
      assert_int_equal(4 * src + uq_cdna4_tr16_src_elem(cases[c].lane), cases[c].out[e]);
    }
  /* A permutation of the 256 elements, inside each 16-lane group. */
  int seen[256] = {0};
  for (int l = 0; l < 64; l++)
    for (int e = 0; e < 4; e++) {
      int src = uq_cdna4_tr16_src_lane(l, e);
      assert_int_equal(src >> 4, l >> 4);
      seen[4 * src + uq_cdna4_tr16_src_elem(l)]++;
    }
  for (int i = 0; i < 256; i++)
    assert_int_equal(seen[i], 1);
}

/* ds_swizzle_b32 bit-mask mode: SWAPX16 (0x401F) and the XOR 1/2/4
 * patterns, plus a broadcast (and 0, or 7): never across 32-lane halves. */
static void swizzle_bitmask_patterns_stay_within_halves(void **state) {
  (void)state;
  assert_int_equal(uq_cdna_swizzle_xor_offset(16), 0x401f);
  static const struct {
    int offset, lane, src;
  } cases[] = {
      {0x401f, 3, 19},  {0x401f, 19, 3},  {0x401f, 35, 51}, {0x401f, 63, 47},
      {0x041f, 5, 4},   {0x041f, 32, 33}, {0x081f, 5, 7},   {0x081f, 62, 60},
      {0x101f, 5, 1},   {0x101f, 44, 40}, {0x00e0, 0, 7},   {0x00e0, 31, 7},
      {0x00e0, 32, 39}, {0x00e0, 50, 39}, {0x001f, 17, 17},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    assert_int_equal(uq_cdna_swizzle_src(cases[c].lane, cases[c].offset), cases[c].src);
  for (int m = 1; m <= 16; m *= 2)
    for (int l = 0; l < 64; l++)
      assert_int_equal(uq_cdna_swizzle_src(l, uq_cdna_swizzle_xor_offset(m)), l ^ m);
}

static double bf16_value(uq_u32 h) { return (double)uq_bits_f32((h & 0xffffu) << 16); }

/* Every FP4 code at scales 2^-3, 1, 2^10 and the extremes 2^-126, 2^125:
 * bf16 value = table x scale exactly, -0 kept; the byte select and the nibble placement; only the
 * scale's exponent field counts; an inf scale poisons. */
static void cvt_fp4_to_bf16_matches_the_value_table(void **state) {
  (void)state;
  static const int exps[] = {-3, 0, 10, -126, 125};
  for (size_t s = 0; s < sizeof exps / sizeof exps[0]; s++) {
    float scale = ldexpf(1.0f, exps[s]);
    for (uq_u32 c = 0; c < 16; c++) {
      uq_u32 src = (c << 4 | c) << 16; /* byte 2 */
      uq_u32 r = uq_cdna4_cvt_scalef32_pk_bf16_fp4(src, scale, 2);
      double want = ldexp(fp4_value[c], exps[s]);
      assert_true(bf16_value(r) == want);
      assert_true(bf16_value(r >> 16) == want);
      assert_int_equal((r >> 15) & 1u, c >> 3);
      assert_int_equal(r >> 31, c >> 3);
    }
  }
  assert_int_equal(uq_cdna4_cvt_scalef32_pk_bf16_fp4(0x000000a2u, 1.0f, 0), 0xbf803f80u);
  assert_int_equal(uq_cdna4_cvt_scalef32_pk_bf16_fp4(0x71000000u, 1.0f, 3), 0x40c03f00u);
  assert_int_equal(uq_cdna4_cvt_scalef32_pk_bf16_fp4(0x71000000u, 1.0f, 0), 0u);
  assert_int_equal(uq_cdna4_cvt_scalef32_pk_bf16_fp4(0x000000a2u, 1.75f, 0), 0xbf803f80u);
  assert_int_equal(uq_cdna4_cvt_scalef32_pk_bf16_fp4(0x00000007u, 0.125f, 0), 0x3f40u);
  /* Exponent field 0 (a subnormal or zero scale) is 2^-127: 6 x 2^-127. */
  assert_true(bf16_value(uq_cdna4_cvt_scalef32_pk_bf16_fp4(7u, 0.0f, 0)) == ldexp(6.0, -127));
  uq_u32 inf = uq_cdna4_cvt_scalef32_pk_bf16_fp4(0u, uq_bits_f32(0x7f800000u), 0);
  assert_true(isnan(bf16_value(inf)) && isnan(bf16_value(inf >> 16)));
  /* 4 x 2^126 = 2^128 is past the bf16 range. */
  assert_int_equal(uq_cdna4_cvt_scalef32_pk_bf16_fp4(0xe6u, 0x1p126f, 0), 0xff807f80u);
}

/* E4M3FN decode, written here from the OCP definition by enumeration. */
static double e4m3_ref(unsigned byte) {
  unsigned e = (byte >> 3) & 15u, m = byte & 7u;
  double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, (int)e - 10);
  return (byte & 0x80u) ? -v : v;
}

/* Nearest E4M3 value by search over all finite codes, ties to the even
 * code (even mantissa), saturating at 448. */
static unsigned e4m3_nearest(double x) {
  unsigned sign = signbit(x) ? 0x80u : 0u;
  double a = fabs(x);
  if (a >= 448.0)
    return sign | 0x7eu;
  unsigned best = 0;
  double bd = INFINITY;
  for (unsigned c = 0; c <= 0x7eu; c++) {
    double d = fabs(e4m3_ref(c) - a);
    if (d < bd || (d == bd && (c & 1u) == 0u)) {
      bd = d;
      best = c;
    }
  }
  return sign | best;
}

static void cvt_pk_fp8_rounds_to_nearest_even(void **state) {
  (void)state;
  static const struct {
    float x;
    unsigned byte;
  } cases[] = {
      {1.0f, 0x38},     {1.0625f, 0x38},  {1.1875f, 0x3a},  {448.0f, 0x7e},
      {-448.0f, 0xfe},  {432.0f, 0x7e},   {424.0f, 0x7d},   {416.0f, 0x7d},
      {240.0f, 0x77},   {0x1p-9f, 0x01},  {0x1p-10f, 0x00}, {0x3p-10f, 0x02},
      {0x1p-6f, 0x08},  {0.0f, 0x00},     {-0.0f, 0x80},    {0x1.ep-7f, 0x08},
      {500.0f, 0x7e},   {-1e30f, 0xfe},   {0x1p-11f, 0x00}, {-0x1.1p-10f, 0x81},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    assert_int_equal(uq_cdna4_f32_to_e4m3(cases[c].x), cases[c].byte);
  }
  assert_int_equal(uq_cdna4_cvt_pk_fp8_f32(1.0f, -2.0f), 0xc038u);
  assert_int_equal(uq_cdna4_f32_to_e4m3(uq_bits_f32(0x7fc00000u)) & 0x7fu, 0x7fu);
  /* Every finite code round-trips; random values match the search. */
  for (unsigned c = 0; c < 256; c++) {
    if ((c & 0x7fu) == 0x7fu)
      continue;
    assert_int_equal(uq_cdna4_f32_to_e4m3((float)e4m3_ref(c)), c);
    assert_true((double)uq_cdna4_e4m3_value(c) == e4m3_ref(c));
  }
  for (int t = 0; t < 20000; t++) {
    float x = ldexpf((float)(rnd() & 0xffffu) / 65536.0f, (int)(rnd() % 22) - 12);
    if (rnd() & 1u)
      x = -x;
    assert_int_equal(uq_cdna4_f32_to_e4m3(x), e4m3_nearest(x));
  }
}

/* ---- random MFMAs against a direct product ------------------------------ */

/* Pack logical A (16 x 128 E2M1 codes) and B (128 x 16 E4M3 bytes) by
 * walking registers: A lane 16 g + i nibble e <- A[i][32 g + e]; B lane
 * 16 g + j byte s <- B[16 g + (s & 15) + 64 (s >> 4)][j]; scale lane
 * 16 kb + i byte sel <- the scale of (row i, block kb). */
static void qk_pack(const unsigned A[16][128], const unsigned B[128][16],
                    const unsigned SA[16][4], const unsigned SB[16][4], int sel,
                    qk_regs *r) {
  memset(r, 0, sizeof *r);
  for (int l = 0; l < 64; l++) {
    int g = l >> 4, i = l & 15;
    for (int e = 0; e < 32; e++)
      r->a[4 * l + e / 8] |= (uq_u32)A[i][32 * g + e] << (4 * (e % 8));
    for (int s = 0; s < 32; s++)
      r->b[8 * l + s / 4] |= (uq_u32)B[16 * g + (s & 15) + 64 * (s >> 4)][i] << (8 * (s % 4));
    r->sa[l] = 0x01010101u & ~(0xffu << (8 * sel));
    r->sa[l] |= (uq_u32)SA[i][g] << (8 * sel);
    r->sb[l] = (uq_u32)SB[i][g] << (8 * sel);
  }
}

static void mfma_scale_random_equals_the_direct_product(void **state) {
  (void)state;
  for (int trial = 0; trial < 40; trial++) {
    unsigned A[16][128], B[128][16], SA[16][4], SB[16][4];
    float C[16][16];
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 128; k++) {
        A[i][k] = rnd() & 15u;
        unsigned b;
        do
          b = rnd() & 255u;
        while ((b & 0x7fu) == 0x7fu);
        B[k][i] = b;
      }
    for (int i = 0; i < 16; i++)
      for (int kb = 0; kb < 4; kb++) {
        SA[i][kb] = 112u + rnd() % 32u;
        SB[i][kb] = trial & 1 ? 127u : 117u + rnd() % 20u;
      }
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++)
        C[i][j] = (float)((int)(rnd() % 2001u) - 1000) / 8.0f;
    int sel = trial % 4;
    qk_regs r;
    qk_pack(A, B, SA, SB, sel, &r);
    for (int l = 0; l < 64; l++)
      for (int g = 0; g < 4; g++) {
        /* D lane L register g is row 4 (L >> 4) + g, column L & 15. */
        int i = 4 * (l >> 4) + g, j = l & 15;
        float got = uq_cdna4_mfma_scale_f4f8_elem(r.a, r.sa, sel, r.b, r.sb, sel, i, j, C[i][j]);
        float want = C[i][j];
        for (int kb = 0; kb < 4; kb++) {
          double s = 0;
          for (int k = 32 * kb; k < 32 * kb + 32; k++)
            s += fp4_value[A[i][k]] * e4m3_ref(B[k][j]);
          want += (float)ldexp(s, (int)SA[i][kb] + (int)SB[j][kb] - 254);
        }
        assert_true(got == want);
      }
  }
}

static uq_u32 bf16_of(double v) {
  uq_u32 b = uq_f32_bits((float)v);
  return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

static void mfma_bf16_random_equals_the_direct_product(void **state) {
  (void)state;
  for (int trial = 0; trial < 40; trial++) {
    uq_u32 A[16][16], B[16][16];
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 16; k++) {
        A[i][k] = bf16_of(((double)(rnd() % 20001u) - 10000.0) / 997.0);
        B[k][i] = bf16_of((double)(rnd() % 10001u) / 10000.0);
      }
    /* Lane 16 g + i element e <- A[i][4 g + e] (B: B[4 g + e][i]). */
    uq_u32 a[128] = {0}, b[128] = {0};
    for (int l = 0; l < 64; l++)
      for (int e = 0; e < 4; e++) {
        int g = l >> 4, i = l & 15;
        a[2 * l + e / 2] |= A[i][4 * g + e] << (16 * (e % 2));
        b[2 * l + e / 2] |= B[4 * g + e][i] << (16 * (e % 2));
      }
    for (int l = 0; l < 64; l++)
      for (int g = 0; g < 4; g++) {
        int i = 4 * (l >> 4) + g, j = l & 15;
        double s = 0.0;
        for (int k = 0; k < 16; k++)
          s += bf16_value(A[i][k]) * bf16_value(B[k][j]);
        assert_true(uq_cdna_mfma_bf16_elem(a, b, i, j, 0.25f) == (float)(0.25 + s));
      }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mfma_scale_one_hot_lands_in_the_documented_lane),
      cmocka_unit_test(mfma_scale_bytes_scale_one_block_of_one_row),
      cmocka_unit_test(mfma_bf16_one_hot_lands_in_the_documented_lane),
      cmocka_unit_test(tr16_read_transposes_within_16_lane_groups),
      cmocka_unit_test(swizzle_bitmask_patterns_stay_within_halves),
      cmocka_unit_test(cvt_fp4_to_bf16_matches_the_value_table),
      cmocka_unit_test(cvt_pk_fp8_rounds_to_nearest_even),
      cmocka_unit_test(mfma_scale_random_equals_the_direct_product),
      cmocka_unit_test(mfma_bf16_random_equals_the_direct_product),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
