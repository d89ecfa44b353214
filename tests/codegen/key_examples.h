/* What the kernel-key tests share (unit_key.c, unit_key_rules.c): the
 * keys of FORMAT.md's example shape built by hand, and the check that a
 * name is refused. Include after <cmocka.h>. */
#ifndef UQ_TESTS_CODEGEN_KEY_EXAMPLES_H
#define UQ_TESTS_CODEGEN_KEY_EXAMPLES_H

#include <string.h>

#include "lib/codegen/key.h"
#include "uqjit.h"

/* The decode key of FORMAT.md's example shape, built by hand. */
static inline uq_key example_decode(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_DECODE;
  k.dtype = UQ_DTYPE_BF16;
  k.variant = UQ_VARIANT_PORTABLE;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.num_partitions = 16;
  k.max_blocks_per_seq = 64;
  k.scale_e8 = 6250000;
  k.query_group_size = 8;
  k.kv_block_size = 32;
  k.padded_slot = 272;
  k.fuse_qrot = 1;
  k.tile_groups_per_partition = 1;
  k.stride_q_seq = 2048;
  k.stride_q_head = 256;
  strcpy(k.target, "gfx950");
  return k;
}

static inline uq_key example_reduce(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_REDUCE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.num_partitions = 16;
  k.query_group_size = 8;
  strcpy(k.target, "gfx950");
  return k;
}

static inline uq_key example_prologue(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_PROLOGUE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.query_group_size = 8;
  strcpy(k.target, "gfx950");
  return k;
}

static inline uq_key example_store(void) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_STORE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 1;
  k.padded_slot = 272;
  strcpy(k.target, "gfx950");
  return k;
}

/* Fails unless `name` is refused with UQ_EINVAL and a message, leaving the
 * output key alone. */
static inline void expect_parse_refused(const char *name) {
  uq_key k;
  memset(&k, 0x33, sizeof k);
  uq_key before = k;
  int rc = uq_key_parse(name, &k);
  if (rc != UQ_EINVAL)
    fail_msg("'%s' parsed (status %d)", name, rc);
  assert_true(uq_last_error()[0] != '\0');
  /* A refused parse leaves the output alone. */
  assert_memory_equal(&k, &before, sizeof k);
}


#endif
