/* uq_store on the GPU writes the same bytes as the CPU encoder
 * (uq_reference_store), and failures surface as status codes. Exits 77
 * without a device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "tests/gpu_common.h"

static uq_context *ctx;

static size_t esize_of(uq_dtype dt) { return dt == UQ_DTYPE_FP32 ? 4 : 2; }

static void fill_elem(uq_dtype dt, void *base, size_t i, float x) {
  if (dt == UQ_DTYPE_FP32)
    ((float *)base)[i] = x;
  else if (dt == UQ_DTYPE_FP16)
    ((uint16_t *)base)[i] = tk_f32_to_fp16(x);
  else
    ((uint16_t *)base)[i] = tk_f32_to_bf16(x);
}

/* n normal values of dt, about one in 30 NaN, Inf, huge or tiny. */
static void fill_with_specials(tk_rng *rng, uq_dtype dt, void *base,
                               size_t n) {
  for (size_t i = 0; i < n; i++) {
    double x = tk_rng_normal(rng);
    uint32_t r = tk_rng_u32(rng) % 1000;
    if (r == 0)
      x = NAN;
    else if (r == 1)
      x = INFINITY;
    else if (r == 2)
      x = -INFINITY;
    else if (r == 3)
      x *= 1e30; /* fp32 only; saturates to inf in 16-bit types */
    else if (r < 20)
      x *= 1e-3;
    fill_elem(dt, base, i, (float)x);
  }
}

/* Distinct slots in a shuffled order, every fifth skipped (-1), token 7's
 * beyond the cache. */
static void shuffled_map(tk_rng *rng, int64_t *map, int T, int64_t slots) {
  int32_t *perm = malloc((size_t)slots * sizeof(int32_t));
  assert_non_null(perm);
  for (int64_t i = 0; i < slots; i++)
    perm[i] = (int32_t)i;
  tk_rng_shuffle_i32(rng, perm, (size_t)slots);
  for (int t = 0; t < T; t++)
    map[t] = t % 5 == 3 ? -1 : perm[t];
  if (T > 7)
    map[7] = slots + 5; /* out of range: skipped by both */
  free(perm);
}

/* T tokens of Hk heads with K and V interleaved in one buffer
 * ([T, 2, Hk, D]: k_stride_token = 2*Hk*D), some groups holding NaN/Inf or
 * huge values, every fifth slot skipped (-1) and one slot out of range. */
static void store_case(uq_dtype dt, int hd, int hk, int bs, int T,
                       uint64_t seed) {
  tk_rng rng;
  tk_rng_seed(&rng, seed);
  const size_t es = esize_of(dt);
  const int64_t num_blocks = (T + bs - 1) / bs + 2;
  const size_t slot = uq_slot_size(hd);
  const size_t padded = (slot + 3) / 4 * 4 + 4; /* padding bytes too */
  const size_t cache_bytes = (size_t)num_blocks * bs * hk * padded;
  const size_t row_elems = (size_t)2 * hk * hd;
  const size_t kv_bytes = (size_t)T * row_elems * es;

  unsigned char *kv = malloc(kv_bytes);
  int64_t *map = malloc((size_t)T * sizeof(int64_t));
  uint8_t *want = malloc(cache_bytes);
  uint8_t *got = malloc(cache_bytes);
  assert_non_null(kv);
  assert_non_null(map);
  assert_non_null(want);
  assert_non_null(got);
  fill_with_specials(&rng, dt, kv, (size_t)T * row_elems);
  shuffled_map(&rng, map, T, num_blocks * bs);
  memset(want, 0xA5, cache_bytes);

  uq_store_args a;
  memset(&a, 0, sizeof a);
  a.k = kv;
  a.v = kv + (size_t)hk * hd * es;
  a.k_stride_token = a.v_stride_token = (int64_t)row_elems;
  a.slot_mapping = map;
  a.num_tokens = T;
  a.kv_cache = want;
  a.num_blocks = num_blocks;
  a.block_size = bs;
  a.num_kv_heads = hk;
  a.head_dim = hd;
  a.padded_slot = (int32_t)padded;
  a.dtype = dt;
  if (T > 7) {
    /* The CPU encoder refuses out-of-range slots; skip that token there. */
    map[7] = -1;
  }
  int rc = uq_reference_store(&a);
  if (rc != 0)
    fprintf(stderr, "uq_reference_store: %s\n", uq_last_error());
  assert_int_equal(rc, 0);
  if (T > 7)
    map[7] = num_blocks * bs + 5;

  void *d_kv, *d_map, *d_cache;
  assert_int_equal(uq_device_alloc(ctx, kv_bytes, &d_kv), 0);
  assert_int_equal(uq_device_alloc(ctx, (size_t)T * 8, &d_map), 0);
  assert_int_equal(uq_device_alloc(ctx, cache_bytes, &d_cache), 0);
  assert_int_equal(uq_memcpy_h2d(ctx, d_kv, kv, kv_bytes), 0);
  assert_int_equal(uq_memcpy_h2d(ctx, d_map, map, (size_t)T * 8), 0);
  assert_int_equal(uq_memset_d8(ctx, d_cache, 0xA5, cache_bytes), 0);
  uq_store_args d = a;
  d.k = d_kv;
  d.v = (unsigned char *)d_kv + (size_t)hk * hd * es;
  d.slot_mapping = d_map;
  d.kv_cache = d_cache;
  rc = uq_store(ctx, &d, NULL);
  if (rc != 0)
    fprintf(stderr, "uq_store: %s: %s\n", uq_err_name(rc), uq_last_error());
  assert_int_equal(rc, 0);
  assert_int_equal(uq_synchronize(ctx), 0);
  assert_int_equal(uq_memcpy_d2h(ctx, got, d_cache, cache_bytes), 0);
  size_t first = cache_bytes;
  for (size_t i = 0; i < cache_bytes && first == cache_bytes; i++)
    if (got[i] != want[i])
      first = i;
  if (first != cache_bytes)
    fprintf(stderr,
            "dtype %d D %d: first difference at byte %zu (slot %zu, byte "
            "%zu): gpu %02x cpu %02x\n",
            (int)dt, hd, first, first / padded, first % padded, got[first],
            want[first]);
  assert_int_equal(first, cache_bytes);
  printf("store dtype %d D %d Hk %d bs %d T %d: %zu bytes identical\n",
         (int)dt, hd, hk, bs, T, cache_bytes);

  uq_device_free(ctx, d_kv);
  uq_device_free(ctx, d_map);
  uq_device_free(ctx, d_cache);
  free(kv);
  free(map);
  free(want);
  free(got);
}

static void store_writes_the_cpu_encoders_bytes(void **st) {
  (void)st;
  store_case(UQ_DTYPE_BF16, 256, 2, 16, 777, 1);
  store_case(UQ_DTYPE_FP16, 256, 1, 64, 300, 2);
  store_case(UQ_DTYPE_FP32, 256, 3, 32, 200, 3);
  store_case(UQ_DTYPE_BF16, 128, 4, 256, 513, 4);
}

static void store_of_zero_tokens_is_a_no_op(void **st) {
  (void)st;
  uq_store_args a;
  memset(&a, 0, sizeof a);
  a.num_tokens = 0;
  a.num_blocks = 1;
  a.block_size = 16;
  a.num_kv_heads = 1;
  a.head_dim = 256;
  a.dtype = UQ_DTYPE_BF16;
  assert_int_equal(uq_store(ctx, &a, NULL), 0);
}

static void bad_arguments_are_refused_before_launching(void **st) {
  (void)st;
  /* A small valid problem whose output stays poisoned when refused. */
  static const int32_t lens[] = {100, 3};
  decode_case c;
  memset(&c, 0, sizeof c);
  c.qg = 8;
  c.hk = 1;
  c.block_size = 32;
  c.batch = 2;
  c.seq_lens = lens;
  c.dtype = UQ_DTYPE_BF16;
  c.seed = 5;
  decode_problem p;
  assert_int_equal(problem_make(ctx, &c, &p), 0);
  assert_int_equal(problem_poison(ctx, &p), 0);

  uq_decode_args a = p.d_args;
  a.query = NULL;
  assert_int_equal(uq_decode(ctx, &p.shape, &a, p.d_ws, p.ws_bytes, NULL),
                   UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "query"));
  a = p.d_args;
  a.out = (char *)p.d_out + 2;
  assert_int_equal(uq_decode(ctx, &p.shape, &a, p.d_ws, p.ws_bytes, NULL),
                   UQ_EALIGN);
  assert_int_equal(uq_decode(ctx, &p.shape, &p.d_args,
                             (char *)p.d_ws + 16, p.ws_bytes - 256, NULL),
                   UQ_EALIGN);
  assert_int_equal(uq_decode(ctx, &p.shape, &p.d_args, p.d_ws,
                             p.ws_bytes - 1, NULL),
                   UQ_EINVAL);
  a = p.d_args;
  a.num_blocks = 0;
  assert_int_equal(uq_decode(ctx, &p.shape, &a, p.d_ws, p.ws_bytes, NULL),
                   UQ_EINVAL);
  uq_shape s = p.shape;
  s.sliding_window = 128;
  assert_int_equal(uq_decode(ctx, &s, &p.d_args, p.d_ws, p.ws_bytes, NULL),
                   UQ_EUNSUPPORTED);
  assert_non_null(strstr(uq_last_error(), "sliding"));
  s = p.shape;
  s.num_q_heads = 12; /* QG 12 */
  assert_int_equal(uq_decode(ctx, &s, &p.d_args, p.d_ws, p.ws_bytes, NULL),
                   UQ_EUNSUPPORTED);
  s = p.shape;
  s.num_kv_heads = 3; /* 8 % 3 */
  assert_int_equal(uq_decode(ctx, &s, &p.d_args, p.d_ws, p.ws_bytes, NULL),
                   UQ_EINVAL);
  assert_int_equal(uq_decode(NULL, &p.shape, &p.d_args, p.d_ws, p.ws_bytes,
                             NULL),
                   UQ_EINVAL);

  /* Nothing was launched: the output is still all 0xFF bytes. */
  uint16_t *raw = malloc(p.out_elems * 2);
  assert_non_null(raw);
  assert_int_equal(uq_synchronize(ctx), 0);
  assert_int_equal(uq_memcpy_d2h(ctx, raw, p.d_out, p.out_elems * 2), 0);
  for (size_t i = 0; i < p.out_elems; i++)
    assert_int_equal(raw[i], 0xFFFF);
  free(raw);
  problem_free(ctx, &p);
}

static void failing_driver_call_is_edevice_with_the_drivers_message(
    void **st) {
  (void)st;
  char host[64] = {0};
  int rc = uq_memcpy_h2d(ctx, (void *)(uintptr_t)0x10, host, sizeof host);
  printf("uq_memcpy_h2d to 0x10: %s: %s\n", uq_err_name(rc), uq_last_error());
  assert_int_equal(rc, UQ_EDEVICE);
  /* The call and the driver's own error name are in the detail. */
  assert_non_null(strstr(uq_last_error(), "Memcpy"));
  assert_true(strstr(uq_last_error(), "CUDA_ERROR_") != NULL ||
              strstr(uq_last_error(), "hipError") != NULL);
  /* The context still works afterwards. */
  void *p = NULL;
  assert_int_equal(uq_device_alloc(ctx, 256, &p), 0);
  assert_int_equal(uq_memcpy_h2d(ctx, p, host, sizeof host), 0);
  assert_int_equal(uq_device_free(ctx, p), 0);
}

int main(void) {
  ctx = gpu_open_or_skip();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(store_writes_the_cpu_encoders_bytes),
      cmocka_unit_test(store_of_zero_tokens_is_a_no_op),
      cmocka_unit_test(bad_arguments_are_refused_before_launching),
      cmocka_unit_test(failing_driver_call_is_edevice_with_the_drivers_message),
  };
  gpu_test_filters();
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  uq_context_destroy(ctx);
  return failed;
}
