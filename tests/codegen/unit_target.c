/* Target names (lib/codegen/target.c): NVIDIA GPU names map to the target
 * the device reports, AMD ones to the bare architecture every mode of the
 * part loads, in any case; the targets a device reporting features loads;
 * unknown names are refused with the accepted forms listed; every
 * spelling of a target canonicalised (or refused) and the layers each
 * architecture has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/codegen/layers.h"
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

/* AMD names stand for the bare architecture: the code object every
 * sramecc/xnack mode of the part loads. */
static void amd_gpu_names_map_to_feature_agnostic_targets(void **s) {
  (void)s;
  expect_target("mi355x", "gfx950", UQ__TARGET_AMD, "gfx950");
  expect_target("mi300x", "gfx942", UQ__TARGET_AMD, "gfx942");
  expect_target("mi325x", "gfx942", UQ__TARGET_AMD, "gfx942");
  expect_target("mi250x", "gfx90a", UQ__TARGET_AMD, "gfx90a");
  expect_target("mi250", "gfx90a", UQ__TARGET_AMD, "gfx90a");
  expect_target("mi210", "gfx90a", UQ__TARGET_AMD, "gfx90a");
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
  expect_target("MI355X", "gfx950", UQ__TARGET_AMD, "gfx950");
  expect_target("Mi300X", "gfx942", UQ__TARGET_AMD, "gfx942");
  expect_target("H200", "sm_90a", UQ__TARGET_NVIDIA, "sm_90a");
}

/* Each target a device loads, most specific first, for every form the
 * parts report (hipDeviceProp_t.gcnArchName): the list always ends with
 * the bare architecture an AMD GPU name warms. */
static void expect_loadable(const char *device, const char *const *want) {
  char out[UQ_TARGET_MAX];
  int i = 0;
  for (; want[i] != NULL; i++) {
    if (uq__target_loadable(device, i, out, sizeof out) != 0)
      fail_msg("%s: entry %d missing (wanted %s)", device, i, want[i]);
    if (strcmp(out, want[i]) != 0)
      fail_msg("%s: entry %d is %s, wanted %s", device, i, out, want[i]);
  }
  assert_int_equal(uq__target_loadable(device, i, out, sizeof out),
                   UQ_ENOENT);
}

static void device_targets_load_less_specific_forms(void **s) {
  (void)s;
  static const char *const a[] = {"gfx950:sramecc+:xnack-", "gfx950:sramecc+",
                                  "gfx950:xnack-", "gfx950", NULL};
  expect_loadable("gfx950:sramecc+:xnack-", a);
  expect_loadable("gfx950:xnack-:sramecc+", a); /* canonicalised first */
  static const char *const b[] = {"gfx942:sramecc-:xnack+", "gfx942:sramecc-",
                                  "gfx942:xnack+", "gfx942", NULL};
  expect_loadable("gfx942:sramecc-:xnack+", b);
  static const char *const c[] = {"gfx90a:xnack+", "gfx90a", NULL};
  expect_loadable("gfx90a:xnack+", c);
  static const char *const d[] = {"gfx90a", NULL};
  expect_loadable("gfx90a", d);
  expect_loadable("mi300x", (const char *const[]){"gfx942", NULL});
  /* NVIDIA: the target alone (sm_90a code is not sm_90 code). */
  expect_loadable("sm_90a", (const char *const[]){"sm_90a", NULL});
  char out[UQ_TARGET_MAX];
  assert_int_equal(uq__target_loadable("gfx950:bogus+", 0, out, sizeof out),
                   UQ_EINVAL);
  char small[8];
  assert_int_equal(uq__target_loadable("gfx950:sramecc+", 0, small,
                                       sizeof small), UQ_EINVAL);
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
  assert_string_equal(plan.kernels[0].target, "gfx950");
}

/* ---- canonical spellings (lib/codegen/target.c's parser) ---- */

typedef struct target_case {
  const char *in, *canon;
  int family, arch, wave, threads;
} target_case;

static void target_spellings_canonicalise(void **state) {
  (void)state;
  static const target_case cases[] = {
      {"gfx950", "gfx950", UQ__TARGET_AMD, 0x950, 64, 64},
      {"GFX950", "gfx950", UQ__TARGET_AMD, 0x950, 64, 64},
      {"gfx942", "gfx942", UQ__TARGET_AMD, 0x942, 64, 64},
      {"gfx90a", "gfx90a", UQ__TARGET_AMD, 0x90a, 64, 64},
      {"gfx90A", "gfx90a", UQ__TARGET_AMD, 0x90a, 64, 64},
      {"gfx908", "gfx908", UQ__TARGET_AMD, 0x908, 64, 64},
      {"gfx940", "gfx940", UQ__TARGET_AMD, 0x940, 64, 64},
      {"gfx941", "gfx941", UQ__TARGET_AMD, 0x941, 64, 64},
      {"gfx1100", "gfx1100", UQ__TARGET_AMD, 0x1100, 32, 64},
      {"gfx1030", "gfx1030", UQ__TARGET_AMD, 0x1030, 32, 64},
      {"gfx950:xnack-:sramecc+", "gfx950:sramecc+:xnack-", UQ__TARGET_AMD,
       0x950, 64, 64},
      {"gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-", UQ__TARGET_AMD,
       0x942, 64, 64},
      {"gfx942:XNACK+", "gfx942:xnack+", UQ__TARGET_AMD, 0x942, 64, 64},
      {"gfx90a:sramecc-", "gfx90a:sramecc-", UQ__TARGET_AMD, 0x90a, 64, 64},
      {"sm_90", "sm_90", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"sm90", "sm_90", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"SM_90", "sm_90", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"sm_90a", "sm_90a", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"SM90A", "sm_90a", UQ__TARGET_NVIDIA, 90, 32, 128},
      {"sm_80", "sm_80", UQ__TARGET_NVIDIA, 80, 32, 128},
      {"sm_100a", "sm_100a", UQ__TARGET_NVIDIA, 100, 32, 128},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const target_case *c = &cases[i];
    char out[UQ_TARGET_MAX];
    uq__target_info info;
    memset(&info, 0x77, sizeof info);
    if (uq__target_parse(c->in, out, sizeof out, &info) != 0)
      fail_msg("'%s' refused: %s", c->in, uq_last_error());
    assert_string_equal(out, c->canon);
    assert_int_equal(info.family, c->family);
    assert_int_equal(info.arch, c->arch);
    assert_int_equal(info.wave_size, c->wave);
    assert_int_equal(uq__layer_block_threads(&info, UQ_VARIANT_PORTABLE),
                     c->threads);
    /* Canonical spellings are fixed points. */
    char again[UQ_TARGET_MAX];
    assert_int_equal(uq__target_parse(out, again, sizeof again, NULL), 0);
    assert_string_equal(again, out);
  }
  char out[UQ_TARGET_MAX];
  uq__target_info info;
  assert_int_equal(uq__target_parse("gfx942:sramecc+:xnack-", out, sizeof out,
                                    &info),
                   0);
  assert_string_equal(info.arch_name, "gfx942");
  assert_int_equal(uq__target_parse("sm90a", out, sizeof out, &info), 0);
  assert_string_equal(info.arch_name, "sm_90a");
}

/* wgmma exists only in the arch-specific sm_90a target: the warpgroup
 * layer is there and nowhere else; the matrix layer is on every NVIDIA
 * target from sm_90 on. Threads per block: 128 for either layer. */
static void target_layers_follow_the_architecture(void **state) {
  (void)state;
  static const struct {
    const char *target;
    int matrix, warpgroup;
  } cases[] = {
      {"sm_90a", 1, 1}, {"SM90A", 1, 1}, {"sm_90", 1, 0},
      {"sm_100a", 1, 0}, {"sm_100", 1, 0}, {"sm_120a", 1, 0},
      {"sm_89", 0, 0},  {"sm_80", 0, 0},  {"gfx950", 0, 0},
      {"gfx942", 0, 0}, {"gfx90a", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[UQ_TARGET_MAX];
    uq__target_info info;
    assert_int_equal(uq__target_parse(cases[i].target, out, sizeof out, &info),
                     0);
    if (uq__target_matrix_layer(&info) != cases[i].matrix ||
        uq__target_warpgroup_layer(&info) != cases[i].warpgroup)
      fail_msg("%s: matrix %d warpgroup %d, expected %d %d", cases[i].target,
               uq__target_matrix_layer(&info),
               uq__target_warpgroup_layer(&info), cases[i].matrix,
               cases[i].warpgroup);
    unsigned want = info.family == UQ__TARGET_NVIDIA ? 128u : 64u;
    for (int v = UQ_VARIANT_PORTABLE; v <= UQ_VARIANT_WARPGROUP; v++)
      assert_int_equal(uq__layer_block_threads(&info, v), want);
  }
  assert_int_equal(uq__target_warpgroup_layer(NULL), 0);
  assert_int_equal(uq__layer_block_threads(NULL, UQ_VARIANT_WARPGROUP), 0);
}

static void target_refuses_bad_spellings(void **state) {
  (void)state;
  static const char *bad[] = {
      "",         "gfx",          "gfx95",         "gfx95000",
      "gfx9g0",   "gfx_950",      "gfx950:",       "gfx950::xnack+",
      "gfx950:xnack", "gfx950:xnack+:xnack-", "gfx950:xnack+:xnack+",
      "gfx950:tgsplit+", "gfx950:sramecc*", " gfx950", "gfx950 ",
      "gfx2100",  "gfx500",       "sm",            "sm_",
      "sm_9",     "sm_090",       "sm_1000",       "sm_90b",
      "sm_90a:xnack+", "sm-90",   "compute_90",    "cuda",
      "nvidia",   "gfx950:sramecc+:xnack-:sramecc+",
      "gfx950xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char out[UQ_TARGET_MAX] = "untouched";
    int rc = uq__target_parse(bad[i], out, sizeof out, NULL);
    if (rc != UQ_EINVAL)
      fail_msg("'%s' accepted as '%s'", bad[i], out);
    assert_string_equal(out, "untouched");
    assert_true(uq_last_error()[0] != '\0');
  }
  char small[6];
  assert_int_equal(uq__target_parse("gfx950", small, sizeof small, NULL),
                   UQ_EINVAL);
  assert_int_equal(uq__target_parse(NULL, small, sizeof small, NULL),
                   UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(amd_gpu_names_map_to_feature_agnostic_targets),
      cmocka_unit_test(nvidia_gpu_names_map_to_sm_90a),
      cmocka_unit_test(gpu_names_are_case_insensitive),
      cmocka_unit_test(device_targets_load_less_specific_forms),
      cmocka_unit_test(arch_names_unchanged),
      cmocka_unit_test(unknown_names_refused_listing_aliases),
      cmocka_unit_test(plan_accepts_gpu_name),
      cmocka_unit_test(target_spellings_canonicalise),
      cmocka_unit_test(target_layers_follow_the_architecture),
      cmocka_unit_test(target_refuses_bad_spellings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
