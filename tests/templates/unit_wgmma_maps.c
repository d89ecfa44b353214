/* The warpgroup (wgmma, sm_90a) layer's pure helpers
 * (templates/sm90/wgmma_sm90_maps.hip, after templates/sm90/mma_sm90_maps.hip),
 * compiled here as host C and checked against models written from the
 * PTX ISA and FORMAT.md, never from the helpers: an E4M3 / bf16 decoder,
 * FORMAT.md's E2M1 table and slot layout, and a model of
 * wgmma.mma_async m64n16k32 .e4m3 and m64n16k16 .bf16 with A from
 * registers and B from shared memory through a K-major, unswizzled
 * matrix descriptor. The QK and PV data flows of
 * templates/sm90/decode_wgmma_sm90.hip (query setup loop, K convert, P write,
 * V convert, fragment reads) are replayed on top of that model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tests/templates/template_host.h"
#define UQ_MMA_HOST_MODEL 1

/* PTX prmt.b32, default mode: selector nibble n (low 16 bits) picks byte
 * (nibble & 7) of the 8 bytes {y, x} (x = bytes 0..3); with the nibble's
 * bit 3 set, that byte's sign bit replicated. */
static uq_u32 uq_prmt(uq_u32 x, uq_u32 y, uq_u32 s) {
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

#include "templates/sm90/mma_sm90_maps.hip"
/* wgmma_sm90_maps.hip declares its two constants `constexpr int` at file
 * scope: C++, and C23, but not C11 (this project's -std). As static const
 * ints they are the same values; the helpers only read them. */
#define constexpr static const
#include "templates/sm90/wgmma_sm90_maps.hip"
#undef constexpr

#if !UQ_MMA_SUBNORMAL_OPERANDS
#error "the expectations below are those of the default (shift) conversions"
#endif

/* FORMAT.md section 2 (the -0 of code 8 included; the encoder never
 * writes code 8, section 3 step 5). */
static const double fp4_value[16] = {0,  0.5,  1,  1.5,  2,  3,  4,  6,
                                     -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

/* FP8 E4M3 (the FN variant of the PTX .e4m3 type): sign bit 7, exponent
 * bits 6..3 with bias 7, mantissa bits 2..0; exponent field 0 is
 * subnormal (m / 8 * 2^-6); S.1111.111 is NaN. */
static double e4m3_value(uq_u32 b) {
  uq_u32 e = (b >> 3) & 15u, m = b & 7u;
  if (e == 15u && m == 7u)
    return NAN;
  double v = e == 0 ? ldexp((double)m, -9) : ldexp((double)(8u + m), (int)e - 10);
  return (b & 0x80u) ? -v : v;
}

/* bfloat16: sign bit 15, exponent bits 14..7 with bias 127, mantissa
 * bits 6..0; exponent field 0 is subnormal (m / 128 * 2^-126); 255 is
 * Inf / NaN (never expected here: NaN). */
static double bf16_value(uq_u32 h) {
  uq_u32 e = (h >> 7) & 255u, m = h & 127u;
  if (e == 255u)
    return NAN;
  double v = e == 0 ? ldexp((double)m, -133) : ldexp((double)(128u + m), (int)e - 134);
  return (h & 0x8000u) ? -v : v;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 16);
}
static uq_u32 rnd32(void) { return rnd() ^ (rnd() << 16); }

static uq_u32 load32(const uq_u8 *p) {
  return (uq_u32)p[0] | (uq_u32)p[1] << 8 | (uq_u32)p[2] << 16 | (uq_u32)p[3] << 24;
}

/* Code j (0..7) of a 32-bit code word: nibble j (FORMAT.md: byte b =
 * code[2b] | code[2b + 1] << 4, bytes little-endian in the word). */
static uq_u32 nib(uq_u32 w, int j) { return (w >> (4 * j)) & 15u; }

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

static void fp4x8_to_e4m3_is_value_times_2_pow_minus_6_even_odd_split(void **st) {
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

static void fp4x8x2_to_bf16_pairs_code_n_of_x_low_of_y_high_times_2_pow_minus_126(void **st) {
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
static void v_scale_pairs_scale_each_token_by_its_own_byte(void **st) {
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
static void v_limit_raise_rescale_and_unscale(void **st) {
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
static void v_limit_fold_over_chunks_gives_the_scaled_sum(void **st) {
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
static void kscale_bits_give_byte_j_as_fp32_power_of_two(void **st) {
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

/* ---- the wgmma model (PTX ISA: wgmma.mma_async, register fragments and
 * the shared-memory matrix descriptor) ---- */

enum {
  THREADS = 128,
  SLOT = 272,     /* FORMAT.md: D = 256 */
  KCODE = 0,      /* K codes: bytes 0..127 */
  VCODE = 136,    /* V codes: bytes 136..263 */
  SMEM = 48 * 1024,
  /* Where the operands sit in the simulated shared memory: a 128-aligned
   * address well past 0, as in the kernel (after the double-buffered
   * chunk), so that the descriptor's start field is not trivially 0. */
  QT_ADDR = 2 * 64 * SLOT,
  PT_ADDR = QT_ADDR + 4096,
};

/* Matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address
 * >> 4 in bits 0-13, leading-dimension byte offset >> 4 in 16-29,
 * stride-dimension byte offset >> 4 in 32-45, base offset 49-51 (0),
 * swizzle mode 62-63 (0: none). */
static uint64_t desc_encode(uq_u32 addr, uq_u32 lbo, uq_u32 sbo) {
  assert_int_equal(addr % 16, 0);
  assert_int_equal(lbo % 16, 0);
  assert_int_equal(sbo % 16, 0);
  assert_true(addr < (1u << 18) && lbo < (1u << 18) && sbo < (1u << 18));
  return (uint64_t)(addr >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32;
}

/* Shared-memory byte address of element (k, n) of a K x N B operand of
 * `esize`-byte elements, K-major, no swizzle: core matrices of 8 rows (N)
 * x 16 bytes (K), row r at +16 r; the core matrix of K-block kb, N-block
 * nb at start + kb * LBO + nb * SBO (LBO: between core matrices adjacent
 * in K; SBO: adjacent in N). */
static uq_u32 desc_b_addr(uint64_t desc, int k, int n, int esize) {
  assert_int_equal((desc >> 62) & 3u, 0);        /* no swizzle */
  assert_int_equal((desc >> 49) & 7u, 0);        /* base offset */
  uq_u32 start = (uq_u32)(desc & 0x3fffu) << 4;
  uq_u32 lbo = (uq_u32)((desc >> 16) & 0x3fffu) << 4;
  uq_u32 sbo = (uq_u32)((desc >> 32) & 0x3fffu) << 4;
  int per = 16 / esize;
  uq_u32 a = start + (uq_u32)(k / per) * lbo + (uq_u32)(n / 8) * sbo + 16u * (uq_u32)(n % 8) +
             (uq_u32)(esize * (k % per));
  assert_true(a + (uq_u32)esize <= SMEM);
  return a;
}

/* D fragment, f32, N = 16 (same for both shapes): thread (warp w, lane:
 * grp = lane / 4, tig = lane % 4) holds d[4 j + 0], d[4 j + 1] = row 16 w
 * + grp, columns 8 j + 2 tig, + 1; d[4 j + 2], d[4 j + 3] = row 16 w +
 * grp + 8, same columns. */
static void d_scatter(const double dm[64][16], double d[THREADS][8], int accumulate) {
  for (int tid = 0; tid < THREADS; tid++) {
    int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
    for (int j = 0; j < 2; j++)
      for (int h = 0; h < 2; h++)
        for (int e = 0; e < 2; e++) {
          double v = dm[16 * w + grp + 8 * h][8 * j + 2 * tig + e];
          double *dst = &d[tid][4 * j + 2 * h + e];
          *dst = accumulate ? *dst + v : v;
        }
  }
}

/* wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 d, {a0..a3}, bdesc,
 * scale-d = 0. A fragment (8-bit types): thread holds, byte i of each
 * register, a0: row 16 w + grp, k = 4 tig + i; a1: row + 8, same k; a2:
 * row 16 w + grp, k = 16 + 4 tig + i; a3: row + 8, same k. */
static void wgmma_m64n16k32_e4m3(const uq_u8 *smem, uint64_t bdesc,
                                 const uq_u32 a[THREADS][4], double d[THREADS][8]) {
  int am[64][32], seen[64][32];
  memset(seen, 0, sizeof seen);
  for (int tid = 0; tid < THREADS; tid++) {
    int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
    for (int reg = 0; reg < 4; reg++)
      for (int i = 0; i < 4; i++) {
        int row = 16 * w + grp + 8 * (reg & 1), k = 16 * (reg >> 1) + 4 * tig + i;
        am[row][k] = (int)((a[tid][reg] >> (8 * i)) & 0xffu);
        seen[row][k]++;
      }
  }
  double dm[64][16];
  for (int row = 0; row < 64; row++)
    for (int n = 0; n < 16; n++) {
      double s = 0;
      for (int k = 0; k < 32; k++) {
        assert_int_equal(seen[row][k], 1);
        s += e4m3_value((uq_u32)am[row][k]) * e4m3_value(smem[desc_b_addr(bdesc, k, n, 1)]);
      }
      dm[row][n] = s;
    }
  d_scatter((const double(*)[16])dm, d, 0);
}

/* wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 d, {a0..a3}, bdesc,
 * scale-d = 1, trans-b = 0 (K-major). A fragment (16-bit types): half e
 * (0 low) of a0: row 16 w + grp, k = 2 tig + e; a1: row + 8, same k; a2:
 * row 16 w + grp, k = 2 tig + 8 + e; a3: row + 8, same k. */
static void wgmma_m64n16k16_bf16(const uq_u8 *smem, uint64_t bdesc,
                                 const uq_u32 a[THREADS][4], double d[THREADS][8]) {
  uq_u32 am[64][16];
  int seen[64][16];
  memset(seen, 0, sizeof seen);
  for (int tid = 0; tid < THREADS; tid++) {
    int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
    for (int reg = 0; reg < 4; reg++)
      for (int e = 0; e < 2; e++) {
        int row = 16 * w + grp + 8 * (reg & 1), k = 8 * (reg >> 1) + 2 * tig + e;
        am[row][k] = (a[tid][reg] >> (16 * e)) & 0xffffu;
        seen[row][k]++;
      }
  }
  double dm[64][16];
  for (int row = 0; row < 64; row++)
    for (int n = 0; n < 16; n++) {
      double s = 0;
      for (int k = 0; k < 16; k++) {
        assert_int_equal(seen[row][k], 1);
        uq_u32 at = desc_b_addr(bdesc, k, n, 2);
        s += bf16_value(am[row][k]) * bf16_value((uq_u32)smem[at] | (uq_u32)smem[at + 1] << 8);
      }
      dm[row][n] = s;
    }
  d_scatter((const double(*)[16])dm, d, 1);
}

/* The kernel's reading of a D fragment element e of a thread (its
 * accumulate / softmax / output code): row half (e >> 1) & 1 (0: row grp,
 * 1: grp + 8), column (query) (e & 1) + 2 tig + 8 (e >> 2). */
static int kern_d_half(int e) { return (e >> 1) & 1; }
static int kern_d_query(int tig, int e) { return (e & 1) + 2 * tig + 8 * (e >> 2); }

static uq_u8 slots[64][SLOT];
static uq_u8 smem[SMEM];

static double k_value(int t, int dim) {
  return fp4_value[(slots[t][KCODE + dim / 2] >> (4 * (dim % 2))) & 15u];
}
static double v_value(int t, int dim) {
  return fp4_value[(slots[t][VCODE + dim / 2] >> (4 * (dim % 2))) & 15u];
}

/* ---- 3. QK ---- */

static void qk_wgmma_per_group_gives_q_dot_k_over_the_groups_dims_times_2_pow_minus_6(void **st) {
  (void)st;
  static uq_u8 qb[16][256]; /* E4M3 bytes of the haircut query */
  static uq_u32 a[THREADS][4];
  static double d[THREADS][8];
  for (int trial = 0; trial < 3; trial++) {
    for (int t = 0; t < 64; t++)
      for (int i = 0; i < SLOT; i++)
        slots[t][i] = (uq_u8)rnd();
    for (int n = 0; n < 16; n++)
      for (int dim = 0; dim < 256; dim++) {
        uq_u32 b;
        do
          b = rnd() & 0xffu;
        while ((b & 0x7fu) == 0x7fu);
        qb[n][dim] = (uq_u8)b;
      }
    /* Anything the descriptor reads that the setup loop did not write is
     * NaN (E4M3 0xFF), and fails the comparison. */
    memset(smem, 0xff, sizeof smem);
    /* The kernel's setup loop (all 16 rows holding queries here). */
    for (int k = 0; k < 16 * 256; k++) {
      int n = k / 256, g = (k % 256) / 32, kk = k % 32;
      smem[QT_ADDR + uq_wg_q_offset(n, g, kk)] = qb[n][uq_wg_q_dim(g, kk)];
    }
    const uint64_t desc_q = desc_encode(QT_ADDR, (uq_u32)UQ_WG_LBO, (uq_u32)UQ_WG_SBO);
    for (int g = 0; g < 8; g++) {
      /* The kernel's convert: rows grp (k0) and grp + 8 (k1). */
      for (int tid = 0; tid < THREADS; tid++) {
        int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
        const uq_u8 *k0 = slots[uq_wg_qk_token(w, grp, 0)], *k1 = slots[uq_wg_qk_token(w, grp, 1)];
        uq_u32 x = load32(k0 + uq_wg_k_word_offset(g, tig));
        uq_u32 y = load32(k1 + uq_wg_k_word_offset(g, tig));
        uq_wg_fp4x8_e4m3(x, &a[tid][0], &a[tid][2]);
        uq_wg_fp4x8_e4m3(y, &a[tid][1], &a[tid][3]);
      }
      wgmma_m64n16k32_e4m3(smem, desc_q + (uint64_t)((2 * g * UQ_WG_LBO) >> 4),
                           (const uq_u32(*)[4])a, d);
      for (int tid = 0; tid < THREADS; tid++) {
        int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
        for (int e = 0; e < 8; e++) {
          int t = uq_wg_qk_token(w, grp, kern_d_half(e)), n = kern_d_query(tig, e);
          double want = 0;
          for (int dim = 32 * g; dim < 32 * g + 32; dim++)
            want += e4m3_value(qb[n][dim]) * k_value(t, dim);
          if (d[tid][e] != ldexp(want, -6))
            fail_msg("group %d token %d query %d: got %.17g, want %.17g", g, t, n, d[tid][e],
                     ldexp(want, -6));
        }
      }
    }
  }
}

/* ---- 4. PV ---- */

/* A bf16 with 8 significant bits, exponent in [-8, 8], either sign: every
 * product with a code times 2^-126 and every sum of 16 is exact. */
static uq_u16 random_bf16(void) {
  uq_u32 e = 127u - 8u + rnd() % 17u;
  return (uq_u16)(((rnd() & 1u) << 15) | e << 7 | (rnd() & 127u));
}

static void pv_wgmma_per_tile_and_step_gives_p_times_v_of_the_o_dim_times_2_pow_minus_126(void **st) {
  (void)st;
  static uq_u16 p[16][64];
  static uq_u32 a[THREADS][4];
  static double d[4][THREADS][8], dstep[THREADS][8];
  for (int trial = 0; trial < 3; trial++) {
    for (int t = 0; t < 64; t++)
      for (int i = 0; i < SLOT; i++)
        slots[t][i] = (uq_u8)rnd();
    for (int n = 0; n < 16; n++)
      for (int t = 0; t < 64; t++)
        p[n][t] = random_bf16();
    /* Unwritten P bytes read as bf16 NaN (0xFFFF). */
    memset(smem, 0xff, sizeof smem);
    /* The kernel's P write: thread (w, grp, tig), D element e of the QK
     * product stands for the token of row grp + 8 h (h = (e >> 1) & 1),
     * query (e & 1) + 2 tig + 8 (e >> 2), and goes to K index
     * uq_wg_p_k(w, grp, h) of PV. */
    for (int tid = 0; tid < THREADS; tid++) {
      int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
      for (int e = 0; e < 8; e++) {
        int n = (e & 1) + 2 * tig + 8 * (e >> 2);
        int h = (e >> 1) & 1;
        int t = uq_wg_qk_token(w, grp, h);
        int off = uq_wg_p_offset(n, uq_wg_p_k(w, grp, h));
        smem[PT_ADDR + off] = (uq_u8)(p[n][t] & 0xffu);
        smem[PT_ADDR + off + 1] = (uq_u8)(p[n][t] >> 8);
      }
    }
    const uint64_t desc_p = desc_encode(PT_ADDR, (uq_u32)UQ_WG_LBO, (uq_u32)UQ_WG_SBO);
    memset(d, 0, sizeof d);
    for (int ks = 0; ks < 4; ks++)
      for (int mt = 0; mt < 4; mt++) {
        /* The kernel's convert and launch: the tokens of K indices 2 tig,
         * + 1 (va), + 8, + 9 (vb) of step ks, the thread's V word;
         * registers va[2 mt], va[2 mt + 1], vb[2 mt], vb[2 mt + 1]. */
        for (int tid = 0; tid < THREADS; tid++) {
          int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
          int voff = VCODE + 4 * uq_wg_v_word(w, grp);
          const uq_u8 *ta = slots[uq_wg_pv_token(ks, 2 * tig)];
          const uq_u8 *tb = slots[uq_wg_pv_token(ks, 2 * tig + 1)];
          const uq_u8 *tc = slots[uq_wg_pv_token(ks, 2 * tig + 8)];
          const uq_u8 *td = slots[uq_wg_pv_token(ks, 2 * tig + 9)];
          uq_u32 va[8], vb[8];
          uq_wg_fp4x8x2_bf16s(load32(ta + voff), load32(tb + voff), va);
          uq_wg_fp4x8x2_bf16s(load32(tc + voff), load32(td + voff), vb);
          a[tid][0] = va[2 * mt];
          a[tid][1] = va[2 * mt + 1];
          a[tid][2] = vb[2 * mt];
          a[tid][3] = vb[2 * mt + 1];
        }
        memset(dstep, 0, sizeof dstep);
        uint64_t desc = desc_p + (uint64_t)((2 * ks * UQ_WG_LBO) >> 4);
        wgmma_m64n16k16_bf16(smem, desc, (const uq_u32(*)[4])a, dstep);
        for (int tid = 0; tid < THREADS; tid++) {
          int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
          for (int e = 0; e < 8; e++) {
            int n = kern_d_query(tig, e);
            int dim = uq_wg_o_dim(w, grp, mt, kern_d_half(e));
            double want = 0;
            for (int t = 16 * ks; t < 16 * ks + 16; t++)
              want += bf16_value(p[n][t]) * v_value(t, dim);
            if (dstep[tid][e] != ldexp(want, -126))
              fail_msg("step %d tile %d dim %d query %d: got %.17g, want %.17g", ks, mt, dim, n,
                       dstep[tid][e], ldexp(want, -126));
            d[mt][tid][e] += dstep[tid][e];
          }
        }
      }
    /* The accumulators after the chunk: all 64 tokens. */
    for (int mt = 0; mt < 4; mt++)
      for (int tid = 0; tid < THREADS; tid++) {
        int w = tid / 32, grp = (tid % 32) / 4, tig = tid % 4;
        for (int e = 0; e < 8; e++) {
          int n = kern_d_query(tig, e);
          int dim = uq_wg_o_dim(w, grp, mt, kern_d_half(e));
          double want = 0;
          for (int t = 0; t < 64; t++)
            want += bf16_value(p[n][t]) * v_value(t, dim);
          assert_true(d[mt][tid][e] == ldexp(want, -126));
        }
      }
  }
}

/* ---- 5. maps are permutations / injections within their buffers ---- */

static void q_dim_permutes_each_groups_32_dims(void **st) {
  (void)st;
  int seen[256] = {0};
  for (int g = 0; g < 8; g++)
    for (int kk = 0; kk < 32; kk++) {
      int dim = uq_wg_q_dim(g, kk);
      assert_in_range(dim, 0, 255);
      /* One K scale per group multiplies the group's product. */
      assert_int_equal(dim / 32, g);
      seen[dim]++;
    }
  for (int dim = 0; dim < 256; dim++)
    assert_int_equal(seen[dim], 1);
}

static void o_dim_covers_each_head_dim_once_with_the_v_words_scale_group(void **st) {
  (void)st;
  int seen[256] = {0};
  for (int w = 0; w < 4; w++)
    for (int grp = 0; grp < 8; grp++) {
      int word = uq_wg_v_word(w, grp);
      assert_in_range(word, 0, 31);
      for (int mt = 0; mt < 4; mt++)
        for (int h = 0; h < 2; h++) {
          int dim = uq_wg_o_dim(w, grp, mt, h);
          assert_in_range(dim, 0, 255);
          /* The dim is a code of the thread's V word, and the kernel
           * reads that word's scale byte (word / 4) for it. */
          assert_int_equal(dim / 8, word);
          assert_int_equal(dim / 32, word / 4);
          /* The kernel's output store: bf16 pair mt of the 16 bytes at
           * head dim 8 word, row grp in the low half. */
          assert_int_equal(dim, 8 * word + 2 * mt + h);
          seen[dim]++;
        }
    }
  for (int dim = 0; dim < 256; dim++)
    assert_int_equal(seen[dim], 1);
}

static void q_offset_is_injective_within_4096_bytes(void **st) {
  (void)st;
  static int seen[4096];
  memset(seen, 0, sizeof seen);
  for (int n = 0; n < 16; n++)
    for (int g = 0; g < 8; g++)
      for (int kk = 0; kk < 32; kk++) {
        int off = uq_wg_q_offset(n, g, kk);
        assert_in_range(off, 0, 4095);
        seen[off]++;
      }
  for (int i = 0; i < 4096; i++)
    assert_int_equal(seen[i], 1);
}

static void p_offset_is_injective_within_2048_bytes_and_bf16_aligned(void **st) {
  (void)st;
  static int seen[2048];
  memset(seen, 0, sizeof seen);
  for (int n = 0; n < 16; n++)
    for (int k = 0; k < 64; k++) {
      int off = uq_wg_p_offset(n, k);
      assert_in_range(off, 0, 2046);
      assert_int_equal(off % 2, 0);
      seen[off]++;
      seen[off + 1]++;
    }
  for (int i = 0; i < 2048; i++)
    assert_int_equal(seen[i], 1);
}

/* The descriptor's offset fields drop 4 bits and keep 14: the
 * template's offsets must survive that. (Where they point is checked by
 * the QK and PV simulations, whose unwritten shared memory is NaN.) */
static void lbo_sbo_are_representable_in_the_descriptor(void **st) {
  (void)st;
  assert_int_equal(UQ_WG_LBO % 16, 0);
  assert_int_equal(UQ_WG_SBO % 16, 0);
  assert_true(UQ_WG_LBO > 0 && UQ_WG_LBO >> 4 < (1 << 14));
  assert_true(UQ_WG_SBO > 0 && UQ_WG_SBO >> 4 < (1 << 14));
}

/* ---- 6. the token order of the chunk ---- */

static void qk_tokens_permute_each_warps_sixteen_and_pv_reads_them_back(void **st) {
  (void)st;
  for (int w = 0; w < 4; w++) {
    int seen[64] = {0};
    for (int grp = 0; grp < 8; grp++)
      for (int h = 0; h < 2; h++) {
        int t = uq_wg_qk_token(w, grp, h);
        assert_in_range(t, 16 * w, 16 * w + 15);
        seen[t]++;
        /* The kernel reads row grp + 8 at k0 + 8 slots. */
        assert_int_equal(uq_wg_qk_token(w, grp, 1), uq_wg_qk_token(w, grp, 0) + 8);
        /* P of this row goes to K index uq_wg_p_k, which PV step w reads
         * back as the same token. */
        int k = uq_wg_p_k(w, grp, h);
        assert_in_range(k, 16 * w, 16 * w + 15);
        assert_int_equal(uq_wg_pv_token(w, k - 16 * w), t);
      }
    for (int t = 16 * w; t < 16 * w + 16; t++)
      assert_int_equal(seen[t], 1);
  }
}

/* The kernel reads a thread's four V rows of PV step ks at one per-thread
 * offset (token uq_wg_pv_token(0, 2 tig)) plus uq_wg_pv_step(ks, j): the
 * same tokens as uq_wg_pv_token for K indices 2 tig, + 1, + 8, + 9, for
 * every lane and step. */
static void pv_step_offsets_give_each_lanes_four_tokens(void **st) {
  (void)st;
  const int k_of[4] = {0, 1, 8, 9};
  for (int ks = 0; ks < 4; ks++)
    for (int tig = 0; tig < 4; tig++)
      for (int j = 0; j < 4; j++)
        assert_int_equal(uq_wg_pv_token(0, 2 * tig) + uq_wg_pv_step(ks, j),
                         uq_wg_pv_token(ks, 2 * tig + k_of[j]));
}

/* Shared-memory bank (4-byte words, 32 banks) of a byte offset. */
static int bank_of(int off) { return (off / 4) % 32; }

/* The 32 lanes of one load hit 32 different banks, or the same word. */
static void assert_conflict_free(const int off[32], const char *what) {
  for (int a = 0; a < 32; a++)
    for (int b = a + 1; b < 32; b++)
      if (off[a] / 4 != off[b] / 4 && bank_of(off[a]) == bank_of(off[b]))
        fail_msg("%s: lanes %d and %d share bank %d", what, a, b, bank_of(off[a]));
}

static void k_and_v_word_reads_are_free_of_bank_conflicts(void **st) {
  (void)st;
  int off[32];
  for (int w = 0; w < 4; w++) {
    /* QK: code word tig of group g of rows grp and grp + 8. */
    for (int g = 0; g < 8; g++)
      for (int h = 0; h < 2; h++) {
        for (int lane = 0; lane < 32; lane++)
          off[lane] = uq_wg_qk_token(w, lane / 4, h) * SLOT + uq_wg_k_word_offset(g, lane % 4);
        assert_conflict_free(off, "K word");
      }
    /* PV: V word 8 w + grp of the tokens of K indices 2 tig + j. */
    for (int ks = 0; ks < 4; ks++)
      for (int j = 0; j < 10; j++) {
        if (j == 2)
          j = 8;
        for (int lane = 0; lane < 32; lane++)
          off[lane] = uq_wg_pv_token(ks, 2 * (lane % 4) + j) * SLOT + VCODE +
                      4 * uq_wg_v_word(w, lane / 4);
        assert_conflict_free(off, "V word");
      }
  }
}

static void a_threads_two_p_values_of_a_query_are_one_aligned_word(void **st) {
  (void)st;
  for (int w = 0; w < 4; w++)
    for (int grp = 0; grp < 8; grp++)
      for (int tig = 0; tig < 4; tig++) {
        int k = uq_wg_p_k(w, grp, 0);
        for (int i = 0; i < 4; i++) {
          int n = (i & 1) + 2 * tig + 8 * (i >> 1);
          int lo = uq_wg_p_offset(n, k);
          assert_int_equal(lo % 4, 0);
          assert_int_equal(uq_wg_p_offset(n, uq_wg_p_k(w, grp, 1)), lo + 2);
          /* The kernel's address: that of query 2 tig, plus 16 bytes for
           * the odd query and the stride-dimension offset for + 8. */
          assert_int_equal(lo, uq_wg_p_offset(2 * tig, k) + 16 * (i & 1) + UQ_WG_SBO * (i >> 1));
        }
      }
}

/* The K scale table: the lanes of each warp fill every (half, token) of
 * the warp's sixteen tokens once, and the tokens its QK rows read (tq and
 * tq + 8, the kernel's two rows) are among them: a warp barrier suffices. */
static void k_scale_table_is_filled_by_the_warp_that_reads_it(void **st) {
  (void)st;
  for (int w = 0; w < 4; w++) {
    int filled[64][2];
    memset(filled, 0, sizeof filled);
    for (int lane = 0; lane < 32; lane++) {
      int t = uq_wg_kscale_token(w, lane), h = uq_wg_kscale_half(lane);
      assert_in_range(t, 16 * w, 16 * w + 15);
      assert_in_range(h, 0, 1);
      filled[t][h]++;
    }
    for (int t = 16 * w; t < 16 * w + 16; t++)
      for (int h = 0; h < 2; h++)
        assert_int_equal(filled[t][h], 1);
    for (int grp = 0; grp < 8; grp++) {
      int tq = uq_wg_qk_token(w, grp, 0);
      assert_int_equal(uq_wg_qk_token(w, grp, 1), tq + 8);
      assert_int_equal(filled[tq][0] + filled[tq + 8][1], 2);
    }
  }
}

/* The factor table's two-at-once form equals the per-byte one for every
 * pair of bytes under every limit, and flags exactly the pairs with a
 * byte over the limit (the kernel's limit-raising path). */
static void v_scale_lo_x2_matches_the_per_byte_lo(void **st) {
  (void)st;
  static const uq_u32 lims[] = {128u, 129u, 131u, 160u, 200u, 253u, 254u};
  for (size_t li = 0; li < sizeof lims / sizeof lims[0]; li++) {
    uq_u32 lim = lims[li];
    for (uq_u32 a = 0; a < 256u; a++)
      for (uq_u32 b = 0; b < 256u; b++) {
        bool over;
        uq_u32 lo = uq_wg_vscale_lo_x2(a | b << 16, uq_wg_vlim_x2(lim), uq_wg_vlim_offset_x2(lim), &over);
        if (lo != uq_wg_vscale_lo2(a, b, lim) || over != (a > lim || b > lim))
          fail_msg("limit %u bytes %u %u: lo %08x (want %08x), over %d", lim, a, b, lo,
                   uq_wg_vscale_lo2(a, b, lim), (int)over);
      }
  }
}

/* The kernel's V factor table: thread tid reads the two tokens
 * uq_wg_vfac_token(tid, 0 / 1) of its K index pair uq_wg_vfac_k(tid) and
 * writes the words of groups uq_wg_vfac_group(tid) and + 1, each
 * uq_wg_vscale_lo_x2 of the two tokens' bytes under the group's limit;
 * PV reads the words of K indices 2 tig (+ 1) and 2 tig + 8 (+ 9) of step
 * ks in its V word's group. Every (group, K index) is written once, every
 * read gives uq_wg_vscale_lo2 of the two tokens' bytes,
 * and the reads are free of bank conflicts. */
static void v_factor_table_gives_each_k_pair_its_two_tokens_lo(void **st) {
  (void)st;
  enum { TABLE = 8 * 144 }; /* 8 rows of UQ_WG_VFAC_ROW bytes */
  assert_int_equal(UQ_WG_VFAC_ROW, 144);
  static uq_u8 table[TABLE];
  static int written[TABLE];
  uq_u8 bytes[64][8];
  for (int trial = 0; trial < 4; trial++) {
    uq_u32 lims[8];
    for (int g = 0; g < 8; g++)
      lims[g] = UQ_WG_VLIM_MIN + rnd() % (UQ_WG_VLIM_MAX - UQ_WG_VLIM_MIN + 1u);
    for (int t = 0; t < 64; t++)
      for (int g = 0; g < 8; g++)
        bytes[t][g] = (uq_u8)rnd();
    memset(table, 0xee, sizeof table);
    memset(written, 0, sizeof written);
    for (int tid = 0; tid < THREADS; tid++) {
      int t0 = uq_wg_vfac_token(tid, 0), t1 = uq_wg_vfac_token(tid, 1);
      assert_in_range(t0, 0, 63);
      assert_in_range(t1, 0, 63);
      /* the kernel reads the second token 8 slots after the first */
      assert_int_equal(t1, t0 + 8);
      int g0 = uq_wg_vfac_group(tid);
      assert_in_range(g0, 0, 6);
      /* the 16-bit loads of groups g0, g0 + 1 (little-endian) */
      uq_u32 x0 = bytes[t0][g0] | (uq_u32)bytes[t0][g0 + 1] << 8;
      uq_u32 x1 = bytes[t1][g0] | (uq_u32)bytes[t1][g0 + 1] << 8;
      for (int j = 0; j < 2; j++) {
        int g = g0 + j;
        int off = uq_wg_vfac_offset(g, uq_wg_vfac_k(tid));
        assert_in_range(off, 0, (int)sizeof table - 4);
        assert_int_equal(off % 4, 0);
        bool over;
        uq_u32 lo = uq_wg_vscale_lo_x2(uq_wg_vfac_pair(x0, x1, j), uq_wg_vlim_x2(lims[g]),
                                       uq_wg_vlim_offset_x2(lims[g]), &over);
        for (int b = 0; b < 4; b++) {
          table[off + b] = (uq_u8)(lo >> (8 * b));
          written[off + b]++;
        }
      }
    }
    for (int i = 0; i < (int)sizeof table; i++)
      assert_in_range(written[i], 0, 1);
    for (int ks = 0; ks < 4; ks++)
      for (int w = 0; w < 4; w++)
        for (int half = 0; half < 2; half++) {
          int off[32];
          for (int lane = 0; lane < 32; lane++) {
            int grp = lane / 4, tig = lane % 4, g = uq_wg_v_word(w, grp) / 4;
            int k = 16 * ks + 2 * tig + 8 * half;
            off[lane] = uq_wg_vfac_offset(g, k);
            assert_int_equal(off[lane] % 4, 0);
            uq_u32 word = load32(table + off[lane]);
            uq_u32 want = uq_wg_vscale_lo2(bytes[uq_wg_pv_token(ks, k - 16 * ks)][g],
                                           bytes[uq_wg_pv_token(ks, k + 1 - 16 * ks)][g], lims[g]);
            if (word != want)
              fail_msg("step %d warp %d lane %d: table word %08x, want %08x", ks, w, lane, word,
                       want);
          }
          assert_conflict_free(off, "V factor word");
        }
  }
}

/* The layer's chunk schedule covers every 64-token chunk of a sequence
 * exactly once, within the plan's P x TGPP tile groups, and a partition's
 * chunks are ascending (the running softmax needs no order, but the
 * kernel's masking assumes only the sequence's last chunk is partial). */
static void chunk_schedule_covers_each_chunk_once(void **st) {
  (void)st;
  static int seen[4096];
  static const int parts_list[] = {2, 4, 16, 32, 64, 128, 256, 512};
  for (size_t pi = 0; pi < sizeof parts_list / sizeof parts_list[0]; pi++)
    for (int tgpp = 1; tgpp <= 8; tgpp *= 2) {
      int parts = parts_list[pi];
      if ((long)parts * tgpp * 4 > 4096)
        continue;
      for (int trial = 0; trial < 40; trial++) {
        /* Lengths within the window P TGPP 256, edges included. */
        uq_u32 window = (uq_u32)parts * (uq_u32)tgpp * 256u;
        uq_u32 len = trial == 0 ? 0u : trial == 1 ? window : trial == 2 ? 1u : rnd32() % (window + 1u);
        uq_u32 total = (len + 63u) / 64u;
        memset(seen, 0, sizeof seen);
        for (int part = 0; part < parts; part++) {
          int n = uq_wg_chunks(part, len, parts, tgpp);
          assert_in_range(n, 0, 4 * tgpp);
          for (int k = 0; k < n; k++) {
            uq_u32 tok = uq_wg_chunk_token(part, k, parts);
            assert_int_equal(tok % 64u, 0);
            assert_true(tok < len);
            if (k > 0)
              assert_true(tok > uq_wg_chunk_token(part, k - 1, parts));
            seen[tok / 64u]++;
          }
        }
        for (uq_u32 c = 0; c < total; c++)
          if (seen[c] != 1)
            fail_msg("P=%d TGPP=%d len=%u: chunk %u seen %d times", parts, tgpp, len, c, seen[c]);
      }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp4x8_to_e4m3_is_value_times_2_pow_minus_6_even_odd_split),
      cmocka_unit_test(fp4x8x2_to_bf16_pairs_code_n_of_x_low_of_y_high_times_2_pow_minus_126),
      cmocka_unit_test(v_scale_pairs_scale_each_token_by_its_own_byte),
      cmocka_unit_test(v_limit_raise_rescale_and_unscale),
      cmocka_unit_test(v_limit_fold_over_chunks_gives_the_scaled_sum),
      cmocka_unit_test(kscale_bits_give_byte_j_as_fp32_power_of_two),
      cmocka_unit_test(qk_wgmma_per_group_gives_q_dot_k_over_the_groups_dims_times_2_pow_minus_6),
      cmocka_unit_test(pv_wgmma_per_tile_and_step_gives_p_times_v_of_the_o_dim_times_2_pow_minus_126),
      cmocka_unit_test(q_dim_permutes_each_groups_32_dims),
      cmocka_unit_test(o_dim_covers_each_head_dim_once_with_the_v_words_scale_group),
      cmocka_unit_test(q_offset_is_injective_within_4096_bytes),
      cmocka_unit_test(p_offset_is_injective_within_2048_bytes_and_bf16_aligned),
      cmocka_unit_test(lbo_sbo_are_representable_in_the_descriptor),
      cmocka_unit_test(qk_tokens_permute_each_warps_sixteen_and_pv_reads_them_back),
      cmocka_unit_test(pv_step_offsets_give_each_lanes_four_tokens),
      cmocka_unit_test(k_and_v_word_reads_are_free_of_bank_conflicts),
      cmocka_unit_test(a_threads_two_p_values_of_a_query_are_one_aligned_word),
      cmocka_unit_test(k_scale_table_is_filled_by_the_warp_that_reads_it),
      cmocka_unit_test(v_scale_lo_x2_matches_the_per_byte_lo),
      cmocka_unit_test(v_factor_table_gives_each_k_pair_its_two_tokens_lo),
      cmocka_unit_test(chunk_schedule_covers_each_chunk_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
