/* The warpgroup (wgmma, sm_90a) layer's pure helpers
 * (templates/sm90/wgmma_sm90_maps.hip, after templates/sm90/mma_sm90_maps.hip),
 * compiled here as host C and checked against models written from the
 * PTX ISA and FORMAT.md, never from the helpers: an E4M3 / bf16 decoder,
 * FORMAT.md's E2M1 table and slot layout, and a model of
 * wgmma.mma_async m64n16k32 .e4m3 and m64n16k16 .bf16 with A from
 * registers and B from shared memory through a K-major, unswizzled
 * matrix descriptor. The QK and PV data flows of
 * templates/sm90/decode_wgmma_sm90.hip (query setup loop, K convert, P write,
 * V convert, fragment reads) are replayed on top of that model. With
 * unit_wgmma_convert.c and unit_wgmma_layout.c the program test_wgmma_maps
 * (wgmma_host.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tests/templates/wgmma_host.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 16);
}
uq_u32 rnd32(void) { return rnd() ^ (rnd() << 16); }

/* ---- the wgmma model (PTX ISA: wgmma.mma_async, register fragments and
 * the shared-memory matrix descriptor) ---- */

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

uq_u8 slots[64][SLOT];
uq_u8 smem[SMEM];

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
