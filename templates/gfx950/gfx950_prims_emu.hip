/* The gfx950 layer's own primitives for NVRTC (sm_90): an exact emulation
 * of each CDNA4 instruction, so that decode_gfx950.hip runs unchanged on
 * the H200 (variant gfx950-emu), beside the shared ones of
 * cdna_prims_emu.hip, whose exchange buffer and calling rules (all 64
 * threads call each primitive uniformly) these follow. Which lane holds
 * which element, how scales apply and what conversions compute come only
 * from cdna_layouts.hip and cdna4_layouts.hip (transcribed from AMD's
 * documentation), never from the kernel's own maps (gfx950_maps.hip). */

#if !defined(UQ_ROUTE_NVRTC)
#error "gfx950_prims_emu.hip is the NVRTC emulation of the gfx950 primitives"
#endif

/* ---- register types: structs with operator[] (AMD: ext_vector_type) ---- */

struct uq_g950_fp4x32 { /* 32 E2M1 codes, even element in the low nibble */
  uq_u32 v[4];
  __device__ __forceinline__ uq_u32 &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const uq_u32 &operator[](int i) const { return v[i]; }
};
struct uq_g950_fp8x32 { /* 32 E4M3 bytes, little-endian */
  uq_u32 v[8];
  __device__ __forceinline__ uq_u32 &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const uq_u32 &operator[](int i) const { return v[i]; }
};

/* The scaled MFMA's operands in the exchange buffer: A 4 + scale 1 + B 8
 * + scale 1 words a lane (cdna_prims_emu.hip sizes the buffer for it). */
#define UQ_G950_EMU_A 0
#define UQ_G950_EMU_SA (4 * UQ_CDNA_WAVE)
#define UQ_G950_EMU_B (5 * UQ_CDNA_WAVE)
#define UQ_G950_EMU_SB (13 * UQ_CDNA_WAVE)
static_assert(14 * UQ_CDNA_WAVE <= UQ_CDNA_EMU_WORDS, "gfx950-emu: exchange buffer too small");

/* 1. v_mfma_scale_f32_16x16x128_f8f6f4, A = E2M1 with scale byte 0 of
 * a_scale (op_sel 0), B = E4M3 with scale 127 (1.0). */
UQ_DEV uq_cdna_f32x4 uq_g950_mfma_qk(uq_cdna_f32x4 acc, uq_g950_fp4x32 a,
                                     uq_u32 a_scale, uq_g950_fp8x32 b) {
  const int lane = uq_cdna_emu_lane();
  uq_u32 *x = uq_cdna_emu_x;
  uq_barrier();
  for (int r = 0; r < 4; r++)
    x[UQ_G950_EMU_A + 4 * lane + r] = a.v[r];
  for (int r = 0; r < 8; r++)
    x[UQ_G950_EMU_B + 8 * lane + r] = b.v[r];
  x[UQ_G950_EMU_SA + lane] = a_scale;
  x[UQ_G950_EMU_SB + lane] = 127u;
  uq_barrier();
  uq_cdna_f32x4 d;
  for (int r = 0; r < 4; r++)
    d.v[r] = uq_cdna4_mfma_scale_f4f8_elem(
        x + UQ_G950_EMU_A, x + UQ_G950_EMU_SA, 0, x + UQ_G950_EMU_B,
        x + UQ_G950_EMU_SB, 0, uq_cdna_d_row(lane, r), uq_cdna_d_col(lane), acc.v[r]);
  uq_barrier();
  return d;
}

/* 2. v_cvt_scalef32_pk_bf16_fp4 (per lane, no exchange). */
UQ_DEV uq_u32 uq_g950_cvt_fp4x2_bf16(uq_u32 src, float scale, int sel) {
  return uq_cdna4_cvt_scalef32_pk_bf16_fp4(src, scale, sel);
}

/* 3. v_cvt_pk_fp8_f32 (per lane, no exchange). */
UQ_DEV uq_u32 uq_g950_cvt_fp8x2(float lo, float hi) {
  return uq_cdna4_cvt_pk_fp8_f32(lo, hi);
}

/* 4. ds_read_b64_tr_b16: every lane supplies an 8-byte aligned shared
 * address; the leading barrier also makes the other lanes' stores to the
 * addressed tile visible (the 64 lanes are two warps here). */
UQ_DEV uq_cdna_bf16x4 uq_g950_lds_read_tr16(const uq_u16 *p) {
  const int lane = uq_cdna_emu_lane();
  uq_barrier();
  const uq_u32 *w = (const uq_u32 *)p;
  uq_cdna_emu_x[2 * lane] = w[0];
  uq_cdna_emu_x[2 * lane + 1] = w[1];
  uq_barrier();
  uq_u32 h[4];
  for (int e = 0; e < 4; e++) {
    const int src = uq_cdna4_tr16_src_lane(lane, e);
    const int el = uq_cdna4_tr16_src_elem(lane);
    h[e] = (uq_cdna_emu_x[2 * src + (el >> 1)] >> (16 * (el & 1))) & 0xffffu;
  }
  uq_barrier();
  uq_cdna_bf16x4 r;
  r.v[0] = h[0] | (h[1] << 16);
  r.v[1] = h[2] | (h[3] << 16);
  return r;
}
