/* The matrix-unit facts shared by CDNA3 (gfx942, MI300X / MI325X) and
 * CDNA4 (gfx950, MI355X) that the AMD decode layers rely on: the 16 x 16
 * f32 result layout of every 16x16 MFMA, the operands of
 * v_mfma_f32_16x16x16_bf16 and ds_swizzle_b32's bit-mask mode. Transcribed
 * from AMD's public documentation, independently of the kernels' own maps
 * (gfx950_maps.hip, gfx942_maps.hip); the emulations (cdna_prims_emu.hip
 * and the layers' own *_prims_emu.hip) are built only on this file and on
 * cdna3_layouts.hip / cdna4_layouts.hip. Written in the common subset of
 * C11 and HIP/CUDA C++ (UQ_DEV functions, no device state, no tables in
 * memory) so that the unit tests compile this very text on the host; it
 * needs uq_u32 and uq_bits_f32 from the includer.
 *
 * Sources (named again beside each fact; "confirmed" = read in that source
 * while writing this file, "as given" = stated in docs/KERNELS.md and
 * checked here only by the unit tests' hand-worked examples):
 *  [MIC]  AMD Matrix Instruction Calculator
 *         (github.com/ROCm/amd_matrix_instruction_calculator), run as
 *         `matrix_calculator.py --architecture cdna3 --instruction <name>
 *         --detail-instruction` (CDNA3; it covers CDNA1-3 only).
 *  [ISA]  AMD Instinct CDNA3/CDNA4 ISA reference guides (markdown
 *         conversions in github.com/kuhar/amdgpu-isa-manuals): the
 *         DS_SWIZZLE_B32 pseudocode.
 *  [TRITON] triton-lang/triton lib/Dialect/TritonGPU/IR/
 *         LinearLayoutConversions.cpp: AMDMfmaEncodingAttr::toLinearLayout
 *         (16x16 result layout), mfmaDotToLinearLayout (operand layouts).
 *
 * Lane numbering: a wave64 lane L = 16 g + i, g = L >> 4, i = L & 15. */

/* ---- 16 x 16 f32 result (every 16x16 MFMA: the scaled FP4/FP8 one of
 * CDNA4, the FP8 and bf16 ones of CDNA3 and CDNA4): D[i][j] in lane
 * j + 16 (i >> 2), register i & 3 [TRITON AMDMfmaEncodingAttr::
 * toLinearLayout, 16x16: registers -> 4 consecutive rows, 16 consecutive
 * lanes cover the columns, lanes 16 and 32 step 4 and 8 rows: confirmed;
 * MIC cdna3 v_mfma_f32_16x16x16_bf16 and v_mfma_f32_16x16x32_fp8_fp8:
 * "C or D[i][j] GPR: (i % 4), Lane: 16 * floor(i / 4) + j": confirmed]. */
UQ_DEV int uq_cdna_d_lane(int i, int j) { return j + 16 * (i >> 2); }
UQ_DEV int uq_cdna_d_reg(int i) { return i & 3; }
UQ_DEV int uq_cdna_d_row(int lane, int reg) { return 4 * (lane >> 4) + reg; }
UQ_DEV int uq_cdna_d_col(int lane) { return lane & 15; }

/* ---- v_mfma_f32_16x16x16_bf16 (the _1k encoding of gfx90a, the only
 * one of gfx942 and gfx950) ----------------------------------------------
 * A (row i) / B (column i): lane 16 g + i holds k = 4 g .. 4 g + 3 as 4
 * bf16 in 2 VGPRs, element e (k = 4 g + e) in register e >> 1, bits
 * 16 (e & 1) + 15:0 [TRITON mfmaDotToLinearLayout, 16x16, kWidth 4:
 * confirmed; MIC cdna3 v_mfma_f32_16x16x16_bf16: "A[i][k] GPR:
 * (floor(k / 2) % 2).[16*(k % 2)+15 : 16*(k % 2)], Lane: 16 * floor(k / 4)
 * + i": confirmed]. D as above. */
UQ_DEV int uq_cdna_bf16_lane(int row, int k) { return 16 * (k >> 2) + row; }
UQ_DEV int uq_cdna_bf16_elem(int k) { return k & 3; }

/* One element of v_mfma_f32_16x16x16_bf16 (a[2 L + r], b[2 L + r]): bf16
 * products are exact in double and so is their 16-term sum for the
 * magnitudes the layer feeds; C is added in double and the result rounded
 * once to fp32 (undocumented internal order: the same tolerance note as
 * the layers' other MFMAs). */
UQ_DEV float uq_cdna_mfma_bf16_elem(const uq_u32 *a, const uq_u32 *b, int i,
                                     int j, float c) {
  double s = 0.0;
  for (int k = 0; k < 16; k++) {
    const int ea = uq_cdna_bf16_elem(k);
    const uq_u32 ha = (a[2 * uq_cdna_bf16_lane(i, k) + (ea >> 1)] >> (16 * (ea & 1))) & 0xffffu;
    const uq_u32 hb = (b[2 * uq_cdna_bf16_lane(j, k) + (ea >> 1)] >> (16 * (ea & 1))) & 0xffffu;
    s += (double)uq_bits_f32(ha << 16) * (double)uq_bits_f32(hb << 16);
  }
  return (float)((double)c + s);
}

/* ---- ds_swizzle_b32, bit-mask mode [ISA DS_SWIZZLE_B32 pseudocode,
 * confirmed in the CDNA4 guide; the instruction is GCN's and unchanged on
 * CDNA3 (as given)]: offset[15] = 0 selects it; and_mask = offset[4:0], or_mask =
 * offset[9:5], xor_mask = offset[14:10]; lane i reads lane
 * ((((i & 31) & and) | or) ^ xor) | (i & 32): within its 32-lane half. */
UQ_DEV int uq_cdna_swizzle_src(int lane, int offset) {
  const int and_mask = offset & 31;
  const int or_mask = (offset >> 5) & 31;
  const int xor_mask = (offset >> 10) & 31;
  return ((((lane & 31) & and_mask) | or_mask) ^ xor_mask) | (lane & 32);
}
/* The offset of the XOR pattern the layer uses (and 0x1F, or 0, xor m). */
UQ_DEV int uq_cdna_swizzle_xor_offset(int m) { return (m << 10) | 0x1f; }
