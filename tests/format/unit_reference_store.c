/* The CPU store (FORMAT.md section 5): uq_reference_store writes each
 * token's encoded slot where the slot mapping says and nothing else, refuses
 * bad input without writing, and feeds uq_reference_decode end to end. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/testkit.h"
#include "uqjit.h"

static void store_writes_encoded_slots_and_skips(void **state) {
  (void)state;
  synth_rng rng;
  synth_rng_seed(&rng, 21);
  const uq_dtype dtypes[3] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16, UQ_DTYPE_FP32};
  for (int t = 0; t < 3; t++) {
    const int T = 12, hk = 2, d = 64, bs = 16, nb = 3, padded = 80;
    const size_t esize = dtypes[t] == UQ_DTYPE_FP32 ? 4 : 2;
    const int64_t kst = hk * d + 16, ksh = d + 4; /* strided K */
    size_t kelems = (size_t)((T - 1) * kst + (hk - 1) * ksh + d);
    size_t velems = (size_t)T * hk * d;
    unsigned char *k = malloc(kelems * esize), *v = malloc(velems * esize);
    assert_non_null(k);
    assert_non_null(v);
    for (size_t i = 0; i < kelems; i++) {
      double x = synth_rng_normal(&rng);
      if (esize == 4) {
        float f = (float)x;
        memcpy(k + 4 * i, &f, 4);
      } else {
        uint16_t h = dtypes[t] == UQ_DTYPE_BF16 ? synth_f64_to_bf16(x)
                                                : synth_f64_to_fp16(x);
        memcpy(k + 2 * i, &h, 2);
      }
    }
    for (size_t i = 0; i < velems * esize; i++)
      v[i] = (unsigned char)(synth_rng_u32(&rng) & 0x3b); /* small finite */
    int32_t perm[48];
    for (int i = 0; i < 48; i++)
      perm[i] = i;
    synth_rng_shuffle_i32(&rng, perm, 48);
    int64_t mapping[12];
    for (int i = 0; i < T; i++)
      mapping[i] = i % 4 == 1 ? -1 : perm[i];
    size_t cache_bytes = (size_t)nb * bs * hk * padded;
    uint8_t *cache = malloc(cache_bytes);
    assert_non_null(cache);
    memset(cache, 0x5a, cache_bytes);
    uq_store_args a;
    memset(&a, 0, sizeof a);
    a.k = k;
    a.v = v;
    a.k_stride_token = kst;
    a.k_stride_head = ksh;
    a.slot_mapping = mapping;
    a.num_tokens = T;
    a.kv_cache = cache;
    a.num_blocks = nb;
    a.block_size = bs;
    a.num_kv_heads = hk;
    a.head_dim = d;
    a.padded_slot = padded;
    a.dtype = dtypes[t];
    int rc = uq_reference_store(&a);
    if (rc != 0)
      fail_msg("store: %s", uq_last_error());
    unsigned char written[48] = {0};
    for (int i = 0; i < T; i++) {
      if (mapping[i] < 0)
        continue;
      written[mapping[i]] = 1;
      for (int h = 0; h < hk; h++) {
        uint8_t want[68];
        assert_int_equal(uq_encode_slot(d, dtypes[t],
                                        k + (i * kst + h * ksh) * esize,
                                        v + ((size_t)i * hk + h) * d * esize,
                                        want),
                         0);
        const uint8_t *slot = cache + (mapping[i] * hk + h) * padded;
        assert_memory_equal(slot, want, 68);
        for (int j = 68; j < padded; j++)
          assert_int_equal(slot[j], 0x5a); /* padding untouched */
      }
    }
    for (int sidx = 0; sidx < 48; sidx++)
      if (!written[sidx])
        for (int j = 0; j < hk * padded; j++)
          assert_int_equal(cache[(size_t)sidx * hk * padded + j], 0x5a);
    free(k);
    free(v);
    free(cache);
  }
}

static void store_refuses_bad_input_and_writes_nothing(void **state) {
  (void)state;
  const int T = 4, hk = 2, d = 64, bs = 16, nb = 2;
  uint16_t k[4 * 2 * 64], v[4 * 2 * 64];
  memset(k, 0x3c, sizeof k);
  memset(v, 0x3c, sizeof v);
  int64_t mapping[4] = {0, 5, -1, 31};
  uint8_t cache[2 * 16 * 2 * 68];
  for (int which = 0; which < 16; which++) {
    uq_store_args a;
    memset(&a, 0, sizeof a);
    a.k = k;
    a.v = v;
    a.slot_mapping = mapping;
    a.num_tokens = T;
    a.kv_cache = cache;
    a.num_blocks = nb;
    a.block_size = bs;
    a.num_kv_heads = hk;
    a.head_dim = d;
    a.dtype = UQ_DTYPE_BF16;
    int64_t bad_mapping[4] = {0, 5, -1, 32}; /* the last one is out of range */
    const uq_store_args *ap = &a;
    int want = UQ_EINVAL;
    switch (which) {
    case 0: a.slot_mapping = bad_mapping; break;
    case 1: ap = NULL; break;
    case 2: a.kv_cache = NULL; break;
    case 3: a.k = NULL; break;
    case 4: a.slot_mapping = NULL; break;
    case 5: a.head_dim = 48; break;
    case 6: a.dtype = (uq_dtype)0; break;
    case 7: a.padded_slot = 66; break;
    case 8: a.num_blocks = 0; break;
    case 9: a.block_size = 0; break;
    case 10: a.num_kv_heads = -2; break;
    case 11: a.num_tokens = -1; break;
    case 12: a.k_stride_head = -64; break;
    case 13: a.num_blocks = INT64_MAX / 8; want = UQ_EOVERFLOW; break;
    case 14: a.v_stride_token = INT64_MAX / 2; want = UQ_EOVERFLOW; break;
    default: a.v = NULL; break;
    }
    memset(cache, 0x77, sizeof cache);
    int rc = uq_reference_store(ap);
    if (rc != want)
      fail_msg("case %d: got %s want %s (%s)", which, uq_err_name(rc),
               uq_err_name(want), uq_last_error());
    assert_true(uq_last_error()[0] != '\0');
    for (size_t i = 0; i < sizeof cache; i++)
      if (cache[i] != 0x77)
        fail_msg("case %d: cache written at %zu", which, i);
  }
  /* No tokens: nothing to read, nothing written. */
  uq_store_args a;
  memset(&a, 0, sizeof a);
  a.kv_cache = cache;
  a.num_blocks = nb;
  a.block_size = bs;
  a.num_kv_heads = hk;
  a.head_dim = d;
  a.dtype = UQ_DTYPE_FP16;
  memset(cache, 0x77, sizeof cache);
  assert_int_equal(uq_reference_store(&a), 0);
  for (size_t i = 0; i < sizeof cache; i++)
    assert_int_equal(cache[i], 0x77);
}

/* Store then decode: the path vLLM takes, end to end on the CPU. */
static void store_then_reference_decode_round_trip(void **state) {
  (void)state;
  synth_rng rng;
  synth_rng_seed(&rng, 31);
  const int hk = 2, hq = 16, d = 256, bs = 32, len = 70;
  const int nblk = (len + bs - 1) / bs;
  uint16_t *k = malloc((size_t)len * hk * d * 2);
  uint16_t *v = malloc((size_t)len * hk * d * 2);
  uint16_t q[16 * 256], out[16 * 256];
  assert_non_null(k);
  assert_non_null(v);
  tk_fill_normal_bf16(&rng, k, (size_t)len * hk * d, 1.0);
  tk_fill_normal_bf16(&rng, v, (size_t)len * hk * d, 1.0);
  tk_fill_normal_bf16(&rng, q, 16 * 256, 1.0);
  int32_t table[4] = {2, 0, 3, 1};
  int64_t mapping[70];
  for (int t = 0; t < len; t++)
    mapping[t] = (int64_t)table[t / bs] * bs + t % bs;
  size_t cache_bytes = (size_t)4 * bs * hk * 272;
  uint8_t *cache = calloc(1, cache_bytes);
  assert_non_null(cache);
  uq_store_args sa;
  memset(&sa, 0, sizeof sa);
  sa.k = k;
  sa.v = v;
  sa.slot_mapping = mapping;
  sa.num_tokens = len;
  sa.kv_cache = cache;
  sa.num_blocks = 4;
  sa.block_size = bs;
  sa.num_kv_heads = hk;
  sa.head_dim = d;
  sa.dtype = UQ_DTYPE_BF16;
  assert_int_equal(uq_reference_store(&sa), 0);
  uq_shape s;
  memset(&s, 0, sizeof s);
  s.batch = 1;
  s.num_q_heads = hq;
  s.num_kv_heads = hk;
  s.head_dim = d;
  s.block_size = bs;
  s.max_blocks_per_seq = nblk + 1;
  s.q_dtype = UQ_DTYPE_BF16;
  int32_t seq_len = len;
  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = q;
  a.kv_cache = cache;
  a.num_blocks = 4;
  a.block_table = table;
  a.seq_lens = &seq_len;
  a.out = out;
  assert_int_equal(uq_reference_decode(&s, &a), 0);
  /* Against exact attention on the unquantized rows: 4-bit K/V and the
   * E4M3 query keep the relative error modest. */
  double ref[256], got[256];
  double worst = 0;
  for (int h = 0; h < hq; h++) {
    int kh = h / (hq / hk);
    double sc[70], m = -INFINITY, sum = 0;
    for (int t = 0; t < len; t++) {
      double dot = 0;
      for (int i = 0; i < d; i++)
        dot += (double)synth_bf16_to_f32(q[h * d + i]) *
               synth_bf16_to_f32(k[((size_t)t * hk + kh) * d + i]);
      sc[t] = dot / 16.0;
      m = sc[t] > m ? sc[t] : m;
    }
    for (int t = 0; t < len; t++)
      sum += (sc[t] = exp(sc[t] - m));
    for (int i = 0; i < d; i++) {
      ref[i] = 0;
      for (int t = 0; t < len; t++)
        ref[i] += sc[t] / sum * synth_bf16_to_f32(v[((size_t)t * hk + kh) * d + i]);
      got[i] = synth_bf16_to_f32(out[h * d + i]);
    }
    double rel = synth_rel_l2(got, ref, (size_t)d);
    worst = rel > worst ? rel : worst;
  }
  assert_true(worst < 0.25);
  free(k);
  free(v);
  free(cache);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(store_writes_encoded_slots_and_skips),
      cmocka_unit_test(store_refuses_bad_input_and_writes_nothing),
      cmocka_unit_test(store_then_reference_decode_round_trip),
  };
  return cmocka_run_group_tests_name("reference_store", tests, NULL, NULL);
}
