/* Write failures while warming, with NVRTC (sm_90a; skipped without it):
 * 1. ENOSPC, EROFS, EACCES and EIO injected into every open, mkdir,
 *    create, write and rename of the cache (uq__cache_fault_fn) while
 *    uq_compile_keys runs on a fresh cache: the call fails with the
 *    documented status (UQ_ENOSPC for a full disk, UQ_EIO otherwise),
 *    counts every kernel it could not store as failed and names the
 *    cause, while uq_code_object on the same compile-only context still
 *    returns each compiled code object.
 * 2. `uqjit warm` on real mounts: a 64 KiB tmpfs (ENOSPC) and a read-only
 *    tmpfs (EROFS) exit 1 naming the cause once. Skipped where mount(8)
 *    is refused (not root, or no permission in a container).
 * argv[1]: the uqjit binary. */
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

#include "lib/cache/cache.h"
#include "tests/support/internal/cache_util.h"
#include "tests/support/cli_run.h"
#include "uqjit_tools.h"

#define TARGET "sm_90a"

static char root[PATH_MAX];
static uq_key keys[4];
static size_t nkeys;
static int fault_op = -1, fault_errno;
static long faults_hit;

static int inject(uq__cache_op op) {
  if ((int)op != fault_op)
    return 0;
  __atomic_add_fetch(&faults_hit, 1, __ATOMIC_RELAXED);
  return fault_errno;
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

static int setup(void **state) {
  (void)state;
  cu_mkdtemp(root);
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 16;
  s.num_kv_heads = 2;
  s.head_dim = 256;
  s.block_size = 64;
  s.max_blocks_per_seq = 64;
  uq_plan p;
  if (uq_plan_make(&s, TARGET, &p) != 0 || !p.eligible)
    return -1;
  for (int i = 0; i < p.num_kernels; i++)
    keys[nkeys++] = p.kernels[i];
  if (uq_store_key(256, 2, 0, UQ_DTYPE_BF16, TARGET, &keys[nkeys++]) != 0)
    return -1;
  /* Skip without NVRTC. */
  char dir[PATH_MAX];
  cu_fmt(dir, "%s/probe", root);
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = TARGET;
  o.cache_dir = dir;
  uq_context *ctx = NULL;
  if (uq_context_create(&o, &ctx) != 0)
    return -1;
  uq_compile_summary sum;
  int rc = uq_compile_keys(ctx, keys, nkeys, 2, NULL, NULL, &sum);
  uq_context_destroy(ctx);
  return rc == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  cu_rm_rf(root);
  return 0;
}

static void compile_keys_fails_loudly_on_every_write_fault_and_objects_still_come(
    void **state) {
  (void)state;
  static const int errnos[] = {ENOSPC, EROFS, EACCES, EIO};
  static const uq__cache_op ops[] = {UQ__CACHE_OP_OPEN, UQ__CACHE_OP_MKDIR,
                                     UQ__CACHE_OP_CREATE, UQ__CACHE_OP_WRITE,
                                     UQ__CACHE_OP_RENAME};
  int cases = 0;
  uq__cache_fault_fn = inject;
  for (size_t e = 0; e < 4; e++)
    for (size_t o = 0; o < 5; o++) {
      char dir[PATH_MAX];
      cu_fmt(dir, "%s/c%zu.%zu", root, e, o);
      fault_errno = errnos[e];
      fault_op = (int)ops[o]; /* from the context's creation on */
      uq_context *ctx = open_ctx(dir);
      uq_compile_summary sum;
      int rc = uq_compile_keys(ctx, keys, nkeys, 2, NULL, NULL, &sum);
      int want = errnos[e] == ENOSPC ? UQ_ENOSPC : UQ_EIO;
      if (rc != want || sum.failed != sum.keys || sum.keys != nkeys)
        fail_msg("%s on op %zu: status %d, %llu of %llu failed (%s)",
                 strerror(errnos[e]), o, rc, (unsigned long long)sum.failed,
                 (unsigned long long)sum.keys, uq_last_error());
      if (strstr(uq_last_error(), strerror(errnos[e])) == NULL)
        fail_msg("%s on op %zu: cause not named: %s", strerror(errnos[e]), o,
                 uq_last_error());
      for (size_t i = 0; i < nkeys; i++) {
        void *obj = NULL;
        size_t len = 0;
        assert_int_equal(uq_code_object(ctx, &keys[i], &obj, &len, NULL), 0);
        assert_true(len > 0);
        uq_free(obj);
      }
      uq_context_destroy(ctx);
      fault_op = -1;
      assert_int_equal(cu_count_entries(dir), 0);
      assert_int_equal(cu_count_temps(dir), 0);
      cases++;
    }
  uq__cache_fault_fn = NULL;
  print_message("%d cases, %ld faults injected\n", cases, faults_hit);
}

/* mount(8) a tmpfs at `at` with `opts`; 0 when it worked. */
static int mount_tmpfs(const char *at, const char *opts) {
  char cmd[PATH_MAX + 128];
  cu_mkdirs(at, 0700);
  snprintf(cmd, sizeof cmd, "mount -t tmpfs -o %s tmpfs '%s' 2>/dev/null",
           opts, at);
  return system(cmd) == 0 ? 0 : -1;
}

static void umount_at(const char *at) {
  char cmd[PATH_MAX + 32];
  snprintf(cmd, sizeof cmd, "umount '%s'", at);
  assert_int_equal(system(cmd), 0);
}

static void expect_warm_fails_naming(const char *cache, const char *cause) {
  result r = RUN("warm", "--batch", "4", "--q-heads", "16", "--kv-heads", "2",
                 "--head-dim", "256", "--block-size", "64",
                 "--max-blocks-per-seq", "64", "--target", TARGET,
                 "--exact-target", "--cache-dir", cache, "--json");
  if (r.code != 1)
    fail_msg("warm into %s exited %d: %s %s", cache, r.code, r.out, r.err);
  assert_json(r.out);
  assert_true(json_int(r.out, "failed") > 0);
  const char *why = strstr(r.err, cause);
  if (why == NULL)
    fail_msg("warm into %s did not name '%s': %s", cache, cause, r.err);
  assert_null(strstr(why + 1, cause)); /* named once */
  result_free(&r);
}

static void warm_on_a_full_or_read_only_mount_exits_one_naming_the_cause(
    void **state) {
  (void)state;
  char full[PATH_MAX], ro[PATH_MAX], cache[PATH_MAX];
  cu_fmt(full, "%s/full", root);
  cu_fmt(ro, "%s/ro", root);
  if (mount_tmpfs(full, "size=64k,mode=0700") != 0) {
    fprintf(stderr, "mount -t tmpfs refused: skipping\n");
    skip();
  }
  cu_fmt(cache, "%s/cache", full);
  expect_warm_fails_naming(cache, "No space left on device");
  umount_at(full);
  assert_int_equal(mount_tmpfs(ro, "ro,size=64k,mode=0700"), 0);
  cu_fmt(cache, "%s/cache", ro);
  expect_warm_fails_naming(cache, "Read-only file system");
  umount_at(ro);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH-TO-UQJIT\n", argv[0]);
    return 1;
  }
  cli_run_init(argv[1], 120000);
  setenv("UQJIT_QUIET", "1", 0);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
  unsetenv("UQJIT_VARIANT");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          compile_keys_fails_loudly_on_every_write_fault_and_objects_still_come),
      cmocka_unit_test(
          warm_on_a_full_or_read_only_mount_exits_one_naming_the_cause),
  };
  if (setup(NULL) != 0) {
    fprintf(stderr, "no NVRTC for %s: %s; skipping\n", TARGET,
            uq_last_error());
    teardown(NULL);
    return 77;
  }
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  teardown(NULL);
  return rc;
}
