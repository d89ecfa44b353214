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
 * "mi250", "mi210", which become their bare architecture ("gfx950",
 * "gfx942", "gfx90a": code every mode of the device loads), "h100",
 * "h200", which become "sm_90a", the target they report; any case). Writes the canonical form into out (features
 * sorted, lower case) and fills *info (may be NULL). UQ_EINVAL on an unknown
 * or malformed target, with the reason in uq_last_error(). */
int uq__target_parse(const char *target, char *out, size_t n,
                     uq__target_info *info);

/* The code-object targets a device reporting `target` can load, most
 * specific first, into out: i = 0 is the canonical target itself; on AMD
 * then each form with fewer of its features, down to the bare
 * architecture, which ROCm's loader accepts whatever sramecc and xnack
 * modes the device runs in ("gfx950:sramecc+:xnack-", "gfx950:sramecc+",
 * "gfx950:xnack-", "gfx950"); on NVIDIA the target alone. 0; UQ_ENOENT
 * past the last; UQ_EINVAL for a bad target or too small a buffer. */
int uq__target_loadable(const char *target, int i, char *out, size_t n);

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

#endif
