/* AMD targets with features: `uqjit warm --target gfx950,gfx942,gfx90a`
 * (the offline clang) builds feature-agnostic code objects, and a runtime
 * handed each string those devices report ("gfx950:sramecc+:xnack-", every
 * sramecc/xnack mode, and the bare name) finds every kernel of its plans
 * with every compiler unreachable and UQJIT_DISABLE_JIT=1. A warm for an
 * explicit feature form says what it serves and serves only that mode.
 * The serving runs in child processes, so that nothing the warm loaded is
 * still there. Skips without clang 22. */
#include <limits.h>
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

#include "tests/support/cli_run.h"
#include "uqjit_tools.h"

static const char *const archs[] = {"gfx950", "gfx942", "gfx90a"};
#define NARCHS 3
#define MAX_KEYS 16

/* In a child: report and leave with status 1. */
#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);            \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, " (%s)\n", uq_last_error());                          \
      _exit(1);                                                             \
    }                                                                       \
  } while (0)

static const char *const shape_args[] = {
    "--q-heads", "8", "--kv-heads", "1", "--head-dim", "256",
    "--block-size", "16", "--max-blocks-per-seq", "64", "--batch-sizes",
    "1,8"};

/* The kernels a runtime on `target` asks for: both batch sizes' plans and
 * the bf16 store kernel, every key with the runtime's own target. */
static size_t runtime_keys(const char *target, uq_key *keys) {
  size_t n = 0;
  static const int batches[] = {1, 8};
  uq_plan p;
  for (int b = 0; b < 2; b++) {
    uq_shape s;
    uq_shape_init(&s);
    s.batch = batches[b];
    s.num_q_heads = 8;
    s.num_kv_heads = 1;
    s.head_dim = 256;
    s.block_size = 16;
    s.max_blocks_per_seq = 64;
    CHECK(uq_plan_make(&s, target, &p) == 0 && p.eligible, "plan %s",
          target);
    for (int i = 0; i < p.num_kernels && n < MAX_KEYS; i++)
      keys[n++] = p.kernels[i];
  }
  CHECK(uq_store_key(256, 1, p.padded_slot, UQ_DTYPE_BF16, target,
                     &keys[n]) == 0, "store key");
  return n + 1;
}

static int save_target(void *user, const uq_cache_entry *e) {
  snprintf(user, UQ_TARGET_MAX, "%s", e->target);
  return 0;
}

/* A device reporting `reported`, served from `dir`: 0 when every kernel
 * came from an entry of `want_entry_target`, 1 with a message otherwise,
 * 2 when some kernel was refused with UQ_ENOJIT. */
static int serve(const char *dir, const char *reported,
                 const char *want_entry_target) {
  setenv("UQJIT_CLANG", "/nonexistent/clang-22", 1);
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  setenv("UQJIT_HIPRTC_LIB", "/nonexistent/libhiprtc.so", 1);
  setenv("UQJIT_NVRTC_LIB", "/nonexistent/libnvrtc.so", 1);
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  setenv("UQJIT_CACHE_PATH", dir, 1);
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = reported; /* what platform_hip hands the context */
  o.use_disk_cache = 1;
  char empty[] = "/tmp/uq-amd-empty-XXXXXX";
  CHECK(mkdtemp(empty) != NULL, "mkdtemp");
  setenv("UQJIT_CACHE_DIR", empty, 1); /* empty: the layer serves */
  uq_context *ctx = NULL;
  CHECK(uq_context_create(&o, &ctx) == 0, "context on %s", reported);
  uq_key keys[MAX_KEYS];
  size_t n = runtime_keys(uq_context_target(ctx), keys);
  int code = 0;
  for (size_t i = 0; i < n && code == 0; i++) {
    void *obj = NULL;
    size_t len = 0;
    int rc = uq_code_object(ctx, &keys[i], &obj, &len, NULL);
    if (rc == UQ_ENOJIT) {
      code = 2;
      break;
    }
    CHECK(rc == 0 && len > 0, "%s: kernel %zu", reported, i);
    uq_free(obj);
    char found[UQ_TARGET_MAX] = "";
    CHECK(uq_cache_find(NULL, &keys[i], save_target, found) == 0,
          "uq_cache_find on %s", reported);
    CHECK(strcmp(found, want_entry_target) == 0,
          "%s was served an entry of %s, wanted %s", reported, found,
          want_entry_target);
  }
  uq_stats st;
  CHECK(uq_get_stats(ctx, &st) == 0 && st.compiles == 0, "compiled");
  uq_context_destroy(ctx);
  rmdir(empty);
  return code;
}

static char g_dir[PATH_MAX];
static const char *g_reported, *g_want;

static int in_child(void) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(serve(g_dir, g_reported, g_want));
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void make_dir(char *out) {
  strcpy(out, "/tmp/uq-amd-features-XXXXXX");
  assert_non_null(mkdtemp(out));
}

static void remove_dir(const char *dir) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* Runs uqjit warm over the shape for `targets` into dir. */
static result warm(const char *dir, const char *targets) {
  const char *args[32];
  size_t n = 0;
  args[n++] = "warm";
  for (size_t i = 0; i < sizeof shape_args / sizeof shape_args[0]; i++)
    args[n++] = shape_args[i];
  args[n++] = "--target";
  args[n++] = targets;
  args[n++] = "--cache-dir";
  args[n++] = dir;
  args[n++] = "--json";
  args[n] = NULL;
  return run_to(NULL, args);
}

static void warm_for_arch_serves_every_reported_mode(void **state) {
  (void)state;
  make_dir(g_dir);
  result r = warm(g_dir, "gfx950,gfx942,gfx90a");
  if (r.code != 0)
    fail_msg("warm: %d: %s", r.code, r.err);
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "failed"), 0);
  assert_non_null(strstr(r.out, "\"gfx942\": \"every gfx942 device, in any "
                                "sramecc and xnack mode\""));
  result_free(&r);
  static const char *const modes[] = {
      ":sramecc+:xnack-", ":sramecc+:xnack+", ":sramecc-:xnack-",
      ":sramecc-:xnack+", ":xnack-:sramecc+", ":sramecc+", ":xnack-", ""};
  for (int a = 0; a < NARCHS; a++)
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
      char reported[UQ_TARGET_MAX];
      snprintf(reported, sizeof reported, "%s%s", archs[a], modes[m]);
      g_reported = reported;
      g_want = archs[a];
      int code = in_child();
      if (code != 0)
        fail_msg("a device reporting %s was not served every kernel (%d)",
                 reported, code);
    }
  remove_dir(g_dir);
}

/* A product name warms the bare architecture too. */
static void warm_for_gpu_name_serves_the_reported_mode(void **state) {
  (void)state;
  make_dir(g_dir);
  result r = warm(g_dir, "mi300x");
  if (r.code != 0)
    fail_msg("warm: %d: %s", r.code, r.err);
  assert_non_null(strstr(r.out, "\"targets\": [\"gfx942\"]"));
  result_free(&r);
  g_reported = "gfx942:sramecc+:xnack-";
  g_want = "gfx942";
  assert_int_equal(in_child(), 0);
  remove_dir(g_dir);
}

/* An explicit feature form serves its own mode, says so, and another mode
 * misses (UQ_ENOJIT): its code object would not load there. */
static void warm_for_feature_form_serves_that_mode_only(void **state) {
  (void)state;
  make_dir(g_dir);
  result r = warm(g_dir, "gfx942:xnack-:sramecc+");
  if (r.code != 0)
    fail_msg("warm: %d: %s", r.code, r.err);
  assert_non_null(strstr(r.err, "gfx942:sramecc+:xnack-: serves only gfx942 "
                                "devices that report gfx942:sramecc+:xnack-"));
  result_free(&r);
  g_reported = "gfx942:sramecc+:xnack-";
  g_want = "gfx942:sramecc+:xnack-";
  assert_int_equal(in_child(), 0);
  g_reported = "gfx942:sramecc-:xnack-";
  assert_int_equal(in_child(), 2);
  g_reported = "gfx942";
  assert_int_equal(in_child(), 2);
  remove_dir(g_dir);
}

static int have_clang(void) {
  if (getenv("UQJIT_CLANG") != NULL)
    return 1;
  const char *path = getenv("PATH");
  char buf[PATH_MAX];
  while (path != NULL && *path) {
    const char *colon = strchr(path, ':');
    size_t len = colon ? (size_t)(colon - path) : strlen(path);
    snprintf(buf, sizeof buf, "%.*s/clang-22", (int)len, path);
    if (access(buf, X_OK) == 0)
      return 1;
    path = colon ? colon + 1 : NULL;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s UQJIT\n", argv[0]);
    return 2;
  }
  if (!have_clang()) {
    printf("no clang-22: skipped\n");
    return 77;
  }
  cli_run_init(argv[1], 120000);
  setenv("UQJIT_QUIET", "1", 1);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
  unsetenv("UQJIT_VARIANT");
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(warm_for_arch_serves_every_reported_mode),
      cmocka_unit_test(warm_for_gpu_name_serves_the_reported_mode),
      cmocka_unit_test(warm_for_feature_form_serves_that_mode_only),
  };
  return cmocka_run_group_tests_name("amd_features", tests, NULL, NULL);
}
