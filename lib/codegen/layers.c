/* The decode layers: the table and the rules every stage reads from it. */
#include "lib/codegen/layers.h"

#include <stdio.h>
#include <string.h>

#include "lib/base/env.h"
#include "lib/base/error.h"
#include "uqjit.h"

static int always(const uq__target_info *info) {
  (void)info;
  return 1;
}

/* Blocks that keep an sm_90a device busy for about two waves of the
 * warpgroup layer (132 SMs of an H100/H200 hold four of its blocks each).
 * Against four waves (2048) this was faster on every shape measured on
 * the H200 (docs/BENCHMARKS.md); one wave (512) lost on long sequences
 * with many kv heads. */
#define WARPGROUP_FULL_GRID 1024

/* The sm_90a warpgroup layer's partitions: vLLM's, halved while the grid
 * (B x Hk x P blocks) stays at WARPGROUP_FULL_GRID or more. Each block
 * pays a fixed cost (the query's rotation, the epilogue) and each
 * partition adds workspace traffic and reduce work, so where the device
 * is full anyway fewer, longer partitions are faster (measured on the
 * H200: docs/BENCHMARKS.md). Halving never idles the device: a sequence
 * shorter than the window leaves partitions empty, and the layer spreads
 * its 64-token chunks over min(P, its chunks) blocks either way
 * (wgmma_sm90_maps.hip, uq_wg_chunks), so it loses parallelism only where
 * the grid is at least the full one. */
static int64_t warpgroup_partitions(int64_t kv_heads_total, int64_t parts) {
  /* The first test keeps the product below from overflowing. */
  while (parts > 2 && (kv_heads_total >= WARPGROUP_FULL_GRID ||
                       kv_heads_total * (parts / 2) >= WARPGROUP_FULL_GRID))
    parts /= 2;
  return parts;
}

/* Each layer's templates, in emission order after the specialization
 * constants; every layer starts with layer_common.hip, the pieces all of
 * them need (sequence length, schedule, offsets, the empty partition). */
static const char *const portable_templates[] = {
    "layer_common.hip", "layer_portable.hip", "decode.hip", NULL};
/* The sm_90 matrix layer is a whole kernel of its own. */
static const char *const matrix_templates[] = {
    "layer_common.hip", "mma_sm90_maps.hip", "sm90_chunks.hip",
    "decode_mma_sm90.hip", NULL};
/* So is the sm_90a warpgroup layer; it builds on the matrix layer's index
 * maps, so those come first. */
static const char *const warpgroup_templates[] = {
    "layer_common.hip",  "mma_sm90_maps.hip",     "wgmma_sm90_maps.hip",
    "sm90_chunks.hip",   "decode_wgmma_sm90.hip", NULL};

/* The gfx950 layer (MI355X: scaled FP4 x E4M3 MFMA, hardware FP4 -> bf16,
 * bf16 MFMA; docs/KERNELS.md "gfx950") is one kernel text over a small
 * set of named primitives: the CDNA ones it shares with the gfx942 layer
 * (cdna_prims_*.hip) and its own (gfx950_prims_*.hip); the _amd files
 * implement them with the AMD builtins, the _emu files emulate each
 * instruction exactly on an NVIDIA sm_90 block of 64 threads (after the
 * layouts written down from AMD's documentation, cdna_layouts.hip and
 * cdna4_layouts.hip). */
static const char *const gfx950_templates[] = {
    "layer_common.hip",     "gfx950_maps.hip",   "cdna_prims_amd.hip",
    "gfx950_prims_amd.hip", "decode_gfx950.hip", NULL};
static const char *const gfx950_emu_templates[] = {
    "layer_common.hip",   "gfx950_maps.hip",      "cdna_layouts.hip",
    "cdna4_layouts.hip",  "cdna_prims_emu.hip",   "gfx950_prims_emu.hip",
    "decode_gfx950.hip",  NULL};
/* The gfx942 layer (MI300X / MI325X: FNUZ FP8 MFMA for QK, software FP4
 * dequant, bf16 MFMA for PV; docs/KERNELS.md "gfx942"), built the same
 * way on the CDNA3 layouts (cdna3_layouts.hip). */
static const char *const gfx942_templates[] = {
    "layer_common.hip",     "gfx942_maps.hip",   "cdna_prims_amd.hip",
    "gfx942_prims_amd.hip", "decode_gfx942.hip", NULL};
static const char *const gfx942_emu_templates[] = {
    "layer_common.hip",   "gfx942_maps.hip",      "cdna_layouts.hip",
    "cdna3_layouts.hip",  "cdna_prims_emu.hip",   "gfx942_prims_emu.hip",
    "decode_gfx942.hip",  NULL};

/* The fast layers keep the portable launch contract (grid, workspace).
 * The sm_90 ones run four warps a block (decode_mma_sm90.hip
 * static_asserts it; one warpgroup is four warps), the AMD ones one
 * wave64. The warpgroup layer deals out 64-token chunks
 * (wgmma_sm90_maps.hip, uq_wg_chunks), so one chunk per partition is
 * useful work: short windows get up to 3x the blocks of vLLM's 192-token
 * partitions, each with less serial work. */
const uq__layer uq__layers[] = {
    {.variant = UQ_VARIANT_PORTABLE,
     .name = "portable",
     .available = always,
     .templates = portable_templates,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_MATRIX,
     .name = "matrix",
     .available = uq__target_matrix_layer,
     .templates = matrix_templates,
     .block_threads = 128,
     .head_dim = 256,
     .max_query_group = 16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_MATRIX,
     .name = "matrix",
     .available = uq__target_gfx950_layer,
     .templates = gfx950_templates,
     .block_threads = 64,
     .head_dim = 256,
     .max_query_group = 16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_MATRIX,
     .name = "matrix",
     .available = uq__target_gfx942_layer,
     .templates = gfx942_templates,
     .block_threads = 64,
     .head_dim = 256,
     .max_query_group = 16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_WARPGROUP,
     .name = "warpgroup",
     .available = uq__target_warpgroup_layer,
     .needs = "sm_90a",
     .templates = warpgroup_templates,
     .block_threads = 128,
     .head_dim = 256,
     .max_query_group = 16,
     .min_partition_tokens = 64,
     .partitions = warpgroup_partitions},
    {.variant = UQ_VARIANT_GFX950_EMU,
     .name = "gfx950-emu",
     .available = uq__target_gfx950_emu_layer,
     .needs = "NVIDIA sm_90 or newer",
     .templates = gfx950_emu_templates,
     .block_threads = 64,
     .head_dim = 256,
     .max_query_group = 16,
     .min_partition_tokens = 192,
     .opt_in = 1},
    {.variant = UQ_VARIANT_GFX942_EMU,
     .name = "gfx942-emu",
     .available = uq__target_gfx942_emu_layer,
     .needs = "NVIDIA sm_90 or newer",
     .templates = gfx942_emu_templates,
     .block_threads = 64,
     .head_dim = 256,
     .max_query_group = 16,
     .min_partition_tokens = 192,
     .opt_in = 1},
};
const int uq__layers_count = (int)(sizeof uq__layers / sizeof uq__layers[0]);
const int uq__variants_count = UQ_VARIANT_GFX942_EMU + 1;

const uq__layer *uq__layer_find(int variant, const uq__target_info *info) {
  const uq__layer *first = NULL;
  for (int r = 0; r < uq__layers_count; r++) {
    if (uq__layers[r].variant != variant)
      continue;
    if (info != NULL && uq__layers[r].available(info))
      return &uq__layers[r];
    if (first == NULL)
      first = &uq__layers[r];
  }
  return first;
}

/* The variant UQJIT_VARIANT names, or -1 when it is unset or invalid. The
 * environment module passes the value through unchecked: the names are
 * this table's. */
static int requested_variant(void) {
  static int warned;
  const char *want = uq__env_get(UQ__ENV_VARIANT);
  if (want == NULL)
    return -1;
  for (int r = 0; r < uq__layers_count; r++)
    if (strcmp(want, uq__layers[r].name) == 0)
      return uq__layers[r].variant;
  uq__warn_once(&warned, "ignoring invalid %s=%s",
                uq__env_name(UQ__ENV_VARIANT), want);
  return -1;
}

const uq__layer *uq__layer_choose(const uq__target_info *info) {
  int want = requested_variant();
  for (int v = want < 0 ? uq__variants_count - 1 : want; v > 0; v--) {
    const uq__layer *l = uq__layer_find(v, info);
    if (l->available(info) && (!l->opt_in || v == want))
      return l;
  }
  return &uq__layers[0];
}

void uq__layer_list(char *buf, size_t n) {
  size_t used = 0;
  if (n == 0)
    return;
  buf[0] = '\0';
  for (int v = 0; v < uq__variants_count && used < n; v++)
    used += (size_t)snprintf(buf + used, n - used, "%s%d %s", v ? ", " : "",
                             v, uq__layer_find(v, NULL)->name);
}

int uq__layer_check_target(const uq__layer *layer, const uq__target_info *info,
                           const char *target) {
  if (layer->available(info))
    return 0;
  /* The layers a key may fall back to, highest first: those below it
   * that the target has (not opt-in ones). */
  char lower[128] = "";
  size_t used = 0;
  for (int v = layer->variant - 1; v >= 0 && used < sizeof lower; v--) {
    const uq__layer *l = uq__layer_find(v, info);
    if (v > 0 && (!l->available(info) || l->opt_in))
      continue;
    used += (size_t)snprintf(lower + used, sizeof lower - used, "%s%s",
                             used ? " or " : "", l->name);
  }
  return uq__errorf(UQ_EINVAL,
                    "target %s has no %s decode layer (variant %d%s%s); use "
                    "the %s variant",
                    target, layer->name, layer->variant,
                    layer->needs ? "; it needs " : "",
                    layer->needs ? layer->needs : "", lower);
}

int uq__layer_check_decode(const uq__layer *layer, int32_t head_dim,
                           int32_t query_group_size) {
  int head_dim_ok = layer->head_dim == 0 || head_dim == layer->head_dim;
  int group_ok = layer->max_query_group == 0 ||
                 query_group_size <= layer->max_query_group;
  if (head_dim_ok && group_ok)
    return 0;
  return uq__errorf(UQ_EINVAL,
                    "the %s decode layer needs head_dim %d and a query group "
                    "size <= %d, not %d and %d",
                    layer->name, (int)layer->head_dim,
                    (int)layer->max_query_group, (int)head_dim,
                    (int)query_group_size);
}
