/* Shapes whose sizes overflow are refused with UQ_EOVERFLOW (uqjit.h's
 * promise for uq_plan_make), and uq_reference_decode refuses what
 * uq_plan_make refuses (a negative scale). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "uqjit.h"

static void shape(uq_shape *s) {
  uq_shape_init(s);
  s->batch = 4;
  s->num_q_heads = 16;
  s->num_kv_heads = 1;
  s->head_dim = 256;
  s->block_size = 16;
  s->max_blocks_per_seq = 64;
}

static void plan_refuses_a_query_stride_that_overflows(void **state) {
  (void)state;
  uq_shape s;
  uq_plan p;
  shape(&s);
  s.q_stride_seq = INT64_MAX;
  assert_int_equal(uq_plan_make(&s, "gfx942", &p), UQ_EOVERFLOW);
  shape(&s);
  s.q_stride_head = INT64_MAX / 4;
  assert_int_equal(uq_plan_make(&s, "gfx942", &p), UQ_EOVERFLOW);
  /* The largest strides that still fit are not refused for size. */
  shape(&s);
  s.q_stride_seq = (int64_t)1 << 40;
  assert_int_equal(uq_plan_make(&s, "gfx942", &p), 0);
}

static void slot_layout_refuses_a_head_dim_whose_slot_overflows(
    void **state) {
  (void)state;
  uq_slot_layout lay;
  assert_int_equal(uq_slot_layout_get(2147483616, &lay), UQ_EOVERFLOW);
  uq_shape s;
  uq_plan p;
  shape(&s);
  s.head_dim = 2147483616;
  assert_int_equal(uq_plan_make(&s, "gfx942", &p), UQ_EOVERFLOW);
  assert_int_equal(uq_slot_layout_get(256, &lay), 0);
  assert_int_equal(lay.size, 272);
}

static void reference_decode_refuses_a_negative_scale(void **state) {
  (void)state;
  uq_shape s;
  uq_plan p;
  shape(&s);
  s.scale = -0.0625f;
  assert_int_equal(uq_plan_make(&s, "gfx942", &p), UQ_EINVAL);
  /* Arguments that pass every other check: one block, one token. */
  static uint16_t q[4 * 16 * 256], out[4 * 16 * 256];
  static uint8_t kv[16 * 272];
  static int32_t table[4 * 64], lens[4] = {1, 1, 1, 1};
  uq_decode_args a = {q, kv, 1, table, lens, out};
  assert_int_equal(uq_reference_decode(&s, &a), UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "scale"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plan_refuses_a_query_stride_that_overflows),
      cmocka_unit_test(slot_layout_refuses_a_head_dim_whose_slot_overflows),
      cmocka_unit_test(reference_decode_refuses_a_negative_scale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
