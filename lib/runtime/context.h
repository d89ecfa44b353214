/* The context: target, on-disk cache, specialization table and (lazily) the
 * device. Shared by the runtime's modules (context, jit, launch, device). */
#ifndef UQ_CONTEXT_H
#define UQ_CONTEXT_H

#include <pthread.h>
#include <stdint.h>

#include "lib/cache/cache.h"
#include "lib/codegen/target.h"
#include "lib/gpu/platform.h"
#include "lib/runtime/table.h"
#include "uqjit.h"

struct uq_context {
  char target[UQ_TARGET_MAX]; /* canonical */
  uq__target_info tinfo;
  int variant;                /* the layer asked for (uq__plan_requested),
                               * fixed at creation */
  int device;                 /* -1: compile only */
  uint64_t id;                /* unique per process, never reused */
  uq__cache *cache;           /* NULL when use_disk_cache = 0 */
  uq__table *table;
  /* The device, opened at most once (dev_state: 0 not yet, 1 open,
   * < 0 the failure status, replayed with dev_detail). */
  pthread_mutex_t dev_mutex;
  int dev_state; /* atomic */
  const uq__platform *pf;
  uq__pdev *dev;
  char dev_detail[512];
};

/* The context's device, opened on first use; UQ_ENODEV for a compile-only
 * context. Does not make it current. */
int uq__context_device(uq_context *ctx, const uq__platform **pf,
                       uq__pdev **dev);

/* Copies a key into a zeroed one: table keys are compared and hashed as
 * bytes, so garbage after the target string's NUL must not make two equal
 * keys differ. */
void uq__context_key_copy(uq_key *dst, const uq_key *src);

/* The code-object entry of a key (device -1 in the table): compiled or
 * read from the disk cache once, then a memory hit. `count` as in
 * uq__table_lookup. */
int uq__context_object(uq_context *ctx, const uq_key *key, int count,
                       uq__entry **entry, int *was_hit);

/* The loaded kernel of a key on the context's device (the device must be
 * open). Hot path on a hit: no lock, no allocation. */
static inline int uq__context_kernel(uq_context *ctx, const uq_key *key,
                                     uq__entry **entry) {
  return uq__table_lookup(ctx->table, key, ctx->device, 1, entry, NULL);
}

#endif
