/* The decode layer table: rows per (variant, target), every row's
 * templates embedded, what each row serves, the choice of layer per
 * shape, target and request, and the refusals worded from the rows. */
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

static void layers_are_found_by_variant_and_target(void **state) {
  (void)state;
  assert_int_equal(uq__variants_count, 5);
  for (int v = 0; v < uq__variants_count; v++) {
    const uq__layer *l = uq__layer_find(v, NULL);
    assert_non_null(l);
    assert_int_equal(l->variant, v);
    assert_non_null(l->name);
    assert_non_null(l->available);
  }
  for (int r = 0; r < uq__layers_count; r++) {
    assert_true(uq__layers[r].min_partition_tokens > 0);
    /* rows are in variant order */
    if (r > 0)
      assert_true(uq__layers[r].variant >= uq__layers[r - 1].variant);
  }
  assert_null(uq__layer_find(-1, NULL));
  assert_null(uq__layer_find(uq__variants_count, NULL));
  /* The lowest layer serves every target: it is the fallback. */
  uq__target_info amd = parse("gfx950");
  assert_true(uq__layers[0].available(&amd));
  char list[128];
  uq__layer_list(list, sizeof list);
  assert_string_equal(list, "0 portable, 1 matrix, 2 warpgroup, 3 gfx950-emu, 4 gfx942-emu");
}

/* Variant 1 is the mma.sync layer on NVIDIA, the gfx950 layer on gfx950
 * and the gfx942 layer on gfx942; the emulations run the AMD kernel texts
 * on NVIDIA. */
static void variant_one_is_a_layer_per_target(void **state) {
  (void)state;
  uq__target_info sm90 = parse("sm_90"), g950 = parse("gfx950:sramecc+:xnack-");
  uq__target_info g942 = parse("gfx942");
  const uq__layer *nv = uq__layer_find(UQ_VARIANT_MATRIX, &sm90);
  const uq__layer *amd = uq__layer_find(UQ_VARIANT_MATRIX, &g950);
  assert_ptr_not_equal(nv, amd);
  assert_string_equal(nv->templates[3], "decode_mma_sm90.hip");
  assert_string_equal(amd->templates[1], "gfx950_maps.hip");
  assert_string_equal(amd->templates[2], "cdna_prims_amd.hip");
  assert_string_equal(amd->templates[3], "gfx950_prims_amd.hip");
  assert_string_equal(amd->templates[4], "decode_gfx950.hip");
  assert_null(amd->templates[5]);
  assert_int_equal(amd->block_threads, 64);
  assert_int_equal(uq__layer_block_threads(&g950, UQ_VARIANT_MATRIX), 64);
  assert_int_equal(uq__layer_block_threads(&sm90, UQ_VARIANT_MATRIX), 128);
  const uq__layer *cdna3 = uq__layer_find(UQ_VARIANT_MATRIX, &g942);
  assert_true(cdna3->available(&g942));
  assert_false(cdna3->available(&g950));
  assert_ptr_not_equal(cdna3, amd);
  static const char *const cdna3_templates[] = {
      "layer_common.hip", "gfx942_maps.hip", "cdna_prims_amd.hip", "gfx942_prims_amd.hip",
      "decode_gfx942.hip"};
  for (int i = 0; i < 5; i++)
    assert_string_equal(cdna3->templates[i], cdna3_templates[i]);
  assert_null(cdna3->templates[5]);
  assert_int_equal(uq__layer_block_threads(&g942, UQ_VARIANT_MATRIX), 64);
  assert_int_equal(cdna3->head_dims[0], 256);
  assert_int_equal(cdna3->head_dims[1], 0);
  assert_int_equal(cdna3->query_groups, (1u << 6) | (1u << 8) | (1u << 16));
  uq__target_info g90a = parse("gfx90a");
  assert_false(uq__layer_find(UQ_VARIANT_MATRIX, &g90a)->available(&g90a));
  const uq__layer *emu3 = uq__layer_find(UQ_VARIANT_GFX942_EMU, &sm90);
  assert_true(emu3->available(&sm90));
  assert_false(emu3->available(&g942));
  static const char *const emu3_templates[] = {
      "layer_common.hip",  "gfx942_maps.hip",    "cdna_layouts.hip",
      "cdna3_layouts.hip", "cdna_prims_emu.hip", "gfx942_prims_emu.hip",
      "decode_gfx942.hip"};
  for (int i = 0; i < 7; i++)
    assert_string_equal(emu3->templates[i], emu3_templates[i]);
  assert_null(emu3->templates[7]);
  assert_int_equal(uq__layer_block_threads(&sm90, UQ_VARIANT_GFX942_EMU), 64);
  const uq__layer *emu = uq__layer_find(UQ_VARIANT_GFX950_EMU, &sm90);
  assert_true(emu->available(&sm90));
  assert_false(emu->available(&g950));
  assert_false(emu->available(&g942));
  static const char *const emu_templates[] = {
      "layer_common.hip",   "gfx950_maps.hip",    "cdna_layouts.hip",
      "cdna4_layouts.hip",  "cdna_prims_emu.hip", "gfx950_prims_emu.hip",
      "decode_gfx950.hip"};
  for (int i = 0; i < 7; i++)
    assert_string_equal(emu->templates[i], emu_templates[i]);
  assert_null(emu->templates[7]);
  assert_int_equal(uq__layer_block_threads(&sm90, UQ_VARIANT_GFX950_EMU), 64);
  assert_int_equal(emu->head_dims[0], 256);
  assert_int_equal(emu->head_dims[1], 0);
  assert_int_equal(emu->query_groups, (1u << 6) | (1u << 8) | (1u << 16));
}

/* Every row serves head dims of the format (64, 128, 256: FORMAT.md) and
 * query groups within 1..16 (the largest any template takes); the
 * portable row serves all of them, so every target has a layer for every
 * shape some row serves. */
static void rows_serve_format_shapes_and_portable_serves_all(void **state) {
  (void)state;
  const uq__layer *portable = &uq__layers[0];
  assert_int_equal(portable->variant, UQ_VARIANT_PORTABLE);
  for (int r = 0; r < uq__layers_count; r++) {
    const uq__layer *l = &uq__layers[r];
    assert_int_not_equal(l->head_dims[0], 0);
    for (int i = 0; i < UQ__LAYER_HEAD_DIMS && l->head_dims[i]; i++) {
      int d = l->head_dims[i];
      assert_true(d == 64 || d == 128 || d == 256);
    }
    assert_int_equal(l->query_groups & ~0x1fffeu, 0);
    /* Every head dim it serves has templates; 32-bit V code loads only
     * where the run is 4-byte aligned (not at 64: byte 34). */
    for (int i = 0; i < UQ__LAYER_HEAD_DIMS && l->head_dims[i]; i++) {
      int d = l->head_dims[i];
      const char *const *t = uq__layer_templates(l, d);
      if (t == NULL)
        fail_msg("%s: no templates for head_dim %d", l->name, d);
      assert_true((t == l->templates_v16) == (d == 64));
    }
    for (int d = 32; d <= 512; d *= 2)
      for (int q = 0; q <= 33; q++)
        for (int dt = 0; dt <= 3; dt++) {
          const uq__layer_shape s = {d, q, (uq_dtype)dt};
          if (uq__layer_serves(l, &s) && !uq__layer_serves(portable, &s))
            fail_msg("%s serves d %d qg %d dtype %d, portable does not",
                     l->name, d, q, dt);
        }
  }
  for (int d = 16; d <= 1024; d += 16)
    for (int q = -1; q <= 40; q++) {
      const uq__layer_shape s = {d, q, UQ_DTYPE_BF16};
      int want = (d == 64 || d == 128 || d == 256) && q >= 1 && q <= 16;
      if (uq__layer_serves(portable, &s) != want)
        fail_msg("portable: d %d qg %d served %d, want %d", d, q,
                 uq__layer_serves(portable, &s), want);
    }
  const uq__layer_shape fp32 = {256, 8, UQ_DTYPE_FP32};
  assert_false(uq__layer_serves(portable, &fp32));
}

static void layer_templates_are_embedded(void **state) {
  (void)state;
  for (int r = 0; r < uq__layers_count; r++) {
    const char *const *lists[] = {uq__layers[r].templates,
                                  uq__layers[r].templates_v16};
    assert_non_null(lists[0]);
    for (int k = 0; k < 2; k++) {
      const char *const *t = lists[k];
      if (t == NULL)
        continue;
      assert_non_null(t[0]);
      for (; *t != NULL; t++) {
        if (uq__template_text(*t, NULL) == NULL)
          fail_msg("layer %s: template %s is not embedded",
                   uq__layers[r].name, *t);
      }
    }
  }
}

static void layer_choice_follows_target_and_request(void **state) {
  (void)state;
  static const struct {
    const char *target, *request;
    int want;
  } cases[] = {
      {"sm_90a", NULL, UQ_VARIANT_WARPGROUP},
      {"sm_90a", "auto", UQ_VARIANT_WARPGROUP},
      {"sm_90a", "matrix", UQ_VARIANT_MATRIX},
      {"sm_90a", "portable", UQ_VARIANT_PORTABLE},
      {"sm_90", "warpgroup", UQ_VARIANT_MATRIX},
      {"sm_80", NULL, UQ_VARIANT_PORTABLE},
      {"gfx950", NULL, UQ_VARIANT_MATRIX},
      {"gfx950:sramecc+:xnack-", NULL, UQ_VARIANT_MATRIX},
      {"gfx950", "matrix", UQ_VARIANT_MATRIX},
      {"gfx950", "portable", UQ_VARIANT_PORTABLE},
      {"gfx950", "gfx950-emu", UQ_VARIANT_MATRIX},
      {"gfx942", NULL, UQ_VARIANT_MATRIX},
      {"gfx942:sramecc+:xnack-", NULL, UQ_VARIANT_MATRIX},
      {"gfx942", "matrix", UQ_VARIANT_MATRIX},
      {"gfx942", "portable", UQ_VARIANT_PORTABLE},
      {"gfx942", "gfx942-emu", UQ_VARIANT_MATRIX},
      {"gfx90a", NULL, UQ_VARIANT_PORTABLE},
      {"gfx90a", "matrix", UQ_VARIANT_PORTABLE},
      {"sm_90", "gfx942-emu", UQ_VARIANT_GFX942_EMU},
      {"sm_90a", "gfx942-emu", UQ_VARIANT_GFX942_EMU},
      {"sm_80", "gfx942-emu", UQ_VARIANT_PORTABLE},
      /* the emulation only when asked for, and only on sm_90 and newer */
      {"sm_90", NULL, UQ_VARIANT_MATRIX},
      {"sm_90", "gfx950-emu", UQ_VARIANT_GFX950_EMU},
      {"sm_90a", "gfx950-emu", UQ_VARIANT_GFX950_EMU},
      {"sm_100a", "gfx950-emu", UQ_VARIANT_GFX950_EMU},
      {"sm_80", "gfx950-emu", UQ_VARIANT_PORTABLE},
  };
  const uq__layer_shape served = {256, 8, UQ_DTYPE_BF16};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int req = cases[i].request ? uq__layer_variant_named(cases[i].request)
                               : UQ__LAYER_BEST;
    assert_int_not_equal(req, UQ__LAYER_UNKNOWN);
    uq__target_info info = parse(cases[i].target);
    const uq__layer *l = uq__layer_choose(&info, &served, req);
    if (l == NULL || l->variant != cases[i].want || !l->available(&info))
      fail_msg("%s asking for %s: layer %s, want variant %d",
               cases[i].target, cases[i].request ? cases[i].request : "-",
               l ? l->name : "none", cases[i].want);
  }
  assert_int_equal(uq__layer_variant_named("bogus"), UQ__LAYER_UNKNOWN);
  assert_int_equal(uq__layer_variant_named(NULL), UQ__LAYER_UNKNOWN);
  assert_int_equal(uq__layer_variant_named("Portable"), UQ__LAYER_UNKNOWN);
}

/* The shape decides as much as the target: a fast layer only for what
 * its row serves, the portable layer for the rest, nothing where no row
 * serves (whatever is asked for). */
static void layer_choice_follows_the_shape(void **state) {
  (void)state;
  static const char *const targets[] = {"sm_90a", "sm_90", "gfx950",
                                        "gfx942", "sm_80"};
  static const char *const requests[] = {NULL, "matrix", "warpgroup",
                                         "gfx950-emu", "portable"};
  for (size_t t = 0; t < sizeof targets / sizeof *targets; t++)
    for (size_t r = 0; r < sizeof requests / sizeof *requests; r++)
      for (int d = 32; d <= 512; d *= 2)
        for (int q = 0; q <= 20; q++) {
          uq__target_info info = parse(targets[t]);
          const uq__layer_shape s = {d, q, q % 2 ? UQ_DTYPE_FP16
                                                 : UQ_DTYPE_BF16};
          int req = requests[r] ? uq__layer_variant_named(requests[r])
                                : UQ__LAYER_BEST;
          const uq__layer *l = uq__layer_choose(&info, &s, req);
          int portable_serves = (d == 64 || d == 128 || d == 256) &&
                                q >= 1 && q <= 16;
          int fast = d == 256 && (q == 6 || q == 8 || q == 16);
          if (!portable_serves) {
            if (l != NULL)
              fail_msg("%s d %d qg %d: %s chosen, none serves", targets[t],
                       d, q, l->name);
            continue;
          }
          assert_non_null(l);
          assert_true(l->available(&info));
          assert_true(uq__layer_serves(l, &s));
          if (!fast)
            assert_int_equal(l->variant, UQ_VARIANT_PORTABLE);
          /* never above what was asked for */
          if (req >= 0)
            assert_true(l->variant <= req);
        }
}

static void layer_refusals_name_the_layer(void **state) {
  (void)state;
  uq__target_info sm90 = parse("sm_90"), amd = parse("gfx90a");
  uq__target_info sm80 = parse("sm_80"), g950 = parse("gfx950");
  const uq__layer *wg = uq__layer_find(UQ_VARIANT_WARPGROUP, &sm90);
  const uq__layer *mx = uq__layer_find(UQ_VARIANT_MATRIX, &sm90);
  assert_int_equal(uq__layer_check_target(wg, &sm90, "sm_90"), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "target sm_90 has no warpgroup decode layer (variant 2; "
                      "it needs sm_90a); use the matrix or portable variant");
  assert_int_equal(uq__layer_check_target(uq__layer_find(1, &amd), &amd, "gfx90a"),
                   UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "target gfx90a has no matrix decode layer (variant 1); "
                      "use the portable variant");
  /* Only layers the target has are offered instead. */
  assert_int_equal(uq__layer_check_target(uq__layer_find(2, &sm80), &sm80, "sm_80"),
                   UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "target sm_80 has no warpgroup decode layer (variant 2; "
                      "it needs sm_90a); use the portable variant");
  const uq__layer *emu = uq__layer_find(UQ_VARIANT_GFX950_EMU, &g950);
  assert_int_equal(uq__layer_check_target(emu, &g950, "gfx950"), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "target gfx950 has no gfx950-emu decode layer (variant 3; "
                      "it needs NVIDIA sm_90 or newer); use the matrix or "
                      "portable variant");
  const uq__layer_shape d128 = {128, 8, UQ_DTYPE_BF16};
  const uq__layer_shape d256 = {256, 16, UQ_DTYPE_BF16};
  const uq__layer_shape qg4 = {256, 4, UQ_DTYPE_FP16};
  const uq__layer_shape qg64 = {64, 64, UQ_DTYPE_BF16};
  assert_int_equal(uq__layer_check_target(uq__layer_find(1, &g950), &g950, "gfx950"), 0);
  assert_int_equal(uq__layer_check_decode(uq__layer_find(1, &g950), &d128), UQ_EINVAL);
  assert_int_equal(uq__layer_check_target(mx, &sm90, "sm_90"), 0);
  assert_int_equal(uq__layer_check_decode(mx, &d256), 0);
  assert_int_equal(uq__layer_check_decode(mx, &d128), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "the matrix decode layer serves head_dim 256 with query "
                      "groups of 6, 8 or 16, not head_dim 128 with a query "
                      "group of 8");
  assert_int_equal(uq__layer_check_decode(mx, &qg4), UQ_EINVAL);
  assert_int_equal(uq__layer_check_decode(&uq__layers[0], &qg4), 0);
  assert_int_equal(uq__layer_check_decode(&uq__layers[0], &d128), 0);
  assert_int_equal(uq__layer_check_decode(&uq__layers[0], &qg64), UQ_EINVAL);
  assert_string_equal(uq_last_error(),
                      "the portable decode layer serves head_dim 64, 128 or "
                      "256 with query groups of 1 to 16, not head_dim 64 with "
                      "a query group of 64");
}

/* A plan's reason names the field no row takes and what the rows take. */
static void refusals_name_the_field_no_row_serves(void **state) {
  (void)state;
  char why[UQ_REASON_MAX];
  uq__target_info sm90a = parse("sm_90a"), g942 = parse("gfx942");
  const uq__layer_shape d96 = {96, 8, UQ_DTYPE_BF16};
  const uq__layer_shape qg20 = {128, 20, UQ_DTYPE_BF16};
  uq__layer_refusal(&sm90a, &d96, why, sizeof why);
  assert_string_equal(why,
                      "head_dim 96 is not served (head_dim 64, 128 or 256)");
  uq__layer_refusal(&g942, &qg20, why, sizeof why);
  assert_string_equal(why,
                      "query group size (q heads / kv heads) 20 is not served "
                      "at head_dim 128 (1 to 16)");
}

/* Which decodes start under the kernel before them: small grids of a row
 * that allows it, on a target with programmatic dependent launch, the
 * block count taken over all three dimensions without overflow; and each
 * such row's decode kernel waits for that kernel before it reads. */
static void small_warpgroup_grids_are_dependent_launches(void **state) {
  (void)state;
  uq__target_info sm90a = parse("sm_90a"), sm90 = parse("sm_90"), sm80 = parse("sm_80");
  uq__target_info g950 = parse("gfx950");
  const uq__layer *wg = uq__layer_find(UQ_VARIANT_WARPGROUP, &sm90a);
  assert_int_equal(wg->dependent_max_blocks, 256);
  const uint32_t one[3] = {1, 1, 16}, at[3] = {4, 2, 32}, over[3] = {4, 2, 33};
  const uint32_t wave[3] = {4, 4, 32}, huge[3] = {65535, 65535, 65535}, wide[3] = {1, 1, 4294967295u};
  assert_int_equal(uq__decode_dependent(wg, &sm90a, one), 1);
  assert_int_equal(uq__decode_dependent(wg, &sm90a, at), 1);
  assert_int_equal(uq__decode_dependent(wg, &sm90a, over), 0);
  assert_int_equal(uq__decode_dependent(wg, &sm90a, wave), 0);
  assert_int_equal(uq__decode_dependent(wg, &sm90a, huge), 0);
  assert_int_equal(uq__decode_dependent(wg, &sm90a, wide), 0);
  /* Not where the layer or the launch is missing, nor for other rows. */
  assert_int_equal(uq__decode_dependent(wg, &sm90, one), 0);
  assert_int_equal(uq__decode_dependent(wg, &sm80, one), 0);
  assert_int_equal(uq__decode_dependent(wg, &g950, one), 0);
  assert_int_equal(uq__decode_dependent(NULL, &sm90a, one), 0);
  for (int r = 0; r < uq__layers_count; r++) {
    const uq__layer *l = &uq__layers[r];
    if (l->variant != UQ_VARIANT_WARPGROUP) {
      assert_int_equal(l->dependent_max_blocks, 0);
      assert_int_equal(uq__decode_dependent(l, &sm90a, one), 0);
      continue;
    }
    /* The kernel file (the last template) waits before its first load. */
    const char *const *t = l->templates;
    while (t[1] != NULL)
      t++;
    size_t len = 0;
    const char *text = uq__template_text(*t, &len);
    assert_non_null(text);
    const char *wait = strstr(text, "uq_grid_wait();");
    const char *kernel = strstr(text, "UQ_KERNEL");
    assert_non_null(wait);
    assert_non_null(kernel);
    assert_true(wait > kernel);
    /* Every input the kernel before may have written comes after it. */
    static const char *const inputs[] = {"p.query", "p.kv_cache", "p.block_table", "uq_seq_len(p",
                                         "p.segm_out", "p.segm_max", "p.segm_sum"};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
      const char *use = strstr(kernel, inputs[i]);
      if (use != NULL && use < wait)
        fail_msg("%s: %s is used before uq_grid_wait", *t, inputs[i]);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layers_are_found_by_variant_and_target),
      cmocka_unit_test(variant_one_is_a_layer_per_target),
      cmocka_unit_test(rows_serve_format_shapes_and_portable_serves_all),
      cmocka_unit_test(layer_templates_are_embedded),
      cmocka_unit_test(layer_choice_follows_target_and_request),
      cmocka_unit_test(layer_choice_follows_the_shape),
      cmocka_unit_test(layer_refusals_name_the_layer),
      cmocka_unit_test(refusals_name_the_field_no_row_serves),
      cmocka_unit_test(small_warpgroup_grids_are_dependent_launches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
