/* The gfx942 layer's own primitives for NVRTC (sm_90): an exact emulation
 * of each CDNA3 instruction, so that decode_gfx942.hip runs unchanged on
 * the H200 (variant gfx942-emu), beside the shared ones of
 * cdna_prims_emu.hip, whose exchange buffer and calling rules (all 64
 * threads call each primitive uniformly) these follow. Which lane holds
 * which element and what the conversions compute come only from
 * cdna_layouts.hip and cdna3_layouts.hip (transcribed from AMD's
 * documentation), never from the kernel's own maps (gfx942_maps.hip). */

#if !defined(UQ_ROUTE_NVRTC)
#error "gfx942_prims_emu.hip is the NVRTC emulation of the gfx942 primitives"
#endif

/* ---- register types: structs with operator[] (AMD: ext_vector_type) ---- */

struct uq_g942_fp8x8 { /* 8 FNUZ bytes, little-endian */
  uq_u32 v[2];
  __device__ __forceinline__ uq_u32 &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const uq_u32 &operator[](int i) const { return v[i]; }
};
struct uq_g942_f32x2 {
  float v[2];
  __device__ __forceinline__ float &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const float &operator[](int i) const { return v[i]; }
};

/* The FP8 MFMA's operands in the exchange buffer: A 2 + B 2 words a lane. */
#define UQ_G942_EMU_A 0
#define UQ_G942_EMU_B (2 * UQ_CDNA_WAVE)
static_assert(4 * UQ_CDNA_WAVE <= UQ_CDNA_EMU_WORDS, "gfx942-emu: exchange buffer too small");

/* 1. v_mfma_f32_16x16x32_fp8_fp8. */
UQ_DEV uq_cdna_f32x4 uq_g942_mfma_fp8(uq_cdna_f32x4 acc, uq_g942_fp8x8 a, uq_g942_fp8x8 b) {
  const int lane = uq_cdna_emu_lane();
  uq_u32 *x = uq_cdna_emu_x;
  uq_barrier();
  for (int r = 0; r < 2; r++) {
    x[UQ_G942_EMU_A + 2 * lane + r] = a.v[r];
    x[UQ_G942_EMU_B + 2 * lane + r] = b.v[r];
  }
  uq_barrier();
  uq_cdna_f32x4 d;
  for (int r = 0; r < 4; r++)
    d.v[r] = uq_cdna3_mfma_fp8_elem(x + UQ_G942_EMU_A, x + UQ_G942_EMU_B, uq_cdna_d_row(lane, r),
                                    uq_cdna_d_col(lane), acc.v[r]);
  uq_barrier();
  return d;
}

/* 2. v_cvt_pk_fp8_f32, FNUZ (per lane, no exchange). */
UQ_DEV uq_u32 uq_g942_cvt_fp8x2(float lo, float hi) { return uq_cdna3_cvt_pk_fp8_f32(lo, hi); }

/* 3. v_cvt_pk_f32_fp8, FNUZ, then v_pk_mul_f32 by (scale, scale) (per
 * lane, no exchange). */
UQ_DEV uq_g942_f32x2 uq_g942_cvt_f32x2_fp8(uq_u32 src, int sel, float scale) {
  uq_g942_f32x2 r;
  r.v[0] = uq_cdna3_cvt_f32_fp8(src, sel, 0) * scale;
  r.v[1] = uq_cdna3_cvt_f32_fp8(src, sel, 1) * scale;
  return r;
}

/* 4. v_perm_b32 with selector 0x07060302 (per lane, no exchange). */
UQ_DEV uq_u32 uq_g942_pack_bf16(float lo, float hi) {
  return uq_cdna3_perm_b32(uq_f32_bits(hi), uq_f32_bits(lo), 0x07060302u);
}
