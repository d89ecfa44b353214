/* Source emission: key + compile route -> HIP/CUDA source. A pure function of
 * its inputs (never touches the cache or the table), which is what makes the
 * content hash honest. */
#ifndef UQ_EMIT_H
#define UQ_EMIT_H

#include "../src/buf.h"
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

/* The kernel's symbol in the code object (a valid C identifier derived
 * from uq_key_name). Returns the length needed, like snprintf. */
int uq__gen_symbol(const uq_key *key, char *buf, size_t n);

/* Threads per block the generated kernel expects (its launch contract). */
unsigned uq__gen_block_threads(const uq_key *key);

#endif
