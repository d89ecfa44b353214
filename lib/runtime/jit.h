/* The JIT step: source -> digest -> disk cache or compiler. */
#ifndef UQ_JIT_H
#define UQ_JIT_H

#include "lib/runtime/context.h"

/* Builds the code-object entry `e` (device -1 in the table) of e->key:
 * generates the source, digests everything that decides the bytes (source,
 * target, compiler identity, options, symbol), then reads the context's
 * disk cache, else compiles (unless UQJIT_DISABLE_JIT is set) and
 * publishes the result. Fills e->object (owned by the entry), e->symbol,
 * e->block_threads and e->from_disk. */
int uq__jit_object(uq_context *ctx, uq__entry *e);

#endif
