/* The store cases: rows with NaN/Inf, huge and tiny values, K and V
 * interleaved in one buffer, shuffled slots with skipped and out-of-range
 * ones, encoded by a backend (the GPU, gpu_store.c; the CPU model of the
 * kernels, host_store.c) and compared byte for byte with the CPU encoder
 * (uq_reference_store), padding bytes included. */
#ifndef UQ_TEST_STORE_CASES_H
#define UQ_TEST_STORE_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "tests/support/testkit.h"
#include "uqjit.h"

typedef struct store_job {
  /* Host buffers: k and v point into kv; kv_cache is the CPU encoder's
   * output, which the runner must not write. */
  const uq_store_args *args;
  const void *kv;
  size_t kv_bytes;
  size_t cache_bytes;
} store_job;

/* Runs the store of job into `got` (cache_bytes, all 0xA5 on entry),
 * complete on return. 0 or a status. */
typedef int (*store_runner)(const store_job *job, uint8_t *got);

/* One case: dtype, head_dim, kv heads, block size, tokens, seed. */
void store_case(store_runner run, uq_dtype dt, int hd, int hk, int bs,
                int T, uint64_t seed);
/* bf16/fp16/fp32 at D 256, bf16 at D 128, fp16 at D 64 (every head dim a
 * layer serves); 1 to 4 kv heads; blocks of 16 to 256; 150 to 777
 * tokens. */
void store_cases_all(store_runner run);

#endif
