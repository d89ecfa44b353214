/* The synthetic decode problem: rows for every token, a shuffled block
 * table, the query, and the CPU store into a cache. */
#include "synth/synth.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void synth_problem_opts_init(synth_problem_opts *o, uint64_t seed) {
  memset(o, 0, sizeof *o);
  o->seed = seed;
}

size_t synth_query_elems(const uq_shape *s) {
  int64_t head = s->q_stride_head ? s->q_stride_head : s->head_dim;
  int64_t seq = s->q_stride_seq ? s->q_stride_seq
                                : (int64_t)s->num_q_heads * s->head_dim;
  int64_t dim = s->q_stride_dim ? s->q_stride_dim : 1;
  int64_t a, b, c, n;
  if (__builtin_mul_overflow((int64_t)s->batch - 1, seq, &a) ||
      __builtin_mul_overflow((int64_t)s->num_q_heads - 1, head, &b) ||
      __builtin_mul_overflow((int64_t)s->head_dim - 1, dim, &c) ||
      __builtin_add_overflow(a, b, &n) || __builtin_add_overflow(n, c, &n) ||
      __builtin_add_overflow(n, (int64_t)1, &n) || n <= 0 ||
      (uint64_t)n > SIZE_MAX / 2)
    return 0;
  return (size_t)n;
}

static uint16_t to_half(uq_dtype dtype, double x) {
  return dtype == UQ_DTYPE_FP16 ? uq_float_to_fp16((float)x)
                                : uq_float_to_bf16((float)x);
}

void synth_problem_free(synth_problem *p) {
  free(p->seq_lens);
  free(p->block_table);
  free(p->slot_mapping);
  free(p->k);
  free(p->v);
  free(p->query);
  free(p->cache);
  memset(p, 0, sizeof *p);
}

/* Resolves the shape and counts blocks and tokens; UQ_EINVAL for a length
 * outside 1..W. */
static int size_problem(synth_problem *p, const int32_t *seq_lens) {
  uq_shape *s = &p->shape;
  if (s->q_dtype == 0)
    s->q_dtype = UQ_DTYPE_BF16;
  if (s->padded_slot == 0)
    s->padded_slot = (int32_t)((uq_slot_size(s->head_dim) + 3) & ~(size_t)3);
  int64_t bs = s->block_size, w;
  if (__builtin_mul_overflow(bs, (int64_t)s->max_blocks_per_seq, &w))
    return UQ_EOVERFLOW;
  p->num_blocks = p->opts.spare_blocks;
  p->num_tokens = 0;
  for (int64_t i = 0; i < s->batch; i++) {
    if (seq_lens[i] < 1 || seq_lens[i] > w)
      return UQ_EINVAL;
    p->num_blocks += (seq_lens[i] + bs - 1) / bs;
    p->num_tokens += seq_lens[i];
  }
  int64_t bytes;
  if (__builtin_mul_overflow(p->num_blocks, bs, &bytes) ||
      __builtin_mul_overflow(bytes, (int64_t)s->num_kv_heads, &bytes) ||
      __builtin_mul_overflow(bytes, (int64_t)s->padded_slot, &bytes))
    return UQ_EOVERFLOW;
  p->cache_bytes = (size_t)bytes;
  /* Sizes that do not fit are refused here, before any arithmetic on
   * them can overflow (the library refuses such shapes too). */
  p->query_elems = synth_query_elems(s);
  if (p->query_elems == 0)
    return UQ_EOVERFLOW;
  return 0;
}

static int alloc_problem(synth_problem *p) {
  const uq_shape *s = &p->shape;
  size_t rows = (size_t)(p->num_tokens * s->num_kv_heads * s->head_dim);
  p->seq_lens = malloc((size_t)s->batch * sizeof *p->seq_lens);
  p->block_table = calloc((size_t)(s->batch * s->max_blocks_per_seq),
                          sizeof *p->block_table);
  p->slot_mapping = malloc((size_t)p->num_tokens * sizeof *p->slot_mapping);
  p->k = malloc(rows * sizeof *p->k);
  p->v = malloc(rows * sizeof *p->v);
  p->query = calloc(p->query_elems, sizeof *p->query);
  if (!p->seq_lens || !p->block_table || !p->slot_mapping || !p->k ||
      !p->v || !p->query)
    return UQ_ENOMEM;
  return 0;
}

/* An entry past a sequence's blocks that no kernel may read. */
static int32_t invalid_entry(const synth_problem *p, int64_t i) {
  return i % 3 == 0 ? 0x7fffffff : i % 3 == 1 ? -7
                                              : (int32_t)p->num_blocks + 1000;
}

/* Shuffled physical blocks, so the block table is really exercised. */
static int fill_tables(synth_problem *p, const int32_t *seq_lens,
                       synth_rng *rng) {
  const uq_shape *s = &p->shape;
  int64_t bs = s->block_size, mb = s->max_blocks_per_seq;
  int32_t *perm = malloc((size_t)p->num_blocks * sizeof *perm);
  if (perm == NULL)
    return UQ_ENOMEM;
  for (int64_t i = 0; i < p->num_blocks; i++)
    perm[i] = (int32_t)i;
  synth_rng_shuffle_i32(rng, perm, (size_t)p->num_blocks);
  int64_t next_block = 0, tok = 0;
  for (int64_t i = 0; i < s->batch; i++) {
    p->seq_lens[i] = seq_lens[i];
    int64_t nb = (seq_lens[i] + bs - 1) / bs;
    for (int64_t j = 0; j < mb; j++)
      if (j < nb)
        p->block_table[i * mb + j] = perm[next_block++];
      else if (p->opts.garbage)
        p->block_table[i * mb + j] = invalid_entry(p, j);
    for (int64_t t = 0; t < seq_lens[i]; t++)
      p->slot_mapping[tok++] = p->block_table[i * mb + t / bs] * bs + t % bs;
  }
  free(perm);
  return 0;
}

/* Token t's K row times 1 + k_ramp t / seq_len, rounded back to the
 * dtype. */
static void ramp_keys(synth_problem *p) {
  const uq_shape *s = &p->shape;
  size_t width = (size_t)s->num_kv_heads * (size_t)s->head_dim;
  uint16_t *row = p->k;
  for (int64_t b = 0; b < s->batch; b++) {
    int32_t len = p->seq_lens[b];
    for (int32_t t = 0; t < len; t++, row += width) {
      double f = 1.0 + p->opts.k_ramp * (double)t / (double)len;
      for (size_t j = 0; j < width; j++)
        row[j] = s->q_dtype == UQ_DTYPE_FP16
                     ? synth_f64_to_fp16(f * synth_fp16_to_f32(row[j]))
                     : synth_f64_to_bf16(f * synth_bf16_to_f32(row[j]));
    }
  }
}

/* Token t's V rows times 2^e (opts.v_spread), rounded back to bf16. */
static void spread_values(synth_problem *p, synth_rng *rng) {
  const uq_shape *s = &p->shape;
  size_t d = (size_t)s->head_dim;
  uint16_t *row = p->v;
  for (int64_t b = 0; b < s->batch; b++) {
    int32_t len = p->seq_lens[b];
    for (int32_t t = 0; t < len; t++)
      for (int h = 0; h < s->num_kv_heads; h++, row += d) {
        int e =
            (int)(synth_rng_uniform(rng) * p->opts.v_spread * (t + 1) / len);
        if (synth_rng_below(rng, 8) == 0)
          e -= p->opts.v_spread / 2;
        for (size_t j = 0; j < d; j++)
          row[j] = synth_f64_to_bf16(ldexp(synth_bf16_to_f32(row[j]), e));
      }
  }
}

/* Sets every query element that no (batch, head, dim) index reaches to
 * NaN; the rows keep the values drawn for them. */
static int nan_gaps(synth_problem *p) {
  const uq_shape *s = &p->shape;
  int64_t sd = s->q_stride_dim ? s->q_stride_dim : 1;
  int64_t sh = s->q_stride_head ? s->q_stride_head : s->head_dim;
  int64_t ss = s->q_stride_seq ? s->q_stride_seq
                               : (int64_t)s->num_q_heads * s->head_dim;
  uint8_t *row = calloc(p->query_elems, 1);
  if (row == NULL)
    return UQ_ENOMEM;
  for (int64_t b = 0; b < s->batch; b++)
    for (int64_t h = 0; h < s->num_q_heads; h++)
      for (int64_t i = 0; i < s->head_dim; i++) {
        int64_t at = b * ss + h * sh + i * sd;
        if (at >= 0 && (uint64_t)at < p->query_elems)
          row[at] = 1;
      }
  uint16_t nan = s->q_dtype == UQ_DTYPE_FP16 ? 0x7e00 : 0x7fc0;
  for (size_t i = 0; i < p->query_elems; i++)
    if (!row[i])
      p->query[i] = nan;
  free(row);
  return 0;
}

int synth_problem_make(synth_problem *p, const uq_shape *shape,
                       const int32_t *seq_lens, const synth_problem_opts *o) {
  memset(p, 0, sizeof *p);
  p->shape = *shape;
  if (o != NULL)
    p->opts = *o;
  else
    synth_problem_opts_init(&p->opts, 1);
  int rc = size_problem(p, seq_lens);
  if (rc == 0)
    rc = alloc_problem(p);
  synth_rng rng;
  synth_rng_seed(&rng, p->opts.seed);
  if (rc == 0)
    rc = fill_tables(p, seq_lens, &rng);
  if (rc != 0) {
    synth_problem_free(p);
    return rc;
  }
  uq_dtype dt = p->shape.q_dtype;
  size_t rows = (size_t)(p->num_tokens * p->shape.num_kv_heads *
                         p->shape.head_dim);
  for (size_t i = 0; i < rows; i++) {
    p->k[i] = to_half(dt, synth_rng_normal(&rng));
    p->v[i] = to_half(dt, synth_rng_normal(&rng));
  }
  if (p->opts.k_ramp != 0.0)
    ramp_keys(p);
  if (p->opts.v_spread != 0)
    spread_values(p, &rng);
  /* The whole query buffer is random: the k/v parts of a fused projection
   * and the gaps of a strided one must simply be ignored. */
  for (size_t i = 0; i < p->query_elems; i++)
    p->query[i] = to_half(dt, synth_rng_normal(&rng));
  if (p->opts.nan_gaps && (rc = nan_gaps(p)) != 0) {
    synth_problem_free(p);
    return rc;
  }
  return 0;
}

uq_store_args synth_problem_store_args(const synth_problem *p, const void *k,
                                       const void *v, const int64_t *map,
                                       void *cache) {
  uq_store_args a;
  memset(&a, 0, sizeof a);
  a.k = k ? k : p->k;
  a.v = v ? v : p->v;
  a.slot_mapping = map ? map : p->slot_mapping;
  a.num_tokens = p->num_tokens;
  a.kv_cache = cache;
  a.num_blocks = p->num_blocks;
  a.block_size = p->shape.block_size;
  a.num_kv_heads = p->shape.num_kv_heads;
  a.head_dim = p->shape.head_dim;
  a.padded_slot = p->shape.padded_slot;
  a.dtype = p->shape.q_dtype;
  return a;
}

int synth_problem_store(synth_problem *p) {
  free(p->cache);
  p->cache = calloc(p->cache_bytes ? p->cache_bytes : 1, 1);
  if (p->cache == NULL)
    return UQ_ENOMEM;
  if (p->opts.garbage) {
    /* Stale bytes everywhere, scale bytes of 255 included, from a stream
     * of their own so that the rows stay those of the seed. */
    synth_rng junk;
    synth_rng_seed(&junk, p->opts.seed ^ 0x9e3779b97f4a7c15ull);
    for (size_t i = 0; i < p->cache_bytes; i++)
      p->cache[i] = (uint8_t)synth_rng_u32(&junk);
  }
  uq_store_args a = synth_problem_store_args(p, NULL, NULL, NULL, p->cache);
  return uq_reference_store(&a);
}

uq_decode_args synth_problem_decode_args(const synth_problem *p, void *out) {
  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = p->query;
  a.kv_cache = p->cache;
  a.num_blocks = p->num_blocks;
  a.block_table = p->block_table;
  a.seq_lens = p->seq_lens;
  a.out = out;
  return a;
}
