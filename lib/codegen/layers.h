/* The decode layers: one row per (variant, target family) (UQ_VARIANT_* in
 * uqjit.h: variant 1 is a different layer on NVIDIA, gfx950 and gfx942), read by
 * the planner (which layer serves a shape, how the KV window is split, how
 * many threads a block runs), key checks (which variants exist, what a
 * layer serves) and source emission (which templates). Adding a layer is
 * one row in layers.c plus its template files (docs/KERNELS.md, "The
 * layer contract"). */
#ifndef UQ_LAYERS_H
#define UQ_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/codegen/target.h"
#include "uqjit.h"

/* The most head dims a row lists. */
#define UQ__LAYER_HEAD_DIMS 4

typedef struct uq__layer {
  int variant;      /* UQ_VARIANT_*: the key's variant field, v<N> in names */
  const char *name; /* UQJIT_VARIANT spelling and the name in messages */
  /* 1 when uqjit has this layer for the target. */
  int (*available)(const uq__target_info *info);
  /* What a target lacking the layer is told it needs ("sm_90a"), or NULL
   * when the layer's absence needs no explanation. */
  const char *needs;
  /* The decode kernel's template files (embedded base names), in emission
   * order, NULL-terminated; they follow the shared prelude, ABI header,
   * numerics and specialization constants. */
  const char *const *templates;
  /* The templates for a head dim whose V code run starts off a 4-byte
   * boundary (uq__layer_templates), NULL when the row serves none. */
  const char *const *templates_v16;
  /* Threads per block of the decode kernel where the target has the
   * layer; 0: the target's default (one wave64 on AMD, four warps on
   * NVIDIA). */
  unsigned block_threads;
  /* The decode shapes the layer serves: one of these head dims (0-ended)
   * and a query group size q whose bit (1u << q) is set. Every layer
   * serves bf16 and fp16 queries. */
  int32_t head_dims[UQ__LAYER_HEAD_DIMS];
  uint32_t query_groups;
  /* Plan rules. The fewest tokens worth a partition of its own (vLLM's
   * 192 for the strided schedule). */
  int64_t min_partition_tokens;
  /* Adjusts the power-of-two partition count for a grid of kv_heads_total
   * (batch x kv heads) blocks per partition and a window of `window`
   * tokens; NULL keeps vLLM's. */
  int64_t (*partitions)(int64_t kv_heads_total, int64_t parts, int64_t window);
  /* 1: never chosen by default, only when asked for by name (the gfx950
   * emulation, a test vehicle). */
  int opt_in;
  /* Decode grids of at most this many blocks are launched as programmatic
   * dependents of the kernel before them where the target has that
   * (uq__decode_dependent); 0: never. A row that sets it has a decode
   * kernel that waits for that kernel (uq_grid_wait) before it reads
   * anything. */
  int64_t dependent_max_blocks;
} uq__layer;

/* 1 when a decode of `grid` on this layer and target is launched as a
 * programmatic dependent: its launch and block start-up then overlap the
 * previous kernel's tail (the partition reduce of the step before lets
 * it in at the reduce's start where the reduce has few rows, as its
 * blocks exit otherwise: templates/passes/reduce.hip). */
int uq__decode_dependent(const uq__layer *layer, const uq__target_info *info,
                         const uint32_t grid[3]);

/* Every layer, in variant order; rows of one variant differ in the
 * targets they are available on (no target has two rows of a variant). */
extern const uq__layer uq__layers[];
extern const int uq__layers_count;
/* Variants 0 .. uq__variants_count - 1 each have at least one row. */
extern const int uq__variants_count;

/* The layer of a variant for a target: the variant's row available on
 * `info`, else (and when info is NULL) its first row, so that a refusal
 * can name it; NULL for an unknown variant. */
const uq__layer *uq__layer_find(int variant, const uq__target_info *info);

/* What a layer serves is decided by these fields of a decode shape. */
typedef struct uq__layer_shape {
  int32_t head_dim;
  int32_t query_group; /* query heads per kv head */
  uq_dtype dtype;      /* of the query and the output */
} uq__layer_shape;

/* 1 when the layer serves the shape (whether the target has the layer is
 * `available`'s question). */
int uq__layer_serves(const uq__layer *layer, const uq__layer_shape *shape);

/* The variant a layer name asks for: UQ_VARIANT_* for a row's name,
 * UQ__LAYER_BEST for "auto" (the best layer, as when nothing is asked),
 * UQ__LAYER_UNKNOWN for anything else. */
#define UQ__LAYER_BEST (-1)
#define UQ__LAYER_UNKNOWN (-2)
int uq__layer_variant_named(const char *name);

/* The layer a plan of `shape` for the target uses: the highest row the
 * target has that serves the shape, at or below `requested` (a variant;
 * UQ__LAYER_BEST: the highest of all). An opt-in layer is taken only
 * when requested exactly. NULL when no row the target has serves the
 * shape (the portable row is on every target). */
const uq__layer *uq__layer_choose(const uq__target_info *info,
                                  const uq__layer_shape *shape, int requested);

/* Threads per block of the decode kernel of a variant on a target (the
 * launch contract shared by the plan, the templates and the launcher):
 * the row's own count where the target has the layer, else one wave64 on
 * AMD, four warps on NVIDIA; 0 for a NULL target. */
unsigned uq__layer_block_threads(const uq__target_info *info, int variant);

/* 1 when the decode kernel of `key` copies its chunks with tensor copies
 * and so takes the cache's tensor map in its parameters
 * (uq_decode_wg_params): the warpgroup layer where a kv head's slots are
 * not one range (several kv heads, or padding) and are 16-byte aligned.
 * The same rule as templates/sm90/sm90_chunks.hip's UQ_SM90_TENSOR. */
int uq__warpgroup_tensor_copy(const uq_key *key);

/* The decode kernel's templates of the layer at a head dim: the row's
 * templates_v16 where V codes start off a 4-byte boundary (byte D/2 +
 * D/32 of a slot: head_dim 64), else its templates. NULL where the row
 * has no templates for that head dim. */
const char *const *uq__layer_templates(const uq__layer *layer,
                                       int32_t head_dim);

/* "0 portable, 1 matrix, 2 warpgroup, 3 gfx950-emu, 4 gfx942-emu": the
 * variants, for messages. */
void uq__layer_list(char *buf, size_t n);

/* Why no row the target has serves the shape, for a plan's reason: the
 * field none of them takes and what they take, e.g. "head_dim 96 is not
 * served (head_dim 64, 128 or 256)". */
void uq__layer_refusal(const uq__target_info *info,
                       const uq__layer_shape *shape, char *buf, size_t n);

/* Sets the error for a key whose layer the target lacks and returns
 * UQ_EINVAL; 0 when the target has the layer. */
int uq__layer_check_target(const uq__layer *layer, const uq__target_info *info,
                           const char *target);

/* Sets the error for a decode shape the layer does not serve and returns
 * UQ_EINVAL; 0 when it serves it. */
int uq__layer_check_decode(const uq__layer *layer,
                           const uq__layer_shape *shape);

#endif
