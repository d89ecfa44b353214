/* Pure helpers of the sm_90 matrix decode layer (decode_mma_sm90.hip): the
 * FP4 -> E4M3 / bf16 conversions and the lane -> (row, token, dim) maps of
 * the mma.sync fragments. Written in the common subset of C11 and CUDA
 * C++ so that tests/unit_mma_maps.c compiles this very text on the host
 * (with UQ_MMA_HOST_MODEL defined and its own model of prmt) and checks it
 * against an independent model of the PTX fragment layouts and of
 * FORMAT.md's value tables.
 *
 * Head-dim permutation: a permutation applied to both Q and K leaves q.k
 * unchanged, so the QK k-index order is chosen to make each lane's K
 * operand one 32-bit word of codes. QK runs two m16n8k16 f16 mma per
 * 32-dim group (E4M3 query values and FP4 values are exact in f16, and
 * their products in fp32). For m16n8k16 lane (grp = lane / 4, tig = lane
 * % 4) holds A registers a0 (row grp) and a1 (row grp + 8) with k = 2 tig
 * + e, a2 and a3 with k = 2 tig + 8 + e, and B registers b0 (k = 2 tig +
 * e) and b1 (k = 2 tig + 8 + e) at column grp, e = 0, 1 being the low and
 * high half. Here step s (0, 1) of group G maps k = 2 tig + e to head dim
 * 32 G + 8 tig + 4 s + e and k = 2 tig + 8 + e to 32 G + 8 tig + 4 s + 2 +
 * e: the lane's K operands of both steps are code word tig of the group
 * (nibbles 0-3 for step 0, 4-7 for step 1), and its Q operands are eight
 * consecutive f16 of each of its two rows. */

#ifndef UQ_MMA_HOST_MODEL
/* prmt.b32 with selector nibbles below 8 (every selector here is masked
 * so): byte n of the result is byte (s >> 4n) & 7 of {y, x}. */
UQ_DEV uq_u32 uq_prmt(uq_u32 x, uq_u32 y, uq_u32 s) { return __byte_perm(x, y, s); }
#endif

/* Head dim of half e (0, 1) of QK operand register `reg` (0: a0/a1 and b0;
 * 1: a2/a3 and b1) of step s (0, 1) of lane tig (0..3) in group g (0..7). */
UQ_DEV int uq_mma_qk_dim(int g, int tig, int s, int reg, int e) {
  return 32 * g + 8 * tig + 4 * s + 2 * reg + e;
}

/* Byte offset, inside a slot, of the K code word a lane reads for group g:
 * dims 32 g + 8 tig .. + 7, the even dim in the low nibble (FORMAT.md 1). */
UQ_DEV int uq_mma_k_word_offset(int g, int tig) { return 16 * g + 4 * tig; }

/* Four FP4 E2M1 codes (the low 16 bits, code j in nibble j) -> four f16,
 * exactly: *p01 holds codes 0 (low half) and 1, *p23 codes 2 and 3. The
 * f16 of 0 .5 1 1.5 2 3 4 6 have a zero low byte and high bytes 00 38 3C
 * 3E 40 42 44 46; the FP4 sign (nibble bit 3) goes to bit 7 of the high
 * byte (-0 stays -0, which multiplies to 0). */
UQ_DEV void uq_mma_fp4x4_f16(uq_u32 codes, uq_u32 *p01, uq_u32 *p23) {
  uq_u32 hi = uq_prmt(0x3E3C3800u, 0x46444240u, codes & 0x7777u) |
              uq_prmt(0x8000u, 0u, (codes >> 3) & 0x1111u);
  *p01 = uq_prmt(hi, 0u, 0x1404u);
  *p23 = uq_prmt(hi, 0u, 0x3424u);
}

/* Four FP4 codes (low 16 bits) -> four bf16 values, unscaled and exact:
 * *p01 holds codes 0 (low half) and 1, *p23 codes 2 and 3. The bf16 high
 * bytes of 0 .5 1 1.5 2 3 4 6 are 00 3F 3F 3F 40 40 40 40 and the low bytes
 * 00 00 80 C0 00 40 80 C0; the sign goes to bit 7 of the high byte. */
UQ_DEV void uq_mma_fp4x4_bf16(uq_u32 codes, uq_u32 *p01, uq_u32 *p23) {
  uq_u32 m = codes & 0x7777u;
  uq_u32 hi = uq_prmt(0x3F3F3F00u, 0x40404040u, m) |
              uq_prmt(0x8000u, 0u, (codes >> 3) & 0x1111u);
  uq_u32 lo = uq_prmt(0xC0800000u, 0xC0804000u, m);
  *p01 = uq_prmt(lo, hi, 0x5140u);
  *p23 = uq_prmt(lo, hi, 0x7362u);
}

/* A UE8M0 byte as the bf16 pair (2^(byte-127), 2^(byte-127)); byte 0 gives
 * (0, 0), the zero-group sentinel of FORMAT.md section 2. A product with
 * an FP4 value (at most 2 significant bits) is exact in bf16 unless it
 * falls below 2^-126 (byte 1 with the value 0.5 only). */
UQ_DEV uq_u32 uq_mma_bf16_scale2(uq_u32 byte) { return byte * 0x00800080u; }

/* A UE8M0 byte as fp32 2^(byte-127); byte 0 -> 0. */
UQ_DEV uq_u32 uq_mma_f32_scale_bits(uq_u32 byte) { return byte << 23; }

/* ldmatrix.x4 row addresses. Lane l supplies row l % 8 of matrix l / 8.
 * For the P operand (m16 x k16, row-major in shared memory) the matrices
 * are (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows
 * 8-15, k 8-15): registers a0..a3 of m16n8k16. */
UQ_DEV int uq_mma_ldm_p_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
UQ_DEV int uq_mma_ldm_p_col(int lane) { return 8 * (lane >> 4); }

/* For the V operand (k16 tokens x n16 dims, stored [token][dim], loaded
 * with .trans) the matrices are (tokens 0-7, dims 0-7), (tokens 8-15, dims
 * 0-7), (tokens 0-7, dims 8-15), (tokens 8-15, dims 8-15): b0, b1 of the
 * first n8 block, then b0, b1 of the second. */
UQ_DEV int uq_mma_ldm_v_tok(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
UQ_DEV int uq_mma_ldm_v_dim(int lane) { return 8 * (lane >> 4); }
