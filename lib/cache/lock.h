/* Cross-process single flight over the writable cache (lock.c): a lock per
 * kernel, taken around its compile and publish, so that processes and
 * threads sharing a cache compile each kernel once. */
#ifndef UQ_CACHE_LOCK_H
#define UQ_CACHE_LOCK_H

#include "lib/cache/cache.h"

/* How long a compile waits for another holder of its kernel's lock before
 * compiling anyway (a hung compiler elsewhere costs this much, no more). */
#define UQ__CACHE_LOCK_WAIT_MS 120000

typedef struct uq__cache_flight uq__cache_flight;

/* Takes the lock of kernel `key` of `target` in the writable directory,
 * waiting at most `wait_ms` for a live holder; a holder that died (even by
 * kill -9) never blocks. 0 and *out (released with uq__cache_unlock) when
 * held. Otherwise *out is NULL and the caller goes on unlocked: UQ_ENOENT
 * when there is no usable writable directory, UQ_EIO when the wait ran out
 * or the lock file could not be used, UQ_ENOMEM. Sets no error detail. */
int uq__cache_lock(uq__cache *c, const char *target, const uq__digest *key,
                   int wait_ms, uq__cache_flight **out);
/* Releases and removes the lock file; NULL is ignored. */
void uq__cache_unlock(uq__cache_flight *l);
/* 1 for a lock file's name (".<30 hex>.lock"), which the cache walkers
 * and lookups skip. */
int uq__cache_is_lock_name(const char *name);

#endif
