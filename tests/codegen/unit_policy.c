/* The launcher policy (FORMAT.md section 6): partitions and tile groups
 * against values worked out by hand, refusals, malformed shapes, the
 * workspace layout, coverage of the strided tile-group schedule, and huge
 * grids. The kernels a plan names: unit_policy_kernels.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "lib/codegen/emit.h"
#include "tests/codegen/policy_shape.h"
#include "uqjit.h"

/* One row: shape and the P / TGPP computed by hand with
 *   W = mb*bs; req = ceil(W/256); cap = B<=8 ? 512 : 256;
 *   floor = min(cap, max(1, splits)); a = max(floor, min(cap, req));
 *   a = min(a, max(1, ceil(W/192))); P = max(2, np2(a));
 *   TGPP = np2(max(1, ceil(req/P))). splits 0 means 32. */
typedef struct row {
  int b, hq, hk, bs, mb, splits;
  int p, tgpp;
} row;

static const row rows[] = {
    /* W=2048 req=8 cap=512 floor=32 a=max(32,8)=32 min(32,ceil(10.67)=11)=11
     * P=16 TGPP=np2(ceil(8/16)=1)=1 (FORMAT.md's own example) */
    {4, 8, 1, 32, 64, 0, 16, 1},
    /* W=131072 req=512 cap=512 floor=32 a=512 min(512,ceil(682.67)=683)=512
     * P=512 TGPP=np2(1)=1 */
    {8, 8, 1, 16, 8192, 0, 512, 1},
    /* same W, B=9: cap=256 a=max(32,min(256,512))=256 min(256,683)=256
     * P=256 TGPP=np2(ceil(512/256)=2)=2 */
    {9, 8, 1, 16, 8192, 0, 256, 2},
    /* W=16 req=1 floor=32 a=32 min(32,max(1,ceil(0.08)=1))=1 P=max(2,1)=2
     * TGPP=1 */
    {1, 8, 1, 16, 1, 0, 2, 1},
    /* W=1048576 (1M) req=4096 cap=512 a=512 min(512,ceil(5461.3)=5462)=512
     * P=512 TGPP=np2(ceil(4096/512)=8)=8 */
    {1, 8, 1, 256, 4096, 0, 512, 8},
    /* same W, B=16: cap=256 a=256 P=256 TGPP=np2(4096/256=16)=16 */
    {16, 16, 1, 256, 4096, 0, 256, 16},
    /* W=2048 req=8, splits=1: floor=1 a=max(1,8)=8 min(8,11)=8 P=8
     * TGPP=np2(ceil(8/8)=1)=1 */
    {4, 8, 1, 32, 64, 1, 8, 1},
    /* W=2048 req=8, splits=1024: floor=min(512,1024)=512 a=512
     * min(512,11)=11 P=16 TGPP=1 */
    {4, 8, 1, 32, 64, 1024, 16, 1},
    /* W=16384 req=64: a=max(32,64)=64 min(64,ceil(85.33)=86)=64 P=64
     * TGPP=1 */
    {4, 16, 2, 16, 1024, 0, 64, 1},
    /* W=16384 req=64, splits=1024: floor=512 a=512 min(512,86)=86 P=128
     * TGPP=np2(ceil(64/128)=1)=1 */
    {4, 16, 2, 16, 1024, 1024, 128, 1},
    /* same, B=9: floor=min(256,1024)=256 a=256 min(256,86)=86 P=128 TGPP=1 */
    {9, 16, 2, 16, 1024, 1024, 128, 1},
    /* W=4096 req=16: a=max(32,16)=32 min(32,ceil(21.33)=22)=22 P=32
     * TGPP=np2(ceil(16/32)=1)=1 */
    {4, 6, 1, 16, 256, 0, 32, 1},
    /* W=4096 req=16, splits=1: a=max(1,16)=16 min(16,22)=16 P=16 TGPP=1 */
    {4, 6, 1, 16, 256, 1, 16, 1},
    /* W=176 (< 192) req=1: min(32,ceil(0.92)=1)=1 P=2 TGPP=1 */
    {2, 8, 1, 16, 11, 0, 2, 1},
    /* W=192 req=1: min(32,ceil(1.0)=1)=1 P=2 TGPP=1 */
    {2, 8, 1, 64, 3, 0, 2, 1},
    /* W=208 req=1: min(32,ceil(1.08)=2)=2 P=2 TGPP=1 */
    {2, 8, 1, 16, 13, 0, 2, 1},
    /* W=131072 req=512, B=9, splits=1: cap=256 floor=1
     * a=max(1,min(256,512))=256 min(256,683)=256 P=256 TGPP=2 */
    {9, 8, 1, 128, 1024, 1, 256, 2},
    /* W=3200 req=ceil(12.5)=13 a=max(32,13)=32 min(32,ceil(16.67)=17)=17
     * P=np2(17)=32 TGPP=np2(ceil(13/32)=1)=1 */
    {4, 8, 1, 32, 100, 0, 32, 1},
    /* W=10000 req=ceil(39.06)=40 a=max(32,40)=40 min(40,ceil(52.08)=53)=40
     * P=64 TGPP=1 */
    {4, 8, 1, 16, 625, 0, 64, 1},
    /* W=262144 req=1024 cap=512 a=512 min(512,ceil(1365.3)=1366)=512 P=512
     * TGPP=np2(1024/512=2)=2 */
    {2, 32, 2, 128, 2048, 0, 512, 2},
    /* W=300000 req=ceil(1171.875)=1172 a=512 min(512,ceil(1562.5)=1563)=512
     * P=512 TGPP=np2(ceil(2.29)=3)=4 */
    {1, 8, 1, 16, 18750, 0, 512, 4},
    /* same, B=100: cap=256 P=256 TGPP=np2(ceil(4.58)=5)=8 */
    {100, 8, 1, 16, 18750, 0, 256, 8},
    /* W=2048 req=8, splits=5: a=max(5,8)=8 min(8,11)=8 P=8 TGPP=1 */
    {4, 8, 1, 32, 64, 5, 8, 1},
    /* W=4096 req=16, splits=20: a=max(20,16)=20 min(20,22)=20 P=32 TGPP=1 */
    {4, 8, 1, 16, 256, 20, 32, 1},
    /* W=8192 req=32, splits=100: a=100 min(100,ceil(42.67)=43)=43 P=64
     * TGPP=np2(ceil(32/64)=1)=1 */
    {4, 8, 1, 32, 256, 100, 64, 1},
    /* W=1048576 req=4096, B=9: cap=256 P=256 TGPP=np2(16)=16 */
    {9, 8, 1, 16, 65536, 0, 256, 16},
    /* W=131072 req=512, B=64, splits=1024: cap=256 floor=256 a=256
     * min(256,683)=256 P=256 TGPP=2 */
    {64, 8, 1, 256, 512, 1024, 256, 2},
    /* W=2147483392 (2^31-256) req=8388607 cap=512 a=512 P=512
     * TGPP=np2(ceil(8388607/512)=ceil(16383.998)=16384)=16384 */
    {1, 8, 1, 256, 8388607, 0, 512, 16384},
    /* W=256 req=1: min(32,ceil(1.33)=2)=2 P=2 TGPP=1 */
    {8, 8, 1, 256, 1, 0, 2, 1},
    /* W=448 req=ceil(1.75)=2: a=32 min(32,ceil(2.33)=3)=3 P=np2(3)=4
     * TGPP=np2(ceil(2/4)=1)=1 */
    {3, 8, 1, 64, 7, 0, 4, 1},
    /* W=448 req=2, splits=1: a=max(1,2)=2 min(2,3)=2 P=2 TGPP=np2(1)=1 */
    {3, 8, 1, 64, 7, 1, 2, 1},
    /* W=1048576 req=4096, splits=1: a=max(1,min(512,4096))=512
     * min(512,5462)=512 P=512 TGPP=8 */
    {1, 8, 1, 16, 65536, 1, 512, 8},
    /* W=65536 req=256, B=8: a=max(32,256)=256 min(256,ceil(341.33)=342)=256
     * P=256 TGPP=1 */
    {8, 48, 8, 32, 2048, 0, 256, 1},
};
#define ROW_COUNT (sizeof rows / sizeof rows[0])

static void policy_matches_hand_worked_partitions(void **state) {
  (void)state;
  for (size_t i = 0; i < ROW_COUNT; i++) {
    const row *r = &rows[i];
    uq_shape s = make_shape(r->b, r->hq, r->hk, r->bs, r->mb, r->splits);
    uq_plan plan;
    assert_int_equal(uq_plan_make(&s, "gfx950", &plan), 0);
    if (!plan.eligible || plan.num_partitions != r->p ||
        plan.tile_groups_per_partition != r->tgpp)
      fail_msg("row %zu (B=%d bs=%d mb=%d splits=%d): got eligible=%d P=%d "
               "TGPP=%d, want P=%d TGPP=%d",
               i, r->b, r->bs, r->mb, r->splits, plan.eligible,
               plan.num_partitions, plan.tile_groups_per_partition, r->p,
               r->tgpp);
    assert_int_equal(plan.query_group_size, r->hq / r->hk);
    /* The schedule can only cover the window if P*TGPP tile groups reach it. */
    assert_true((int64_t)r->p * r->tgpp * 256 >= (int64_t)r->bs * r->mb);
    assert_int_equal(plan.decode_grid[0], r->b);
    assert_int_equal(plan.decode_grid[1], r->hk);
    assert_int_equal(plan.decode_grid[2], r->p);
    assert_int_equal(plan.reduce_grid[0], r->b);
    assert_int_equal(plan.reduce_grid[1], r->hq);
    assert_int_equal(plan.reduce_grid[2], 1);
    assert_int_equal(plan.kernels[0].num_partitions, r->p);
    assert_int_equal(plan.kernels[0].tile_groups_per_partition, r->tgpp);
    assert_int_equal(plan.kernels[1].num_partitions, r->p);
  }
}

/* FORMAT.md section 6's schedule, written here independently: partition p
 * runs tile groups p, p+P, ... for trips iterations. Checks that for every
 * tile-group count a sequence of 1..W tokens can have, each group is
 * visited exactly once and nothing past the end is visited. */
static void check_schedule(int64_t parts, int64_t tgpp, int64_t window) {
  int64_t max_total = (window + 255) / 256;
  unsigned char *hits = calloc((size_t)max_total, 1);
  assert_non_null(hits);
  /* seq_len in 1..W gives total = ceil(seq_len/256) in 1..max_total, and
   * the schedule depends on seq_len only through total. */
  for (int64_t total = 1; total <= max_total; total++) {
    memset(hits, 0, (size_t)total);
    for (int64_t p = 0; p < parts; p++) {
      int64_t trips = 0;
      if (total > p) {
        trips = (total - p + parts - 1) / parts;
        if (trips > tgpp)
          trips = tgpp;
      }
      for (int64_t j = 0; j < trips; j++) {
        int64_t tg = p + j * parts;
        if (tg >= total)
          fail_msg("P=%lld TGPP=%lld total=%lld: group %lld past the end",
                   (long long)parts, (long long)tgpp, (long long)total,
                   (long long)tg);
        hits[tg]++;
      }
    }
    for (int64_t t = 0; t < total; t++)
      if (hits[t] != 1)
        fail_msg("P=%lld TGPP=%lld total=%lld: group %lld visited %d times",
                 (long long)parts, (long long)tgpp, (long long)total,
                 (long long)t, hits[t]);
  }
  free(hits);
}

static void schedule_covers_every_tile_group_once(void **state) {
  (void)state;
  for (size_t i = 0; i < ROW_COUNT; i++) {
    const row *r = &rows[i];
    int64_t window = (int64_t)r->bs * r->mb;
    if (window > (1 << 20))
      continue; /* checked by P*TGPP*256 >= W above; too slow to sweep */
    uq_shape s = make_shape(r->b, r->hq, r->hk, r->bs, r->mb, r->splits);
    uq_plan plan;
    assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
    check_schedule(plan.num_partitions, plan.tile_groups_per_partition,
                   window);
  }
  /* And a sweep of plans the table does not list. */
  static const int batches[] = {1, 8, 9, 300};
  static const int block_sizes[] = {16, 32, 64, 128, 256};
  static const int blocks[] = {1, 2, 3, 5, 12, 13, 47, 100, 255, 1000, 3001};
  static const int splits[] = {0, 1, 3, 7, 32, 100, 1024};
  for (size_t a = 0; a < sizeof batches / sizeof *batches; a++)
    for (size_t b = 0; b < sizeof block_sizes / sizeof *block_sizes; b++)
      for (size_t c = 0; c < sizeof blocks / sizeof *blocks; c++)
        for (size_t d = 0; d < sizeof splits / sizeof *splits; d++) {
          uq_shape s = make_shape(batches[a], 16, 1, block_sizes[b],
                                  blocks[c], splits[d]);
          uq_plan plan;
          assert_int_equal(uq_plan_make(&s, "sm_90", &plan), 0);
          assert_true(plan.eligible);
          int64_t p = plan.num_partitions, t = plan.tile_groups_per_partition;
          int64_t window = (int64_t)block_sizes[b] * blocks[c];
          assert_true(p >= 2 && p <= 512 && (p & (p - 1)) == 0);
          assert_true(t >= 1 && (t & (t - 1)) == 0);
          assert_true(p * t * 256 >= window);
          check_schedule(p, t, window);
        }
}

static void expect_ineligible(uq_shape s, const char *why) {
  uq_plan plan;
  memset(&plan, 0x5a, sizeof plan);
  int rc = uq_plan_make(&s, "gfx950", &plan);
  if (rc != 0)
    fail_msg("%s: status %d (%s)", why, rc, uq_last_error());
  if (plan.eligible || plan.reason[0] == '\0')
    fail_msg("%s: eligible=%d reason='%s'", why, plan.eligible, plan.reason);
  assert_int_equal(plan.num_kernels, 0);
  assert_int_equal(plan.workspace_bytes, 0);
  assert_int_equal(plan.num_partitions, 0);
}

static void policy_refuses_ineligible_shapes_with_reason(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  static const int dims[] = {32, 96, 160, 512, 1024};
  for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
    s.head_dim = dims[i];
    expect_ineligible(s, "head_dim");
  }
  uq_plan plan;
  s.head_dim = 96;
  assert_int_equal(uq_plan_make(&s, "sm_90a", &plan), 0);
  assert_string_equal(plan.reason,
                      "head_dim 96 is not served (head_dim 64, 128 or 256)");
  static const int hq_per_hk[] = {17, 20, 32, 64};
  for (size_t i = 0; i < sizeof hq_per_hk / sizeof *hq_per_hk; i++) {
    s = make_shape(4, 2 * hq_per_hk[i], 2, 32, 64, 0);
    expect_ineligible(s, "GQA factor");
  }
  s = make_shape(4, 64, 2, 32, 64, 0);
  s.head_dim = 128;
  assert_int_equal(uq_plan_make(&s, "gfx942", &plan), 0);
  assert_string_equal(plan.reason,
                      "query group size (q heads / kv heads) 32 is not served "
                      "at head_dim 128 (1 to 16)");
  s = make_shape(4, 8, 1, 32, 64, 0);
  s.has_sinks = 1;
  expect_ineligible(s, "sinks");
  s = make_shape(4, 8, 1, 32, 64, 0);
  s.sliding_window = 1024;
  expect_ineligible(s, "sliding window");
  static const int bad_bs[] = {8, 48, 512, 1, 24};
  for (size_t i = 0; i < sizeof bad_bs / sizeof *bad_bs; i++) {
    s = make_shape(4, 8, 1, bad_bs[i], 64, 0);
    expect_ineligible(s, "block size");
  }
  /* A window of <= 0 means none (vLLM passes -1). */
  s = make_shape(4, 8, 1, 32, 64, 0);
  s.sliding_window = -1;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_true(plan.eligible);
  assert_string_equal(plan.reason, "");
}

static void policy_ineligible_plan_keeps_resolved_fields(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 128, 4, 32, 64, 0); /* QG 32 */
  uq_plan plan;
  assert_int_equal(uq_plan_make(&s, "sm_90", &plan), 0);
  assert_false(plan.eligible);
  assert_int_equal(plan.query_group_size, 32);
  assert_int_equal(plan.padded_slot, 272);
  assert_true(plan.scale == 0.0625f);
  assert_int_equal(plan.block_threads, 128);
}

static void expect_status(uq_shape s, const char *target, int want,
                          const char *why) {
  uq_plan plan;
  int rc = uq_plan_make(&s, target, &plan);
  if (rc != want)
    fail_msg("%s: status %d, want %d (%s)", why, rc, want, uq_last_error());
  if (uq_last_error()[0] == '\0')
    fail_msg("%s: no error detail", why);
}

static void policy_refuses_malformed_shapes(void **state) {
  (void)state;
  const uq_shape good = make_shape(4, 8, 1, 32, 64, 0);
  uq_shape s;
#define BAD(field, value, code)                                           \
  do {                                                                    \
    s = good;                                                             \
    s.field = value;                                                      \
    expect_status(s, NULL, code, #field " = " #value);                    \
  } while (0)
  BAD(batch, 0, UQ_EINVAL);
  BAD(batch, -3, UQ_EINVAL);
  BAD(num_q_heads, 0, UQ_EINVAL);
  BAD(num_kv_heads, 0, UQ_EINVAL);
  BAD(num_kv_heads, 3, UQ_EINVAL); /* 8 % 3 != 0 */
  BAD(head_dim, 0, UQ_EINVAL);
  BAD(head_dim, 100, UQ_EINVAL);
  BAD(head_dim, -256, UQ_EINVAL);
  BAD(block_size, 0, UQ_EINVAL);
  BAD(max_blocks_per_seq, 0, UQ_EINVAL);
  BAD(max_blocks_per_seq, -1, UQ_EINVAL);
  BAD(padded_slot, 268, UQ_EINVAL); /* < 272 */
  BAD(padded_slot, 274, UQ_EINVAL); /* not a multiple of 4 */
  BAD(padded_slot, -4, UQ_EINVAL);
  BAD(max_num_kv_splits, -1, UQ_EINVAL);
  BAD(q_stride_seq, -2048, UQ_EINVAL);
  BAD(q_stride_head, -256, UQ_EINVAL);
  BAD(q_dtype, UQ_DTYPE_FP32, UQ_EINVAL);
  BAD(q_dtype, (uq_dtype)77, UQ_EINVAL);
  BAD(scale, -0.5f, UQ_EINVAL);
  BAD(scale, 1e-10f, UQ_EINVAL); /* rounds to 0 at 8 decimals */
#undef BAD
  s = good;
  s.num_kv_heads = 8;
  s.num_q_heads = 12;
  expect_status(s, NULL, UQ_EINVAL, "Hq 12 % Hk 8");

  static const char *bad_targets[] = {"", "gfx", "gfx95", "gfx95000",
                                      "gfx950:", "gfx950:xnack",
                                      "gfx950:foo+", "sm_9", "sm_90b",
                                      "cuda", "sm_90:xnack+", "gfxz50"};
  for (size_t i = 0; i < sizeof bad_targets / sizeof *bad_targets; i++)
    expect_status(good, bad_targets[i], UQ_EINVAL, bad_targets[i]);

  /* The workspace of this shape is about 2^31 * 10^8 * 2 * 16 * 256 * 2
   * bytes: far beyond size_t. */
  s = make_shape(INT32_MAX, 1600000000, 100000000, 16, 1, 0);
  expect_status(s, NULL, UQ_EOVERFLOW, "workspace overflow");
  /* A window past int32 tokens. */
  s = make_shape(1, 8, 1, 256, INT32_MAX, 0);
  expect_status(s, NULL, UQ_EOVERFLOW, "window overflow");

  uq_plan plan;
  assert_int_equal(uq_plan_make(NULL, NULL, &plan), UQ_EINVAL);
  assert_int_equal(uq_plan_make(&good, NULL, NULL), UQ_EINVAL);
}

static void policy_fuses_qrot_only_for_dense_head_rows(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  uq_plan plan;
  /* Defaults: [B, Hq, 256] contiguous. */
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.fuse_qrot, 1);
  assert_int_equal(plan.num_kernels, 2);
  assert_int_equal(plan.prologue_grid[0], 0);
  assert_int_equal(plan.ws_q_rot, 0);
  /* A slice of a fused QKV projection: larger sequence stride, still fused. */
  s.q_stride_seq = 3 * 8 * 256;
  s.q_stride_head = 256;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.fuse_qrot, 1);
  assert_int_equal(plan.kernels[0].stride_q_seq, 3 * 8 * 256);
  /* Heads not 256 apart: the prologue runs. */
  s.q_stride_seq = 8 * 512;
  s.q_stride_head = 512;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.fuse_qrot, 0);
  assert_int_equal(plan.num_kernels, 3);
  assert_int_equal(plan.kernels[2].kind, UQ_KERNEL_PROLOGUE);
  assert_int_equal(plan.prologue_grid[0], 4);
  assert_int_equal(plan.prologue_grid[1], 8);
  assert_int_equal(plan.prologue_grid[2], 1);
  /* Sequence rows overlapping: not a [B, Hq, 256] view. */
  s.q_stride_seq = 8 * 256 - 1;
  s.q_stride_head = 256;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.fuse_qrot, 0);
  assert_int_equal(plan.num_kernels, 3);
}

static void policy_lays_out_workspace_aligned(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0); /* P=16, QG=8 */
  uq_plan plan;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  /* segm_out: 4*1*16*8*256 bf16 = 262144 bytes at 0; segm_max: 4*1*16*8
   * fp32 = 2048 bytes at 262144; segm_sum 2048 at 264192; end 266240. */
  assert_int_equal(plan.ws_segm_out, 0);
  assert_int_equal(plan.ws_segm_max, 262144);
  assert_int_equal(plan.ws_segm_sum, 264192);
  assert_int_equal(plan.ws_q_rot, 0);
  assert_int_equal(plan.workspace_bytes, 266240);
  /* Not fused: q_rot 4*8*256 fp32 = 32768 bytes at 266240; end 299008. */
  s.q_stride_head = 512;
  s.q_stride_seq = 8 * 512;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.ws_q_rot, 266240);
  assert_int_equal(plan.workspace_bytes, 299008);

  /* B=1, Hq=6, Hk=1, W=16: P=2. segm_out 1*1*2*6*256*2 = 6144 at 0;
   * segm_max 2*6*4 = 48 bytes at 6144; segm_sum 48 at 6400 (next 256
   * boundary after 6192); end 6448 -> workspace 6656. Not fused: q_rot
   * 6*256*4 = 6144 at 6656, end 12800. */
  s = make_shape(1, 6, 1, 16, 1, 0);
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.num_partitions, 2);
  assert_int_equal(plan.ws_segm_out, 0);
  assert_int_equal(plan.ws_segm_max, 6144);
  assert_int_equal(plan.ws_segm_sum, 6400);
  assert_int_equal(plan.workspace_bytes, 6656);
  s.q_stride_head = 300;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.ws_q_rot, 6656);
  assert_int_equal(plan.workspace_bytes, 12800);

  /* Every row: offsets aligned, regions in order and not overlapping. */
  for (size_t i = 0; i < ROW_COUNT; i++) {
    const row *r = &rows[i];
    s = make_shape(r->b, r->hq, r->hk, r->bs, r->mb, r->splits);
    s.q_stride_head = 512;
    assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
    size_t qg = (size_t)(r->hq / r->hk);
    size_t stat = (size_t)r->b * (size_t)r->hk * (size_t)r->p * qg * 4;
    size_t out = stat / 4 * 256 * 2;
    size_t qrot = (size_t)r->b * (size_t)r->hq * 256 * 4;
    assert_int_equal(plan.ws_segm_out % 256, 0);
    assert_int_equal(plan.ws_segm_max % 256, 0);
    assert_int_equal(plan.ws_segm_sum % 256, 0);
    assert_int_equal(plan.ws_q_rot % 256, 0);
    assert_int_equal(plan.workspace_bytes % 256, 0);
    assert_true(plan.ws_segm_max >= plan.ws_segm_out + out);
    assert_true(plan.ws_segm_max < plan.ws_segm_out + out + 256);
    assert_true(plan.ws_segm_sum >= plan.ws_segm_max + stat);
    assert_true(plan.ws_segm_sum < plan.ws_segm_max + stat + 256);
    assert_true(plan.ws_q_rot >= plan.ws_segm_sum + stat);
    assert_true(plan.ws_q_rot < plan.ws_segm_sum + stat + 256);
    assert_true(plan.workspace_bytes >= plan.ws_q_rot + qrot);
    assert_true(plan.workspace_bytes < plan.ws_q_rot + qrot + 256);
  }
}

/* Found by fuzzing: B x Hk x P near 2^63 on the warpgroup layer overflowed
 * int64 while sizing partitions (UBSan); now the sizes are refused or the
 * plan made without undefined behaviour. */
static void policy_sizes_huge_grids_without_overflow(void **state) {
  (void)state;
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 587399424;
  s.num_q_heads = 1 << 30;
  s.num_kv_heads = 1 << 27;
  s.head_dim = 256;
  s.block_size = 64;
  s.max_blocks_per_seq = 262143;
  uq_plan p;
  int rc = uq_plan_make(&s, "sm_90a", &p);
  assert_true(rc == 0 || rc == UQ_EOVERFLOW);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(policy_matches_hand_worked_partitions),
      cmocka_unit_test(schedule_covers_every_tile_group_once),
      cmocka_unit_test(policy_refuses_ineligible_shapes_with_reason),
      cmocka_unit_test(policy_ineligible_plan_keeps_resolved_fields),
      cmocka_unit_test(policy_refuses_malformed_shapes),
      cmocka_unit_test(policy_fuses_qrot_only_for_dense_head_rows),
      cmocka_unit_test(policy_lays_out_workspace_aligned),
      cmocka_unit_test(policy_sizes_huge_grids_without_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
