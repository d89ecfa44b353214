/* libFuzzer target: uq_plan_make on arbitrary shapes (every field from the
 * input, including negative and huge sizes, NaN scales and strides near
 * INT64_MAX) and targets. It must return a status, never crash or overflow
 * (UBSan), and an eligible plan must be consistent (fuzz_plan_check.h). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_plan_check.h"
#include "uqjit.h"

static const char *const targets[] = {
    "gfx950", "gfx942", "gfx90a", "sm_90a", "sm_90", "sm_80", "sm_100a",
    "mi355x", "h200", NULL, "gfx942:sramecc+:xnack-", "bogus",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uq_shape shape;
  uq_shape_init(&shape);
  const char *target = targets[data[0] % (sizeof targets / sizeof targets[0])];
  /* The rest overwrites the initialised shape, byte for byte. */
  size_t n = size - 1 < sizeof shape ? size - 1 : sizeof shape;
  memcpy(&shape, data + 1, n);
  uq_plan plan;
  int rc = uq_plan_make(&shape, target, &plan);
  if (rc == 0)
    fuzz_check_plan(&shape, &plan);
  return 0;
}
