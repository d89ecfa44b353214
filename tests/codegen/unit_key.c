/* Kernel keys and targets: names spelled as documented, exact name/key
 * round trips, refusals of malformed names and invalid keys, and the
 * canonical spelling of targets. */
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
#include "uqjit.h"

/* The decode key of FORMAT.md's example shape, built by hand. */
static uq_key example_decode(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_DECODE;
  k.dtype = UQ_DTYPE_BF16;
  k.variant = UQ_VARIANT_PORTABLE;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.num_partitions = 16;
  k.max_blocks_per_seq = 64;
  k.scale_e8 = 6250000;
  k.query_group_size = 8;
  k.kv_block_size = 32;
  k.padded_slot = 272;
  k.fuse_qrot = 1;
  k.tile_groups_per_partition = 1;
  k.stride_q_seq = 2048;
  k.stride_q_head = 256;
  strcpy(k.target, "gfx950");
  return k;
}

static uq_key example_reduce(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_REDUCE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.num_partitions = 16;
  k.query_group_size = 8;
  strcpy(k.target, "gfx950");
  return k;
}

static uq_key example_prologue(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_PROLOGUE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.query_group_size = 8;
  strcpy(k.target, "gfx950");
  return k;
}

static uq_key example_store(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_STORE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.padded_slot = 272;
  strcpy(k.target, "gfx950");
  return k;
}

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

static void expect_parse_refused(const char *name) {
  uq_key k;
  memset(&k, 0x33, sizeof k);
  uq_key before = k;
  int rc = uq_key_parse(name, &k);
  if (rc != UQ_EINVAL)
    fail_msg("'%s' parsed (status %d)", name, rc);
  assert_true(uq_last_error()[0] != '\0');
  /* A refused parse leaves the output alone. */
  assert_memory_equal(&k, &before, sizeof k);
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

typedef struct target_case {
  const char *in, *canon;
  int family, arch, wave, threads;
} target_case;

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

static void target_spellings_canonicalise(void **state) {
  (void)state;
  static const target_case cases[] = {
      {"gfx950", "gfx950", UQ__TARGET_AMD, 0x950, 64, 64},
      {"GFX950", "gfx950", UQ__TARGET_AMD, 0x950, 64, 64},
      {"gfx942", "gfx942", UQ__TARGET_AMD, 0x942, 64, 64},
      {"gfx90a", "gfx90a", UQ__TARGET_AMD, 0x90a, 64, 64},
      {"gfx90A", "gfx90a", UQ__TARGET_AMD, 0x90a, 64, 64},
      {"gfx908", "gfx908", UQ__TARGET_AMD, 0x908, 64, 64},
      {"gfx940", "gfx940", UQ__TARGET_AMD, 0x940, 64, 64},
      {"gfx941", "gfx941", UQ__TARGET_AMD, 0x941, 64, 64},
      {"gfx1100", "gfx1100", UQ__TARGET_AMD, 0x1100, 32, 64},
      {"gfx1030", "gfx1030", UQ__TARGET_AMD, 0x1030, 32, 64},
      {"gfx950:xnack-:sramecc+", "gfx950:sramecc+:xnack-", UQ__TARGET_AMD,
       0x950, 64, 64},
      {"gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-", UQ__TARGET_AMD,
       0x942, 64, 64},
      {"gfx942:XNACK+", "gfx942:xnack+", UQ__TARGET_AMD, 0x942, 64, 64},
      {"gfx90a:sramecc-", "gfx90a:sramecc-", UQ__TARGET_AMD, 0x90a, 64, 64},
      {"sm_90", "sm_90", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"sm90", "sm_90", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"SM_90", "sm_90", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"sm_90a", "sm_90a", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"SM90A", "sm_90a", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"sm_80", "sm_80", UQ__TARGET_NVIDIA, 80, 32, 128},
      {"sm_100a", "sm_100a", UQ__TARGET_NVIDIA, 100, 32, 128},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const target_case *c = &cases[i];
    char out[UQ_TARGET_MAX];
    uq__target_info info;
    memset(&info, 0x77, sizeof info);
    if (uq__target_parse(c->in, out, sizeof out, &info) != 0)
      fail_msg("'%s' refused: %s", c->in, uq_last_error());
    assert_string_equal(out, c->canon);
    assert_int_equal(info.family, c->family);
    assert_int_equal(info.arch, c->arch);
    assert_int_equal(info.wave_size, c->wave);
    assert_int_equal(uq__layer_block_threads(&info, UQ_VARIANT_PORTABLE),
                     c->threads);
    /* Canonical spellings are fixed points. */
    char again[UQ_TARGET_MAX];
    assert_int_equal(uq__target_parse(out, again, sizeof again, NULL), 0);
    assert_string_equal(again, out);
  }
  char out[UQ_TARGET_MAX];
  uq__target_info info;
  assert_int_equal(uq__target_parse("gfx942:sramecc+:xnack-", out, sizeof out,
                                    &info),
                   0);
  assert_string_equal(info.arch_name, "gfx942");
  assert_int_equal(uq__target_parse("sm90a", out, sizeof out, &info), 0);
  assert_string_equal(info.arch_name, "sm_90a");
}

/* wgmma exists only in the arch-specific sm_90a target: the warpgroup
 * layer is there and nowhere else; the matrix layer is on every NVIDIA
 * target from sm_90 on. Threads per block: 128 for either layer. */
static void target_layers_follow_the_architecture(void **state) {
  (void)state;
  static const struct {
    const char *target;
    int matrix, warpgroup;
  } cases[] = {
      {"sm_90a", 1, 1}, {"SM90A", 1, 1}, {"sm_90", 1, 0},
      {"sm_100a", 1, 0}, {"sm_100", 1, 0}, {"sm_120a", 1, 0},
      {"sm_89", 0, 0},  {"sm_80", 0, 0},  {"gfx950", 0, 0},
      {"gfx942", 0, 0}, {"gfx90a", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[UQ_TARGET_MAX];
    uq__target_info info;
    assert_int_equal(uq__target_parse(cases[i].target, out, sizeof out, &info),
                     0);
    if (uq__target_matrix_layer(&info) != cases[i].matrix ||
        uq__target_warpgroup_layer(&info) != cases[i].warpgroup)
      fail_msg("%s: matrix %d warpgroup %d, expected %d %d", cases[i].target,
               uq__target_matrix_layer(&info),
               uq__target_warpgroup_layer(&info), cases[i].matrix,
               cases[i].warpgroup);
    unsigned want = info.family == UQ__TARGET_NVIDIA ? 128u : 64u;
    for (int v = UQ_VARIANT_PORTABLE; v <= UQ_VARIANT_WARPGROUP; v++)
      assert_int_equal(uq__layer_block_threads(&info, v), want);
  }
  assert_int_equal(uq__target_warpgroup_layer(NULL), 0);
  assert_int_equal(uq__layer_block_threads(NULL, UQ_VARIANT_WARPGROUP), 0);
}

static void target_refuses_bad_spellings(void **state) {
  (void)state;
  static const char *bad[] = {
      "",         "gfx",          "gfx95",         "gfx95000",
      "gfx9g0",   "gfx_950",      "gfx950:",       "gfx950::xnack+",
      "gfx950:xnack", "gfx950:xnack+:xnack-", "gfx950:xnack+:xnack+",
      "gfx950:tgsplit+", "gfx950:sramecc*", " gfx950", "gfx950 ",
      "gfx2100",  "gfx500",       "sm",            "sm_",
      "sm_9",     "sm_090",       "sm_1000",       "sm_90b",
      "sm_90a:xnack+", "sm-90",   "compute_90",    "cuda",
      "nvidia",   "gfx950:sramecc+:xnack-:sramecc+",
      "gfx950xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char out[UQ_TARGET_MAX] = "untouched";
    int rc = uq__target_parse(bad[i], out, sizeof out, NULL);
    if (rc != UQ_EINVAL)
      fail_msg("'%s' accepted as '%s'", bad[i], out);
    assert_string_equal(out, "untouched");
    assert_true(uq_last_error()[0] != '\0');
  }
  char small[6];
  assert_int_equal(uq__target_parse("gfx950", small, sizeof small, NULL),
                   UQ_EINVAL);
  assert_int_equal(uq__target_parse(NULL, small, sizeof small, NULL),
                   UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(key_names_spell_every_field),
      cmocka_unit_test(key_name_reports_needed_length),
      cmocka_unit_test(key_round_trips_for_every_kind),
      cmocka_unit_test(key_parse_refuses_malformed_names),
      cmocka_unit_test(key_parse_reads_every_variant),
      cmocka_unit_test(key_rules_are_the_planners),
      cmocka_unit_test(key_validate_refuses_bad_keys),
      cmocka_unit_test(key_bytes_are_reproducible),
      cmocka_unit_test(prologue_element_stride_round_trips),
      cmocka_unit_test(target_spellings_canonicalise),
      cmocka_unit_test(target_layers_follow_the_architecture),
      cmocka_unit_test(target_refuses_bad_spellings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
