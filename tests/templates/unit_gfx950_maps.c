/* The gfx950 layer's lane maps (templates/gfx950/gfx950_maps.hip, compiled
 * here as host C) against independent models:
 *  - the query permutation against docs/KERNELS.md's formula;
 *  - the staging loads cover every byte of a 16-token tile's slots once;
 *  - QK: K and the permuted Q placed by the maps, read through a model of
 *    the CDNA4 operand layouts of v_mfma_scale_f32_16x16x128_f8f6f4
 *    (A lane 16 g + i nibble e = k 32 g + e; B lane 16 g + j byte s =
 *    k 16 g + (s & 15) + 64 (s >> 4); D[i][j] in lane j + 16 (i >> 2),
 *    register i & 3; scale of A row i block kb in lane 16 kb + i), give
 *    q . k exactly: the check that the permutation and the maps agree with
 *    the hardware layouts;
 *  - PV: P straight from the QK result lanes as the B operand and V read
 *    through a model of ds_read_b64_tr_b16 give P . V exactly;
 *  - the rotation lanes: the butterfly schedule equals uq_fwht bit for bit;
 *  - the LDS regions never overlap and hold what the maps address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "lib/format/format.h"

#include "tests/templates/template_host.h"

#include "templates/gfx950/gfx950_maps.hip"

enum { LANES = 64, TILE = 16, D = 256, SLOT = 272, VROW = D + 8 };

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* FORMAT.md section 2. */
static const double fp4_value[16] = {0,  0.5,  1,  1.5,  2,  3,  4,  6,
                                     -0, -0.5, -1, -1.5, -2, -3, -4, -6};

/* OCP E4M3FN (0x7f / 0xff are NaN: callers never pass them). */
static double e4m3_value(unsigned b) {
  unsigned e = (b >> 3) & 15u, m = b & 7u;
  double v = e == 0 ? ldexp((double)m, -9) : ldexp(1.0 + m / 8.0, (int)e - 7);
  return (b & 0x80u) ? -v : v;
}

/* ---- the query permutation ---- */

/* KERNELS.md: within each 128-dim slice, group g element s sits at
 * 32 (s >> 4) + 64 (g % 2) + 16 (g / 2) + (s & 15). */
static int qperm_model(int d) {
  int slice = d / 128, within = d % 128;
  int g = within / 32, s = within % 32;
  return 128 * slice + 32 * (s / 16) + 64 * (g % 2) + 16 * (g / 2) + s % 16;
}

static void qperm_is_a_permutation_equal_to_the_kernels_md_formula(void **st) {
  (void)st;
  int seen[D] = {0};
  for (int d = 0; d < D; d++) {
    int p = uq_g950_qperm(d);
    assert_in_range(p, 0, D - 1);
    assert_int_equal(p, qperm_model(d));
    assert_int_equal(p / 128, d / 128); /* stays in its MFMA's half */
    seen[p]++;
  }
  for (int p = 0; p < D; p++)
    assert_int_equal(seen[p], 1);
}

/* ---- staging loads ---- */

static void staging_loads_cover_every_slot_byte_of_a_tile_once(void **st) {
  (void)st;
  int hits[TILE][SLOT];
  memset(hits, 0, sizeof hits);
  for (int lane = 0; lane < LANES; lane++) {
    int t = uq_g950_stage_token(lane), c = uq_g950_stage_chunk(lane);
    assert_in_range(t, 0, TILE - 1);
    assert_in_range(c, 0, 3);
    for (int v = 0; v < 2; v++) {
      for (int part = 0; part < 2; part++) {
        int b = uq_g950_stage_code_byte(lane, v, part);
        assert_int_equal(b % 16, (v ? 136 : 0) % 16); /* 16-byte loads */
        for (int i = 0; i < 16; i++)
          hits[t][b + i]++;
      }
      /* The chunk's code bytes are dims 64 c .. 64 c + 63: groups 2 c and
       * 2 c + 1, whose scale bytes are the two the lane uses. */
      int dword = uq_g950_stage_scale_byte(lane, v);
      int scales = v ? 264 : 128;
      assert_int_equal((dword - scales) % 4, 0);
      for (int k = 0; k < 2; k++) {
        int used = dword + 2 * (c & 1) + k;
        assert_int_equal(used, scales + 2 * c + k);
        hits[t][used]++;
      }
    }
  }
  for (int t = 0; t < TILE; t++)
    for (int b = 0; b < SLOT; b++)
      assert_int_equal(hits[t][b], 1);
}

/* ---- QK through the CDNA4 operand model ---- */

typedef struct qk_tile {
  uint8_t kcode[TILE][D / 2]; /* slot code bytes, natural order */
  uint8_t kscale[TILE][8];
  uint8_t qbyte[TILE][D];     /* logical E4M3 query rows (16 columns) */
  uint8_t qstored[TILE][D];   /* as the kernel stores them: permuted */
} qk_tile;

static int k_nibble(const qk_tile *t, int tok, int dim) {
  return (t->kcode[tok][dim / 2] >> (4 * (dim & 1))) & 15;
}

/* Lane registers as the kernel fills them from the maps. */
static void qk_lanes(const qk_tile *t, int h, uint8_t a[LANES][16],
                     uint8_t asc[LANES], uint8_t b[LANES][32]) {
  for (int lane = 0; lane < LANES; lane++) {
    int tok = uq_g950_qk_a_token(lane);
    memcpy(a[lane], &t->kcode[tok][uq_g950_qk_a_byte(lane, h)], 16);
    asc[lane] = t->kscale[tok][uq_g950_qk_a_scale_group(lane, h)];
    memcpy(b[lane], &t->qstored[uq_g950_qk_b_query(lane)][uq_g950_qk_b_byte(lane, h)],
           32);
  }
}

/* The hardware model: D[i][j] += sum_kb 2^(sa(i, kb) - 127) sum_k A B,
 * scale of B 127 (1.0). Exact in double for these ranges. */
static void mfma_scale_model(uint8_t a[LANES][16], const uint8_t asc[LANES],
                             uint8_t b[LANES][32], double acc[LANES][4]) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double sum = 0;
      for (int k = 0; k < 128; k++) {
        int al = 16 * (k >> 5) + i, e = k & 31;
        int av = (a[al][e >> 1] >> (4 * (e & 1))) & 15;
        int bl = 16 * ((k >> 4) & 3) + j, s = (k & 15) + 16 * (k >> 6);
        double sa = ldexp(1.0, (int)asc[16 * (k >> 5) + i] - 127);
        sum += fp4_value[av] * sa * e4m3_value(b[bl][s]);
      }
      acc[j + 16 * (i >> 2)][i & 3] += sum;
    }
}

static void random_qk_tile(qk_tile *t) {
  for (int tok = 0; tok < TILE; tok++) {
    for (int b = 0; b < D / 2; b++)
      t->kcode[tok][b] = (uint8_t)rnd();
    for (int g = 0; g < 8; g++)
      t->kscale[tok][g] = (uint8_t)(120 + rnd() % 15);
    for (int d = 0; d < D; d++) {
      unsigned q;
      do
        q = rnd() & 0xffu;
      while ((q & 0x7fu) == 0x7fu);
      t->qbyte[tok][d] = (uint8_t)q;
      t->qstored[tok][uq_g950_qperm(d)] = (uint8_t)q;
    }
  }
}

static void qk_maps_and_qperm_reproduce_q_dot_k_through_the_cdna4_layouts(
    void **st) {
  (void)st;
  static qk_tile t;
  for (int rep = 0; rep < 8; rep++) {
    random_qk_tile(&t);
    double acc[LANES][4] = {{0}};
    for (int h = 0; h < 2; h++) {
      uint8_t a[LANES][16], asc[LANES], b[LANES][32];
      qk_lanes(&t, h, a, asc, b);
      mfma_scale_model(a, asc, b, acc);
    }
    for (int lane = 0; lane < LANES; lane++)
      for (int r = 0; r < 4; r++) {
        int tok = uq_g950_acc_token(lane, r), q = uq_g950_acc_query(lane);
        double dot = 0;
        for (int d = 0; d < D; d++)
          dot += e4m3_value(t.qbyte[q][d]) * fp4_value[k_nibble(&t, tok, d)] *
                 ldexp(1.0, (int)t.kscale[tok][d / 32] - 127);
        assert_true(acc[lane][r] == dot);
      }
  }
}

/* Without the permutation the same lanes give another (wrong) product:
 * the check above can fail. */
static void qk_without_qperm_differs_from_q_dot_k(void **st) {
  (void)st;
  static qk_tile t;
  random_qk_tile(&t);
  memcpy(t.qstored, t.qbyte, sizeof t.qstored);
  double acc[LANES][4] = {{0}};
  for (int h = 0; h < 2; h++) {
    uint8_t a[LANES][16], asc[LANES], b[LANES][32];
    qk_lanes(&t, h, a, asc, b);
    mfma_scale_model(a, asc, b, acc);
  }
  int differ = 0;
  for (int lane = 0; lane < LANES; lane++) {
    int tok = uq_g950_acc_token(lane, 0), q = uq_g950_acc_query(lane);
    double dot = 0;
    for (int d = 0; d < D; d++)
      dot += e4m3_value(t.qbyte[q][d]) * fp4_value[k_nibble(&t, tok, d)] *
             ldexp(1.0, (int)t.kscale[tok][d / 32] - 127);
    differ += acc[lane][0] != dot;
  }
  assert_true(differ > 32);
}

/* ---- PV through ds_read_b64_tr_b16 and the bf16 MFMA model ---- */

/* A bf16 with a short mantissa, so that products and 16-term sums are
 * exact in double. */
static double small_value(void) {
  return ldexp((double)((int)(rnd() % 33) - 16), -(int)(rnd() % 8));
}

static void pv_maps_reproduce_p_dot_v_through_the_transposed_reads(void **st) {
  (void)st;
  static double vt[TILE][VROW]; /* the bf16 V tile in LDS, padded rows */
  static double p[TILE][16];    /* P[token][query] */
  for (int rep = 0; rep < 4; rep++) {
    for (int tok = 0; tok < TILE; tok++) {
      for (int d = 0; d < VROW; d++)
        vt[tok][d] = d < D ? small_value() : NAN; /* padding never read */
      for (int q = 0; q < 16; q++)
        p[tok][q] = small_value();
    }
    /* P's B operand: the QK result registers, unchanged. */
    double pb[LANES][4];
    for (int lane = 0; lane < LANES; lane++)
      for (int r = 0; r < 4; r++)
        pb[lane][r] = p[uq_g950_acc_token(lane, r)][uq_g950_acc_query(lane)];
    for (int m = 0; m < 16; m++) {
      /* ds_read_b64_tr_b16: element e of lane 16 g + l is 16-bit element
       * (l & 3) of the 8 bytes at the address of lane 16 g + 4 e + (l >> 2). */
      double va[LANES][4];
      for (int lane = 0; lane < LANES; lane++)
        for (int e = 0; e < 4; e++) {
          int src = 16 * (lane >> 4) + 4 * e + ((lane & 15) >> 2);
          int tok = uq_g950_vtr_token(src), dim = uq_g950_vtr_dim(src, m);
          assert_int_equal(dim % 4, 0); /* 8-byte aligned */
          va[lane][e] = vt[tok][dim + (lane & 3)];
        }
      /* v_mfma_f32_16x16x16_bf16: A[i][k] = element k & 3 of lane
       * 16 (k >> 2) + i, B[k][j] likewise, D[i][j] in lane j + 16 (i >> 2),
       * register i & 3. */
      double acc[LANES][4] = {{0}};
      for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
          double sum = 0;
          for (int k = 0; k < 16; k++)
            sum += va[16 * (k >> 2) + i][k & 3] * pb[16 * (k >> 2) + j][k & 3];
          acc[j + 16 * (i >> 2)][i & 3] = sum;
        }
      for (int lane = 0; lane < LANES; lane++)
        for (int r = 0; r < 4; r++) {
          int dim = uq_g950_pv_dim(lane, m, r), q = uq_g950_acc_query(lane);
          double dot = 0;
          for (int tok = 0; tok < TILE; tok++)
            dot += p[tok][q] * vt[tok][dim];
          assert_true(acc[lane][r] == dot);
        }
    }
  }
}

/* ---- the fused rotation ---- */

static float rnd_float(void) {
  return (float)((int32_t)(rnd() & 0xffffu) - (1 << 15)) / 977.0f;
}

/* One pass: 8 rows, lane L holds run rot_run(L) of row rot_row(L, pass);
 * in-lane strides 1..16, then the XOR exchanges for 32, 64, 128 (within a
 * 32-lane half: ds_swizzle), then x 1/16. */
static void butterfly_schedule_equals_uq_fwht_bit_for_bit(void **st) {
  (void)st;
  for (int rep = 0; rep < 16; rep++)
    for (int pass = 0; pass < 2; pass++) {
      float rows[32][D], want[32][D];
      for (int r = 0; r < 32; r++)
        for (int d = 0; d < D; d++)
          rows[r][d] = want[r][d] = rnd_float();
      float reg[LANES][32];
      int covered[32][8] = {{0}};
      for (int lane = 0; lane < LANES; lane++) {
        int row = uq_g950_rot_row(lane, pass), run = uq_g950_rot_run(lane);
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
          int mate = lane ^ uq_g950_rot_xor(s);
          assert_int_equal(mate >> 5, lane >> 5);
          assert_int_equal(uq_g950_rot_row(mate, pass), uq_g950_rot_row(lane, pass));
          assert_int_equal(uq_g950_rot_run(mate), uq_g950_rot_run(lane) ^ (1 << s));
          int high = (uq_g950_rot_run(lane) >> s) & 1;
          for (int e = 0; e < 32; e++)
            next[lane][e] = high ? reg[mate][e] - reg[lane][e]
                                 : reg[lane][e] + reg[mate][e];
        }
        memcpy(reg, next, sizeof reg);
      }
      for (int row = 8 * pass; row < 8 * pass + 8; row++)
        uq__fwht_f32(want[row], D);
      for (int lane = 0; lane < LANES; lane++)
        for (int e = 0; e < 32; e++) {
          float got = reg[lane][e] * (1.0f / 16.0f);
          float ref = want[uq_g950_rot_row(lane, pass)][32 * uq_g950_rot_run(lane) + e];
          assert_memory_equal(&got, &ref, sizeof got);
        }
    }
}

/* ---- LDS regions ---- */

typedef struct lds_region {
  const char *name;
  int offset, size;
} lds_region;

/* The production layout (KERNELS.md: 64 + QG * 512 + 8448 + 512 bytes:
 * misc, Q, the shared K/V tile, P). At merge the integrator points this
 * table at the constants decode_gfx950.hip defines for its LDS layout. */
static int production_layout(int qg, lds_region out[4]) {
  const lds_region r[4] = {{"misc", 0, 64},
                           {"q", 64, qg * 512},
                           {"kv_tile", 64 + qg * 512, 8448},
                           {"p", 64 + qg * 512 + 8448, 512}};
  memcpy(out, r, sizeof r);
  return 4;
}

/* 0 when no two regions overlap, every region is 16-byte aligned and the
 * total fits `limit`; else the index of the first offending region + 1. */
static int lds_regions_check(const lds_region *r, int n, int limit) {
  for (int a = 0; a < n; a++) {
    if (r[a].offset % 16 != 0 || r[a].size <= 0 ||
        r[a].offset + r[a].size > limit)
      return a + 1;
    for (int b = 0; b < a; b++)
      if (r[a].offset < r[b].offset + r[b].size &&
          r[b].offset < r[a].offset + r[a].size)
        return a + 1;
  }
  return 0;
}

static void lds_regions_never_overlap_and_fit_the_budget(void **st) {
  (void)st;
  const int qgs[3] = {6, 8, 16};
  for (int k = 0; k < 3; k++) {
    lds_region r[4];
    int n = production_layout(qgs[k], r), total = 0;
    for (int i = 0; i < n; i++)
      total += r[i].size;
    assert_int_equal(total, 64 + qgs[k] * 512 + 8448 + 512);
    assert_int_equal(lds_regions_check(r, n, 17216), 0);
    /* What lives there: the permuted E4M3 query rows, the bf16 V tile
     * with padded rows (and the K codes before it), read within bounds. */
    assert_true(r[1].size >= qgs[k] * D);
    assert_true(r[2].size >= TILE * VROW * 2);
    assert_true(r[2].size >= TILE * D / 2);
    for (int lane = 0; lane < LANES; lane++)
      for (int m = 0; m < 16; m++) {
        int byte = 2 * (uq_g950_vtr_token(lane) * VROW + uq_g950_vtr_dim(lane, m));
        assert_int_equal(byte % 8, 0);
        assert_true(byte + 8 <= r[2].size);
      }
  }
  assert_int_equal(64 + 16 * 512 + 8448 + 512, 17216);
}

/* The check rejects overlapping, misaligned and oversized layouts. */
static void lds_regions_check_rejects_bad_layouts(void **st) {
  (void)st;
  const lds_region overlap[2] = {{"a", 0, 64}, {"b", 48, 64}};
  const lds_region misaligned[2] = {{"a", 0, 64}, {"b", 72, 64}};
  const lds_region big[1] = {{"a", 0, 20000}};
  assert_int_equal(lds_regions_check(overlap, 2, 17216), 2);
  assert_int_equal(lds_regions_check(misaligned, 2, 17216), 2);
  assert_int_equal(lds_regions_check(big, 1, 17216), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(qperm_is_a_permutation_equal_to_the_kernels_md_formula),
      cmocka_unit_test(staging_loads_cover_every_slot_byte_of_a_tile_once),
      cmocka_unit_test(qk_maps_and_qperm_reproduce_q_dot_k_through_the_cdna4_layouts),
      cmocka_unit_test(qk_without_qperm_differs_from_q_dot_k),
      cmocka_unit_test(pv_maps_reproduce_p_dot_v_through_the_transposed_reads),
      cmocka_unit_test(butterfly_schedule_equals_uq_fwht_bit_for_bit),
      cmocka_unit_test(lds_regions_never_overlap_and_fit_the_budget),
      cmocka_unit_test(lds_regions_check_rejects_bad_layouts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
