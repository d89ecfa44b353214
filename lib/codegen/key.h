/* Kernel specialization keys: names, parsing and validation (the public
 * functions are uq_key_name, uq_key_parse, uq_key_validate in uqjit.h). */
#ifndef UQ_KEY_H
#define UQ_KEY_H

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

#endif
