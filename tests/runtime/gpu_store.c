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

#include "tests/runtime/gpu_common.h"
#include "tests/runtime/store_cases.h"

static uq_context *ctx;

/* The store cases on the device: the rows and the slot map uploaded, the
 * cache filled with the same 0xA5 bytes, the result copied back. */
static int gpu_run_store(const store_job *job, uint8_t *got) {
  const uq_store_args *a = job->args;
  const size_t map_bytes = (size_t)a->num_tokens * sizeof(int64_t);
  void *d_kv = NULL, *d_map = NULL, *d_cache = NULL;
  int rc = uq_device_alloc(ctx, job->kv_bytes, &d_kv);
  if (rc == 0)
    rc = uq_device_alloc(ctx, map_bytes, &d_map);
  if (rc == 0)
    rc = uq_device_alloc(ctx, job->cache_bytes, &d_cache);
  if (rc == 0)
    rc = uq_memcpy_h2d(ctx, d_kv, job->kv, job->kv_bytes);
  if (rc == 0)
    rc = uq_memcpy_h2d(ctx, d_map, a->slot_mapping, map_bytes);
  if (rc == 0)
    rc = uq_memcpy_h2d(ctx, d_cache, got, job->cache_bytes);
  if (rc == 0) {
    uq_store_args d = *a;
    d.k = (const unsigned char *)d_kv +
          ((const unsigned char *)a->k - (const unsigned char *)job->kv);
    d.v = (const unsigned char *)d_kv +
          ((const unsigned char *)a->v - (const unsigned char *)job->kv);
    d.slot_mapping = d_map;
    d.kv_cache = d_cache;
    rc = uq_store(ctx, &d, NULL);
  }
  if (rc == 0)
    rc = uq_synchronize(ctx);
  if (rc == 0)
    rc = uq_memcpy_d2h(ctx, got, d_cache, job->cache_bytes);
  void *bufs[] = {d_kv, d_map, d_cache};
  for (int i = 0; i < 3; i++)
    if (bufs[i] != NULL)
      uq_device_free(ctx, bufs[i]);
  return rc;
}

static void store_writes_the_cpu_encoders_bytes(void **st) {
  (void)st;
  store_cases_all(gpu_run_store);
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
  s.num_q_heads = 17; /* QG 17: no layer serves it */
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
