/* `uqjit bench --fill served`: a KV cache written the way a serving
 * engine writes it. Every token's K and V rows are their own data, encoded
 * on the device by uq_store (the kernel a served model's store step runs)
 * into blocks drawn at random from a pool larger than the batch needs;
 * the rest of the pool, and the slots past each sequence's end, hold
 * stale bytes that the decode must never read.
 *
 * The values follow what served models' activations look like rather
 * than unit normals, because the data decides which path a kernel takes
 * (a cache of N(0, 1) rows never has a V group over 12 in magnitude,
 * which served V rows often have):
 *  - K: N(0, 1) times a fixed magnitude per kv head and channel,
 *    2^(0.75 N(0, 1)), the spread of outlier channels;
 *  - V: N(0, 1) times a magnitude per token and kv head, 2^e with e
 *    uniform in -3..3.
 * Rows are cut at random offsets from one table of normals, so filling
 * gigabytes costs copies, not random draws. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "synth/synth.h"
#include "uqjit_tools.h"

#define NORMALS (1u << 20) /* a power of two: offsets wrap with a mask */
#define FILL_TOKENS 8192   /* tokens encoded per uq_store call */
#define STALE_BYTE 0xA5    /* codes and scale bytes (2^38) never written */

/* Blocks of one cache copy: the batch's share and a quarter more, never
 * used by it (a served pool holds other requests' blocks). */
int64_t cli_bench_pool_blocks(int64_t used) { return used + used / 4 + 1; }

typedef struct fill_rows {
  float *normals;   /* NORMALS unit normals */
  float *kchan;     /* [Hk, D] channel magnitudes of K */
  uint16_t *k, *v;  /* [FILL_TOKENS, Hk, D] bf16 */
  int64_t *slots;   /* [FILL_TOKENS] */
} fill_rows;

static void fill_rows_free(fill_rows *f) {
  free(f->normals);
  free(f->kchan);
  free(f->k);
  free(f->v);
  free(f->slots);
}

static int fill_rows_make(fill_rows *f, int hk, int d, synth_rng *rng) {
  memset(f, 0, sizeof *f);
  size_t row = (size_t)hk * (size_t)d;
  f->normals = malloc(NORMALS * sizeof *f->normals);
  f->kchan = malloc(row * sizeof *f->kchan);
  f->k = malloc(FILL_TOKENS * row * sizeof *f->k);
  f->v = malloc(FILL_TOKENS * row * sizeof *f->v);
  f->slots = malloc(FILL_TOKENS * sizeof *f->slots);
  if (!f->normals || !f->kchan || !f->k || !f->v || !f->slots)
    return UQ_ENOMEM;
  synth_fill_normal_f32(rng, f->normals, NORMALS, 1.0);
  for (size_t i = 0; i < row; i++)
    f->kchan[i] = (float)exp2(0.75 * synth_rng_normal(rng));
  return 0;
}

/* fp32 -> bf16, rounded to nearest even (finite inputs): inline, since
 * filling calls it for every element of gigabytes of rows. */
static inline uint16_t to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Token i of the staging rows: K and V of every kv head. */
static void fill_token(fill_rows *f, size_t i, int hk, int d, synth_rng *rng) {
  for (int h = 0; h < hk; h++) {
    size_t at = (i * (size_t)hk + (size_t)h) * (size_t)d;
    uint32_t ok = (uint32_t)synth_rng_u64(rng);
    uint32_t ov = (uint32_t)synth_rng_u64(rng);
    float vmag = ldexpf(1.0f, (int)synth_rng_below(rng, 7) - 3);
    const float *kc = f->kchan + (size_t)h * (size_t)d;
    for (int j = 0; j < d; j++) {
      f->k[at + (size_t)j] =
          to_bf16(f->normals[(ok + (uint32_t)j) & (NORMALS - 1)] * kc[j]);
      f->v[at + (size_t)j] =
          to_bf16(f->normals[(ov + (uint32_t)j) & (NORMALS - 1)] * vmag);
    }
  }
}

/* Encodes FILL_TOKENS-token batches of every sequence's tokens below
 * b->seq into copy 0 of the cache. */
static int store_batches(uq_context *ctx, cli_bench_shape *b, fill_rows *f,
                         void *dk, void *dv, void *dslots, synth_rng *rng) {
  const uq_shape *s = &b->shape;
  int hk = s->num_kv_heads, d = s->head_dim;
  size_t row_bytes = (size_t)hk * (size_t)d * 2u;
  int64_t total = (int64_t)s->batch * b->seq, done = 0;
  int rc = 0;
  while (rc == 0 && done < total) {
    int64_t n = total - done < FILL_TOKENS ? total - done : FILL_TOKENS;
    for (int64_t i = 0; i < n; i++) {
      int64_t seq = (done + i) / b->seq, t = (done + i) % b->seq;
      int64_t blk = b->base_table[seq * s->max_blocks_per_seq + t / s->block_size];
      f->slots[i] = blk * s->block_size + t % s->block_size;
      fill_token(f, (size_t)i, hk, d, rng);
    }
    uq_store_args a;
    memset(&a, 0, sizeof a);
    a.k = dk;
    a.v = dv;
    a.slot_mapping = dslots;
    a.num_tokens = n;
    a.kv_cache = b->cache;
    a.num_blocks = b->blocks_per_copy;
    a.block_size = s->block_size;
    a.num_kv_heads = hk;
    a.head_dim = d;
    a.padded_slot = b->plan.padded_slot;
    a.dtype = UQ_DTYPE_BF16;
    /* The copies are synchronous, so the staging buffers are free again
     * when the next batch is written into them. */
    if ((rc = uq_memcpy_h2d(ctx, dk, f->k, (size_t)n * row_bytes)) != 0 ||
        (rc = uq_memcpy_h2d(ctx, dv, f->v, (size_t)n * row_bytes)) != 0 ||
        (rc = uq_memcpy_h2d(ctx, dslots, f->slots, (size_t)n * 8u)) != 0 ||
        (rc = uq_store(ctx, &a, NULL)) != 0 || (rc = uq_synchronize(ctx)) != 0)
      break;
    done += n;
  }
  return rc;
}

int cli_bench_fill_served(uq_context *ctx, cli_bench_shape *b, synth_rng *rng) {
  const uq_shape *s = &b->shape;
  uint64_t copy_bytes = (uint64_t)b->blocks_per_copy * (uint64_t)s->block_size *
                        (uint64_t)s->num_kv_heads * (uint64_t)b->plan.padded_slot;
  size_t row_bytes = (size_t)s->num_kv_heads * (size_t)s->head_dim * 2u;
  fill_rows f;
  void *dk = NULL, *dv = NULL, *dslots = NULL;
  int rc = fill_rows_make(&f, s->num_kv_heads, s->head_dim, rng);
  if (rc == 0)
    rc = uq_memset_d8(ctx, b->cache, STALE_BYTE, copy_bytes);
  if (rc == 0 && (rc = uq_device_alloc(ctx, FILL_TOKENS * row_bytes, &dk)) == 0 &&
      (rc = uq_device_alloc(ctx, FILL_TOKENS * row_bytes, &dv)) == 0 &&
      (rc = uq_device_alloc(ctx, FILL_TOKENS * 8u, &dslots)) == 0)
    rc = store_batches(ctx, b, &f, dk, dv, dslots, rng);
  uq_device_free(ctx, dk);
  uq_device_free(ctx, dv);
  uq_device_free(ctx, dslots);
  fill_rows_free(&f);
  return rc;
}

int cli_bench_gather(uq_context *ctx, const cli_bench_shape *b, int nseq,
                     uint8_t **cache, int32_t *table) {
  const uq_shape *s = &b->shape;
  int64_t mb = s->max_blocks_per_seq;
  size_t bb = (size_t)s->block_size * (size_t)s->num_kv_heads * (size_t)b->plan.padded_slot;
  size_t n = (size_t)nseq * (size_t)mb;
  uint8_t *host = malloc(n * bb);
  int rc = host ? 0 : UQ_ENOMEM;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const uint8_t *src = (const uint8_t *)b->cache + (size_t)b->base_table[i] * bb;
    rc = uq_memcpy_d2h(ctx, host + i * bb, src, bb);
    table[i] = (int32_t)i;
  }
  if (rc != 0) {
    free(host);
    host = NULL;
  }
  *cache = host;
  return rc;
}
