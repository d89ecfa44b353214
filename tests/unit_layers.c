/* The decode layer table: one row per variant at its own index, every
 * row's templates embedded, the choice of layer per target and
 * UQJIT_VARIANT, and the refusals worded from the rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/codegen/emit.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"
#include "uqjit.h"

static uq__target_info parse(const char *target) {
  char canon[UQ_TARGET_MAX];
  uq__target_info info;
  assert_int_equal(uq__target_parse(target, canon, sizeof canon, &info), 0);
  return info;
}

static void layers_sit_at_their_variant(void **state) {
  (void)state;
  assert_int_equal(uq__layers_count, 3);
  for (int v = 0; v < uq__layers_count; v++) {
    const uq__layer *l = uq__layer_find(v);
    assert_non_null(l);
    assert_int_equal(l->variant, v);
    assert_non_null(l->name);
    assert_non_null(l->available);
    assert_true(l->min_partition_tokens > 0);
  }
  assert_null(uq__layer_find(-1));
  assert_null(uq__layer_find(uq__layers_count));
  /* The lowest layer serves every target: it is the fallback. */
  uq__target_info amd = parse("gfx950");
  assert_true(uq__layers[0].available(&amd));
  char list[128];
  uq__layer_list(list, sizeof list);
  assert_string_equal(list, "0 portable, 1 matrix, 2 warpgroup");
}

static void layer_templates_are_embedded(void **state) {
  (void)state;
  for (int v = 0; v < uq__layers_count; v++) {
    const char *const *t = uq__layers[v].templates;
    assert_non_null(t);
    assert_non_null(t[0]);
    for (; *t != NULL; t++) {
      if (uq__template_text(*t, NULL) == NULL)
        fail_msg("layer %s: template %s is not embedded", uq__layers[v].name,
                 *t);
    }
  }
}

static void layer_choice_follows_target_and_setting(void **state) {
  (void)state;
  static const struct {
    const char *target, *setting;
    int want;
  } cases[] = {
      {"sm_90a", NULL, UQ_VARIANT_WARPGROUP},
      {"sm_90a", "matrix", UQ_VARIANT_MATRIX},
      {"sm_90a", "portable", UQ_VARIANT_PORTABLE},
      {"sm_90a", "bogus", UQ_VARIANT_WARPGROUP},
      {"sm_90", "warpgroup", UQ_VARIANT_MATRIX},
      {"sm_80", NULL, UQ_VARIANT_PORTABLE},
      {"gfx950", "matrix", UQ_VARIANT_PORTABLE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].setting != NULL)
      setenv("UQJIT_VARIANT", cases[i].setting, 1);
    else
      unsetenv("UQJIT_VARIANT");
    uq__target_info info = parse(cases[i].target);
    const uq__layer *l = uq__layer_choose(&info);
    if (l->variant != cases[i].want)
      fail_msg("%s with UQJIT_VARIANT=%s: layer %s, want variant %d",
               cases[i].target, cases[i].setting ? cases[i].setting : "",
               l->name, cases[i].want);
  }
  unsetenv("UQJIT_VARIANT");
}

static void layer_refusals_name_the_layer(void **state) {
  (void)state;
  uq__target_info sm90 = parse("sm_90"), amd = parse("gfx950");
  const uq__layer *wg = uq__layer_find(UQ_VARIANT_WARPGROUP);
  const uq__layer *mx = uq__layer_find(UQ_VARIANT_MATRIX);
  assert_int_equal(uq__layer_check_target(wg, &sm90, "sm_90"), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "target sm_90 has no warpgroup decode layer (variant 2; "
                      "it needs sm_90a); use the matrix or portable variant");
  assert_int_equal(uq__layer_check_target(mx, &amd, "gfx950"), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "target gfx950 has no matrix decode layer (variant 1); "
                      "use the portable variant");
  assert_int_equal(uq__layer_check_target(mx, &sm90, "sm_90"), 0);
  assert_int_equal(uq__layer_check_decode(mx, 256, 16), 0);
  assert_int_equal(uq__layer_check_decode(mx, 128, 8), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "the matrix decode layer needs head_dim 256 and a query "
                      "group size <= 16, not 128 and 8");
  assert_int_equal(uq__layer_check_decode(&uq__layers[0], 64, 64), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layers_sit_at_their_variant),
      cmocka_unit_test(layer_templates_are_embedded),
      cmocka_unit_test(layer_choice_follows_target_and_setting),
      cmocka_unit_test(layer_refusals_name_the_layer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
