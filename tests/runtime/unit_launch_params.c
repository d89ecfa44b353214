/* The decode kernel's parameter block (lib/runtime/launch.c,
 * uq__decode_kernel_params) on a platform stand-in: which kernels get the
 * cache's tensor map, how the cache is described to the Tensor Memory
 * Accelerator, and the errors when it cannot be. The block's layout is
 * the contract with the kernels (templates/common/uq_abi.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lib/codegen/layers.h"
#include "lib/gpu/platform.h"
#include "lib/runtime/launch.h"
#include "uqjit.h"

/* What the stand-in's tensor_map_slots was asked for. */
static struct {
  int calls;
  const void *cache;
  int64_t rows;
  int32_t kv_heads, padded_slot, box_words, box_rows;
  int fail;
} seen;

static int fake_tensor_map(void *map, const void *cache, int64_t rows,
                           int32_t kv_heads, int32_t padded_slot,
                           int32_t box_words, int32_t box_rows) {
  seen.calls++;
  seen.cache = cache;
  seen.rows = rows;
  seen.kv_heads = kv_heads;
  seen.padded_slot = padded_slot;
  seen.box_words = box_words;
  seen.box_rows = box_rows;
  assert_int_equal((uintptr_t)map % 64, 0);
  memset(map, 0xA5, 128);
  return seen.fail ? UQ_EDEVICE : 0;
}

/* The decode key the warpgroup layer's plan names for B 4, query groups
 * of 8, head_dim 256 and 4096-token windows. */
static uq_key warpgroup_key(int hk, int block_size, int padded_slot) {
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 8 * hk;
  s.num_kv_heads = hk;
  s.head_dim = 256;
  s.block_size = block_size;
  s.max_blocks_per_seq = 4096 / block_size;
  s.padded_slot = padded_slot;
  uq_plan p;
  assert_int_equal(uq_plan_make_variant(&s, "sm_90a", "warpgroup", &p), 0);
  assert_true(p.eligible);
  assert_int_equal(p.kernels[0].kind, UQ_KERNEL_DECODE);
  assert_int_equal(p.kernels[0].variant, UQ_VARIANT_WARPGROUP);
  return p.kernels[0];
}

static void block_layout_is_the_kernels(void **state) {
  (void)state;
  assert_int_equal(sizeof(uq_decode_params), 64);
  assert_int_equal(offsetof(uq_decode_wg_params, d), 0);
  assert_int_equal(offsetof(uq_decode_wg_params, tensor_map), 64);
  assert_int_equal(sizeof(uq_decode_wg_params), 192);
  assert_int_equal(_Alignof(uq_decode_wg_params), 64);
}

static void tensor_copies_follow_the_slots(void **state) {
  (void)state;
  /* One kv head of 272-byte slots is one range per run (bulk copies). */
  uq_key k = warpgroup_key(1, 64, 272);
  assert_false(uq__warpgroup_tensor_copy(&k));
  /* Several kv heads, or padding, need tensor copies when 16-byte
   * aligned, else the piecewise copy. */
  k = warpgroup_key(2, 64, 272);
  assert_true(uq__warpgroup_tensor_copy(&k));
  k = warpgroup_key(1, 16, 288);
  assert_true(uq__warpgroup_tensor_copy(&k));
  k = warpgroup_key(4, 32, 276);
  assert_false(uq__warpgroup_tensor_copy(&k));
  /* Only the warpgroup layer's decode kernel. */
  k = warpgroup_key(4, 64, 272);
  k.variant = UQ_VARIANT_MATRIX;
  assert_false(uq__warpgroup_tensor_copy(&k));
  k = warpgroup_key(4, 64, 272);
  k.kind = UQ_KERNEL_REDUCE;
  assert_false(uq__warpgroup_tensor_copy(&k));
}

static void tensor_map_describes_the_cache(void **state) {
  (void)state;
  uq__platform pf;
  memset(&pf, 0, sizeof pf);
  pf.name = "stand-in";
  pf.tensor_map_slots = fake_tensor_map;
  uq_decode_params common;
  memset(&common, 0x11, sizeof common);
  common.batch = 5;
  static unsigned char cache[64] __attribute__((aligned(16)));
  uq_decode_args args;
  memset(&args, 0, sizeof args);
  args.kv_cache = cache;
  args.num_blocks = 1000;
  static const struct {
    int hk, bs, padded, calls, box_rows;
  } cases[] = {
      {4, 16, 272, 1, 16}, {2, 32, 288, 1, 32}, {4, 64, 272, 1, 64},
      {2, 256, 272, 1, 64}, {1, 64, 272, 0, 0}, {4, 128, 276, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(&seen, 0, sizeof seen);
    uq_key k = warpgroup_key(cases[i].hk, cases[i].bs, cases[i].padded);
    uq_decode_wg_params out;
    memset(&out, 0x5A, sizeof out);
    assert_int_equal(uq__decode_kernel_params(&pf, &k, &args, &common, &out), 0);
    assert_memory_equal(&out.d, &common, sizeof common);
    assert_int_equal(seen.calls, cases[i].calls);
    unsigned char expect_map[128];
    memset(expect_map, cases[i].calls ? 0xA5 : 0, sizeof expect_map);
    assert_memory_equal(out.tensor_map, expect_map, sizeof expect_map);
    if (cases[i].calls == 0)
      continue;
    assert_ptr_equal(seen.cache, cache);
    assert_int_equal(seen.rows, 1000LL * cases[i].bs);
    assert_int_equal(seen.kv_heads, cases[i].hk);
    assert_int_equal(seen.padded_slot, cases[i].padded);
    assert_int_equal(seen.box_words, 272 / 4);
    assert_int_equal(seen.box_rows, cases[i].box_rows);
  }
}

static void tensor_map_failures_are_reported(void **state) {
  (void)state;
  uq__platform pf;
  memset(&pf, 0, sizeof pf);
  pf.name = "stand-in";
  uq_decode_params common;
  memset(&common, 0, sizeof common);
  static unsigned char cache[64] __attribute__((aligned(16)));
  uq_decode_args args;
  memset(&args, 0, sizeof args);
  args.kv_cache = cache;
  args.num_blocks = 8;
  uq_key k = warpgroup_key(2, 64, 272);
  uq_decode_wg_params out;
  /* A platform without tensor maps cannot run this kernel... */
  assert_int_equal(uq__decode_kernel_params(&pf, &k, &args, &common, &out),
                   UQ_EUNSUPPORTED);
  assert_non_null(strstr(uq_last_error(), "tensor copies"));
  /* ...but runs the others. */
  uq_key bulk = warpgroup_key(1, 64, 272);
  assert_int_equal(uq__decode_kernel_params(&pf, &bulk, &args, &common, &out),
                   0);
  /* The encoder's failure comes back as is. */
  pf.tensor_map_slots = fake_tensor_map;
  memset(&seen, 0, sizeof seen);
  seen.fail = 1;
  assert_int_equal(uq__decode_kernel_params(&pf, &k, &args, &common, &out),
                   UQ_EDEVICE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(block_layout_is_the_kernels),
      cmocka_unit_test(tensor_copies_follow_the_slots),
      cmocka_unit_test(tensor_map_describes_the_cache),
      cmocka_unit_test(tensor_map_failures_are_reported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
