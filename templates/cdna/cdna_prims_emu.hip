/* The primitives both AMD decode layers call, for NVRTC (sm_90): an exact
 * emulation of each AMD instruction, so that the layers' kernel text runs
 * unchanged on the H200 (variants gfx950-emu and gfx942-emu). The block's
 * 64 threads are the wave64 (lane = threadIdx.x; lanes 0..31 and 32..63
 * are two warps here). Lanes exchange their "registers" through one static
 * shared buffer; every primitive that exchanges writes, barriers, reads and
 * barriers again, so primitives can be called back to back, but all 64
 * threads must call each one uniformly (never under divergent control
 * flow). Which lane holds which element comes only from cdna_layouts.hip
 * (transcribed from AMD's documentation), never from the kernels' own
 * maps. The layers' own emulated instructions (gfx950_prims_emu.hip,
 * gfx942_prims_emu.hip) use the same buffer. */

#if !defined(UQ_ROUTE_NVRTC)
#error "cdna_prims_emu.hip is the NVRTC emulation of the CDNA primitives"
#endif

#define UQ_CDNA_WAVE 64

/* ---- register types: structs with operator[] (AMD: ext_vector_type) ---- */

struct uq_cdna_f32x4 {
  float v[4];
  __device__ __forceinline__ float &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const float &operator[](int i) const { return v[i]; }
};
struct uq_cdna_bf16x4 { /* 4 bf16, element 0 in the low half of word 0 */
  uq_u32 v[2];
  __device__ __forceinline__ uq_u32 &operator[](int i) { return v[i]; }
  __device__ __forceinline__ const uq_u32 &operator[](int i) const { return v[i]; }
};

UQ_DEV uq_cdna_f32x4 uq_cdna_f32x4_zero() {
  uq_cdna_f32x4 z;
  for (int r = 0; r < 4; r++)
    z.v[r] = 0.0f;
  return z;
}

/* The exchange buffer ("the VGPR file" of the operands in flight): the
 * largest user, gfx950's scaled MFMA, needs A 4 + scale 1 + B 8 + scale 1
 * words a lane, 3.5 KiB. */
#define UQ_CDNA_EMU_WORDS (14 * UQ_CDNA_WAVE)
static __shared__ uq_u32 uq_cdna_emu_x[UQ_CDNA_EMU_WORDS];

UQ_DEV int uq_cdna_emu_lane() { return (int)threadIdx.x & (UQ_CDNA_WAVE - 1); }

/* v_mfma_f32_16x16x16_bf16. */
UQ_DEV uq_cdna_f32x4 uq_cdna_mfma_bf16(uq_cdna_f32x4 acc, uq_cdna_bf16x4 a, uq_cdna_bf16x4 b) {
  const int lane = uq_cdna_emu_lane();
  uq_u32 *x = uq_cdna_emu_x;
  uq_barrier();
  for (int r = 0; r < 2; r++) {
    x[2 * lane + r] = a.v[r];
    x[2 * UQ_CDNA_WAVE + 2 * lane + r] = b.v[r];
  }
  uq_barrier();
  uq_cdna_f32x4 d;
  for (int r = 0; r < 4; r++)
    d.v[r] = uq_cdna_mfma_bf16_elem(x, x + 2 * UQ_CDNA_WAVE, uq_cdna_d_row(lane, r),
                                    uq_cdna_d_col(lane), acc.v[r]);
  uq_barrier();
  return d;
}

/* ds_swizzle_b32 bit-mask mode with and 0x1F, or 0, xor `mask`. */
UQ_DEV uq_u32 uq_cdna_swizzle_xor(uq_u32 v, int mask) {
  const int lane = uq_cdna_emu_lane();
  uq_barrier();
  uq_cdna_emu_x[lane] = v;
  uq_barrier();
  const uq_u32 r = uq_cdna_emu_x[uq_cdna_swizzle_src(lane, uq_cdna_swizzle_xor_offset(mask))];
  uq_barrier();
  return r;
}
UQ_DEV float uq_cdna_swizzle_xor_f32(float v, int mask) {
  return uq_bits_f32(uq_cdna_swizzle_xor(uq_f32_bits(v), mask));
}

/* v of lane L ^ mask across the whole wave64 (AMD: ds_bpermute_b32, whose
 * source lane is simply the lane index it is given). */
UQ_DEV float uq_cdna_wave_xor_f32(float v, int mask) {
  const int lane = uq_cdna_emu_lane();
  uq_barrier();
  uq_cdna_emu_x[lane] = uq_f32_bits(v);
  uq_barrier();
  const uq_u32 r = uq_cdna_emu_x[(lane ^ mask) & (UQ_CDNA_WAVE - 1)];
  uq_barrier();
  return uq_bits_f32(r);
}
