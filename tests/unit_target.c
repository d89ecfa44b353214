/* Target names (lib/codegen/target.c): GPU names map to the target the
 * device reports, in any case; unknown names are refused with the accepted
 * forms listed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/codegen/target.h"
#include "uqjit.h"

static void expect_target(const char *in, const char *want, int family,
                          const char *arch_name) {
  char out[UQ_TARGET_MAX];
  uq__target_info info;
  if (uq__target_parse(in, out, sizeof out, &info) != 0)
    fail_msg("'%s' refused: %s", in, uq_last_error());
  if (strcmp(out, want) != 0)
    fail_msg("'%s' -> '%s', wanted '%s'", in, out, want);
  assert_int_equal(info.family, family);
  assert_string_equal(info.arch_name, arch_name);
}

static void amd_gpu_names_map_to_reported_targets(void **s) {
  (void)s;
  expect_target("mi355x", "gfx950:sramecc+:xnack-", UQ__TARGET_AMD, "gfx950");
  expect_target("mi300x", "gfx942:sramecc+:xnack-", UQ__TARGET_AMD, "gfx942");
  expect_target("mi325x", "gfx942:sramecc+:xnack-", UQ__TARGET_AMD, "gfx942");
  expect_target("mi250x", "gfx90a:sramecc+:xnack-", UQ__TARGET_AMD, "gfx90a");
  expect_target("mi250", "gfx90a:sramecc+:xnack-", UQ__TARGET_AMD, "gfx90a");
  expect_target("mi210", "gfx90a:sramecc+:xnack-", UQ__TARGET_AMD, "gfx90a");
}

static void nvidia_gpu_names_map_to_sm_90a(void **s) {
  (void)s;
  expect_target("h100", "sm_90a", UQ__TARGET_NVIDIA, "sm_90a");
  expect_target("h200", "sm_90a", UQ__TARGET_NVIDIA, "sm_90a");
  uq__target_info info;
  char out[UQ_TARGET_MAX];
  assert_int_equal(uq__target_parse("h100", out, sizeof out, &info), 0);
  assert_true(uq__target_warpgroup_layer(&info));
}

static void gpu_names_are_case_insensitive(void **s) {
  (void)s;
  expect_target("MI355X", "gfx950:sramecc+:xnack-", UQ__TARGET_AMD, "gfx950");
  expect_target("Mi300X", "gfx942:sramecc+:xnack-", UQ__TARGET_AMD, "gfx942");
  expect_target("H200", "sm_90a", UQ__TARGET_NVIDIA, "sm_90a");
}

/* An alias is the same target as the device's own report, canonicalised:
 * what hipDeviceProp_t.gcnArchName says on these parts. */
static void alias_equals_device_report(void **s) {
  (void)s;
  char a[UQ_TARGET_MAX], d[UQ_TARGET_MAX];
  assert_int_equal(uq__target_parse("mi300x", a, sizeof a, NULL), 0);
  assert_int_equal(uq__target_parse("gfx942:sramecc+:xnack-", d, sizeof d,
                                    NULL), 0);
  assert_string_equal(a, d);
  assert_int_equal(uq__target_parse("mi355x", a, sizeof a, NULL), 0);
  assert_int_equal(uq__target_parse("gfx950:xnack-:sramecc+", d, sizeof d,
                                    NULL), 0);
  assert_string_equal(a, d);
}

static void arch_names_unchanged(void **s) {
  (void)s;
  expect_target("gfx950", "gfx950", UQ__TARGET_AMD, "gfx950");
  expect_target("GFX942:XNACK-:SRAMECC+", "gfx942:sramecc+:xnack-",
                UQ__TARGET_AMD, "gfx942");
  expect_target("sm_90", "sm_90", UQ__TARGET_NVIDIA, "sm_90");
  expect_target("sm90a", "sm_90a", UQ__TARGET_NVIDIA, "sm_90a");
}

static void expect_refused(const char *in) {
  char out[UQ_TARGET_MAX] = "untouched";
  if (uq__target_parse(in, out, sizeof out, NULL) != UQ_EINVAL)
    fail_msg("'%s' accepted as '%s'", in, out);
  assert_string_equal(out, "untouched");
}

static void unknown_names_refused_listing_aliases(void **s) {
  (void)s;
  expect_refused("mi300");
  expect_refused("mi300x:xnack+");
  expect_refused("h100x");
  expect_refused(" h100");
  expect_refused("a100");
  expect_refused("mi");
  expect_refused("");
  char out[UQ_TARGET_MAX];
  assert_int_equal(uq__target_parse("rtx4090", out, sizeof out, NULL),
                   UQ_EINVAL);
  const char *e = uq_last_error();
  static const char *const names[] = {"mi355x", "mi300x", "mi325x", "mi250x",
                                      "mi250",  "mi210",  "h100",   "h200"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strstr(e, names[i]) == NULL)
      fail_msg("error lacks %s: %s", names[i], e);
  assert_non_null(strstr(e, "rtx4090"));
}

/* The public entry points accept the names too (uq_plan_make goes through
 * uq__target_parse). */
static void plan_accepts_gpu_name(void **s) {
  (void)s;
  uq_shape shape;
  memset(&shape, 0, sizeof shape);
  shape.batch = 4;
  shape.num_q_heads = 64;
  shape.num_kv_heads = 8;
  shape.head_dim = 256;
  shape.block_size = 64;
  shape.max_blocks_per_seq = 64;
  uq_plan plan;
  if (uq_plan_make(&shape, "MI355X", &plan) != 0)
    fail_msg("plan refused: %s", uq_last_error());
  assert_true(plan.num_kernels >= 1);
  assert_string_equal(plan.kernels[0].target, "gfx950:sramecc+:xnack-");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(amd_gpu_names_map_to_reported_targets),
      cmocka_unit_test(nvidia_gpu_names_map_to_sm_90a),
      cmocka_unit_test(gpu_names_are_case_insensitive),
      cmocka_unit_test(alias_equals_device_report),
      cmocka_unit_test(arch_names_unchanged),
      cmocka_unit_test(unknown_names_refused_listing_aliases),
      cmocka_unit_test(plan_accepts_gpu_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
