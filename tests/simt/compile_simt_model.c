/* The host fiber model of tests/simt/simt_host.h, on small kernels whose
 * results are known: a block barrier makes every thread's shared-memory
 * write visible (and without it a thread reads stale data, so a missing
 * barrier in a kernel shows); the warp shuffle exchanges within warps of
 * 32; threads that return count as arrived; barriers that cannot complete
 * are reported, not hung on. In the ThreadSanitizer build the missing
 * barrier must be reported as a data race instead. Exits 77 without a
 * host C++ compiler. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/os.h"
#include "tests/simt/host_kernels.h"

typedef struct params {
  int *out;
  int threads;
  int mode; /* per kernel */
} params;

#define PRELUDE                                                              \
  "#include \"tests/simt/prelude_host.hip\"\n"                               \
  "struct P { int *out; int threads; int mode; };\n"
#define LAUNCH                                                               \
  "extern \"C\" __attribute__((visibility(\"default\")))\n"                  \
  "int uq_host_launch(const unsigned g[3], const void *p, char *e,\n"        \
  "                   size_t n) {\n"                                         \
  "  return uq_simt_run(g, ((const P *)p)->threads, body, p, e, n);\n"      \
  "}\n"

/* Each thread writes its slot, then (mode 1: after a barrier) reads its
 * upper neighbour's (mode 2: its lower neighbour's, no barrier). */
static const char rotate_src[] =
    PRELUDE
    "static void body(const void *pv) {\n"
    "  const P &p = *(const P *)pv;\n"
    "  UQ_SHARED int s[1024];\n"
    "  const int t = uq_tid(), n = (int)blockDim.x;\n"
    "  s[t] = 1000 * uq_bid_x() + t;\n"
    "  if (p.mode == 1)\n"
    "    uq_barrier();\n"
    "  p.out[uq_bid_x() * n + t] = s[(t + (p.mode == 2 ? n - 1 : 1)) % n];\n"
    "}\n" LAUNCH;

static const char shuffle_src[] =
    PRELUDE
    "static void body(const void *pv) {\n"
    "  const P &p = *(const P *)pv;\n"
    "  const int t = uq_tid();\n"
    "  int acc = 0;\n"
    "  for (int m = 1; m < 32; m <<= 1)\n"
    "    acc = acc * 64 + (int)uq_lane_xor_u32((uq_u32)t, m) % 64;\n"
    "  p.out[t] = acc;\n"
    "}\n" LAUNCH;

/* mode 0: threads >= 40 return early, the rest meet at a barrier;
 * mode 1: half a warp waits at a block barrier, the other half at a warp
 * shuffle: neither can complete. */
static const char arrive_src[] =
    PRELUDE
    "static void body(const void *pv) {\n"
    "  const P &p = *(const P *)pv;\n"
    "  UQ_SHARED int s[64];\n"
    "  const int t = uq_tid();\n"
    "  if (p.mode == 0) {\n"
    "    if (t >= 40)\n"
    "      return;\n"
    "    s[t] = t;\n"
    "    uq_barrier();\n"
    "    p.out[t] = s[39 - t];\n"
    "  } else if (t < 16) {\n"
    "    uq_barrier();\n"
    "  } else {\n"
    "    p.out[t] = (int)uq_lane_xor_u32((uq_u32)t, 1);\n"
    "  }\n"
    "}\n" LAUNCH;

static int out[4 * 1024];

static void run(const char *name, const char *src, uint32_t blocks,
                int threads, int mode, int want_rc, char *err, size_t n) {
  memset(out, 0xAB, sizeof out);
  params p = {out, threads, mode};
  const uint32_t grid[3] = {blocks, 1, 1};
  int rc = hk_run_source(name, src, grid, &p, err, n);
  if (rc != want_rc)
    fail_msg("%s mode %d: status %d (%s), wanted %d", name, mode, rc, err,
             want_rc);
}

static void barrier_publishes_shared_writes(void **s) {
  (void)s;
  char err[256] = "";
  run("rotate", rotate_src, 3, 96, 1, 0, err, sizeof err);
  for (int b = 0; b < 3; b++)
    for (int t = 0; t < 96; t++)
      assert_int_equal(out[b * 96 + t], 1000 * b + (t + 1) % 96);
}

static char self_path[PATH_MAX];

static int thread_sanitizer_build(void) {
  const char *san = getenv("UQ_TEST_SANITIZE");
  return san != NULL && strstr(san, "thread") != NULL;
}

static void without_barrier_threads_read_stale_shared_data(void **s) {
  (void)s;
  char err[256] = "";
  if (thread_sanitizer_build()) {
    /* The race is the point: ThreadSanitizer must report it, in a child
     * (its report fails the process that races). */
    char *const argv[] = {self_path, "race", NULL};
    char *log = NULL;
    int code = -1;
    assert_int_equal(uq__os_run(argv, NULL, NULL, NULL, &log, &code), 0);
    int reported = log != NULL && strstr(log, "ThreadSanitizer: data race");
    printf("racing child: exit %d, %s\n", code,
           reported ? "race reported" : "no report");
    uq_free(log);
    assert_true(reported && code != 0);
    return;
  }
  /* Threads run one at a time to their next barrier, in thread order in
   * block 0 and in reverse in block 1: with no barrier, reading the upper
   * neighbour's slot sees block 0's stale value... */
  run("rotate", rotate_src, 2, 64, 0, 0, err, sizeof err);
  int stale = 0;
  for (int t = 0; t < 63; t++)
    stale += out[t] != t + 1;
  assert_int_equal(stale, 63);
  for (int t = 0; t < 63; t++) /* (block 1 ran each writer first) */
    assert_int_equal(out[64 + t], 1000 + t + 1);
  /* ... and reading the lower neighbour's, block 1's (it holds block 0's
   * values: 1000 apart). */
  run("rotate", rotate_src, 2, 64, 2, 0, err, sizeof err);
  stale = 0;
  for (int t = 1; t < 64; t++)
    stale += out[64 + t] != 1000 + t - 1;
  assert_int_equal(stale, 63);
}

static void warp_shuffle_exchanges_within_32_lanes(void **s) {
  (void)s;
  char err[256] = "";
  run("shuffle", shuffle_src, 1, 128, 0, 0, err, sizeof err);
  for (int t = 0; t < 128; t++) {
    int want = 0;
    for (int m = 1; m < 32; m <<= 1)
      want = want * 64 + ((t & ~31) | ((t & 31) ^ m)) % 64;
    assert_int_equal(out[t], want);
  }
}

static void returned_threads_count_as_arrived(void **s) {
  (void)s;
  char err[256] = "";
  run("arrive", arrive_src, 1, 64, 0, 0, err, sizeof err);
  for (int t = 0; t < 40; t++)
    assert_int_equal(out[t], 39 - t);
}

static void barriers_that_cannot_complete_are_reported(void **s) {
  (void)s;
  char err[256] = "";
  run("arrive", arrive_src, 1, 32, 1, UQ_EDEVICE, err, sizeof err);
  printf("reported: %s\n", err);
  assert_non_null(strstr(err, "deadlocked: 16 threads at __syncthreads, 16 at "
                              "a warp shuffle"));
}

int main(int argc, char **argv) {
  char cxx[PATH_MAX];
  if (hk_find_compiler(cxx, sizeof cxx) != 0) {
    printf("SKIP: no host C++ compiler (c++, g++, clang++; or UQ_TEST_CXX)\n");
    return 77;
  }
  if (argc == 2 && strcmp(argv[1], "race") == 0) { /* the racing child */
    char err[256] = "";
    params p = {out, 64, 0};
    const uint32_t grid[3] = {2, 1, 1};
    int rc = hk_run_source("rotate", rotate_src, grid, &p, err, sizeof err);
    hk_shutdown();
    return rc != 0;
  }
  if (uq__os_find_program(argv[0], self_path, sizeof self_path) != 0) {
    fprintf(stderr, "cannot resolve %s\n", argv[0]);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(barrier_publishes_shared_writes),
      cmocka_unit_test(without_barrier_threads_read_stale_shared_data),
      cmocka_unit_test(warp_shuffle_exchanges_within_32_lanes),
      cmocka_unit_test(returned_threads_count_as_arrived),
      cmocka_unit_test(barriers_that_cannot_complete_are_reported),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  hk_shutdown();
  return rc;
}
