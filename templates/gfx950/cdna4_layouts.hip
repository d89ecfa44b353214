/* The CDNA4 (gfx950) hardware's view of the instructions only the gfx950
 * layer uses: which lane and register holds which matrix element, how the
 * E8M0 scales apply, what the conversions compute (what CDNA3 and CDNA4
 * share, the 16x16 result and bf16 operand layouts and ds_swizzle, is in
 * cdna_layouts.hip, which comes first). Transcribed from AMD's public
 * documentation, independently of the kernel's own maps (gfx950_maps.hip):
 * the two must agree on their own, and the emulation (gfx950_prims_emu.hip)
 * is built only on these files. Written in the common subset of C11 and
 * HIP/CUDA C++ (UQ_DEV functions, no device state, no tables in memory) so
 * that tests/unit_cdna4_layouts.c compiles this very text on the host; it
 * needs uq_u32 and uq_bits_f32 / uq_f32_bits from the includer.
 *
 * Sources (named again beside each fact; "confirmed" = read in that source
 * while writing this file, "as given" = the layout stated in
 * docs/KERNELS.md / the layer spec and checked here only by the unit tests'
 * hand-worked examples):
 *  [ISA]  AMD Instinct CDNA3/CDNA4 ISA reference guides (markdown
 *         conversions in github.com/kuhar/amdgpu-isa-manuals): section
 *         "MFMA Transpose Load from LDS" (DS_READ_B64_TR_B16), the
 *         DS_SWIZZLE_B32 pseudocode, the V_CVT_SCALEF32_* descriptions.
 *  [BLOG] AMD ROCm blog, "Matrix Core Programming on AMD CDNA3 and CDNA4
 *         architecture" (rocm.blogs.amd.com/software-tools-optimization/
 *         matrix-cores-cdna): MFMA operand/result layouts, E8M0 block
 *         scales, the FP4/FP8 formats used by CDNA4 (OCP).
 *  [LLVM] LLVM AMDGPU: llvm/test/CodeGen/AMDGPU/
 *         llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.ll (operand widths:
 *         8 x i32 A/B, cbsz/blgp format codes, op_sel + scale operands),
 *         llvm/test/MC/AMDGPU/gfx950_asm_vop3.s (v_cvt_scalef32_pk_bf16_fp4
 *         encodings with op_sel byte selects).
 *  [OCP]  OCP Microscaling Formats (MX) v1.0 and OCP 8-bit floating point
 *         (OFP8) v1.0: E2M1, E4M3FN, E8M0 value definitions.
 *  [TRITON] triton-lang/triton lib/Dialect/TritonGPU/IR/
 *         LinearLayoutConversions.cpp: AMDMfmaEncodingAttr::toLinearLayout
 *         (16x16 result layout), mfmaDotToLinearLayout (operand layouts:
 *         a lane holds kWidth consecutive k, lanes 16 and 32 step k by
 *         kWidth and 2 kWidth, further registers step by 4 kWidth),
 *         chooseScaledMfmaScaleLayout (scale lanes of the 16x16x128 scaled
 *         MFMA), chooseDotDsReadB64TrLayout (the addresses ds_read_tr reads).
 *
 * Lane numbering: a wave64 lane L = 16 g + i, g = L >> 4, i = L & 15. */

/* ---- value formats [OCP] (confirmed: OCP MX v1.0 tables) ---------------- */

/* E2M1 (FP4): sign bit 3, exponent bits 2:1 (bias 1), mantissa bit 0;
 * exponent 0 is subnormal (m x 0.5). Values 0 .5 1 1.5 2 3 4 6. */
UQ_DEV float uq_cdna4_e2m1_value(uq_u32 code) {
  uq_u32 e = (code >> 1) & 3u, m = code & 1u;
  float mag = e == 0u ? 0.5f * (float)m : 0.5f * (float)((2u + m) << (e - 1u));
  return (code & 8u) ? -mag : mag;
}

/* E4M3FN: sign bit 7, exponent bits 6:3 (bias 7), mantissa bits 2:0; no
 * infinities, S.1111.111 is NaN; exponent 0 is subnormal (m x 2^-9). */
UQ_DEV float uq_cdna4_e4m3_value(uq_u32 byte) {
  uq_u32 e = (byte >> 3) & 15u, m = byte & 7u;
  uq_u32 sign = (byte & 0x80u) << 24;
  if (e == 15u && m == 7u)
    return uq_bits_f32(sign | 0x7fc00000u);
  if (e == 0u)
    return uq_bits_f32(uq_f32_bits((float)m * 0.001953125f) | sign);
  return uq_bits_f32(sign | ((e + 120u) << 23) | (m << 20));
}

/* E8M0 scale byte: 2^(byte - 127); 0xFF is NaN [OCP MX v1.0 5.4]. */
#define UQ_CDNA4_E8M0_NAN 255u

/* ---- v_mfma_scale_f32_16x16x128_f8f6f4 ----------------------------------
 * D (16 x 16 f32) = C + A (16 x 128) x B (128 x 16), A and B each with a
 * per-(row, 32-k block) E8M0 scale. Operand registers: 8 VGPRs for FP8,
 * 4 for FP4 ([LLVM] the .ll test passes <8 x i32> A/B with cbsz/blgp
 * selecting the format: 0 = E4M3, 4 = E2M1; confirmed). */

/* FP4 A (row i) / B (column i): lane 16 g + i holds k = 32 g .. 32 g + 31,
 * k = 32 g + e in nibble e (register e >> 3, bits 4 (e & 7) + 3:0), even
 * element in the low nibble [TRITON chooseScaledMfmaScaleLayout: "each lane
 * takes 32 consecutive elements ... the first 16 lanes handle
 * A[0:16][0:32], another 16 lanes A[0:16][32:64] and so on"; and
 * mfmaDotToLinearLayout with kWidth 32: confirmed. Nibble order within a
 * byte: the packed-FP4 convention of LLVM/OCP, as given]. */
UQ_DEV int uq_cdna4_f4_lane(int row, int k) { return 16 * (k >> 5) + row; }
UQ_DEV int uq_cdna4_f4_nibble(int k) { return k & 31; }

/* FP8 A (row i) / B (column i): lane 16 g + i byte s (register s >> 2,
 * bits 8 (s & 3) + 7:0) holds k = 16 g + (s & 15) + 64 (s >> 4): the two
 * 16-byte halves of a lane cover k blocks 64 apart [TRITON
 * mfmaDotToLinearLayout, 16x16, kWidth 16: register bits -> k 1..8, lane
 * 16 -> k 16, lane 32 -> k 32, next register bit -> k 64 (kTileSize =
 * 4 kWidth); chooseScaledMfmaScaleLayout: "for mxfp8 there are two
 * 16-consecutive element blocks": confirmed]. Inverse: k -> lane 16 ((k >> 4) & 3) + i, byte
 * (k & 15) + 16 (k >> 6). */
UQ_DEV int uq_cdna4_f8_k(int lane, int s) {
  return 16 * (lane >> 4) + (s & 15) + 64 * (s >> 4);
}
UQ_DEV int uq_cdna4_f8_lane(int row, int k) { return 16 * ((k >> 4) & 3) + row; }
UQ_DEV int uq_cdna4_f8_byte(int k) { return (k & 15) + 16 * (k >> 6); }

/* E8M0 scales: one scale VGPR per operand; the scale of row (A) / column
 * (B) i for k block kb (k in [32 kb, 32 kb + 32)) is read from lane
 * 16 kb + i [TRITON chooseScaledMfmaScaleLayout, 16x16: lane bits 0..3 ->
 * row, lane bits 4, 5 -> k block, whatever the operand type: confirmed],
 * byte op_sel (0..3) of it [LLVM .ll: an op_sel immediate per scale
 * operand; which byte it picks: as given]; block kb's product is
 * multiplied by 2^(sa - 127) 2^(sb - 127) [BLOG, OCP MX: E8M0 scale value
 * 2^(byte - 127): confirmed]. */
UQ_DEV int uq_cdna4_scale_lane(int row, int kb) { return 16 * kb + row; }
UQ_DEV uq_u32 uq_cdna4_scale_byte(uq_u32 reg, int op_sel) {
  return (reg >> (8 * op_sel)) & 255u;
}

/* One element of v_mfma_scale_f32_16x16x128_f8f6f4 with A = E2M1 (4 VGPRs
 * a lane: a[4 L + r]), B = E4M3 (8 VGPRs: b[8 L + r]), scale VGPRs
 * sa[L] / sb[L] read at bytes sel_a / sel_b. The order and precision of the
 * hardware's internal accumulation are not documented; this emulation
 * computes each 32-k block exactly (E2M1 x E4M3 products are multiples of
 * 2^-10 below 2^12, so a 32-term sum in double is exact), multiplies it by
 * the block's power of two, rounds once to fp32 and adds the four blocks
 * to C in fp32 in kb order. A hardware that keeps more bits differs by at
 * most a few fp32 ulps of the partial sums. A NaN scale byte (0xFF) makes
 * its block NaN. */
UQ_DEV float uq_cdna4_mfma_scale_f4f8_elem(const uq_u32 *a, const uq_u32 *sa,
                                           int sel_a, const uq_u32 *b,
                                           const uq_u32 *sb, int sel_b,
                                           int i, int j, float c) {
  float d = c;
  for (int kb = 0; kb < 4; kb++) {
    double s = 0.0;
    for (int t = 0; t < 32; t++) {
      const int k = 32 * kb + t;
      const int na = uq_cdna4_f4_nibble(k);
      const uq_u32 code = (a[4 * uq_cdna4_f4_lane(i, k) + (na >> 3)] >> (4 * (na & 7))) & 15u;
      const int nb = uq_cdna4_f8_byte(k);
      const uq_u32 byte = (b[8 * uq_cdna4_f8_lane(j, k) + (nb >> 2)] >> (8 * (nb & 3))) & 255u;
      s += (double)uq_cdna4_e2m1_value(code) * (double)uq_cdna4_e4m3_value(byte);
    }
    const uq_u32 ea = uq_cdna4_scale_byte(sa[uq_cdna4_scale_lane(i, kb)], sel_a);
    const uq_u32 eb = uq_cdna4_scale_byte(sb[uq_cdna4_scale_lane(j, kb)], sel_b);
    float block;
    if (ea == UQ_CDNA4_E8M0_NAN || eb == UQ_CDNA4_E8M0_NAN)
      block = uq_bits_f32(0x7fc00000u);
    else
      block = (float)ldexp(s, (int)ea + (int)eb - 254);
    d = d + block;
  }
  return d;
}

/* ---- ds_read_b64_tr_b16 [ISA "MFMA Transpose Load from LDS": "Read N
 * bits of data per lane ... interpret the data as a matrix with 16 bit
 * elements and transpose the matrix"; "each lane holds 4 consecutive M or N
 * values" (confirmed); TRITON chooseDotDsReadB64TrLayout, 16-bit: lane
 * 4 a + b (a, b < 4) of a 16-lane group reads 4 consecutive non-k elements
 * at non-k 4 b, k a, and each lane ends up with 4 k values of its own
 * non-k index, the bf16 operand layout of cdna_layouts.hip; the lane map below is the
 * one that makes these two agree: derived, not read] ----------------------
 * Within each 16-lane group g, lane 16 g + l reads 8 bytes (4 x 16 bit) at
 * its own address; result element e of lane 16 g + l = element (l & 3) of
 * the 8 bytes addressed by lane 16 g + 4 e + (l >> 2). */
UQ_DEV int uq_cdna4_tr16_src_lane(int lane, int e) {
  return (lane & ~15) + 4 * e + ((lane & 15) >> 2);
}
UQ_DEV int uq_cdna4_tr16_src_elem(int lane) { return lane & 3; }

/* ---- v_cvt_scalef32_pk_bf16_fp4 [ISA: "convert from a packed
 * 2-component FP4 input to packed BF16, then scale using the exponent
 * provided by the second single-precision float input" (confirmed); LLVM
 * MC: op_sel selects the source byte; the low nibble -> bits 15:0, high
 * nibble -> 31:16 as given] ------------------------------------------------
 * Only the exponent field x of the fp32 scale is used: value x 2^(x - 127).
 * Every result is exact in bf16 for x in 0..252 (at most two significant
 * bits, magnitudes 2^-128 .. 1.5 x 2^126); larger products overflow to inf
 * (the layer's scales stay far below). x = 255 (an inf/NaN scale) is outside the
 * documented use: the emulation returns NaN, so that a kernel that lets
 * such a scale reach the conversion fails loudly. */
UQ_DEV uq_u32 uq_cdna4_fp4_to_bf16_scaled(uq_u32 code, uq_u32 exp_field) {
  const uq_u32 sign = (code & 8u) << 12;
  const uq_u32 mag = code & 7u;
  if (exp_field >= 255u)
    return 0x7fc0u;
  if (mag == 0u)
    return sign;
  /* |value| = (mag == 1 ? 1 : (2 | (mag & 1)) << ((mag >> 1) - 1)) x 2^-1:
   * a 1- or 2-bit integer n times 2^(x - 128). */
  const uq_u32 n = mag == 1u ? 1u : (2u | (mag & 1u)) << ((mag >> 1) - 1u);
  /* n = 1.f x 2^p with p = floor(log2 n), f at most one bit. */
  int p = 0;
  while ((n >> (p + 1)) != 0u)
    p++;
  const uq_u32 frac = (n << (23 - p)) & 0x7fffffu; /* fp32 mantissa */
  const int be = p + (int)exp_field - 128 + 127;   /* fp32 biased exponent */
  uq_u32 bits;
  if (be >= 255) /* above the fp32/bf16 range (x >= 253, 4 or 6): inf */
    bits = 0x7f800000u;
  else if (be >= 1)
    bits = ((uq_u32)be << 23) | frac;
  else /* subnormal: the shift drops only zero bits (>= 2^-128) */
    bits = (0x800000u | frac) >> (1 - be);
  return sign | (bits >> 16);
}

UQ_DEV uq_u32 uq_cdna4_cvt_scalef32_pk_bf16_fp4(uq_u32 src, float scale, int sel) {
  const uq_u32 byte = (src >> (8 * sel)) & 255u;
  const uq_u32 x = (uq_f32_bits(scale) >> 23) & 255u;
  return uq_cdna4_fp4_to_bf16_scaled(byte & 15u, x) |
         (uq_cdna4_fp4_to_bf16_scaled(byte >> 4, x) << 16);
}

/* ---- v_cvt_pk_fp8_f32 [ISA: "convert two fp32 to packed FP8"; gfx950
 * uses the OCP E4M3FN encoding [BLOG: CDNA4 FP8 is OCP, CDNA3 FNUZ]; round
 * to nearest even] ---------------------------------------------------------
 * src0 -> bits 7:0, src1 -> 15:8, bits 31:16 0 (op_sel 0). Inputs are
 * clamped to +-448 by the layer; the emulation saturates anything larger
 * to +-448 (the hardware's out-of-range behaviour is not relied on). NaN
 * -> 0x7F with the sign. */
UQ_DEV uq_u32 uq_cdna4_f32_to_e4m3(float x) {
  const uq_u32 bits = uq_f32_bits(x);
  const uq_u32 sign = (bits >> 24) & 0x80u;
  const uq_u32 a = bits & 0x7fffffffu;
  if (a > 0x7f800000u)
    return sign | 0x7fu;
  if (a >= 0x43e00000u) /* 448 */
    return sign | 0x7eu;
  const int fe = (int)(a >> 23); /* fp32 biased exponent */
  if (fe == 0)
    return sign; /* fp32 zero or subnormal: far below 2^-10 */
  const int e = fe - 127;
  const int et = e < -6 ? -6 : e; /* E4M3 exponent (or -6: subnormal) */
  const uq_u32 m = (a & 0x7fffffu) | 0x800000u;
  /* q = m x 2^(e - 23) / 2^(et - 3), rounded to nearest even. */
  const int s = 20 + et - e;
  if (s >= 25)
    return sign; /* below half the smallest subnormal */
  uq_u32 q = m >> s;
  const uq_u32 rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
  if (rem > half || (rem == half && (q & 1u)))
    q++;
  /* Subnormals (et = -6, q < 8) and normals (q in 8..16, 16 carrying into
   * the exponent) share one formula. */
  uq_u32 byte = ((uq_u32)(et + 6) << 3) + q;
  if (byte > 0x7eu)
    byte = 0x7eu;
  return sign | byte;
}

UQ_DEV uq_u32 uq_cdna4_cvt_pk_fp8_f32(float lo, float hi) {
  return uq_cdna4_f32_to_e4m3(lo) | (uq_cdna4_f32_to_e4m3(hi) << 8);
}
