/* API misuse: a table of calls with NULL pointers, bad sizes, keys and
 * targets, negative or overflowing values, wrong dtypes, a zero batch,
 * misaligned pointers and compile-only or NULL contexts. Each must return
 * the status include/uqjit.h documents for it and write nothing: every
 * output points into one poisoned region that must be unchanged after
 * the call (except outputs the header says are cleared on failure), and
 * the cache directory the contexts name must never be created. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/internal/cache_util.h"
#include "tests/support/testkit.h"
#include "uqjit_tools.h"

#define POISON 0xA5
#define REGION (4u << 20)
#define STORE_KEY "uq_store_gfx950_bf16_d256_hk1_ps272"

static _Alignas(256) uint8_t region[REGION];
static char root[PATH_MAX], nodir[PATH_MAX], cdir[PATH_MAX];
static synth_problem prob; /* an eligible gfx942 / sm_90a decode problem */
static uq_context *cctx; /* compile-only (device -1), cache dir `cdir` */
static uq_key good_key;

/* ---- the calls ---------------------------------------------------------- */

static uq_shape shape(void) { return prob.shape; }

static int slot_layout_bad_head_dim(void) {
  return uq_slot_layout_get(48, (uq_slot_layout *)region);
}
static int slot_layout_zero_head_dim(void) {
  return uq_slot_layout_get(0, (uq_slot_layout *)region);
}
static int slot_layout_null_out(void) { return uq_slot_layout_get(64, NULL); }
static int fwht_not_power_of_two(void) {
  return uq_fwht((float *)region, 48);
}
static int encode_slot_head_dim_not_pow2(void) {
  static const uint16_t kv[96];
  return uq_encode_slot(96, UQ_DTYPE_BF16, kv, kv, region);
}
static int encode_slot_wrong_dtype(void) {
  static const uint16_t kv[64];
  return uq_encode_slot(64, (uq_dtype)77, kv, kv, region);
}
static int key_parse_null_name(void) {
  return uq_key_parse(NULL, (uq_key *)region);
}
static int key_parse_malformed(void) {
  return uq_key_parse("uq_store_gfx950_bf16_d256_hk1", (uq_key *)region);
}
static int key_parse_unknown_target(void) {
  return uq_key_parse("uq_store_gfx9999_bf16_d256_hk1_ps272",
                      (uq_key *)region);
}
static int key_parse_null_key(void) { return uq_key_parse(STORE_KEY, NULL); }
static int key_validate_null(void) { return uq_key_validate(NULL); }
static int key_validate_bad_head_dim(void) {
  uq_key k = good_key;
  k.head_dim = 33;
  return uq_key_validate(&k);
}
static int key_validate_bad_target(void) {
  uq_key k = good_key;
  memcpy(k.target, "../../etc", 10);
  return uq_key_validate(&k);
}
static int plan_null_shape(void) {
  return uq_plan_make(NULL, "sm_90a", (uq_plan *)region);
}
static int plan_null_plan(void) {
  uq_shape s = shape();
  return uq_plan_make(&s, "sm_90a", NULL);
}
static int plan_with(uq_shape s, const char *target) {
  return uq_plan_make(&s, target, (uq_plan *)region);
}
static int plan_unknown_target(void) { return plan_with(shape(), "gfx9999"); }
static int plan_zero_batch(void) {
  uq_shape s = shape();
  s.batch = 0;
  return plan_with(s, "sm_90a");
}
static int plan_negative_heads(void) {
  uq_shape s = shape();
  s.num_q_heads = -8;
  return plan_with(s, "sm_90a");
}
static int plan_heads_not_divisible(void) {
  uq_shape s = shape();
  s.num_kv_heads = 3;
  return plan_with(s, "sm_90a");
}
static int plan_wrong_dtype(void) {
  uq_shape s = shape();
  s.q_dtype = (uq_dtype)77;
  return plan_with(s, "sm_90a");
}
static int plan_negative_scale(void) {
  uq_shape s = shape();
  s.scale = -0.5f;
  return plan_with(s, "sm_90a");
}
static int plan_padded_slot_too_small(void) {
  uq_shape s = shape();
  s.padded_slot = 16;
  return plan_with(s, "sm_90a");
}
static int plan_overflowing_stride(void) {
  uq_shape s = shape();
  s.q_stride_seq = INT64_MAX;
  return plan_with(s, "sm_90a");
}
static int store_key_bad_head_dim(void) {
  return uq_store_key(33, 1, 0, UQ_DTYPE_BF16, "gfx950", (uq_key *)region);
}
static int store_key_unknown_target(void) {
  return uq_store_key(256, 1, 0, UQ_DTYPE_BF16, "nope", (uq_key *)region);
}
static int ref_decode(uq_shape s, uq_decode_args a) {
  a.out = region;
  return uq_reference_decode(&s, &a);
}
static int ref_decode_null_shape(void) {
  uq_decode_args a = synth_problem_decode_args(&prob, region);
  return uq_reference_decode(NULL, &a);
}
static int ref_decode_null_query(void) {
  uq_decode_args a = synth_problem_decode_args(&prob, region);
  a.query = NULL;
  return ref_decode(shape(), a);
}
static int ref_decode_zero_seq_len(void) {
  static int32_t lens[4];
  uq_decode_args a = synth_problem_decode_args(&prob, region);
  memcpy(lens, prob.seq_lens, sizeof lens);
  lens[1] = 0;
  a.seq_lens = lens;
  return ref_decode(shape(), a);
}
static int ref_decode_block_out_of_range(void) {
  static int32_t table[4 * 64];
  uq_decode_args a = synth_problem_decode_args(&prob, region);
  memcpy(table, prob.block_table, sizeof table);
  table[0] = (int32_t)prob.num_blocks;
  a.block_table = table;
  return ref_decode(shape(), a);
}
static int ref_decode_negative_scale(void) {
  uq_shape s = shape();
  s.scale = -1.0f;
  return ref_decode(s, synth_problem_decode_args(&prob, region));
}
static int ref_decode_zero_batch(void) {
  uq_shape s = shape();
  s.batch = 0;
  return ref_decode(s, synth_problem_decode_args(&prob, region));
}
static int ref_store(uq_store_args a) { return uq_reference_store(&a); }
static uq_store_args store_args(void) {
  return synth_problem_store_args(&prob, NULL, NULL, NULL, region);
}
static int ref_store_null(void) { return uq_reference_store(NULL); }
static int ref_store_negative_tokens(void) {
  uq_store_args a = store_args();
  a.num_tokens = -1;
  return ref_store(a);
}
static int ref_store_slot_past_the_cache(void) {
  static int64_t map[1];
  uq_store_args a = store_args();
  map[0] = a.num_blocks * a.block_size;
  a.slot_mapping = map;
  a.num_tokens = 1;
  return ref_store(a);
}
static int ref_store_wrong_dtype(void) {
  uq_store_args a = store_args();
  a.dtype = (uq_dtype)77;
  return ref_store(a);
}
static int ref_store_padded_slot_too_small(void) {
  uq_store_args a = store_args();
  a.padded_slot = 8;
  return ref_store(a);
}
static int context_create_null_out(void) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "gfx950";
  o.cache_dir = nodir;
  return uq_context_create(&o, NULL);
}
static int context_create_with(int device, const char *target) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = device;
  o.target = target;
  o.cache_dir = nodir;
  return uq_context_create(&o, (uq_context **)region);
}
static int context_device_below_minus_one(void) {
  return context_create_with(-2, "gfx950");
}
static int context_no_device_no_target(void) {
  return context_create_with(-1, NULL);
}
static int context_unknown_target(void) {
  return context_create_with(-1, "gfx9999");
}
static int context_destroy_null(void) {
  uq_context_destroy(NULL);
  return 0;
}
static int kernel_source_null_key(void) {
  return uq_kernel_source(NULL, (char **)region, NULL);
}
static int kernel_source_invalid_key(void) {
  uq_key k = good_key;
  k.kind = 99;
  return uq_kernel_source(&k, (char **)region, NULL);
}
static int decode_compile_only(void) {
  uq_shape s = shape();
  uq_decode_args a = synth_problem_decode_args(&prob, region);
  return uq_decode(cctx, &s, &a, region + 4096, REGION - 4096, NULL);
}
static int decode_misaligned_out_compile_only(void) {
  uq_shape s = shape();
  uq_decode_args a = synth_problem_decode_args(&prob, region + 1);
  return uq_decode(cctx, &s, &a, region + 4096, REGION - 4096, NULL);
}
static int decode_null_context(void) {
  uq_shape s = shape();
  uq_decode_args a = synth_problem_decode_args(&prob, region);
  return uq_decode(NULL, &s, &a, region + 4096, REGION - 4096, NULL);
}
static int store_compile_only(void) {
  uq_store_args a = store_args();
  return uq_store(cctx, &a, NULL);
}
static int device_alloc_compile_only(void) {
  return uq_device_alloc(cctx, 256, (void **)region);
}
static int memcpy_d2h_compile_only(void) {
  static const uint8_t src[16];
  return uq_memcpy_d2h(cctx, region, src, sizeof src);
}
static int device_free_null_pointer(void) {
  return uq_device_free(cctx, NULL);
}
static int isa_mix_null_text(void) {
  return uq_code_isa_mix(NULL, (uq_isa_mix *)region);
}
static int isa_mix_no_instruction(void) {
  return uq_code_isa_mix("nothing here\n", (uq_isa_mix *)region);
}
static int isa_class_name_out_of_range(void) {
  return uq_isa_class_name(-1) == NULL && uq_isa_class_name(UQ_ISA_CLASSES) ==
                                              NULL
             ? 0
             : UQ_EIO;
}
static int info_libraries_null(void) { return uq_info_libraries(NULL); }
static int cache_find_null_key(void) {
  return uq_cache_find(nodir, NULL, NULL, NULL);
}
static int cache_find_invalid_key(void) {
  uq_key k = good_key;
  k.head_dim = 31;
  return uq_cache_find(nodir, &k, NULL, NULL);
}
static int cache_find_missing_dir(void) {
  return uq_cache_find(nodir, &good_key, NULL, NULL);
}
static int destroy_nulls(void) {
  uq_event_destroy(NULL);
  uq_graph_destroy(NULL);
  uq_free(NULL);
  uq_shape_init(NULL);
  uq_context_options_init(NULL);
  return 0;
}

/* ---- the table ---------------------------------------------------------- */

#define C(fn, status, cleared) {#fn, fn, status, cleared}
static const struct {
  const char *name;
  int (*fn)(void);
  int status;     /* documented in uqjit.h */
  size_t cleared; /* leading bytes of the region the header says are
                   * cleared on failure (a plan, a context pointer) */
} cases[] = {
    C(slot_layout_bad_head_dim, UQ_EINVAL, 0),
    C(slot_layout_zero_head_dim, UQ_EINVAL, 0),
    C(slot_layout_null_out, UQ_EINVAL, 0),
    C(fwht_not_power_of_two, UQ_EINVAL, 0),
    C(encode_slot_head_dim_not_pow2, UQ_EINVAL, 0),
    C(encode_slot_wrong_dtype, UQ_EINVAL, 0),
    C(key_parse_null_name, UQ_EINVAL, 0),
    C(key_parse_malformed, UQ_EINVAL, 0),
    C(key_parse_unknown_target, UQ_EINVAL, 0),
    C(key_parse_null_key, UQ_EINVAL, 0),
    C(key_validate_null, UQ_EINVAL, 0),
    C(key_validate_bad_head_dim, UQ_EINVAL, 0),
    C(key_validate_bad_target, UQ_EINVAL, 0),
    C(plan_null_shape, UQ_EINVAL, 0),
    C(plan_null_plan, UQ_EINVAL, 0),
    C(plan_unknown_target, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_zero_batch, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_negative_heads, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_heads_not_divisible, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_wrong_dtype, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_negative_scale, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_padded_slot_too_small, UQ_EINVAL, sizeof(uq_plan)),
    C(plan_overflowing_stride, UQ_EOVERFLOW, sizeof(uq_plan)),
    C(store_key_bad_head_dim, UQ_EINVAL, 0),
    C(store_key_unknown_target, UQ_EINVAL, 0),
    C(ref_decode_null_shape, UQ_EINVAL, 0),
    C(ref_decode_null_query, UQ_EINVAL, 0),
    C(ref_decode_zero_seq_len, UQ_EINVAL, 0),
    C(ref_decode_block_out_of_range, UQ_EINVAL, 0),
    C(ref_decode_negative_scale, UQ_EINVAL, 0),
    C(ref_decode_zero_batch, UQ_EINVAL, 0),
    C(ref_store_null, UQ_EINVAL, 0),
    C(ref_store_negative_tokens, UQ_EINVAL, 0),
    C(ref_store_slot_past_the_cache, UQ_EINVAL, 0),
    C(ref_store_wrong_dtype, UQ_EINVAL, 0),
    C(ref_store_padded_slot_too_small, UQ_EINVAL, 0),
    C(context_create_null_out, UQ_EINVAL, 0),
    C(context_device_below_minus_one, UQ_EINVAL, sizeof(void *)),
    C(context_no_device_no_target, UQ_EINVAL, sizeof(void *)),
    C(context_unknown_target, UQ_EINVAL, sizeof(void *)),
    C(context_destroy_null, 0, 0),
    C(kernel_source_null_key, UQ_EINVAL, 0),
    C(kernel_source_invalid_key, UQ_EINVAL, sizeof(char *)),
    C(decode_compile_only, UQ_ENODEV, 0),
    C(decode_misaligned_out_compile_only, UQ_ENODEV, 0),
    C(decode_null_context, UQ_EINVAL, 0),
    C(store_compile_only, UQ_ENODEV, 0),
    C(device_alloc_compile_only, UQ_ENODEV, sizeof(void *)),
    C(memcpy_d2h_compile_only, UQ_ENODEV, 0),
    C(device_free_null_pointer, 0, 0),
    C(isa_mix_null_text, UQ_EINVAL, 0),
    C(isa_mix_no_instruction, UQ_EINVAL, sizeof(uq_isa_mix)),
    C(isa_class_name_out_of_range, 0, 0),
    C(info_libraries_null, UQ_EINVAL, 0),
    C(cache_find_null_key, UQ_EINVAL, 0),
    C(cache_find_invalid_key, UQ_EINVAL, 0),
    C(cache_find_missing_dir, UQ_ENOENT, 0),
    C(destroy_nulls, 0, 0),
};

static int setup(void **state) {
  (void)state;
  cu_mkdtemp(root);
  cu_fmt(nodir, "%s/never-created", root);
  cu_fmt(cdir, "%s/compile-only", root);
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 8;
  s.num_kv_heads = 1;
  s.head_dim = 256;
  s.block_size = 16;
  s.max_blocks_per_seq = 64;
  const int32_t lens[4] = {100, 1, 1024, 17};
  assert_int_equal(synth_problem_make(&prob, &s, lens, NULL), 0);
  assert_int_equal(synth_problem_store(&prob), 0);
  assert_int_equal(uq_key_parse(STORE_KEY, &good_key), 0);
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "sm_90a";
  o.cache_dir = cdir;
  assert_int_equal(uq_context_create(&o, &cctx), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  uq_context_destroy(cctx);
  synth_problem_free(&prob);
  cu_rm_rf(root);
  return 0;
}

static int region_intact(size_t cleared) {
  for (size_t i = 0; i < REGION; i++)
    if (region[i] != (i < cleared ? 0 : POISON))
      return 0;
  return 1;
}

static void misuse_calls_return_their_documented_status_and_write_nothing(
    void **state) {
  (void)state;
  size_t n = sizeof cases / sizeof cases[0];
  int failures = 0;
  for (size_t i = 0; i < n; i++) {
    memset(region, POISON, REGION);
    int rc = cases[i].fn();
    if (rc != cases[i].status) {
      print_message("%s: status %d (%s), documented %d\n", cases[i].name, rc,
                    uq_last_error(), cases[i].status);
      failures++;
    }
    if (!region_intact(cases[i].cleared)) {
      print_message("%s: wrote to its output\n", cases[i].name);
      failures++;
    }
    if (rc != 0 && uq_last_error()[0] == '\0') {
      print_message("%s: failed without a message\n", cases[i].name);
      failures++;
    }
    if (cu_exists(nodir) || cu_count_entries(cdir) != 0) {
      print_message("%s: created the cache directory or an entry\n",
                  cases[i].name);
      failures++;
    }
  }
  print_message("%zu misuse calls, %d failures\n", n, failures);
  assert_true(n >= 30);
  assert_int_equal(failures, 0);
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 0);
  unsetenv("UQJIT_VARIANT");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          misuse_calls_return_their_documented_status_and_write_nothing, setup,
          teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
