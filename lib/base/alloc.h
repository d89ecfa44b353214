/* All internal allocation goes through these, so that tests can inject
 * failures (see tests/unit_cache.c). */
#ifndef UQ_ALLOC_H
#define UQ_ALLOC_H

#include <stddef.h>

void *uq__malloc(size_t n);
void *uq__calloc(size_t count, size_t size);
void *uq__realloc(void *p, size_t n);
void uq__free(void *p);
char *uq__strdup(const char *s);
/* Overflow-checked count * size; 0 on overflow (callers treat as ENOMEM). */
size_t uq__mul_size(size_t count, size_t size, int *overflow);

/* Test hook: after `countdown` more successful allocations, every
 * allocation fails (countdown < 0 disables). */
void uq__alloc_fail_after(long countdown);
/* Test hook: successful allocations, frees of non-NULL pointers and
 * allocations failed by uq__alloc_fail_after so far in this process
 * (realloc of a live block counts as neither). */
void uq__alloc_counts(long *allocs, long *frees, long *failed);

#endif
