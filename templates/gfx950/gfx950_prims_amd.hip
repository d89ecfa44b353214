/* The gfx950 layer's own primitives on AMD (decode_gfx950.hip calls only
 * these and cdna_prims_amd.hip's for the CDNA4-specific work;
 * gfx950_prims_emu.hip emulates the same functions on NVIDIA). Each is one
 * instruction through its clang builtin. Every builtin used here exists in
 * clang 22 (the offline route) and in the clang of ROCm 6.4 and newer, the
 * first ROCm with gfx950 (hipRTC route): the scaled MFMA, the scaled FP4
 * converts and ds_read_tr16_b64 arrived with gfx950 itself,
 * v_cvt_pk_fp8_f32 is older (gfx940, where it writes FNUZ bytes; gfx950's
 * are OCP E4M3). No HIP header
 * function is used, so the text is the same under prelude_clang.hip and
 * prelude_hiprtc.hip. Every lane of the wave calls each primitive
 * uniformly. Semantics: docs/KERNELS.md and the layer's interface notes
 * at each function. */

/* Four waves a SIMD, i.e. at most 128 arch + acc VGPRs (gfx950 allocates
 * both from one file of 512 per lane): the production kernel's budget.
 * The backend honours it only where LDS lets four waves fit
 * (decode_gfx950.hip keeps LDS under 160 KiB / 13). */
#define UQ_G950_KERNEL_ATTRS __attribute__((amdgpu_waves_per_eu(4, 8)))

typedef uq_u32 uq_g950_fp4x32 __attribute__((ext_vector_type(4)));
typedef uq_u32 uq_g950_fp8x32 __attribute__((ext_vector_type(8)));

typedef int uq_g950_i32x8 __attribute__((ext_vector_type(8)));
typedef __bf16 uq_g950_bf16v4 __attribute__((ext_vector_type(4)));
typedef __bf16 uq_g950_bf16v2 __attribute__((ext_vector_type(2)));

/* v_mfma_scale_f32_16x16x128_f8f6f4: A = `a` as E2M1 (format 4; only the
 * low 4 dwords of the 8-dword operand are read for FP4), B = `b` as E4M3
 * (format 0), A's scale byte 0 of `a_scale` (op_sel 0), B's scale 127
 * (2^0). D[i][j] = C[i][j] + sum over 32-element blocks of
 * 2^(sa + sb - 254) x the block's dot product. */
UQ_DEV uq_cdna_f32x4 uq_g950_mfma_qk(uq_cdna_f32x4 acc, uq_g950_fp4x32 a, uq_u32 a_scale,
                                     uq_g950_fp8x32 b) {
  const uq_g950_i32x8 a8 = {(int)a[0], (int)a[1], (int)a[2], (int)a[3], 0, 0, 0, 0};
  const uq_g950_i32x8 b8 = __builtin_bit_cast(uq_g950_i32x8, b);
  return __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a8, b8, acc, 4, 0, 0, (int)a_scale, 0,
                                                          127);
}

/* v_cvt_scalef32_pk_bf16_fp4: byte `sel` of `src`, low nibble -> bits
 * 15:0, high nibble -> 31:16, times 2^(exponent field of scale - 127). The
 * builtin's byte select must be a constant: `sel` is one at every call,
 * so after inlining one case remains. */
UQ_DEV uq_u32 uq_g950_cvt_fp4x2_bf16(uq_u32 src, float scale, int sel) {
  uq_g950_bf16v2 r;
  switch (sel) {
  case 0: r = __builtin_amdgcn_cvt_scalef32_pk_bf16_fp4(src, scale, 0); break;
  case 1: r = __builtin_amdgcn_cvt_scalef32_pk_bf16_fp4(src, scale, 1); break;
  case 2: r = __builtin_amdgcn_cvt_scalef32_pk_bf16_fp4(src, scale, 2); break;
  default: r = __builtin_amdgcn_cvt_scalef32_pk_bf16_fp4(src, scale, 3); break;
  }
  return __builtin_bit_cast(uq_u32, r);
}

/* v_cvt_pk_fp8_f32 (E4M3, round to nearest even): lo -> bits 7:0, hi ->
 * 15:8, the upper half 0 (the `old` operand, word select 0). */
UQ_DEV uq_u32 uq_g950_cvt_fp8x2(float lo, float hi) {
  return (uq_u32)__builtin_amdgcn_cvt_pk_fp8_f32(lo, hi, 0, false) & 0xffffu;
}

/* ds_read_b64_tr_b16: element e of lane 16 g + l = 16-bit element (l & 3)
 * of the 8 bytes at the address lane 16 g + 4 e + (l >> 2) supplies. `p`
 * points into an LDS array (UQ_SHARED), 8-byte aligned. */
UQ_DEV uq_cdna_bf16x4 uq_g950_lds_read_tr16(const uq_u16 *p) {
  typedef __attribute__((address_space(3))) uq_g950_bf16v4 uq_g950_lds_bf16v4;
  const uq_g950_bf16v4 r =
      __builtin_amdgcn_ds_read_tr16_b64_v4bf16((uq_g950_lds_bf16v4 *)(uq_g950_bf16v4 *)p);
  return __builtin_bit_cast(uq_cdna_bf16x4, r);
}
