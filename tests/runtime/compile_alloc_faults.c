/* Allocation failure at every allocation site of the compile path: a
 * compile-only context on a fresh cache directory compiles the sm_90a
 * store kernel with NVRTC and stores it (uq_code_object), with its 1st,
 * 2nd, 3rd, ... allocation failing until a run reaches no injected
 * failure. Every failing run must return UQ_ENOMEM (or succeed having
 * degraded, e.g. without storing), never crash, and free everything it
 * allocated. Skipped without NVRTC. Also uq_info_libraries, which loads
 * the GPU libraries. The CPU-side calls are in unit.alloc_faults. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/runtime/alloc_inject.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit_tools.h"

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

static long run_counter;

static int compile_next(void *arg) {
  return compile_once(arg, run_counter++);
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
  assert_true(ai_inject_each("compile path", compile_next, &key, 0) > 0);
}

static int probe_libraries(void *arg) {
  (void)arg;
  char *json = NULL;
  int rc = uq_info_libraries(&json);
  uq_free(json);
  return rc;
}

/* uq_info_libraries loads the GPU libraries it finds (dlopen), so it is
 * here rather than in unit.alloc_faults, which runs under valgrind. */
static void library_probe_allocation_failures_give_enomem_and_leak_nothing(
    void **state) {
  (void)state;
  assert_true(ai_inject_each("info_libraries", probe_libraries, NULL, 0) > 0);
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
      cmocka_unit_test(
          library_probe_allocation_failures_give_enomem_and_leak_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
