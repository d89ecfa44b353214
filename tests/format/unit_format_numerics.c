/* The transforms and conversions of FORMAT.md sections 3-4: the E4M3
 * haircut against a model that enumerates every E4M3FN value, the
 * Hadamard transform (matrix product, orthonormal columns, the canonical
 * butterflies bit for bit), and the bf16 / fp16 conversions. The group
 * encoder: unit_format.c. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/format/format.h"
#include "tests/support/testkit.h"
#include "uqjit.h"

/* ------------------------------------------------------------------ */
/* The E4M3 haircut against a model that enumerates all E4M3FN values. */

static double e4m3_values[127]; /* codes 0x00..0x7e (0x7f is NaN) */

static void build_e4m3_table(void) {
  for (int c = 0; c < 127; c++) {
    int e = c >> 3, m = c & 7;
    e4m3_values[c] = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
  }
}

static double e4m3_model(double x) {
  if (isnan(x))
    return x;
  double a = fabs(x);
  double r;
  if (a >= 448.0) {
    r = 448.0;
  } else {
    int c = 0;
    while (c + 1 < 127 && e4m3_values[c + 1] <= a)
      c++;
    double lo = e4m3_values[c], hi = e4m3_values[c + 1];
    double dlo = a - lo, dhi = hi - a;
    if (dlo < dhi)
      r = lo;
    else if (dhi < dlo)
      r = hi;
    else /* tie: the even mantissa (code LSB 0) */
      r = (c & 1) == 0 ? lo : hi;
  }
  return signbit(x) ? -r : r;
}

static void haircut_all_bf16_patterns_match_model(void **state) {
  (void)state;
  build_e4m3_table();
  assert_true(e4m3_values[126] == 448.0);
  assert_true(e4m3_values[1] == ldexp(1.0, -9));
  assert_true(e4m3_values[8] == ldexp(1.0, -6));
  for (uint32_t h = 0; h < 65536; h++) {
    float x = synth_bf16_to_f32((uint16_t)h);
    float y = uq_haircut_e4m3(x);
    double want = e4m3_model((double)x);
    if (isnan(want)) {
      assert_true(isnan(y));
      continue;
    }
    if (tk_f32_bits(y) != tk_f32_bits((float)want))
      fail_msg("bf16 %04x (%a): haircut %a, model %a", h, (double)x,
               (double)y, want);
  }
}

static void haircut_ties_saturation_and_nan(void **state) {
  (void)state;
  const struct {
    float x, y;
  } cases[] = {
      {1.0625f, 1.0f},       /* tie 1 | 1.125 -> even 1.0 */
      {1.1875f, 1.25f},      /* tie 1.125 | 1.25 -> even 1.25 */
      {-1.1875f, -1.25f},
      {0x1p-10f, 0.0f},      /* tie 0 | 2^-9 -> 0 */
      {0x3p-10f, 0x1p-8f},   /* tie 2^-9 | 2^-8 -> even 2^-8 */
      {0x5p-10f, 0x2p-9f},   /* tie 2*2^-9 | 3*2^-9 -> even 2^-8 */
      {nextafterf(0x1p-10f, 1.0f), 0x1p-9f},
      {432.0f, 448.0f},      /* tie 416 | 448 -> even 448 */
      {nextafterf(432.0f, 0.0f), 416.0f},
      {240.0f, 240.0f},
      {248.0f, 256.0f},      /* tie 240 | 256 -> 256 */
      {448.0f, 448.0f},
      {449.0f, 448.0f},
      {464.0f, 448.0f},
      {1e30f, 448.0f},
      {-1e30f, -448.0f},
      {INFINITY, 448.0f},
      {-INFINITY, -448.0f},
      {-0.0f, -0.0f},
      {-0x1p-11f, -0.0f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float y = uq_haircut_e4m3(cases[i].x);
    if (tk_f32_bits(y) != tk_f32_bits(cases[i].y))
      fail_msg("haircut(%a) = %a, want %a", (double)cases[i].x, (double)y,
               (double)cases[i].y);
  }
  assert_true(isnan(uq_haircut_e4m3(NAN)));
  assert_true(isnan(uq_haircut_e4m3(tk_f32_from_bits(0xffc00001u))));
  /* fp32 inputs between bf16 values: random bits against the model. */
  build_e4m3_table();
  synth_rng rng;
  synth_rng_seed(&rng, 77);
  for (int i = 0; i < 20000; i++) {
    uint32_t u = synth_rng_u32(&rng);
    u = (u & 0x807fffffu) | ((uint32_t)(110 + synth_rng_below(&rng, 30)) << 23);
    float x = tk_f32_from_bits(u);
    assert_true(tk_f32_bits(uq_haircut_e4m3(x)) ==
                tk_f32_bits((float)e4m3_model(x)));
  }
}

/* ------------------------------------------------------------------ */
/* Hadamard. */

static void fwht_matches_explicit_matrix_product(void **state) {
  (void)state;
  synth_rng rng;
  synth_rng_seed(&rng, 3);
  for (int n = 32; n <= 512; n *= 2) {
    float *x = malloc((size_t)n * sizeof *x);
    float *y = malloc((size_t)n * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    synth_fill_normal_f32(&rng, x, (size_t)n, 1.0);
    memcpy(y, x, (size_t)n * sizeof *x);
    assert_int_equal(uq_fwht(y, n), 0);
    double norm = 0;
    for (int j = 0; j < n; j++)
      norm += (double)x[j] * x[j];
    norm = sqrt(norm);
    for (int i = 0; i < n; i++) {
      double r = 0;
      for (int j = 0; j < n; j++)
        r += (__builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * x[j];
      r /= sqrt((double)n);
      if (fabs(y[i] - r) > 1e-6 * norm)
        fail_msg("n=%d i=%d: fwht %g, H x %g", n, i, (double)y[i], r);
    }
    free(x);
    free(y);
  }
}

static void fwht_columns_are_orthonormal_hadamard(void **state) {
  (void)state;
  for (int n = 32; n <= 512; n *= 2) {
    float *h = calloc((size_t)n * n, sizeof *h); /* column j at h + j*n */
    assert_non_null(h);
    const float c = (float)(1.0 / sqrt((double)n));
    for (int j = 0; j < n; j++) {
      h[(size_t)j * n + j] = 1.0f;
      assert_int_equal(uq_fwht(h + (size_t)j * n, n), 0);
      for (int i = 0; i < n; i++) {
        float want = __builtin_popcount((unsigned)(i & j)) & 1 ? -c : c;
        assert_true(h[(size_t)j * n + i] == want);
      }
    }
    if (n <= 128) {
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
          double dot = 0;
          for (int i = 0; i < n; i++)
            dot += (double)h[(size_t)a * n + i] * h[(size_t)b * n + i];
          assert_true(fabs(dot - (a == b ? 1.0 : 0.0)) < 1e-6);
        }
    }
    free(h);
  }
}

static void fwht_is_bit_exact_to_the_canonical_butterflies(void **state) {
  (void)state;
  synth_rng rng;
  synth_rng_seed(&rng, 4);
  for (int n = 1; n <= 512; n *= 2) {
    for (int rep = 0; rep < 20; rep++) {
      float x[512], y[512];
      synth_fill_normal_f32(&rng, x, (size_t)n, ldexp(1.0, rep - 10));
      memcpy(y, x, sizeof x);
      for (int h = 1; h < n; h *= 2)
        for (int i = 0; i < n; i += 2 * h)
          for (int j = i; j < i + h; j++) {
            float a = x[j], b = x[j + h];
            x[j] = a + b;
            x[j + h] = a - b;
          }
      float c = (float)(1.0 / sqrt((double)n));
      for (int i = 0; i < n; i++)
        x[i] = x[i] * c;
      assert_int_equal(uq_fwht(y, n), 0);
      assert_memory_equal(x, y, (size_t)n * sizeof(float));
    }
  }
}

static void fwht_refuses_non_power_of_two(void **state) {
  (void)state;
  float x[96] = {1, 2, 3};
  float copy[96];
  memcpy(copy, x, sizeof x);
  const int bad[] = {0, -1, -32, 3, 6, 48, 96};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(uq_fwht(x, bad[i]), UQ_EINVAL);
    assert_true(uq_last_error()[0] != '\0');
    assert_memory_equal(x, copy, sizeof x);
  }
  assert_int_equal(uq_fwht(NULL, 32), UQ_EINVAL);
  assert_int_equal(uq_fwht(x, 1), 0);
  assert_true(x[0] == 1.0f);
}

/* ------------------------------------------------------------------ */
/* Conversions. */

static void half_to_float_matches_model_for_all_patterns(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = uq_bf16_to_float((uint16_t)h), b = synth_bf16_to_f32((uint16_t)h);
    assert_true(isnan(b) ? isnan(a) : tk_f32_bits(a) == tk_f32_bits(b));
    a = uq_fp16_to_float((uint16_t)h);
    b = synth_fp16_to_f32((uint16_t)h);
    assert_true(isnan(b) ? isnan(a) : tk_f32_bits(a) == tk_f32_bits(b));
    /* Round trip of every non-NaN pattern. */
    if (!isnan(b))
      assert_int_equal(uq_float_to_fp16(b), h);
    if (!isnan(a = uq_bf16_to_float((uint16_t)h)))
      assert_int_equal(uq_float_to_bf16(a), h);
  }
}

static void float_to_half_rounds_to_nearest_even(void **state) {
  (void)state;
  /* Hand cases. */
  assert_int_equal(uq_float_to_bf16(tk_f32_from_bits(0x3f808000u)), 0x3f80);
  assert_int_equal(uq_float_to_bf16(tk_f32_from_bits(0x3f818000u)), 0x3f82);
  assert_int_equal(uq_float_to_bf16(tk_f32_from_bits(0x3f808001u)), 0x3f81);
  assert_int_equal(uq_float_to_bf16(FLT_MAX), 0x7f80);
  assert_int_equal(uq_float_to_bf16(-INFINITY), 0xff80);
  assert_true((uq_float_to_bf16(NAN) & 0x7fff) > 0x7f80);
  assert_true((uq_float_to_bf16(tk_f32_from_bits(0x7f800001u)) & 0x7fff) >
              0x7f80);
  assert_int_equal(uq_float_to_fp16(65504.0f), 0x7bff);
  assert_int_equal(uq_float_to_fp16(65519.0f), 0x7bff);
  assert_int_equal(uq_float_to_fp16(65520.0f), 0x7c00);
  assert_int_equal(uq_float_to_fp16(-1e10f), 0xfc00);
  assert_int_equal(uq_float_to_fp16(0x1p-25f), 0x0000);  /* tie -> 0 */
  assert_int_equal(uq_float_to_fp16(0x3p-25f), 0x0002);  /* tie -> even */
  assert_int_equal(uq_float_to_fp16(0x1p-24f), 0x0001);
  assert_int_equal(uq_float_to_fp16(0x1p-14f), 0x0400);
  assert_int_equal(uq_float_to_fp16(nextafterf(0x1p-14f, 0)), 0x0400);
  assert_int_equal(uq_float_to_fp16(-0.0f), 0x8000);
  assert_int_equal(uq_float_to_fp16(1.0f + 0x1p-11f), 0x3c00);
  assert_int_equal(uq_float_to_fp16(1.0f + 0x3p-11f), 0x3c02);
  assert_true((uq_float_to_fp16(NAN) & 0x7fff) > 0x7c00);
  /* Random patterns over the whole fp32 range against the model. */
  synth_rng rng;
  synth_rng_seed(&rng, 5);
  for (int i = 0; i < 100000; i++) {
    uint32_t u = synth_rng_u32(&rng);
    if (i & 1) /* concentrate on the fp16 range */
      u = (u & 0x807fffffu) | ((uint32_t)(95 + synth_rng_below(&rng, 50)) << 23);
    float f = tk_f32_from_bits(u);
    if (isnan(f))
      continue;
    assert_int_equal(uq_float_to_bf16(f), tk_f32_to_bf16(f));
    assert_int_equal(uq_float_to_fp16(f), tk_f32_to_fp16(f));
  }
}

static void double_to_half_rounds_once(void **state) {
  (void)state;
  /* 1 + 2^-8 + 2^-30 is above the bf16 tie: rounding through fp32 first
   * would land on the tie and go to even (down). */
  assert_int_equal(uq__double_to_bf16(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);
  assert_int_equal(uq__double_to_fp16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  assert_int_equal(uq__double_to_fp16(65520.0), 0x7c00);
  assert_int_equal(uq__double_to_bf16(-0.0), 0x8000);
  synth_rng rng;
  synth_rng_seed(&rng, 6);
  for (int i = 0; i < 50000; i++) {
    double x = synth_rng_normal(&rng) * ldexp(1.0, (int)synth_rng_below(&rng, 60) - 30);
    assert_int_equal(uq__double_to_bf16(x), synth_f64_to_bf16(x));
    assert_int_equal(uq__double_to_fp16(x), synth_f64_to_fp16(x));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(haircut_all_bf16_patterns_match_model),
      cmocka_unit_test(haircut_ties_saturation_and_nan),
      cmocka_unit_test(fwht_matches_explicit_matrix_product),
      cmocka_unit_test(fwht_columns_are_orthonormal_hadamard),
      cmocka_unit_test(fwht_is_bit_exact_to_the_canonical_butterflies),
      cmocka_unit_test(fwht_refuses_non_power_of_two),
      cmocka_unit_test(half_to_float_matches_model_for_all_patterns),
      cmocka_unit_test(float_to_half_rounds_to_nearest_even),
      cmocka_unit_test(double_to_half_rounds_once),
  };
  return cmocka_run_group_tests_name("format_numerics", tests, NULL, NULL);
}
