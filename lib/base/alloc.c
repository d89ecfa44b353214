#include "lib/base/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uqjit.h"

/* A process-wide atomic: allocation happens on compile worker threads
 * too. */
static long fail_countdown = -1;
/* Successful allocations and frees of non-NULL pointers, for tests that
 * check a failing call released everything it took. */
static long n_allocs, n_frees, n_failed;

static void *counted(void *p) {
  if (p != NULL)
    __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
  return p;
}

static int should_fail(void) {
  long c = __atomic_load_n(&fail_countdown, __ATOMIC_RELAXED);
  if (c < 0)
    return 0;
  if (c == 0) {
    __atomic_add_fetch(&n_failed, 1, __ATOMIC_RELAXED);
    return 1;
  }
  __atomic_sub_fetch(&fail_countdown, 1, __ATOMIC_RELAXED);
  return 0;
}

void uq__alloc_fail_after(long countdown) {
  __atomic_store_n(&fail_countdown, countdown, __ATOMIC_RELAXED);
}

void uq__alloc_counts(long *allocs, long *frees, long *failed) {
  *allocs = __atomic_load_n(&n_allocs, __ATOMIC_RELAXED);
  *frees = __atomic_load_n(&n_frees, __ATOMIC_RELAXED);
  *failed = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
}

void *uq__malloc(size_t n) {
  if (should_fail())
    return NULL;
  return counted(malloc(n ? n : 1));
}

void *uq__calloc(size_t count, size_t size) {
  if (should_fail())
    return NULL;
  return counted(calloc(count ? count : 1, size ? size : 1));
}

void *uq__realloc(void *p, size_t n) {
  if (p == NULL)
    return uq__malloc(n);
  if (should_fail())
    return NULL;
  return realloc(p, n ? n : 1);
}

void uq__free(void *p) {
  if (p != NULL)
    __atomic_add_fetch(&n_frees, 1, __ATOMIC_RELAXED);
  free(p);
}

char *uq__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = uq__malloc(n);
  if (d != NULL)
    memcpy(d, s, n);
  return d;
}

size_t uq__mul_size(size_t count, size_t size, int *overflow) {
  if (size != 0 && count > SIZE_MAX / size) {
    *overflow = 1;
    return 0;
  }
  return count * size;
}

void uq_free(void *ptr) { uq__free(ptr); }
