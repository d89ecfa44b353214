/* Error measures of an output against a reference. */
#include "synth/synth.h"

#include <math.h>

static double ratio(double num, double den) {
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

double synth_rel_l2(const double *x, const double *ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return ratio(num, den);
}

double synth_rel_l2_f32(const float *x, const double *ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)x[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return ratio(num, den);
}

double synth_rel_l2_half(uq_dtype dtype, const uint16_t *out, const double *ref,
                         size_t n, double *max_abs, size_t *nonfinite) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double x = dtype == UQ_DTYPE_FP16 ? uq_fp16_to_float(out[i])
                                      : uq_bf16_to_float(out[i]);
    if (!isfinite(x)) {
      *nonfinite += 1;
      continue;
    }
    double e = x - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
    if (fabs(e) > *max_abs)
      *max_abs = fabs(e);
  }
  return ratio(num, den);
}

double synth_max_abs_diff(const double *x, const double *ref, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs(x[i] - ref[i]);
    if (d > m || d != d)
      m = d;
  }
  return m;
}
