/* Kernel keys: names spelled as documented, exact name/key round trips,
 * every variant and the prologue's element stride read back, refusals of
 * malformed names. The rules keys must follow: unit_key_rules.c; the
 * canonical spelling of targets: unit_target.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/codegen/key.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"
#include "tests/codegen/key_examples.h"
#include "uqjit.h"

static const char decode_name[] =
    "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.06250000_qg8_bs32_ps272_"
    "fq1_t1_sq2048_sh256";
static const char reduce_name[] = "uq_reduce_gfx950_bf16_v0_d256_hk1_p16_qg8";
static const char prologue_name[] = "uq_prologue_gfx950_bf16_v0_d256_hk1_qg8";
static const char store_name[] = "uq_store_gfx950_bf16_d256_hk1_ps272";

static void expect_name(const uq_key *k, const char *want) {
  char buf[256];
  int len = uq_key_name(k, buf, sizeof buf);
  if (len < 0)
    fail_msg("naming failed: %s", uq_last_error());
  assert_string_equal(buf, want);
  assert_int_equal(len, (int)strlen(want));
}

static void key_names_spell_every_field(void **state) {
  (void)state;
  uq_key k = example_decode();
  expect_name(&k, decode_name);
  k = example_reduce();
  expect_name(&k, reduce_name);
  k = example_prologue();
  expect_name(&k, prologue_name);
  k = example_store();
  expect_name(&k, store_name);

  k = example_reduce();
  strcpy(k.target, "gfx942:sramecc+:xnack-");
  k.dtype = UQ_DTYPE_FP16;
  k.variant = UQ_VARIANT_MATRIX;
  expect_name(&k, "uq_reduce_gfx942.sramecc+.xnack-_fp16_v1_d256_hk1_p16_qg8");
  k = example_store();
  strcpy(k.target, "sm_90a");
  k.dtype = UQ_DTYPE_FP32;
  expect_name(&k, "uq_store_sm_90a_fp32_d256_hk1_ps272");
  k = example_decode();
  k.scale_e8 = 123456789012; /* 1234.56789012 */
  k.stride_q_seq = 6144;
  k.padded_slot = 288;
  strcpy(k.target, "sm_90");
  expect_name(&k, "uq_decode_sm_90_bf16_v0_d256_hk1_p16_mb64_s1234.56789012_"
                  "qg8_bs32_ps288_fq1_t1_sq6144_sh256");
  k = example_decode();
  strcpy(k.target, "sm_90a");
  k.variant = UQ_VARIANT_WARPGROUP;
  expect_name(&k, "uq_decode_sm_90a_bf16_v2_d256_hk1_p16_mb64_s0.06250000_"
                  "qg8_bs32_ps272_fq1_t1_sq2048_sh256");
  k = example_prologue();
  strcpy(k.target, "sm_90a");
  k.variant = UQ_VARIANT_WARPGROUP;
  expect_name(&k, "uq_prologue_sm_90a_bf16_v2_d256_hk1_qg8");
}

static void key_name_reports_needed_length(void **state) {
  (void)state;
  uq_key k = example_reduce();
  char buf[10];
  memset(buf, 'x', sizeof buf);
  assert_int_equal(uq_key_name(&k, buf, sizeof buf), (int)strlen(reduce_name));
  assert_int_equal(buf[9], '\0');
  assert_memory_equal(buf, reduce_name, 9);
  assert_int_equal(uq_key_name(&k, NULL, 0), (int)strlen(reduce_name));
  /* An invalid key has no name, and leaves an empty string. */
  k.num_partitions = 3;
  memset(buf, 'x', sizeof buf);
  assert_int_equal(uq_key_name(&k, buf, sizeof buf), UQ_EINVAL);
  assert_int_equal(buf[0], '\0');
  assert_int_equal(uq_key_name(NULL, buf, sizeof buf), UQ_EINVAL);
}

static void round_trip(const uq_key *k) {
  char name[256], again[256];
  int len = uq_key_name(k, name, sizeof name);
  if (len < 0 || len >= (int)sizeof name)
    fail_msg("naming failed: %s", uq_last_error());
  uq_key parsed;
  memset(&parsed, 0xcc, sizeof parsed);
  if (uq_key_parse(name, &parsed) != 0)
    fail_msg("'%s' does not parse: %s", name, uq_last_error());
  assert_memory_equal(&parsed, k, sizeof parsed);
  assert_int_equal(uq_key_name(&parsed, again, sizeof again), len);
  assert_string_equal(again, name);
}

/* The largest sequence stride of a decode key with 8 query heads of 32
 * elements (head stride 32): two sequences, (stride + 8 * 32) elements of
 * 2 bytes, end at INT64_MAX bytes at most. */
#define LARGEST_STRIDE_D32 (INT64_MAX / 2 - 8 * 32)

static void key_round_trips_for_every_kind(void **state) {
  (void)state;
  /* sm_90a plans the warpgroup layer (v2), sm_90 and sm_100a the matrix
   * layer (v1), gfx950 its matrix layer (v1), the other AMD targets the
   * portable one (v0). */
  static const char *targets[] = {"gfx950", "gfx942:sramecc+:xnack-",
                                  "gfx90a:xnack+", "gfx1100", "sm_90",
                                  "sm_100a", "sm_90a"};
  static const int shapes[][6] = {
      /* B, Hq, Hk, block size, max blocks, splits */
      {4, 8, 1, 32, 64, 0},     {1, 16, 1, 16, 1, 0},
      {9, 48, 8, 16, 8192, 0},  {300, 32, 2, 256, 4096, 1024},
      {2, 6, 1, 64, 7, 1},      {1, 8, 1, 256, 8388607, 0},
  };
  static const int64_t strides[][2] = {{0, 0}, {3 * 8 * 256 * 16, 256},
                                       {1 << 20, 512}};
  static const float scales[] = {0.0f, 0.1f, 1.0f, 0.0883883476f, 1000.5f};
  int keys = 0;
  for (size_t t = 0; t < sizeof targets / sizeof *targets; t++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
      for (size_t st = 0; st < sizeof strides / sizeof *strides; st++)
        for (size_t sc = 0; sc < sizeof scales / sizeof *scales; sc++) {
          uq_shape sh;
          uq_shape_init(&sh);
          sh.batch = shapes[s][0];
          sh.num_q_heads = shapes[s][1];
          sh.num_kv_heads = shapes[s][2];
          sh.head_dim = 256;
          sh.block_size = shapes[s][3];
          sh.max_blocks_per_seq = shapes[s][4];
          sh.max_num_kv_splits = shapes[s][5];
          sh.q_stride_seq = strides[st][0];
          sh.q_stride_head = strides[st][1];
          sh.scale = scales[sc];
          sh.q_dtype = sc % 2 ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16;
          uq_plan plan;
          assert_int_equal(uq_plan_make(&sh, targets[t], &plan), 0);
          assert_true(plan.eligible);
          for (int k = 0; k < plan.num_kernels; k++, keys++)
            round_trip(&plan.kernels[k]);
        }
  static const int dims[] = {32, 64, 128, 256, 512};
  static const uq_dtype dtypes[] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16,
                                    UQ_DTYPE_FP32};
  for (size_t t = 0; t < sizeof targets / sizeof *targets; t++)
    for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
      for (size_t y = 0; y < 3; y++) {
        uq_key k;
        assert_int_equal(
            uq_store_key(dims[d], (int)d + 1, 0, dtypes[y], targets[t], &k),
            0);
        round_trip(&k);
        assert_int_equal(
            uq_store_key(dims[d], 7, dims[d] * 2, dtypes[y], targets[t], &k),
            0);
        round_trip(&k);
        keys += 2;
      }
  /* Hand-built keys of every kind, at the edges of their ranges. */
  uq_key k = example_decode();
  k.head_dim = 32;
  k.stride_q_head = 32;
  k.stride_q_seq = LARGEST_STRIDE_D32;
  k.num_partitions = 512;
  k.tile_groups_per_partition = 1 << 20;
  k.max_blocks_per_seq = INT32_MAX / 256;
  k.kv_block_size = 256;
  k.scale_e8 = 1;
  k.padded_slot = 36;
  round_trip(&k);
  k.kv_block_size = 16;
  k.max_blocks_per_seq = INT32_MAX / 16;
  k.scale_e8 = UQ__KEY_SCALE_E8_MAX;
  round_trip(&k);
  k = example_prologue();
  k.head_dim = 512;
  k.num_kv_heads = 1000;
  k.query_group_size = 3;
  k.variant = UQ_VARIANT_MATRIX;
  round_trip(&k);
  k.variant = UQ_VARIANT_WARPGROUP;
  round_trip(&k);
  k.variant = UQ_VARIANT_GFX950_EMU;
  round_trip(&k);
  k = example_reduce();
  k.variant = UQ_VARIANT_WARPGROUP;
  round_trip(&k);
  assert_true(keys > 1000);
}

/* A name parses to the variant its v field spells, 3 and 4 (the gfx950
 * and gfx942 emulations) included, and a variant past the last layer is
 * refused. */
static void key_parse_reads_every_variant(void **state) {
  (void)state;
  static const char *const names[] = {
      "uq_reduce_sm_90a_bf16_v0_d256_hk1_p16_qg8",
      "uq_reduce_sm_90a_bf16_v1_d256_hk1_p16_qg8",
      "uq_reduce_sm_90a_bf16_v2_d256_hk1_p16_qg8",
      "uq_reduce_sm_90a_bf16_v3_d256_hk1_p16_qg8",
      "uq_reduce_sm_90a_bf16_v4_d256_hk1_p16_qg8",
  };
  for (int v = 0; v < 5; v++) {
    uq_key k;
    if (uq_key_parse(names[v], &k) != 0)
      fail_msg("'%s' does not parse: %s", names[v], uq_last_error());
    assert_int_equal(k.variant, v);
    assert_int_equal(k.kind, UQ_KERNEL_REDUCE);
    assert_string_equal(k.target, "sm_90a");
  }
  uq_key k;
  assert_int_equal(uq_key_parse("uq_reduce_sm_90a_bf16_v5_d256_hk1_p16_qg8", &k),
                   UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "variant 5"));
  assert_non_null(strstr(uq_last_error(), "4 gfx942-emu"));
}

static void key_parse_refuses_malformed_names(void **state) {
  (void)state;
  /* Every proper prefix of a valid name is refused (truncation). */
  const char *valid[] = {decode_name, reduce_name, prologue_name, store_name};
  for (size_t v = 0; v < 4; v++) {
    char buf[256];
    size_t len = strlen(valid[v]);
    for (size_t cut = 0; cut < len; cut++) {
      memcpy(buf, valid[v], cut);
      buf[cut] = '\0';
      expect_parse_refused(buf);
    }
    uq_key k;
    assert_int_equal(uq_key_parse(valid[v], &k), 0);
  }
  static const char *bad[] = {
      /* unknown kind, missing or wrong prefix */
      "uq_encode_gfx950_bf16_d256_hk1_ps272",
      "xq_store_gfx950_bf16_d256_hk1_ps272",
      "store_gfx950_bf16_d256_hk1_ps272",
      "UQ_store_gfx950_bf16_d256_hk1_ps272",
      /* trailing garbage */
      "uq_store_gfx950_bf16_d256_hk1_ps272_",
      "uq_store_gfx950_bf16_d256_hk1_ps272x",
      "uq_store_gfx950_bf16_d256_hk1_ps272_v0",
      "uq_reduce_gfx950_bf16_v0_d256_hk1_p16_qg8 ",
      /* bad numbers: leading zeros, signs, letters, overflow, empty */
      "uq_store_gfx950_bf16_d0256_hk1_ps272",
      "uq_store_gfx950_bf16_d+256_hk1_ps272",
      "uq_store_gfx950_bf16_d-256_hk1_ps272",
      "uq_store_gfx950_bf16_d256_hk01_ps272",
      "uq_store_gfx950_bf16_d256_hk_ps272",
      "uq_store_gfx950_bf16_d256_hk1x_ps272",
      "uq_store_gfx950_bf16_d256_hk99999999999_ps272",
      "uq_store_gfx950_bf16_d256_hk99999999999999999999999_ps272",
      "uq_store_gfx950_bf16_d2.56_hk1_ps272",
      /* scales: exactly eight decimals */
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.0625_qg8_bs32_ps272_fq1_"
      "t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.062500000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s.06250000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s00.06250000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s-0.06250000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh256",
      /* fields out of order or missing */
      "uq_decode_gfx950_bf16_v0_d256_hk1_mb64_p16_s0.06250000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh256",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.06250000_qg8_bs32_ps272_"
      "fq1_sq2048_sh256",
      "uq_store_gfx950_bf16_v0_d256_hk1_ps272",
      /* dtypes */
      "uq_store_gfx950_bf32_d256_hk1_ps272",
      "uq_store_gfx950_BF16_d256_hk1_ps272",
      "uq_reduce_gfx950_fp32_v0_d256_hk1_p16_qg8",
      /* targets: only canonical spellings, features joined by '.' */
      "uq_store_GFX950_bf16_d256_hk1_ps272",
      "uq_store_sm90_bf16_d256_hk1_ps272",
      "uq_store_gfx942:sramecc+_bf16_d256_hk1_ps272",
      "uq_store_gfx942.xnack-.sramecc+_bf16_d256_hk1_ps272",
      "uq_store_gfx942.xnack-.xnack-_bf16_d256_hk1_ps272",
      "uq_store_gfx9_bf16_d256_hk1_ps272",
      "uq_store__bf16_d256_hk1_ps272",
      "uq_store_sm__bf16_d256_hk1_ps272",
      /* syntactically fine, but not a valid key */
      "uq_reduce_gfx950_bf16_v5_d256_hk1_p16_qg8",
      "uq_reduce_gfx950_bf16_v0_d256_hk1_p12_qg8",
      "uq_reduce_gfx950_bf16_v0_d256_hk0_p16_qg8",
      "uq_store_gfx950_bf16_d256_hk1_ps270",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.06250000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh512",
      "uq_decode_gfx950_bf16_v0_d256_hk1_p2_mb64_s0.06250000_qg8_bs32_ps272_"
      "fq1_t1_sq2048_sh256",
      "",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    expect_parse_refused(bad[i]);
  uq_key k;
  assert_int_equal(uq_key_parse(NULL, &k), UQ_EINVAL);
  assert_int_equal(uq_key_parse(store_name, NULL), UQ_EINVAL);
}

/* The prologue's element stride: spelled "_se<n>" only when not 1 (a
 * unit-stride prologue keeps its name), read back exactly; 1, negative
 * values and the field on other kinds are refused. */
static void prologue_element_stride_round_trips(void **state) {
  (void)state;
  uq_key k, back;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_PROLOGUE;
  k.dtype = UQ_DTYPE_FP16;
  k.head_dim = 256;
  k.num_kv_heads = 4;
  k.query_group_size = 6;
  k.variant = UQ_VARIANT_PORTABLE;
  strcpy(k.target, "gfx942");
  expect_name(&k, "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6");
  k.stride_q_dim = 3;
  expect_name(&k, "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se3");
  assert_int_equal(uq_key_parse("uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se3",
                                &back), 0);
  assert_memory_equal(&k, &back, sizeof k);
  static const char *const bad[] = {
      "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se1",
      "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se0",
      "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se",
      "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se03",
      "uq_prologue_gfx942_fp16_v0_d256_hk4_qg6_se2_se2",
      "uq_reduce_gfx942_fp16_v0_d256_hk4_p16_qg6_se2",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (uq_key_parse(bad[i], &back) != UQ_EINVAL)
      fail_msg("accepted %s", bad[i]);
  k.stride_q_dim = 1;
  assert_int_equal(uq_key_validate(&k), UQ_EINVAL);
  k.stride_q_dim = -2;
  assert_int_equal(uq_key_validate(&k), UQ_EINVAL);
  k.stride_q_dim = 2;
  k.kind = UQ_KERNEL_REDUCE;
  k.num_partitions = 16;
  assert_int_equal(uq_key_validate(&k), UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(key_names_spell_every_field),
      cmocka_unit_test(key_name_reports_needed_length),
      cmocka_unit_test(key_round_trips_for_every_kind),
      cmocka_unit_test(key_parse_refuses_malformed_names),
      cmocka_unit_test(key_parse_reads_every_variant),
      cmocka_unit_test(prologue_element_stride_round_trips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
