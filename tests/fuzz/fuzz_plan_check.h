/* What every plan the fuzz targets get must satisfy, whatever the shape. */
#ifndef UQ_FUZZ_PLAN_CHECK_H
#define UQ_FUZZ_PLAN_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "uqjit.h"

/* Aborts (a finding) when an eligible plan is inconsistent: a kernel
 * count out of range, a key whose name does not parse back, a workspace
 * smaller than its parts, or grid dimensions of zero. */
static inline void fuzz_check_plan(const uq_shape *s, const uq_plan *p) {
  if (!p->eligible)
    return;
  if (p->num_kernels < 1 || p->num_kernels > UQ_PLAN_MAX_KERNELS)
    abort();
  for (int i = 0; i < p->num_kernels; i++) {
    char name[1024];
    uq_key back;
    int n = uq_key_name(&p->kernels[i], name, sizeof name);
    if (n <= 0 || (size_t)n >= sizeof name || uq_key_parse(name, &back) != 0)
      abort();
  }
  if (p->workspace_bytes < p->ws_segm_out || p->workspace_bytes < p->ws_segm_max ||
      p->workspace_bytes < p->ws_segm_sum || p->workspace_bytes < p->ws_q_rot)
    abort();
  for (int i = 0; i < 3; i++)
    if (p->decode_grid[i] == 0 || p->reduce_grid[i] == 0)
      abort();
  if (p->decode_grid[0] != (uint32_t)s->batch)
    abort();
}

#endif
