#include "tests/gpu_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define D 256

uq_context *gpu_open_or_skip(void) {
  int count = 0;
  int rc = uq_device_count(&count);
  if (rc != 0 || count == 0) {
    printf("SKIP: no GPU (%s: %s)\n", uq_err_name(rc), uq_last_error());
    exit(77);
  }
  uq_context_options opts;
  uq_context_options_init(&opts);
  opts.device = 0;
  uq_context *ctx = NULL;
  rc = uq_context_create(&opts, &ctx);
  if (rc != 0) {
    fprintf(stderr, "uq_context_create: %s: %s\n", uq_err_name(rc),
            uq_last_error());
    exit(1);
  }
  char name[128] = "";
  uq_device_name(ctx, name, sizeof name);
  printf("device 0: %s, target %s\n", name, uq_context_target(ctx));
  return ctx;
}

void gpu_test_filters(void) {
  const char *only = getenv("UQ_TEST_FILTER");
  const char *skip = getenv("UQ_TEST_SKIP");
  if (only != NULL && *only != '\0')
    cmocka_set_test_filter(only);
  if (skip != NULL && *skip != '\0')
    cmocka_set_skip_filter(skip);
}

static void fill_rows(tu_rng *rng, uq_dtype dtype, uint16_t *x, size_t n) {
  if (dtype == UQ_DTYPE_FP16)
    tu_fill_normal_fp16(rng, x, n, 1.0);
  else
    tu_fill_normal_bf16(rng, x, n, 1.0);
}

/* Token t0 + i's row of `width` elements times 1 + k_ramp (t0 + i) / len,
 * rounded back to the dtype. */
static void ramp_rows(const decode_case *c, uint16_t *x, int32_t t0, int32_t n, size_t width,
                      int32_t len) {
  for (int32_t i = 0; i < n; i++) {
    const double f = 1.0 + c->k_ramp * (double)(t0 + i) / (double)len;
    uint16_t *row = x + (size_t)i * width;
    for (size_t j = 0; j < width; j++)
      row[j] = c->dtype == UQ_DTYPE_FP16 ? tu_f64_to_fp16(f * tu_fp16_to_f32(row[j]))
                                         : tu_f64_to_bf16(f * tu_bf16_to_f32(row[j]));
  }
}

#define CHECK_RC(expr)                                                       \
  do {                                                                       \
    int rc_ = (expr);                                                        \
    if (rc_ != 0) {                                                          \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #expr,      \
              uq_err_name(rc_), uq_last_error());                            \
      return rc_;                                                            \
    }                                                                        \
  } while (0)

int problem_make(uq_context *ctx, const decode_case *c, decode_problem *p) {
  memset(p, 0, sizeof *p);
  const int hk = c->hk, hq = c->qg * c->hk, bs = c->block_size, B = c->batch;
  const size_t padded = c->padded_slot ? (size_t)c->padded_slot : uq_slot_size(D);
  tu_rng rng, junk;
  tu_rng_seed(&rng, c->seed);
  tu_rng_seed(&junk, c->seed ^ 0x9e3779b97f4a7c15ull);

  int32_t max_len = 1;
  int64_t used_total = 0;
  for (int b = 0; b < B; b++) {
    if (c->seq_lens[b] > max_len)
      max_len = c->seq_lens[b];
    used_total += (c->seq_lens[b] + bs - 1) / bs;
  }
  /* One spare column, so the table has entries past every sequence. */
  const int mb = (max_len + bs - 1) / bs + 1;
  p->num_blocks = used_total + 3; /* three blocks nobody uses */

  uq_shape *s = &p->shape;
  uq_shape_init(s);
  s->batch = B;
  s->num_q_heads = hq;
  s->num_kv_heads = hk;
  s->head_dim = D;
  s->block_size = bs;
  s->max_blocks_per_seq = mb;
  s->max_num_kv_splits = c->max_kv_splits;
  s->padded_slot = c->padded_slot;
  s->q_dtype = c->dtype;
  int64_t heads_in_row = hq;
  switch (c->layout) {
  case Q_CONTIGUOUS:
    break;
  case Q_QKV_SLICE:
    heads_in_row = hq + 2 * hk;
    s->q_stride_seq = heads_in_row * D;
    break;
  case Q_STRIDED:
    s->q_stride_head = D + 64;
    s->q_stride_seq = (int64_t)hq * (D + 64);
    heads_in_row = hq; /* rows of hq * (D + 64) */
    break;
  }
  p->q_elems = (size_t)B * (size_t)heads_in_row *
               (size_t)(c->layout == Q_STRIDED ? D + 64 : D);
  p->out_elems = (size_t)B * hq * D;
  p->cache_bytes = (size_t)p->num_blocks * bs * hk * padded;
  p->table_bytes = (size_t)B * mb * sizeof(int32_t);

  p->h_cache = malloc(p->cache_bytes);
  p->h_table = malloc(p->table_bytes);
  p->h_lens = malloc((size_t)B * sizeof(int32_t));
  p->h_query = malloc(p->q_elems * 2);
  int32_t *perm = malloc((size_t)p->num_blocks * sizeof(int32_t));
  if (!p->h_cache || !p->h_table || !p->h_lens || !p->h_query || !perm) {
    free(perm);
    return UQ_ENOMEM;
  }
  /* Stale bytes everywhere (scale bytes of 255 included) or zeros. */
  if (c->garbage)
    for (size_t i = 0; i < p->cache_bytes; i++)
      p->h_cache[i] = (uint8_t)tu_rng_u32(&junk);
  else
    memset(p->h_cache, 0, p->cache_bytes);

  for (int64_t i = 0; i < p->num_blocks; i++)
    perm[i] = (int32_t)i;
  tu_rng_shuffle_i32(&rng, perm, (size_t)p->num_blocks);
  int64_t next = 0;
  for (int b = 0; b < B; b++) {
    p->h_lens[b] = c->seq_lens[b];
    int used = (c->seq_lens[b] + bs - 1) / bs;
    for (int i = 0; i < mb; i++) {
      int32_t v = 0;
      if (i < used)
        v = perm[next++];
      else if (c->garbage)
        v = (i % 3 == 0) ? 0x7fffffff : (i % 3 == 1) ? -7
                                                     : (int32_t)p->num_blocks + 1000;
      p->h_table[(size_t)b * mb + i] = v;
    }
  }
  free(perm);

  /* K/V rows through the CPU encoder, a chunk of tokens at a time. */
  enum { CHUNK = 2048 };
  uint16_t *k = malloc((size_t)CHUNK * hk * D * 2);
  uint16_t *v = malloc((size_t)CHUNK * hk * D * 2);
  int64_t *map = malloc(CHUNK * sizeof(int64_t));
  if (!k || !v || !map) {
    free(k);
    free(v);
    free(map);
    return UQ_ENOMEM;
  }
  int rc = 0;
  for (int b = 0; b < B && rc == 0; b++) {
    for (int32_t t0 = 0; t0 < c->seq_lens[b] && rc == 0; t0 += CHUNK) {
      int32_t n = c->seq_lens[b] - t0 < CHUNK ? c->seq_lens[b] - t0 : CHUNK;
      fill_rows(&rng, c->dtype, k, (size_t)n * hk * D);
      fill_rows(&rng, c->dtype, v, (size_t)n * hk * D);
      if (c->k_ramp != 0)
        ramp_rows(c, k, t0, n, hk * D, c->seq_lens[b]);
      for (int32_t i = 0; i < n; i++) {
        int32_t t = t0 + i;
        int32_t blk = p->h_table[(size_t)b * mb + t / bs];
        map[i] = (int64_t)blk * bs + t % bs;
      }
      uq_store_args sa;
      memset(&sa, 0, sizeof sa);
      sa.k = k;
      sa.v = v;
      sa.slot_mapping = map;
      sa.num_tokens = n;
      sa.kv_cache = p->h_cache;
      sa.num_blocks = p->num_blocks;
      sa.block_size = bs;
      sa.num_kv_heads = hk;
      sa.head_dim = D;
      sa.dtype = c->dtype;
      sa.padded_slot = c->padded_slot;
      rc = uq_reference_store(&sa);
      if (rc != 0)
        fprintf(stderr, "uq_reference_store: %s\n", uq_last_error());
    }
  }
  free(k);
  free(v);
  free(map);
  if (rc != 0)
    return rc;
  /* The whole query buffer is random: the k/v parts of a fused projection
   * and the gaps of a strided one must simply be ignored. */
  fill_rows(&rng, c->dtype, p->h_query, p->q_elems);

  uq_plan plan;
  CHECK_RC(uq_plan_make(s, uq_context_target(ctx), &plan));
  if (!plan.eligible) {
    fprintf(stderr, "case not eligible: %s\n", plan.reason);
    return UQ_EUNSUPPORTED;
  }
  p->ws_bytes = plan.workspace_bytes;
  CHECK_RC(uq_device_alloc(ctx, p->cache_bytes, &p->d_cache));
  CHECK_RC(uq_device_alloc(ctx, p->table_bytes, &p->d_table));
  CHECK_RC(uq_device_alloc(ctx, (size_t)B * 4, &p->d_lens));
  CHECK_RC(uq_device_alloc(ctx, p->q_elems * 2, &p->d_qbuf));
  CHECK_RC(uq_device_alloc(ctx, p->out_elems * 2, &p->d_out));
  CHECK_RC(uq_device_alloc(ctx, p->ws_bytes, &p->d_ws));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_cache, p->h_cache, p->cache_bytes));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_table, p->h_table, p->table_bytes));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_lens, p->h_lens, (size_t)B * 4));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_qbuf, p->h_query, p->q_elems * 2));
  p->d_args.query = p->d_qbuf;
  p->d_args.kv_cache = p->d_cache;
  p->d_args.num_blocks = p->num_blocks;
  p->d_args.block_table = p->d_table;
  p->d_args.seq_lens = p->d_lens;
  p->d_args.out = p->d_out;
  return 0;
}

void problem_free(uq_context *ctx, decode_problem *p) {
  void *dev[] = {p->d_cache, p->d_table, p->d_lens, p->d_qbuf, p->d_out,
                 p->d_ws};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i] != NULL)
      uq_device_free(ctx, dev[i]);
  free(p->h_cache);
  free(p->h_table);
  free(p->h_lens);
  free(p->h_query);
  memset(p, 0, sizeof *p);
}

int problem_poison(uq_context *ctx, decode_problem *p) {
  CHECK_RC(uq_memset_d8(ctx, p->d_out, 0xFF, p->out_elems * 2));
  CHECK_RC(uq_memset_d8(ctx, p->d_ws, 0xFF, p->ws_bytes));
  return 0;
}

int problem_reference(const decode_problem *p, double *out64) {
  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = p->h_query;
  a.kv_cache = p->h_cache;
  a.num_blocks = p->num_blocks;
  a.block_table = p->h_table;
  a.seq_lens = p->h_lens;
  CHECK_RC(uq_reference_decode_f64(&p->shape, &a, out64));
  return 0;
}

int problem_fetch(uq_context *ctx, const decode_problem *p, uint16_t *raw,
                  double *out) {
  CHECK_RC(uq_synchronize(ctx));
  CHECK_RC(uq_memcpy_d2h(ctx, raw, p->d_out, p->out_elems * 2));
  for (size_t i = 0; i < p->out_elems; i++)
    out[i] = p->shape.q_dtype == UQ_DTYPE_FP16 ? tu_fp16_to_f32(raw[i])
                                               : tu_bf16_to_f32(raw[i]);
  return 0;
}
