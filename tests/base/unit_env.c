/* The environment's one rule for booleans, UQJIT_LOG and its alias
 * UQJIT_QUIET, and that a value of UQJIT_DISABLE_JIT that is no boolean
 * ("y", "2", "yes please") fails closed: the kernel is refused with
 * UQ_ENOJIT instead of compiled, and the value is said once on stderr.
 * The compilers point nowhere, so nothing here can compile or load a GPU
 * library (the unit suite runs under valgrind). */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/env.h"
#include "lib/base/log.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit_tools.h"

/* ---- stderr capture ----------------------------------------------------- */

static int saved_stderr = -1;
static char err_path[PATH_MAX];

static void capture_begin(void) {
  cu_fmt(err_path, "/tmp/uq-env-stderr-%ld", (long)getpid());
  fflush(stderr);
  saved_stderr = dup(2);
  int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved_stderr >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
}

/* What was written to stderr since capture_begin (caller frees). */
static char *capture_end(void) {
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  size_t len = 0;
  uint8_t *data = cu_read_file(err_path, &len);
  unlink(err_path);
  char *text = calloc(1, len + 1);
  assert_non_null(text);
  if (data != NULL)
    memcpy(text, data, len);
  free(data);
  return text;
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* ---- booleans ----------------------------------------------------------- */

static void booleans_follow_one_rule(void **state) {
  (void)state;
  static const char *const on[] = {"1", "true", "TRUE", "yes", "Yes", "on",
                                   "ON"};
  static const char *const off[] = {"0", "false", "False", "no", "NO",
                                    "off", ""};
  const uq__env_var vars[] = {UQ__ENV_DISABLE_JIT, UQ__ENV_QUIET};
  for (size_t v = 0; v < 2; v++) {
    const char *name = uq__env_name(vars[v]);
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
      setenv(name, on[i], 1);
      assert_int_equal(uq__env_bool(vars[v]), 1);
    }
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
      setenv(name, off[i], 1);
      assert_int_equal(uq__env_bool(vars[v]), 0);
    }
    unsetenv(name);
    assert_int_equal(uq__env_bool(vars[v]), 0);
  }
  /* Not a boolean: the safe side of each. */
  setenv("UQJIT_LOG", "error", 1); /* the warnings are checked below */
  setenv("UQJIT_DISABLE_JIT", "maybe", 1);
  assert_int_equal(uq__env_bool(UQ__ENV_DISABLE_JIT), 1);
  setenv("UQJIT_QUIET", "maybe", 1);
  assert_int_equal(uq__env_bool(UQ__ENV_QUIET), 0);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_QUIET");
  unsetenv("UQJIT_LOG");
}

/* ---- UQJIT_LOG ---------------------------------------------------------- */

static void log_level_from_uqjit_log_then_quiet(void **state) {
  (void)state;
  static const struct {
    const char *log, *quiet;
    uq__log_level want;
  } cases[] = {
      {NULL, NULL, UQ__LOG_WARN},     {"error", NULL, UQ__LOG_ERROR},
      {"warn", NULL, UQ__LOG_WARN},   {"info", NULL, UQ__LOG_INFO},
      {"DEBUG", NULL, UQ__LOG_DEBUG}, {NULL, "1", UQ__LOG_ERROR},
      {NULL, "0", UQ__LOG_WARN},      {NULL, "false", UQ__LOG_WARN},
      {"info", "1", UQ__LOG_INFO},    /* the explicit level wins */
      {"loud", "1", UQ__LOG_ERROR},   /* invalid: ignored, the alias holds */
      {"", NULL, UQ__LOG_WARN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].log)
      setenv("UQJIT_LOG", cases[i].log, 1);
    else
      unsetenv("UQJIT_LOG");
    if (cases[i].quiet)
      setenv("UQJIT_QUIET", cases[i].quiet, 1);
    else
      unsetenv("UQJIT_QUIET");
    assert_int_equal(uq__env_log_level(), cases[i].want);
  }
  unsetenv("UQJIT_LOG");
  unsetenv("UQJIT_QUIET");
}

static void log_lines_appear_at_their_level_only(void **state) {
  (void)state;
  static const char *const levels[] = {"error", "warn", "info", "debug"};
  for (int at = 0; at < 4; at++) {
    setenv("UQJIT_LOG", levels[at], 1);
    capture_begin();
    uq__log(UQ__LOG_INFO, "info line %d", 7);
    uq__log(UQ__LOG_DEBUG, "debug line");
    char *out = capture_end();
    assert_int_equal(count_of(out, "uqjit: info: info line 7\n"),
                     at >= UQ__LOG_INFO);
    assert_int_equal(count_of(out, "uqjit: debug: debug line\n"),
                     at >= UQ__LOG_DEBUG);
    free(out);
  }
  unsetenv("UQJIT_LOG");
}

/* ---- UQJIT_DISABLE_JIT fails closed -------------------------------------- */

static uq_key decode_key(void) {
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 8;
  s.num_kv_heads = 1;
  s.head_dim = 256;
  s.block_size = 16;
  s.max_blocks_per_seq = 64;
  uq_plan p;
  assert_int_equal(uq_plan_make(&s, "gfx950", &p), 0);
  assert_true(p.eligible);
  return p.kernels[0];
}

/* With the JIT disabled by a value that is not a boolean, a kernel
 * missing from the (empty) cache is refused, not compiled. */
static void unclear_disable_jit_values_refuse_to_compile(void **state) {
  char *dir = *state;
  static const char *const values[] = {"y", "2", "yes please"};
  uq_key key = decode_key();
  setenv("UQJIT_LOG", "warn", 1);
  capture_begin();
  for (size_t i = 0; i < 3; i++) {
    setenv("UQJIT_DISABLE_JIT", values[i], 1);
    uq_context_options o;
    uq_context_options_init(&o);
    o.device = -1;
    o.target = "gfx950";
    o.cache_dir = dir;
    uq_context *ctx = NULL;
    assert_int_equal(uq_context_create(&o, &ctx), 0);
    void *obj = NULL;
    size_t len = 0;
    int rc = uq_code_object(ctx, &key, &obj, &len, NULL);
    if (rc != UQ_ENOJIT)
      fprintf(stdout, "UQJIT_DISABLE_JIT='%s': %s: %s\n", values[i],
              uq_err_name(rc), uq_last_error());
    assert_int_equal(rc, UQ_ENOJIT);
    assert_null(obj);
    uq_context_destroy(ctx);
  }
  char *out = capture_end();
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_LOG");
  /* Said once, whatever the number of lookups and values. */
  assert_int_equal(count_of(out, "UQJIT_DISABLE_JIT="), 1);
  assert_non_null(strstr(out, "taken as on"));
  free(out);
  assert_int_equal(cu_count_entries(dir), 0);
}

int main(void) {
  unsetenv("UQJIT_QUIET");
  unsetenv("UQJIT_LOG");
  unsetenv("UQJIT_CACHE_PATH");
  /* Nothing may compile: no compiler is reachable. */
  setenv("UQJIT_CLANG", "/nonexistent/clang-22", 1);
  setenv("UQJIT_NVRTC_LIB", "/nonexistent/libnvrtc.so", 1);
  setenv("UQJIT_HIPRTC_LIB", "/nonexistent/libhiprtc.so", 1);
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  const struct CMUnitTest tests[] = {
      /* First: the warn-once flag of UQJIT_DISABLE_JIT is still clear. */
      cmocka_unit_test_setup_teardown(
          unclear_disable_jit_values_refuse_to_compile, cu_setup_tmpdir,
          cu_teardown_tmpdir),
      cmocka_unit_test(booleans_follow_one_rule),
      cmocka_unit_test(log_level_from_uqjit_log_then_quiet),
      cmocka_unit_test(log_lines_appear_at_their_level_only),
  };
  return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
