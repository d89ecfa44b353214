#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "synth/synth.h"
#include "uqjit_tools.h"

#define POOL_BLOCKS_MAX 64

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double cli_bench_median(double *v, size_t n) {
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t block_bytes(const uq_shape *s, const uq_plan *p) {
  return (uint64_t)s->block_size * (uint64_t)s->num_kv_heads *
         (uint64_t)p->padded_slot;
}

uint64_t cli_bench_bytes(const uq_shape *s, const uq_plan *p, int rotations,
                         cli_bench_fill fill) {
  uint64_t blocks = (uint64_t)s->batch * (uint64_t)s->max_blocks_per_seq;
  if (fill == CLI_FILL_SERVED)
    blocks = (uint64_t)cli_bench_pool_blocks((int64_t)blocks);
  uint64_t io = 2ull * 2ull * (uint64_t)s->batch * s->num_q_heads *
                s->head_dim;
  uint64_t tables = (uint64_t)rotations * blocks * 4u;
  return (uint64_t)rotations * blocks * block_bytes(s, p) + tables + io +
         p->workspace_bytes + 4u * (uint64_t)s->batch;
}

void cli_bench_teardown(uq_context *ctx, cli_bench_shape *b) {
  void *bufs[] = {b->cache, b->tables, b->seq_lens, b->query, b->out,
                  b->workspace};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
    if (bufs[i] != NULL)
      uq_device_free(ctx, bufs[i]);
  free(b->pool);
  free(b->base_table);
  free(b->host_query);
  memset(b, 0, sizeof *b);
}

/* A small pool of encoded blocks from random rows; every device block is
 * a copy of pool block (id % pool_blocks), so the host can rebuild any
 * sequence for the reference without holding the whole cache. */
static int make_pool(cli_bench_shape *b, synth_rng *rng) {
  const uq_shape *s = &b->shape;
  int d = s->head_dim;
  b->pool_blocks = b->blocks_per_copy < POOL_BLOCKS_MAX ? b->blocks_per_copy
                                                        : POOL_BLOCKS_MAX;
  uint64_t slots = (uint64_t)b->pool_blocks * s->block_size * s->num_kv_heads;
  b->pool = calloc(slots, (size_t)b->plan.padded_slot);
  uint16_t *k = malloc((size_t)d * sizeof *k);
  uint16_t *v = malloc((size_t)d * sizeof *v);
  int rc = b->pool && k && v ? 0 : UQ_ENOMEM;
  for (uint64_t i = 0; rc == 0 && i < slots; i++) {
    for (int j = 0; j < d; j++) {
      k[j] = uq_float_to_bf16((float)synth_rng_normal(rng));
      v[j] = uq_float_to_bf16((float)synth_rng_normal(rng));
    }
    rc = uq_encode_slot(d, UQ_DTYPE_BF16, k, v,
                        b->pool + i * (uint64_t)b->plan.padded_slot);
  }
  free(k);
  free(v);
  return rc;
}

int cli_bench_setup(uq_context *ctx, cli_bench_shape *b, const uq_shape *s,
                   const uq_plan *plan, int32_t seq, int rotations,
                   uint64_t seed, cli_bench_fill fill) {
  memset(b, 0, sizeof *b);
  b->shape = *s;
  b->plan = *plan;
  b->seq = seq;
  b->rotations = rotations;
  b->fill = fill;
  int64_t bsz = s->batch, mb = s->max_blocks_per_seq;
  b->blocks_per_copy = fill == CLI_FILL_SERVED ? cli_bench_pool_blocks(bsz * mb) : bsz * mb;
  synth_rng rng;
  synth_rng_seed(&rng, seed);
  int rc = fill == CLI_FILL_POOL ? make_pool(b, &rng) : 0;
  size_t ntab = (size_t)(bsz * mb);
  size_t nq = (size_t)bsz * s->num_q_heads * s->head_dim;
  b->base_table = malloc(ntab * sizeof *b->base_table);
  b->host_query = malloc(nq * sizeof *b->host_query);
  int32_t *tables = malloc((size_t)rotations * ntab * sizeof *tables);
  int32_t *lens = malloc((size_t)bsz * sizeof *lens);
  if (rc == 0 && (!b->base_table || !b->host_query || !tables || !lens))
    rc = UQ_ENOMEM;
  if (rc != 0)
    goto done;
  /* A shuffled table: sequences' blocks are scattered over the cache
   * (served: over a larger pool, of which the batch uses a random part). */
  {
    size_t all = (size_t)b->blocks_per_copy;
    int32_t *perm = malloc(all * sizeof *perm);
    if (perm == NULL) {
      rc = UQ_ENOMEM;
      goto done;
    }
    for (size_t i = 0; i < all; i++)
      perm[i] = (int32_t)i;
    synth_rng_shuffle_i32(&rng, perm, all);
    memcpy(b->base_table, perm, ntab * sizeof *perm);
    free(perm);
  }
  for (int r = 0; r < rotations; r++)
    for (size_t i = 0; i < ntab; i++)
      tables[(size_t)r * ntab + i] =
          b->base_table[i] + (int32_t)(r * b->blocks_per_copy);
  for (int64_t i = 0; i < bsz; i++)
    lens[i] = seq;
  for (size_t i = 0; i < nq; i++)
    b->host_query[i] = uq_float_to_bf16((float)synth_rng_normal(&rng));

  uint64_t bb = block_bytes(s, plan);
  uint64_t total = (uint64_t)rotations * (uint64_t)b->blocks_per_copy * bb;
  /* What the doubling copies below start from: the pool, or copy 0. */
  uint64_t pool_bytes = (fill == CLI_FILL_POOL ? (uint64_t)b->pool_blocks
                                               : (uint64_t)b->blocks_per_copy) * bb;
  if ((rc = uq_device_alloc(ctx, total, &b->cache)) != 0 ||
      (rc = uq_device_alloc(ctx, (size_t)rotations * ntab * 4,
                            &b->tables)) != 0 ||
      (rc = uq_device_alloc(ctx, (size_t)bsz * 4, &b->seq_lens)) != 0 ||
      (rc = uq_device_alloc(ctx, nq * 2, &b->query)) != 0 ||
      (rc = uq_device_alloc(ctx, nq * 2, &b->out)) != 0 ||
      (rc = uq_device_alloc(ctx, plan->workspace_bytes, &b->workspace)) != 0)
    goto done;
  if (fill == CLI_FILL_POOL)
    rc = uq_memcpy_h2d(ctx, b->cache, b->pool, pool_bytes);
  else
    rc = cli_bench_fill_served(ctx, b, &rng);
  if (rc != 0)
    goto done;
  /* Doubling copies: every prefix is a whole number of pools. */
  for (uint64_t have = pool_bytes; have < total;) {
    uint64_t n = have < total - have ? have : total - have;
    rc = uq_memcpy_d2d(ctx, (uint8_t *)b->cache + have, b->cache, n);
    if (rc != 0)
      goto done;
    have += n;
  }
  if ((rc = uq_memcpy_h2d(ctx, b->tables, tables,
                          (size_t)rotations * ntab * 4)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, b->seq_lens, lens, (size_t)bsz * 4)) != 0 ||
      (rc = uq_memcpy_h2d(ctx, b->query, b->host_query, nq * 2)) != 0 ||
      (rc = uq_memset_d8(ctx, b->out, 0, nq * 2)) != 0)
    goto done;
  rc = uq_synchronize(ctx);
done:
  free(tables);
  free(lens);
  return rc;
}

void cli_bench_args(const cli_bench_shape *b, int r, uq_decode_args *a) {
  memset(a, 0, sizeof *a);
  a->query = b->query;
  a->kv_cache = b->cache;
  a->num_blocks = (int64_t)b->rotations * b->blocks_per_copy;
  /* Rotation r's table: B x max_blocks_per_seq entries into copy r. */
  a->block_table = (const int32_t *)b->tables +
                   (size_t)r * (size_t)b->shape.batch * (size_t)b->shape.max_blocks_per_seq;
  a->seq_lens = b->seq_lens;
  a->out = b->out;
}

int cli_bench_check(uq_context *ctx, cli_bench_shape *b, int nseq,
                   double *rel_l2, size_t *nonfinite) {
  const uq_shape *s = &b->shape;
  if (nseq > s->batch)
    nseq = s->batch;
  uq_decode_args a;
  cli_bench_args(b, 0, &a);
  int rc = uq_decode(ctx, s, &a, b->workspace, b->plan.workspace_bytes, NULL);
  if (rc == 0)
    rc = uq_synchronize(ctx);
  if (rc != 0 || nseq <= 0)
    return rc;
  size_t per = (size_t)s->num_q_heads * s->head_dim;
  size_t n = (size_t)nseq * per;
  uint16_t *out = malloc(n * sizeof *out);
  double *ref = malloc(n * sizeof *ref);
  size_t ntab = (size_t)nseq * s->max_blocks_per_seq;
  int32_t *table = malloc(ntab * sizeof *table);
  int32_t *lens = malloc((size_t)nseq * sizeof *lens);
  if (!out || !ref || !table || !lens) {
    rc = UQ_ENOMEM;
    goto done;
  }
  if ((rc = uq_memcpy_d2h(ctx, out, b->out, n * 2)) != 0)
    goto done;
  /* The reference reads the host's copy of the checked sequences' blocks:
   * the pool they repeat, or (served) the blocks themselves. */
  uint8_t *gathered = NULL;
  int64_t host_blocks = b->pool_blocks;
  if (b->fill == CLI_FILL_POOL) {
    for (size_t i = 0; i < ntab; i++)
      table[i] = (int32_t)(b->base_table[i] % b->pool_blocks);
  } else {
    if ((rc = cli_bench_gather(ctx, b, nseq, &gathered, table)) != 0)
      goto done;
    host_blocks = (int64_t)ntab;
  }
  for (int i = 0; i < nseq; i++)
    lens[i] = b->seq;
  uq_shape sub = *s;
  sub.batch = nseq;
  uq_decode_args h;
  memset(&h, 0, sizeof h);
  h.query = b->host_query;
  h.kv_cache = gathered != NULL ? gathered : b->pool;
  h.num_blocks = host_blocks;
  h.block_table = table;
  h.seq_lens = lens;
  rc = uq_reference_decode_f64(&sub, &h, ref);
  free(gathered);
  if (rc != 0)
    goto done;
  double max_abs = 0.0;
  *nonfinite = 0;
  *rel_l2 = synth_rel_l2_half(UQ_DTYPE_BF16, out, ref, n, &max_abs, nonfinite);
done:
  free(out);
  free(ref);
  free(table);
  free(lens);
  return rc;
}

int cli_bench_time(uq_context *ctx, void *stream, cli_bench_shape *b,
                  const cli_bench_opts *o, int graph_steps, double *median_us) {
  int n = o->iters, rc = 0;
  int steps = graph_steps > 0 ? graph_steps : 1;
  /* Graph g holds steps g*steps .. g*steps + steps - 1, step j decoding
   * rotation j % rotations: enough graphs that every rotation is used
   * before any repeats (so the L2 holds nothing useful), but never more
   * than there are replays. */
  int ngraphs = 0;
  if (graph_steps > 0) {
    ngraphs = (b->rotations + steps - 1) / steps;
    if (ngraphs > o->warmup + n)
      ngraphs = o->warmup + n;
  }
  uq_event **ev = calloc((size_t)2 * n, sizeof *ev);
  uq_graph **graphs = calloc((size_t)(ngraphs > 0 ? ngraphs : 1),
                             sizeof *graphs);
  double *ms = calloc((size_t)n, sizeof *ms);
  if (!ev || !graphs || !ms) {
    rc = UQ_ENOMEM;
    goto done;
  }
  for (int i = 0; i < 2 * n; i++)
    if ((rc = uq_event_create(ctx, &ev[i])) != 0)
      goto done;
  uq_decode_args a;
  for (int g = 0; g < ngraphs; g++) {
    if ((rc = uq_graph_capture_begin(ctx, stream)) != 0)
      goto done;
    int drc = 0;
    for (int j = 0; j < steps && drc == 0; j++) {
      cli_bench_args(b, (g * steps + j) % b->rotations, &a);
      drc = uq_decode(ctx, &b->shape, &a, b->workspace,
                      b->plan.workspace_bytes, stream);
    }
    rc = uq_graph_capture_end(ctx, stream, &graphs[g]);
    if (drc != 0) {
      rc = drc;
      goto done;
    }
    if (rc != 0)
      goto done;
  }
  for (int i = 0; i < o->warmup + n; i++) {
    int timed = i >= o->warmup;
    int k = i - o->warmup;
    if (timed && (rc = uq_event_record(ev[2 * k], stream)) != 0)
      goto done;
    if (ngraphs > 0) {
      rc = uq_graph_launch(graphs[i % ngraphs], stream);
    } else {
      cli_bench_args(b, i % b->rotations, &a);
      rc = uq_decode(ctx, &b->shape, &a, b->workspace,
                     b->plan.workspace_bytes, stream);
    }
    if (rc != 0)
      goto done;
    if (timed && (rc = uq_event_record(ev[2 * k + 1], stream)) != 0)
      goto done;
  }
  if ((rc = uq_stream_synchronize(ctx, stream)) != 0)
    goto done;
  for (int k = 0; k < n; k++) {
    float t;
    if ((rc = uq_event_elapsed_ms(ev[2 * k], ev[2 * k + 1], &t)) != 0)
      goto done;
    ms[k] = t;
  }
  *median_us = 1e3 * cli_bench_median(ms, (size_t)n) / steps;
done:
  if (ev != NULL)
    for (int i = 0; i < 2 * n; i++)
      uq_event_destroy(ev[i]);
  if (graphs != NULL)
    for (int g = 0; g < ngraphs; g++)
      uq_graph_destroy(graphs[g]);
  free(ev);
  free(graphs);
  free(ms);
  return rc;
}
