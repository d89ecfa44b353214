/* The launch contract of a decode call and a store: the parameter blocks
 * their kernels take (templates/common/uq_abi.h), filled from the plan, the
 * call's arguments and the workspace. uq_decode launches them; the tests' CPU
 * model of the kernels (tests/simt) runs them. */
#ifndef UQ_LAUNCH_H
#define UQ_LAUNCH_H

#include <stdint.h>

#include "templates/common/uq_abi.h"
#include "uqjit.h"

typedef struct uq__decode_launch {
  uq_prologue_params prologue; /* launched only when !plan->fuse_qrot */
  uq_decode_params decode;
  uq_reduce_params reduce;
} uq__decode_launch;

/* Fills every block (zeroed first); the order of launches is prologue
 * (when the plan does not fuse the rotation), decode, reduce, over the
 * plan's grids. */
void uq__decode_launch_params(const uq_plan *plan, const uq_shape *shape,
                              const uq_decode_args *args, void *workspace,
                              uq__decode_launch *out);

/* The store kernel's parameter block and grid (num_tokens, Hk, 1) for
 * arguments uq_store has validated. */
void uq__store_launch_params(const uq_store_args *args, uq_store_params *out,
                             uint32_t grid[3]);

#endif
