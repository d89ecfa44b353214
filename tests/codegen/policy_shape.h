/* The shape the launcher-policy tests start from (unit_policy.c,
 * unit_policy_kernels.c): head_dim 256, the rest as given, every other
 * field uq_shape_init's. */
#ifndef UQ_TESTS_CODEGEN_POLICY_SHAPE_H
#define UQ_TESTS_CODEGEN_POLICY_SHAPE_H

#include "uqjit.h"

static inline uq_shape make_shape(int b, int hq, int hk, int bs, int mb,
                                  int splits) {
  uq_shape s;
  uq_shape_init(&s);
  s.batch = b;
  s.num_q_heads = hq;
  s.num_kv_heads = hk;
  s.head_dim = 256;
  s.block_size = bs;
  s.max_blocks_per_seq = mb;
  s.max_num_kv_splits = splits;
  return s;
}

#endif
