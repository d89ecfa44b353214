/* Disk-hit load time of the code-object cache: the median of many
 * uq__cache_get calls for one ~50 KB entry (a typical code object), from a
 * warm page cache. Not a test; for docs/BENCHMARKS.md.
 *
 *   build/bench/bench_cache [bytes] [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/cache/cache.h"
#include "tests/support/internal/cache_util.h"
#include "lib/base/alloc.h"
#include "uqjit.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 50000;
  int iters = argc > 2 ? atoi(argv[2]) : 2000;
  if (iters < 1)
    iters = 1;
  char root[PATH_MAX];
  cu_mkdtemp(root);
  uq__cache *c = NULL;
  if (uq__cache_open(root, "", &c) != 0)
    return 1;
  uq__digest k;
  cu_key(1, &k);
  uint8_t *p = cu_payload(1, bytes);
  double t0 = now_us();
  if (uq__cache_put(c, "gfx950:sramecc+:xnack-", &k, NULL, p, bytes) != 0)
    return 1;
  double put_us = now_us() - t0;
  double *t = malloc(sizeof *t * (size_t)iters);
  for (int i = 0; i < iters; i++) {
    void *got = NULL;
    size_t len = 0;
    double a = now_us();
    int rc = uq__cache_get(c, "gfx950:sramecc+:xnack-", &k, &got, &len);
    t[i] = now_us() - a;
    if (rc != 0 || len != bytes || memcmp(got, p, len) != 0)
      return 1;
    uq__free(got);
  }
  qsort(t, (size_t)iters, sizeof *t, cmp_double);
  printf("cache disk hit, %zu-byte payload: median %.1f us, p10 %.1f us, "
         "p90 %.1f us over %d gets (one put incl. fsync: %.1f us)\n",
         bytes, t[iters / 2], t[iters / 10], t[iters * 9 / 10], iters, put_us);
  uq__cache_close(c);
  cu_rm_rf(root);
  free(t);
  free(p);
  return 0;
}
