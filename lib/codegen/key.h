/* Kernel specialization keys: names, parsing and validation (the public
 * functions are uq_key_name, uq_key_parse, uq_key_validate in uqjit.h). */
#ifndef UQ_KEY_H
#define UQ_KEY_H

#include <stdint.h>

#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"
#include "uqjit.h"

/* Enough for the name of any valid key (the longest, a decode key with
 * 64-bit strides and a featured target, is under 200 bytes). */
#define UQ__KEY_NAME_MAX 256

/* Head dims a key may carry: powers of two in this range. */
#define UQ__KEY_HEAD_DIM_MIN 32
#define UQ__KEY_HEAD_DIM_MAX 512
/* Partitions of the split-KV decode: powers of two in this range. */
#define UQ__KEY_PARTITIONS_MAX 512
/* Tile groups per partition: a power of two up to this. */
#define UQ__KEY_TGPP_MAX (1 << 20)
/* The largest softmax scale, and the largest scale_e8 (round(scale, 8)
 * times 1e8) it gives. */
#define UQ__KEY_SCALE_MAX 1.0e6
#define UQ__KEY_SCALE_E8_MAX 100000000000000LL

/* The rules a decode key and the plan that makes it share: a shape the
 * planner accepts gives a key uq_key_validate accepts, and a key
 * uq_key_validate refuses names no plan (tests/unit_key.c checks both).
 *
 * The query's extent: `seqs` sequences of hq heads of d elements, strides
 * in elements (a decode key's elements are dense: stride_dim 1), must be addressable in bytes with 64-bit offsets. A key
 * does not know the batch: it must allow two sequences (the sequence
 * stride used once), and the planner asks it of max(batch, 2). 0 or -1. */
int uq__key_query_fits(int64_t stride_seq, int64_t stride_head, int64_t stride_dim,
                       int64_t hq, int64_t d, int64_t seqs);
/* 1 for a block size the decode layers take (16, 32, 64, 128, 256). */
int uq__key_block_size_ok(int64_t block_size);
/* The block table's span, max_blocks_per_seq x block_size tokens, must
 * fit the int32 sequence lengths. 1 when it does. */
int uq__key_window_ok(int64_t max_blocks_per_seq, int64_t block_size);

/* A key checked once, with what the generator and the JIT path read from
 * it: the key (its bytes after the target's NUL zero), its target, its
 * layer on that target, and its name. */
typedef struct uq__checked_key {
  uq_key key;
  uq__target_info info;
  const uq__layer *layer;
  char name[UQ__KEY_NAME_MAX];
} uq__checked_key;

/* Fills *out when the key is valid (uq_key_validate), its target has its
 * layer and, for a decode key, the layer serves its head dim and query
 * group; UQ_EINVAL with the reason otherwise. The one check of the JIT
 * path: everything below it takes the checked key. */
int uq__key_check(const uq_key *key, uq__checked_key *out);

#endif
