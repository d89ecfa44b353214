/* The CDNA3 layouts of templates/gfx942/cdna3_layouts.hip and the shared
 * CDNA ones of templates/cdna/cdna_layouts.hip (compiled here as host C,
 * the same text the gfx942-emu layer runs), against examples worked from
 * public sources, not from the header:
 *  - register positions printed by AMD's Matrix Instruction Calculator
 *    (github.com/ROCm/amd_matrix_instruction_calculator, commit 2ef9189,
 *    `matrix_calculator.py --architecture cdna3 --instruction <name>
 *    --get-register -A|-B|-D -I i -J j -K k`), each placed as a one-hot
 *    operand that must land in the printed result register;
 *  - the E4M3FNUZ encoding over every byte against its definition (LLVM
 *    APFloat's Float8E4M3FNUZ: bias 8, no infinities, no -0, 0x80 the only
 *    NaN), written here by enumeration, and the conversions: fp32 -> FNUZ
 *    against a nearest search over all finite bytes, FNUZ -> fp32 for every
 *    byte in every position;
 *  - the identity the gfx942 layer relies on: an OCP E4M3 byte read as
 *    FNUZ is half the OCP value (every byte but the NaNs and -0);
 *  - v_perm_b32 on LLVM's constant-folding example;
 *  - the emulated FP8 MFMA on random operands against a direct product
 *    whose packing is written from the calculator's forward formula. */
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
#include "templates/gfx942/cdna3_layouts.hip"

static uint64_t rng = 0x452821e638d01377ull;
static uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 11);
}

/* ---- the FNUZ encoding, by its definition ---- */

/* NaN for 0x80; else (-1)^s x (e == 0 ? m / 8 x 2^-7 : (1 + m / 8) x
 * 2^(e - 8)). */
static double fnuz_ref(unsigned byte) {
  if (byte == 0x80u)
    return NAN;
  unsigned e = (byte >> 3) & 15u, m = byte & 7u;
  double v = e == 0 ? ldexp(m / 8.0, -7) : ldexp(1.0 + m / 8.0, (int)e - 8);
  return (byte & 0x80u) ? -v : v;
}

/* OCP E4M3FN: bias 7, 0x7F / 0xFF NaN. */
static double ocp_ref(unsigned byte) {
  unsigned e = (byte >> 3) & 15u, m = byte & 7u;
  if ((byte & 0x7fu) == 0x7fu)
    return NAN;
  double v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, (int)e - 7);
  return (byte & 0x80u) ? -v : v;
}

static void fnuz_decodes_every_byte_as_defined(void **state) {
  (void)state;
  int nans = 0;
  double largest = 0;
  for (unsigned b = 0; b < 256; b++) {
    double want = fnuz_ref(b);
    float got = uq_cdna3_fnuz_value(b);
    if (isnan(want)) {
      nans++;
      assert_true(isnan(got));
      continue;
    }
    assert_true((double)got == want);
    assert_false(signbit(got) && got == 0.0f); /* no -0 */
    if (fabs(want) > largest)
      largest = fabs(want);
  }
  assert_int_equal(nans, 1);
  assert_true(largest == 240.0);
  /* A few values by hand: 1.0 = 0x40, 0.5 = 0x38, the smallest
   * subnormal 2^-10 = 0x01, the smallest normal 2^-7 = 0x08. */
  assert_true(uq_cdna3_fnuz_value(0x40) == 1.0f);
  assert_true(uq_cdna3_fnuz_value(0x38) == 0.5f);
  assert_true(uq_cdna3_fnuz_value(0xc4) == -1.5f);
  assert_true(uq_cdna3_fnuz_value(0x01) == 0x1p-10f);
  assert_true(uq_cdna3_fnuz_value(0x08) == 0x1p-7f);
  assert_true(uq_cdna3_fnuz_value(0x7f) == 240.0f);
}

/* The layer's query mapping: the OCP haircut byte of q is the FNUZ byte
 * of q / 2, for every byte but OCP's NaNs and -0 (0x80, FNUZ's NaN). */
static void ocp_bytes_read_as_fnuz_are_half_the_ocp_value(void **state) {
  (void)state;
  int checked = 0;
  for (unsigned b = 0; b < 256; b++) {
    if ((b & 0x7fu) == 0x7fu || b == 0x80u)
      continue;
    assert_true(fnuz_ref(b) == ocp_ref(b) / 2);
    assert_true((double)uq_cdna3_fnuz_value(b) == ocp_ref(b) / 2);
    checked++;
  }
  assert_int_equal(checked, 253);
}

/* Nearest finite FNUZ value by search (ties to the even byte: even
 * mantissa), +0 for zero; NaN (0x80) where the rounded magnitude would
 * exceed 240 or a negative value rounds to zero: the emulation's choice
 * for what the hardware does not document. */
static unsigned fnuz_nearest(double x) {
  if (isnan(x))
    return 0x80u;
  double a = fabs(x);
  unsigned best = 0;
  double bd = INFINITY;
  for (unsigned c = 0; c <= 0x7fu; c++) {
    double d = fabs(fnuz_ref(c) - a);
    if (d < bd || (d == bd && (c & 1u) == 0u)) {
      bd = d;
      best = c;
    }
  }
  if (a >= 248.0) /* the tie at 248 rounds to the even 256: out of range */
    return 0x80u;
  if (best == 0)
    return signbit(x) ? 0x80u : 0u;
  return (signbit(x) ? 0x80u : 0u) | best;
}

static void cvt_pk_fp8_rounds_to_the_nearest_fnuz_value(void **state) {
  (void)state;
  static const struct {
    float x;
    unsigned byte;
  } cases[] = {
      {1.0f, 0x40},      {0.5f, 0x38},        {224.0f, 0x7e},    {240.0f, 0x7f},
      {247.9f, 0x7f},    {248.0f, 0x80},      {-240.0f, 0xff},   {0x1p-10f, 0x01},
      {0x1p-11f, 0x00},  {0x1.8p-11f, 0x01},  {0x1p-7f, 0x08},   {0.0f, 0x00},
      {-0.0f, 0x80},     {-0x1p-12f, 0x80},   {-0x1p-10f, 0x81}, {1.0625f, 0x40},
      {1.1875f, 0x42},   {INFINITY, 0x80},    {NAN, 0x80},       {-1e30f, 0x80},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    if (uq_cdna3_f32_to_fnuz(cases[c].x) != cases[c].byte)
      fail_msg("%a: 0x%02x, want 0x%02x", (double)cases[c].x,
               uq_cdna3_f32_to_fnuz(cases[c].x), cases[c].byte);
  assert_int_equal(uq_cdna3_cvt_pk_fp8_f32(1.0f, -2.0f), 0xc840u);
  /* Every finite byte round-trips; midpoints go to the even neighbour. */
  for (unsigned b = 0; b < 256; b++) {
    if (b == 0x80u)
      continue;
    assert_int_equal(uq_cdna3_f32_to_fnuz((float)fnuz_ref(b)), b == 0u ? 0u : b);
    if ((b & 0x7fu) < 0x7fu && b != 0u) {
      double mid = (fnuz_ref(b) + fnuz_ref(b + 1)) / 2;
      assert_int_equal(uq_cdna3_f32_to_fnuz((float)mid), fnuz_nearest(mid));
    }
  }
  for (int t = 0; t < 50000; t++) {
    float x = ldexpf((float)(rnd() & 0xffffu) / 65536.0f, (int)(rnd() % 24) - 13);
    if (rnd() & 1u)
      x = -x;
    if (uq_cdna3_f32_to_fnuz(x) != fnuz_nearest(x))
      fail_msg("%a: 0x%02x, want 0x%02x", (double)x, uq_cdna3_f32_to_fnuz(x),
               fnuz_nearest(x));
  }
}

/* v_cvt_pk_f32_fp8: word `sel` of src, its lower byte first; every byte
 * in every position. */
static void cvt_pk_f32_fp8_converts_every_byte_of_either_word(void **state) {
  (void)state;
  for (unsigned b = 0; b < 256; b++)
    for (int pos = 0; pos < 4; pos++) {
      uq_u32 src = (rnd() & ~(0xffu << (8 * pos))) | (b << (8 * pos));
      float got = uq_cdna3_cvt_f32_fp8(src, pos >> 1, pos & 1);
      double want = fnuz_ref(b);
      if (isnan(want))
        assert_true(isnan(got));
      else
        assert_true((double)got == want);
    }
  /* 0x3840: word 0 = 0.5 (low byte 0x40 = 1.0 first). */
  assert_true(uq_cdna3_cvt_f32_fp8(0xc4383840u, 0, 0) == 1.0f);
  assert_true(uq_cdna3_cvt_f32_fp8(0xc4383840u, 0, 1) == 0.5f);
  assert_true(uq_cdna3_cvt_f32_fp8(0xc4383840u, 1, 0) == 0.5f);
  assert_true(uq_cdna3_cvt_f32_fp8(0xc4383840u, 1, 1) == -1.5f);
}

/* ---- v_mfma_f32_16x16x32_fp8_fp8: the calculator's registers ---- */

/* Operands of all 64 lanes, 2 registers each. */
typedef struct {
  uq_u32 a[64 * 2], b[64 * 2];
} fp8_regs;

/* The one-hot A[i][k] = 1.0 at (lane, register, byte) and B[k][j] = 1.0
 * at its own place give D[i][j] = 1 in the calculator's D register and 0
 * elsewhere. */
static void fp8_mfma_one_hots_land_where_the_calculator_says(void **state) {
  (void)state;
  static const struct {
    int i, k, a_lane, a_reg, a_byte; /* A[i][k] = v<reg>{lane}.[8 byte + 7 : 8 byte] */
  } as[] = {
      {0, 0, 0, 0, 0},   {3, 13, 19, 1, 1}, {15, 31, 63, 1, 3},
      {9, 20, 41, 1, 0}, {6, 7, 6, 1, 3},
  };
  static const struct {
    int k, j, b_lane, b_reg, b_byte;
  } bs[] = {
      {29, 7, 55, 1, 1}, {8, 0, 16, 0, 0}, {31, 15, 63, 1, 3}, {4, 11, 11, 1, 0},
  };
  /* D[13][6] = v1{54}, D[0][15] = v0{15}, D[7][2] = v3{18},
   * D[15][15] = v3{63}: lane j + 16 (i >> 2), register i & 3. */
  static const struct {
    int i, j, lane, reg;
  } ds[] = {{13, 6, 54, 1}, {0, 15, 15, 0}, {7, 2, 18, 3}, {15, 15, 63, 3}};
  for (size_t d = 0; d < sizeof ds / sizeof ds[0]; d++) {
    assert_int_equal(uq_cdna_d_lane(ds[d].i, ds[d].j), ds[d].lane);
    assert_int_equal(uq_cdna_d_reg(ds[d].i), ds[d].reg);
  }
  for (size_t x = 0; x < sizeof as / sizeof as[0]; x++)
    for (size_t y = 0; y < sizeof bs / sizeof bs[0]; y++) {
      fp8_regs r;
      memset(&r, 0, sizeof r);
      r.a[2 * as[x].a_lane + as[x].a_reg] = 0x40u << (8 * as[x].a_byte);
      r.b[2 * bs[y].b_lane + bs[y].b_reg] = 0x40u << (8 * bs[y].b_byte);
      const int hit = as[x].k == bs[y].k;
      const int li = uq_cdna_d_lane(as[x].i, bs[y].j), ri = uq_cdna_d_reg(as[x].i);
      for (int l = 0; l < 64; l++)
        for (int g = 0; g < 4; g++) {
          float v = uq_cdna3_mfma_fp8_elem(r.a, r.b, uq_cdna_d_row(l, g), uq_cdna_d_col(l), 0.0f);
          assert_true(v == ((hit && l == li && g == ri) ? 1.0f : 0.0f));
        }
    }
  /* And A[13][22] = v1{45}.[23:16] (the calculator's --matrix-entry). */
  assert_int_equal(uq_cdna3_f8_lane(13, 22), 45);
  assert_int_equal(uq_cdna3_f8_reg(22), 1);
  assert_int_equal(uq_cdna3_f8_shift(22), 16);
}

/* A row 2 all 1.0 and B column 4 all -0.5: D[2][4] = C - 16; the 0x80 NaN
 * byte anywhere in the row poisons that element only. */
static void fp8_mfma_sums_a_row_and_propagates_nan(void **state) {
  (void)state;
  fp8_regs r;
  memset(&r, 0, sizeof r);
  for (int g = 0; g < 4; g++) {
    r.a[2 * (16 * g + 2)] = r.a[2 * (16 * g + 2) + 1] = 0x40404040u;
    r.b[2 * (16 * g + 4)] = r.b[2 * (16 * g + 4) + 1] = 0xb8b8b8b8u;
  }
  assert_true(uq_cdna3_mfma_fp8_elem(r.a, r.b, 2, 4, 3.0f) == -13.0f);
  assert_true(uq_cdna3_mfma_fp8_elem(r.a, r.b, 2, 5, 3.0f) == 3.0f);
  r.a[2 * 34 + 1] = 0x40408040u;
  assert_true(isnan(uq_cdna3_mfma_fp8_elem(r.a, r.b, 2, 4, 0.0f)));
  assert_true(uq_cdna3_mfma_fp8_elem(r.a, r.b, 3, 4, 0.0f) == 0.0f);
}

/* Random FNUZ operands against a direct product; the packing follows the
 * calculator's "A[i][k] Lane: 16 * floor(k / 8) + i, GPR: (floor(k / 4) %
 * 2), bits 8 (k % 4)". */
static void fp8_mfma_random_equals_the_direct_product(void **state) {
  (void)state;
  for (int trial = 0; trial < 40; trial++) {
    unsigned A[16][32], B[32][16];
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 32; k++) {
        do
          A[i][k] = rnd() & 255u;
        while (A[i][k] == 0x80u);
        do
          B[k][i] = rnd() & 255u;
        while (B[k][i] == 0x80u);
      }
    fp8_regs r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 32; k++) {
        r.a[2 * (16 * (k / 8) + i) + (k / 4) % 2] |= A[i][k] << (8 * (k % 4));
        r.b[2 * (16 * (k / 8) + i) + (k / 4) % 2] |= B[k][i] << (8 * (k % 4));
      }
    for (int l = 0; l < 64; l++)
      for (int g = 0; g < 4; g++) {
        int i = 4 * (l >> 4) + g, j = l & 15; /* D lane l register g */
        double s = 0.25;
        for (int k = 0; k < 32; k++)
          s += fnuz_ref(A[i][k]) * fnuz_ref(B[k][j]);
        assert_true(uq_cdna3_mfma_fp8_elem(r.a, r.b, i, j, 0.25f) == (float)s);
      }
  }
}

/* ---- v_mfma_f32_16x16x16_bf16 on CDNA3: the calculator's registers ---- */

static void bf16_mfma_registers_match_the_calculator(void **state) {
  (void)state;
  /* A[6][9] = v0{38}.[31:16], A[1][6] = v1{17}.[15:0],
   * A[15][15] = v1{63}.[31:16], A[0][3] = v1{0}.[31:16]: lane, register
   * element >> 1, half element & 1. */
  static const int a[][5] = {
      {6, 9, 38, 0, 1}, {1, 6, 17, 1, 0}, {15, 15, 63, 1, 1}, {0, 3, 0, 1, 1}};
  for (size_t x = 0; x < sizeof a / sizeof a[0]; x++) {
    assert_int_equal(uq_cdna_bf16_lane(a[x][0], a[x][1]), a[x][2]);
    assert_int_equal(uq_cdna_bf16_elem(a[x][1]) >> 1, a[x][3]);
    assert_int_equal(uq_cdna_bf16_elem(a[x][1]) & 1, a[x][4]);
  }
  /* B[9][11] = v0{43}.[31:16] and B[14][2] = v1{50}.[15:0] one-hot with
   * A[6][9] = 1 and A[6][14] = 1: D[6][11] = v2{27}, D[6][2] = v2{18}. */
  uq_u32 ra[128] = {0}, rb[128] = {0};
  ra[2 * 38] = 0x3f800000u;     /* A[6][9] = 1 */
  ra[2 * 54 + 1] = 0x00004000u; /* A[6][14] = 2: lane 48 + 6, element 2 */
  rb[2 * 43] = 0x40400000u;     /* B[9][11] = 3 */
  rb[2 * 50 + 1] = 0x00003f80u; /* B[14][2] = 1 */
  for (int l = 0; l < 64; l++)
    for (int g = 0; g < 4; g++) {
      float v = uq_cdna_mfma_bf16_elem(ra, rb, uq_cdna_d_row(l, g), uq_cdna_d_col(l), 0.0f);
      float want = (l == 27 && g == 2) ? 3.0f : (l == 18 && g == 2) ? 2.0f : 0.0f;
      assert_true(v == want);
    }
}

/* ---- v_perm_b32 ---- */

static void perm_b32_picks_bytes_of_src0_then_src1(void **state) {
  (void)state;
  /* LLVM folds perm(0xAABBCCDD, 0x11223344, 0x07060302) to 0xAABB1122. */
  assert_int_equal(uq_cdna3_perm_b32(0xaabbccddu, 0x11223344u, 0x07060302u), 0xaabb1122u);
  assert_int_equal(uq_cdna3_perm_b32(0xaabbccddu, 0x11223344u, 0x03020100u), 0x11223344u);
  assert_int_equal(uq_cdna3_perm_b32(0xaabbccddu, 0x11223344u, 0x04050607u), 0xddccbbaau);
  /* The bf16 pack of the layer: the top halves of 1.5f and -2.0f. */
  assert_int_equal(uq_cdna3_perm_b32(uq_f32_bits(-2.0f), uq_f32_bits(1.5f), 0x07060302u),
                   0xc0003fc0u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fnuz_decodes_every_byte_as_defined),
      cmocka_unit_test(ocp_bytes_read_as_fnuz_are_half_the_ocp_value),
      cmocka_unit_test(cvt_pk_fp8_rounds_to_the_nearest_fnuz_value),
      cmocka_unit_test(cvt_pk_f32_fp8_converts_every_byte_of_either_word),
      cmocka_unit_test(fp8_mfma_one_hots_land_where_the_calculator_says),
      cmocka_unit_test(fp8_mfma_sums_a_row_and_propagates_nan),
      cmocka_unit_test(fp8_mfma_random_equals_the_direct_product),
      cmocka_unit_test(bf16_mfma_registers_match_the_calculator),
      cmocka_unit_test(perm_b32_picks_bytes_of_src0_then_src1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
