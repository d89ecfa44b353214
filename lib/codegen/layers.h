/* The decode layers: one row per (variant, target family) (UQ_VARIANT_* in
 * uqjit.h: variant 1 is a different layer on NVIDIA, gfx950 and gfx942), read by
 * the target rules (threads per block), the planner (which layer, how the
 * KV window is split), key validation (which variants exist) and source
 * emission (which templates, which keys a layer refuses). Adding a layer
 * is one row in layers.c plus its template files (docs/KERNELS.md, "The
 * layer contract"). */
#ifndef UQ_LAYERS_H
#define UQ_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/codegen/target.h"

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
  /* Threads per block of the decode kernel where the target has the
   * layer; 0: the target's default (one wave64 on AMD, four warps on
   * NVIDIA). */
  unsigned block_threads;
  /* Decode keys the layer serves: head_dim exactly this and a query group
   * size of at most max_query_group (0: any). */
  int32_t head_dim;
  int32_t max_query_group;
  /* Plan rules. The fewest tokens worth a partition of its own (vLLM's
   * 192 for the strided schedule). */
  int64_t min_partition_tokens;
  /* Adjusts the power-of-two partition count for a grid of kv_heads_total
   * (batch x kv heads) blocks per partition; NULL keeps vLLM's. */
  int64_t (*partitions)(int64_t kv_heads_total, int64_t parts);
  /* 1: never chosen by default, only when UQJIT_VARIANT names it (the
   * gfx950 emulation, a test vehicle). */
  int opt_in;
} uq__layer;

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

/* The layer a plan for the target uses: the highest layer the target has
 * at or below the one UQJIT_VARIANT names (unset: the highest of all).
 * An opt-in layer is taken only when UQJIT_VARIANT names it exactly. An
 * invalid UQJIT_VARIANT is warned about once and ignored. */
const uq__layer *uq__layer_choose(const uq__target_info *info);

/* "0 portable, 1 matrix, 2 warpgroup, 3 gfx950-emu, 4 gfx942-emu": the
 * variants, for messages. */
void uq__layer_list(char *buf, size_t n);

/* Sets the error for a key whose layer the target lacks and returns
 * UQ_EINVAL; 0 when the target has the layer. */
int uq__layer_check_target(const uq__layer *layer, const uq__target_info *info,
                           const char *target);

/* Sets the error for a decode key the layer cannot serve (head_dim, query
 * group size) and returns UQ_EINVAL; 0 when it can. */
int uq__layer_check_decode(const uq__layer *layer, int32_t head_dim,
                           int32_t query_group_size);

#endif
