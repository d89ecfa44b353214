#include "tests/runtime/gpu_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

uq_context *gpu_open_or_skip(void) { return gpu_open_variant_or_skip(NULL); }

uq_context *gpu_open_variant_or_skip(const char *variant) {
  int count = 0;
  int rc = uq_device_count(&count);
  if (rc != 0 || count == 0) {
    printf("SKIP: no GPU (%s: %s)\n", uq_err_name(rc), uq_last_error());
    exit(77);
  }
  uq_context_options opts;
  uq_context_options_init(&opts);
  opts.device = 0;
  opts.variant = variant;
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

#define CHECK_RC(expr)                                                       \
  do {                                                                       \
    int rc_ = (expr);                                                        \
    if (rc_ != 0) {                                                          \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #expr,      \
              uq_err_name(rc_), uq_last_error());                            \
      return rc_;                                                            \
    }                                                                        \
  } while (0)

/* The shape of case c: its head_dim D (256 unless given), a spare table
 * column past the longest sequence, the query laid out as c->layout
 * says. */
static void case_shape(const decode_case *c, uq_shape *s) {
  const int hk = c->hk, hq = c->qg * c->hk, bs = c->block_size;
  const int D = c->head_dim ? c->head_dim : 256;
  int32_t max_len = 1;
  for (int b = 0; b < c->batch; b++)
    if (c->seq_lens[b] > max_len)
      max_len = c->seq_lens[b];
  uq_shape_init(s);
  s->batch = c->batch;
  s->num_q_heads = hq;
  s->num_kv_heads = hk;
  s->head_dim = D;
  s->block_size = bs;
  s->max_blocks_per_seq = (max_len + bs - 1) / bs + 1;
  s->max_num_kv_splits = c->max_kv_splits;
  s->padded_slot = c->padded_slot;
  s->q_dtype = c->dtype;
  switch (c->layout) {
  case Q_CONTIGUOUS:
    break;
  case Q_QKV_SLICE:
    s->q_stride_seq = (int64_t)(hq + 2 * hk) * D;
    break;
  case Q_STRIDED:
    s->q_stride_head = D + 64;
    s->q_stride_seq = (int64_t)hq * (D + 64);
    break;
  case Q_ELEM_STRIDED:
    s->q_stride_dim = 2;
    s->q_stride_head = 2 * D;
    s->q_stride_seq = (int64_t)hq * 2 * D;
    break;
  }
}

/* Device copies of the host problem, and the decode arguments over them. */
static int problem_upload(uq_context *ctx, decode_problem *p) {
  const synth_problem *h = &p->host;
  const size_t lens_bytes = (size_t)h->shape.batch * sizeof(int32_t);
  uq_plan plan;
  CHECK_RC(uq_context_plan(ctx, &p->shape, &plan));
  if (!plan.eligible) {
    fprintf(stderr, "case not eligible: %s\n", plan.reason);
    return UQ_EUNSUPPORTED;
  }
  p->ws_bytes = plan.workspace_bytes;
  CHECK_RC(uq_device_alloc(ctx, h->cache_bytes, &p->d_cache));
  CHECK_RC(uq_device_alloc(ctx, p->table_bytes, &p->d_table));
  CHECK_RC(uq_device_alloc(ctx, lens_bytes, &p->d_lens));
  CHECK_RC(uq_device_alloc(ctx, p->q_elems * 2, &p->d_qbuf));
  CHECK_RC(uq_device_alloc(ctx, p->out_elems * 2, &p->d_out));
  CHECK_RC(uq_device_alloc(ctx, p->ws_bytes, &p->d_ws));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_cache, h->cache, h->cache_bytes));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_table, h->block_table, p->table_bytes));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_lens, h->seq_lens, lens_bytes));
  CHECK_RC(uq_memcpy_h2d(ctx, p->d_qbuf, h->query, p->q_elems * 2));
  p->d_args.query = p->d_qbuf;
  p->d_args.kv_cache = p->d_cache;
  p->d_args.num_blocks = h->num_blocks;
  p->d_args.block_table = p->d_table;
  p->d_args.seq_lens = p->d_lens;
  p->d_args.out = p->d_out;
  return 0;
}

int problem_build(const decode_case *c, decode_problem *p) {
  memset(p, 0, sizeof *p);
  uq_shape shape;
  case_shape(c, &shape);
  synth_problem_opts o;
  synth_problem_opts_init(&o, c->seed);
  o.spare_blocks = 3;
  o.garbage = c->garbage;
  o.k_ramp = c->k_ramp;
  o.v_spread = c->v_spread;
  CHECK_RC(synth_problem_make(&p->host, &shape, c->seq_lens, &o));
  CHECK_RC(synth_problem_store(&p->host));
  p->shape = p->host.shape;
  p->q_elems = p->host.query_elems;
  p->out_elems = (size_t)shape.batch * shape.num_q_heads * shape.head_dim;
  p->table_bytes =
      (size_t)shape.batch * shape.max_blocks_per_seq * sizeof(int32_t);
  return 0;
}

int problem_make(uq_context *ctx, const decode_case *c, decode_problem *p) {
  CHECK_RC(problem_build(c, p));
  return problem_upload(ctx, p);
}

void problem_free(uq_context *ctx, decode_problem *p) {
  void *dev[] = {p->d_cache, p->d_table, p->d_lens, p->d_qbuf, p->d_out,
                 p->d_ws};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i] != NULL)
      uq_device_free(ctx, dev[i]);
  synth_problem_free(&p->host);
  memset(p, 0, sizeof *p);
}

int problem_poison(uq_context *ctx, decode_problem *p) {
  CHECK_RC(uq_memset_d8(ctx, p->d_out, 0xFF, p->out_elems * 2));
  CHECK_RC(uq_memset_d8(ctx, p->d_ws, 0xFF, p->ws_bytes));
  return 0;
}

int problem_reference(const decode_problem *p, double *out64) {
  uq_decode_args a = synth_problem_decode_args(&p->host, NULL);
  CHECK_RC(uq_reference_decode_f64(&p->host.shape, &a, out64));
  return 0;
}

int problem_fetch(uq_context *ctx, const decode_problem *p, uint16_t *raw,
                  double *out) {
  CHECK_RC(uq_synchronize(ctx));
  CHECK_RC(uq_memcpy_d2h(ctx, raw, p->d_out, p->out_elems * 2));
  problem_widen(p, raw, out);
  return 0;
}

void problem_widen(const decode_problem *p, const uint16_t *raw,
                   double *out) {
  for (size_t i = 0; i < p->out_elems; i++)
    out[i] = p->shape.q_dtype == UQ_DTYPE_FP16 ? synth_fp16_to_f32(raw[i])
                                               : synth_bf16_to_f32(raw[i]);
}
