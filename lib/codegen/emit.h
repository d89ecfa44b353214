/* Source emission: key + compile route -> HIP/CUDA source. A pure function of
 * its inputs (never touches the cache or the table), which is what makes the
 * content hash honest. */
#ifndef UQ_EMIT_H
#define UQ_EMIT_H

#include "lib/base/buf.h"
#include "lib/codegen/key.h"
#include "uqjit.h"

/* How a source will be compiled: each route has its own prelude. */
typedef enum {
  UQ__ROUTE_NVRTC = 1,  /* NVIDIA: NVRTC (HIP's NVIDIA platform) */
  UQ__ROUTE_HIPRTC = 2, /* AMD: hipRTC with HIP headers */
  UQ__ROUTE_CLANG = 3   /* AMD: offline clang -nogpulib -nogpuinc */
} uq__route;

const char *uq__route_name(uq__route route);

/* Appends the full source of the checked key for `route` to `out` (sticky
 * errors in out->status). Returns 0 or a UQ_E* status (a route that cannot
 * compile for the key's target, a template missing). */
int uq__gen_emit(const uq__checked_key *ck, uq__route route, uq__buf *out);

/* uq__key_check, then uq__gen_emit: for callers holding a plain key. */
int uq__gen_source(const uq_key *key, uq__route route, uq__buf *out);

/* The kernel's symbol in the code object: the key's name with '+' spelled
 * 'P', '-' spelled 'M' and every other character outside [A-Za-z0-9_]
 * spelled '_' (so target features stay distinct). Writes at most n bytes
 * (NUL included); returns the length needed like snprintf. */
int uq__gen_symbol_of(const uq__checked_key *ck, char *buf, size_t n);

/* uq__key_check, then uq__gen_symbol_of; a negative UQ_E* status for a key
 * the generator refuses. */
int uq__gen_symbol(const uq_key *key, char *buf, size_t n);

/* Threads per block the generated kernel expects (its launch contract):
 * decode: uq__layer_block_threads (64 on AMD, 128 on NVIDIA, or the
 * layer's own);
 * reduce: 256 (grid (B, Hq, ceil(D/64)): 16 partition lanes x 16 groups
 * of 4 of the block's 64 output elements);
 * prologue: D clamped to [64, 256] (grid (B, Hq, 1));
 * store: D, one thread per element (grid (num_tokens, Hk, 1)).
 * Block shape (n, 1, 1); no dynamic shared memory. */
unsigned uq__gen_threads_of(const uq__checked_key *ck);

/* uq__key_check, then uq__gen_threads_of; 0 for a key the generator
 * refuses. */
unsigned uq__gen_block_threads(const uq_key *key);

/* The embedded text of a template file (its base name, e.g. "decode.hip")
 * and its length, or NULL when there is no such template. */
const char *uq__template_text(const char *name, size_t *len);

#endif
