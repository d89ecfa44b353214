/* The uqjit dump, info, demo and bench commands as a user runs them, and
 * main of test_cli_tools (the warm and cache commands: cli_tools_cache.c). argv[1] is the uqjit binary (tests/cli/meson.build passes it),
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

#include "tests/cli/cli_tools.h"
#include "tests/support/cli_run.h"

static const char *group;

/* ------------------------------------------------------------------ */
/* Helpers. */

void expect_ok(const result *r, const char *what) {
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

void rmtree(const char *dir) {
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *make_tmpdir(void) {
  char *dir = strdup("/tmp/uq_cli_tools_XXXXXX");
  assert_non_null(dir);
  assert_non_null(mkdtemp(dir));
  return dir;
}

int count_occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* Lines of `out` that are not '#' comments (ls's entry lines). */
int entry_lines(const char *out) {
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
void corrupt_one_entry(const char *dir) {
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

/* dump --isa on gfx942: the gfx942 layer (the default there) compiled,
 * its per-tile mix with the layer's 24 MFMAs (8 FP8, 16 bf16), three
 * waves a SIMD (12 a CU) and no scratch, in JSON and in text. */
/* The warpgroup layer's decode kernel (sm_90a: NVRTC) with its
 * resources, and its chunk loop where a disassembler is found: every
 * wgmma of the chunk on the fast path, the count per token and kv head,
 * in text and JSON. */
static void dump_isa_on_sm90a_reports_the_chunk_loop(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  unsetenv("UQJIT_VARIANT");
  result r = RUN("dump", "--batch", "16", SHAPE_WIDE, "--target", "h200", "--kind", "decode",
                 "--isa", "--no-source", "--cache-dir", dir);
  expect_ok(&r, "dump --isa sm_90a");
  assert_non_null(strstr(r.out, "  registers  "));
  if (strstr(r.err, "no disassembler") == NULL) {
    assert_non_null(strstr(r.out, "HGMMA.64x16x16.F32.BF16"));
    assert_non_null(strstr(r.out, "// ---- chunk loop (static SASS counts"));
    assert_non_null(strstr(r.out, "warp instructions per token and kv head"));
    assert_non_null(strstr(r.out, "QGMMA 8 (8)"));
    assert_non_null(strstr(r.out, "HGMMA 16 (16)"));
  } else {
    assert_null(strstr(r.out, "// ---- chunk loop"));
  }
  result_free(&r);
  r = RUN("dump", "--batch", "16", SHAPE_WIDE, "--target", "h200", "--kind", "decode", "--isa",
          "--json", "--cache-dir", dir);
  expect_ok(&r, "dump --isa --json sm_90a");
  assert_non_null(strstr(r.out, "\"name\": \"uq_decode_sm_90a_bf16_v2_"));
  if (strstr(r.err, "no disassembler") == NULL) {
    assert_non_null(strstr(r.out, "\"path_complete\": true"));
    assert_non_null(strstr(r.out, "\"QGMMA\": [8, 8]"));
    assert_true(json_int(r.out, "path") > 16 * 16); /* more than 16 a token */
  }
  result_free(&r);
  setenv("UQJIT_VARIANT", "portable", 1);
  rmtree(dir);
  free(dir);
}

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

static void demo_cpu_refuses_an_overflowing_query_stride(void **s) {
  (void)s;
  result r = RUN("demo", "--cpu", "--q-stride-seq", "9223372036854775807");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "overflow"));
  assert_null(strstr(r.err, "out of memory"));
  result_free(&r);
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
        cmocka_unit_test(dump_isa_on_sm90a_reports_the_chunk_loop),
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
