/* The gfx950 layer's primitives for NVRTC (sm_90): an exact emulation of
 * each AMD instruction, so that decode_gfx950.hip runs unchanged on the
 * H200 (variant gfx950-emu). The block's 64 threads are the wave64
 * (lane = threadIdx.x; lanes 0..31 and 32..63 are two warps here). Lanes
 * exchange their "registers" through one static shared buffer; every
 * primitive that exchanges writes, barriers, reads and barriers again, so
 * primitives can be called back to back, but all 64 threads must call each
 * one uniformly (never under divergent control flow). Which lane holds
 * which element, how scales apply and what conversions compute come only
 * from cdna4_layouts.hip (transcribed from AMD's documentation), never from
 * the kernel's own maps (gfx950_maps.hip). */

#if !defined(UQ_ROUTE_NVRTC)
#error "gfx950_prims_emu.hip is the NVRTC emulation of the gfx950 primitives"
#endif

#define UQ_G950_WAVE 64

/* ---- register types: structs with operator[] (AMD: ext_vector_type) ---- */

struct uq_g950_f32x4 {
  float v[4];
  __device__ __forceinline__ float &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const float &operator[](int i) const { return v[i]; }
};
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
struct uq_g950_bf16x4 { /* 4 bf16, element 0 in the low half of word 0 */
  uq_u32 v[2];
  __device__ __forceinline__ uq_u32 &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const uq_u32 &operator[](int i) const { return v[i]; }
};

UQ_DEV uq_g950_f32x4 uq_g950_f32x4_zero() {
  uq_g950_f32x4 z;
  for (int r = 0; r < 4; r++)
    z.v[r] = 0.0f;
  return z;
}

/* The exchange buffer ("the VGPR file" of the operands in flight): the
 * scaled MFMA needs A 4 + scale 1 + B 8 + scale 1 words a lane, 3.5 KiB. */
#define UQ_G950_EMU_A 0
#define UQ_G950_EMU_SA (4 * UQ_G950_WAVE)
#define UQ_G950_EMU_B (5 * UQ_G950_WAVE)
#define UQ_G950_EMU_SB (13 * UQ_G950_WAVE)
#define UQ_G950_EMU_WORDS (14 * UQ_G950_WAVE)
static __shared__ uq_u32 uq_g950_emu_x[UQ_G950_EMU_WORDS];

UQ_DEV int uq_g950_emu_lane() { return (int)threadIdx.x & (UQ_G950_WAVE - 1); }

/* 1. v_mfma_scale_f32_16x16x128_f8f6f4, A = E2M1 with scale byte 0 of
 * a_scale (op_sel 0), B = E4M3 with scale 127 (1.0). */
UQ_DEV uq_g950_f32x4 uq_g950_mfma_qk(uq_g950_f32x4 acc, uq_g950_fp4x32 a,
                                     uq_u32 a_scale, uq_g950_fp8x32 b) {
  const int lane = uq_g950_emu_lane();
  uq_u32 *x = uq_g950_emu_x;
  uq_barrier();
  for (int r = 0; r < 4; r++)
    x[UQ_G950_EMU_A + 4 * lane + r] = a.v[r];
  for (int r = 0; r < 8; r++)
    x[UQ_G950_EMU_B + 8 * lane + r] = b.v[r];
  x[UQ_G950_EMU_SA + lane] = a_scale;
  x[UQ_G950_EMU_SB + lane] = 127u;
  uq_barrier();
  uq_g950_f32x4 d;
  for (int r = 0; r < 4; r++)
    d.v[r] = uq_cdna4_mfma_scale_f4f8_elem(
        x + UQ_G950_EMU_A, x + UQ_G950_EMU_SA, 0, x + UQ_G950_EMU_B,
        x + UQ_G950_EMU_SB, 0, uq_cdna4_d_row(lane, r), uq_cdna4_d_col(lane), acc.v[r]);
  uq_barrier();
  return d;
}

/* 2. v_mfma_f32_16x16x16_bf16. */
UQ_DEV uq_g950_f32x4 uq_g950_mfma_pv(uq_g950_f32x4 acc, uq_g950_bf16x4 a,
                                     uq_g950_bf16x4 b) {
  const int lane = uq_g950_emu_lane();
  uq_u32 *x = uq_g950_emu_x;
  uq_barrier();
  for (int r = 0; r < 2; r++) {
    x[2 * lane + r] = a.v[r];
    x[2 * UQ_G950_WAVE + 2 * lane + r] = b.v[r];
  }
  uq_barrier();
  uq_g950_f32x4 d;
  for (int r = 0; r < 4; r++)
    d.v[r] = uq_cdna4_mfma_bf16_elem(x, x + 2 * UQ_G950_WAVE, uq_cdna4_d_row(lane, r),
                                     uq_cdna4_d_col(lane), acc.v[r]);
  uq_barrier();
  return d;
}

/* 3. v_cvt_scalef32_pk_bf16_fp4 (per lane, no exchange). */
UQ_DEV uq_u32 uq_g950_cvt_fp4x2_bf16(uq_u32 src, float scale, int sel) {
  return uq_cdna4_cvt_scalef32_pk_bf16_fp4(src, scale, sel);
}

/* 4. v_cvt_pk_fp8_f32 (per lane, no exchange). */
UQ_DEV uq_u32 uq_g950_cvt_fp8x2(float lo, float hi) {
  return uq_cdna4_cvt_pk_fp8_f32(lo, hi);
}

/* 5. ds_swizzle_b32 bit-mask mode with and 0x1F, or 0, xor `mask`. */
UQ_DEV uq_u32 uq_g950_swizzle_xor(uq_u32 v, int mask) {
  const int lane = uq_g950_emu_lane();
  uq_barrier();
  uq_g950_emu_x[lane] = v;
  uq_barrier();
  const uq_u32 r = uq_g950_emu_x[uq_cdna4_swizzle_src(lane, uq_cdna4_swizzle_xor_offset(mask))];
  uq_barrier();
  return r;
}
UQ_DEV float uq_g950_swizzle_xor_f32(float v, int mask) {
  return uq_bits_f32(uq_g950_swizzle_xor(uq_f32_bits(v), mask));
}

/* 6. v of lane L ^ mask across the whole wave64 (AMD: ds_bpermute_b32,
 * whose source lane is simply the lane index it is given). */
UQ_DEV float uq_g950_wave_xor_f32(float v, int mask) {
  const int lane = uq_g950_emu_lane();
  uq_barrier();
  uq_g950_emu_x[lane] = uq_f32_bits(v);
  uq_barrier();
  const uq_u32 r = uq_g950_emu_x[(lane ^ mask) & (UQ_G950_WAVE - 1)];
  uq_barrier();
  return uq_bits_f32(r);
}

/* 7. ds_read_b64_tr_b16: every lane supplies an 8-byte aligned shared
 * address; the leading barrier also makes the other lanes' stores to the
 * addressed tile visible (the 64 lanes are two warps here). */
UQ_DEV uq_g950_bf16x4 uq_g950_lds_read_tr16(const uq_u16 *p) {
  const int lane = uq_g950_emu_lane();
  uq_barrier();
  const uq_u32 *w = (const uq_u32 *)p;
  uq_g950_emu_x[2 * lane] = w[0];
  uq_g950_emu_x[2 * lane + 1] = w[1];
  uq_barrier();
  uq_u32 h[4];
  for (int e = 0; e < 4; e++) {
    const int src = uq_cdna4_tr16_src_lane(lane, e);
    const int el = uq_cdna4_tr16_src_elem(lane);
    h[e] = (uq_g950_emu_x[2 * src + (el >> 1)] >> (16 * (el & 1))) & 0xffffu;
  }
  uq_barrier();
  uq_g950_bf16x4 r;
  r.v[0] = h[0] | (h[1] << 16);
  r.v[1] = h[2] | (h[3] << 16);
  return r;
}
