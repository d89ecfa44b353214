/* The uqjit command as a user runs it: `uqjit plan` output (JSON checked
 * for syntax and values), exit codes (0 ok, 1 failure, 2 usage), help on
 * stdout, misuse on stderr, and a failed stdout write. The binary's path
 * is the first argument (tests/cli/meson.build passes it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/cli_run.h"

/* ------------------------------------------------------------------ */

#define SHAPE_4x8x1                                                       \
  "--batch", "4", "--q-heads", "8", "--kv-heads", "1", "--head-dim", "256", \
      "--block-size", "32", "--max-blocks-per-seq", "64"

static void plan_json_reports_sixteen_partitions_one_tile_group(void **state) {
  (void)state;
  result r = RUN("plan", SHAPE_4x8x1, "--json");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_string_equal(r.err, "");
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "eligible"), 1);
  assert_int_equal(json_int(r.out, "num_partitions"), 16);
  assert_int_equal(json_int(r.out, "tile_groups_per_partition"), 1);
  assert_int_equal(json_int(r.out, "query_group_size"), 8);
  assert_int_equal(json_bool(r.out, "fuse_qrot"), 1);
  /* segm_out 4*1*16*8*256*2 = 262144, segm_max and segm_sum 2048 each. */
  assert_int_equal(json_int(r.out, "workspace_bytes"), 266240);
  assert_int_equal(json_int(r.out, "block_threads"), 64);
  assert_true(!strncmp(json_field(r.out, "reason"), "\"\"", 2));
  assert_true(!strncmp(json_field(r.out, "target"), "\"gfx950\"", 8));
  assert_true(!strncmp(json_field(r.out, "decode_grid"), "[4, 1, 16]", 10));
  assert_true(!strncmp(json_field(r.out, "reduce_grid"), "[4, 8, 1]", 9));
  assert_true(!strncmp(json_field(r.out, "scale"), "0.0625", 6));
  assert_non_null(strstr(
      r.out, "\"name\": \"uq_decode_gfx950_bf16_v1_d256_hk1_p16_mb64_s0."
             "06250000_qg8_bs32_ps272_fq1_t1_sq2048_sh256\""));
  assert_non_null(
      strstr(r.out, "\"name\": \"uq_reduce_gfx950_bf16_v1_d256_hk1_p16_qg8\""));
  assert_non_null(strstr(r.out, "\"kind\": \"decode\""));
  assert_non_null(strstr(r.out, "\"kind\": \"reduce\""));
  assert_null(strstr(r.out, "\"kind\": \"prologue\""));
  result_free(&r);
}

static void plan_json_lists_prologue_when_not_fused(void **state) {
  (void)state;
  /* sm_90 plans the matrix variant (v1) unless UQJIT_VARIANT=portable. */
  unsetenv("UQJIT_VARIANT");
  result r = RUN("plan", SHAPE_4x8x1, "--q-stride-head=512",
                 "--q-stride-seq", "4096", "--target", "SM90", "--dtype",
                 "fp16", "--scale", "0.1", "--max-kv-splits", "1",
                 "--padded-slot", "288", "--json");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "fuse_qrot"), 0);
  /* splits=1: P = 8 (see unit_policy). */
  assert_int_equal(json_int(r.out, "num_partitions"), 8);
  assert_int_equal(json_int(r.out, "block_threads"), 128);
  assert_int_equal(json_int(r.out, "padded_slot"), 288);
  assert_true(!strncmp(json_field(r.out, "target"), "\"sm_90\"", 7));
  assert_true(!strncmp(json_field(r.out, "scale"), "0.10000000", 10));
  assert_true(!strncmp(json_field(r.out, "prologue_grid"), "[4, 8, 1]", 9));
  assert_non_null(strstr(
      r.out, "\"name\": \"uq_prologue_sm_90_fp16_v1_d256_hk1_qg8\""));
  result_free(&r);
}

/* sm_90a (what an H100/H200 reports) plans the warpgroup layer (v2) by
 * default; UQJIT_VARIANT=matrix asks for v1 there. The warpgroup layer
 * deals out 64-token chunks and so gives this short window (2048 tokens)
 * 32 partitions where vLLM's policy, and the matrix layer, give 16. */
static void plan_on_sm90a_names_the_warpgroup_layer(void **state) {
  (void)state;
  unsetenv("UQJIT_VARIANT");
  result r = RUN("plan", SHAPE_4x8x1, "--target", "sm90a", "--json");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_string_equal(r.err, "");
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "eligible"), 1);
  assert_int_equal(json_int(r.out, "num_partitions"), 32);
  assert_int_equal(json_int(r.out, "block_threads"), 128);
  assert_true(!strncmp(json_field(r.out, "target"), "\"sm_90a\"", 8));
  assert_non_null(strstr(
      r.out, "\"name\": \"uq_decode_sm_90a_bf16_v2_d256_hk1_p32_mb64_s0."
             "06250000_qg8_bs32_ps272_fq1_t1_sq2048_sh256\""));
  assert_non_null(
      strstr(r.out, "\"name\": \"uq_reduce_sm_90a_bf16_v2_d256_hk1_p32_qg8\""));
  result_free(&r);

  setenv("UQJIT_VARIANT", "matrix", 1);
  r = RUN("plan", SHAPE_4x8x1, "--target", "sm_90a");
  unsetenv("UQJIT_VARIANT");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_non_null(strstr(r.out, "partitions (P):    16"));
  assert_non_null(strstr(r.out, "uq_decode_sm_90a_bf16_v1_d256_hk1_p16_mb64"));
  assert_non_null(strstr(r.out, "uq_reduce_sm_90a_bf16_v1_d256_hk1_p16_qg8"));
  assert_null(strstr(r.out, "_v2_"));
  result_free(&r);
}

/* MI300X and MI325X get the gfx942 layer (v1, one wave64); portable
 * stays selectable. */
static void plan_on_mi300x_names_the_gfx942_layer(void **state) {
  (void)state;
  unsetenv("UQJIT_VARIANT");
  result r = RUN("plan", SHAPE_4x8x1, "--target", "mi300x");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_string_equal(r.err, "");
  assert_non_null(strstr(r.out, "block threads:     64"));
  assert_non_null(strstr(
      r.out, "uq_decode_gfx942_bf16_v1_d256_hk1_p16_mb64"));
  assert_non_null(strstr(r.out, "uq_reduce_gfx942_bf16_v1_d256_hk1_p16_qg8"));
  result_free(&r);
  setenv("UQJIT_VARIANT", "portable", 1);
  r = RUN("plan", SHAPE_4x8x1, "--target", "mi325x");
  unsetenv("UQJIT_VARIANT");
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "uq_decode_gfx942_bf16_v0_d256"));
  assert_null(strstr(r.out, "_v1_"));
  result_free(&r);
}

static void plan_text_summarises_the_plan(void **state) {
  (void)state;
  result r = RUN("plan", SHAPE_4x8x1);
  assert_int_equal(r.code, 0);
  assert_string_equal(r.err, "");
  assert_non_null(strstr(r.out, "eligible:          yes"));
  assert_non_null(strstr(r.out, "partitions (P):    16"));
  assert_non_null(strstr(r.out, "workspace:         266240 bytes"));
  assert_non_null(strstr(r.out, "uq_decode_gfx950_bf16_v1_d256_hk1_p16_mb64"));
  result_free(&r);
}

static void plan_ineligible_shape_exits_zero_with_reason(void **state) {
  (void)state;
  result r = RUN("plan", "--batch", "4", "--q-heads", "8", "--kv-heads", "1",
                 "--head-dim", "96", "--block-size", "32",
                 "--max-blocks-per-seq", "64", "--json");
  assert_int_equal(r.code, 0);
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "eligible"), 0);
  const char *reason = json_field(r.out, "reason");
  assert_true(reason[0] == '"' && reason[1] != '"');
  assert_true(!strncmp(json_field(r.out, "kernels"), "[]", 2));
  result_free(&r);

  r = RUN("plan", "--batch", "4", "--q-heads", "4", "--kv-heads", "1",
          "--head-dim", "256", "--block-size", "48", "--max-blocks-per-seq",
          "64");
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "eligible:          no"));
  assert_non_null(strstr(r.out, "reason:"));
  result_free(&r);
}

static void plan_malformed_flags_exit_two(void **state) {
  (void)state;
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--bogus"), "unknown flag");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "extra"), "positional");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--padded-slot"),
                     "missing value");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--batch", "2"), "twice");
  expect_usage_error(RUN("plan", "--q-heads", "8", "--kv-heads", "1",
                         "--head-dim", "256", "--block-size", "32",
                         "--max-blocks-per-seq", "64"),
                     "missing --batch");
  static const char *const bad_batch[] = {"x",  "4x", "",   " 4",  "+4",
                                          "0",  "-1", "0x4", "4.0",
                                          "99999999999"};
  for (size_t i = 0; i < sizeof bad_batch / sizeof *bad_batch; i++)
    expect_usage_error(RUN("plan", "--batch", bad_batch[i], "--q-heads", "8",
                           "--kv-heads", "1", "--head-dim", "256",
                           "--block-size", "32", "--max-blocks-per-seq",
                           "64"),
                       bad_batch[i]);
  static const char *const bad_scale[] = {"-1", "0", "nan", "inf", "1e400",
                                          "0.1x", "1e-60", ""};
  for (size_t i = 0; i < sizeof bad_scale / sizeof *bad_scale; i++)
    expect_usage_error(RUN("plan", SHAPE_4x8x1, "--scale", bad_scale[i]),
                       bad_scale[i]);
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--dtype", "fp32"), "dtype");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--q-stride-seq", "-5"),
                     "negative stride");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--target", ""), "empty target");
}

/* --variant names the layer (over UQJIT_VARIANT), "auto" the best; a
 * name the library does not know is misuse; --key names its own. A head
 * dim or query group only the portable layer serves gets it, asked or
 * not. */
static void plan_variant_names_the_layer(void **state) {
  (void)state;
  setenv("UQJIT_VARIANT", "portable", 1);
  static const char *const asks[][2] = {{"matrix", "_v1_"},
                                        {"auto", "_v2_"},
                                        {"portable", "_v0_"},
                                        {"gfx950-emu", "_v3_"}};
  for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
    result r = RUN("plan", SHAPE_4x8x1, "--target", "sm_90a", "--variant",
                   asks[i][0], "--json");
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(json_field(r.out, "kernels"), asks[i][1]));
    result_free(&r);
  }
  unsetenv("UQJIT_VARIANT");
  result r = RUN("plan", "--batch", "4", "--q-heads", "20", "--kv-heads",
                 "4", "--head-dim", "128", "--block-size", "32",
                 "--max-blocks-per-seq", "64", "--target", "sm_90a",
                 "--variant", "warpgroup", "--json");
  assert_int_equal(r.code, 0);
  assert_int_equal(json_bool(r.out, "eligible"), 1);
  assert_int_equal(json_int(r.out, "query_group_size"), 5);
  assert_true(!strncmp(json_field(r.out, "reduce_grid"), "[4, 20, 1]", 10));
  assert_non_null(strstr(json_field(r.out, "kernels"),
                         "uq_decode_sm_90a_bf16_v0_d128_hk4_"));
  result_free(&r);
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--variant", "fast"),
                     "unknown variant 'fast'");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--variant", ""),
                     "empty variant");
  expect_usage_error(RUN("dump", "--key",
                         "uq_reduce_gfx950_bf16_v0_d256_hk1_p16_qg8",
                         "--variant", "portable"),
                     "--key replaces the shape options");
}

static void plan_refused_shape_exits_one_unknown_target_two(void **state) {
  (void)state;
  /* Well-formed flags the library refuses: 7 q heads over 2 kv heads. */
  result r = RUN("plan", "--batch", "4", "--q-heads", "7", "--kv-heads", "2",
                 "--head-dim", "256", "--block-size", "32",
                 "--max-blocks-per-seq", "64", "--json");
  assert_int_equal(r.code, 1);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "invalid argument"));
  result_free(&r);
  /* A target uqjit does not know is misuse (exit 2), named. */
  r = RUN("plan", SHAPE_4x8x1, "--target", "gfx9");
  assert_int_equal(r.code, 2);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "gfx9"));
  result_free(&r);
}

static void help_goes_to_stdout_and_exits_zero(void **state) {
  (void)state;
  static const char *const forms[][2] = {
      {"-h", NULL}, {"--help", NULL}, {"help", NULL}};
  for (size_t i = 0; i < 3; i++) {
    result r = RUN(forms[i][0]);
    assert_int_equal(r.code, 0);
    assert_string_equal(r.err, "");
    assert_true(!strncmp(r.out, "usage: uqjit", 12));
    assert_non_null(strstr(r.out, "plan"));
    assert_non_null(strstr(r.out, "version"));
    result_free(&r);
  }
  result r = RUN("plan", "-h");
  assert_int_equal(r.code, 0);
  assert_string_equal(r.err, "");
  assert_non_null(strstr(r.out, "--max-blocks-per-seq"));
  assert_non_null(strstr(r.out, "--json"));
  result_free(&r);
  r = RUN("help", "plan");
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "--max-blocks-per-seq"));
  result_free(&r);
}

static void misuse_goes_to_stderr_and_exits_two(void **state) {
  (void)state;
  result r = run_to(NULL, (const char *const[]){NULL});
  expect_usage_error(r, "no command");
  expect_usage_error(RUN("frobnicate"), "unknown command");
  expect_usage_error(RUN("help", "frobnicate"), "help of unknown command");
  expect_usage_error(RUN("version", "extra"), "version with an argument");
}

static void version_prints_library_version(void **state) {
  (void)state;
  result r = RUN("version");
  assert_int_equal(r.code, 0);
  assert_string_equal(r.out, "uqjit 0.1.0\n");
  assert_string_equal(r.err, "");
  result_free(&r);
}

static void failed_stdout_write_exits_one(void **state) {
  (void)state;
  if (access("/dev/full", W_OK) != 0)
    skip();
  result r = run_to("/dev/full", (const char *const[]){"version", NULL});
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "error writing"));
  result_free(&r);
  r = run_to("/dev/full", (const char *const[]){"plan", SHAPE_4x8x1, NULL});
  assert_int_equal(r.code, 1);
  result_free(&r);
}

static void plan_overflowing_stride_exits_one_and_help_extra_is_misuse(
    void **state) {
  (void)state;
  result r = RUN("plan", SHAPE_4x8x1, "--q-stride-seq",
                 "9223372036854775807");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "size overflows"));
  result_free(&r);
  r = RUN("help", "plan", "extra");
  assert_int_equal(r.code, 2);
  assert_null(strstr(r.err, "unknown command"));
  assert_non_null(strstr(r.err, "extra"));
  result_free(&r);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH-TO-UQJIT\n", argv[0]);
    return 1;
  }
  cli_run_init(argv[1], 10000);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plan_json_reports_sixteen_partitions_one_tile_group),
      cmocka_unit_test(plan_json_lists_prologue_when_not_fused),
      cmocka_unit_test(plan_on_sm90a_names_the_warpgroup_layer),
      cmocka_unit_test(plan_on_mi300x_names_the_gfx942_layer),
      cmocka_unit_test(plan_text_summarises_the_plan),
      cmocka_unit_test(plan_ineligible_shape_exits_zero_with_reason),
      cmocka_unit_test(plan_malformed_flags_exit_two),
      cmocka_unit_test(plan_variant_names_the_layer),
      cmocka_unit_test(plan_refused_shape_exits_one_unknown_target_two),
      cmocka_unit_test(plan_overflowing_stride_exits_one_and_help_extra_is_misuse),
      cmocka_unit_test(help_goes_to_stdout_and_exits_zero),
      cmocka_unit_test(misuse_goes_to_stderr_and_exits_two),
      cmocka_unit_test(version_prints_library_version),
      cmocka_unit_test(failed_stdout_write_exits_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
