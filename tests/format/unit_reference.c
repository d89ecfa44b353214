/* The CPU reference decode (FORMAT.md section 5) against a naive dense
 * computation written here, plus every refusal. The CPU store:
 * unit_reference_store.c. */
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

#include "tests/support/testkit.h"
#include "uqjit.h"

typedef struct config {
  int32_t batch, hq, hk, d, block_size, padded_slot;
  uq_dtype dtype;
  int64_t stride_seq, stride_head;
  float scale;
  int32_t seq_lens[4];
} config;

/* One decode problem: the testkit's, and the naive answer. */
typedef struct problem {
  synth_problem tk;
  double *naive; /* [B, Hq, D] */
} problem;

static float q_to_f32(uq_dtype dtype, uint16_t h) {
  return dtype == UQ_DTYPE_FP16 ? synth_fp16_to_f32(h) : synth_bf16_to_f32(h);
}

/* The naive dense computation: every slot dequantized with uq_decode_slot
 * (its exactness is checked in unit_format_slot.c), the query rotated and
 * haircut with the fp32 contract functions, the rest written out plainly. */
static void naive_decode(problem *p) {
  const synth_problem *t = &p->tk;
  const uq_shape *s = &t->shape;
  const int d = s->head_dim, qg = s->num_q_heads / s->num_kv_heads;
  const int64_t ss = s->q_stride_seq ? s->q_stride_seq
                                     : (int64_t)s->num_q_heads * d;
  const int64_t sh = s->q_stride_head ? s->q_stride_head : d;
  const double scale = s->scale != 0 ? (double)s->scale : 1.0 / sqrt(d);
  float *qf = malloc((size_t)d * sizeof *qf);
  float *kf = malloc((size_t)d * sizeof *kf);
  float *vf = malloc((size_t)d * sizeof *vf);
  double *q = malloc((size_t)d * sizeof *q);
  assert_non_null(qf);
  assert_non_null(kf);
  assert_non_null(vf);
  assert_non_null(q);
  for (int b = 0; b < s->batch; b++) {
    int len = t->seq_lens[b];
    double *sc = malloc((size_t)len * sizeof *sc);
    assert_non_null(sc);
    for (int h = 0; h < s->num_q_heads; h++) {
      int kh = h / qg;
      for (int i = 0; i < d; i++)
        qf[i] = q_to_f32(s->q_dtype, t->query[b * ss + h * sh + i]);
      assert_int_equal(uq_fwht(qf, d), 0);
      for (int i = 0; i < d; i++)
        q[i] = uq_haircut_e4m3(qf[i]);
      double *o = p->naive + ((size_t)b * s->num_q_heads + h) * d;
      memset(o, 0, (size_t)d * sizeof *o);
      for (int n = 0; n < len; n++) {
        int64_t blk = t->block_table[b * s->max_blocks_per_seq +
                                     n / s->block_size];
        int64_t row = n % s->block_size;
        const uint8_t *slot =
            t->cache + ((blk * s->block_size + row) * s->num_kv_heads + kh) *
                           s->padded_slot;
        assert_int_equal(uq_decode_slot(d, slot, kf, NULL), 0);
        double dot = 0;
        for (int i = 0; i < d; i++)
          dot += q[i] * kf[i];
        sc[n] = scale * dot;
      }
      double m = -INFINITY, sum = 0;
      for (int n = 0; n < len; n++)
        m = sc[n] > m ? sc[n] : m;
      for (int n = 0; n < len; n++)
        sum += (sc[n] = exp(sc[n] - m));
      for (int n = 0; n < len; n++) {
        int64_t blk = t->block_table[b * s->max_blocks_per_seq +
                                     n / s->block_size];
        int64_t row = n % s->block_size;
        const uint8_t *slot =
            t->cache + ((blk * s->block_size + row) * s->num_kv_heads + kh) *
                           s->padded_slot;
        assert_int_equal(uq_decode_slot(d, slot, NULL, vf), 0);
        for (int i = 0; i < d; i++)
          o[i] += sc[n] / sum * vf[i];
      }
    }
    free(sc);
  }
  free(qf);
  free(kf);
  free(vf);
  free(q);
}

static void problem_make(problem *p, const config *c, uint64_t seed) {
  uq_shape s;
  memset(&s, 0, sizeof s);
  s.batch = c->batch;
  s.num_q_heads = c->hq;
  s.num_kv_heads = c->hk;
  s.head_dim = c->d;
  s.block_size = c->block_size;
  s.padded_slot = c->padded_slot;
  s.scale = c->scale;
  s.q_dtype = c->dtype;
  s.q_stride_seq = c->stride_seq;
  s.q_stride_head = c->stride_head;
  int32_t max_len = 0;
  for (int b = 0; b < c->batch; b++)
    max_len = c->seq_lens[b] > max_len ? c->seq_lens[b] : max_len;
  /* One spare entry per row, so the table is wider than any sequence. */
  s.max_blocks_per_seq = (max_len + c->block_size - 1) / c->block_size + 1;
  /* Shuffled blocks with spare ones among them, stale bytes in every slot
   * no sequence uses, invalid table entries past every sequence and NaN in
   * the gaps of a strided query: reading any of them changes the answer.
   * Keys growing along the sequence give K scales far apart. */
  synth_problem_opts o;
  synth_problem_opts_init(&o, seed);
  o.spare_blocks = 3;
  o.garbage = 1;
  o.nan_gaps = 1;
  o.k_ramp = 2.0;
  int rc = synth_problem_make(&p->tk, &s, c->seq_lens, &o);
  if (rc == 0)
    rc = synth_problem_store(&p->tk);
  if (rc != 0)
    fail_msg("problem: %s: %s", uq_err_name(rc), uq_last_error());
  p->naive = malloc((size_t)c->batch * c->hq * c->d * sizeof *p->naive);
  assert_non_null(p->naive);
  naive_decode(p);
}

static void problem_free(problem *p) {
  synth_problem_free(&p->tk);
  free(p->naive);
}

static double half_value(uq_dtype dtype, uint16_t h) {
  return (double)q_to_f32(dtype, h);
}

static void check_problem(const config *c, uint64_t seed) {
  problem p;
  problem_make(&p, c, seed);
  size_t n = (size_t)c->batch * c->hq * c->d;
  double *out64 = malloc(n * sizeof *out64);
  uint16_t *out = malloc(n * sizeof *out);
  assert_non_null(out64);
  assert_non_null(out);
  uq_decode_args args = synth_problem_decode_args(&p.tk, out);
  int rc = uq_reference_decode_f64(&p.tk.shape, &args, out64);
  if (rc != 0)
    fail_msg("reference_decode_f64: %s: %s", uq_err_name(rc), uq_last_error());
  assert_int_equal(uq_reference_decode(&p.tk.shape, &args), 0);
  /* f64 against the naive computation, row by row. */
  for (size_t r = 0; r < n / (size_t)c->d; r++) {
    const double *a = out64 + r * c->d, *w = p.naive + r * c->d;
    double rel = synth_rel_l2(a, w, (size_t)c->d);
    if (!(rel <= 1e-12))
      fail_msg("row %zu: relative L2 %g against the naive decode", r, rel);
    double mx = 0;
    for (int i = 0; i < c->d; i++)
      mx = fabs(w[i]) > mx ? fabs(w[i]) : mx;
    assert_true(synth_max_abs_diff(a, w, (size_t)c->d) <= 1e-12 * mx);
  }
  /* The cast output is the f64 output rounded once, and within half an ulp
   * of the naive answer up to its 1e-12 difference: never more than one
   * unit away from the naive value rounded. */
  for (size_t i = 0; i < n; i++) {
    uint16_t want = c->dtype == UQ_DTYPE_FP16 ? synth_f64_to_fp16(out64[i])
                                              : synth_f64_to_bf16(out64[i]);
    if (out[i] != want)
      fail_msg("element %zu: cast %04x, f64 %a rounds to %04x", i, out[i],
               out64[i], want);
    uint16_t naive = c->dtype == UQ_DTYPE_FP16 ? synth_f64_to_fp16(p.naive[i])
                                               : synth_f64_to_bf16(p.naive[i]);
    double dv = fabs(half_value(c->dtype, out[i]) -
                     half_value(c->dtype, naive));
    double ulp = fabs(half_value(c->dtype, (uint16_t)(naive + 1)) -
                      half_value(c->dtype, naive));
    assert_true(dv <= ulp);
  }
  free(out64);
  free(out);
  problem_free(&p);
}

static void reference_matches_naive_gqa6_bs16_bf16(void **state) {
  (void)state;
  config c = {.batch = 3, .hq = 6, .hk = 1, .d = 256, .block_size = 16,
              .dtype = UQ_DTYPE_BF16, .seq_lens = {1, 37, 200}};
  check_problem(&c, 11);
}

static void reference_matches_naive_gqa8_bs32_fp16(void **state) {
  (void)state;
  config c = {.batch = 3, .hq = 16, .hk = 2, .d = 128, .block_size = 32,
              .dtype = UQ_DTYPE_FP16, .seq_lens = {64, 1, 95}};
  check_problem(&c, 12);
}

static void reference_matches_naive_gqa16_bs64_strided_query(void **state) {
  (void)state;
  /* stride_seq > Hq*D and a head stride that leaves gaps between heads. */
  config c = {.batch = 2, .hq = 16, .hk = 1, .d = 64, .block_size = 64,
              .dtype = UQ_DTYPE_BF16, .stride_seq = 16 * 64 + 40,
              .stride_head = 64 + 8, .seq_lens = {130, 7}};
  check_problem(&c, 13);
}

static void reference_matches_naive_gqa8_bs128_fp16_strided(void **state) {
  (void)state;
  config c = {.batch = 2, .hq = 8, .hk = 1, .d = 256, .block_size = 128,
              .dtype = UQ_DTYPE_FP16, .stride_seq = 3 * 8 * 256,
              .stride_head = 2 * 256, .seq_lens = {300, 128}};
  check_problem(&c, 14);
}

static void reference_matches_naive_gqa16_bs256_padded(void **state) {
  (void)state;
  config c = {.batch = 3, .hq = 32, .hk = 2, .d = 32, .block_size = 256,
              .padded_slot = 40, .scale = 0.3f, .dtype = UQ_DTYPE_BF16,
              .seq_lens = {513, 256, 1}};
  check_problem(&c, 15);
}

static void reference_matches_naive_uneligible_shapes(void **state) {
  (void)state;
  /* The reference does not need the fast path: QG 3, MHA, D 512, bs 5. */
  config c1 = {.batch = 2, .hq = 6, .hk = 2, .d = 64, .block_size = 5,
               .dtype = UQ_DTYPE_FP16, .seq_lens = {23, 1}};
  check_problem(&c1, 16);
  config c2 = {.batch = 1, .hq = 4, .hk = 4, .d = 512, .block_size = 16,
               .dtype = UQ_DTYPE_BF16, .seq_lens = {20}};
  check_problem(&c2, 17);
  config c3 = {.batch = 4, .hq = 6, .hk = 1, .d = 256, .block_size = 1,
               .dtype = UQ_DTYPE_BF16, .scale = 0.05f,
               .seq_lens = {1, 2, 3, 9}};
  check_problem(&c3, 18);
}

/* ------------------------------------------------------------------ */
/* Refusals. */

enum { NUM_REFUSALS = 33 };

/* Breaks one thing of a valid call; returns the status expected. */
static int break_one(int which, synth_problem *p, uq_shape *s, uq_decode_args *a,
                     const uq_shape **sp, const uq_decode_args **ap,
                     const char **what) {
  int32_t mb = s->max_blocks_per_seq;
  switch (which) {
  case 0: *what = "shape NULL"; *sp = NULL; return UQ_EINVAL;
  case 1: *what = "args NULL"; *ap = NULL; return UQ_EINVAL;
  case 2: *what = "query NULL"; a->query = NULL; return UQ_EINVAL;
  case 3: *what = "kv_cache NULL"; a->kv_cache = NULL; return UQ_EINVAL;
  case 4: *what = "block_table NULL"; a->block_table = NULL; return UQ_EINVAL;
  case 5: *what = "seq_lens NULL"; a->seq_lens = NULL; return UQ_EINVAL;
  case 6: *what = "batch 0"; s->batch = 0; return UQ_EINVAL;
  case 7: *what = "num_q_heads -1"; s->num_q_heads = -1; return UQ_EINVAL;
  case 8: *what = "num_kv_heads 0"; s->num_kv_heads = 0; return UQ_EINVAL;
  case 9: *what = "head_dim 0"; s->head_dim = 0; return UQ_EINVAL;
  case 10: *what = "head_dim 48"; s->head_dim = 48; return UQ_EINVAL;
  case 11: *what = "head_dim 96"; s->head_dim = 96; return UQ_EINVAL;
  case 12: *what = "block_size 0"; s->block_size = 0; return UQ_EINVAL;
  case 13: *what = "max_blocks 0"; s->max_blocks_per_seq = 0; return UQ_EINVAL;
  case 14: *what = "num_blocks 0"; a->num_blocks = 0; return UQ_EINVAL;
  case 15: *what = "Hq % Hk"; s->num_q_heads = 6; s->num_kv_heads = 4; return UQ_EINVAL;
  case 16: *what = "padded 66"; s->padded_slot = 66; return UQ_EINVAL;
  case 17: *what = "padded 64"; s->padded_slot = 64; return UQ_EINVAL;
  case 18: *what = "padded 70"; s->padded_slot = 70; return UQ_EINVAL;
  case 19: *what = "seq_len 0"; p->seq_lens[1] = 0; return UQ_EINVAL;
  case 20: *what = "seq_len too long";
    p->seq_lens[1] = mb * s->block_size + 1; return UQ_EINVAL;
  case 21: *what = "block -1";
    p->block_table[1 * mb + (p->seq_lens[1] - 1) / s->block_size] = -1;
    return UQ_EINVAL;
  case 22: *what = "block num_blocks";
    p->block_table[0] = (int32_t)a->num_blocks; return UQ_EINVAL;
  case 23: *what = "num_blocks overflow"; a->num_blocks = INT64_MAX / 4;
    return UQ_EOVERFLOW;
  case 24: *what = "stride overflow"; s->q_stride_seq = INT64_MAX / 2;
    return UQ_EOVERFLOW;
  case 25: *what = "q_dtype fp32"; s->q_dtype = UQ_DTYPE_FP32; return UQ_EINVAL;
  case 26: *what = "q_dtype 9"; s->q_dtype = (uq_dtype)9; return UQ_EINVAL;
  case 27: *what = "sinks"; s->has_sinks = 1; return UQ_EUNSUPPORTED;
  case 28: *what = "sliding window"; s->sliding_window = 128; return UQ_EUNSUPPORTED;
  case 29: *what = "scale NaN"; s->scale = NAN; return UQ_EINVAL;
  case 30: *what = "stride_head -1"; s->q_stride_head = -1; return UQ_EINVAL;
  case 31: *what = "out NULL"; a->out = NULL; return UQ_EINVAL;
  default: *what = "padded -4"; s->padded_slot = -4; return UQ_EINVAL;
  }
}

static void reference_refuses_bad_input_and_writes_nothing(void **state) {
  (void)state;
  config c = {.batch = 2, .hq = 4, .hk = 2, .d = 64, .block_size = 16,
              .dtype = UQ_DTYPE_BF16, .seq_lens = {20, 33}};
  size_t n = 2 * 4 * 64;
  uint16_t *out = malloc(n * sizeof *out);
  double *out64 = malloc(n * sizeof *out64);
  assert_non_null(out);
  assert_non_null(out64);
  problem p;
  problem_make(&p, &c, 99);
  int32_t seq_lens[2], table[64];
  size_t table_bytes = 2 * (size_t)p.tk.shape.max_blocks_per_seq * sizeof table[0];
  assert_true(table_bytes <= sizeof table);
  memcpy(seq_lens, p.tk.seq_lens, sizeof seq_lens);
  memcpy(table, p.tk.block_table, table_bytes);
  for (int which = 0; which < NUM_REFUSALS; which++) {
    for (int f64 = 0; f64 < 2; f64++) {
      if (which == 31 && f64)
        continue; /* the f64 variant does not use args->out */
      memcpy(p.tk.seq_lens, seq_lens, sizeof seq_lens);
      memcpy(p.tk.block_table, table, table_bytes);
      uq_shape s = p.tk.shape;
      uq_decode_args a = synth_problem_decode_args(&p.tk, out);
      const uq_shape *sp = &s;
      const uq_decode_args *ap = &a;
      const char *what = "";
      int want = break_one(which, &p.tk, &s, &a, &sp, &ap, &what);
      memset(out, 0xcd, n * sizeof *out);
      memset(out64, 0xcd, n * sizeof *out64);
      int rc = f64 ? uq_reference_decode_f64(sp, ap, out64)
                   : uq_reference_decode(sp, ap);
      if (rc != want)
        fail_msg("%s (f64 %d): got %s, want %s (%s)", what, f64,
                 uq_err_name(rc), uq_err_name(want), uq_last_error());
      assert_true(uq_last_error()[0] != '\0');
      for (size_t i = 0; i < n; i++) {
        if (out[i] != 0xcdcd)
          fail_msg("%s: out written", what);
        uint64_t u;
        memcpy(&u, &out64[i], sizeof u);
        if (u != 0xcdcdcdcdcdcdcdcdull)
          fail_msg("%s: out64 written", what);
      }
    }
  }
  memcpy(p.tk.seq_lens, seq_lens, sizeof seq_lens);
  memcpy(p.tk.block_table, table, table_bytes);
  /* out64 NULL for the f64 variant. */
  uq_decode_args a = synth_problem_decode_args(&p.tk, NULL);
  assert_int_equal(uq_reference_decode_f64(&p.tk.shape, &a, NULL), UQ_EINVAL);
  /* Entries of the table past a sequence's last block are not read. */
  p.tk.block_table[0 * p.tk.shape.max_blocks_per_seq + 2] = -7;
  p.tk.block_table[1 * p.tk.shape.max_blocks_per_seq + 3] = 1 << 30;
  assert_int_equal(uq_reference_decode_f64(&p.tk.shape, &a, out64), 0);
  assert_true(synth_rel_l2(out64, p.naive, n) <= 1e-12);
  problem_free(&p);
  free(out);
  free(out64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reference_matches_naive_gqa6_bs16_bf16),
      cmocka_unit_test(reference_matches_naive_gqa8_bs32_fp16),
      cmocka_unit_test(reference_matches_naive_gqa16_bs64_strided_query),
      cmocka_unit_test(reference_matches_naive_gqa8_bs128_fp16_strided),
      cmocka_unit_test(reference_matches_naive_gqa16_bs256_padded),
      cmocka_unit_test(reference_matches_naive_uneligible_shapes),
      cmocka_unit_test(reference_refuses_bad_input_and_writes_nothing),
  };
  return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
