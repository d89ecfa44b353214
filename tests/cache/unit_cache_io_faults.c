/* ENOSPC, EROFS, EACCES and EIO injected into every class of system call
 * the cache makes (open, mkdir, create, write, rename, read: the
 * uq__cache_fault_fn seam) during every cache operation (get, put, list,
 * verify, prune, find). Each must fail or degrade without crashing: put
 * returns a status naming the cause and leaves no temporary file; get and
 * find hand out nothing; nobody removes the valid entry already there
 * because a read or an open failed. After each case, with the fault
 * gone, verify finds that entry good and nothing bad. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/cache/cache.h"
#include "lib/runtime/jit.h"
#include "lib/runtime/table.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

#define T "gfx950"
#define STORE_KEY "uq_store_gfx950_bf16_d256_hk1_ps272"

static const int errnos[] = {ENOSPC, EROFS, EACCES, EIO};
static const char *const op_names[UQ__CACHE_OPS] = {
    "open", "mkdir", "create", "write", "rename", "read"};
/* The fault_nth call of class fault_op fails with fault_errno. */
static int fault_op = -1, fault_errno;
static long fault_nth, calls, faults_hit;

static int inject(uq__cache_op op) {
  if ((int)op != fault_op || ++calls != fault_nth)
    return 0;
  faults_hit++;
  return fault_errno;
}

typedef struct fx {
  char root[PATH_MAX], dir[PATH_MAX];
  uq_key key;
  uq__digest d;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  cu_fmt(f->dir, "%s/cache", f->root);
  assert_int_equal(uq_key_parse(STORE_KEY, &f->key), 0);
  char symbol[UQ__SYMBOL_MAX];
  uq__checked_key ck;
  assert_int_equal(uq__key_check(&f->key, &ck), 0);
  assert_int_equal(uq__jit_kernel_digest(&ck, symbol, sizeof symbol, &f->d),
                   0);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->dir, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, &f->d, NULL, "object", 6), 0);
  uq__cache_close(c);
  uq__cache_fault_fn = inject;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  uq__cache_fault_fn = NULL;
  cu_rm_rf(f->root);
  free(f);
  return 0;
}

static int visit(void *user, const uq_cache_entry *e) {
  (void)e;
  ++*(int *)user;
  return 0;
}

/* One operation under the fault; fails the test on a broken promise. */
static void run_op(fx *f, int op, int cls, const char *what) {
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->dir, "", &c), 0);
  int rc = 0, n = 0;
  uint64_t good = 0, bad = 0, removed = 0, left = 0;
  void *obj = (void *)1;
  size_t len = 1;
  uq__digest other;
  cu_key(7, &other);
  fault_op = cls;
  switch (op) {
  case 0:
    rc = uq__cache_get(c, T, &f->d, &obj, &len);
    if (rc != 0 && (obj != NULL || len != 0))
      fail_msg("%s: a failed get handed out an object", what);
    if (rc == 0 && (len != 6 || memcmp(obj, "object", 6) != 0))
      fail_msg("%s: get returned the wrong object", what);
    free(obj);
    break;
  case 1: {
    long before = faults_hit;
    rc = uq__cache_put(c, T, &other, NULL, "other", 5);
    char path[PATH_MAX];
    cu_entry_path(f->dir, T, &other, path);
    /* A fault the put can live with (a mkdir of a level that exists) may
     * still store the entry; otherwise the cause is named. */
    if (rc == 0 && !cu_exists(path))
      fail_msg("%s: put returned 0 but stored nothing", what);
    if (faults_hit > before && rc != 0) {
      if (strstr(uq_last_error(), strerror(fault_errno)) == NULL)
        fail_msg("%s: put's message does not name the cause: %s", what,
                 uq_last_error());
      if (fault_errno == ENOSPC && rc != UQ_ENOSPC)
        fail_msg("%s: a full disk gave status %d", what, rc);
    }
    break;
  }
  case 2:
    rc = uq_cache_list(f->dir, visit, &n);
    break;
  case 3:
    rc = uq_cache_verify(f->dir, &good, &bad);
    break;
  case 4:
    rc = uq_cache_prune(f->dir, UINT64_MAX, &removed, &left);
    break;
  default:
    rc = uq_cache_find(f->dir, &f->key, visit, &n);
    if (rc != 0 && n != 0)
      fail_msg("%s: a failed find visited an entry", what);
    break;
  }
  fault_op = -1;
  uq__cache_close(c);
  if (rc > 0 || rc < UQ_ENOSPC)
    fail_msg("%s: status %d is not a uqjit status", what, rc);
  if (rc != 0 && uq_last_error()[0] == '\0' && rc != UQ_ENOENT)
    fail_msg("%s: status %d without a message", what, rc);
  /* The fault is gone: the valid entry survived, nothing half-written. */
  assert_int_equal(uq_cache_verify(f->dir, &good, &bad), 0);
  if (bad != 0 || cu_count_temps(f->dir) != 0)
    fail_msg("%s: %llu bad entries, %d temporary files after the fault",
             what, (unsigned long long)bad, cu_count_temps(f->dir));
  void *again = NULL;
  assert_int_equal(uq__cache_open(f->dir, "", &c), 0);
  if (uq__cache_get(c, T, &f->d, &again, &len) != 0)
    fail_msg("%s: the valid entry was lost", what);
  free(again);
  /* Remove what a successful put added, for the next case. */
  char path[PATH_MAX];
  cu_entry_path(f->dir, T, &other, path);
  remove(path);
  uq__cache_close(c);
}

static void every_cache_operation_survives_every_io_fault(void **state) {
  fx *f = *state;
  static const char *const ops[] = {"get",    "put",   "list",
                                    "verify", "prune", "find"};
  int reached[6] = {0};
  /* Each errno at each call of each class that each operation makes. */
  for (size_t e = 0; e < sizeof errnos / sizeof errnos[0]; e++)
    for (int cls = 0; cls < UQ__CACHE_OPS; cls++)
      for (int op = 0; op < 6; op++)
        for (fault_nth = 1;; fault_nth++) {
          char what[160];
          snprintf(what, sizeof what, "%s #%ld during %s failing with %s",
                   op_names[cls], fault_nth, ops[op], strerror(errnos[e]));
          fault_errno = errnos[e];
          long before = faults_hit;
          calls = 0;
          run_op(f, op, cls, what);
          if (faults_hit == before)
            break;
          reached[op]++;
        }
  print_message("%ld faults injected:", faults_hit);
  for (int op = 0; op < 6; op++) {
    print_message(" %s %d", ops[op], reached[op]);
    assert_true(reached[op] >= 4 * 2); /* open and read or write at least */
  }
  print_message("\n");
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 0);
  unsetenv("UQJIT_CACHE_PATH");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          every_cache_operation_survives_every_io_fault, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
