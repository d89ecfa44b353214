/* The uqjit dump, warm, cache, info, demo and bench commands as a user
 * runs them. argv[1] is the uqjit binary (tests/cli/meson.build passes it),
 * argv[2] the group: "unit" (no compiler: sources, cache admin on an empty
 * directory, info, demo on the CPU with JIT disabled, misuse) or "compile"
 * (needs clang-22: warm into a temporary cache, hits on the second run,
 * a corrupted entry found by verify and recompiled alone, prune, dump
 * --isa). */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/cli_run.h"

static const char *group;

/* ------------------------------------------------------------------ */
/* Helpers. */

static void expect_ok(const result *r, const char *what) {
  if (r->code != 0)
    fail_msg("%s: exit %d, stderr: %s", what, r->code, r->err);
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void rmtree(const char *dir) {
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *make_tmpdir(void) {
  char *dir = strdup("/tmp/uq_cli_tools_XXXXXX");
  assert_non_null(dir);
  assert_non_null(mkdtemp(dir));
  return dir;
}

static int count_occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* Lines of `out` that are not '#' comments (ls's entry lines). */
static int entry_lines(const char *out) {
  int n = 0;
  for (const char *p = out; *p;) {
    const char *nl = strchr(p, '\n');
    if (*p != '#')
      n++;
    if (nl == NULL)
      break;
    p = nl + 1;
  }
  return n;
}

static char found_entry[4096];
static int find_entry(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw) {
  (void)ftw;
  size_t n = strlen(path);
  if (flag == FTW_F && S_ISREG(st->st_mode) && n > 3 &&
      strcmp(path + n - 3, ".co") == 0) {
    snprintf(found_entry, sizeof found_entry, "%s", path);
    return 1;
  }
  return 0;
}

/* Flips one byte in the middle of one entry (inside its payload). */
static void corrupt_one_entry(const char *dir) {
  found_entry[0] = '\0';
  nftw(dir, find_entry, 16, FTW_PHYS);
  if (!found_entry[0])
    fail_msg("no .co entry under %s", dir);
  int fd = open(found_entry, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  assert_true(st.st_size > 128);
  off_t at = st.st_size / 2;
  unsigned char c;
  assert_int_equal(pread(fd, &c, 1, at), 1);
  c ^= 0x5a;
  assert_int_equal(pwrite(fd, &c, 1, at), 1);
  close(fd);
}

static int have_program(const char *name) {
  const char *path = getenv("PATH");
  if (path == NULL)
    return 0;
  char *copy = strdup(path), *save = NULL;
  int found = 0;
  for (char *d = strtok_r(copy, ":", &save); d && !found;
       d = strtok_r(NULL, ":", &save)) {
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", d, name);
    found = access(full, X_OK) == 0;
  }
  free(copy);
  return found;
}

/* W = 64 x 64 = 4096 tokens, B = 4: P = 32 (FORMAT.md section 6: required
 * 16, floor 32, cap 512, at most ceil(4096/192) = 22 -> next pow2 32). */
#define SHAPE_SMALL                                                         \
  "--batch", "4", "--q-heads", "16", "--kv-heads", "2", "--head-dim",     \
      "256", "--block-size", "64", "--max-blocks-per-seq", "64"

/* ------------------------------------------------------------------ */
/* unit: no compiler needed. */

static void dump_prints_decode_kernel_source_for_sm90_and_gfx950(void **s) {
  (void)s;
  static const char *const targets[][2] = {{"sm_90", "prelude_nvrtc.hip"},
                                           {"gfx950", "prelude_clang.hip"}};
  for (size_t t = 0; t < 2; t++) {
    result r = RUN("dump", SHAPE_SMALL, "--target", targets[t][0]);
    expect_ok(&r, targets[t][0]);
    assert_string_equal(r.err, "");
    char want[256];
    snprintf(want, sizeof want,
             "#define UQ_KERNEL_NAME uq_decode_%s_bf16_v0_d256_hk2_p32_mb64_"
             "s0_06250000_qg8_bs64_ps272_fq1_t1_sq4096_sh256\n",
             targets[t][0]);
    if (strstr(r.out, want) == NULL)
      fail_msg("no '%s' in the %s dump", want, targets[t][0]);
    snprintf(want, sizeof want,
             "#define UQ_KERNEL_NAME uq_reduce_%s_bf16_v0_d256_hk2_p32_qg8\n",
             targets[t][0]);
    assert_non_null(strstr(r.out, want));
    assert_non_null(strstr(r.out, "void UQ_KERNEL_NAME("));
    assert_non_null(strstr(r.out, targets[t][1]));
    /* The fused shape has no prologue: two kernels, two headers. */
    assert_int_equal(count_occurrences(r.out, "// ==== "), 2);
    result_free(&r);
  }
}

static void dump_kind_and_key_select_one_kernel(void **s) {
  (void)s;
  result r = RUN("dump", SHAPE_SMALL, "--target", "sm_90", "--kind",
                 "reduce");
  expect_ok(&r, "--kind reduce");
  assert_int_equal(count_occurrences(r.out, "// ==== "), 1);
  assert_non_null(
      strstr(r.out, "// ==== reduce kernel: uq_reduce_sm_90_bf16_v0_d256_"
                    "hk2_p32_qg8 ===="));
  char *by_kind = strdup(r.out);
  result_free(&r);

  r = RUN("dump", "--key", "uq_reduce_sm_90_bf16_v0_d256_hk2_p32_qg8");
  expect_ok(&r, "--key");
  /* The same key by name gives the same text. */
  assert_string_equal(r.out, by_kind);
  free(by_kind);
  result_free(&r);

  r = RUN("dump", "--key", "uq_reduce_sm_90_bf16_v0_d256_hk2_p32_qg8",
          "--target", "gfx950");
  expect_ok(&r, "--key with --target");
  assert_non_null(strstr(r.out, "uq_reduce_gfx950_bf16_v0_d256_hk2_p32_qg8"));
  result_free(&r);

  r = RUN("dump", SHAPE_SMALL, "--kind", "store");
  expect_ok(&r, "--kind store");
  assert_int_equal(count_occurrences(r.out, "// ==== store kernel: "), 1);
  assert_non_null(strstr(r.out, "uq_store_gfx950_bf16"));
  result_free(&r);

  /* A fused shape has no prologue kernel: a failure, not a usage error. */
  r = RUN("dump", SHAPE_SMALL, "--kind", "prologue");
  assert_int_equal(r.code, 1);
  assert_string_equal(r.out, "");
  result_free(&r);

  /* A malformed kernel name or an unknown target is misuse: exit 2. */
  r = RUN("dump", "--key", "uq_decode_nonsense");
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "uq_decode_nonsense"));
  result_free(&r);
  expect_usage_error(RUN("dump", "--key", "uq_store_gfx950_bf16_d256_hk1_ps272",
                         "--target", "gfx9"), "dump --target gfx9");
  expect_usage_error(RUN("demo", "--cpu", "--target", "nvidia"),
                     "demo --target nvidia");
  expect_usage_error(RUN("warm", "--q-heads", "8", "--kv-heads", "1",
                         "--head-dim", "256", "--block-size", "16",
                         "--max-blocks-per-seq", "64", "--batch", "1",
                         "--target", "mi300", "--dry-run"),
                     "warm --target mi300");

  /* A key no plan makes: `plan` refuses its query stride, so does --key
   * (a --key the library refuses is misuse, exit 2). */
  r = RUN("dump", "--key",
          "uq_decode_sm_90a_bf16_v2_d256_hk2_p16_mb64_s0.06250000_qg8_bs16_"
          "ps272_fq1_t1_sq9223372036854775807_sh256");
  assert_int_equal(r.code, 2);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "query strides"));
  result_free(&r);
  r = RUN("plan", "--batch", "1", "--q-heads", "16", "--kv-heads", "2",
          "--head-dim", "256", "--block-size", "16", "--max-blocks-per-seq",
          "64", "--target", "sm_90a", "--q-stride-seq",
          "9223372036854775807");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "query strides"));
  result_free(&r);
}

static void cache_admin_on_empty_directory(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  result r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls");
  assert_int_equal(entry_lines(r.out), 0);
  assert_non_null(strstr(r.out, "(writable, argument)\n# 0 entries, 0 B\n"));
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir, "--json");
  expect_ok(&r, "ls --json");
  assert_json(r.out);
  assert_true(!strncmp(json_field(r.out, "entries"), "[]", 2));
  result_free(&r);
  r = RUN("cache", "verify", "--cache-dir", dir, "--json");
  expect_ok(&r, "verify");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "good"), 0);
  assert_int_equal(json_int(r.out, "bad"), 0);
  result_free(&r);
  r = RUN("cache", "stats", "--cache-dir", dir, "--json");
  expect_ok(&r, "stats");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "entries"), 0);
  assert_int_equal(json_int(r.out, "bytes"), 0);
  result_free(&r);
  r = RUN("cache", "prune", "--max-size", "1K", "--cache-dir", dir, "--json");
  expect_ok(&r, "prune");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "removed"), 0);
  assert_int_equal(json_int(r.out, "bytes_left"), 0);
  result_free(&r);
  /* A format v1 directory is ignored, with a note saying so. */
  char v1[1024];
  snprintf(v1, sizeof v1, "%s/v1", dir);
  assert_int_equal(mkdir(v1, 0700), 0);
  r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls with a v1 directory");
  assert_int_equal(entry_lines(r.out), 0);
  assert_non_null(strstr(r.err, "cache format v1"));
  result_free(&r);
  rmtree(dir);
  free(dir);

  /* A directory that does not exist is a failure (exit 1), not a misuse. */
  r = RUN("cache", "verify", "--cache-dir", "/nonexistent/uq_cli_tools");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "nonexistent"));
  result_free(&r);
}

static void info_exits_zero_and_reports_compilers(void **s) {
  (void)s;
  result r = RUN("info");
  expect_ok(&r, "info");
  assert_true(!strncmp(r.out, "uqjit 0.1.0\n", 12));
  assert_non_null(strstr(r.out, "compilers"));
  /* Every library with its override variable and candidates in order. */
  assert_non_null(strstr(r.out, "libraries:\n  hip     the HIP runtime (UQJIT_HIP_LIB"));
  assert_non_null(strstr(r.out, "UQJIT_HIPRTC_LIB"));
  assert_non_null(strstr(r.out, "UQJIT_COMGR_LIB"));
  assert_non_null(strstr(r.out, "UQJIT_CUDA_LIB"));
  assert_non_null(strstr(r.out, "UQJIT_NVRTC_LIB"));
  assert_non_null(strstr(r.out, " 1. libcuda.so.1 "));
  result_free(&r);
  r = RUN("info", "--json");
  expect_ok(&r, "info --json");
  assert_json(r.out);
  assert_true(!strncmp(json_field(r.out, "version"), "\"0.1.0\"", 7));
  assert_non_null(strstr(json_field(r.out, "report"), "compilers"));
  const char *libs = json_field(r.out, "libraries");
  assert_non_null(libs);
  assert_int_equal(libs[0], '[');
  assert_non_null(strstr(libs, "{\"id\": \"nvrtc\", \"what\": \"NVRTC\", "
                               "\"override\": \"UQJIT_NVRTC_LIB\""));
  assert_non_null(strstr(libs, "\"candidates\": [\"libcuda.so.1\", "
                               "\"libcuda.so\"]"));
  result_free(&r);
}

static void demo_cpu_verifies_against_reference(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  /* No compile in the unit suite: the demo must say it skipped the JIT. */
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  result r = RUN("demo", "--cpu", "--cache-dir", dir);
  unsetenv("UQJIT_DISABLE_JIT");
  expect_ok(&r, "demo --cpu");
  assert_non_null(strstr(r.out, "skipped"));
  assert_non_null(strstr(r.out, "PASS"));
  /* Sequence 0 has 4096 tokens: its bf16 output cannot match the fp64
   * reference exactly, and must be well inside the 1e-2 bar. */
  const char *p = strstr(r.out, "seq 0   relative L2 error ");
  assert_non_null(p);
  double rel = strtod(p + strlen("seq 0   relative L2 error "), NULL);
  assert_true(rel > 0.0 && rel < 1e-2);
  assert_non_null(strstr(r.out, "seq 3   relative L2 error "));
  result_free(&r);

  /* Another seed and shape still pass; lengths beyond W are refused. */
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  r = RUN("demo", "--cpu", "--cache-dir", dir, "--seed", "7", "--batch", "2",
          "--q-heads", "12", "--kv-heads", "2", "--block-size", "16",
          "--max-blocks-per-seq", "20", "--seq-lens", "320,17");
  unsetenv("UQJIT_DISABLE_JIT");
  expect_ok(&r, "demo --seed 7");
  assert_non_null(strstr(r.out, "QG=6"));
  assert_non_null(strstr(r.out, "PASS"));
  result_free(&r);
  expect_usage_error(RUN("demo", "--cpu", "--seq-lens", "4097,1,1,1"),
                     "seq len beyond W");
  expect_usage_error(RUN("demo", "--cpu", "--seq-lens", "1,1"),
                     "wrong count");
  rmtree(dir);
  free(dir);
}

static void bench_without_gpu_exits_one(void **s) {
  (void)s;
  result r = RUN("info", "--json");
  expect_ok(&r, "info --json");
  long long devices = json_int(r.out, "devices");
  result_free(&r);
  if (devices > 0)
    skip();
  r = RUN("bench", "--batch", "1", "--seq", "1k", "--heads", "2:8");
  assert_int_equal(r.code, 1);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "GPU"));
  result_free(&r);
}

static void help_lists_commands_and_each_has_usage(void **s) {
  (void)s;
  static const char *const cmds[] = {"dump", "warm", "cache",
                                     "info", "demo", "bench"};
  result r = RUN("-h");
  expect_ok(&r, "-h");
  for (size_t i = 0; i < 6; i++) {
    char want[32];
    snprintf(want, sizeof want, "  %s ", cmds[i]);
    if (strstr(r.out, want) == NULL)
      fail_msg("uqjit -h does not list %s", cmds[i]);
  }
  result_free(&r);
  for (size_t i = 0; i < 6; i++) {
    r = RUN(cmds[i], "-h");
    expect_ok(&r, cmds[i]);
    assert_string_equal(r.err, "");
    char want[64];
    snprintf(want, sizeof want, "usage: uqjit %s", cmds[i]);
    if (strncmp(r.out, want, strlen(want)) != 0)
      fail_msg("%s -h starts with: %.60s", cmds[i], r.out);
    result_free(&r);
  }
}

static void misuse_exits_two(void **s) {
  (void)s;
  expect_usage_error(RUN("dump"), "dump without a shape");
  expect_usage_error(RUN("dump", SHAPE_SMALL, "--kind", "bogus"), "--kind");
  expect_usage_error(RUN("dump", "--key", "x", "--batch", "4"),
                     "--key with shape");
  expect_usage_error(RUN("dump", SHAPE_SMALL, "--no-source"),
                     "--no-source without --isa");
  expect_usage_error(RUN("dump", SHAPE_SMALL, "--json"),
                     "--json without --isa");
  expect_usage_error(RUN("dump", SHAPE_SMALL, "--target", "sm_90",
                         "--target", "gfx950"),
                     "dump --target twice");
  expect_usage_error(RUN("warm"), "warm without a shape");
  expect_usage_error(RUN("warm", "--q-heads", "16", "--kv-heads", "2",
                         "--head-dim", "256", "--block-size", "64",
                         "--max-blocks-per-seq", "64"),
                     "warm without batch");
  expect_usage_error(RUN("warm", SHAPE_SMALL, "--batch-sizes", "1,,4"),
                     "--batch-sizes");
  expect_usage_error(RUN("warm", SHAPE_SMALL, "--batch-sizes", "0"),
                     "--batch-sizes 0");
  expect_usage_error(RUN("warm", SHAPE_SMALL, "--jobs", "-1"), "--jobs");
  expect_usage_error(RUN("warm", SHAPE_SMALL, "--target", ""), "empty");
  expect_usage_error(RUN("cache"), "cache without subcommand");
  expect_usage_error(RUN("cache", "frob"), "cache frob");
  expect_usage_error(RUN("cache", "prune"), "prune without --max-size");
  expect_usage_error(RUN("cache", "prune", "--max-size", "10Q"),
                     "--max-size 10Q");
  expect_usage_error(RUN("cache", "prune", "--max-size", "-1"),
                     "--max-size -1");
  expect_usage_error(RUN("cache", "ls", "--manifest", "m"),
                     "ls --manifest");
  expect_usage_error(RUN("cache", "verify", "--manifest",
                         "/nonexistent/uq_manifest"),
                     "verify with an unreadable manifest");
  expect_usage_error(RUN("cache", "verify", "--key", "x"), "verify --key");
  expect_usage_error(RUN("cache", "ls", "--max-size", "1"),
                     "ls --max-size");
  expect_usage_error(RUN("info", "extra"), "info extra");
  expect_usage_error(RUN("demo", "--seed", "x"), "demo --seed");
  expect_usage_error(RUN("demo", "--bogus"), "demo --bogus");
  expect_usage_error(RUN("bench", "--heads", "2x8"), "bench --heads");
  expect_usage_error(RUN("bench", "--seq", "0"), "bench --seq 0");
  expect_usage_error(RUN("bench", "--iters", "0"), "bench --iters 0");
  expect_usage_error(RUN("bench", "--max-mem-gb", "-2"), "--max-mem-gb");
  expect_usage_error(RUN("bench", "--chain", "-1"), "bench --chain -1");
  expect_usage_error(RUN("bench", "--chain", "x"), "bench --chain x");
}

/* ------------------------------------------------------------------ */
/* compile: needs clang-22 (gfx950 offline). */

/* W = 64 x 2048 = 131072 tokens: B = 4 plans P = 512, B = 16 (cap 256)
 * plans P = 256 with 2 tile groups per partition. Two decode keys, two
 * reduce keys and one bf16 store key: 5 distinct kernels. */
#define SHAPE_WIDE                                                          \
  "--q-heads", "16", "--kv-heads", "2", "--head-dim", "256",              \
      "--block-size", "64", "--max-blocks-per-seq", "2048"

static result warm(const char *dir) {
  return RUN("warm", SHAPE_WIDE, "--batch-sizes", "4,16", "--target",
             "gfx950", "--cache-dir", dir, "--jobs", "2", "--json");
}

static void expect_counts(const result *r, long long compiled,
                          long long hits) {
  assert_json(r->out);
  assert_int_equal(json_int(r->out, "keys"), 5);
  assert_int_equal(json_int(r->out, "compiled"), compiled);
  assert_int_equal(json_int(r->out, "hits"), hits);
  assert_int_equal(json_int(r->out, "failed"), 0);
}

static void verify_counts(const char *dir, int want_code, long long good,
                          long long bad) {
  result r = RUN("cache", "verify", "--cache-dir", dir, "--json");
  if (r.code != want_code)
    fail_msg("verify: exit %d, want %d; %s", r.code, want_code, r.err);
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "good"), good);
  assert_int_equal(json_int(r.out, "bad"), bad);
  result_free(&r);
}

static void warm_fills_cache_hits_and_recompiles_corrupt_entry(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  result r = warm(dir);
  expect_ok(&r, "first warm");
  expect_counts(&r, 5, 0);
  assert_true(!strncmp(json_field(r.out, "cache_dir"), "\"/tmp/", 6));
  assert_true(!strncmp(json_field(r.out, "targets"), "[\"gfx950\"]", 10));
  result_free(&r);
  verify_counts(dir, 0, 5, 0);

  r = RUN("cache", "stats", "--cache-dir", dir, "--json");
  expect_ok(&r, "stats");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "entries"), 5);
  assert_non_null(strstr(r.out, "\"gfx950\": {\"entries\": 5"));
  result_free(&r);

  r = warm(dir);
  expect_ok(&r, "second warm");
  expect_counts(&r, 0, 5);
  result_free(&r);

  corrupt_one_entry(dir);
  verify_counts(dir, 1, 4, 1);
  r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls");
  assert_int_equal(entry_lines(r.out), 5);
  assert_int_equal(count_occurrences(r.out, " BAD "), 1);
  result_free(&r);

  r = warm(dir);
  expect_ok(&r, "warm after corruption");
  expect_counts(&r, 1, 4);
  result_free(&r);
  verify_counts(dir, 0, 5, 0);

  /* dump --isa reads the warmed cache; resources always, ISA when a
   * disassembler exists. */
  r = RUN("dump", "--batch", "4", SHAPE_WIDE, "--target", "gfx950",
          "--kind", "decode", "--isa", "--cache-dir", dir);
  expect_ok(&r, "dump --isa");
  assert_non_null(strstr(r.out, "#define UQ_KERNEL_NAME uq_decode_gfx950_"));
  assert_non_null(strstr(r.out, "// ---- resource usage ----"));
  assert_non_null(strstr(r.out, "VGPRs"));
  if (strstr(r.err, "no disassembler") == NULL) {
    assert_non_null(strstr(r.out, "// ---- disassembly of uq_decode_gfx950"));
    assert_non_null(strstr(r.out, "s_endpgm"));
    assert_non_null(strstr(r.out, "// ---- instruction mix per 16-token tile"));
    assert_non_null(strstr(r.out, "  method     "));
    assert_non_null(strstr(r.out, "waves/CU"));
  }
  result_free(&r);
  r = RUN("dump", "--batch", "4", SHAPE_WIDE, "--target", "gfx950",
          "--kind", "decode", "--isa", "--json", "--cache-dir", dir);
  expect_ok(&r, "dump --isa --json");
  assert_true(r.out[0] == '[');
  char wrapped[8192]; /* an array of one kernel: checked as a member */
  assert_true(strlen(r.out) + 16 < sizeof wrapped);
  snprintf(wrapped, sizeof wrapped, "{\"kernels\": %s}", r.out);
  assert_json(wrapped);
  assert_true(json_int(r.out, "scratch_bytes") == 0);
  assert_non_null(strstr(r.out, "\"waves_per_cu\": "));
  if (strstr(r.err, "no disassembler") == NULL)
    assert_non_null(strstr(r.out, "\"per_tile\": {\"vmem\": "));
  result_free(&r);
  verify_counts(dir, 0, 5, 0); /* dump compiled nothing new */

  r = RUN("cache", "prune", "--max-size", "0", "--cache-dir", dir, "--json");
  expect_ok(&r, "prune");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "removed"), 5);
  assert_int_equal(json_int(r.out, "bytes_left"), 0);
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls after prune");
  assert_int_equal(entry_lines(r.out), 0);
  result_free(&r);
  rmtree(dir);
  free(dir);
}

/* dump --isa on gfx942: the gfx942 layer (the default there) compiled,
 * its per-tile mix with the layer's 24 MFMAs (8 FP8, 16 bf16), three
 * waves a SIMD (12 a CU) and no scratch, in JSON and in text. */
static void dump_isa_on_gfx942_reports_the_layer_mix_and_occupancy(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  unsetenv("UQJIT_VARIANT");
  result r = RUN("dump", "--batch", "16", SHAPE_WIDE, "--target", "mi300x", "--kind",
                 "decode", "--isa", "--json", "--cache-dir", dir);
  expect_ok(&r, "dump --isa --json gfx942");
  assert_non_null(strstr(r.out, "\"name\": \"uq_decode_gfx942_bf16_v1_"));
  assert_true(json_int(r.out, "scratch_bytes") == 0);
  assert_true(json_int(r.out, "waves_per_cu") == 12);
  if (strstr(r.err, "no disassembler") == NULL)
    assert_non_null(strstr(r.out, "\"mfma\": 24.0000"));
  result_free(&r);
  r = RUN("dump", "--batch", "16", SHAPE_WIDE, "--target", "mi300x", "--kind", "decode",
          "--isa", "--no-source", "--cache-dir", dir);
  expect_ok(&r, "dump --isa gfx942");
  if (strstr(r.err, "no disassembler") == NULL) {
    assert_non_null(strstr(r.out, "v_mfma_f32_16x16x32_fp8_fp8"));
    assert_non_null(strstr(r.out, "// ---- instruction mix per 16-token tile"));
    assert_non_null(strstr(r.out, "3 waves/SIMD"));
  }
  result_free(&r);
  setenv("UQJIT_VARIANT", "portable", 1);
  rmtree(dir);
  free(dir);
}

/* The name after the first "key_name": in `json` (static buffer). */
static const char *first_key_name(const char *json) {
  static char name[256];
  const char *p = strstr(json, "\"key_name\": \"");
  assert_non_null(p);
  p += strlen("\"key_name\": \"");
  size_t n = strcspn(p, "\"");
  assert_true(n > 0 && n < sizeof name);
  memcpy(name, p, n);
  name[n] = '\0';
  return name;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void cache_ls_names_kernels_and_verify_manifest_checks_each(
    void **s) {
  (void)s;
  char *dir = make_tmpdir(), *empty = make_tmpdir();
  result r = warm(dir);
  expect_ok(&r, "warm");
  result_free(&r);

  r = RUN("cache", "ls", "--cache-dir", dir, "--key", "uq_decode_");
  expect_ok(&r, "ls --key");
  assert_int_equal(entry_lines(r.out), 2);
  assert_int_equal(count_occurrences(r.out, " uq_decode_gfx950_"), 2);
  assert_non_null(strstr(r.out, "clang")); /* the compiler column */
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "sm_90a");
  expect_ok(&r, "ls --target sm_90a");
  assert_int_equal(entry_lines(r.out), 0);
  result_free(&r);
  /* Product names are targets here too: h200 is sm_90a, mi355x gfx950. */
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "h200");
  expect_ok(&r, "ls --target h200");
  assert_int_equal(entry_lines(r.out), 0);
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "MI355X", "--key",
          "uq_decode_");
  expect_ok(&r, "ls --target MI355X");
  assert_int_equal(entry_lines(r.out), 2);
  result_free(&r);
  expect_usage_error(RUN("cache", "ls", "--cache-dir", dir, "--target",
                         "gfx9"), "unknown target");
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "gfx950", "--json",
          "--key", "uq_store_");
  expect_ok(&r, "ls --json");
  assert_json(r.out);
  assert_int_equal(count_occurrences(r.out, "\"key_name\": \"uq_store_gfx950_"),
                   1);
  assert_non_null(strstr(r.out, "\"status\": \"ok\""));
  assert_non_null(strstr(r.out, "\"created\": "));
  assert_non_null(strstr(r.out, "\"compiler\": \""));
  char store[256], manifest[512], text[1024];
  snprintf(store, sizeof store, "%s", first_key_name(r.out));
  result_free(&r);

  /* Every listed kernel present: 0, from the directory or a layer. */
  snprintf(manifest, sizeof manifest, "%s/manifest.txt", empty);
  snprintf(text, sizeof text, "# image kernels\n\n  %s\n", store);
  write_text(manifest, text);
  r = RUN("cache", "verify", "--cache-dir", dir, "--manifest", manifest);
  expect_ok(&r, "verify --manifest");
  assert_non_null(strstr(r.out, "1 of 1 kernels"));
  result_free(&r);
  setenv("UQJIT_CACHE_PATH", dir, 1);
  r = RUN("cache", "verify", "--cache-dir", empty, "--manifest", manifest);
  unsetenv("UQJIT_CACHE_PATH");
  expect_ok(&r, "verify --manifest through UQJIT_CACHE_PATH");
  result_free(&r);
  /* One missing: 1, named. */
  snprintf(text, sizeof text, "%s\nuq_store_gfx950_bf16_d256_hk7_ps272\n",
           store);
  write_text(manifest, text);
  r = RUN("cache", "verify", "--cache-dir", dir, "--manifest", manifest,
          "--json");
  assert_int_equal(r.code, 1);
  assert_json(r.out);
  assert_non_null(
      strstr(r.out, "\"missing\": [\"uq_store_gfx950_bf16_d256_hk7_ps272\"]"));
  assert_int_equal(json_int(r.out, "present"), 1);
  result_free(&r);
  /* A malformed name: 2, with its line. */
  snprintf(text, sizeof text, "%s\n# fine\nuq_nonsense\n", store);
  write_text(manifest, text);
  r = RUN("cache", "verify", "--cache-dir", dir, "--manifest", manifest);
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "manifest.txt:3:"));
  result_free(&r);
  rmtree(dir);
  rmtree(empty);
  free(dir);
  free(empty);
}


/* The production set-up: no writable directory, the image's warm cache
 * as a UQJIT_CACHE_PATH layer. ls, stats and verify exit 0 and report
 * each layer; verify --manifest credits the layer that holds the kernels;
 * plan marks each kernel cached in it. */
static void cache_tools_see_a_read_only_layer_alone(void **s) {
  (void)s;
  char *layer = make_tmpdir(), *home = make_tmpdir();
  result r = warm(layer);
  expect_ok(&r, "warm");
  result_free(&r);
  char manifest[1024];
  snprintf(manifest, sizeof manifest, "%s/MANIFEST", home);
  r = RUN("warm", SHAPE_WIDE, "--batch-sizes", "4,16", "--target", "gfx950",
          "--dry-run", "--manifest", manifest);
  expect_ok(&r, "warm --manifest");
  result_free(&r);

  const char *saved_home = getenv("HOME");
  char *old_home = saved_home ? strdup(saved_home) : NULL;
  setenv("HOME", home, 1); /* ~/.cache/uqjit: absent */
  unsetenv("UQJIT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  setenv("UQJIT_CACHE_PATH", layer, 1);

  r = RUN("cache", "ls");
  expect_ok(&r, "ls, layer only");
  assert_int_equal(entry_lines(r.out), 5);
  assert_non_null(strstr(r.out, "/.cache/uqjit (writable, HOME): absent\n"));
  char head[1200];
  snprintf(head, sizeof head, "# %s (read-only, UQJIT_CACHE_PATH)\n", layer);
  assert_non_null(strstr(r.out, head));
  assert_non_null(strstr(r.out, "# 5 entries, "));
  result_free(&r);
  r = RUN("cache", "ls", "--json");
  expect_ok(&r, "ls --json, layer only");
  assert_json(r.out);
  assert_int_equal(count_occurrences(r.out, "\"layer\": "), 5);
  assert_non_null(strstr(r.out, "\"writable\": false, \"origin\": "
                                "\"UQJIT_CACHE_PATH\", \"exists\": true, "
                                "\"entries\": 5"));
  result_free(&r);
  r = RUN("cache", "stats", "--json");
  expect_ok(&r, "stats, layer only");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "entries"), 5);
  assert_non_null(strstr(r.out, "\"exists\": true, \"entries\": 5"));
  result_free(&r);
  r = RUN("cache", "verify", "--json");
  expect_ok(&r, "verify, layer only");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "good"), 5);
  result_free(&r);
  r = RUN("cache", "verify", "--manifest", manifest, "--json");
  expect_ok(&r, "verify --manifest, layer only");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "present"), 5);
  /* The layer, not the (absent) writable directory, serves all five. */
  assert_non_null(strstr(r.out, "\"origin\": \"HOME\", \"exists\": "
                                "false, \"kernels\": 0}"));
  assert_non_null(strstr(r.out, "\"origin\": \"UQJIT_CACHE_PATH\", "
                                "\"exists\": true, \"kernels\": 5}"));
  result_free(&r);
  r = RUN("plan", SHAPE_WIDE, "--batch", "4", "--target", "gfx950",
          "--json");
  expect_ok(&r, "plan --json");
  assert_json(r.out);
  snprintf(head, sizeof head, "\"cached\": true, \"layer\": \"%s\"}", layer);
  assert_int_equal(count_occurrences(r.out, head), 2);
  result_free(&r);

  unsetenv("UQJIT_CACHE_PATH");
  r = RUN("plan", SHAPE_WIDE, "--batch", "4", "--target", "gfx950",
          "--json");
  expect_ok(&r, "plan --json without the layer");
  assert_int_equal(count_occurrences(r.out, "\"cached\": false, "
                                            "\"layer\": null}"), 2);
  result_free(&r);
  if (old_home != NULL)
    setenv("HOME", old_home, 1);
  free(old_home);
  rmtree(layer);
  rmtree(home);
  free(layer);
  free(home);
}

/* ------------------------------------------------------------------ */
/* warm --dry-run and --manifest in the shape-flag form; sm_90 brings
 * sm_90a (what H100/H200 report) unless --exact-target. No compiler. */

static void warm_sm90_also_lists_sm90a_unless_exact_target(void **s) {
  (void)s;
  result r = RUN("warm", SHAPE_SMALL, "--target", "sm_90", "--dry-run");
  expect_ok(&r, "warm sm_90 --dry-run");
  assert_int_equal(count_occurrences(r.out, "\n"), 6);
  assert_int_equal(count_occurrences(r.out, "_sm_90_"), 3);
  assert_int_equal(count_occurrences(r.out, "_sm_90a_"), 3);
  assert_int_equal(count_occurrences(r.err, "also warming sm_90a"), 1);
  result_free(&r);
  r = RUN("warm", SHAPE_SMALL, "--target", "sm_90", "--dry-run", "--json");
  expect_ok(&r, "warm sm_90 --dry-run --json");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "keys"), 6);
  assert_true(!strncmp(json_field(r.out, "targets"),
                       "[\"sm_90\", \"sm_90a\"]", 19));
  assert_true(!strncmp(json_field(r.out, "added_targets"), "[\"sm_90a\"]",
                       10));
  result_free(&r);
  r = RUN("warm", SHAPE_SMALL, "--target", "sm_90", "--exact-target",
          "--dry-run");
  expect_ok(&r, "warm sm_90 --exact-target");
  assert_int_equal(count_occurrences(r.out, "\n"), 3);
  assert_int_equal(count_occurrences(r.out, "_sm_90a_"), 0);
  assert_string_equal(r.err, "");
  result_free(&r);
  /* Named already: nothing added, nothing said. */
  r = RUN("warm", SHAPE_SMALL, "--target", "sm_90,sm_90a", "--dry-run");
  expect_ok(&r, "warm sm_90,sm_90a");
  assert_int_equal(count_occurrences(r.out, "\n"), 6);
  assert_string_equal(r.err, "");
  result_free(&r);
}

static void warm_manifest_in_shape_form_is_sorted_with_header(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/m.txt", dir);
  result r = RUN("warm", SHAPE_SMALL, "--batch-sizes", "16,1,16", "--target",
                 "gfx950", "--dry-run", "--manifest", path);
  expect_ok(&r, "warm --manifest");
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  assert_true(!strncmp(text, "# uqjit manifest: shape hq ", 27));
  /* The manifest is the dry run's list under the comment line. */
  const char *body = strchr(text, '\n');
  assert_non_null(body);
  assert_string_equal(body + 1, r.out);
  char prev[512] = "";
  for (const char *p = body + 1; *p;) {
    const char *e = strchr(p, '\n');
    assert_non_null(e);
    char cur[512];
    snprintf(cur, sizeof cur, "%.*s", (int)(e - p), p);
    if (strcmp(prev, cur) >= 0)
      fail_msg("manifest not sorted and unique: %s then %s", prev, cur);
    snprintf(prev, sizeof prev, "%s", cur);
    p = e + 1;
  }
  result_free(&r);
  r = RUN("warm", SHAPE_SMALL, "--dry-run", "--manifest",
          "/nonexistent-dir/m.txt");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "/nonexistent-dir/m.txt"));
  result_free(&r);
  rmtree(dir);
  free(dir);
}

static void demo_cpu_refuses_an_overflowing_query_stride(void **s) {
  (void)s;
  result r = RUN("demo", "--cpu", "--q-stride-seq", "9223372036854775807");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "overflow"));
  assert_null(strstr(r.err, "out of memory"));
  result_free(&r);
}

/* A FIFO at an entry's path: every cache command returns promptly (RUN's
 * poll limit would fail a hang), verify counts it bad and prune removes
 * it. */
static void cache_commands_do_not_block_on_a_fifo_entry(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  char path[4096];
  snprintf(path, sizeof path, "%s/v2", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/v2/gfx942", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/v2/gfx942/ab", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/v2/gfx942/ab/%s.%s.co", dir,
           "0123456789abcdef0123456789abcd", "0123456789abcdef");
  assert_int_equal(mkfifo(path, 0600), 0);
  result r = RUN("cache", "verify", "--cache-dir", dir);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "0 good, 1 bad"));
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir);
  assert_int_equal(r.code, 0);
  result_free(&r);
  r = RUN("cache", "stats", "--cache-dir", dir);
  assert_int_equal(r.code, 0);
  result_free(&r);
  r = RUN("cache", "prune", "--max-size", "1G", "--cache-dir", dir);
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "removed 1 file"));
  result_free(&r);
  rmtree(dir);
  free(dir);
}

/* Nothing stored means failure: a cache directory that cannot be made. */
static void warm_into_an_unusable_directory_exits_one_naming_the_cause(
    void **s) {
  (void)s;
  char *dir = make_tmpdir();
  char file[4096], cache[4200];
  snprintf(file, sizeof file, "%s/file", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(cache, sizeof cache, "%s/cache", file);
  result r = RUN("warm", SHAPE_SMALL, "--cache-dir", cache, "--json");
  assert_int_equal(r.code, 1);
  assert_json(r.out);
  assert_true(json_int(r.out, "failed") > 0);
  assert_int_equal(json_int(r.out, "failed"), json_int(r.out, "keys"));
  assert_int_equal(json_int(r.out, "compiled"), 0);
  const char *why = strstr(r.err, "Not a directory");
  assert_non_null(why);
  assert_null(strstr(why + 1, "Not a directory")); /* named once */
  result_free(&r);
  rmtree(dir);
  free(dir);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PATH-TO-UQJIT unit|compile\n", argv[0]);
    return 1;
  }
  cli_run_init(argv[1], 120000);
  group = argv[2];
  /* Kernel names below spell the portable layer. */
  setenv("UQJIT_VARIANT", "portable", 1);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
  if (strcmp(group, "compile") == 0) {
    if (!have_program("clang-22") && getenv("UQJIT_CLANG") == NULL) {
      fprintf(stderr, "clang-22 not found: skipping\n");
      return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(warm_fills_cache_hits_and_recompiles_corrupt_entry),
        cmocka_unit_test(
            cache_ls_names_kernels_and_verify_manifest_checks_each),
        cmocka_unit_test(
            warm_into_an_unusable_directory_exits_one_naming_the_cause),
        cmocka_unit_test(cache_tools_see_a_read_only_layer_alone),
        cmocka_unit_test(dump_isa_on_gfx942_reports_the_layer_mix_and_occupancy),
    };
    return cmocka_run_group_tests_name("cli_tools_compile", tests, NULL,
                                       NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dump_prints_decode_kernel_source_for_sm90_and_gfx950),
      cmocka_unit_test(dump_kind_and_key_select_one_kernel),
      cmocka_unit_test(cache_admin_on_empty_directory),
      cmocka_unit_test(info_exits_zero_and_reports_compilers),
      cmocka_unit_test(demo_cpu_verifies_against_reference),
      cmocka_unit_test(demo_cpu_refuses_an_overflowing_query_stride),
      cmocka_unit_test(cache_commands_do_not_block_on_a_fifo_entry),
      cmocka_unit_test(bench_without_gpu_exits_one),
      cmocka_unit_test(help_lists_commands_and_each_has_usage),
      cmocka_unit_test(misuse_exits_two),
      cmocka_unit_test(warm_sm90_also_lists_sm90a_unless_exact_target),
      cmocka_unit_test(warm_manifest_in_shape_form_is_sorted_with_header),
  };
  return cmocka_run_group_tests_name("cli_tools_unit", tests, NULL, NULL);
}
