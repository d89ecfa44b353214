/* The decode case matrix (decode_matrix.h). */
#include "tests/runtime/decode_matrix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

static const decode_backend *be;
/* The variant the tests run with now (NULL: the default). */
static const char *current_variant;

static const char *layout_name(q_layout l) {
  return l == Q_CONTIGUOUS  ? "contiguous"
         : l == Q_QKV_SLICE ? "qkv-slice"
         : l == Q_STRIDED   ? "strided"
                            : "elem-strided";
}

/* Runs one case; returns the worst per-sequence relative L2 error (and
 * fails the test on NaN/Inf or a launch failure). */
static double run_case(const decode_case *c) {
  decode_problem p;
  int rc = be->make(c, &p);
  assert_int_equal(rc, 0);
  assert_int_equal(be->poison(&p), 0);
  rc = be->decode(&p);
  if (rc != 0)
    fprintf(stderr, "decode: %s: %s\n", uq_err_name(rc), uq_last_error());
  assert_int_equal(rc, 0);

  double *ref = malloc(p.out_elems * sizeof(double));
  double *got = malloc(p.out_elems * sizeof(double));
  uint16_t *raw = malloc(p.out_elems * 2);
  assert_non_null(ref);
  assert_non_null(got);
  assert_non_null(raw);
  assert_int_equal(be->fetch(&p, raw, got), 0);
  assert_int_equal(problem_reference(&p, ref), 0);

  const size_t per_seq = (size_t)p.shape.num_q_heads * p.shape.head_dim;
  double worst = 0;
  int worst_b = -1;
  for (int b = 0; b < c->batch; b++) {
    for (size_t i = 0; i < per_seq; i++)
      if (!isfinite(got[b * per_seq + i])) {
        fprintf(stderr, "non-finite output at seq %d element %zu\n", b, i);
        fail();
      }
    double e = synth_rel_l2(got + b * per_seq, ref + b * per_seq, per_seq);
    if (e > worst) {
      worst = e;
      worst_b = b;
    }
  }
  printf("d %3d qg %2d hk %d bs %3d B %2d splits %4d %s %-10s maxlen %5d "
         "ps %3d: worst rel L2 %.2e (seq %d, len %d)\n",
         (int)p.shape.head_dim, c->qg, c->hk, c->block_size, c->batch,
         c->max_kv_splits, c->dtype == UQ_DTYPE_FP16 ? "fp16" : "bf16",
         layout_name(c->layout), p.shape.max_blocks_per_seq * c->block_size,
         p.shape.padded_slot ? (int)p.shape.padded_slot
                             : (int)uq_slot_size(p.shape.head_dim),
         worst, worst_b, worst_b >= 0 ? c->seq_lens[worst_b] : 0);
  free(ref);
  free(got);
  free(raw);
  be->release(&p);
  return worst;
}

static const int32_t len_pool[] = {1, 15, 16, 255, 256, 257, 4097, 33, 1000};
#define POOL (sizeof len_pool / sizeof len_pool[0])

/* The long sequences' length: the backend's (70000 tokens on the GPU: many
 * chunks a partition, and P x TGPP coverage with a long block table), or
 * UQ_TEST_LONG_LEN, for a quicker pass (scripts/gpu-sanitize.sh's
 * UQ_SAN_LONG_LEN). Read before any test: a bad value stops the program. */
static int32_t long_len;

static int parse_long_len(void) {
  const char *v = getenv("UQ_TEST_LONG_LEN");
  if (v == NULL)
    return 0;
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 4097 || n > 1000000) {
    fprintf(stderr, "UQ_TEST_LONG_LEN=%s: expected a length from 4097 to "
                    "1000000 tokens\n", v);
    return -1;
  }
  long_len = (int32_t)n;
  return 0;
}

/* GQA x block size, rotating batch, layout, dtype and split limits, with
 * mixed lengths in each batch and one long sequence (long_len) per GQA. */
static void decode_matches_reference_across_gqa_and_block_sizes(void **st) {
  (void)st;
  static const int qgs[] = {6, 8, 16};
  static const int bss[] = {16, 32, 64, 128, 256};
  static const int batches[] = {1, 3, 16, 64};
  static const int splits[] = {0, 1, 1024};
  int32_t lens[64];
  int i = 0;
  double worst = 0;
  for (size_t g = 0; g < 3; g++) {
    for (size_t k = 0; k < 5; k++, i++) {
      decode_case c;
      memset(&c, 0, sizeof c);
      c.qg = qgs[g];
      c.hk = 1 + i % 2;
      c.block_size = bss[k];
      c.batch = batches[i % 4];
      c.max_kv_splits = splits[i % 3];
      c.dtype = i % 3 == 2 ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16;
      c.layout = (q_layout)(i % 3);
      c.seed = 1000 + (uint64_t)i;
      for (int b = 0; b < c.batch; b++)
        lens[b] = len_pool[(size_t)(b + i) % POOL];
      /* The long sequence once per GQA, in a small batch. */
      if (k == 2) {
        c.batch = 3;
        lens[0] = long_len;
        lens[1] = 1;
        lens[2] = 257;
      }
      c.seq_lens = lens;
      double e = run_case(&c);
      if (e > worst)
        worst = e;
      assert_true(e < 1e-2);
    }
  }
  printf("worst over all cases: %.3e\n", worst);
}

/* Both query paths on the same data: the fused rotation and the prologue
 * (heads apart, or a last stride of 2) must agree with the reference for
 * every dtype. */
static void decode_fused_and_prologue_paths_match_reference(void **st) {
  (void)st;
  static const int32_t lens[] = {257, 4097, 16};
  for (int layout = 0; layout < 4; layout++)
    for (int dt = 0; dt < 2; dt++) {
      decode_case c;
      memset(&c, 0, sizeof c);
      c.qg = 8;
      c.hk = 2;
      c.block_size = 64;
      c.batch = 3;
      c.seq_lens = lens;
      c.dtype = dt ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16;
      c.layout = (q_layout)layout;
      c.seed = 77;
      assert_true(run_case(&c) < 1e-2);
    }
}

/* Padded slots: 288 bytes (16-byte aligned, but the slots of a chunk are
 * no longer one range) and 276 (4-byte pieces), one and two kv heads,
 * blocks smaller and larger than the fast layers' chunks, stale bytes in
 * the padding and past seq_len. */
static void decode_reads_padded_slots(void **st) {
  (void)st;
  static const int32_t lens[] = {1000, 63, 2049};
  static const struct {
    int padded, hk, bs;
  } cases[] = {{288, 1, 64}, {288, 2, 16}, {276, 1, 128}, {276, 2, 32}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    decode_case c;
    memset(&c, 0, sizeof c);
    c.qg = 16 / cases[i].hk;
    c.hk = cases[i].hk;
    c.block_size = cases[i].bs;
    c.batch = 3;
    c.seq_lens = lens;
    c.dtype = UQ_DTYPE_BF16;
    c.layout = Q_CONTIGUOUS;
    c.garbage = 1;
    c.padded_slot = cases[i].padded;
    c.seed = 31 + i;
    assert_true(run_case(&c) < 1e-2);
  }
}

/* Scores that rise along the sequence (K scaled up to 40x by the last
 * token): the running maxima keep growing, chunk after chunk and across
 * partitions, which the fast layers' softmax references must follow.
 * One and two kv heads, short and long sequences. */
static void decode_follows_rising_scores(void **st) {
  (void)st;
  const int32_t lens[] = {long_len, 4097, 300, 64};
  for (int hk = 1; hk <= 2; hk++) {
    decode_case c;
    memset(&c, 0, sizeof c);
    c.qg = 16 / hk;
    c.hk = hk;
    c.block_size = 64;
    c.batch = 4;
    c.seq_lens = lens;
    c.dtype = UQ_DTYPE_BF16;
    c.layout = Q_CONTIGUOUS;
    c.k_ramp = 39.0;
    c.seed = 555 + (uint64_t)hk;
    assert_true(run_case(&c) < 1e-2);
  }
}

/* V rows of every magnitude (2^-20 .. 2^40 times normals, the largest
 * rising along the sequence): V scale bytes far over 127, which the
 * warpgroup layer's per-group limits follow chunk after chunk, and far
 * under, whose contributions must survive next to the large ones. One
 * and two kv heads, every query path. */
static void decode_follows_v_of_every_magnitude(void **st) {
  (void)st;
  const int32_t lens[] = {long_len, 4097, 300, 64};
  for (int i = 0; i < 3; i++) {
    decode_case c;
    memset(&c, 0, sizeof c);
    c.hk = 1 + i % 2;
    c.qg = 16 / c.hk;
    c.block_size = i == 2 ? 16 : 64;
    c.batch = 4;
    c.seq_lens = lens;
    c.dtype = UQ_DTYPE_BF16;
    c.layout = (q_layout)i;
    c.v_spread = 40;
    c.seed = 808 + (uint64_t)i;
    assert_true(run_case(&c) < 1e-2);
  }
}

/* Output of case c bitwise equal with and without stale bytes: slots past
 * seq_len, unused blocks (scale bytes up to 255, random codes) and
 * garbage block-table entries past the used blocks. */
static void expect_stale_bytes_ignored(decode_case c) {
  uint16_t *out[2] = {NULL, NULL};
  size_t n = 0;
  for (int garbage = 0; garbage < 2; garbage++) {
    c.garbage = garbage;
    decode_problem p;
    assert_int_equal(be->make(&c, &p), 0);
    assert_int_equal(be->poison(&p), 0);
    int rc = be->decode(&p);
    if (rc != 0)
      fprintf(stderr, "decode: %s\n", uq_last_error());
    assert_int_equal(rc, 0);
    n = p.out_elems;
    out[garbage] = malloc(n * 2);
    double *tmp = malloc(n * sizeof(double));
    assert_int_equal(be->fetch(&p, out[garbage], tmp), 0);
    for (size_t i = 0; i < n; i++)
      assert_true(isfinite(tmp[i]));
    free(tmp);
    be->release(&p);
  }
  assert_memory_equal(out[0], out[1], n * 2);
  free(out[0]);
  free(out[1]);
}

/* One kv head (the fast layers' single-range copies) and two (the
 * warpgroup layer's tensor copies, which read whole runs of a block and
 * must drop the rows past seq_len). */
static void decode_ignores_stale_slots_and_table_tail(void **st) {
  (void)st;
  static const int32_t lens[] = {1, 17, 255, 300, 4097};
  static const int bss[] = {16, 256, 64, 32};
  for (int k = 0; k < 4; k++) {
    decode_case c;
    memset(&c, 0, sizeof c);
    c.qg = 16 / (1 + k / 2);
    c.hk = 1 + k / 2;
    c.block_size = bss[k];
    c.batch = 5;
    c.seq_lens = lens;
    c.dtype = UQ_DTYPE_BF16;
    c.layout = Q_CONTIGUOUS;
    c.seed = 4242;
    expect_stale_bytes_ignored(c);
  }
}

/* Head dims 128 and 64, and query groups outside {6, 8, 16} (1, 2, 4, 5,
 * 12; 4 and 5 at head_dim 256 too), which only the portable layer
 * serves: each dtype and query layout, a long sequence per head dim,
 * stale bytes that must not change the output. A compact set: each case
 * is a kernel build on the CPU model. */
static void decode_serves_other_head_dims_and_query_groups(void **st) {
  (void)st;
  if (current_variant == NULL || strcmp(current_variant, "portable") != 0)
    skip(); /* the same portable kernels under every variant */
  static const int32_t lens[] = {1, 257, 1000, 33};
  static const struct {
    int d, qg, hk, bs, batch;
    uq_dtype dt;
    q_layout layout;
    int garbage, splits, long_seq;
  } cases[] = {
      {128, 1, 4, 16, 3, UQ_DTYPE_BF16, Q_CONTIGUOUS, 0, 0, 1},
      {128, 2, 2, 64, 4, UQ_DTYPE_FP16, Q_QKV_SLICE, 1, 1, 0},
      {128, 5, 1, 32, 2, UQ_DTYPE_BF16, Q_STRIDED, 0, 1024, 0},
      {128, 12, 1, 128, 3, UQ_DTYPE_BF16, Q_CONTIGUOUS, 1, 0, 0},
      {64, 4, 2, 16, 4, UQ_DTYPE_FP16, Q_CONTIGUOUS, 1, 0, 0},
      {64, 12, 1, 256, 2, UQ_DTYPE_BF16, Q_STRIDED, 0, 0, 1},
      {64, 1, 8, 32, 3, UQ_DTYPE_BF16, Q_QKV_SLICE, 0, 1, 0},
      {256, 4, 2, 64, 3, UQ_DTYPE_BF16, Q_CONTIGUOUS, 1, 0, 0},
      {256, 5, 1, 16, 2, UQ_DTYPE_FP16, Q_STRIDED, 0, 0, 0},
  };
  int32_t l[4];
  double worst = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    decode_case c;
    memset(&c, 0, sizeof c);
    c.head_dim = cases[i].d;
    c.qg = cases[i].qg;
    c.hk = cases[i].hk;
    c.block_size = cases[i].bs;
    c.batch = cases[i].batch;
    c.dtype = cases[i].dt;
    c.layout = cases[i].layout;
    c.garbage = cases[i].garbage;
    c.max_kv_splits = cases[i].splits;
    c.seed = 7000 + i;
    memcpy(l, lens, sizeof l);
    if (cases[i].long_seq)
      l[1] = long_len;
    c.seq_lens = l;
    double e = run_case(&c);
    if (e > worst)
      worst = e;
    assert_true(e < 1e-2);
  }
  printf("worst over the other shapes: %.3e\n", worst);
  static const int32_t stale_lens[] = {1, 17, 300};
  static const int dims[] = {128, 64};
  for (int k = 0; k < 2; k++) {
    decode_case c;
    memset(&c, 0, sizeof c);
    c.head_dim = dims[k];
    c.qg = k ? 12 : 5;
    c.hk = 1;
    c.block_size = k ? 256 : 16;
    c.batch = 3;
    c.seq_lens = stale_lens;
    c.dtype = UQ_DTYPE_BF16;
    c.layout = Q_CONTIGUOUS;
    c.seed = 4343 + (uint64_t)k;
    expect_stale_bytes_ignored(c);
  }
}

int decode_matrix_main(const decode_backend *backend,
                       const char *const *variants, int nvariants,
                       int32_t default_long_len) {
  be = backend;
  long_len = default_long_len;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decode_fused_and_prologue_paths_match_reference),
      cmocka_unit_test(decode_ignores_stale_slots_and_table_tail),
      cmocka_unit_test(decode_follows_rising_scores),
      cmocka_unit_test(decode_follows_v_of_every_magnitude),
      cmocka_unit_test(decode_reads_padded_slots),
      cmocka_unit_test(decode_matches_reference_across_gqa_and_block_sizes),
      cmocka_unit_test(decode_serves_other_head_dims_and_query_groups),
  };
  const char *only = getenv("UQ_TEST_VARIANT");
  if (only != NULL) {
    int known = 0;
    for (int v = 0; v < nvariants; v++)
      known |= strcmp(only, variants[v] ? variants[v] : "default") == 0;
    if (!known) {
      fprintf(stderr, "UQ_TEST_VARIANT=%s: not a variant this program runs\n",
              only);
      return 1;
    }
  }
  if (parse_long_len() != 0)
    return 1;
  gpu_test_filters(); /* UQ_TEST_FILTER, UQ_TEST_SKIP */
  int failed = 0;
  for (int v = 0; v < nvariants; v++) {
    const char *name = variants[v] ? variants[v] : "default";
    if (only != NULL && strcmp(only, name) != 0)
      continue;
    current_variant = variants[v];
    const char *layer = variants[v] ? variants[v] : "auto";
    if (be->select(layer) != 0) {
      fprintf(stderr, "variant %s: the backend cannot select it\n", name);
      failed++;
      continue;
    }
    uq_shape probe;
    uq_shape_init(&probe);
    probe.batch = 1;
    probe.num_q_heads = 16;
    probe.num_kv_heads = 1;
    probe.head_dim = 256;
    probe.block_size = 16;
    probe.max_blocks_per_seq = 16;
    uq_plan plan;
    int planned = uq_plan_make_variant(&probe, be->target, layer, &plan) == 0
                      ? (int)plan.kernels[0].variant
                      : -1;
    printf("== variant: %s (%s plans v%d)\n", name, be->target, planned);
    int rc = cmocka_run_group_tests_name(name, tests, NULL, NULL);
    /* One stdout line per variant, for scripts/gpu-bench.sh to tell which
     * layer failed (cmocka splits its report over stdout and stderr). */
    printf("== variant %s: %s\n", name, rc ? "FAILED" : "passed");
    fflush(stdout);
    failed += rc;
  }
  return failed;
}
