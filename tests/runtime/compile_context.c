/* Contexts without a device: uq_compile_keys (dedup, summary, progress,
 * memory and disk hits), uq_code_object, UQJIT_DISABLE_JIT, and remembered
 * failures. Needs a compiler for the target (NVRTC for sm_90, else clang for
 * gfx950); exits 77 when neither is found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "lib/base/os.h"
#include "lib/compile/compiler.h"
#include "uqjit_tools.h"

static const char *target;
static char cache_dir[256];

static uq_context *open_ctx(int use_disk) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = target;
  o.cache_dir = cache_dir;
  o.use_disk_cache = use_disk;
  uq_context *ctx = NULL;
  int rc = uq_context_create(&o, &ctx);
  if (rc != 0)
    fprintf(stderr, "uq_context_create: %s\n", uq_last_error());
  assert_int_equal(rc, 0);
  return ctx;
}

/* Two distinct small shapes: 2 decode keys + 1 shared reduce key... the
 * test derives the distinct count itself by comparing bytes. */
static size_t plan_keys(uq_key *keys, size_t max) {
  size_t n = 0;
  for (int mb = 4; mb <= 8; mb += 4) {
    uq_shape s;
    uq_shape_init(&s);
    s.batch = 2;
    s.num_q_heads = 8;
    s.num_kv_heads = 1;
    s.head_dim = 256;
    s.block_size = 16;
    s.max_blocks_per_seq = mb;
    uq_plan p;
    assert_int_equal(uq_plan_make(&s, target, &p), 0);
    assert_true(p.eligible);
    for (int i = 0; i < p.num_kernels && n < max; i++)
      keys[n++] = p.kernels[i];
  }
  return n;
}

static size_t count_distinct(const uq_key *k, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; i++) {
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      seen |= memcmp(&k[i], &k[j], sizeof *k) == 0;
    d += !seen;
  }
  return d;
}

typedef struct progress_log {
  size_t calls, last_done, total;
  int in_call, overlapped, ordered;
  int from_cache_count;
} progress_log;

static void on_progress(void *user, size_t done, size_t total,
                        const uq_key *key, int status, int from_cache) {
  progress_log *l = user;
  (void)key;
  (void)status;
  if (__atomic_exchange_n(&l->in_call, 1, __ATOMIC_ACQ_REL))
    l->overlapped = 1;
  usleep(1000); /* widen the window an unserialized caller would hit */
  l->calls++;
  if (done != l->last_done + 1)
    l->ordered = 0;
  l->last_done = done;
  l->total = total;
  l->from_cache_count += from_cache;
  __atomic_store_n(&l->in_call, 0, __ATOMIC_RELEASE);
}

static void compile_keys_dedups_and_counts(void **st) {
  (void)st;
  uq_key keys[16];
  size_t n = plan_keys(keys, 8);
  keys[n] = keys[0]; /* a duplicate */
  n++;
  size_t distinct = count_distinct(keys, n);
  assert_true(distinct < n);

  uq_context *ctx = open_ctx(1);
  progress_log log = {0, 0, 0, 0, 0, 1, 0};
  uq_compile_summary sum;
  int rc = uq_compile_keys(ctx, keys, n, 4, on_progress, &log, &sum);
  if (rc != 0)
    fprintf(stderr, "uq_compile_keys: %s\n", uq_last_error());
  assert_int_equal(rc, 0);
  assert_int_equal(sum.keys, distinct);
  assert_int_equal(sum.compiled + sum.hits, distinct);
  assert_int_equal(sum.failed, 0);
  assert_int_equal(sum.compiled, distinct); /* fresh cache directory */
  assert_int_equal(log.calls, distinct);
  assert_int_equal(log.total, distinct);
  assert_int_equal(log.overlapped, 0);
  assert_true(log.ordered);

  /* Again on the same context: memory hits, nothing compiled. */
  memset(&log, 0, sizeof log);
  log.ordered = 1;
  assert_int_equal(uq_compile_keys(ctx, keys, n, 0, on_progress, &log, &sum),
                   0);
  assert_int_equal(sum.hits, distinct);
  assert_int_equal(sum.compiled, 0);
  assert_int_equal((size_t)log.from_cache_count, distinct);
  uq_stats s;
  assert_int_equal(uq_get_stats(ctx, &s), 0);
  assert_int_equal(s.compiles, distinct);
  assert_int_equal(s.misses, distinct);
  assert_int_equal(s.hits, distinct);
  uq_context_destroy(ctx);

  /* A new context reads them from disk. */
  ctx = open_ctx(1);
  assert_int_equal(uq_compile_keys(ctx, keys, n, 2, NULL, NULL, &sum), 0);
  assert_int_equal(sum.hits, distinct);
  assert_int_equal(sum.compiled, 0);
  assert_int_equal(uq_get_stats(ctx, &s), 0);
  assert_int_equal(s.disk_hits, distinct);
  assert_int_equal(s.compiles, 0);

  /* The code object equals across the disk and a fresh compile. */
  void *obj = NULL;
  size_t len = 0;
  uq_code_info info;
  assert_int_equal(uq_code_object(ctx, &keys[0], &obj, &len, &info), 0);
  assert_true(len > 64);
  assert_memory_equal(obj, "\177ELF", 4);
  assert_true(info.compiler[0] != '\0');
  uq_context_destroy(ctx);
  uq_context *mem = open_ctx(0);
  void *obj2 = NULL;
  size_t len2 = 0;
  assert_int_equal(uq_code_object(mem, &keys[0], &obj2, &len2, NULL), 0);
  assert_int_equal(len2, len);
  uq_context_destroy(mem);
  uq_free(obj);
  uq_free(obj2);
}

static void disabled_jit_names_the_missing_kernel(void **st) {
  (void)st;
  uq_key keys[8];
  plan_keys(keys, 8);
  keys[0].scale_e8 += 1; /* never compiled anywhere */
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  uq_context *ctx = open_ctx(1);
  void *obj = NULL;
  size_t len = 0;
  char name[512]; /* before: every public call clears the last error */
  uq_key_name(&keys[0], name, sizeof name);
  int rc = uq_code_object(ctx, &keys[0], &obj, &len, NULL);
  assert_int_equal(rc, UQ_ENOJIT);
  assert_non_null(strstr(uq_last_error(), name));
  /* Remembered: the same status again, even with JIT back on. */
  unsetenv("UQJIT_DISABLE_JIT");
  assert_int_equal(uq_code_object(ctx, &keys[0], &obj, &len, NULL),
                   UQ_ENOJIT);
  assert_non_null(strstr(uq_last_error(), name));
  uq_context_destroy(ctx);
}

static void compile_keys_reports_invalid_keys_and_goes_on(void **st) {
  (void)st;
  uq_key keys[8];
  size_t n = plan_keys(keys, 8);
  keys[n] = keys[0];
  keys[n].head_dim = 100; /* invalid */
  n++;
  uq_context *ctx = open_ctx(1);
  uq_compile_summary sum;
  int rc = uq_compile_keys(ctx, keys, n, 3, NULL, NULL, &sum);
  assert_int_equal(rc, UQ_EINVAL);
  assert_int_equal(sum.failed, 1);
  assert_int_equal(sum.keys, count_distinct(keys, n));
  assert_int_equal(sum.compiled + sum.hits, sum.keys - 1);
  uq_context_destroy(ctx);
}

static void context_refuses_bad_options(void **st) {
  (void)st;
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  uq_context *ctx = (uq_context *)1;
  assert_int_equal(uq_context_create(&o, &ctx), UQ_EINVAL); /* no target */
  assert_null(ctx);
  o.target = "gfx9999zz";
  assert_int_equal(uq_context_create(&o, &ctx), UQ_EINVAL);
  o.target = "sm90";
  o.use_disk_cache = 0;
  assert_int_equal(uq_context_create(&o, &ctx), 0);
  assert_string_equal(uq_context_target(ctx), "sm_90");
  /* No device: device calls say so. */
  void *p;
  assert_int_equal(uq_device_alloc(ctx, 16, &p), UQ_ENODEV);
  uq_context_destroy(ctx);
}

int main(void) {
  const uq__compiler *cc;
  if (uq__compiler_for_target("sm_90", &cc) == 0)
    target = "sm_90";
  else if (uq__compiler_for_target("gfx950", &cc) == 0)
    target = "gfx950";
  else {
    printf("SKIP: no compiler for sm_90 or gfx950: %s\n", uq_last_error());
    return 77;
  }
  snprintf(cache_dir, sizeof cache_dir, "/tmp/uq_context_XXXXXX");
  if (mkdtemp(cache_dir) == NULL)
    return 1;
  printf("target %s, compiler %s, cache %s\n", target,
         uq__compiler_identity(cc), cache_dir);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(compile_keys_dedups_and_counts),
      cmocka_unit_test(disabled_jit_names_the_missing_kernel),
      cmocka_unit_test(compile_keys_reports_invalid_keys_and_goes_on),
      cmocka_unit_test(context_refuses_bad_options),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", cache_dir);
  return failed;
}
