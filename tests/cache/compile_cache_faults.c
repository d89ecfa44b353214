/* uq_compile_keys (what uqjit warm runs) when the disk cache cannot keep
 * what it compiles: a kernel compiled but not stored counts as failed with
 * the store's status, while the kernel itself stays usable from the
 * context (the decode path degrades, it does not fail). Faults: a cache
 * directory that cannot exist (a file in its path) and write failures
 * injected through the cache writer's seam. Skipped without a compiler
 * for gfx942. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit_tools.h"

#define TARGET "gfx942"
#define MAX_KEYS 16

typedef struct fx {
  char root[PATH_MAX];
  uq_key keys[MAX_KEYS];
  size_t n;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 8;
  s.num_kv_heads = 1;
  s.head_dim = 256;
  s.block_size = 16;
  s.max_blocks_per_seq = 64;
  uq_plan p;
  assert_int_equal(uq_plan_make(&s, TARGET, &p), 0);
  for (int i = 0; i < p.num_kernels && f->n < MAX_KEYS; i++)
    f->keys[f->n++] = p.kernels[i];
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  cu_rm_rf(f->root);
  free(f);
  return 0;
}

static uq_context *open_ctx(const char *dir) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = TARGET;
  o.cache_dir = dir;
  uq_context *ctx = NULL;
  assert_int_equal(uq_context_create(&o, &ctx), 0);
  return ctx;
}

/* Skips the test when no compiler for TARGET is found. */
static void need_compiler(const fx *f) {
  char dir[PATH_MAX];
  cu_fmt(dir, "%s/probe", f->root);
  uq_context *ctx = open_ctx(dir);
  uq_compile_summary sum;
  int rc = uq_compile_keys(ctx, f->keys, 1, 1, NULL, NULL, &sum);
  uq_context_destroy(ctx);
  if (rc != 0) {
    fprintf(stderr, "no compiler for %s: %s\n", TARGET, uq_last_error());
    skip();
  }
}

/* Each key still gives its code object from the context. */
static void expect_objects(uq_context *ctx, const fx *f) {
  for (size_t i = 0; i < f->n; i++) {
    void *obj = NULL;
    size_t len = 0;
    assert_int_equal(uq_code_object(ctx, &f->keys[i], &obj, &len, NULL), 0);
    assert_true(len > 0);
    uq_free(obj);
  }
}

static void compile_keys_counts_kernels_it_cannot_store_as_failed(
    void **state) {
  fx *f = *state;
  need_compiler(f);
  char file[PATH_MAX], dir[PATH_MAX];
  cu_fmt(file, "%s/file", f->root);
  assert_int_equal(cu_write_file(file, "x", 1, 0600), 0);
  cu_fmt(dir, "%s/cache", file); /* cannot be made: ENOTDIR */
  uq_context *ctx = open_ctx(dir);
  uq_compile_summary sum;
  int rc = uq_compile_keys(ctx, f->keys, f->n, 2, NULL, NULL, &sum);
  assert_int_equal(rc, UQ_EIO);
  assert_non_null(strstr(uq_last_error(), strerror(ENOTDIR)));
  assert_int_equal(sum.failed, sum.keys);
  assert_int_equal(sum.compiled, 0);
  expect_objects(ctx, f);
  uq_context_destroy(ctx);
}

static int injected_errno;
static ssize_t failing_write(int fd, const void *buf, size_t n) {
  (void)fd;
  (void)buf;
  (void)n;
  errno = injected_errno;
  return -1;
}

static void compile_keys_reports_a_full_disk_and_the_kernels_still_run(
    void **state) {
  fx *f = *state;
  need_compiler(f);
  char dir[PATH_MAX];
  cu_fmt(dir, "%s/full", f->root);
  uq_context *ctx = open_ctx(dir);
  injected_errno = ENOSPC;
  uq__cache_write_fn = failing_write;
  uq_compile_summary sum;
  int rc = uq_compile_keys(ctx, f->keys, f->n, 2, NULL, NULL, &sum);
  uq__cache_write_fn = write;
  assert_int_equal(rc, UQ_ENOSPC);
  assert_int_equal(sum.failed, sum.keys);
  assert_int_equal(cu_count_entries(dir), 0);
  expect_objects(ctx, f);
  uq_context_destroy(ctx);
  /* With room again, the same warm stores everything. */
  ctx = open_ctx(dir);
  assert_int_equal(uq_compile_keys(ctx, f->keys, f->n, 2, NULL, NULL, &sum),
                   0);
  assert_int_equal(sum.failed, 0);
  assert_int_equal(cu_count_entries(dir), (int)sum.keys);
  uq_context_destroy(ctx);
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          compile_keys_counts_kernels_it_cannot_store_as_failed, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          compile_keys_reports_a_full_disk_and_the_kernels_still_run, setup,
          teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
