/* The decode layers: the table and the rules every stage reads from it. */
#include "lib/codegen/layers.h"

#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"

static int always(const uq__target_info *info) {
  (void)info;
  return 1;
}

/* Blocks that keep an sm_90a device busy for about one wave of the
 * warpgroup layer (132 SMs of an H100/H200 hold four of its blocks each).
 * Against two waves (1024) and four (2048) this was faster on every shape
 * measured on the H200 (docs/BENCHMARKS-LOG.md, 2026-12-04, "The grid
 * size again"). */
#define WARPGROUP_FULL_GRID 512

/* Tokens of the warpgroup layer's chunk (UQ_WG_CHUNK in
 * decode_wgmma_sm90.hip): the least a partition is worth, and the unit
 * its partitions are raised toward. */
#define WARPGROUP_CHUNK_TOKENS 64

/* The largest warpgroup decode grid launched as a programmatic dependent.
 * At short context the launch then hides under the step before: on one
 * H100 (docs/BENCHMARKS-LOG.md, 2026-12-07) a chained step of 256 blocks
 * or fewer took 0.2-0.3 us less (1/1024/2:8 5.95 -> 5.66 us, 4/2048/2:8
 * 7.84 -> 7.61), where grids of 512 blocks, a full wave of four a
 * multiprocessor, took 1.1-1.9 us more (4/2048/4:6, 4/16384/2:8); long
 * decodes did not move. */
#define WARPGROUP_DEPENDENT_GRID (WARPGROUP_FULL_GRID / 2)

/* The largest warpgroup decode grid the layer raises the partitions
 * toward, for windows with more 64-token chunks than partitions: up to
 * one chunk a block while the grid stays within this many blocks. On one
 * H100 (docs/BENCHMARKS-LOG.md, 2026-12-07) every shape this changed took
 * 5-19% less a chained step (1/4096/1:16 7.82 -> 6.89 us, 1/8192/1:16
 * 10.36 -> 8.38, 2/8192/1:16 10.38 -> 8.49) and none lost; raising grids
 * to 256 blocks lost up to 7% where it gained less (1/16384/1:16 with P
 * 256, 1/4096/4:6), and to 512 up to 41%: more partitions cost the
 * reduce more than one chunk a block saves. */
#define WARPGROUP_SPREAD_GRID 128

/* The partitions a full grid's second halving may leave (grids of
 * WARPGROUP_FULL_GRID / 2 blocks or more, down to half of it): of
 * WARPGROUP_SHORT_PARTITION_TOKENS or fewer, or of
 * WARPGROUP_MEDIUM_PARTITION_TOKENS or fewer where at least
 * WARPGROUP_MEDIUM_MIN_PARTITIONS of them are left. Short partitions leave
 * a full grid's blocks with little work each against their fixed cost,
 * and a grid of half the size starts under the step before as a
 * programmatic dependent (WARPGROUP_DEPENDENT_GRID). On one H100
 * (docs/BENCHMARKS-LOG.md, 2026-12-07, chained steps):
 *  - 512 tokens: every 512-block shape of one to four chunks a block took
 *    4-16% less at 256 blocks (4/2048/4:6 10.35 -> 8.75 us, 16/4096/1:16
 *    15.28 -> 12.92, 4/16384/2:8 21.20 -> 19.95);
 *  - 1024 tokens: 2-4% less where 8 or more partitions were left
 *    (8/32768/1:16 35.63 -> 34.17 us, 4/32768/2:8 34.47 -> 33.30,
 *    16/16384/1:16 34.95 -> 34.34, 32/8192/1:16 35.09 -> 34.55), 1.7%
 *    more where 4 or 2 were (64/4096/1:16 34.66 -> 35.26, 128/2048/1:16
 *    36.55 -> 37.19), where the reduce's many rows merge few partitions
 *    each and halving them saves it little;
 *  - 2048 tokens lost (16/32768/1:16 +2.4%, 16/8192/4:6 +1.9%), and with
 *    64 and 128 chunks a block half the grid lost 7-9% (64/16384/1:16
 *    107.8 -> 115.4 us, 16/131072/1:16 199.1 -> 216.5): a long partition
 *    needs every block slot of the device in flight. */
#define WARPGROUP_SHORT_PARTITION_TOKENS (8 * WARPGROUP_CHUNK_TOKENS)
#define WARPGROUP_MEDIUM_PARTITION_TOKENS (16 * WARPGROUP_CHUNK_TOKENS)
#define WARPGROUP_MEDIUM_MIN_PARTITIONS 8

/* 1 when `parts` partitions of a `window`-token window are short enough
 * for the second halving to leave (above). */
static int warpgroup_partitions_short(int64_t parts, int64_t window) {
  const int64_t tokens = window / parts;
  return tokens <= WARPGROUP_SHORT_PARTITION_TOKENS ||
         (tokens <= WARPGROUP_MEDIUM_PARTITION_TOKENS &&
          parts >= WARPGROUP_MEDIUM_MIN_PARTITIONS);
}

/* The sm_90a warpgroup layer's partitions: vLLM's, doubled while the
 * window has more 64-token chunks than partitions and the grid (B x Hk x P
 * blocks) stays within WARPGROUP_SPREAD_GRID (vLLM's floor of 32
 * partitions leaves a short sequence of a small batch two chunks or more
 * a block, serial, on a device with blocks to spare), halved while
 * the grid stays at WARPGROUP_FULL_GRID or more, and halved once more
 * while it stays at half of that and the partitions it leaves are
 * short (warpgroup_partitions_short). Each block pays a fixed cost (the
 * query's rotation, the epilogue) and each partition adds workspace
 * traffic and reduce work, so where the device is full anyway fewer,
 * longer partitions are faster (measured on the H200:
 * docs/BENCHMARKS.md). The first halving never idles the device: a
 * sequence shorter than the window leaves partitions empty, and the
 * layer spreads its 64-token chunks over min(P, its chunks) blocks
 * either way (wgmma_sm90_maps.hip, uq_wg_chunks), so it loses
 * parallelism only where the grid is at least the full one. The second
 * leaves block slots free, which pays only where each block has little
 * work. */
static int64_t warpgroup_partitions(int64_t kv_heads_total, int64_t parts, int64_t window) {
  const int64_t chunks = (window + WARPGROUP_CHUNK_TOKENS - 1) / WARPGROUP_CHUNK_TOKENS;
  /* kv_heads_total x 2 parts <= the grid, without the product. */
  while (parts < chunks && kv_heads_total <= WARPGROUP_SPREAD_GRID / (2 * parts))
    parts *= 2;
  /* The first test keeps the product below from overflowing. */
  while (parts > 2 && (kv_heads_total >= WARPGROUP_FULL_GRID ||
                       kv_heads_total * (parts / 2) >= WARPGROUP_FULL_GRID))
    parts /= 2;
  /* Past the loop above the grid is below the full one (so the product
   * cannot overflow), and one more halving takes it below half of it. */
  if (parts > 2 && kv_heads_total * (parts / 2) >= WARPGROUP_FULL_GRID / 2 &&
      warpgroup_partitions_short(parts / 2, window))
    parts /= 2;
  return parts;
}

/* Each layer's templates, in emission order after the specialization
 * constants; every layer starts with layer_common.hip, the pieces all of
 * them need (sequence length, schedule, offsets, the empty partition). */
static const char *const portable_templates[] = {
    "layer_common.hip", "layer_portable.hip", "decode.hip", NULL};
/* Head dims whose V codes start 2 bytes off a 4-byte boundary (64) load
 * them in 16-bit halves. */
static const char *const portable_v16_templates[] = {
    "layer_common.hip", "layer_portable.hip", "layer_portable_v16.hip",
    "decode.hip", NULL};
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

/* Query group sets (bit q: a group of q query heads per kv head). The
 * portable layer is generic in the group and the head dim; the fast
 * layers are written for groups of up to 16 (their templates
 * static_assert it) and serve the three vLLM's launcher sends them. */
#define QG_1_TO_16 0x1fffeu
#define QG_6_8_16 ((1u << 6) | (1u << 8) | (1u << 16))

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
     .templates_v16 = portable_v16_templates,
     .head_dims = {64, 128, 256},
     .query_groups = QG_1_TO_16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_MATRIX,
     .name = "matrix",
     .available = uq__target_matrix_layer,
     .templates = matrix_templates,
     .block_threads = 128,
     .head_dims = {256},
     .query_groups = QG_6_8_16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_MATRIX,
     .name = "matrix",
     .available = uq__target_gfx950_layer,
     .templates = gfx950_templates,
     .block_threads = 64,
     .head_dims = {256},
     .query_groups = QG_6_8_16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_MATRIX,
     .name = "matrix",
     .available = uq__target_gfx942_layer,
     .templates = gfx942_templates,
     .block_threads = 64,
     .head_dims = {256},
     .query_groups = QG_6_8_16,
     .min_partition_tokens = 192},
    {.variant = UQ_VARIANT_WARPGROUP,
     .name = "warpgroup",
     .available = uq__target_warpgroup_layer,
     .needs = "sm_90a",
     .templates = warpgroup_templates,
     .block_threads = 128,
     .head_dims = {256},
     .query_groups = QG_6_8_16,
     .min_partition_tokens = WARPGROUP_CHUNK_TOKENS,
     .partitions = warpgroup_partitions,
     .dependent_max_blocks = WARPGROUP_DEPENDENT_GRID},
    {.variant = UQ_VARIANT_GFX950_EMU,
     .name = "gfx950-emu",
     .available = uq__target_gfx950_emu_layer,
     .needs = "NVIDIA sm_90 or newer",
     .templates = gfx950_emu_templates,
     .block_threads = 64,
     .head_dims = {256},
     .query_groups = QG_6_8_16,
     .min_partition_tokens = 192,
     .opt_in = 1},
    {.variant = UQ_VARIANT_GFX942_EMU,
     .name = "gfx942-emu",
     .available = uq__target_gfx942_emu_layer,
     .needs = "NVIDIA sm_90 or newer",
     .templates = gfx942_emu_templates,
     .block_threads = 64,
     .head_dims = {256},
     .query_groups = QG_6_8_16,
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

int uq__decode_dependent(const uq__layer *layer, const uq__target_info *info,
                         const uint32_t grid[3]) {
  if (layer == NULL || layer->dependent_max_blocks <= 0 || !uq__target_dependent_launch(info) ||
      !layer->available(info))
    return 0;
  /* In 64 bits: three 32-bit dimensions can pass any 32-bit product. */
  const int64_t xy = (int64_t)grid[0] * grid[1];
  return xy <= layer->dependent_max_blocks && xy * grid[2] <= layer->dependent_max_blocks;
}

int uq__layer_variant_named(const char *name) {
  if (name == NULL)
    return UQ__LAYER_UNKNOWN;
  if (strcmp(name, "auto") == 0)
    return UQ__LAYER_BEST;
  for (int r = 0; r < uq__layers_count; r++)
    if (strcmp(name, uq__layers[r].name) == 0)
      return uq__layers[r].variant;
  return UQ__LAYER_UNKNOWN;
}

int uq__warpgroup_tensor_copy(const uq_key *key) {
  if (key->kind != UQ_KERNEL_DECODE || key->variant != UQ_VARIANT_WARPGROUP)
    return 0;
  int one_range = (int64_t)key->num_kv_heads * key->padded_slot ==
                  (int64_t)uq_slot_size(key->head_dim);
  return !one_range && key->padded_slot % 16 == 0;
}

int uq__layer_serves(const uq__layer *layer, const uq__layer_shape *shape) {
  int dim = 0;
  for (int i = 0; i < UQ__LAYER_HEAD_DIMS && layer->head_dims[i] != 0; i++)
    dim |= layer->head_dims[i] == shape->head_dim;
  int group = shape->query_group >= 1 && shape->query_group < 32 &&
              (layer->query_groups >> shape->query_group & 1u);
  int dtype = shape->dtype == UQ_DTYPE_BF16 || shape->dtype == UQ_DTYPE_FP16;
  return dim && group && dtype;
}

const uq__layer *uq__layer_choose(const uq__target_info *info,
                                  const uq__layer_shape *shape, int requested) {
  int top = requested < 0 || requested >= uq__variants_count
                ? uq__variants_count - 1
                : requested;
  for (int v = top; v >= 0; v--) {
    const uq__layer *l = uq__layer_find(v, info);
    if (l != NULL && l->available(info) && (!l->opt_in || v == requested) &&
        uq__layer_serves(l, shape))
      return l;
  }
  return NULL;
}

const char *const *uq__layer_templates(const uq__layer *layer,
                                       int32_t head_dim) {
  int v16 = (head_dim / 2 + head_dim / 32) % 4 != 0;
  return v16 ? layer->templates_v16 : layer->templates;
}

unsigned uq__layer_block_threads(const uq__target_info *info, int variant) {
  if (info == NULL)
    return 0;
  const uq__layer *layer = uq__layer_find(variant, info);
  if (layer != NULL && layer->block_threads != 0 && layer->available(info))
    return layer->block_threads;
  return info->family == UQ__TARGET_NVIDIA ? 128u : 64u;
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

/* The head dims of a bit set (bit n: head_dim 1 << n) as "64, 128 or
 * 256". */
static size_t put_dims(uint32_t dims, char *buf, size_t n) {
  size_t used = 0;
  int count = __builtin_popcount(dims);
  for (int b = 0, k = 0; b < 32 && used < n; b++)
    if (dims >> b & 1u) {
      used += (size_t)snprintf(buf + used, n - used, "%s%ld",
                               k == 0 ? "" : k == count - 1 ? " or " : ", ",
                               1L << b);
      k++;
    }
  return used;
}

/* Query group sizes of a bit set (bit q) as "1 to 16" for a run, else
 * as "6, 8 or 16". */
static size_t put_groups(uint32_t groups, char *buf, size_t n) {
  int lo = groups ? __builtin_ctz(groups) : 0;
  int hi = groups ? 31 - __builtin_clz(groups) : 0;
  int count = __builtin_popcount(groups);
  if (count > 2 && count == hi - lo + 1)
    return (size_t)snprintf(buf, n, "%d to %d", lo, hi);
  size_t used = 0;
  for (int q = 1, k = 0; q < 32 && used < n; q++)
    if (groups >> q & 1u) {
      used += (size_t)snprintf(buf + used, n - used, "%s%d",
                               k == 0 ? "" : k == count - 1 ? " or " : ", ", q);
      k++;
    }
  return used;
}

static uint32_t dim_bits(const uq__layer *l) {
  uint32_t bits = 0;
  for (int i = 0; i < UQ__LAYER_HEAD_DIMS && l->head_dims[i] != 0; i++)
    bits |= 1u << __builtin_ctz((unsigned)l->head_dims[i]);
  return bits;
}

void uq__layer_refusal(const uq__target_info *info,
                       const uq__layer_shape *shape, char *buf, size_t n) {
  /* What the rows the target has (opt-in ones aside) take, together. */
  uint32_t dims = 0, groups = 0;
  int dim_served = 0;
  for (int r = 0; r < uq__layers_count; r++) {
    const uq__layer *l = &uq__layers[r];
    if (!l->available(info) || l->opt_in)
      continue;
    dims |= dim_bits(l);
    uq__layer_shape at_dim = {shape->head_dim, 0, shape->dtype};
    for (int q = 1; q < 32; q++) {
      at_dim.query_group = q;
      if (uq__layer_serves(l, &at_dim)) {
        dim_served = 1;
        groups |= 1u << q;
      }
    }
  }
  char set[96];
  if (!dim_served) {
    put_dims(dims, set, sizeof set);
    snprintf(buf, n, "head_dim %d is not served (head_dim %s)",
             (int)shape->head_dim, set);
    return;
  }
  put_groups(groups, set, sizeof set);
  snprintf(buf, n,
           "query group size (q heads / kv heads) %d is not served at "
           "head_dim %d (%s)",
           (int)shape->query_group, (int)shape->head_dim, set);
}

int uq__layer_check_decode(const uq__layer *layer,
                           const uq__layer_shape *shape) {
  if (uq__layer_serves(layer, shape))
    return 0;
  char dims[64], groups[96];
  put_dims(dim_bits(layer), dims, sizeof dims);
  put_groups(layer->query_groups, groups, sizeof groups);
  return uq__errorf(UQ_EINVAL,
                    "the %s decode layer serves head_dim %s with query groups "
                    "of %s, not head_dim %d with a query group of %d",
                    layer->name, dims, groups, (int)shape->head_dim,
                    (int)shape->query_group);
}
