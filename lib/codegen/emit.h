/* Source emission: key + compile route -> HIP/CUDA source. A pure function of
 * its inputs (never touches the cache or the table), which is what makes the
 * content hash honest. */
#ifndef UQ_EMIT_H
#define UQ_EMIT_H

#include "lib/base/buf.h"
#include "uqjit.h"

/* How a source will be compiled: each route has its own prelude. */
typedef enum {
  UQ__ROUTE_NVRTC = 1,  /* NVIDIA: NVRTC (HIP's NVIDIA platform) */
  UQ__ROUTE_HIPRTC = 2, /* AMD: hipRTC with HIP headers */
  UQ__ROUTE_CLANG = 3   /* AMD: offline clang -nogpulib -nogpuinc */
} uq__route;

const char *uq__route_name(uq__route route);

/* Appends the full source of `key` for `route` to `out` (sticky errors in
 * out->status). Returns 0 or a UQ_E* status (invalid key, route that cannot
 * serve the key's target). */
int uq__gen_source(const uq_key *key, uq__route route, uq__buf *out);

/* The kernel's symbol in the code object: uq_key_name with '+' spelled
 * 'P', '-' spelled 'M' and every other character outside [A-Za-z0-9_]
 * spelled '_' (so target features stay distinct). Writes at most n bytes
 * (NUL included); returns the length needed like snprintf, or a negative
 * UQ_E* status for an invalid key. */
int uq__gen_symbol(const uq_key *key, char *buf, size_t n);

/* Threads per block the generated kernel expects (its launch contract):
 * decode: uq__target_block_threads (64 on AMD, 128 on NVIDIA);
 * reduce: 256 (grid (B, Hq, ceil(D/64)): 16 partition lanes x 16 groups
 * of 4 of the block's 64 output elements);
 * prologue: D clamped to [64, 256] (grid (B, Hq, 1));
 * store: D, one thread per element (grid (num_tokens, Hk, 1)).
 * Block shape (n, 1, 1); no dynamic shared memory. 0 for an invalid key. */
unsigned uq__gen_block_threads(const uq_key *key);

/* The embedded text of a template file (its base name, e.g. "decode.hip")
 * and its length, or NULL when there is no such template. */
const char *uq__template_text(const char *name, size_t *len);

#endif
