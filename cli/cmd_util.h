/* Helpers shared by the dump, warm, cache, info, demo and bench commands:
 * list and size parsing, a monotonic clock, a seeded random source, and the
 * synthetic decode problem (K/V rows, block tables, encoded caches) that
 * demo and bench build. Uses only uqjit.h. */
#ifndef CLI_CMD_UTIL_H
#define CLI_CMD_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

/* "1,2,4": at most `cap` integers in [min, max]. Usage error printed and -1
 * returned when malformed. */
int cli_parse_list(const char *cmd, const char *flag, const char *text,
                       int64_t min, int64_t max, int64_t *out, size_t cap,
                       size_t *n);
/* "1048576", "512K", "64M", "2G" (powers of 1024). -1 when malformed. */
int cli_parse_size(const char *cmd, const char *flag, const char *text,
                       uint64_t *out);

/* Seconds on the monotonic clock. */
double cli_now(void);

/* splitmix64: small, seedable, the same on every machine. */
typedef struct cli_rng {
  uint64_t state;
} cli_rng;
void cli_rng_seed(cli_rng *r, uint64_t seed);
uint64_t cli_rng_next(cli_rng *r);
/* Standard normal (Box-Muller). */
double cli_rng_normal(cli_rng *r);

/* Elements a query buffer of `shape` spans (its strides honoured). */
size_t cli_query_elems(const uq_shape *shape);

/* A synthetic decode problem on the host: K/V rows for every token of every
 * sequence, stored through a shuffled block table. All buffers owned here
 * (cli_problem_free). */
typedef struct cli_problem {
  uq_shape shape;          /* resolved: padded_slot filled in */
  int32_t *seq_lens;       /* [B] */
  int32_t *block_table;    /* [B, max_blocks_per_seq]; unused entries 0 */
  int64_t num_blocks;      /* blocks the cache holds */
  int64_t num_tokens;      /* sum of seq_lens: rows of k and v */
  int64_t *slot_mapping;   /* [num_tokens] */
  uint16_t *k, *v;         /* [num_tokens, Hk, D] of shape.q_dtype */
  uint16_t *query;         /* cli_query_elems(shape) elements */
  size_t query_elems;
  size_t cache_bytes;      /* num_blocks * block_size * Hk * padded_slot */
} cli_problem;

/* Builds the problem for `shape` and seq_lens[B] (each in 1..W) with
 * normal(0,1) rows from `seed`. UQ_* status on failure (message set by
 * the library or printed by the caller). */
int cli_problem_make(cli_problem *p, const uq_shape *shape,
                         const int32_t *seq_lens, uint64_t seed);
void cli_problem_free(cli_problem *p);

/* Relative L2 error of `out` (q_dtype, contiguous [n]) against ref[n];
 * also raises *max_abs and counts non-finite outputs in *bad. */
double cli_rel_l2(uq_dtype dtype, const uint16_t *out, const double *ref,
                      size_t n, double *max_abs, size_t *bad);

/* A context that only compiles (no device) for `target`, caching under
 * `cache_dir` (NULL: the default). UQ_* status from uq_context_create. */
int cli_compile_context(const char *target, const char *cache_dir,
                            uq_context **out);

/* "1.50 GiB" style, into buf. */
const char *cli_bytes(uint64_t bytes, char *buf, size_t n);

#endif
