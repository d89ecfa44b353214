/* The GPU side of `uqjit bench`: one shape's buffers (rotated KV caches
 * and block tables), its correctness check and its timings. */
#ifndef CLI_BENCH_H
#define CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

/* How the cache is filled: served (every token its own data through
 * uq_store, blocks scattered over a larger pool, stale bytes elsewhere;
 * bench_fill.c) or pool (copies of a small pool of blocks encoded on the
 * host from unit normals: fast to set up, but data no served model
 * writes). */
typedef enum cli_bench_fill { CLI_FILL_SERVED = 0, CLI_FILL_POOL = 1 } cli_bench_fill;

typedef struct cli_bench_opts {
  int iters, warmup;
  int graph;             /* 1 on, 0 off, -1 auto (small shapes) */
  int chain;             /* steps per graph for the chained time (0: none) */
  uint64_t rotate_bytes; /* KV bytes touched between reuses of one cache */
  uint64_t max_mem;      /* device memory cap for one shape */
  int check_seqs;        /* sequences checked against the reference (0: none) */
  uint64_t seed;
  const char *variant;   /* the decode layer (--variant), or NULL */
  cli_bench_fill fill;
} cli_bench_opts;

/* One shape's buffers on the device. */
typedef struct cli_bench_shape {
  uq_shape shape;
  uq_plan plan;
  int32_t seq;            /* every sequence's length */
  cli_bench_fill fill;
  int64_t blocks_per_copy; /* blocks of one cache copy (served: more than the batch uses) */
  int rotations;          /* KV cache copies (each with its block table) */
  void *cache, *tables, *seq_lens, *query, *out, *workspace;
  /* Host side (pool fill): the pool every device block repeats; the
   * base table (both fills). */
  uint8_t *pool;
  int64_t pool_blocks;
  int32_t *base_table;    /* [B, max_blocks_per_seq] into [0, blocks_per_copy) */
  uint16_t *host_query;
} cli_bench_shape;

typedef struct cli_bench_result {
  int skipped;
  char note[160];
  double eager_us, graph_us; /* medians; < 0 when not measured */
  double chain_us;           /* per step in a graph of opts.chain steps */
  double rel_l2;             /* < 0 when not checked */
  size_t nonfinite;
  uint64_t kv_bytes, io_bytes, ws_bytes, device_bytes;
} cli_bench_result;

/* Device bytes one shape with `rotations` copies needs. */
uint64_t cli_bench_bytes(const uq_shape *s, const uq_plan *p, int rotations,
                         cli_bench_fill fill);
/* Allocates and fills buffers. UQ_* status (library error set); on failure
 * the caller reports, then calls cli_bench_teardown (which clears it). */
int cli_bench_setup(uq_context *ctx, cli_bench_shape *b, const uq_shape *s,
                   const uq_plan *plan, int32_t seq, int rotations,
                   uint64_t seed, cli_bench_fill fill);
void cli_bench_teardown(uq_context *ctx, cli_bench_shape *b);
/* The decode arguments of rotation r. */
void cli_bench_args(const cli_bench_shape *b, int r, uq_decode_args *a);
/* Decodes rotation 0 once (loading the kernels) and compares the first
 * `nseq` sequences (0: none) with the double-precision reference. */
int cli_bench_check(uq_context *ctx, cli_bench_shape *b, int nseq,
                   double *rel_l2, size_t *nonfinite);
/* Median device time of one decode step in microseconds, events around
 * each of --iters calls after --warmup: graph_steps 0 times eager calls;
 * graph_steps >= 1 replays captured graphs of that many consecutive steps
 * (each on the next rotation) and divides by it. One step per graph pays
 * a graph launch every step; many per graph give a step's cost inside a
 * larger graph, a model's decode graph, as triton.testing's
 * do_bench_cudagraph measures it. */
int cli_bench_time(uq_context *ctx, void *stream, cli_bench_shape *b,
                  const cli_bench_opts *o, int graph_steps, double *median_us);

double cli_bench_median(double *v, size_t n);

/* bench_fill.c. Blocks of one served cache copy whose batch uses `used`. */
int64_t cli_bench_pool_blocks(int64_t used);
struct synth_rng;
/* Fills copy 0 of b->cache the served way (b->base_table set). */
int cli_bench_fill_served(uq_context *ctx, cli_bench_shape *b,
                          struct synth_rng *rng);
/* The blocks of the first nseq sequences (copy 0) on the host, in table
 * order: *cache (the caller frees) and table[nseq * max_blocks_per_seq]. */
int cli_bench_gather(uq_context *ctx, const cli_bench_shape *b, int nseq,
                     uint8_t **cache, int32_t *table);


#endif
