/* Slots of FORMAT.md sections 1-2 through the public codec: encode then
 * decode of whole K/V rows against the group encoder and the conversions,
 * the refusals of bad arguments, and the resolution of padded slot sizes.
 * The group encoder itself: unit_format.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/format/format.h"
#include "tests/support/testkit.h"
#include "uqjit.h"

/* ------------------------------------------------------------------ */
/* Slots. */

static void expect_decoded_row(const uint8_t *codes, const uint8_t *scales,
                               int d, const float *got) {
  for (int i = 0; i < d; i++) {
    unsigned c = (codes[i / 2] >> ((i % 2) * 4)) & 15u;
    uint8_t b = scales[i / 32];
    double s = b == 0 ? 0.0 : ldexp(1.0, b - 127);
    const double value[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6,
                              -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    float want = (float)(value[c] * s);
    if (tk_f32_bits(got[i]) != tk_f32_bits(want))
      fail_msg("element %d: decoded %a want %a", i, (double)got[i],
               (double)want);
  }
}

static void slot_encode_decode_round_trip(void **state) {
  (void)state;
  synth_rng rng;
  synth_rng_seed(&rng, 8);
  const uq_dtype dtypes[3] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16, UQ_DTYPE_FP32};
  for (int d = 32; d <= 512; d *= 2) {
    uq_slot_layout lay;
    assert_int_equal(uq_slot_layout_get(d, &lay), 0);
    for (int t = 0; t < 3; t++) {
      for (int rep = 0; rep < 4; rep++) {
        float kf[512], vf[512], kdec[512], vdec[512];
        uint16_t kh[512], vh[512];
        uint8_t slot[600], want[600];
        double sigma = rep == 3 ? 1e-3 : 1.0 + rep;
        for (int i = 0; i < d; i++) {
          double a = sigma * synth_rng_normal(&rng);
          double b = sigma * synth_rng_normal(&rng);
          if (dtypes[t] == UQ_DTYPE_BF16) {
            kh[i] = synth_f64_to_bf16(a);
            vh[i] = synth_f64_to_bf16(b);
            kf[i] = synth_bf16_to_f32(kh[i]);
            vf[i] = synth_bf16_to_f32(vh[i]);
          } else if (dtypes[t] == UQ_DTYPE_FP16) {
            kh[i] = synth_f64_to_fp16(a);
            vh[i] = synth_f64_to_fp16(b);
            kf[i] = synth_fp16_to_f32(kh[i]);
            vf[i] = synth_fp16_to_f32(vh[i]);
          } else {
            kf[i] = (float)a;
            vf[i] = (float)b;
          }
        }
        const void *kin = dtypes[t] == UQ_DTYPE_FP32 ? (const void *)kf : kh;
        const void *vin = dtypes[t] == UQ_DTYPE_FP32 ? (const void *)vf : vh;
        memset(slot, 0xa5, sizeof slot);
        assert_int_equal(uq_encode_slot(d, dtypes[t], kin, vin, slot), 0);
        /* Nothing past the slot is written. */
        for (size_t i = lay.size; i < sizeof slot; i++)
          assert_int_equal(slot[i], 0xa5);
        /* Layout: K (rotated) groups then V groups, as uq_encode_group
         * writes them. */
        float krot[512];
        memcpy(krot, kf, (size_t)d * sizeof(float));
        for (int h = 1; h < d; h *= 2)
          for (int i = 0; i < d; i += 2 * h)
            for (int j = i; j < i + h; j++) {
              float a = krot[j], b = krot[j + h];
              krot[j] = a + b;
              krot[j + h] = a - b;
            }
        float c = (float)(1.0 / sqrt((double)d));
        for (int i = 0; i < d; i++)
          krot[i] = krot[i] * c;
        for (int g = 0; g < d / 32; g++) {
          uq_encode_group(krot + 32 * g, want + lay.k_scales + g,
                          want + lay.k_codes + 16 * g);
          uq_encode_group(vf + 32 * g, want + lay.v_scales + g,
                          want + lay.v_codes + 16 * g);
        }
        assert_memory_equal(slot, want, lay.size);
        /* Decode equals value(code) * 2^(byte-127), element by element. */
        memset(kdec, 0, sizeof kdec);
        memset(vdec, 0, sizeof vdec);
        assert_int_equal(uq_decode_slot(d, slot, kdec, vdec), 0);
        expect_decoded_row(slot + lay.k_codes, slot + lay.k_scales, d, kdec);
        expect_decoded_row(slot + lay.v_codes, slot + lay.v_scales, d, vdec);
        /* And it is a 4-bit approximation of the rotated K and of V. */
        double kref[512], vref[512];
        for (int i = 0; i < d; i++) {
          kref[i] = krot[i];
          vref[i] = vf[i];
        }
        assert_true(synth_rel_l2_f32(kdec, kref, (size_t)d) < 0.2);
        assert_true(synth_rel_l2_f32(vdec, vref, (size_t)d) < 0.2);
        /* Either output may be skipped. */
        float only_v[512];
        assert_int_equal(uq_decode_slot(d, slot, NULL, only_v), 0);
        assert_memory_equal(only_v, vdec, (size_t)d * sizeof(float));
      }
    }
  }
}

static void slot_encode_refuses_bad_arguments(void **state) {
  (void)state;
  float k[256] = {1}, v[256] = {2};
  uint8_t slot[300], copy[300];
  memset(slot, 0x3c, sizeof slot);
  memcpy(copy, slot, sizeof slot);
  const int bad_d[] = {0, 16, 48, 96, -64};
  for (size_t i = 0; i < sizeof bad_d / sizeof bad_d[0]; i++)
    assert_int_equal(uq_encode_slot(bad_d[i], UQ_DTYPE_FP32, k, v, slot),
                     UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, (uq_dtype)0, k, v, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, (uq_dtype)4, k, v, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, UQ_DTYPE_FP32, NULL, v, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, UQ_DTYPE_FP32, k, NULL, slot), UQ_EINVAL);
  assert_int_equal(uq_encode_slot(64, UQ_DTYPE_FP32, k, v, NULL), UQ_EINVAL);
  assert_memory_equal(slot, copy, sizeof slot);
  float out[256];
  assert_int_equal(uq_decode_slot(48, slot, out, out), UQ_EINVAL);
  assert_int_equal(uq_decode_slot(0, slot, out, out), UQ_EINVAL);
  assert_int_equal(uq_decode_slot(64, NULL, out, out), UQ_EINVAL);
  assert_true(strstr(uq_last_error(), "slot") != NULL);
}

static void padded_slot_resolves_and_refuses(void **state) {
  (void)state;
  int32_t r = -1;
  assert_int_equal(uq__resolve_padded_slot(256, 0, &r), 0);
  assert_int_equal(r, 272);
  assert_int_equal(uq__resolve_padded_slot(64, 0, &r), 0); /* 68 */
  assert_int_equal(r, 68);
  assert_int_equal(uq__resolve_padded_slot(32, 0, &r), 0); /* 34 -> 36 */
  assert_int_equal(r, 36);
  assert_int_equal(uq__resolve_padded_slot(256, 288, &r), 0);
  assert_int_equal(r, 288);
  assert_int_equal(uq__resolve_padded_slot(256, 268, &r), UQ_EINVAL);
  assert_int_equal(uq__resolve_padded_slot(256, 274, &r), UQ_EINVAL);
  assert_int_equal(uq__resolve_padded_slot(256, -4, &r), UQ_EINVAL);
  assert_int_equal(uq__resolve_padded_slot(48, 0, &r), UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(slot_encode_decode_round_trip),
      cmocka_unit_test(slot_encode_refuses_bad_arguments),
      cmocka_unit_test(padded_slot_resolves_and_refuses),
  };
  return cmocka_run_group_tests_name("format_slot", tests, NULL, NULL);
}
