/* Generated kernels run on the CPU (see host_kernels.h). */
#include "tests/simt/host_kernels.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/os.h"
#include "lib/runtime/launch.h"

/* What a built kernel exports: the trailer below. */
typedef int (*hk_launch_fn)(const unsigned grid[3], const void *params,
                            char *err, size_t errlen);

typedef struct hk_kernel {
  char name[256]; /* uq_key_name */
  void *dl;
  hk_launch_fn launch;
} hk_kernel;

#define HK_MAX 256 /* keys of one test program */
static hk_kernel built[HK_MAX];
static int nbuilt;
static uq__os_scratch work = {"", -1};
static char cxx[PATH_MAX];
static int last_variant = -1;

int hk_find_compiler(char *out, size_t n) {
  const char *env = getenv("UQ_TEST_CXX");
  if (env != NULL && *env != '\0')
    return uq__os_find_program(env, out, n);
  static const char *const names[] = {"c++", "g++", "clang++-22", "clang++"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (uq__os_find_program(names[i], out, n) == 0)
      return 0;
  return UQ_ENOENT;
}

/* The generated source with its NVRTC prelude replaced by the host one,
 * and a trailer exporting uq_host_launch, which runs the kernel over a
 * grid through the fiber model. */
static char *host_source(const uq_key *key) {
  char *src = NULL;
  size_t len = 0;
  if (uq_kernel_source(key, &src, &len) != 0) {
    fprintf(stderr, "uq_kernel_source: %s\n", uq_last_error());
    return NULL;
  }
  const char *from = strstr(src, "/* ---- prelude_nvrtc.hip ---- */");
  const char *to = strstr(src, "/* ---- uq_abi.h ---- */");
  if (from == NULL || to == NULL || to < from) {
    fprintf(stderr, "generated source without the NVRTC prelude\n");
    uq_free(src);
    return NULL;
  }
  const char *params, *threads;
  switch (key->kind) {
  case UQ_KERNEL_DECODE:
    params = "uq_decode_params", threads = "UQ_BLOCK_THREADS";
    break;
  case UQ_KERNEL_REDUCE:
    params = "uq_reduce_params", threads = "UQ_REDUCE_THREADS";
    break;
  case UQ_KERNEL_PROLOGUE:
    params = "uq_prologue_params", threads = "UQ_BLOCK_THREADS";
    break;
  case UQ_KERNEL_STORE:
    params = "uq_store_params", threads = "UQ_BLOCK_THREADS";
    break;
  default:
    fprintf(stderr, "kernel kind %u does not run on the host\n", key->kind);
    uq_free(src);
    return NULL;
  }
  static const char fmt[] =
      "%.*s#include \"tests/simt/prelude_host.hip\"\n%s\n"
      "static void uq_host_body(const void *p) {\n"
      "  UQ_KERNEL_NAME(*(const %s *)p);\n"
      "}\n"
      "extern \"C\" __attribute__((visibility(\"default\")))\n"
      "int uq_host_launch(const unsigned grid[3], const void *params, char *err,\n"
      "                   size_t errlen) {\n"
      "  return uq_simt_run(grid, %s, uq_host_body, params, err, errlen);\n"
      "}\n";
  size_t n = strlen(src) + sizeof fmt + 256;
  char *out = malloc(n);
  if (out != NULL)
    snprintf(out, n, fmt, (int)(from - src), src, to, params, threads);
  uq_free(src);
  return out;
}

/* The kernel built under `name`, or NULL. */
static hk_kernel *find_built(const char *name) {
  for (int i = 0; i < nbuilt; i++)
    if (strcmp(built[i].name, name) == 0)
      return &built[i];
  return NULL;
}

/* Compiles `text` (C++ over prelude_host.hip, exporting uq_host_launch)
 * and loads it as kernel `name`; a name built before is reused. */
static hk_kernel *build_text(const char *name, const char *text) {
  hk_kernel *k = find_built(name);
  if (k != NULL)
    return k;
  if (nbuilt == HK_MAX) {
    fprintf(stderr, "more than %d host kernels\n", HK_MAX);
    return NULL;
  }
  if (cxx[0] == '\0' && hk_find_compiler(cxx, sizeof cxx) != 0) {
    fprintf(stderr, "no host C++ compiler\n");
    return NULL;
  }
  if (work.path[0] == '\0' && uq__os_scratch_make(&work) != 0) {
    fprintf(stderr, "no scratch directory: %s\n", uq_last_error());
    return NULL;
  }
  const char *root = getenv("UQ_SOURCE_ROOT");
  char cpp[PATH_MAX], so[PATH_MAX], inc[PATH_MAX + 2];
  if (snprintf(cpp, sizeof cpp, "%s/k%d.cpp", work.path, nbuilt) >= PATH_MAX ||
      snprintf(so, sizeof so, "%s/k%d.so", work.path, nbuilt) >= PATH_MAX ||
      snprintf(inc, sizeof inc, "-I%s", root != NULL ? root : ".") >=
          (int)sizeof inc) {
    fprintf(stderr, "%s: paths too long\n", name);
    return NULL;
  }
  if (uq__os_write_file(cpp, text, strlen(text)) != 0) {
    fprintf(stderr, "%s: %s\n", name, uq_last_error());
    return NULL;
  }
  /* -ffp-contract=off: the kernels' explicitly rounded operations and the
   * NVRTC route's semantics (no contraction across them); -O1 keeps the
   * build quick. In the sanitizer build (UQ_TEST_SANITIZE, set by
   * tests/meson.build from b_sanitize) the kernels are instrumented too, so
   * their reads and writes of the buffers and of shared memory are
   * checked (the test program carries the sanitizer runtimes; the same
   * compiler family must build both). */
  char fsan[64] = "";
  const char *san = getenv("UQ_TEST_SANITIZE");
  if (san != NULL && *san != '\0' && strcmp(san, "none") != 0 &&
      snprintf(fsan, sizeof fsan, "-fsanitize=%s", san) >= (int)sizeof fsan) {
    fprintf(stderr, "UQ_TEST_SANITIZE=%s: too long\n", san);
    return NULL;
  }
  char *argv[16] = {cxx, "-std=c++17", "-O1", "-fPIC", "-shared",
                    "-ffp-contract=off", "-fno-strict-aliasing",
                    "-Wno-unknown-pragmas", inc, "-o", so, cpp};
  if (fsan[0] != '\0') {
    argv[12] = fsan;
    argv[13] = "-fno-omit-frame-pointer";
  }
  char *log = NULL;
  int code = -1;
  if (uq__os_run(argv, NULL, NULL, NULL, &log, &code) != 0 || code != 0) {
    fprintf(stderr, "%s: host compile failed (exit %d):\n%s\n", name, code,
            log != NULL ? log : uq_last_error());
    uq_free(log);
    return NULL;
  }
  uq_free(log);
  k = &built[nbuilt];
  k->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (k->dl == NULL) {
    fprintf(stderr, "%s: %s\n", name, dlerror());
    return NULL;
  }
  k->launch = (hk_launch_fn)(uintptr_t)dlsym(k->dl, "uq_host_launch");
  if (k->launch == NULL) {
    fprintf(stderr, "%s: no uq_host_launch: %s\n", name, dlerror());
    dlclose(k->dl);
    return NULL;
  }
  snprintf(k->name, sizeof k->name, "%s", name);
  nbuilt++;
  return k;
}

static hk_kernel *build(const uq_key *key) {
  char name[256];
  if (uq_key_name(key, name, sizeof name) <= 0)
    return NULL;
  hk_kernel *k = find_built(name);
  if (k != NULL)
    return k;
  char *text = host_source(key);
  if (text == NULL)
    return NULL;
  k = build_text(name, text);
  free(text);
  return k;
}

int hk_run_source(const char *name, const char *cpp, const uint32_t grid[3],
                  const void *params, char *err, size_t errlen) {
  hk_kernel *k = build_text(name, cpp);
  if (k == NULL) {
    snprintf(err, errlen, "%s: not built", name);
    return UQ_ECOMPILE;
  }
  const unsigned g[3] = {grid[0], grid[1], grid[2]};
  return k->launch(g, params, err, errlen) != 0 ? UQ_EDEVICE : 0;
}

static int launch(hk_kernel *k, const uint32_t grid[3], const void *params) {
  const unsigned g[3] = {grid[0], grid[1], grid[2]};
  char err[256] = "";
  if (k->launch(g, params, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", k->name, err);
    return UQ_EDEVICE;
  }
  return 0;
}

int hk_decode(const uq_shape *shape, const char *target, const char *variant,
              const uq_decode_args *args, void *workspace,
              size_t workspace_bytes) {
  uq_plan plan;
  int rc = uq_plan_make_variant(shape, target, variant, &plan);
  if (rc != 0) {
    fprintf(stderr, "uq_plan_make_variant: %s\n", uq_last_error());
    return rc;
  }
  if (!plan.eligible || workspace_bytes < plan.workspace_bytes) {
    fprintf(stderr, "not eligible (%s) or workspace %zu < %zu\n", plan.reason,
            workspace_bytes, plan.workspace_bytes);
    return UQ_EINVAL;
  }
  hk_kernel *ks[UQ_PLAN_MAX_KERNELS] = {NULL};
  for (int i = 0; i < plan.num_kernels; i++)
    if ((ks[i] = build(&plan.kernels[i])) == NULL)
      return UQ_ECOMPILE;
  last_variant = (int)plan.kernels[0].variant;
  /* uq_decode's parameter blocks, launched in its order. */
  uq__decode_launch lp;
  uq__decode_launch_params(&plan, shape, args, workspace, &lp);
  if (!plan.fuse_qrot &&
      (rc = launch(ks[2], plan.prologue_grid, &lp.prologue)) != 0)
    return rc;
  if ((rc = launch(ks[0], plan.decode_grid, &lp.decode)) != 0)
    return rc;
  return launch(ks[1], plan.reduce_grid, &lp.reduce);
}

int hk_store(const uq_store_args *args, const char *target) {
  uq_key key;
  int rc = uq_store_key(args->head_dim, args->num_kv_heads, args->padded_slot,
                        args->dtype, target, &key);
  if (rc != 0) {
    fprintf(stderr, "uq_store_key: %s\n", uq_last_error());
    return rc;
  }
  hk_kernel *k = build(&key);
  if (k == NULL)
    return UQ_ECOMPILE;
  if (args->num_tokens == 0)
    return 0;
  uq_store_params sp;
  uint32_t grid[3];
  uq__store_launch_params(args, &sp, grid);
  return launch(k, grid, &sp);
}

int hk_last_variant(void) { return last_variant; }

void hk_shutdown(void) {
  for (int i = 0; i < nbuilt; i++)
    dlclose(built[i].dl);
  nbuilt = 0;
  uq__os_scratch_remove(&work);
}
