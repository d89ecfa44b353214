/* The GPU library candidate lists (lib/base/libs.c): what each library is
 * looked for as, in order, with the install roots set and unset; and that
 * uq_info_libraries reports exactly the list the loader walks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/libs.h"
#include "uqjit_tools.h"

static void expect_list(uq__lib_id id, const uq__lib_roots *roots,
                        const char *const *want) {
  uq__lib_list l;
  uq__libs_build(id, roots, &l);
  size_t n = 0;
  for (; want[n] != NULL; n++) {
    if (n >= l.count)
      fail_msg("%s: entry %zu missing, wanted %s", l.name, n, want[n]);
    if (strcmp(l.candidates[n], want[n]) != 0)
      fail_msg("%s: entry %zu is %s, wanted %s", l.name, n, l.candidates[n],
               want[n]);
  }
  assert_int_equal(l.count, n);
}

static const uq__lib_roots no_roots = {NULL, NULL, NULL};
static const uq__lib_roots roots = {"/x/rocm-7.0/", "/x/cuda-home",
                                    "/x/cuda-path"};

static void hip_runtime_tries_rocm5_to_7_under_rocm_path_and_opt_rocm(
    void **s) {
  (void)s;
  static const char *const bare[] = {
      "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
      "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so",
      "/opt/rocm/lib/libamdhip64.so.7", "/opt/rocm/lib/libamdhip64.so.6",
      "/opt/rocm/lib/libamdhip64.so.5", NULL};
  expect_list(UQ__LIB_HIP, &no_roots, bare);
  static const char *const rooted[] = {
      "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
      "libamdhip64.so.5", "/x/rocm-7.0/lib/libamdhip64.so",
      "/x/rocm-7.0/lib/libamdhip64.so.7", "/x/rocm-7.0/lib/libamdhip64.so.6",
      "/x/rocm-7.0/lib/libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so",
      "/opt/rocm/lib/libamdhip64.so.7", "/opt/rocm/lib/libamdhip64.so.6",
      "/opt/rocm/lib/libamdhip64.so.5", NULL};
  expect_list(UQ__LIB_HIP, &roots, rooted);
}

static void hiprtc_tries_libhiprtc_then_rocm5_libamdhip64(void **s) {
  (void)s;
  static const char *const want[] = {
      "libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6",
      "/x/rocm-7.0/lib/libhiprtc.so", "/x/rocm-7.0/lib/libhiprtc.so.7",
      "/x/rocm-7.0/lib/libhiprtc.so.6", "/opt/rocm/lib/libhiprtc.so",
      "/opt/rocm/lib/libhiprtc.so.7", "/opt/rocm/lib/libhiprtc.so.6",
      "libamdhip64.so.5", "/x/rocm-7.0/lib/libamdhip64.so.5",
      "/opt/rocm/lib/libamdhip64.so.5", NULL};
  expect_list(UQ__LIB_HIPRTC, &roots, want);
}

static void comgr_prefers_v2_then_v3_and_rocm_dirs(void **s) {
  (void)s;
  static const char *const want[] = {
      "libamd_comgr.so.2", "libamd_comgr.so.3", "libamd_comgr.so",
      "/opt/rocm/lib/libamd_comgr.so.2", "/opt/rocm/lib/libamd_comgr.so.3",
      "/opt/rocm/lib/libamd_comgr.so", NULL};
  expect_list(UQ__LIB_COMGR, &no_roots, want);
  /* ROCM_PATH naming /opt/rocm adds nothing twice. */
  uq__lib_roots opt = {"/opt/rocm//", NULL, NULL};
  expect_list(UQ__LIB_COMGR, &opt, want);
}

static void cuda_driver_tries_its_soname_first(void **s) {
  (void)s;
  static const char *const want[] = {"libcuda.so.1", "libcuda.so", NULL};
  expect_list(UQ__LIB_CUDA, &no_roots, want);
  expect_list(UQ__LIB_CUDA, &roots, want);
}

static void nvrtc_tries_cuda12_13_under_cuda_home_path_and_local(void **s) {
  (void)s;
  static const char *const bare[] = {
      "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
      "/usr/local/cuda/lib64/libnvrtc.so",
      "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12", NULL};
  expect_list(UQ__LIB_NVRTC, &no_roots, bare);
  static const char *const rooted[] = {
      "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
      "/x/cuda-home/lib64/libnvrtc.so", "/x/cuda-home/lib64/libnvrtc.so.13",
      "/x/cuda-home/lib64/libnvrtc.so.12", "/x/cuda-path/lib64/libnvrtc.so",
      "/x/cuda-path/lib64/libnvrtc.so.13",
      "/x/cuda-path/lib64/libnvrtc.so.12",
      "/usr/local/cuda/lib64/libnvrtc.so",
      "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12", NULL};
  expect_list(UQ__LIB_NVRTC, &roots, rooted);
}

/* The roots come from the environment; a relative one is ignored. */
static void roots_read_from_environment_and_relative_ignored(void **s) {
  (void)s;
  setenv("ROCM_PATH", "/x/rocm", 1);
  setenv("CUDA_HOME", "relative/cuda", 1);
  unsetenv("CUDA_PATH");
  uq__lib_roots r;
  uq__libs_roots_read(&r);
  assert_string_equal(r.rocm_path, "/x/rocm");
  assert_null(r.cuda_home);
  assert_null(r.cuda_path);
}

/* strstr that passes a NULL haystack through. */
static const char *find_after(const char *hay, const char *needle) {
  return hay != NULL ? strstr(hay, needle) : NULL;
}

/* The object of library `name` in uq_info_libraries's array. */
static const char *json_library(const char *json, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "{\"id\": \"%s\"", name);
  const char *obj = strstr(json, key);
  if (obj == NULL)
    fail_msg("no library %s in %s", name, json);
  return obj;
}

/* The process's lists come from the environment at first use: the test
 * before this one set ROCM_PATH=/x/rocm and nothing here built them yet. */
static void process_lists_built_from_environment(void **s) {
  (void)s;
  uq__lib_roots now;
  uq__libs_roots_read(&now);
  for (int id = 0; id < UQ__LIB_COUNT_; id++) {
    uq__lib_list want;
    uq__libs_build((uq__lib_id)id, &now, &want);
    const uq__lib_list *got = uq__libs_get((uq__lib_id)id);
    assert_int_equal(got->count, want.count);
    for (size_t i = 0; i < want.count; i++)
      assert_string_equal(got->candidates[i], want.candidates[i]);
  }
  assert_string_equal(uq__libs_get(UQ__LIB_HIP)->candidates[4],
                      "/x/rocm/lib/libamdhip64.so");
}

/* uq_info_libraries lists, for every library, the process's list (the one
 * uq__libs_probe walks) in order, with its override variable. Every
 * override points nowhere, so nothing is loaded (the unit suite runs under
 * valgrind, which dislikes the ROCm libraries' loading): each library's one
 * attempt is its override, which the loader reports. */
static void info_json_lists_the_loaders_candidates(void **s) {
  (void)s;
  for (int id = 0; id < UQ__LIB_COUNT_; id++)
    setenv(uq__env_name(uq__libs_get((uq__lib_id)id)->override),
           "/nonexistent/uq-unit-libs.so", 1);
  char *json = NULL;
  assert_int_equal(uq_info_libraries(&json), 0);
  assert_non_null(json);
  for (int id = 0; id < UQ__LIB_COUNT_; id++) {
    const uq__lib_list *l = uq__libs_get((uq__lib_id)id);
    const char *obj = json_library(json, l->name);
    char field[96];
    snprintf(field, sizeof field, "\"override\": \"%s\"",
             uq__env_name(l->override));
    assert_non_null(strstr(obj, field));
    const char *p = find_after(obj, "\"candidates\": [");
    const char *attempts = find_after(obj, "\"attempts\": [");
    assert_non_null(attempts);
    for (size_t i = 0; i < l->count; i++) {
      char quoted[UQ__LIB_NAME_MAX + 4];
      snprintf(quoted, sizeof quoted, "\"%s\"", l->candidates[i]);
      p = find_after(p, quoted);
      if (p == NULL || p > attempts)
        fail_msg("%s: candidate %s missing or out of order", l->name,
                 l->candidates[i]);
      p += strlen(quoted);
    }
    assert_int_equal(p[0], ']'); /* nothing after the last */
    static const char attempt[] = "\"attempts\": [{\"name\": "
                                  "\"/nonexistent/uq-unit-libs.so\", "
                                  "\"error\": ";
    assert_true(strncmp(attempts, attempt, strlen(attempt)) == 0);
    void *h = NULL;
    assert_int_equal(uq__libs_open((uq__lib_id)id, UQ_ENODEV, &h), UQ_ENODEV);
    assert_non_null(strstr(uq_last_error(), uq__env_name(l->override)));
    assert_non_null(strstr(uq_last_error(), "/nonexistent/uq-unit-libs.so"));
  }
  uq_free(json);
  for (int id = 0; id < UQ__LIB_COUNT_; id++)
    unsetenv(uq__env_name(uq__libs_get((uq__lib_id)id)->override));
}

/* The walk tries the candidates in order until one loads, and the load
 * failure names each with its reason. */
static void walk_tries_candidates_in_order(void **s) {
  (void)s;
  uq__lib_list l;
  memset(&l, 0, sizeof l);
  l.name = "test";
  l.what = "the test library";
  l.override = UQ__ENV_CUDA_LIB;
  l.count = 3;
  strcpy(l.candidates[0], "/nonexistent/a.so");
  strcpy(l.candidates[1], "/nonexistent/b.so");
  strcpy(l.candidates[2], "/nonexistent/c.so");
  uq__lib_probe *p = calloc(1, sizeof *p);
  assert_non_null(p);
  assert_int_equal(uq__libs_walk(&l, NULL, p), UQ_ENOENT);
  assert_int_equal(p->tried, 3);
  assert_int_equal(p->loaded, -1);
  for (size_t i = 0; i < 3; i++) {
    assert_string_equal(uq__libs_attempt(p, i), l.candidates[i]);
    assert_non_null(strstr(p->why[i], l.candidates[i]));
  }
  assert_null(uq__libs_attempt(p, 3));
  assert_int_equal(uq__libs_walk(&l, "/nonexistent/forced.so", p), UQ_ENOENT);
  assert_int_equal(p->tried, 1);
  assert_string_equal(uq__libs_attempt(p, 0), "/nonexistent/forced.so");
  assert_null(uq__libs_attempt(p, 1));
  free(p);
}

/* With the real libraries (the compile suite, not under valgrind): what
 * the loader tries is a prefix of the list, and info reports exactly those
 * attempts and the file that loaded. */
static void loader_attempts_match_info(void **s) {
  (void)s;
  char *json = NULL;
  assert_int_equal(uq_info_libraries(&json), 0);
  uq__lib_probe *p = calloc(1, sizeof *p);
  assert_non_null(p);
  for (int id = 0; id < UQ__LIB_COUNT_; id++) {
    const uq__lib_list *l = uq__libs_get((uq__lib_id)id);
    if (uq__env_get(l->override) != NULL)
      continue;
    uq__libs_probe((uq__lib_id)id, p);
    assert_true(p->tried >= 1 && p->tried <= l->count);
    const char *obj = json_library(json, l->name);
    const char *q = find_after(obj, "\"attempts\": [");
    for (size_t i = 0; i < p->tried; i++) {
      assert_string_equal(uq__libs_attempt(p, i), l->candidates[i]);
      char quoted[UQ__LIB_NAME_MAX + 16];
      snprintf(quoted, sizeof quoted, "{\"name\": \"%s\"", l->candidates[i]);
      q = find_after(q, quoted);
      if (q == NULL)
        fail_msg("%s: info lacks attempt %s", l->name, l->candidates[i]);
    }
    if (p->loaded >= 0) {
      char loaded[4200];
      snprintf(loaded, sizeof loaded, "], \"loaded\": \"%s\"}", p->path);
      assert_non_null(strstr(obj, loaded));
    }
  }
  free(p);
  uq_free(json);
}

int main(int argc, char **argv) {
  const struct CMUnitTest unit[] = {
      cmocka_unit_test(hip_runtime_tries_rocm5_to_7_under_rocm_path_and_opt_rocm),
      cmocka_unit_test(hiprtc_tries_libhiprtc_then_rocm5_libamdhip64),
      cmocka_unit_test(comgr_prefers_v2_then_v3_and_rocm_dirs),
      cmocka_unit_test(cuda_driver_tries_its_soname_first),
      cmocka_unit_test(nvrtc_tries_cuda12_13_under_cuda_home_path_and_local),
      cmocka_unit_test(roots_read_from_environment_and_relative_ignored),
      cmocka_unit_test(process_lists_built_from_environment),
      cmocka_unit_test(info_json_lists_the_loaders_candidates),
      cmocka_unit_test(walk_tries_candidates_in_order),
  };
  const struct CMUnitTest load[] = {
      cmocka_unit_test(loader_attempts_match_info),
  };
  if (argc > 1 && strcmp(argv[1], "--load") == 0)
    return cmocka_run_group_tests(load, NULL, NULL);
  return cmocka_run_group_tests(unit, NULL, NULL);
}
