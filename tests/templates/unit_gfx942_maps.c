/* The gfx942 layer's lane maps and FP4 conversion
 * (templates/gfx942/gfx942_maps.hip, compiled here as host C) against
 * independent models:
 *  - the FP4 -> FNUZ conversion, every code in every nibble of a dword,
 *    against FORMAT.md's value table times 2^-7 and the FNUZ definition
 *    (bias 8, 0x80 NaN: -0 must give 0x00);
 *  - the query permutation is a permutation within runs of 8 dims and is
 *    where the B operand finds the dims the A operand holds;
 *  - the lanes' loads cover every byte of a 16-token tile's slots (K and V
 *    codes once, each token's scale bytes where its result lanes need
 *    them);
 *  - QK: K and the permuted query placed by the maps, read through a model
 *    of v_mfma_f32_16x16x32_fp8_fp8 written from AMD's Matrix Instruction
 *    Calculator (A lane 16 g + i byte s = k 8 g + s; D[i][j] in lane
 *    j + 16 (i >> 2), register i & 3), each group's result times its
 *    token's K scale, give q . k exactly; and without the permutation
 *    they do not;
 *  - PV: P straight from the QK result lanes and V as the maps load it,
 *    through the bf16 MFMA model, give P . V exactly, and every output
 *    (query, dim) is written once;
 *  - the K scale table in LDS is filled once and read as the result
 *    lanes need it;
 *  - the rotation lanes: the butterfly schedule equals uq_fwht bit for
 *    bit; the LDS budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "lib/format/format.h"

#include "tests/templates/template_host.h"

#include "templates/gfx942/gfx942_maps.hip"

enum { LANES = 64, TILE = 16, D = 256, SLOT = 272 };

static uint64_t rng = 0x13198a2e03707344ull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* FORMAT.md section 2. */
static const double fp4_value[16] = {0,  0.5,  1,  1.5,  2,  3,  4,  6,
                                     -0, -0.5, -1, -1.5, -2, -3, -4, -6};

/* E4M3FNUZ: bias 8, subnormals m / 8 x 2^-7, 0x80 NaN. */
static double fnuz_value(unsigned b) {
  if (b == 0x80u)
    return NAN;
  unsigned e = (b >> 3) & 15u, m = b & 7u;
  double v = e == 0 ? ldexp(m / 8.0, -7) : ldexp(1.0 + m / 8.0, (int)e - 8);
  return (b & 0x80u) ? -v : v;
}

/* ---- FP4 -> FNUZ ---- */

static void fp4_codes_become_fnuz_bytes_of_value_times_2_to_minus_7(void **st) {
  (void)st;
  for (int nib = 0; nib < 8; nib++)
    for (unsigned c = 0; c < 16; c++)
      for (int rep = 0; rep < 64; rep++) {
        uint32_t x = (rnd() << 16 ^ rnd()) & ~(15u << (4 * nib));
        x |= c << (4 * nib);
        uint32_t even, odd;
        uq_g942_fp4x8_to_fnuz(x, &even, &odd);
        /* code e of the dword -> byte e / 2 of even (e even) or odd */
        for (int e = 0; e < 8; e++) {
          unsigned code = (x >> (4 * e)) & 15u;
          unsigned byte = ((e & 1 ? odd : even) >> (8 * (e >> 1))) & 255u;
          assert_true(byte != 0x80u);
          assert_true(fnuz_value(byte) == ldexp(fp4_value[code], -7));
        }
        if (c == 8) /* -0 is +0 */
          assert_int_equal(((nib & 1 ? odd : even) >> (8 * (nib >> 1))) & 255u, 0u);
      }
}

/* ---- the query permutation ---- */

static void qperm_permutes_runs_of_8_and_matches_the_a_operand(void **st) {
  (void)st;
  int seen[D] = {0};
  for (int d = 0; d < D; d++) {
    int p = uq_g942_qperm(d);
    assert_in_range(p, 0, D - 1);
    assert_int_equal(p / 8, d / 8);
    /* even dims first, then odd (the FP4 -> FNUZ split) */
    assert_int_equal(p % 8, (d & 1) ? 4 + (d % 8) / 2 : (d % 8) / 2);
    seen[p]++;
  }
  for (int p = 0; p < D; p++)
    assert_int_equal(seen[p], 1);
  /* B byte s of lane L for group G holds the dim A byte s holds. */
  for (int lane = 0; lane < LANES; lane++)
    for (int G = 0; G < 8; G++)
      for (int s = 0; s < 8; s++) {
        int d = uq_g942_qk_dim(lane, G, s);
        assert_int_equal(d / 32, G);
        assert_int_equal(uq_g942_qperm(d), uq_g942_qk_b_byte(lane, G) + s);
        /* A byte s: code (s < 4 ? 2 s : 2 (s - 4) + 1) of the dword */
        int code = s < 4 ? 2 * s : 2 * (s - 4) + 1;
        assert_int_equal(2 * (uq_g942_qk_a_byte(lane, G) - UQ_G942_SLOT_K) + code, d);
      }
}

/* ---- what the lanes load ---- */

static void loads_cover_every_slot_byte_of_a_tile(void **st) {
  (void)st;
  int hits[TILE][SLOT];
  memset(hits, 0, sizeof hits);
  /* K codes: token qk_a_token, a dword per group. */
  for (int lane = 0; lane < LANES; lane++)
    for (int G = 0; G < 8; G++) {
      int b = uq_g942_qk_a_byte(lane, G);
      assert_int_equal(b % 4, 0);
      for (int i = 0; i < 4; i++)
        hits[uq_g942_qk_a_token(lane)][b + i]++;
    }
  /* V codes: 8 bytes of each result token. */
  for (int lane = 0; lane < LANES; lane++)
    for (int r = 0; r < 4; r++) {
      int b = uq_g942_v_code_byte(lane);
      assert_int_equal(b % 4, 0);
      for (int i = 0; i < 8; i++)
        hits[uq_g942_acc_token(lane, r)][b + i]++;
    }
  for (int t = 0; t < TILE; t++) {
    for (int b = 0; b < 128; b++)
      assert_int_equal(hits[t][b], 1);
    for (int b = 136; b < 264; b++)
      assert_int_equal(hits[t][b], 1);
  }
  /* The V scale byte a lane uses is its dims' group. */
  for (int lane = 0; lane < LANES; lane++) {
    int word = uq_g942_v_scale_byte(lane);
    assert_int_equal(word % 4, 0);
    int used = word + uq_g942_v_scale_shift(lane) / 8;
    for (int m = 0; m < 16; m++)
      assert_int_equal(264 + uq_g942_v_dim(lane, m) / 32, used);
  }
}

/* ---- QK through the CDNA3 FP8 MFMA model ---- */

typedef struct qk_tile {
  uint8_t kcode[TILE][D / 2]; /* slot code bytes */
  uint8_t kscale[TILE][8];
  uint8_t q[16][D];       /* logical FNUZ query rows (16 columns) */
  uint8_t qstored[16][D]; /* as the kernel stores them */
} qk_tile;

static int k_nibble(const qk_tile *t, int tok, int dim) {
  return (t->kcode[tok][dim / 2] >> (4 * (dim & 1))) & 15;
}

static void random_qk_tile(qk_tile *t, int permute) {
  for (int tok = 0; tok < TILE; tok++) {
    for (int b = 0; b < D / 2; b++)
      t->kcode[tok][b] = (uint8_t)rnd();
    for (int g = 0; g < 8; g++)
      t->kscale[tok][g] = (uint8_t)(118 + rnd() % 15);
  }
  for (int j = 0; j < 16; j++)
    for (int d = 0; d < D; d++) {
      unsigned q;
      do
        q = rnd() & 0xffu;
      while (q == 0x80u);
      t->q[j][d] = (uint8_t)q;
      t->qstored[j][permute ? uq_g942_qperm(d) : d] = (uint8_t)q;
    }
}

/* Each lane's result registers: sum over groups of the scale times the
 * MFMA model's D. A and B as the maps and the conversion fill them. */
static void qk_model(const qk_tile *t, double acc[LANES][4]) {
  memset(acc, 0, sizeof(double) * LANES * 4);
  for (int G = 0; G < 8; G++) {
    uint8_t a[LANES][8], b[LANES][8];
    for (int lane = 0; lane < LANES; lane++) {
      const uint8_t *c = &t->kcode[uq_g942_qk_a_token(lane)][uq_g942_qk_a_byte(lane, G)];
      uint32_t x = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 |
                   (uint32_t)c[3] << 24;
      uint32_t w[2];
      uq_g942_fp4x8_to_fnuz(x, &w[0], &w[1]);
      for (int s = 0; s < 8; s++)
        a[lane][s] = (uint8_t)(w[s >> 2] >> (8 * (s & 3)));
      memcpy(b[lane], &t->qstored[uq_g942_qk_b_query(lane)][uq_g942_qk_b_byte(lane, G)], 8);
    }
    /* A[i][k] = byte k - 8 (k >> 3) of lane 16 (k >> 3) + i. */
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++) {
        double d = 0;
        for (int k = 0; k < 32; k++)
          d += fnuz_value(a[16 * (k >> 3) + i][k & 7]) * fnuz_value(b[16 * (k >> 3) + j][k & 7]);
        int lane = j + 16 * (i >> 2), r = i & 3;
        assert_int_equal(uq_g942_acc_token(lane, r), i);
        d *= ldexp(1.0, (int)t->kscale[i][G] - 127);
        acc[lane][r] += d;
      }
  }
}

static double qk_ref(const qk_tile *t, int tok, int q) {
  double dot = 0;
  for (int d = 0; d < D; d++)
    dot += fnuz_value(t->q[q][d]) * fp4_value[k_nibble(t, tok, d)] *
           ldexp(1.0, (int)t->kscale[tok][d / 32] - 127);
  return dot;
}

static void qk_maps_and_qperm_reproduce_q_dot_k_through_the_cdna3_layouts(void **st) {
  (void)st;
  static qk_tile t;
  for (int rep = 0; rep < 8; rep++) {
    random_qk_tile(&t, 1);
    double acc[LANES][4];
    qk_model(&t, acc);
    for (int lane = 0; lane < LANES; lane++)
      for (int r = 0; r < 4; r++) {
        /* the K bytes carry 2^-7 */
        double want = qk_ref(&t, uq_g942_acc_token(lane, r), uq_g942_acc_query(lane));
        assert_true(acc[lane][r] * 128.0 == want);
      }
  }
}

static void qk_without_qperm_differs_from_q_dot_k(void **st) {
  (void)st;
  static qk_tile t;
  random_qk_tile(&t, 0);
  double acc[LANES][4];
  qk_model(&t, acc);
  int differ = 0;
  for (int lane = 0; lane < LANES; lane++)
    differ += acc[lane][0] * 128.0 !=
              qk_ref(&t, uq_g942_acc_token(lane, 0), uq_g942_acc_query(lane));
  assert_true(differ > 32);
}

/* ---- PV through the bf16 MFMA model ---- */

static double small_value(void) {
  return ldexp((double)((int)(rnd() % 33) - 16), -(int)(rnd() % 8));
}

static void pv_maps_reproduce_p_dot_v(void **st) {
  (void)st;
  static double v[TILE][D];  /* V[token][dim] */
  static double p[TILE][16]; /* P[token][query] */
  for (int rep = 0; rep < 4; rep++) {
    for (int tok = 0; tok < TILE; tok++) {
      for (int d = 0; d < D; d++)
        v[tok][d] = small_value();
      for (int q = 0; q < 16; q++)
        p[tok][q] = small_value();
    }
    double pb[LANES][4];
    for (int lane = 0; lane < LANES; lane++)
      for (int r = 0; r < 4; r++)
        pb[lane][r] = p[uq_g942_acc_token(lane, r)][uq_g942_acc_query(lane)];
    int written[16][D];
    memset(written, 0, sizeof written);
    for (int m = 0; m < 16; m++) {
      /* A lane 16 g + i element e: token acc_token(lane, e), dim v_dim. */
      double va[LANES][4];
      for (int lane = 0; lane < LANES; lane++)
        for (int e = 0; e < 4; e++)
          va[lane][e] = v[uq_g942_acc_token(lane, e)][uq_g942_v_dim(lane, m)];
      /* v_mfma_f32_16x16x16_bf16 ([MIC] cdna3: A[i][k] lane
       * 16 floor(k / 4) + i, element k % 4; D as the FP8 one). */
      double acc[LANES][4];
      for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
          double sum = 0;
          for (int k = 0; k < 16; k++)
            sum += va[16 * (k >> 2) + i][k & 3] * pb[16 * (k >> 2) + j][k & 3];
          acc[j + 16 * (i >> 2)][i & 3] = sum;
        }
      for (int lane = 0; lane < LANES; lane++)
        for (int r = 0; r < 4; r++) {
          int dim = uq_g942_pv_dim(lane, m, r), q = uq_g942_acc_query(lane);
          assert_in_range(dim, 0, D - 1);
          written[q][dim]++;
          double dot = 0;
          for (int tok = 0; tok < TILE; tok++)
            dot += p[tok][q] * v[tok][dim];
          assert_true(acc[lane][r] == dot);
        }
    }
    for (int q = 0; q < 16; q++)
      for (int d = 0; d < D; d++)
        assert_int_equal(written[q][d], 1);
  }
  /* The output store pairs dims m, m + 1 (m even) of one register. */
  for (int lane = 0; lane < LANES; lane++)
    for (int r = 0; r < 4; r++)
      for (int m = 0; m < 16; m += 2) {
        assert_int_equal(uq_g942_pv_dim(lane, m, r) % 2, 0);
        assert_int_equal(uq_g942_pv_dim(lane, m + 1, r), uq_g942_pv_dim(lane, m, r) + 1);
      }
}

/* ---- the fused rotation ---- */

static float rnd_float(void) {
  return (float)((int32_t)(rnd() & 0xffffu) - (1 << 15)) / 977.0f;
}

static void butterfly_schedule_equals_uq_fwht_bit_for_bit(void **st) {
  (void)st;
  for (int rep = 0; rep < 8; rep++)
    for (int pass = 0; pass < 2; pass++) {
      float rows[32][D], want[32][D];
      for (int r = 0; r < 32; r++)
        for (int d = 0; d < D; d++)
          rows[r][d] = want[r][d] = rnd_float();
      float reg[LANES][32];
      int covered[32][8] = {{0}};
      for (int lane = 0; lane < LANES; lane++) {
        int row = uq_g942_rot_row(lane, pass), run = uq_g942_rot_run(lane);
        assert_in_range(row, 8 * pass, 8 * pass + 7);
        covered[row][run]++;
        memcpy(reg[lane], &rows[row][32 * run], sizeof reg[lane]);
        for (int h = 1; h < 32; h *= 2)
          for (int i = 0; i < 32; i += 2 * h)
            for (int j = i; j < i + h; j++) {
              float a = reg[lane][j], b = reg[lane][j + h];
              reg[lane][j] = a + b;
              reg[lane][j + h] = a - b;
            }
      }
      for (int row = 8 * pass; row < 8 * pass + 8; row++)
        for (int run = 0; run < 8; run++)
          assert_int_equal(covered[row][run], 1);
      for (int s = 0; s < 3; s++) {
        float next[LANES][32];
        for (int lane = 0; lane < LANES; lane++) {
          int mate = lane ^ uq_g942_rot_xor(s);
          assert_int_equal(mate >> 5, lane >> 5); /* ds_swizzle: a 32-lane half */
          assert_int_equal(uq_g942_rot_row(mate, pass), uq_g942_rot_row(lane, pass));
          assert_int_equal(uq_g942_rot_run(mate), uq_g942_rot_run(lane) ^ (1 << s));
          int high = (uq_g942_rot_run(lane) >> s) & 1;
          for (int e = 0; e < 32; e++)
            next[lane][e] = high ? reg[mate][e] - reg[lane][e] : reg[lane][e] + reg[mate][e];
        }
        memcpy(reg, next, sizeof reg);
      }
      for (int row = 8 * pass; row < 8 * pass + 8; row++)
        uq__fwht_f32(want[row], D);
      for (int lane = 0; lane < LANES; lane++)
        for (int e = 0; e < 32; e++) {
          float got = reg[lane][e] * (1.0f / 16.0f);
          float ref = want[uq_g942_rot_row(lane, pass)][32 * uq_g942_rot_run(lane) + e];
          assert_memory_equal(&got, &ref, sizeof got);
        }
    }
}

/* ---- the K scale table ---- */

/* Each lane converts two scale bytes of its K token: together the lanes
 * fill the table's 16 tokens x 8 groups once, each from that token's
 * scale byte of that group; a result lane's four tokens of a group are 4
 * consecutive, 16-byte aligned words. */
static void k_scale_table_is_filled_once_and_read_by_the_result_lanes(void **st) {
  (void)st;
  int filled[8 * TILE] = {0};
  for (int lane = 0; lane < LANES; lane++)
    for (int k = 0; k < 2; k++) {
      int G = uq_g942_ks_group(lane, k), t = uq_g942_qk_a_token(lane);
      int byte = uq_g942_ks_byte(lane) + uq_g942_ks_shift(lane, k) / 8;
      assert_int_equal(uq_g942_ks_byte(lane) % 4, 0);
      assert_int_equal(byte, 128 + G); /* FORMAT.md: the group's scale byte */
      filled[uq_g942_ks_index(G, t)]++;
    }
  for (int i = 0; i < 8 * TILE; i++)
    assert_int_equal(filled[i], 1);
  for (int lane = 0; lane < LANES; lane++)
    for (int G = 0; G < 8; G++) {
      int w0 = uq_g942_ks_index(G, uq_g942_acc_token(lane, 0));
      assert_int_equal(w0 % 4, 0);
      for (int r = 0; r < 4; r++)
        assert_int_equal(uq_g942_ks_index(G, uq_g942_acc_token(lane, r)), w0 + r);
    }
}

/* ---- LDS ---- */

/* The 16 query rows (padding rows zero) and the K scale table, 4.5 KiB
 * at every QG: 14 workgroups fit a CU's 64 KiB, more than the registers
 * allow; a B read (8 bytes at row q, byte qk_b_byte) stays in its row and
 * is 8-byte aligned. */
static void lds_holds_the_query_rows_and_the_k_scales(void **st) {
  (void)st;
  assert_int_equal(UQ_G942_LDS_BYTES, 16 * 256 + 512);
  assert_int_equal(UQ_G942_LDS_KSCALES, 8 * TILE * 4);
  assert_int_equal(UQ_G942_LDS_QROWS, 16); /* every MFMA column */
  assert_true(65536 / UQ_G942_LDS_BYTES >= 12);
  for (int lane = 0; lane < LANES; lane++)
    for (int G = 0; G < 8; G++) {
      int b = uq_g942_qk_b_byte(lane, G);
      assert_int_equal(b % 8, 0);
      assert_true(b + 8 <= UQ_G942_LDS_QROW);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp4_codes_become_fnuz_bytes_of_value_times_2_to_minus_7),
      cmocka_unit_test(qperm_permutes_runs_of_8_and_matches_the_a_operand),
      cmocka_unit_test(loads_cover_every_slot_byte_of_a_tile),
      cmocka_unit_test(qk_maps_and_qperm_reproduce_q_dot_k_through_the_cdna3_layouts),
      cmocka_unit_test(qk_without_qperm_differs_from_q_dot_k),
      cmocka_unit_test(pv_maps_reproduce_p_dot_v),
      cmocka_unit_test(butterfly_schedule_equals_uq_fwht_bit_for_bit),
      cmocka_unit_test(k_scale_table_is_filled_once_and_read_by_the_result_lanes),
      cmocka_unit_test(lds_holds_the_query_rows_and_the_k_scales),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
