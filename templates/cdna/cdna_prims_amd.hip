/* The primitives both AMD decode layers (gfx942 and gfx950) call, on AMD:
 * the register types of the 16x16 MFMAs, the bf16 MFMA of PV and the lane
 * exchanges. Each is one instruction through its clang builtin, present
 * in clang 22 (the offline route) and in every ROCm clang that knows
 * gfx942 or gfx950 (hipRTC route): v_mfma_f32_16x16x16_bf16 (the _1k
 * encoding, gfx90a and newer), ds_swizzle and ds_bpermute (GCN). No HIP
 * header function is used, so the text is the same under
 * prelude_clang.hip and prelude_hiprtc.hip. Every lane of the wave calls
 * each primitive uniformly. cdna_prims_emu.hip emulates the same functions
 * on NVIDIA; the layouts they follow: cdna_layouts.hip. */

typedef float uq_cdna_f32x4 __attribute__((ext_vector_type(4)));
typedef uq_u32 uq_cdna_bf16x4 __attribute__((ext_vector_type(2)));
typedef short uq_cdna_i16x4 __attribute__((ext_vector_type(4)));

UQ_DEV uq_cdna_f32x4 uq_cdna_f32x4_zero() { return (uq_cdna_f32x4){0.0f, 0.0f, 0.0f, 0.0f}; }

/* v_mfma_f32_16x16x16_bf16: D = C + A.B, A = `a` (row i of lane 16 g + i:
 * k = 4 g .. 4 g + 3), B = `b` (column j likewise). */
UQ_DEV uq_cdna_f32x4 uq_cdna_mfma_bf16(uq_cdna_f32x4 acc, uq_cdna_bf16x4 a, uq_cdna_bf16x4 b) {
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(uq_cdna_i16x4, a),
                                                   __builtin_bit_cast(uq_cdna_i16x4, b), acc, 0, 0,
                                                   0);
}

/* ds_swizzle_b32, bit-mask mode (offset bit 15 clear): and_mask 0x1F,
 * or_mask 0, xor_mask `mask`, so lane L reads lane L ^ mask of its 32-lane
 * half. The offset must be a constant, hence one case per mask. */
UQ_DEV uq_u32 uq_cdna_swizzle_xor(uq_u32 v, int mask) {
  switch (mask) {
  case 1: return (uq_u32)__builtin_amdgcn_ds_swizzle((int)v, (1 << 10) | 0x1F);
  case 2: return (uq_u32)__builtin_amdgcn_ds_swizzle((int)v, (2 << 10) | 0x1F);
  case 4: return (uq_u32)__builtin_amdgcn_ds_swizzle((int)v, (4 << 10) | 0x1F);
  case 8: return (uq_u32)__builtin_amdgcn_ds_swizzle((int)v, (8 << 10) | 0x1F);
  default: return (uq_u32)__builtin_amdgcn_ds_swizzle((int)v, (16 << 10) | 0x1F);
  }
}
UQ_DEV float uq_cdna_swizzle_xor_f32(float v, int mask) {
  return uq_bits_f32(uq_cdna_swizzle_xor(uq_f32_bits(v), mask));
}

/* v of lane L ^ mask across the wave64: ds_bpermute_b32, which addresses
 * lanes in bytes (the lane id from mbcnt, on both AMD routes). */
UQ_DEV float uq_cdna_wave_xor_f32(float v, int mask) {
  const int lane = (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return uq_bits_f32(
      (uq_u32)__builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, (int)uq_f32_bits(v)));
}
