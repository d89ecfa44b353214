/* Kernel keys checked against the rules: the parser refuses what the
 * planner refuses, validation refuses every field out of range, every bad
 * target and every field a kind does not use, and keys are reproducible as
 * bytes. Names and parsing: unit_key.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/codegen/key.h"
#include "lib/codegen/target.h"
#include "tests/codegen/key_examples.h"
#include "uqjit_tools.h"

static void expect_invalid(const uq_key *k, const char *why) {
  int rc = uq_key_validate(k);
  if (rc != UQ_EINVAL)
    fail_msg("%s: validate returned %d", why, rc);
  assert_true(uq_last_error()[0] != '\0');
}

/* The key parser refuses what the planner refuses, by the same rules
 * (lib/codegen/key.c): query strides that do not address two sequences
 * with 64-bit byte offsets, block sizes no layer takes, block tables past
 * the int32 sequence lengths, softmax scales over 1e6; so do warm-by-key
 * and uq_code_object, which take keys by name. At each rule's edge the
 * planner's key parses and one step past it both refuse. */
static void key_rules_are_the_planners(void **state) {
  (void)state;
  static const char *const refused[] = {
      /* the query stride of `uqjit dump --key`, which plan refuses */
      "uq_decode_sm_90a_bf16_v2_d256_hk2_p16_mb64_s0.06250000_qg8_bs16_"
      "ps272_fq1_t1_sq9223372036854775807_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.06250000_qg8_bs48_"
      "ps272_fq1_t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.06250000_qg8_bs1_"
      "ps272_fq1_t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p512_mb134217728_s0.06250000_qg8_"
      "bs16_ps272_fq1_t1048576_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s1000000.00000001_qg8_"
      "bs32_ps272_fq1_t1_sq2048_sh256",
  };
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "gfx950";
  o.use_disk_cache = 0;
  uq_context *ctx = NULL;
  assert_int_equal(uq_context_create(&o, &ctx), 0);
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    expect_parse_refused(refused[i]);
    void *obj = NULL;
    size_t len = 0;
    uq_key k;
    memset(&k, 0, sizeof k);
    k = example_decode();
    if (i == 0)
      k.stride_q_seq = INT64_MAX;
    else if (i == 1 || i == 2)
      k.kv_block_size = i == 1 ? 48 : 1;
    else if (i == 3) {
      k.num_partitions = 512;
      k.tile_groups_per_partition = 1 << 20;
      k.max_blocks_per_seq = 134217728;
      k.kv_block_size = 16;
    } else
      k.scale_e8 = 100000000000001LL; /* scale 1e6, one step over */
    assert_int_equal(uq_code_object(ctx, &k, &obj, &len, NULL), UQ_EINVAL);
    assert_null(obj);
  }
  uq_context_destroy(ctx);

  /* The planner: the same shapes refused, batch 1 included. */
  uq_shape s;
  uq_plan p;
  uq_shape_init(&s);
  s.batch = 1;
  s.num_q_heads = 16;
  s.num_kv_heads = 2;
  s.head_dim = 256;
  s.block_size = 16;
  s.max_blocks_per_seq = 64;
  s.q_stride_seq = INT64_MAX;
  assert_int_equal(uq_plan_make(&s, "sm_90a", &p), UQ_EOVERFLOW);
  s.q_stride_seq = 0;
  s.block_size = 48;
  assert_int_equal(uq_plan_make(&s, "gfx950", &p), 0);
  assert_false(p.eligible);
  s.block_size = 16;
  s.max_blocks_per_seq = 134217728;
  assert_int_equal(uq_plan_make(&s, "gfx950", &p), UQ_EOVERFLOW);
  s.max_blocks_per_seq = 64;
  s.scale = 1000000.1f;
  assert_int_equal(uq_plan_make(&s, "gfx950", &p), UQ_EINVAL);

  /* Edges: the largest stride either takes, for 16 heads of 256. */
  const int64_t edge = INT64_MAX / 2 - 16 * 256;
  s.scale = 0;
  s.q_stride_head = 256;
  for (int batch = 1; batch <= 2; batch++) {
    s.batch = batch;
    s.q_stride_seq = edge;
    assert_int_equal(uq_plan_make(&s, "sm_90a", &p), 0);
    assert_true(p.eligible);
    char name[256];
    assert_true(uq_key_name(&p.kernels[0], name, sizeof name) > 0);
    uq_key back;
    assert_int_equal(uq_key_parse(name, &back), 0);
    s.q_stride_seq = edge + 1;
    assert_int_equal(uq_plan_make(&s, "sm_90a", &p), UQ_EOVERFLOW);
    back.stride_q_seq = edge + 1;
    expect_invalid(&back, "a stride one past the edge");
  }
}

/* One field of a valid decode key out of range at a time. */
static void validate_refuses_bad_fields(const uq_key *good) {
  const uq_key base = *good;
  uq_key k;
#define BAD(field, value)                  \
  do {                                     \
    k = base;                              \
    k.field = value;                       \
    expect_invalid(&k, #field " " #value); \
  } while (0)
  BAD(kind, 0);
  BAD(kind, 9);
  BAD(dtype, 0);
  BAD(dtype, UQ_DTYPE_FP32);
  BAD(dtype, 7);
  BAD(variant, 5);
  BAD(variant, 100);
  BAD(variant, -1);
  BAD(head_dim, 16);
  BAD(head_dim, 100);
  BAD(head_dim, 1024);
  BAD(num_kv_heads, 0);
  BAD(num_partitions, 1);
  BAD(num_partitions, 3);
  BAD(num_partitions, 1024);
  BAD(tile_groups_per_partition, 0);
  BAD(tile_groups_per_partition, 3);
  BAD(tile_groups_per_partition, 1 << 21);
  BAD(query_group_size, 0);
  BAD(kv_block_size, 0);
  BAD(kv_block_size, 8);
  BAD(kv_block_size, 512);
  BAD(max_blocks_per_seq, 0);
  BAD(max_blocks_per_seq, INT32_MAX / 32 + 1); /* past INT32_MAX tokens */
  BAD(padded_slot, 268);
  BAD(padded_slot, 274);
  BAD(fuse_qrot, 2);
  BAD(stride_q_seq, 0);
  BAD(stride_q_head, -256);
  BAD(stride_q_head, 512); /* fused needs dense rows */
  BAD(stride_q_seq, 2047); /* fused needs seq stride >= Hq*D */
  BAD(scale_e8, 0);
  BAD(scale_e8, -6250000);
  BAD(scale_e8, UQ__KEY_SCALE_E8_MAX + 1);
  BAD(stride_q_seq, INT64_MAX);
#undef BAD
  /* Coverage: 16 partitions x 1 tile group = 4096 tokens < 129*32. */
  k = base;
  k.max_blocks_per_seq = 129;
  expect_invalid(&k, "window past P*TGPP*256");
  k.max_blocks_per_seq = 128;
  assert_int_equal(uq_key_validate(&k), 0);
}

/* Targets: canonical, terminated, zero-padded. */
static void validate_refuses_bad_targets(const uq_key *good) {
  const uq_key base = *good;
  uq_key k = base;
  strcpy(k.target, "sm90");
  expect_invalid(&k, "non-canonical target");
  k = base;
  strcpy(k.target, "gfx942:xnack-:sramecc+");
  expect_invalid(&k, "unsorted features");
  k = base;
  strcpy(k.target, "gfx9000");
  expect_invalid(&k, "unknown target");
  k = base;
  k.target[10] = 'z';
  expect_invalid(&k, "garbage after the target");
  k = base;
  memset(k.target, 'a', sizeof k.target);
  expect_invalid(&k, "unterminated target");
  k = base;
  k.target[0] = '\0';
  expect_invalid(&k, "empty target");
}

/* Fields a kind does not use must be 0. */
static void validate_refuses_unused_fields(void) {
  uq_key k = example_reduce();
  assert_int_equal(uq_key_validate(&k), 0);
  k.max_blocks_per_seq = 64;
  expect_invalid(&k, "reduce with max_blocks_per_seq");
  k = example_reduce();
  k.stride_q_seq = 1;
  expect_invalid(&k, "reduce with a stride");
  k = example_reduce();
  k.num_partitions = 0;
  expect_invalid(&k, "reduce without partitions");
  k = example_prologue();
  assert_int_equal(uq_key_validate(&k), 0);
  k.num_partitions = 16;
  expect_invalid(&k, "prologue with partitions");
  k = example_prologue();
  k.scale_e8 = 6250000;
  expect_invalid(&k, "prologue with a scale");
  k = example_store();
  assert_int_equal(uq_key_validate(&k), 0);
  k.variant = UQ_VARIANT_MATRIX;
  expect_invalid(&k, "store with a variant");
  k.variant = UQ_VARIANT_WARPGROUP;
  expect_invalid(&k, "store with the warpgroup variant");
  /* Every layer is a valid key on any target: whether the target has the
   * layer is the generator's question, not the key's. */
  for (int v = UQ_VARIANT_PORTABLE; v <= UQ_VARIANT_WARPGROUP; v++) {
    k = example_decode();
    k.variant = v;
    assert_int_equal(uq_key_validate(&k), 0);
    k = example_reduce();
    k.variant = v;
    assert_int_equal(uq_key_validate(&k), 0);
  }
  k = example_store();
  k.query_group_size = 8;
  expect_invalid(&k, "store with a group size");
  k = example_store();
  k.dtype = UQ_DTYPE_FP32;
  assert_int_equal(uq_key_validate(&k), 0);
}

static void key_validate_refuses_bad_keys(void **state) {
  (void)state;
  uq_key base = example_decode();
  assert_int_equal(uq_key_validate(&base), 0);
  validate_refuses_bad_fields(&base);
  validate_refuses_bad_targets(&base);
  validate_refuses_unused_fields();
  assert_int_equal(uq_key_validate(NULL), UQ_EINVAL);
}

static void key_bytes_are_reproducible(void **state) {
  (void)state;
  /* Two plans of the same shape, the second planned into dirty memory:
   * keys equal as bytes, target padding included. */
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 16;
  s.num_q_heads = 64;
  s.num_kv_heads = 4;
  s.head_dim = 256;
  s.block_size = 16;
  s.max_blocks_per_seq = 4096;
  s.q_stride_head = 384;
  uq_plan a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0xee, sizeof b);
  assert_int_equal(uq_plan_make(&s, "gfx90a:xnack-", &a), 0);
  assert_int_equal(uq_plan_make(&s, "GFX90A:XNACK-", &b), 0);
  assert_int_equal(a.num_kernels, 3);
  assert_memory_equal(a.kernels, b.kernels, sizeof a.kernels);
  for (int k = 0; k < a.num_kernels; k++)
    for (size_t i = strlen(a.kernels[k].target); i < UQ_TARGET_MAX; i++)
      assert_int_equal(a.kernels[k].target[i], 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(key_rules_are_the_planners),
      cmocka_unit_test(key_validate_refuses_bad_keys),
      cmocka_unit_test(key_bytes_are_reproducible),
  };
  return cmocka_run_group_tests_name("key_rules", tests, NULL, NULL);
}
