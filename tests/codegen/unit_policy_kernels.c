/* The kernels a plan names (FORMAT.md section 6): keys against keys built
 * by hand, the scale's rounding, defaults and targets, the layer chosen per
 * shape, target and request and the launch contract the layers share, the
 * prologue of element-strided queries, the store key, what a plan reads of
 * a shape, and windows past what a key may carry. Partitions, refusals and
 * the workspace: unit_policy.c. */
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

static void policy_keys_match_hand_built_keys(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  s.q_stride_head = 512;
  s.q_stride_seq = 4096;
  s.q_dtype = UQ_DTYPE_FP16;
  s.padded_slot = 288;
  uq_plan plan;
  assert_int_equal(uq_plan_make(&s, "GFX942:XNACK-:sramecc+", &plan), 0);
  uq_key want;
  memset(&want, 0, sizeof want);
  want.kind = UQ_KERNEL_DECODE;
  want.dtype = UQ_DTYPE_FP16;
  want.variant = UQ_VARIANT_MATRIX; /* the gfx942 layer */
  want.head_dim = 256;
  want.num_kv_heads = 1;
  want.num_partitions = 16;
  want.max_blocks_per_seq = 64;
  want.scale_e8 = 6250000;
  want.query_group_size = 8;
  want.kv_block_size = 32;
  want.padded_slot = 288;
  want.fuse_qrot = 0;
  want.tile_groups_per_partition = 1;
  want.stride_q_seq = 4096;
  want.stride_q_head = 512;
  strcpy(want.target, "gfx942:sramecc+:xnack-");
  assert_memory_equal(&plan.kernels[0], &want, sizeof want);

  memset(&want, 0, sizeof want);
  want.kind = UQ_KERNEL_REDUCE;
  want.dtype = UQ_DTYPE_FP16;
  want.variant = UQ_VARIANT_MATRIX;
  want.head_dim = 256;
  want.num_kv_heads = 1;
  want.num_partitions = 16;
  want.query_group_size = 8;
  strcpy(want.target, "gfx942:sramecc+:xnack-");
  assert_memory_equal(&plan.kernels[1], &want, sizeof want);

  memset(&want, 0, sizeof want);
  want.kind = UQ_KERNEL_PROLOGUE;
  want.dtype = UQ_DTYPE_FP16;
  want.variant = UQ_VARIANT_MATRIX;
  want.head_dim = 256;
  want.num_kv_heads = 1;
  want.query_group_size = 8;
  strcpy(want.target, "gfx942:sramecc+:xnack-");
  assert_memory_equal(&plan.kernels[2], &want, sizeof want);
  assert_int_equal(plan.num_kernels, 3);
  assert_int_equal(plan.padded_slot, 288);
  assert_int_equal(plan.block_threads, 64);
  for (int k = 0; k < plan.num_kernels; k++)
    assert_int_equal(uq_key_validate(&plan.kernels[k]), 0);
}

static void policy_rounds_scale_to_eight_decimals(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  uq_plan plan;
  /* Default 1/sqrt(256) = 0.0625 exactly. */
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_true(plan.scale == 0.0625f);
  assert_int_equal(plan.kernels[0].scale_e8, 6250000);
  /* 0.123456789f is 0.12345679104...: 8 decimals give 0.12345679. */
  s.scale = 0.123456789f;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.kernels[0].scale_e8, 12345679);
  assert_true(plan.scale == (float)0.12345679);
  /* 0.1f is 0.10000000149...: 10000000. */
  s.scale = 0.1f;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.kernels[0].scale_e8, 10000000);
  s.scale = 2.5f;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_int_equal(plan.kernels[0].scale_e8, 250000000);
}

static void policy_resolves_defaults_and_targets(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  uq_plan plan;
  assert_int_equal(uq_plan_make(&s, NULL, &plan), 0);
  assert_string_equal(plan.kernels[0].target, "gfx950");
  assert_int_equal(plan.kernels[0].dtype, UQ_DTYPE_BF16);
  assert_int_equal(plan.kernels[0].stride_q_seq, 8 * 256);
  assert_int_equal(plan.kernels[0].stride_q_head, 256);
  assert_int_equal(plan.padded_slot, 272);
  assert_int_equal(plan.block_threads, 64);
  s.q_dtype = 0; /* 0 also means bf16 */
  assert_int_equal(uq_plan_make(&s, "SM90", &plan), 0);
  assert_string_equal(plan.kernels[0].target, "sm_90");
  assert_int_equal(plan.kernels[0].dtype, UQ_DTYPE_BF16);
  assert_int_equal(plan.block_threads, 128);
}

/* The default is the best layer the target has: the warpgroup layer on
 * sm_90a only, the matrix layer on the other NVIDIA targets from sm_90 on
 * and on gfx950 and gfx942, the portable layer elsewhere. UQJIT_VARIANT=matrix /
 * portable ask for a lower layer, =warpgroup is the default spelled out,
 * =gfx950-emu (never a default) the emulated gfx950 layer on NVIDIA
 * sm_90+, and a layer the target lacks is never chosen; an invalid value
 * is ignored. */
static void policy_picks_the_best_layer_unless_a_lower_one_is_asked(
    void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  uq_plan plan;
  static const struct {
    const char *target, *env;
    int want;
  } cases[] = {
      {"sm_90a", NULL, UQ_VARIANT_WARPGROUP},
      {"SM90A", NULL, UQ_VARIANT_WARPGROUP},
      {"sm_90a", "warpgroup", UQ_VARIANT_WARPGROUP},
      {"sm_90a", "matrix", UQ_VARIANT_MATRIX},
      {"sm_90a", "portable", UQ_VARIANT_PORTABLE},
      {"sm_90a", "bogus", UQ_VARIANT_WARPGROUP},
      {"sm_90a", "WARPGROUP", UQ_VARIANT_WARPGROUP}, /* invalid: ignored */
      {"sm_90", NULL, UQ_VARIANT_MATRIX},
      {"sm_90", "warpgroup", UQ_VARIANT_MATRIX},
      {"sm_90", "matrix", UQ_VARIANT_MATRIX},
      {"sm_90", "portable", UQ_VARIANT_PORTABLE},
      {"sm_90", "bogus", UQ_VARIANT_MATRIX},
      {"sm_100", NULL, UQ_VARIANT_MATRIX},
      {"sm_100a", NULL, UQ_VARIANT_MATRIX},
      {"sm_100a", "warpgroup", UQ_VARIANT_MATRIX},
      {"sm_80", NULL, UQ_VARIANT_PORTABLE},
      {"sm_80", "matrix", UQ_VARIANT_PORTABLE},
      {"sm_80", "warpgroup", UQ_VARIANT_PORTABLE},
      {"gfx950", NULL, UQ_VARIANT_MATRIX},
      {"gfx950:sramecc+:xnack-", NULL, UQ_VARIANT_MATRIX},
      {"mi355x", NULL, UQ_VARIANT_MATRIX},
      {"gfx950", "matrix", UQ_VARIANT_MATRIX},
      {"gfx950", "warpgroup", UQ_VARIANT_MATRIX},
      {"gfx950", "gfx950-emu", UQ_VARIANT_MATRIX},
      {"gfx950", "portable", UQ_VARIANT_PORTABLE},
      {"gfx942", NULL, UQ_VARIANT_MATRIX},
      {"mi300x", NULL, UQ_VARIANT_MATRIX},
      {"gfx942", "matrix", UQ_VARIANT_MATRIX},
      {"gfx942", "portable", UQ_VARIANT_PORTABLE},
      {"gfx90a", NULL, UQ_VARIANT_PORTABLE},
      {"gfx90a", "matrix", UQ_VARIANT_PORTABLE},
      /* the gfx942 emulation likewise */
      {"sm_90a", "gfx942-emu", UQ_VARIANT_GFX942_EMU},
      {"sm_80", "gfx942-emu", UQ_VARIANT_PORTABLE},
      {"gfx942", "gfx942-emu", UQ_VARIANT_MATRIX},
      /* the gfx950 emulation: only when asked for, NVIDIA sm_90+ only */
      {"sm_90", "gfx950-emu", UQ_VARIANT_GFX950_EMU},
      {"sm_90a", "gfx950-emu", UQ_VARIANT_GFX950_EMU},
      {"sm_100a", "gfx950-emu", UQ_VARIANT_GFX950_EMU},
      {"sm_80", "gfx950-emu", UQ_VARIANT_PORTABLE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].env != NULL)
      setenv("UQJIT_VARIANT", cases[i].env, 1);
    else
      unsetenv("UQJIT_VARIANT");
    assert_int_equal(uq_plan_make(&s, cases[i].target, &plan), 0);
    for (int k = 0; k < plan.num_kernels; k++)
      if (plan.kernels[k].variant != cases[i].want)
        fail_msg("%s with UQJIT_VARIANT=%s: kernel %d has variant %d, not %d",
                 cases[i].target, cases[i].env ? cases[i].env : "(unset)", k,
                 (int)plan.kernels[k].variant, cases[i].want);
    /* Every NVIDIA layer is four warps, AMD ones and the AMD
     * emulations one wave64. */
    int wave64 = cases[i].target[0] == 'g' || cases[i].target[0] == 'm' ||
                 cases[i].want == UQ_VARIANT_GFX950_EMU ||
                 cases[i].want == UQ_VARIANT_GFX942_EMU;
    assert_int_equal(plan.block_threads, wave64 ? 64 : 128);
  }
  unsetenv("UQJIT_VARIANT");
}

/* Head dims 64 and 128, and query groups outside {6, 8, 16}, get the
 * portable layer on every target, whatever is asked for: vLLM's sizing
 * with their own D (reduce grid D/64, workspace rows of D), a prologue
 * block of D threads, and keys the generator accepts. */
static void policy_serves_other_shapes_with_the_portable_layer(void **state) {
  (void)state;
  static const char *const targets[] = {"sm_90a", "sm_90", "sm_100a",
                                        "gfx950", "gfx942", "gfx90a",
                                        "sm_80"};
  static const char *const asks[] = {NULL, "matrix", "warpgroup",
                                     "gfx950-emu"};
  static const int dims[] = {64, 128, 256};
  static const int qgs[] = {1, 2, 4, 5, 12, 16};
  for (size_t t = 0; t < sizeof targets / sizeof *targets; t++)
    for (size_t a = 0; a < sizeof asks / sizeof *asks; a++)
      for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
        for (size_t q = 0; q < sizeof qgs / sizeof *qgs; q++) {
          uq_shape s = make_shape(3, 2 * qgs[q], 2, 64, 40, 0);
          s.head_dim = dims[d];
          s.q_stride_head = dims[d] + 64; /* a prologue too */
          s.q_stride_seq = 2 * qgs[q] * (dims[d] + 64);
          uq_plan plan;
          assert_int_equal(
              uq_plan_make_variant(&s, targets[t], asks[a], &plan), 0);
          assert_true(plan.eligible);
          int fast = dims[d] == 256 && qgs[q] == 16;
          if (!fast)
            for (int k = 0; k < plan.num_kernels; k++)
              assert_int_equal(plan.kernels[k].variant, UQ_VARIANT_PORTABLE);
          assert_int_equal(plan.num_kernels, 3);
          assert_int_equal(plan.reduce_grid[2], 1); /* a block per output row */
          assert_int_equal(plan.padded_slot, dims[d] + dims[d] / 16);
          /* 1/sqrt(D) at 8 decimals, as vLLM's key rounds it */
          double e8 = (double)llround(1e8 / sqrt((double)dims[d]));
          assert_true(plan.scale == (float)(e8 / 1e8));
          size_t rows = (size_t)3 * 2 * plan.num_partitions * qgs[q];
          assert_int_equal(plan.ws_segm_max - plan.ws_segm_out,
                           (rows * dims[d] * 2 + 255) / 256 * 256);
          for (int k = 0; k < plan.num_kernels; k++) {
            assert_int_equal(plan.kernels[k].head_dim, dims[d]);
            assert_int_equal(plan.kernels[k].query_group_size, qgs[q]);
            assert_true(uq__gen_block_threads(&plan.kernels[k]) > 0);
          }
          assert_int_equal(uq__gen_block_threads(&plan.kernels[2]),
                           dims[d] < 64 ? 64 : dims[d]);
        }
}

/* The layer as an argument: a name overrides UQJIT_VARIANT, "auto" asks
 * for the best layer whatever the environment says, NULL reads it, and an
 * unknown name is an error (not a warning: the caller spelled it). */
static void plan_make_variant_takes_the_layer_as_an_argument(void **state) {
  (void)state;
  uq_shape s = make_shape(4, 8, 1, 32, 64, 0);
  uq_plan plan;
  setenv("UQJIT_VARIANT", "portable", 1);
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", "matrix", &plan), 0);
  assert_int_equal(plan.kernels[0].variant, UQ_VARIANT_MATRIX);
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", "auto", &plan), 0);
  assert_int_equal(plan.kernels[0].variant, UQ_VARIANT_WARPGROUP);
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", NULL, &plan), 0);
  assert_int_equal(plan.kernels[0].variant, UQ_VARIANT_PORTABLE);
  assert_int_equal(uq_plan_make(&s, "sm_90a", &plan), 0);
  assert_int_equal(plan.kernels[0].variant, UQ_VARIANT_PORTABLE);
  unsetenv("UQJIT_VARIANT");
  memset(&plan, 0x5a, sizeof plan);
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", "bogus", &plan),
                   UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "unknown variant 'bogus'"));
  assert_non_null(strstr(uq_last_error(), "2 warpgroup"));
  assert_int_equal(plan.eligible, 0);
  assert_int_equal(plan.num_kernels, 0);
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", "Matrix", &plan),
                   UQ_EINVAL);
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", "", &plan), UQ_EINVAL);
}

/* The layers share one launch contract: on sm_90a a plan the warpgroup
 * layer does not resize (here 2 x 3 x 64 blocks: more than its spread
 * grid, less than half its full one) differs between variants only in
 * the keys' variant field. */
static void policy_layers_share_the_launch_contract(void **state) {
  (void)state;
  static const char *const envs[] = {"warpgroup", "matrix", "portable"};
  uq_shape s = make_shape(2, 48, 3, 64, 200, 0);
  s.q_stride_head = 512; /* padded head rows: not fused, a prologue too */
  s.q_stride_seq = 48 * 512;
  uq_plan plans[3];
  for (int i = 0; i < 3; i++) {
    setenv("UQJIT_VARIANT", envs[i], 1);
    assert_int_equal(uq_plan_make(&s, "sm_90a", &plans[i]), 0);
    assert_true(plans[i].eligible);
    assert_int_equal(plans[i].num_kernels, 3);
    for (int k = 0; k < 3; k++) {
      assert_int_equal(plans[i].kernels[k].variant, 2 - i);
      plans[i].kernels[k].variant = 0;
    }
  }
  unsetenv("UQJIT_VARIANT");
  assert_memory_equal(&plans[0], &plans[1], sizeof plans[0]);
  assert_memory_equal(&plans[0], &plans[2], sizeof plans[0]);
}

/* The warpgroup layer gives a partition 64 tokens at least where vLLM
 * gives 192, doubles the partitions toward one 64-token chunk each while
 * B x Hk x P stays within 128 blocks, halves them while it stays at 512
 * blocks or more, and once more if it stays at 256 with partitions of
 * 512 tokens at most, or 1024 where 8 or more are left (hand-worked rows:
 * vLLM's P / TGPP as in unit_policy.c's rows, then the layer's); the
 * matrix layer on the same target keeps vLLM's. */
static void warpgroup_layer_sizes_partitions_to_the_grid(void **state) {
  (void)state;
  static const struct {
    int b, hq, hk, bs, mb;
    int vllm_p, p, tgpp;
  } cases[] = {
      /* W=131072 req=512 B=16: vLLM P=256 TGPP=2; 16*128, 16*64 and 16*32
       * keep halving, 16*16 is below: P=32 TGPP=16 */
      {16, 16, 1, 64, 2048, 256, 32, 16},
      /* W=16384 req=64 B=64: vLLM a=max(32,64)=64 P=64 TGPP=1; 64*32,
       * 64*16, 64*8 keep halving: P=8 TGPP=8 */
      {64, 16, 1, 64, 256, 64, 8, 8},
      /* Hk=4: 256 kv heads, down to 256*2=512: P=2 (the floor) TGPP=32 */
      {64, 24, 4, 64, 256, 64, 2, 32},
      /* W=2048 req=8 B=4: vLLM a=min(32, ceil(2048/192)=11) P=16; the
       * layer's 64-token minimum: a=min(32, 32) P=32 TGPP=1; 4*32 blocks
       * are far below the full grid */
      {4, 16, 1, 16, 128, 16, 32, 1},
      /* W=1024 req=4 B=1: vLLM a=min(32, 6) P=8; layer min(32, 16) P=16 */
      {1, 16, 1, 64, 16, 8, 16, 1},
      /* W=64 req=1: vLLM a=min(32, 1) P=2; layer min(32, 1) P=2 */
      {2, 8, 1, 16, 4, 2, 2, 1},
      /* W=131072 B=8 cap 512: P=512 TGPP=1; down to 8*64=512: P=64
       * TGPP=8 */
      {8, 16, 1, 256, 512, 512, 64, 8},
      /* W=4096 req=16 B=1: vLLM a=max(32,16)=32, min(32, 22) P=32; the
       * layer min(32, 64)=32, 64 chunks: 1*64 blocks <= 128, P=64 TGPP=1 */
      {1, 16, 1, 64, 64, 32, 64, 1},
      /* W=8192 req=32: vLLM P=32; 128 chunks, 1*128 <= 128: P=128, TGPP
       * next_pow2(ceil(32/128))=1 */
      {1, 16, 1, 64, 128, 32, 128, 1},
      /* B=2: 2*64 <= 128 but 2*128 is not: P=64 TGPP=1 */
      {2, 16, 1, 64, 128, 32, 64, 1},
      /* B=4, W=4096: 4*64 blocks would pass 128: vLLM's P=32 stays */
      {4, 16, 1, 64, 64, 32, 32, 1},
      /* Hk=4, W=4096, B=1: 4*64 passes 128 too: P=32 */
      {1, 24, 4, 64, 64, 32, 32, 1},
      /* Hk=4, W=2048, B=4: vLLM P=16, the layer's minimum P=32; 16*32
       * stays (16*16 is below the full grid); 16*16 is half of it with
       * 128-token partitions: P=16 TGPP=1 */
      {4, 24, 4, 16, 128, 16, 16, 1},
      /* Hk=2, W=16384, B=4: vLLM P=64 TGPP=1; 8*64 stays (8*32 is below
       * the full grid); 8*32 is half of it with 512-token partitions, the
       * most halved once more: P=32 TGPP=2 */
      {4, 16, 2, 16, 1024, 64, 32, 2},
      /* W=16384 B=16: vLLM P=64; 16*32 is the full grid: P=32; 16*16 is
       * half of it with 1024-token partitions, 16 of them (8 or more):
       * P=16 TGPP=4 */
      {16, 16, 1, 64, 256, 64, 16, 4},
      /* W=4096 B=64: vLLM P=32 (a=max(32, 16)); 64*16 keeps halving,
       * 64*8 is the full grid; 64*4 is half of it with 1024-token
       * partitions but only 4 of them: P=8 TGPP=2 */
      {64, 16, 1, 64, 64, 32, 8, 2},
      /* Hk=4, W=4096, B=16: 64 kv heads, vLLM P=32; 64*8 stays; 64*4
       * would leave 4 partitions of 1024 tokens: P=8 TGPP=2 */
      {16, 24, 4, 64, 64, 32, 8, 2},
      /* W=32768 B=8: vLLM P=128 (a=max(32, 128)); 8*64 stays (8*32 is
       * below the full grid); 8*32 is half of it with 1024-token
       * partitions, 32 of them: P=32 TGPP=4 */
      {8, 16, 1, 64, 512, 128, 32, 4},
      /* W=2048 B=64: vLLM P=16 (a=min(32, 11)), the layer's minimum
       * P=32; 64*32 and 64*16 halve to 64*8, the full grid; 64*4 leaves
       * 512-token partitions, short whatever their number: P=4 TGPP=2 */
      {64, 16, 1, 64, 32, 16, 4, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uq_shape s = make_shape(cases[i].b, cases[i].hq, cases[i].hk, cases[i].bs, cases[i].mb, 0);
    uq_plan vllm, wg, matrix;
    assert_int_equal(uq_plan_make(&s, "gfx950", &vllm), 0);
    assert_int_equal(uq_plan_make(&s, "sm_90a", &wg), 0);
    setenv("UQJIT_VARIANT", "matrix", 1);
    assert_int_equal(uq_plan_make(&s, "sm_90a", &matrix), 0);
    unsetenv("UQJIT_VARIANT");
    assert_int_equal(vllm.num_partitions, cases[i].vllm_p);
    assert_int_equal(matrix.num_partitions, cases[i].vllm_p);
    if (wg.num_partitions != cases[i].p || wg.tile_groups_per_partition != cases[i].tgpp)
      fail_msg("case %zu: got P=%d TGPP=%d, want P=%d TGPP=%d", i, wg.num_partitions,
               wg.tile_groups_per_partition, cases[i].p, cases[i].tgpp);
    /* The plan is honest: grid, keys and workspace follow its P. */
    assert_int_equal(wg.decode_grid[2], cases[i].p);
    for (int k = 0; k < wg.num_kernels; k++) {
      assert_int_equal(wg.kernels[k].num_partitions, cases[i].p);
      assert_int_equal(wg.kernels[k].variant, UQ_VARIANT_WARPGROUP);
    }
    assert_int_equal(wg.kernels[0].tile_groups_per_partition, cases[i].tgpp);
    assert_true((int64_t)cases[i].p * cases[i].tgpp * 256 >= (int64_t)cases[i].bs * cases[i].mb);
  }
}

static void plan_reads_only_shape_fields(void **state) {
  (void)state;
  /* Two shapes with the same fields, one built on garbage (every field
   * assigned), and outputs full of garbage: the plans are the same bytes. */
  uq_shape a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0xa7, sizeof b);
  uq_shape *shapes[] = {&a, &b};
  for (int i = 0; i < 2; i++) {
    uq_shape *s = shapes[i];
    s->batch = 4;
    s->num_q_heads = 16;
    s->num_kv_heads = 2;
    s->head_dim = 256;
    s->block_size = 32;
    s->max_blocks_per_seq = 64;
    s->padded_slot = 0;
    s->max_num_kv_splits = 0;
    s->scale = 0.0f;
    s->has_sinks = 0;
    s->sliding_window = 0;
    s->q_dtype = UQ_DTYPE_BF16;
    s->q_stride_seq = 0;
    s->q_stride_head = 0;
    s->q_stride_dim = 0;
  }
  uq_plan pa, pb;
  memset(&pa, 0x00, sizeof pa);
  memset(&pb, 0xff, sizeof pb);
  assert_int_equal(uq_plan_make(&a, "gfx950", &pa), 0);
  assert_int_equal(uq_plan_make(&b, "gfx950", &pb), 0);
  assert_memory_equal(&pa, &pb, sizeof pa);
}

/* A last stride other than 1 (vLLM's contiguous_query=False views) goes
 * through the prologue, whose key carries the stride; a stride of 1 is
 * the default, byte for byte; a negative one is refused. */
static void element_strided_query_goes_through_the_prologue(void **state) {
  (void)state;
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 16;
  s.num_kv_heads = 2;
  s.head_dim = 256;
  s.block_size = 64;
  s.max_blocks_per_seq = 64;
  uq_plan dense, one, two;
  assert_int_equal(uq_plan_make(&s, "gfx950", &dense), 0);
  assert_true(dense.fuse_qrot);
  s.q_stride_dim = 1;
  memset(&one, 0x5a, sizeof one);
  assert_int_equal(uq_plan_make(&s, "gfx950", &one), 0);
  assert_memory_equal(&dense, &one, sizeof dense);
  s.q_stride_dim = 2;
  s.q_stride_head = 512;
  s.q_stride_seq = 16 * 512;
  assert_int_equal(uq_plan_make(&s, "gfx950", &two), 0);
  assert_true(two.eligible);
  assert_false(two.fuse_qrot);
  assert_int_equal(two.num_kernels, 3);
  assert_int_equal(two.kernels[2].kind, UQ_KERNEL_PROLOGUE);
  assert_int_equal(two.kernels[2].stride_q_dim, 2);
  assert_int_equal(two.kernels[0].stride_q_dim, 0);
  assert_int_equal(two.kernels[1].stride_q_dim, 0);
  assert_true(two.ws_q_rot > 0);
  char name[256];
  assert_true(uq_key_name(&two.kernels[2], name, sizeof name) > 0);
  assert_string_equal(name, "uq_prologue_gfx950_bf16_v1_d256_hk2_qg8_se2");
  /* A dense-headed query with a stride still needs the prologue. */
  s.q_stride_head = 0;
  s.q_stride_seq = 0;
  assert_int_equal(uq_plan_make(&s, "gfx950", &two), 0);
  assert_false(two.fuse_qrot);
  s.q_stride_dim = -2;
  assert_int_equal(uq_plan_make(&s, "gfx950", &two), UQ_EINVAL);
  /* The last element must be addressable. */
  s.q_stride_dim = INT64_MAX / 2;
  assert_int_equal(uq_plan_make(&s, "gfx950", &two), UQ_EOVERFLOW);
}

static void store_key_is_built_and_checked(void **state) {
  (void)state;
  uq_key k, want;
  assert_int_equal(uq_store_key(256, 8, 0, UQ_DTYPE_FP32, "sm90", &k), 0);
  memset(&want, 0, sizeof want);
  want.kind = UQ_KERNEL_STORE;
  want.dtype = UQ_DTYPE_FP32;
  want.head_dim = 256;
  want.num_kv_heads = 8;
  want.padded_slot = 272;
  strcpy(want.target, "sm_90");
  assert_memory_equal(&k, &want, sizeof k);
  assert_int_equal(uq_key_validate(&k), 0);
  /* D=128: slot 136 bytes, already a multiple of 4. */
  assert_int_equal(uq_store_key(128, 1, 0, UQ_DTYPE_BF16, NULL, &k), 0);
  assert_int_equal(k.padded_slot, 136);
  assert_string_equal(k.target, "gfx950");
  assert_int_equal(uq_store_key(100, 1, 0, UQ_DTYPE_BF16, NULL, &k),
                   UQ_EINVAL);
  assert_int_equal(uq_store_key(16, 1, 0, UQ_DTYPE_BF16, NULL, &k),
                   UQ_EINVAL);
  assert_int_equal(uq_store_key(256, 0, 0, UQ_DTYPE_BF16, NULL, &k),
                   UQ_EINVAL);
  assert_int_equal(uq_store_key(256, 1, 270, UQ_DTYPE_BF16, NULL, &k),
                   UQ_EINVAL);
  assert_int_equal(uq_store_key(256, 1, 0, (uq_dtype)9, NULL, &k),
                   UQ_EINVAL);
  assert_int_equal(uq_store_key(256, 1, 0, UQ_DTYPE_BF16, "gfx9", &k),
                   UQ_EINVAL);
  assert_int_equal(uq_store_key(256, 1, 0, UQ_DTYPE_BF16, NULL, NULL),
                   UQ_EINVAL);
}

/* Found by fuzzing (tests/fuzz/fuzz_plan.c): a window so long that one
 * partition would need more tile groups than a key may carry is refused,
 * instead of an eligible plan whose decode key uq_key_name rejects. */
static void policy_refuses_windows_beyond_the_key_limits(void **state) {
  (void)state;
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 2097408;
  s.num_q_heads = 16;
  s.num_kv_heads = 1;
  s.head_dim = 256;
  s.block_size = 64;
  s.max_blocks_per_seq = 15859713;
  uq_plan p;
  assert_int_equal(uq_plan_make(&s, "sm_90a", &p), 0);
  assert_int_equal(p.eligible, 0);
  assert_non_null(strstr(p.reason, "tile groups per partition"));
  /* Every plan that is eligible names valid keys. */
  s.max_blocks_per_seq = 4096;
  assert_int_equal(uq_plan_make(&s, "sm_90a", &p), 0);
  assert_int_equal(p.eligible, 1);
  char name[512];
  for (int i = 0; i < p.num_kernels; i++)
    assert_true(uq_key_name(&p.kernels[i], name, sizeof name) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(policy_keys_match_hand_built_keys),
      cmocka_unit_test(policy_rounds_scale_to_eight_decimals),
      cmocka_unit_test(policy_resolves_defaults_and_targets),
      cmocka_unit_test(policy_picks_the_best_layer_unless_a_lower_one_is_asked),
      cmocka_unit_test(policy_serves_other_shapes_with_the_portable_layer),
      cmocka_unit_test(plan_make_variant_takes_the_layer_as_an_argument),
      cmocka_unit_test(policy_layers_share_the_launch_contract),
      cmocka_unit_test(warpgroup_layer_sizes_partitions_to_the_grid),
      cmocka_unit_test(plan_reads_only_shape_fields),
      cmocka_unit_test(store_key_is_built_and_checked),
      cmocka_unit_test(element_strided_query_goes_through_the_prologue),
      cmocka_unit_test(policy_refuses_windows_beyond_the_key_limits),
  };
  return cmocka_run_group_tests_name("policy_kernels", tests, NULL, NULL);
}
