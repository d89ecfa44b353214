/* Allocation failure at every allocation site of the compile path: a
 * compile-only context on a fresh cache directory compiles the sm_90a
 * store kernel with NVRTC and stores it (uq_code_object), with its 1st,
 * 2nd, 3rd, ... allocation failing until a run reaches no injected
 * failure. Every failing run must return UQ_ENOMEM (or succeed having
 * degraded, e.g. without storing), never crash, and free everything it
 * allocated. Skipped without NVRTC. The CPU-side calls are in
 * unit.alloc_faults. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "tests/cache_util.h"
#include "uqjit.h"

#define STORE_KEY "uq_store_sm_90a_bf16_d128_hk1_ps144"

static char root[PATH_MAX];

static int compile_once(const uq_key *key, long run) {
  char dir[PATH_MAX];
  cu_fmt(dir, "%s/run%ld", root, run);
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "sm_90a";
  o.cache_dir = dir;
  uq_context *ctx = NULL;
  int rc = uq_context_create(&o, &ctx);
  if (rc != 0)
    return rc;
  void *obj = NULL;
  size_t len = 0;
  rc = uq_code_object(ctx, key, &obj, &len, NULL);
  uq_stats st;
  if (rc == 0 && (len == 0 || uq_get_stats(ctx, &st) != 0 || st.compiles != 1))
    rc = UQ_EIO; /* the object must come from a compile, not a cache */
  uq_free(obj);
  uq_context_destroy(ctx);
  cu_rm_rf(dir);
  return rc;
}

static void compile_path_allocation_failures_give_enomem_and_leak_nothing(
    void **state) {
  (void)state;
  uq_key key;
  assert_int_equal(uq_key_parse(STORE_KEY, &key), 0);
  if (compile_once(&key, -1) != 0) {
    fprintf(stderr, "no NVRTC: %s\n", uq_last_error());
    skip();
  }
  long n;
  for (n = 0;; n++) {
    long a0, f0, x0, a1, f1, x1;
    uq__alloc_counts(&a0, &f0, &x0);
    uq__alloc_fail_after(n);
    int rc = compile_once(&key, n);
    uq__alloc_fail_after(-1);
    uq__alloc_counts(&a1, &f1, &x1);
    if (a1 - a0 != f1 - f0)
      fail_msg("allocation %ld failing: %ld allocations, %ld frees", n + 1,
               a1 - a0, f1 - f0);
    if (x1 == x0) {
      assert_int_equal(rc, 0);
      break;
    }
    if (rc != 0 && rc != UQ_ENOMEM)
      fail_msg("allocation %ld failing gave %d (%s)", n + 1, rc,
               uq_last_error());
  }
  print_message("compile path: %ld allocation faults injected\n", n);
  assert_true(n > 0);
}

static int setup(void **state) {
  (void)state;
  cu_mkdtemp(root);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  cu_rm_rf(root);
  return 0;
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 0);
  unsetenv("UQJIT_DISABLE_JIT");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          compile_path_allocation_failures_give_enomem_and_leak_nothing, setup,
          teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
