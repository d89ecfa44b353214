/* The launcher policy (uq_plan_make, uq_plan_make_variant in uqjit.h) for
 * callers that hold the layer already resolved: a context resolves its
 * layer once, when it is created. */
#ifndef UQ_POLICY_H
#define UQ_POLICY_H

#include "uqjit.h"

/* The layer a variant name asks for (uq__layer_variant_named): NULL takes
 * UQJIT_VARIANT, read now (an invalid value is warned about once and
 * ignored), and when that is unset the best layer (UQ__LAYER_BEST).
 * UQ_EINVAL, naming the layers, for a name that is no layer's. */
int uq__plan_requested(const char *variant, int *requested);

/* uq_plan_make with the layer asked for as `requested` (a variant, or
 * UQ__LAYER_BEST). */
int uq__plan_make(const uq_shape *shape, const char *target, int requested,
                  uq_plan *plan);

#endif
