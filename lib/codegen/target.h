/* Targets: canonical names and what the code generator needs to know. */
#ifndef UQ_TARGET_H
#define UQ_TARGET_H

#include <stddef.h>

typedef enum {
  UQ__TARGET_AMD = 1,     /* gfxNNN[:feature+/-...] */
  UQ__TARGET_NVIDIA = 2   /* sm_NN */
} uq__target_family;

typedef struct uq__target_info {
  uq__target_family family;
  int arch;        /* 950, 942, 90a -> 0x90a? see arch_name; sm_90 -> 90 */
  char arch_name[16]; /* "gfx950", "gfx90a", "sm_90", "sm_90a" */
  int wave_size;   /* 64 on AMD CDNA, 32 on NVIDIA */
} uq__target_info;

/* Parses and canonicalises a target string ("gfx950", "gfx950:sramecc+:xnack-",
 * "sm_90", "sm90", or a GPU name: "mi355x", "mi300x", "mi325x", "mi250x",
 * "mi250", "mi210", "h100", "h200", which become the target that device
 * reports, e.g. "gfx942:sramecc+:xnack-", "sm_90a"; any case). Writes the canonical form into out (features
 * sorted, lower case) and fills *info (may be NULL). UQ_EINVAL on an unknown
 * or malformed target, with the reason in uq_last_error(). */
int uq__target_parse(const char *target, char *out, size_t n,
                     uq__target_info *info);

/* 1 when uqjit has a matrix (UQ_VARIANT_MATRIX) decode layer for the
 * target: NVIDIA sm_90 and newer (the sm_90 mma.sync layer); gfx950 and
 * gfx942 have variant-1 layers of their own (uq__target_gfx950_layer,
 * uq__target_gfx942_layer). */
int uq__target_matrix_layer(const uq__target_info *info);

/* 1 when the gfx950 decode layer (UQ_VARIANT_MATRIX on AMD) serves the
 * target: gfx950 with any features. */
int uq__target_gfx950_layer(const uq__target_info *info);

/* 1 when the gfx950 layer's emulation (UQ_VARIANT_GFX950_EMU) serves the
 * target: NVIDIA sm_90 and newer. */
int uq__target_gfx950_emu_layer(const uq__target_info *info);

/* 1 when the gfx942 decode layer (UQ_VARIANT_MATRIX on AMD) serves the
 * target: gfx942 with any features. */
int uq__target_gfx942_layer(const uq__target_info *info);

/* 1 when the gfx942 layer's emulation (UQ_VARIANT_GFX942_EMU) serves the
 * target: NVIDIA sm_90 and newer. */
int uq__target_gfx942_emu_layer(const uq__target_info *info);

/* 1 when uqjit has a warpgroup (UQ_VARIANT_WARPGROUP, wgmma) decode layer
 * for the target: NVIDIA sm_90a only (wgmma exists only in the
 * arch-specific sm_90a target, and neither in plain sm_90 nor in later
 * architectures). */
int uq__target_warpgroup_layer(const uq__target_info *info);

/* 1 when the reduce kernel is launched as a programmatic dependent of the
 * decode kernel (platform launch_dependent) and waits for it in device
 * code: NVIDIA sm_90 and newer, where griddepcontrol exists. The
 * templates' uq_grid_wait follows the same rule (__CUDA_ARCH__ >= 900). */
int uq__target_dependent_launch(const uq__target_info *info);

/* Threads per block of the decode kernel generated for a target and variant
 * (the launch contract shared by the plan, the templates and the launcher):
 * the layer's own count (lib/codegen/layers.c) where the target has the
 * layer, else one wave64 on AMD, four warps on NVIDIA. */
unsigned uq__target_block_threads(const uq__target_info *info, int variant);

#endif
