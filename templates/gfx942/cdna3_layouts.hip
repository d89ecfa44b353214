/* The CDNA3 (gfx942: MI300X, MI325X) hardware's view of the instructions
 * only the gfx942 layer uses: the FP8 MFMA's operand layout, the FNUZ FP8
 * encoding CDNA3 reads and writes, and the FP8 <-> fp32 conversions (what
 * CDNA3 and CDNA4 share, the 16x16 result and bf16 operand layouts and
 * ds_swizzle, is in cdna_layouts.hip, which comes first). Transcribed from
 * AMD's public documentation, independently of the kernel's own maps
 * (gfx942_maps.hip): the two must agree on their own, and the emulation
 * (gfx942_prims_emu.hip) is built only on these files. Written in the
 * common subset of C11 and HIP/CUDA C++ (UQ_DEV functions, no device
 * state, no tables in memory) so that tests/unit_cdna3_layouts.c compiles
 * this very text on the host; it needs uq_u32 and uq_bits_f32 /
 * uq_f32_bits from the includer.
 *
 * Sources (named again beside each fact; "confirmed" = read in that source
 * while writing this file, "as given" = not found stated in a public
 * source, the choice documented at the fact and covered by the unit
 * tests):
 *  [MIC]  AMD Matrix Instruction Calculator
 *         (github.com/ROCm/amd_matrix_instruction_calculator, commit
 *         2ef9189), `matrix_calculator.py --architecture cdna3
 *         --instruction v_mfma_f32_16x16x32_fp8_fp8 --detail-instruction`,
 *         `--register-layout` and `--get-register`: register layouts,
 *         "FP8 (AMD 4-bit exponent, 3-bit mantissa floating point)"
 *         operands, 16 cycles, 4096 flop/CU/cycle.
 *  [LLVM] LLVM: llvm/include/llvm/ADT/APFloat.h (Float8E4M3FNUZ: "bit
 *         layout S1E4M3 ... with no infinity or signed zero. NaN is
 *         represented as negative zero ... exponent bias is 8"), after
 *         Noune et al., "8-bit Numerical Formats for Deep Neural Networks"
 *         (arXiv:2206.02915); llvm/test/CodeGen/AMDGPU/
 *         llvm.amdgcn.mfma.gfx940.ll (the FP8 MFMA takes i64 A and B, i.e.
 *         8 bytes a lane) and llvm.amdgcn.cvt.fp8.ll (v_cvt_pk_fp8_f32 with
 *         an `old` operand and a word select; v_cvt_pk_f32_fp8 with a word
 *         select, which clang 22 encodes as src0_sel:WORD_1).
 *  [WP]   AMD CDNA 3 architecture white paper (the markdown conversion in
 *         github.com/kuhar/amdgpu-isa-manuals, cdna3/whitepaper.md):
 *         figures for docs/PERFMODEL.md. (It calls the FP8 types OCP's;
 *         the encoding gfx942 reads is FNUZ: [MIC]'s "AMD" FP8, LLVM's
 *         gfx940 FP8 lowering and PyTorch's float8_e4m3fnuz on MI300.)
 *
 * Lane numbering: a wave64 lane L = 16 g + i, g = L >> 4, i = L & 15. */

/* ---- E4M3FNUZ [LLVM APFloat; arXiv:2206.02915] (confirmed) --------------
 * Sign bit 7, exponent bits 6:3 with bias 8, mantissa bits 2:0; exponent 0
 * is subnormal (m x 2^-10); no infinities; 0x80 (the "negative zero") is
 * the only NaN; largest finite 0x7F = 1.875 x 2^7 = 240. */
#define UQ_CDNA3_FNUZ_NAN 0x80u

UQ_DEV float uq_cdna3_fnuz_value(uq_u32 byte) {
  const uq_u32 e = (byte >> 3) & 15u, m = byte & 7u;
  const uq_u32 sign = (byte & 0x80u) << 24;
  if ((byte & 255u) == UQ_CDNA3_FNUZ_NAN)
    return uq_bits_f32(0x7fc00000u);
  if (e == 0u) /* m x 2^-10: exact in fp32 */
    return uq_bits_f32(uq_f32_bits((float)m * 0.0009765625f) | sign);
  return uq_bits_f32(sign | ((e + 119u) << 23) | (m << 20));
}

/* ---- v_cvt_pk_fp8_f32 on gfx942 (FNUZ), round to nearest even ----------
 * src0 -> bits 7:0, src1 -> 15:8; with the `old` operand 0 and word select
 * 0 bits 31:16 are 0 [LLVM cvt.fp8 test: operands; confirmed]. FNUZ output
 * and RNE: as given ([MIC]'s operand type for the MFMA; the instruction's
 * own rounding is not stated in the sources above). Where the result is
 * not a finite FNUZ value of the input's sign (NaN or inf in, |x| beyond
 * the RNE range of 240, a negative value that rounds to zero) the hardware
 * behaviour is not documented; the emulation returns the NaN byte 0x80
 * there, so that a kernel that lets such an input reach the conversion
 * fails loudly (the layer clamps to +-224 and zeroes tiny values first). */
UQ_DEV uq_u32 uq_cdna3_f32_to_fnuz(float x) {
  const uq_u32 bits = uq_f32_bits(x);
  const uq_u32 sign = (bits >> 24) & 0x80u;
  const uq_u32 a = bits & 0x7fffffffu;
  if (a >= 0x7f800000u)
    return UQ_CDNA3_FNUZ_NAN;
  if (a >= 0x43780000u) /* 248: halfway from 240 to the next binade step */
    return UQ_CDNA3_FNUZ_NAN;
  const int fe = (int)(a >> 23); /* fp32 biased exponent */
  if (fe == 0) /* zero or fp32 subnormal: rounds to zero */
    return sign ? UQ_CDNA3_FNUZ_NAN : 0u;
  const int e = fe - 127;
  const int et = e < -7 ? -7 : e; /* FNUZ exponent (or -7: subnormal) */
  const uq_u32 m = (a & 0x7fffffu) | 0x800000u;
  /* q = m x 2^(e - 23) / 2^(et - 3), rounded to nearest even */
  const int s = 20 + et - e;
  uq_u32 q = 0u;
  if (s < 25) {
    q = m >> s;
    const uq_u32 rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u)))
      q++;
  }
  if (q == 0u) /* rounded to zero: +0, and no -0 in FNUZ */
    return sign ? UQ_CDNA3_FNUZ_NAN : 0u;
  /* Subnormals (et = -7, q < 8) and normals (q in 8..16, 16 carrying into
   * the exponent) share one formula. */
  return sign | (((uq_u32)(et + 7) << 3) + q);
}

UQ_DEV uq_u32 uq_cdna3_cvt_pk_fp8_f32(float lo, float hi) {
  return uq_cdna3_f32_to_fnuz(lo) | (uq_cdna3_f32_to_fnuz(hi) << 8);
}

/* ---- v_cvt_pk_f32_fp8 on gfx942 (FNUZ) ----------------------------------
 * Bytes 2 sel and 2 sel + 1 of src (word select `sel`) -> two fp32, the
 * lower byte first [LLVM cvt.fp8 test; confirmed]; each exact (every FNUZ
 * value is an fp32), 0x80 -> NaN. */
UQ_DEV float uq_cdna3_cvt_f32_fp8(uq_u32 src, int sel, int half) {
  return uq_cdna3_fnuz_value((src >> (16 * sel + 8 * half)) & 255u);
}

/* ---- v_mfma_f32_16x16x32_fp8_fp8 [MIC, confirmed] -----------------------
 * D (16 x 16 f32) = C + A (16 x 32) x B (32 x 16), A and B FNUZ FP8 in 2
 * VGPRs a lane: A[i][k] in lane 16 floor(k / 8) + i, register
 * floor(k / 4) % 2, bits 8 (k % 4) + 7 : 8 (k % 4); B[k][j] likewise with
 * the column j ("A k: 8 * floor(lane / 16) + 4 * GPR_num +
 * floor(GPR_bits / 8)"): lane 16 g + i holds k = 8 g .. 8 g + 7, byte s
 * = k - 8 g of its 8 bytes. D as every 16x16 MFMA (cdna_layouts.hip). */
UQ_DEV int uq_cdna3_f8_lane(int row, int k) { return 16 * (k >> 3) + row; }
UQ_DEV int uq_cdna3_f8_reg(int k) { return (k >> 2) & 1; }
UQ_DEV int uq_cdna3_f8_shift(int k) { return 8 * (k & 3); }

/* One element of it (a[2 L + r], b[2 L + r]): FNUZ products are exact in
 * double (4 + 4 significant bits, magnitudes 2^-20 .. 2^16) and so is
 * their 32-term sum; C is added in double and the result rounded once to
 * fp32. The hardware's internal order and precision are not documented
 * (not bit-exact: the layer's tolerance covers a few fp32 ulps); a NaN
 * byte makes the element NaN. */
UQ_DEV float uq_cdna3_mfma_fp8_elem(const uq_u32 *a, const uq_u32 *b, int i, int j, float c) {
  double s = (double)c;
  for (int k = 0; k < 32; k++) {
    const uq_u32 ba = (a[2 * uq_cdna3_f8_lane(i, k) + uq_cdna3_f8_reg(k)] >> uq_cdna3_f8_shift(k)) & 255u;
    const uq_u32 bb = (b[2 * uq_cdna3_f8_lane(j, k) + uq_cdna3_f8_reg(k)] >> uq_cdna3_f8_shift(k)) & 255u;
    s += (double)uq_cdna3_fnuz_value(ba) * (double)uq_cdna3_fnuz_value(bb);
  }
  return (float)s;
}

/* ---- v_perm_b32 [ISA V_PERM_B32 (GCN, unchanged on CDNA3); LLVM's
 * constant folding of llvm.amdgcn.perm agrees: perm(0xAABBCCDD,
 * 0x11223344, 0x07060302) = 0xAABB1122] --------------------------------
 * Byte k of the result is byte sel[8 k + 7 : 8 k] of the 8 bytes
 * {src0 (bytes 7..4), src1 (bytes 3..0)} for selector bytes 0..7; the
 * layer uses no other selector values (8..12 give sign or zero bytes,
 * 13 and above 0xFF: not emulated, the result's byte is 0xFF there). */
UQ_DEV uq_u32 uq_cdna3_perm_b32(uq_u32 src0, uq_u32 src1, uq_u32 sel) {
  uq_u32 r = 0u;
  for (int k = 0; k < 4; k++) {
    const uq_u32 s = (sel >> (8 * k)) & 255u;
    const uq_u32 byte = s < 4u ? (src1 >> (8 * s)) & 255u : s < 8u ? (src0 >> (8 * (s - 4u))) & 255u : 255u;
    r |= byte << (8 * k);
  }
  return r;
}
