/* Pure helpers of the sm_90 matrix decode layer (decode_mma_sm90.hip): the
 * FP4 -> f16 / bf16 conversions, the scale encodings and the lane -> (row,
 * token, dim) maps of the mma.sync fragments. Written in the common subset
 * of C11 and CUDA C++ so that tests/unit_mma_maps.c compiles this very
 * text on the host and checks it against an independent model of the PTX
 * fragment layouts and of FORMAT.md's value tables.
 *
 * Head-dim permutation: a permutation applied to both Q and K leaves q.k
 * unchanged, so the QK k-index order is chosen to make each lane's K
 * operand one 32-bit word of codes, converted with shifts and masks only.
 * QK runs two m16n8k16 f16 mma per 32-dim group (E4M3 query values and
 * FP4 values are exact in f16, and their products in fp32). For m16n8k16
 * lane (grp = lane / 4, tig = lane % 4) holds A registers a0 (row grp) and
 * a1 (row grp + 8) with k = 2 tig + e, a2 and a3 with k = 2 tig + 8 + e,
 * and B registers b0 (k = 2 tig + e) and b1 (k = 2 tig + 8 + e) at column
 * grp, e = 0, 1 being the low and high half. Here register `reg` (0: b0,
 * 1: b1) of step s (0, 1) of group G holds, in half e, head dim 32 G + 8
 * tig + 2 s + reg + 4 e: code word tig of the group gives all four B
 * registers (uq_mma_fp4x8_f16s: register j holds nibbles j and j + 4), and
 * the query is stored permuted (uq_mma_qk_pos) so that the lane's A
 * operands of both steps are eight consecutive f16 of each of its two
 * rows. */

/* UQ_MMA_SUBNORMAL_OPERANDS (default 1): the code conversions below are
 * shifts and masks whose values come out scaled by 2^-14 (K, f16) and
 * 2^-126 (V, bf16), which makes the FP4 value 0.5 a subnormal operand of
 * the f16 mma and of the first bf16 multiply; IEEE arithmetic keeps it
 * exact. 0 selects byte-permute lookups with the same register layout
 * and only normal values (K unscaled, V unscaled with the plain group
 * scale): slower, kept as the fallback should a device flush subnormal
 * operands (define it as 0 in front of this file; tests/unit_mma_maps_lookup.c
 * checks that version on the host). */
#ifndef UQ_MMA_SUBNORMAL_OPERANDS
#define UQ_MMA_SUBNORMAL_OPERANDS 1
#endif

#ifndef UQ_MMA_HOST_MODEL
/* prmt.b32 with selector nibbles below 8 (every selector here is so):
 * byte n of the result is byte (s >> 4n) & 7 of {y, x}. */
UQ_DEV uq_u32 uq_prmt(uq_u32 x, uq_u32 y, uq_u32 s) { return __byte_perm(x, y, s); }
/* The bits of a where m is set, of b elsewhere: one lop3 (the compiler,
 * left to itself, trims the mask by the known-zero bits of a shifted
 * operand and then needs two). */
UQ_DEV uq_u32 uq_bitsel(uq_u32 m, uq_u32 a, uq_u32 b) {
  uq_u32 d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE2;\n" : "=r"(d) : "r"(a), "r"(m), "r"(b));
  return d;
}
#else
UQ_DEV uq_u32 uq_bitsel(uq_u32 m, uq_u32 a, uq_u32 b) { return (a & m) | (b & ~m); }
#endif

/* Head dim of half e (0, 1) of QK operand register `reg` (0: a0/a1 and b0;
 * 1: a2/a3 and b1) of step s (0, 1) of lane tig (0..3) in group g (0..7). */
UQ_DEV int uq_mma_qk_dim(int g, int tig, int s, int reg, int e) {
  return 32 * g + 8 * tig + 2 * s + reg + 4 * e;
}

/* Position of head dim d in a row of the kernel's f16 query: position 4 s
 * + 2 reg + e of each run of eight holds the dim uq_mma_qk_dim gives for
 * (s, reg, e), so one 16-byte load gives a lane its A halves of both
 * steps in register order. */
UQ_DEV int uq_mma_qk_pos(int d) {
  return (d & ~7) | (4 * ((d >> 1) & 1) + 2 * (d & 1) + ((d >> 2) & 1));
}

/* Byte offset, inside a slot, of the K code word a lane reads for group g:
 * dims 32 g + 8 tig .. + 7, the even dim in the low nibble (FORMAT.md 1). */
UQ_DEV int uq_mma_k_word_offset(int g, int tig) { return 16 * g + 4 * tig; }

/* Eight FP4 E2M1 codes (code j in nibble j of w) -> four f16 pairs, each
 * value exactly v * 2^-14 (the code's magnitude bits become f16 bits
 * 11..9, its sign bit 15: exponent field e1e0, mantissa bit m, so 0.5
 * becomes the subnormal 2^-15): r[j] holds code j (low half) and code j +
 * 4 (high half). ue carries the even codes (magnitude at 4j..4j+2, sign
 * at 4j+6), uo the odd ones (magnitude at 4j-3..4j-1, sign at 4j+3), so
 * each register is one shift and one mask of them; no lookup constants. */
#if UQ_MMA_SUBNORMAL_OPERANDS
UQ_DEV void uq_mma_fp4x8_f16s(uq_u32 w, uq_u32 r[4]) {
  const uq_u32 m = 0x8E008E00u;
  const uq_u32 ue = (w & 0x07070707u) | ((w << 3) & ~0x07070707u);
  const uq_u32 uo = ((w >> 3) & 0x0E0E0E0Eu) | (w & ~0x0E0E0E0Eu);
  r[0] = (ue << 9) & m;
  r[1] = (uo << 8) & m;
  r[2] = (ue << 1) & m;
  r[3] = uo & m;
}

/* The factor uq_mma_fp4x8_f16s leaves out (2^14), applied to the fp32
 * score sum: exact, as every partial sum is a normal float times 2^-14. */
#define UQ_MMA_K_UNSCALE 16384.0f
#else
/* The fallback: the same registers holding the values themselves. The f16
 * of 0 .5 1 1.5 2 3 4 6 have a zero low byte and high bytes 00 38 3C 3E 40
 * 42 44 46 (below 0x80, so the sign ORs in). */
UQ_DEV void uq_mma_fp4x8_f16s(uq_u32 w, uq_u32 r[4]) {
  const uq_u32 m = w & 0x77777777u;
  const uq_u32 ha = uq_prmt(0x3E3C3800u, 0x46444240u, m);
  const uq_u32 hb = uq_prmt(0x3E3C3800u, 0x46444240u, m >> 16);
  for (int j = 0; j < 4; ++j) {
    const uq_u32 t = uq_prmt(ha, hb, (uq_u32)(j * 0x0011 + (4 + j) * 0x1100));
    r[j] = (t & 0x7F007F00u) | ((w << (12 - 4 * j)) & 0x80008000u);
  }
}
#define UQ_MMA_K_UNSCALE 1.0f
#endif

/* Eight FP4 codes (code j in nibble j of w) -> four bf16 pairs, each
 * value exactly v * 2^-126 (magnitude bits to bf16 bits 8..6, the sign to
 * bit 15; 0.5 becomes the subnormal 2^-127): r[j] holds code j (low half)
 * and code j + 4 (high half). u01 carries codes 0, 1, 4, 5 (magnitude in
 * place, sign 7 bits above the magnitude's top bit), u23 codes 2, 3, 6, 7
 * (magnitude moved down 6, sign in place), so each register is one shift
 * and one mask of them; no lookup constants. */
#if UQ_MMA_SUBNORMAL_OPERANDS
UQ_DEV void uq_mma_fp4x8_bf16s(uq_u32 w, uq_u32 r[4]) {
  const uq_u32 m = 0x81C081C0u;
  const uq_u32 u01 = uq_bitsel(0x00770077u, w, w << 6);
  const uq_u32 u23 = uq_bitsel(0x01DC01DCu, w >> 6, w);
  r[0] = (u01 << 6) & m;
  r[1] = (u01 << 2) & m;
  r[2] = (u23 << 4) & m;
  r[3] = u23 & m;
}

/* A V scale byte as two bf16 pairs whose product is 2^(byte - 1), the
 * group's scale 2^(byte - 127) times the 2^126 uq_mma_fp4x8_bf16s leaves
 * out: lo = 2^(min(byte, 128) - 1) (0 for byte 0, the zero-group
 * sentinel), hi = 2^(byte - min(byte, 128)), which is 1 unless byte > 128.
 * Each factor stays below 2^128, and a code times lo times hi is exact
 * (at most two significant bits, never below 2^-127 unless 0). */
UQ_DEV uq_u32 uq_mma_bf16_vscale_lo(uq_u32 byte) {
  const uq_u32 b = byte < 128u ? byte : 128u;
  return byte == 0u ? 0u : (b + 126u) * 0x00800080u;
}
UQ_DEV uq_u32 uq_mma_bf16_vscale_hi(uq_u32 byte) {
  const uq_u32 b = byte < 128u ? 0u : byte - 128u;
  return (b + 127u) * 0x00800080u;
}
#define UQ_MMA_V_CODE_EXP (-126) /* uq_mma_fp4x8_bf16s gives v * 2^this */
#else
/* The fallback: the values themselves. The bf16 high bytes of 0 .5 1 1.5
 * 2 3 4 6 are 00 3F 3F 3F 40 40 40 40 and the low bytes 00 00 80 C0 00 40
 * 80 C0. */
UQ_DEV void uq_mma_fp4x8_bf16s(uq_u32 w, uq_u32 r[4]) {
  const uq_u32 m = w & 0x77777777u;
  const uq_u32 ha = uq_prmt(0x3F3F3F00u, 0x40404040u, m);
  const uq_u32 hb = uq_prmt(0x3F3F3F00u, 0x40404040u, m >> 16);
  const uq_u32 la = uq_prmt(0xC0800000u, 0xC0804000u, m);
  const uq_u32 lb = uq_prmt(0xC0800000u, 0xC0804000u, m >> 16);
  for (int j = 0; j < 4; ++j) {
    const uq_u32 ta = uq_prmt(la, ha, (uq_u32)(j + 16 * (4 + j)));
    const uq_u32 tb = uq_prmt(lb, hb, (uq_u32)(j + 16 * (4 + j)));
    r[j] = uq_prmt(ta, tb, 0x5410u) | ((w << (12 - 4 * j)) & 0x80008000u);
  }
}
/* The group scale 2^(byte - 127) (0 for byte 0) and 1. */
UQ_DEV uq_u32 uq_mma_bf16_vscale_lo(uq_u32 byte) { return byte * 0x00800080u; }
UQ_DEV uq_u32 uq_mma_bf16_vscale_hi(uq_u32 byte) {
  (void)byte;
  return 0x3F803F80u;
}
#define UQ_MMA_V_CODE_EXP 0
#endif

/* Head-dim offset, inside a run of eight, of position p (0..7) of the
 * kernel's bf16 V rows: the registers of uq_mma_fp4x8_bf16s stored in
 * order put code j + 4 h at position 2 j + h. */
UQ_DEV int uq_mma_v_dim(int p) { return (p >> 1) + 4 * (p & 1); }

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
