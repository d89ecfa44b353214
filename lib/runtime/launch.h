/* The launch contract of a decode call and a store: the parameter blocks
 * their kernels take (templates/common/uq_abi.h), filled from the plan, the
 * call's arguments and the workspace. uq_decode launches them; the tests' CPU
 * model of the kernels (tests/simt) runs them. */
#ifndef UQ_LAUNCH_H
#define UQ_LAUNCH_H

#include <stdint.h>

#include "lib/gpu/platform.h"
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

/* The block the decode kernel of `key` is launched with: always a
 * uq_decode_wg_params, whose leading uq_decode_params (`common`) is what
 * the layers other than the warpgroup one read (a launch copies only the
 * bytes the kernel declares). Where that layer copies with tensor copies
 * (uq__warpgroup_tensor_copy) the cache's tensor map is encoded for this
 * call's cache; UQ_EUNSUPPORTED where the platform has no tensor maps. */
int uq__decode_kernel_params(const uq__platform *pf, const uq_key *key,
                             const uq_decode_args *args,
                             const uq_decode_params *common,
                             uq_decode_wg_params *out);

/* The store kernel's parameter block and grid (num_tokens, Hk, 1) for
 * arguments uq_store has validated. */
void uq__store_launch_params(const uq_store_args *args, uq_store_params *out,
                             uint32_t grid[3]);

#endif
