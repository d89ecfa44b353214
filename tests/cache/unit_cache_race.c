/* Concurrent writers and readers of one cache: processes racing to publish
 * the same entries, and threads sharing one uq__cache. */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/cache/cache.h"
#include "tests/support/internal/cache_util.h"
#include "lib/base/alloc.h"
#include "uqjit.h"

#define T "gfx942:sramecc+:xnack-"
#define NPROC 16
#define NKEYS 12

static size_t payload_size(int i) { return 2000 + 1500 * (size_t)i; }

/* One racer: put every key (in an order of its own), then read each back. */
static int racer(const char *dir, int who) {
  uq__cache *c = NULL;
  if (uq__cache_open(dir, "", &c) != 0)
    return 10;
  int rc = 0;
  for (int j = 0; j < NKEYS && rc == 0; j++) {
    int i = (j + who) % NKEYS;
    uq__digest k;
    cu_key(i, &k);
    uint8_t *p = cu_payload((unsigned)i, payload_size(i));
    void *got = NULL;
    size_t len = 0;
    int g = uq__cache_get(c, T, &k, &got, &len);
    if (g == 0 && (len != payload_size(i) || memcmp(got, p, len) != 0))
      rc = 11; /* a reader saw a wrong or partial entry */
    else if (g != 0 && g != UQ_ENOENT)
      rc = 12;
    else if (uq__cache_put(c, T, &k, NULL, p, payload_size(i)) != 0)
      rc = 13;
    uq__free(got);
    free(p);
  }
  for (int i = 0; i < NKEYS && rc == 0; i++) {
    uq__digest k;
    cu_key(i, &k);
    uint8_t *p = cu_payload((unsigned)i, payload_size(i));
    void *got = NULL;
    size_t len = 0;
    if (uq__cache_get(c, T, &k, &got, &len) != 0 || len != payload_size(i) ||
        memcmp(got, p, len) != 0)
      rc = 14;
    uq__free(got);
    free(p);
  }
  uq__cache_close(c);
  return rc;
}


static void cache_processes_racing_to_put_same_keys_leave_valid_entries(
    void **state) {
  const char *root = *state;
  pid_t pids[NPROC];
  fflush(NULL);
  for (int w = 0; w < NPROC; w++) {
    pids[w] = fork();
    assert_true(pids[w] >= 0);
    if (pids[w] == 0)
      _exit(racer(root, w));
  }
  for (int w = 0; w < NPROC; w++) {
    int status = 0;
    assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  uint64_t good = 0, bad = 1;
  assert_int_equal(uq_cache_verify(root, &good, &bad), 0);
  assert_int_equal(good, NKEYS);
  assert_int_equal(bad, 0);
  assert_int_equal(cu_count_temps(root), 0);
  assert_int_equal(cu_count_entries(root), NKEYS);
}

typedef struct shared {
  uq__cache *c;
  int who;
  int failures;
} shared;

static void *worker(void *arg) {
  shared *s = arg;
  uint32_t x = 2463534242u + (uint32_t)s->who * 7919u;
  for (int op = 0; op < 150; op++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    int i = (int)(x % NKEYS);
    uq__digest k;
    cu_key(i, &k);
    uint8_t *p = cu_payload((unsigned)i, payload_size(i));
    if (x & 0x100) {
      if (uq__cache_put(s->c, T, &k, NULL, p, payload_size(i)) != 0)
        s->failures++;
    } else {
      void *got = NULL;
      size_t len = 0;
      int rc = uq__cache_get(s->c, T, &k, &got, &len);
      if (rc == 0 && (len != payload_size(i) || memcmp(got, p, len) != 0))
        s->failures++;
      if (rc != 0 && rc != UQ_ENOENT)
        s->failures++;
      uq__free(got);
    }
    free(p);
  }
  return NULL;
}

static void cache_threads_share_one_cache_for_get_and_put(void **state) {
  const char *root = *state;
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(root, "", &c), 0);
  enum { NTHREADS = 8 };
  pthread_t th[NTHREADS];
  shared s[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    s[t] = (shared){c, t, 0};
    assert_int_equal(pthread_create(&th[t], NULL, worker, &s[t]), 0);
  }
  for (int t = 0; t < NTHREADS; t++) {
    assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_int_equal(s[t].failures, 0);
  }
  uq__cache_close(c);
  uint64_t good = 0, bad = 1;
  assert_int_equal(uq_cache_verify(root, &good, &bad), 0);
  assert_int_equal(bad, 0);
  assert_true(good > 0 && good <= NKEYS);
  assert_int_equal(cu_count_temps(root), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          cache_processes_racing_to_put_same_keys_leave_valid_entries, cu_setup_tmpdir,
          cu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(
          cache_threads_share_one_cache_for_get_and_put, cu_setup_tmpdir, cu_teardown_tmpdir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
