/* The gfx942 layer's own primitives on AMD (decode_gfx942.hip calls only
 * these and cdna_prims_amd.hip's for the CDNA3-specific work;
 * gfx942_prims_emu.hip emulates the same functions on NVIDIA). Each is one
 * instruction through its clang builtin, present since gfx940 in clang 22
 * (the offline route) and in the clang of ROCm 6.0 and newer (hipRTC
 * route): v_mfma_f32_16x16x32_fp8_fp8, v_cvt_pk_fp8_f32 and
 * v_cvt_pk_f32_fp8, which read and write FNUZ FP8 on gfx942, and
 * v_perm_b32 (GCN). No HIP
 * header function is used, so the text is the same under
 * prelude_clang.hip and prelude_hiprtc.hip. Every lane of the wave calls
 * each primitive uniformly. Semantics: docs/KERNELS.md and the layouts of
 * cdna3_layouts.hip. */

/* Three waves a SIMD, i.e. at most 168 arch + acc VGPRs of the 512 per
 * lane (gfx90a and gfx942 allocate both from one file): clang 22 needs
 * about 158 for the layer; at four waves (128) it spills to scratch
 * (docs/KERNELS.md, "gfx942"). */
#define UQ_G942_KERNEL_ATTRS __attribute__((amdgpu_waves_per_eu(3, 8)))

typedef uq_u32 uq_g942_fp8x8 __attribute__((ext_vector_type(2)));
typedef float uq_g942_f32x2 __attribute__((ext_vector_type(2)));

/* v_mfma_f32_16x16x32_fp8_fp8: D = C + A.B, A and B 8 FNUZ bytes a lane
 * (lane 16 g + i: k = 8 g .. 8 g + 7, byte s of the 8 = k - 8 g). */
UQ_DEV uq_cdna_f32x4 uq_g942_mfma_fp8(uq_cdna_f32x4 acc, uq_g942_fp8x8 a, uq_g942_fp8x8 b) {
  return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, a),
                                                    __builtin_bit_cast(long, b), acc, 0, 0, 0);
}

/* v_cvt_pk_fp8_f32 (FNUZ on gfx942): lo -> bits 7:0, hi -> 15:8, the upper
 * half 0 (the `old` operand 0, word select 0). */
UQ_DEV uq_u32 uq_g942_cvt_fp8x2(float lo, float hi) {
  return (uq_u32)__builtin_amdgcn_cvt_pk_fp8_f32(lo, hi, 0, false) & 0xffffu;
}

/* v_cvt_pk_f32_fp8 (FNUZ on gfx942): bytes 2 sel, 2 sel + 1 of src to two
 * fp32, then v_pk_mul_f32 by (scale, scale). The word select must be a
 * constant: `sel` is one at every call. */
UQ_DEV uq_g942_f32x2 uq_g942_cvt_f32x2_fp8(uq_u32 src, int sel, float scale) {
  const uq_g942_f32x2 f = sel ? __builtin_amdgcn_cvt_pk_f32_fp8((int)src, true)
                              : __builtin_amdgcn_cvt_pk_f32_fp8((int)src, false);
  return f * (uq_g942_f32x2){scale, scale};
}

/* v_perm_b32 picking bytes 2, 3 of lo and of hi: the top halves of two
 * fp32 as one bf16 pair (lo in bits 15:0), exact for fp32 values that
 * are bf16 values. The selector's bytes index {hi, lo} as bytes 7..4,
 * 3..0. */
UQ_DEV uq_u32 uq_g942_pack_bf16(float lo, float hi) {
  return __builtin_amdgcn_perm(uq_f32_bits(hi), uq_f32_bits(lo), 0x07060302u);
}
