/* A warmed cache serving a deployment image: warm with NVRTC (sm_90a,
 * sm_90) and clang (gfx950), then fetch every kernel with each compiler
 * made unreachable (UQJIT_CLANG, UQJIT_NVRTC_LIB, UQJIT_HIPRTC_LIB point
 * nowhere) and UQJIT_DISABLE_JIT=1: only hits, nothing compiled; and the
 * same from a read-only UQJIT_CACHE_PATH layer with an empty writable
 * directory that stays empty. Each phase runs in a child process, so that
 * no compiler loaded by one phase is still there in the next. Targets
 * whose compiler is missing here are skipped (both tests when none is). */
#include <dirent.h>
#include <limits.h>
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

#include "tests/support/internal/cache_util.h"
#include "uqjit_tools.h"

static const char *const targets[] = {"sm_90a", "sm_90", "gfx950"};
#define NTARGETS 3
#define MAX_KEYS 64

/* Targets warmed by the first phase (bit i: targets[i]). */
static int warmed_mask;

/* In a child: report and leave with status 1 (cmocka's asserts would jump
 * back into the parent's copy of the runner). */
#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);            \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, " (%s)\n", uq_last_error());                          \
      _exit(1);                                                             \
    }                                                                       \
  } while (0)

/* Every kernel decodes of two batch sizes use, and the store kernel. */
static size_t plan_keys(const char *target, uq_key *keys) {
  size_t n = 0;
  static const int batches[] = {1, 8};
  for (int b = 0; b < 2; b++) {
    uq_shape s;
    uq_shape_init(&s);
    s.batch = batches[b];
    s.num_q_heads = 8;
    s.num_kv_heads = 1;
    s.head_dim = 256;
    s.block_size = 16;
    s.max_blocks_per_seq = 64;
    uq_plan p;
    CHECK(uq_plan_make(&s, target, &p) == 0 && p.eligible, "plan %s",
          target);
    for (int i = 0; i < p.num_kernels && n < MAX_KEYS; i++)
      keys[n++] = p.kernels[i];
  }
  return n;
}

static uq_context *open_ctx(const char *target, const char *dir) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = target;
  o.cache_dir = dir; /* NULL: UQJIT_CACHE_DIR */
  uq_context *ctx = NULL;
  CHECK(uq_context_create(&o, &ctx) == 0, "context for %s", target);
  return ctx;
}

static void make_compilers_unreachable(void) {
  setenv("UQJIT_CLANG", "/nonexistent/clang-22", 1);
  setenv("UQJIT_NVRTC_LIB", "/nonexistent/libnvrtc.so", 1);
  setenv("UQJIT_HIPRTC_LIB", "/nonexistent/libhiprtc.so", 1);
}

/* Runs fn(arg) in a child; returns its exit status (-1 on a signal). */
static int in_child(int (*fn)(const char *), const char *arg) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(fn(arg));
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Phase 1: compiles every target whose compiler is here into `dir`.
 * Exit status: the mask of targets warmed (every kernel compiled now). */
static int warm_phase(const char *dir) {
  int mask = 0;
  for (int t = 0; t < NTARGETS; t++) {
    uq_key keys[MAX_KEYS];
    size_t n = plan_keys(targets[t], keys);
    uq_context *ctx = open_ctx(targets[t], dir);
    uq_compile_summary sum;
    int rc = uq_compile_keys(ctx, keys, n, 2, NULL, NULL, &sum);
    uq_context_destroy(ctx);
    if (rc == UQ_ENOCOMPILER) {
      fprintf(stderr, "no compiler for %s here: not tested (%s)\n",
              targets[t], uq_last_error());
      continue;
    }
    CHECK(rc == 0 && sum.failed == 0 && sum.compiled == sum.keys,
          "warm %s: %llu compiled of %llu", targets[t],
          (unsigned long long)sum.compiled, (unsigned long long)sum.keys);
    mask |= 1 << t;
  }
  return mask;
}

/* Every kernel of every warmed target is a disk hit through the library,
 * nothing is compiled, and each code object names its compiler. */
static void expect_all_hits(const char *dir) {
  for (int t = 0; t < NTARGETS; t++) {
    if (!(warmed_mask & (1 << t)))
      continue;
    uq_key keys[MAX_KEYS];
    size_t n = plan_keys(targets[t], keys);
    uq_context *ctx = open_ctx(targets[t], dir);
    uq_compile_summary sum;
    CHECK(uq_compile_keys(ctx, keys, n, 2, NULL, NULL, &sum) == 0,
          "warm again %s", targets[t]);
    CHECK(sum.compiled == 0 && sum.failed == 0 && sum.hits == sum.keys,
          "%s: %llu hits of %llu", targets[t], (unsigned long long)sum.hits,
          (unsigned long long)sum.keys);
    uq_context_destroy(ctx);
    /* A fresh context: each code object comes from disk. */
    ctx = open_ctx(targets[t], dir);
    for (size_t i = 0; i < n; i++) {
      void *obj = NULL;
      size_t len = 0;
      uq_code_info info;
      CHECK(uq_code_object(ctx, &keys[i], &obj, &len, &info) == 0 && len > 0,
            "code object %zu of %s", i, targets[t]);
      CHECK(info.compiler[0] != '\0', "no provenance for %s", targets[t]);
      CHECK(uq_cache_find(dir, &keys[i], NULL, NULL) == 0, "uq_cache_find");
      uq_free(obj);
    }
    uq_stats st;
    CHECK(uq_get_stats(ctx, &st) == 0, "stats");
    CHECK(st.compiles == 0 && st.disk_hits > 0, "%llu compiles",
          (unsigned long long)st.compiles);
    uq_context_destroy(ctx);
  }
}

static int no_compiler_phase(const char *dir) {
  make_compilers_unreachable();
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  expect_all_hits(dir);
  /* Also where the JIT is allowed but no compiler is found. */
  unsetenv("UQJIT_DISABLE_JIT");
  expect_all_hits(dir);
  return 0;
}

static void warm_into(const char *dir) {
  int mask = in_child(warm_phase, dir);
  assert_true(mask >= 0 && mask < (1 << NTARGETS));
  warmed_mask = mask;
  if (mask == 0)
    skip();
}

static void warmed_cache_serves_every_kernel_with_no_compiler_reachable(
    void **state) {
  (void)state;
  char d[PATH_MAX];
  cu_mkdtemp(d);
  warm_into(d);
  int entries = cu_count_entries(d);
  assert_int_equal(in_child(no_compiler_phase, d), 0);
  assert_int_equal(cu_count_entries(d), entries);
  cu_rm_rf(d);
}

/* The files and directories below `dir`. */
static int count_below(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      n++;
  closedir(d);
  return n;
}

static char layer[PATH_MAX];

static int read_only_phase(const char *empty) {
  make_compilers_unreachable();
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  setenv("UQJIT_CACHE_PATH", layer, 1);
  setenv("UQJIT_CACHE_DIR", empty, 1);
  expect_all_hits(NULL);
  return 0;
}

static void chmod_tree(const char *path, int writable) {
  char cmd[PATH_MAX + 32];
  cu_fmt(cmd, "chmod -R %s '%s'", writable ? "u+w" : "a-w", path);
  assert_int_equal(system(cmd), 0);
}

static void read_only_layer_serves_with_empty_writable_dir_writing_nothing(
    void **state) {
  (void)state;
  char root[PATH_MAX], empty[PATH_MAX];
  cu_mkdtemp(root);
  cu_fmt(layer, "%s/image", root);
  cu_fmt(empty, "%s/writable", root);
  cu_mkdirs(layer, 0700);
  cu_mkdirs(empty, 0700);
  warm_into(layer);
  int entries = cu_count_entries(layer);
  /* Root writes through any mode: there the empty writable directory
   * staying empty and the layer staying unchanged are the proof. */
  int as_root = geteuid() == 0;
  if (!as_root)
    chmod_tree(layer, 0);
  int rc = in_child(read_only_phase, empty);
  if (!as_root)
    chmod_tree(layer, 1);
  assert_int_equal(rc, 0);
  assert_int_equal(count_below(empty), 0);
  assert_int_equal(cu_count_entries(layer), entries);
  assert_int_equal(cu_count_temps(root), 0);
  cu_rm_rf(root);
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 1);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
  unsetenv("UQJIT_VARIANT");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          warmed_cache_serves_every_kernel_with_no_compiler_reachable),
      cmocka_unit_test(
          read_only_layer_serves_with_empty_writable_dir_writing_nothing),
  };
  return cmocka_run_group_tests_name("cache_deploy", tests, NULL, NULL);
}
