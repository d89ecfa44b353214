/* The store cases (store_cases.h). */
#include "tests/runtime/store_cases.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

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
static void fill_with_specials(synth_rng *rng, uq_dtype dt, void *base,
                               size_t n) {
  for (size_t i = 0; i < n; i++) {
    double x = synth_rng_normal(rng);
    uint32_t r = synth_rng_u32(rng) % 1000;
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
static void shuffled_map(synth_rng *rng, int64_t *map, int T, int64_t slots) {
  int32_t *perm = malloc((size_t)slots * sizeof(int32_t));
  assert_non_null(perm);
  for (int64_t i = 0; i < slots; i++)
    perm[i] = (int32_t)i;
  synth_rng_shuffle_i32(rng, perm, (size_t)slots);
  for (int t = 0; t < T; t++)
    map[t] = t % 5 == 3 ? -1 : perm[t];
  if (T > 7)
    map[7] = slots + 5; /* out of range: skipped by both */
  free(perm);
}

/* T tokens of Hk heads with K and V interleaved in one buffer
 * ([T, 2, Hk, D]: k_stride_token = 2*Hk*D), some groups holding NaN/Inf or
 * huge values, every fifth slot skipped (-1) and one slot out of range. */
void store_case(store_runner run, uq_dtype dt, int hd, int hk, int bs,
                int T, uint64_t seed) {
  synth_rng rng;
  synth_rng_seed(&rng, seed);
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

  const store_job job = {&a, kv, kv_bytes, cache_bytes};
  memset(got, 0xA5, cache_bytes);
  rc = run(&job, got);
  if (rc != 0)
    fprintf(stderr, "store: %s: %s\n", uq_err_name(rc), uq_last_error());
  assert_int_equal(rc, 0);
  size_t first = cache_bytes;
  for (size_t i = 0; i < cache_bytes && first == cache_bytes; i++)
    if (got[i] != want[i])
      first = i;
  if (first != cache_bytes)
    fprintf(stderr,
            "dtype %d D %d: first difference at byte %zu (slot %zu, byte "
            "%zu): store %02x cpu %02x\n",
            (int)dt, hd, first, first / padded, first % padded, got[first],
            want[first]);
  assert_int_equal(first, cache_bytes);
  printf("store dtype %d D %d Hk %d bs %d T %d: %zu bytes identical\n",
         (int)dt, hd, hk, bs, T, cache_bytes);

  free(kv);
  free(map);
  free(want);
  free(got);
}

void store_cases_all(store_runner run) {
  store_case(run, UQ_DTYPE_BF16, 256, 2, 16, 777, 1);
  store_case(run, UQ_DTYPE_FP16, 256, 1, 64, 300, 2);
  store_case(run, UQ_DTYPE_FP32, 256, 3, 32, 200, 3);
  store_case(run, UQ_DTYPE_BF16, 128, 4, 256, 513, 4);
  store_case(run, UQ_DTYPE_FP16, 64, 2, 32, 150, 5);
}
