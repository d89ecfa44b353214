/* A small client of libuqjit that needs no GPU: plans a decode shape,
 * writes a tiny random paged KV cache with the CPU store, decodes it with
 * the CPU reference and prints one line.
 * Build: cc -std=c11 decode_cpu.c $(pkg-config --cflags --libs uqjit) -lm */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "uqjit.h"

enum { B = 2, HQ = 16, HK = 2, D = 256, BS = 16, NBMAX = 4 };

static uint32_t rng = 12345;

/* A uniform value in [-1, 1) from a 32-bit xorshift. */
static float uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

static int fail(const char *what, int rc) {
  fprintf(stderr, "decode_cpu: %s: %s (%s): %s\n", what, uq_err_name(rc),
          uq_strerror(rc), uq_last_error());
  return 1;
}

/* Encodes every token of every sequence into its slot with the CPU store. */
static int store_cache(uint8_t *cache, const int32_t *table,
                       const int32_t *lens, int padded) {
  int tokens = 0;
  for (int b = 0; b < B; b++)
    tokens += lens[b];
  uint16_t *k = malloc(sizeof *k * (size_t)tokens * HK * D);
  uint16_t *v = malloc(sizeof *v * (size_t)tokens * HK * D);
  int64_t *slots = malloc(sizeof *slots * (size_t)tokens);
  int rc = UQ_ENOMEM;
  if (k && v && slots) {
    for (size_t i = 0; i < (size_t)tokens * HK * D; i++) {
      k[i] = uq_float_to_bf16(uniform());
      v[i] = uq_float_to_bf16(uniform());
    }
    int t = 0;
    for (int b = 0; b < B; b++)
      for (int n = 0; n < lens[b]; n++)
        slots[t++] = (int64_t)table[b * NBMAX + n / BS] * BS + n % BS;
    uq_store_args a = {.k = k, .v = v, .slot_mapping = slots,
                       .num_tokens = tokens, .kv_cache = cache,
                       .num_blocks = B * NBMAX, .block_size = BS,
                       .num_kv_heads = HK, .head_dim = D,
                       .padded_slot = padded, .dtype = UQ_DTYPE_BF16};
    rc = uq_reference_store(&a);
  }
  free(k);
  free(v);
  free(slots);
  return rc;
}

int main(void) {
  uq_shape shape;
  uq_shape_init(&shape);
  shape.batch = B;
  shape.num_q_heads = HQ;
  shape.num_kv_heads = HK;
  shape.head_dim = D;
  shape.block_size = BS;
  shape.max_blocks_per_seq = NBMAX;
  uq_plan plan;
  int rc = uq_plan_make(&shape, "gfx950", &plan);
  if (rc != 0)
    return fail("plan", rc);
  if (!plan.eligible) {
    fprintf(stderr, "decode_cpu: not eligible: %s\n", plan.reason);
    return 1;
  }

  int32_t table[B * NBMAX], lens[B] = {NBMAX * BS, 21};
  for (int i = 0; i < B * NBMAX; i++)
    table[i] = B * NBMAX - 1 - i; /* blocks in reverse order */
  size_t cache_bytes = (size_t)B * NBMAX * BS * HK * plan.padded_slot;
  uint8_t *cache = calloc(cache_bytes, 1);
  uint16_t *query = malloc(sizeof *query * B * HQ * D);
  double *out = malloc(sizeof *out * B * HQ * D);
  if (!cache || !query || !out)
    return fail("allocate", UQ_ENOMEM);
  for (int i = 0; i < B * HQ * D; i++)
    query[i] = uq_float_to_bf16(uniform());
  rc = store_cache(cache, table, lens, plan.padded_slot);
  if (rc != 0)
    return fail("store", rc);

  uq_decode_args args = {.query = query, .kv_cache = cache,
                         .num_blocks = B * NBMAX, .block_table = table,
                         .seq_lens = lens};
  rc = uq_reference_decode_f64(&shape, &args, out);
  if (rc != 0)
    return fail("reference decode", rc);
  double norm = 0.0;
  for (int i = 0; i < B * HQ * D; i++)
    norm += out[i] * out[i];
  printf("uqjit %s: B=%d Hq=%d Hk=%d D=%d: P=%d TGPP=%d workspace %zu "
         "bytes, %d kernels (%s), |out| = %.6f\n",
         uq_version_string(), B, HQ, HK, D, (int)plan.num_partitions,
         (int)plan.tile_groups_per_partition, plan.workspace_bytes,
         (int)plan.num_kernels, plan.fuse_qrot ? "query rotation fused"
                                               : "with prologue",
         sqrt(norm));
  free(cache);
  free(query);
  free(out);
  return isfinite(norm) && norm > 0 ? 0 : 1;
}
