/* The sm_90 matrix layer's pure helpers (templates/sm90/mma_sm90_maps.hip,
 * compiled here as host C): FP4 -> f16 / bf16 conversions against
 * FORMAT.md's value table, the scale encodings, and the lane maps (query
 * and V permutations included) against
 * an independent model of the PTX fragment layouts of mma.m16n8k16 (16-bit
 * types) and ldmatrix (plain and .trans). Also: emission picks the layer for matrix
 * keys on sm_90, and the warpgroup layer (after these maps) for warpgroup
 * keys on sm_90a, and refuses either variant where there is no layer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/codegen/emit.h"
#include "lib/codegen/target.h"
#include "lib/base/buf.h"
#include "uqjit.h"

#include "tests/templates/template_host.h"
#define UQ_MMA_HOST_MODEL 1

#include "templates/sm90/mma_sm90_maps.hip"

/* FORMAT.md section 2. */
static const double fp4_value[16] = {0,  0.5,  1,  1.5,  2,  3,  4,  6,
                                     -0, -0.5, -1, -1.5, -2, -3, -4, -6};

/* IEEE binary16. */
static double f16_value(uq_u32 h) {
  uq_u32 e = (h >> 10) & 31u, m = h & 1023u;
  double v = e == 0 ? ldexp((double)m, -24) : ldexp(1.0 + m / 1024.0, (int)e - 15);
  return (h & 0x8000u) ? -v : v;
}

static double bf16_value(uq_u32 half) { return (double)uq_bits_f32(half << 16); }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 16);
}

/* Every code at every nibble of the word, among random neighbours: half
 * j / 4 of register j % 4 is the code's value times 2^-14 (shift
 * conversions) or the value itself (lookup fallback) exactly, with the
 * code's sign (-0 included); UQ_MMA_K_UNSCALE undoes the factor. */
static void fp4x8_to_f16_is_exact_up_to_the_k_unscale(void **st) {
  const int shift = UQ_MMA_SUBNORMAL_OPERANDS ? 14 : 0;
  (void)st;
  for (int pos = 0; pos < 8; pos++)
    for (uq_u32 c = 0; c < 16; c++)
      for (int rep = 0; rep < 16; rep++) {
        uq_u32 w = rnd() ^ (rnd() << 16);
        w = (w & ~(15u << (4 * pos))) | (c << (4 * pos));
        uq_u32 r[4];
        uq_mma_fp4x8_f16s(w, r);
        for (int j = 0; j < 8; j++) {
          uq_u32 cj = (w >> (4 * j)) & 15u;
          uq_u32 half = (r[j % 4] >> (16 * (j / 4))) & 0xffffu;
          assert_true(f16_value(half) == ldexp(fp4_value[cj], -shift));
          assert_int_equal(half >> 15, cj >> 3);
        }
      }
  assert_true((double)UQ_MMA_K_UNSCALE == ldexp(1.0, shift));
}

/* The same for V: half j / 4 of register j % 4 is the code's value times
 * 2^-126 (0.5 a bf16 subnormal; shift conversions) or the value itself
 * (lookup fallback), with the code's sign. */
static void fp4x8_to_bf16_is_exact_up_to_a_power_of_two(void **st) {
  (void)st;
  assert_int_equal(UQ_MMA_V_CODE_EXP, UQ_MMA_SUBNORMAL_OPERANDS ? -126 : 0);
  for (int pos = 0; pos < 8; pos++)
    for (uq_u32 c = 0; c < 16; c++)
      for (int rep = 0; rep < 16; rep++) {
        uq_u32 w = rnd() ^ (rnd() << 16);
        w = (w & ~(15u << (4 * pos))) | (c << (4 * pos));
        uq_u32 r[4];
        uq_mma_fp4x8_bf16s(w, r);
        for (int j = 0; j < 8; j++) {
          uq_u32 cj = (w >> (4 * j)) & 15u;
          uq_u32 half = (r[j % 4] >> (16 * (j / 4))) & 0xffffu;
          assert_true(bf16_value(half) == ldexp(fp4_value[cj], UQ_MMA_V_CODE_EXP));
          assert_int_equal(half >> 15, cj >> 3);
        }
      }
}

/* bf16 multiply (round to nearest even, subnormals kept, as mul.rn.bf16x2)
 * of halves whose product the caller expects to be exact: checks that it
 * is, and returns its bits. */
static uq_u32 bf16_mul_exact(uq_u32 a, uq_u32 b) {
  double v = bf16_value(a) * bf16_value(b);
  float f = (float)v;
  uq_u32 bits = uq_f32_bits(f);
  assert_true((double)f == v);
  assert_int_equal(bits & 0xffffu, 0);
  return bits >> 16;
}

static void scale_encodings_decode_to_powers_of_two(void **st) {
  (void)st;
  for (uq_u32 b = 0; b < 255; b++) {
    double want = b == 0 ? 0.0 : ldexp(1.0, (int)b - 127);
    assert_true((double)uq_bits_f32(uq_mma_f32_scale_bits(b)) == want);
    uq_u32 lo = uq_mma_bf16_vscale_lo(b), hi = uq_mma_bf16_vscale_hi(b);
    assert_int_equal(lo & 0xffffu, lo >> 16);
    assert_int_equal(hi & 0xffffu, hi >> 16);
    /* Both factors finite; hi is 1 up to byte 128. */
    assert_true(((lo >> 7) & 0xffu) != 0xffu && ((hi >> 7) & 0xffu) != 0xffu);
    if (b <= 128)
      assert_true(bf16_value(hi & 0xffffu) == 1.0);
    /* Every code times 2^-126 (the conversion) times lo times hi: each
     * product exact, the result the code's value times the group scale
     * (up to byte 252: 6 * 2^126 and more overflow bf16 as they would
     * fp32). */
    for (uq_u32 c = 0; c < 16 && b <= 252; c++) {
      uq_u32 r[4];
      uq_mma_fp4x8_bf16s(c, r);
      uq_u32 v = bf16_mul_exact(bf16_mul_exact(r[0] & 0xffffu, lo & 0xffffu), hi & 0xffffu);
      assert_true(bf16_value(v) == fp4_value[c] * want);
    }
  }
}

/* ---- the PTX fragment model (PTX ISA, "Matrix Fragments for mma") ---- */

/* ldmatrix.x4: lane 8 i + r gives the address of row r of matrix i; lane l
 * receives in register i elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4)
 * + 1) of matrix i, or with .trans elements (2 (l % 4), l / 4) and
 * (2 (l % 4) + 1, l / 4). Elements are bf16 of a row-major array. */
static void ldmatrix_x4(const uq_u16 *base, int stride, const int row[32],
                        const int col[32], int trans, uq_u32 out[32][4]) {
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) {
      uq_u32 v = 0;
      for (int e = 0; e < 2; e++) {
        int mr = trans ? 2 * (l % 4) + e : l / 4;
        int mc = trans ? l / 4 : 2 * (l % 4) + e;
        int src = 8 * i + mr;
        v |= (uq_u32)base[row[src] * stride + col[src] + mc] << (16 * e);
      }
      out[l][i] = v;
    }
}

/* m16n8k16 bf16: A (row, k) is half k % 2 of register (row / 8) + 2 (k / 8)
 * of lane 4 (row % 8) + (k % 8) / 2; B (k, col) half k % 2 of register
 * k / 8 of lane 4 col + (k % 8) / 2; C (row, col) register 2 (row / 8) +
 * col % 2 of lane 4 (row % 8) + col / 2. */
static void mma16(double (*value)(uq_u32), const uq_u32 a[32][4],
                  const uq_u32 b0[32], const uq_u32 b1[32], double c[32][4]) {
  for (int row = 0; row < 16; row++)
    for (int col = 0; col < 8; col++) {
      double s = 0;
      for (int k = 0; k < 16; k++) {
        uq_u32 av = a[4 * (row % 8) + (k % 8) / 2][row / 8 + 2 * (k / 8)] >> (16 * (k % 2));
        const uq_u32 *bk = k / 8 ? b1 : b0;
        uq_u32 bv = bk[4 * col + (k % 8) / 2] >> (16 * (k % 2));
        s += value(av & 0xffffu) * value(bv & 0xffffu);
      }
      c[4 * (row % 8) + col / 2][2 * (row / 8) + col % 2] += s;
    }
}

/* The kernel's QK: the query rows are stored permuted (uq_mma_qk_pos);
 * for group g, lane (grp, tig) reads code word tig of token grp's group
 * and eight consecutive f16 of the stored rows grp and grp + 8 (from
 * position uq_mma_qk_pos(uq_mma_qk_dim(g, tig, 0, 0, 0))); step s takes
 * registers {x0[2s], x1[2s], x0[2s+1], x1[2s+1]} and B registers r[2s],
 * r[2s+1] of uq_mma_fp4x8_f16s. The sums come out times 2^-14. */
static void qk_fragments_give_the_dot_product_of_each_group(void **st) {
  (void)st;
  for (int g = 0; g < 8; g++) {
    /* Q: f16 with a few significant bits (every product and sum exact in
     * double); K codes of 8 tokens as slot code bytes (FORMAT.md order). */
    uq_u32 q[16][256];
    uq_u8 kbytes[8][128];
    for (int r = 0; r < 16; r++)
      for (int d = 0; d < 256; d++)
        q[r][d] = ((rnd() & 1u) << 15) | ((10u + rnd() % 10u) << 10) | ((rnd() & 7u) << 7);
    for (int n = 0; n < 8; n++)
      for (int j = 0; j < 128; j++)
        kbytes[n][j] = (uq_u8)rnd();
    /* The kernel's shared-memory image of the query rows (the position
     * map is a permutation of each run of eight dims). */
    uq_u32 qs[16][256];
    int seen[256] = {0};
    for (int d = 0; d < 256; d++) {
      assert_int_equal(uq_mma_qk_pos(d) / 8, d / 8);
      seen[uq_mma_qk_pos(d)]++;
    }
    for (int d = 0; d < 256; d++)
      assert_int_equal(seen[d], 1);
    for (int r = 0; r < 16; r++)
      for (int d = 0; d < 256; d++)
        qs[r][uq_mma_qk_pos(d)] = q[r][d];
    double c[32][4];
    memset(c, 0, sizeof c);
    for (int step = 0; step < 2; step++) {
      uq_u32 a[32][4], b0[32], b1[32];
      for (int lane = 0; lane < 32; lane++) {
        int grp = lane / 4, tig = lane % 4;
        int at = uq_mma_qk_pos(uq_mma_qk_dim(g, tig, 0, 0, 0));
        assert_int_equal(at % 8, 0);
        uq_u32 x[2][4];
        for (int rr = 0; rr < 2; rr++)
          for (int w = 0; w < 4; w++)
            x[rr][w] = qs[grp + 8 * rr][at + 2 * w] | (qs[grp + 8 * rr][at + 2 * w + 1] << 16);
        a[lane][0] = x[0][2 * step];
        a[lane][1] = x[1][2 * step];
        a[lane][2] = x[0][2 * step + 1];
        a[lane][3] = x[1][2 * step + 1];
        uq_u32 word, r[4];
        memcpy(&word, kbytes[grp] + uq_mma_k_word_offset(g, tig), 4);
        uq_mma_fp4x8_f16s(word, r);
        b0[lane] = r[2 * step];
        b1[lane] = r[2 * step + 1];
        /* The documented maps agree with the registers just built. */
        for (int reg = 0; reg < 2; reg++)
          for (int e = 0; e < 2; e++)
            assert_int_equal(uq_mma_qk_pos(uq_mma_qk_dim(g, tig, step, reg, e)),
                             at + 4 * step + 2 * reg + e);
      }
      mma16(f16_value, (const uq_u32(*)[4])a, b0, b1, c);
    }
    for (int r = 0; r < 16; r++)
      for (int n = 0; n < 8; n++) {
        double want = 0;
        for (int d = 32 * g; d < 32 * g + 32; d++) {
          uq_u32 code = (kbytes[n][d / 2] >> (4 * (d % 2))) & 15u;
          want += f16_value(q[r][d]) * fp4_value[code];
        }
        /* C (row, col) is register 2 (row / 8) + col % 2 of lane
         * 4 (row % 8) + col / 2. */
        assert_true(c[4 * (r % 8) + n / 2][2 * (r / 8) + n % 2] * UQ_MMA_K_UNSCALE == want);
      }
  }
}

static uq_u16 small_bf16(void) {
  /* Small integers and halves: every product and sum is exact. */
  float f = (float)((int)(rnd() % 17) - 8) * 0.5f;
  return (uq_u16)(uq_f32_bits(f) >> 16);
}

/* The kernel's V path end to end: each lane converts the code words of
 * its token and warp (uq_mma_fp4x8_bf16s, times the scale factors) and
 * stores the four registers in order; PV reads them with the ldmatrix
 * maps; the output map (uq_mma_v_dim) names the head dim of each
 * accumulator. Expected: P times the FORMAT.md decoding of the slot. */
static void pv_maps_give_p_times_the_decoded_v_per_warp(void **st) {
  (void)st;
  enum { PROW = 40, VROW = 264 };
  static uq_u16 ps[16 * PROW], vs[32 * VROW];
  static uq_u8 vcode[32][128], vscale[32][8];
  for (size_t i = 0; i < sizeof ps / 2; i++)
    ps[i] = small_bf16();
  /* Scale bytes around 128 on both sides (both factor paths), narrow
   * enough that every sum is exact in double. */
  for (int t = 0; t < 32; t++) {
    for (int i = 0; i < 128; i++)
      vcode[t][i] = (uq_u8)rnd();
    for (int g = 0; g < 8; g++)
      vscale[t][g] = (uq_u8)(120 + rnd() % 17);
  }
  vscale[3][1] = 0; /* a zero group */
  for (int t = 0; t < 32; t++)
    for (int warp = 0; warp < 4; warp++)
      for (int i = 0; i < 8; i++) {
        uq_u32 word, r[4];
        memcpy(&word, vcode[t] + 32 * warp + 4 * i, 4);
        uq_mma_fp4x8_bf16s(word, r);
        uq_u32 byte = vscale[t][2 * warp + i / 4];
        uq_u32 lo = uq_mma_bf16_vscale_lo(byte) & 0xffffu;
        uq_u32 hi = uq_mma_bf16_vscale_hi(byte) & 0xffffu;
        for (int j = 0; j < 4; j++)
          for (int h = 0; h < 2; h++)
            vs[t * VROW + 64 * warp + 8 * i + 2 * j + h] =
                (uq_u16)bf16_mul_exact(bf16_mul_exact((r[j] >> (16 * h)) & 0xffffu, lo), hi);
      }
  for (int warp = 0; warp < 4; warp++) {
    double acc[8][32][4];
    memset(acc, 0, sizeof acc);
    for (int ks = 0; ks < 2; ks++) {
      int prow[32], pcol[32], vrow[32], vcol[32];
      for (int l = 0; l < 32; l++) {
        prow[l] = uq_mma_ldm_p_row(l);
        pcol[l] = 16 * ks + uq_mma_ldm_p_col(l);
      }
      uq_u32 pa[32][4];
      ldmatrix_x4(ps, PROW, prow, pcol, 0, pa);
      for (int jj = 0; jj < 4; jj++) {
        for (int l = 0; l < 32; l++) {
          vrow[l] = 16 * ks + uq_mma_ldm_v_tok(l);
          vcol[l] = 64 * warp + 16 * jj + uq_mma_ldm_v_dim(l);
        }
        uq_u32 vb[32][4], b[4][32];
        ldmatrix_x4(vs, VROW, vrow, vcol, 1, vb);
        for (int l = 0; l < 32; l++)
          for (int i = 0; i < 4; i++)
            b[i][l] = vb[l][i];
        mma16(bf16_value, (const uq_u32(*)[4])pa, b[0], b[1], acc[2 * jj]);
        mma16(bf16_value, (const uq_u32(*)[4])pa, b[2], b[3], acc[2 * jj + 1]);
      }
    }
    /* The kernel's output map: acc[j][lane][e] is row grp + 8 (e / 2),
     * head dim 64 warp + 8 j + uq_mma_v_dim(2 tig + e % 2). */
    int hit[64] = {0};
    for (int j = 0; j < 8; j++)
      for (int l = 0; l < 32; l++)
        for (int e = 0; e < 4; e++) {
          int row = l / 4 + 8 * (e / 2);
          int dim = 64 * warp + 8 * j + uq_mma_v_dim(2 * (l % 4) + e % 2);
          if (row == 0)
            hit[dim - 64 * warp]++;
          double want = 0;
          for (int t = 0; t < 32; t++) {
            uq_u32 code = (vcode[t][dim / 2] >> (4 * (dim % 2))) & 15u;
            uq_u32 byte = vscale[t][dim / 32];
            double scale = byte ? ldexp(1.0, (int)byte - 127) : 0.0;
            want += bf16_value(ps[row * PROW + t]) * fp4_value[code] * scale;
          }
          assert_true(acc[j][l][e] == want);
        }
    for (int d = 0; d < 64; d++)
      assert_int_equal(hit[d], 1); /* each dim written once per row */
  }
}

static uq_key decode_key(const char *target, int variant) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_DECODE;
  k.dtype = UQ_DTYPE_BF16;
  k.variant = variant;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.num_partitions = 16;
  k.max_blocks_per_seq = 32;
  k.query_group_size = 16;
  k.kv_block_size = 64;
  k.padded_slot = 272;
  k.fuse_qrot = 1;
  k.tile_groups_per_partition = 1;
  k.scale_e8 = 6250000;
  k.stride_q_head = 256;
  k.stride_q_seq = 16 * 256;
  assert_int_equal(uq__target_parse(target, k.target, sizeof k.target, NULL), 0);
  return k;
}

static int source_has(const uq_key *k, uq__route route, const char *needle) {
  uq__buf b;
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(k, route, &b), 0);
  uq__buf_puts(&b, "");
  int found = memmem(b.data, b.len, needle, strlen(needle)) != NULL;
  uq__buf_free(&b);
  return found;
}

static void emit_uses_the_matrix_layer_only_for_matrix_keys(void **st) {
  (void)st;
  uq_key m = decode_key("sm_90", UQ_VARIANT_MATRIX);
  uq_key p = decode_key("sm_90", UQ_VARIANT_PORTABLE);
  assert_true(source_has(&m, UQ__ROUTE_NVRTC, "---- decode_mma_sm90.hip ----"));
  assert_true(source_has(&m, UQ__ROUTE_NVRTC, "---- mma_sm90_maps.hip ----"));
  assert_false(source_has(&m, UQ__ROUTE_NVRTC, "---- decode.hip ----"));
  assert_true(source_has(&p, UQ__ROUTE_NVRTC, "---- decode.hip ----"));
  assert_false(source_has(&p, UQ__ROUTE_NVRTC, "---- decode_mma_sm90.hip ----"));
  /* The layer is four warps (it static_asserts 128 threads). */
  assert_int_equal(uq__gen_block_threads(&m), 128);
}

static void emit_refuses_matrix_keys_without_a_layer(void **st) {
  (void)st;
  uq__buf b;
  uq_key k = decode_key("gfx90a", UQ_VARIANT_MATRIX);
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  uq__buf_free(&b);
  k = decode_key("sm_80", UQ_VARIANT_MATRIX);
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &b), UQ_EINVAL);
  uq__buf_free(&b);
  k = decode_key("sm_90", UQ_VARIANT_MATRIX);
  k.head_dim = 128;
  k.stride_q_head = 128;
  k.stride_q_seq = 16 * 128;
  k.padded_slot = 136;
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &b), UQ_EINVAL);
  uq__buf_free(&b);
}

/* Position of a template's banner in the source of k; -1 when absent. */
static long part_at(const uq_key *k, const char *part) {
  uq__buf b;
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(k, UQ__ROUTE_NVRTC, &b), 0);
  char needle[96];
  snprintf(needle, sizeof needle, "/* ---- %s ---- */", part);
  const char *at = memmem(b.data, b.len, needle, strlen(needle));
  long pos = at ? (long)(at - b.data) : -1;
  uq__buf_free(&b);
  return pos;
}

/* The warpgroup layer (v2, sm_90a) is the matrix layer's maps, then its
 * own maps, then its kernel, after the shared numerics; the matrix and
 * portable keys of the same target do not include it. */
static void emit_uses_the_warpgroup_layer_only_for_warpgroup_keys(void **st) {
  (void)st;
  uq_key w = decode_key("sm_90a", UQ_VARIANT_WARPGROUP);
  long numerics = part_at(&w, "numerics.hip");
  long maps = part_at(&w, "mma_sm90_maps.hip");
  long wg_maps = part_at(&w, "wgmma_sm90_maps.hip");
  long kernel = part_at(&w, "decode_wgmma_sm90.hip");
  assert_true(part_at(&w, "prelude_nvrtc.hip") >= 0);
  assert_true(part_at(&w, "uq_abi.h") >= 0);
  assert_true(numerics >= 0);
  assert_true(maps > numerics);
  assert_true(wg_maps > maps);
  assert_true(kernel > wg_maps);
  assert_true(part_at(&w, "decode_mma_sm90.hip") < 0);
  assert_true(part_at(&w, "decode.hip") < 0);
  assert_true(source_has(&w, UQ__ROUTE_NVRTC, "constexpr int UQ_VARIANT = 2;"));
  assert_int_equal(uq__gen_block_threads(&w), 128);

  uq_key m = decode_key("sm_90a", UQ_VARIANT_MATRIX);
  uq_key p = decode_key("sm_90a", UQ_VARIANT_PORTABLE);
  assert_true(part_at(&m, "decode_mma_sm90.hip") >= 0);
  assert_true(part_at(&m, "wgmma_sm90_maps.hip") < 0);
  assert_true(part_at(&m, "decode_wgmma_sm90.hip") < 0);
  assert_true(part_at(&p, "decode.hip") >= 0);
  assert_true(part_at(&p, "decode_wgmma_sm90.hip") < 0);
}

/* Everything but the decode kernel is the same for v1 and v2: the reduce
 * and prologue sources differ only in the lines that spell the variant
 * (the name, the symbol and the UQ_VARIANT constant). */
static void emit_shares_reduce_and_prologue_between_fast_layers(void **st) {
  (void)st;
  static const uint32_t kinds[] = {UQ_KERNEL_REDUCE, UQ_KERNEL_PROLOGUE};
  for (int i = 0; i < 2; i++) {
    uq__buf src[2];
    for (int v = 0; v < 2; v++) {
      uq_key k = decode_key("sm_90a", v ? UQ_VARIANT_WARPGROUP
                                        : UQ_VARIANT_MATRIX);
      k.kind = kinds[i];
      k.max_blocks_per_seq = 0;
      k.kv_block_size = 0;
      k.padded_slot = 0;
      k.fuse_qrot = 0;
      k.tile_groups_per_partition = 0;
      k.scale_e8 = 0;
      k.stride_q_head = 0;
      k.stride_q_seq = 0;
      if (kinds[i] == UQ_KERNEL_PROLOGUE)
        k.num_partitions = 0;
      uq__buf_init(&src[v]);
      assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &src[v]), 0);
      uq__buf_puts(&src[v], "");
    }
    /* Line by line: any line mentioning the variant is v1 in one and v2
     * in the other; every other line is equal. */
    assert_true(src[0].status == 0 && src[1].status == 0);
    char *save0 = NULL, *save1 = NULL;
    char *l0 = strtok_r(src[0].data, "\n", &save0);
    char *l1 = strtok_r(src[1].data, "\n", &save1);
    int lines = 0, differing = 0;
    for (; l0 != NULL && l1 != NULL; lines++) {
      if (strcmp(l0, l1) != 0) {
        differing++;
        int spells = (strstr(l0, "_v1_") && strstr(l1, "_v2_")) ||
                     (strstr(l0, "UQ_VARIANT = 1;") &&
                      strstr(l1, "UQ_VARIANT = 2;"));
        if (!spells)
          fail_msg("kind %u differs beyond the variant:\n%s\n%s",
                   (unsigned)kinds[i], l0, l1);
      }
      l0 = strtok_r(NULL, "\n", &save0);
      l1 = strtok_r(NULL, "\n", &save1);
    }
    assert_null(l0);
    assert_null(l1);
    assert_true(lines > 20);
    assert_int_equal(differing, 3); /* header name, UQ_VARIANT, symbol */
    uq__buf_free(&src[0]);
    uq__buf_free(&src[1]);
  }
}

static void emit_refuses_warpgroup_keys_without_a_layer(void **st) {
  (void)st;
  static const struct {
    const char *target;
    uq__route route;
  } no_layer[] = {{"sm_90", UQ__ROUTE_NVRTC},
                  {"sm_100a", UQ__ROUTE_NVRTC},
                  {"sm_80", UQ__ROUTE_NVRTC},
                  {"gfx950", UQ__ROUTE_CLANG}};
  uq__buf b;
  for (size_t i = 0; i < sizeof no_layer / sizeof *no_layer; i++) {
    uq_key k = decode_key(no_layer[i].target, UQ_VARIANT_WARPGROUP);
    uq__buf_init(&b);
    assert_int_equal(uq__gen_source(&k, no_layer[i].route, &b), UQ_EINVAL);
    assert_non_null(strstr(uq_last_error(), "no warpgroup decode layer"));
    assert_int_equal(b.len, 0);
    uq__buf_free(&b);
    /* The plan's other kernels are refused there as well. */
    k.kind = UQ_KERNEL_PROLOGUE;
    k.num_partitions = k.max_blocks_per_seq = k.kv_block_size = 0;
    k.padded_slot = k.fuse_qrot = k.tile_groups_per_partition = 0;
    k.scale_e8 = k.stride_q_head = k.stride_q_seq = 0;
    uq__buf_init(&b);
    assert_int_equal(uq__gen_source(&k, no_layer[i].route, &b), UQ_EINVAL);
    uq__buf_free(&b);
  }
  /* The layer's shape limits are the matrix layer's. */
  uq_key k = decode_key("sm_90a", UQ_VARIANT_WARPGROUP);
  k.head_dim = 128;
  k.stride_q_head = 128;
  k.stride_q_seq = 16 * 128;
  k.padded_slot = 136;
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &b), UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "warpgroup decode layer serves"));
  uq__buf_free(&b);
  k = decode_key("sm_90a", UQ_VARIANT_WARPGROUP);
  k.query_group_size = 32;
  k.stride_q_seq = 32 * 256;
  uq__buf_init(&b);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &b), UQ_EINVAL);
  uq__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp4x8_to_f16_is_exact_up_to_the_k_unscale),
      cmocka_unit_test(fp4x8_to_bf16_is_exact_up_to_a_power_of_two),
      cmocka_unit_test(scale_encodings_decode_to_powers_of_two),
      cmocka_unit_test(qk_fragments_give_the_dot_product_of_each_group),
      cmocka_unit_test(pv_maps_give_p_times_the_decoded_v_per_warp),
      cmocka_unit_test(emit_uses_the_matrix_layer_only_for_matrix_keys),
      cmocka_unit_test(emit_refuses_matrix_keys_without_a_layer),
      cmocka_unit_test(emit_uses_the_warpgroup_layer_only_for_warpgroup_keys),
      cmocka_unit_test(emit_shares_reduce_and_prologue_between_fast_layers),
      cmocka_unit_test(emit_refuses_warpgroup_keys_without_a_layer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
