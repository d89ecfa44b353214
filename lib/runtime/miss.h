/* The hint of a miss with the JIT off (lib/runtime/miss.c). */
#ifndef UQ_MISS_H
#define UQ_MISS_H

#include <stddef.h>

#include "uqjit.h"

#define UQ__MISS_NAME_MAX 512
#define UQ__MISS_LAYER_MAX 4096

/* Into buf: "; the nearest cached kernel of this kind, NAME (in LAYER),
 * was warmed for max_blocks_per_seq 2048, this call needs
 * max_blocks_per_seq 512", naming the key fields (and the target) in
 * which the nearest valid entry of the same kind and architecture, in the
 * layers of a context with cache directory `dir` (uq_cache_layers), differs
 * from `key`; "" when the layers hold none. Clears the error detail: call
 * it before recording the miss. */
void uq__miss_hint(const char *dir, const uq_key *key, char *buf, size_t n);

#endif
