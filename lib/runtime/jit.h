/* The JIT step: source -> digest -> disk cache or compiler. */
#ifndef UQ_JIT_H
#define UQ_JIT_H

#include "lib/codegen/key.h"
#include "lib/runtime/context.h"

/* The digest that names a checked key's kernel in the disk cache, and its
 * symbol: XXH3-128 over the cache format version, target, symbol and the
 * source generated for the target family's canonical route (NVRTC for
 * NVIDIA, offline clang for AMD), so no compiler is loaded to find it.
 * 0 or a UQ_E* status. */
int uq__jit_kernel_digest(const uq__checked_key *ck, char *symbol, size_t n,
                          uq__digest *out);

/* Builds the code-object entry `e` (device -1 in the table) of e->key,
 * checked once (uq__key_check) and then passed down as checked:
 * looks the kernel's digest up in the context's disk cache, preferring the
 * entry of the compiler this process would use (none is loaded when
 * UQJIT_DISABLE_JIT is set: any valid entry serves); on a miss, unless
 * UQJIT_DISABLE_JIT is set, compiles the source for that compiler's route
 * and publishes the result with its provenance. Fills e->object (owned by
 * the entry), e->symbol, e->block_threads, e->compiler and e->from_disk. */
int uq__jit_object(uq_context *ctx, uq__entry *e);

#endif
