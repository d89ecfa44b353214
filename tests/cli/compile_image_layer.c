/* An image layer: root runs `uqjit warm --image` (the offline clang), and
 * another user (nobody, through setpriv) serves every kernel from it as
 * a read-only UQJIT_CACHE_PATH layer, with every compiler unreachable and
 * UQJIT_DISABLE_JIT=1, and `uqjit cache verify --manifest` and `cache ls`
 * succeed for that user. The same warm without --image leaves the layer
 * unreadable to that user (the kernels miss), and an entry made writable
 * by others is refused by that user's loader. Skips (exit 77) when not
 * root, or without setpriv, the user nobody or clang 22. */
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/cli_run.h"
#include "uqjit_tools.h"

#define MAX_KEYS 16

static const char *self, *uqjit;
static char root[256];

static const char *const shape_args[] = {
    "--q-heads", "8", "--kv-heads", "1", "--head-dim", "256",
    "--block-size", "16", "--max-blocks-per-seq", "64", "--batch-sizes",
    "1,8", "--target", "mi355x"};

/* ---- the serving user's side (run as nobody by --serve) -------------- */

/* Exit status: 0 every kernel served from the layer, nothing compiled;
 * 3 + the number of distinct kernels that missed otherwise; 1 on other
 * failures. */
static int serve(const char *layer) {
  setenv("UQJIT_CLANG", "/nonexistent/clang-22", 1);
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  setenv("UQJIT_HIPRTC_LIB", "/nonexistent/libhiprtc.so", 1);
  setenv("UQJIT_NVRTC_LIB", "/nonexistent/libnvrtc.so", 1);
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  setenv("UQJIT_CACHE_PATH", layer, 1);
  setenv("HOME", "/nonexistent", 1); /* no writable directory */
  unsetenv("UQJIT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "gfx950:sramecc+:xnack-"; /* what an MI355X reports */
  uq_context *ctx = NULL;
  if (uq_context_create(&o, &ctx) != 0) {
    fprintf(stderr, "context: %s\n", uq_last_error());
    return 1;
  }
  uq_key keys[MAX_KEYS];
  size_t n = 0;
  uq_plan p;
  for (int b = 1; b <= 8; b *= 8) {
    uq_shape s;
    uq_shape_init(&s);
    s.batch = b;
    s.num_q_heads = 8;
    s.num_kv_heads = 1;
    s.head_dim = 256;
    s.block_size = 16;
    s.max_blocks_per_seq = 64;
    if (uq_plan_make(&s, uq_context_target(ctx), &p) != 0 || !p.eligible)
      return 1;
    for (int i = 0; i < p.num_kernels; i++) {
      size_t k = 0;
      while (k < n && memcmp(&keys[k], &p.kernels[i], sizeof keys[k]) != 0)
        k++;
      if (k == n) /* distinct kernels: one miss each */
        keys[n++] = p.kernels[i];
    }
  }
  if (uq_store_key(256, 1, p.padded_slot, UQ_DTYPE_BF16,
                   uq_context_target(ctx), &keys[n++]) != 0)
    return 1;
  int missed = 0;
  for (size_t i = 0; i < n; i++) {
    void *obj = NULL;
    size_t len = 0;
    int rc = uq_code_object(ctx, &keys[i], &obj, &len, NULL);
    if (rc == UQ_ENOJIT) {
      fprintf(stderr, "missed: %s\n", uq_last_error());
      missed++;
    } else if (rc != 0) {
      fprintf(stderr, "kernel %zu: %s: %s\n", i, uq_err_name(rc),
              uq_last_error());
      return 1;
    }
    uq_free(obj);
  }
  uq_stats st;
  if (uq_get_stats(ctx, &st) != 0 || st.compiles != 0)
    return 1;
  uq_context_destroy(ctx);
  return missed ? 3 + missed : 0;
}

/* ---- root's side --------------------------------------------------------- */

/* Runs argv as nobody; its exit status (-1 on a signal). */
static int as_nobody(const char *const *argv) {
  const char *cmd[32] = {"setpriv", "--reuid=nobody", "--regid=nogroup",
                         "--clear-groups", "--"};
  size_t n = 5;
  for (size_t i = 0; argv[i] != NULL && n < 31; i++)
    cmd[n++] = argv[i];
  cmd[n] = NULL;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execvp(cmd[0], (char *const *)cmd);
    _exit(127);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void warm_layer(const char *layer, const char *manifest, int image) {
  const char *args[32];
  size_t n = 0;
  args[n++] = "warm";
  for (size_t i = 0; i < sizeof shape_args / sizeof shape_args[0]; i++)
    args[n++] = shape_args[i];
  args[n++] = "--cache-dir";
  args[n++] = layer;
  args[n++] = "--manifest";
  args[n++] = manifest;
  if (image)
    args[n++] = "--image";
  args[n] = NULL;
  result r = run_to(NULL, args);
  if (r.code != 0)
    fail_msg("warm: exit %d: %s", r.code, r.err);
  result_free(&r);
  chmod(manifest, 0644);
}

static void layer_built_as_root_serves_another_user(void **state) {
  (void)state;
  char layer[PATH_MAX], manifest[PATH_MAX];
  snprintf(layer, sizeof layer, "%s/image/opt/uqjit-cache", root);
  snprintf(manifest, sizeof manifest, "%s/MANIFEST", root);
  warm_layer(layer, manifest, 1);
  struct stat st;
  assert_int_equal(stat(layer, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0755);
  assert_int_equal(st.st_uid, 0);

  assert_int_equal(as_nobody((const char *const[]){self, "--serve", layer,
                                                   NULL}),
                   0);
  char env_path[PATH_MAX + 32];
  snprintf(env_path, sizeof env_path, "UQJIT_CACHE_PATH=%s", layer);
  /* The image's own checks, as the serving user. */
  assert_int_equal(as_nobody((const char *const[]){
                       "env", "HOME=/nonexistent", env_path, uqjit, "cache",
                       "verify", "--manifest", manifest, NULL}),
                   0);
  assert_int_equal(as_nobody((const char *const[]){"env", "HOME=/nonexistent",
                                                   env_path, uqjit, "cache",
                                                   "ls", NULL}),
                   0);
}

/* Without --image the warm leaves 0700 directories: nothing is served. */
static void layer_without_image_mode_is_unreadable_to_another_user(
    void **state) {
  (void)state;
  char layer[PATH_MAX], manifest[PATH_MAX];
  snprintf(layer, sizeof layer, "%s/private", root);
  snprintf(manifest, sizeof manifest, "%s/MANIFEST.private", root);
  warm_layer(layer, manifest, 0);
  int code = as_nobody((const char *const[]){self, "--serve", layer, NULL});
  assert_true(code > 3); /* kernels missed, none loaded */
}

/* The trust rule holds for the serving user: an entry others may write
 * is refused, the rest still served. */
static void entry_writable_by_others_is_refused_by_the_reader(void **state) {
  (void)state;
  char layer[PATH_MAX], cmd[2 * PATH_MAX];
  snprintf(layer, sizeof layer, "%s/image/opt/uqjit-cache", root);
  snprintf(cmd, sizeof cmd,
           "f=$(find '%s' -name '*.co' | sort | head -n 1) && chmod 0666 \"$f\"",
           layer);
  assert_int_equal(system(cmd), 0);
  int code = as_nobody((const char *const[]){self, "--serve", layer, NULL});
  assert_int_equal(code, 3 + 1);
}

static int on_path(const char *name) {
  const char *path = getenv("PATH");
  char buf[PATH_MAX];
  while (path != NULL && *path) {
    const char *colon = strchr(path, ':');
    size_t len = colon ? (size_t)(colon - path) : strlen(path);
    snprintf(buf, sizeof buf, "%.*s/%s", (int)len, path, name);
    if (access(buf, X_OK) == 0)
      return 1;
    path = colon ? colon + 1 : NULL;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--serve") == 0)
    return serve(argv[2]);
  if (argc < 2) {
    fprintf(stderr, "usage: %s UQJIT | --serve LAYER\n", argv[0]);
    return 2;
  }
  if (geteuid() != 0) {
    printf("SKIP: not root: the layer must be built as root and read as "
           "another user\n");
    return 77;
  }
  if (!on_path("setpriv") || getpwnam("nobody") == NULL) {
    printf("SKIP: no setpriv or no user nobody to serve as\n");
    return 77;
  }
  if (!on_path("clang-22") && getenv("UQJIT_CLANG") == NULL) {
    printf("SKIP: no clang-22 to warm gfx950 with\n");
    return 77;
  }
  static char self_buf[PATH_MAX], uqjit_buf[PATH_MAX];
  if (realpath(argv[0], self_buf) == NULL ||
      realpath(argv[1], uqjit_buf) == NULL)
    return 1;
  self = self_buf;
  uqjit = uqjit_buf;
  cli_run_init(uqjit, 120000);
  setenv("UQJIT_QUIET", "1", 1);
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
  unsetenv("UQJIT_VARIANT");
  strcpy(root, "/tmp/uq-image-XXXXXX");
  if (mkdtemp(root) == NULL || chmod(root, 0755) != 0)
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layer_built_as_root_serves_another_user),
      cmocka_unit_test(layer_without_image_mode_is_unreadable_to_another_user),
      cmocka_unit_test(entry_writable_by_others_is_refused_by_the_reader),
  };
  int rc = cmocka_run_group_tests_name("image_layer", tests, NULL, NULL);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0)
    rc = 1;
  return rc;
}
