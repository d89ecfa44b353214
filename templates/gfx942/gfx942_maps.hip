/* Pure index maps of the gfx942 decode layer (decode_gfx942.hip): which
 * lane loads, holds and writes what. Written in the common subset of C11
 * and HIP/CUDA C++ (no specialization constants, no device state) so that
 * tests/unit_gfx942_maps.c compiles this very text on the host and checks
 * every map against an independent model.
 *
 * Facts (docs/KERNELS.md, "gfx942"): one wave64 a workgroup; a tile is 16
 * tokens; lane L = 16 g + i, g = L >> 4, i = L & 15. K and V are not
 * staged through LDS: every lane loads, straight from the cache, the bytes
 * its MFMA operands need.
 *  - QK, one v_mfma_f32_16x16x32_fp8_fp8 per K group G (G = 0..7: head
 *    dims 32 G .. 32 G + 31), A = K (rows: tokens), B = the query
 *    (columns: queries), both FNUZ FP8. A lane 16 g + i holds token i's
 *    code dword at K byte 16 G + 4 g (dims 32 G + 8 g .. + 7) converted to
 *    FP8: the even dims' bytes in register 0 (k = 8 g .. 8 g + 3), the odd
 *    dims' in register 1 (k = 8 g + 4 .. 8 g + 7). So the query is stored
 *    permuted (uq_g942_qperm) and B lane 16 g + j reads bytes
 *    [32 G + 8 g, +8) of query row j.
 *  - D (16 x 16 f32): lane L, register r holds token 4 (L >> 4) + r of
 *    query L & 15. Each group's result is multiplied by that token's K
 *    scale of the group and summed over the groups: each lane converts two
 *    scale bytes of its K token into an LDS table, from which the result
 *    lanes read their four tokens' scales.
 *  - PV, 16 v_mfma_f32_16x16x16_bf16 a tile (m = 0..15), A = V transposed
 *    (rows: head dims, k: tokens), B = P (k: tokens, columns: queries): B
 *    lane 16 g + j holds tokens 4 g .. 4 g + 3 of query j, exactly the QK
 *    result lane's four registers, so P needs no exchange. Row i of MFMA m
 *    is head dim 16 i + m: A lane 16 g + i holds tokens 4 g .. 4 g + 3 of
 *    dim 16 i + m, so over the 16 MFMAs the lane needs the 8 V code bytes
 *    [8 i, +8) (dims 16 i .. 16 i + 15, one group: i >> 1) and that
 *    group's V scale byte of each of its four tokens: loaded directly, no
 *    transpose. D lane L, register r of MFMA m: head dim
 *    16 (4 (L >> 4) + r) + m of query L & 15.
 *  - Fused rotation: as the gfx950 layer's (query row r's 256 dims in 8
 *    runs of 32, run c held by lane 8 (r % 8) + c in pass r / 8; the
 *    butterflies of stride 32, 64 and 128 pair lanes whose run differs by
 *    XOR 1, 2, 4). */

/* Slot byte offsets at head_dim 256 (FORMAT.md section 1). */
#define UQ_G942_SLOT_K 0
#define UQ_G942_SLOT_KSCALE 128
#define UQ_G942_SLOT_V 136
#define UQ_G942_SLOT_VSCALE 264

/* ---- LDS (bytes) --------------------------------------------------------
 * The FNUZ query, 16 rows of 256 bytes (permuted; rows QG..15, the MFMA's
 * padding columns, hold zeros), then the tile's K scales as fp32,
 * [group][token] (512 bytes): each lane turns two of its K token's scale
 * bytes into fp32 once, and the result lanes read the four tokens they
 * hold, per group, as 16 bytes. */
#define UQ_G942_LDS_QROW 256
#define UQ_G942_LDS_QROWS 16
#define UQ_G942_LDS_KSCALES 512
#define UQ_G942_LDS_BYTES (UQ_G942_LDS_QROWS * UQ_G942_LDS_QROW + UQ_G942_LDS_KSCALES)

/* ---- the query permutation --------------------------------------------- */

/* Position in the kernel's FP8 query row of logical head dim d (0..255):
 * within each run of 8 dims, the 4 even dims first, then the 4 odd ones. */
UQ_DEV int uq_g942_qperm(int d) { return (d & ~7) | ((d & 1) << 2) | ((d & 7) >> 1); }

/* ---- QK operands and result ------------------------------------------- */

/* Token (row of A, within the tile) and K code byte of lane L's A operand
 * of the MFMA of group G. */
UQ_DEV int uq_g942_qk_a_token(int lane) { return lane & 15; }
UQ_DEV int uq_g942_qk_a_byte(int lane, int G) { return UQ_G942_SLOT_K + 16 * G + 4 * (lane >> 4); }
/* Query (column of B) and first byte of the permuted query row of lane
 * L's B operand of the MFMA of group G. */
UQ_DEV int uq_g942_qk_b_query(int lane) { return lane & 15; }
UQ_DEV int uq_g942_qk_b_byte(int lane, int G) { return 32 * G + 8 * (lane >> 4); }
/* Head dim of byte s (0..7) of an A or B operand of group G in lane L. */
UQ_DEV int uq_g942_qk_dim(int lane, int G, int s) {
  return 32 * G + 8 * (lane >> 4) + (s < 4 ? 2 * s : 2 * (s - 4) + 1);
}
/* Token (within the tile) and query of lane L's result register r (also
 * P's B operand and the tokens whose V the lane loads). */
UQ_DEV int uq_g942_acc_token(int lane, int r) { return 4 * (lane >> 4) + r; }
UQ_DEV int uq_g942_acc_query(int lane) { return lane & 15; }
/* The K scale groups (k = 0, 1) lane L converts for its K token
 * (uq_g942_qk_a_token): 2 (L >> 4) + k, bytes 2 ((L >> 4) & 1) + k of the
 * token's scale dword at this slot byte. */
UQ_DEV int uq_g942_ks_group(int lane, int k) { return 2 * (lane >> 4) + k; }
UQ_DEV int uq_g942_ks_byte(int lane) { return UQ_G942_SLOT_KSCALE + 4 * (lane >> 5); }
UQ_DEV int uq_g942_ks_shift(int lane, int k) { return 8 * (2 * ((lane >> 4) & 1) + k); }
/* Index (fp32 words) of group G, token t in the K scale table. */
UQ_DEV int uq_g942_ks_index(int G, int t) { return 16 * G + t; }

/* ---- PV ---------------------------------------------------------------- */

/* The V code bytes (8, from this slot byte) and the V scale dword (its
 * byte uq_g942_v_scale_shift / 8 is the lane's group) lane L loads for
 * each of its four tokens. */
UQ_DEV int uq_g942_v_code_byte(int lane) { return UQ_G942_SLOT_V + 8 * (lane & 15); }
UQ_DEV int uq_g942_v_scale_byte(int lane) { return UQ_G942_SLOT_VSCALE + 4 * ((lane & 15) >> 3); }
UQ_DEV int uq_g942_v_scale_shift(int lane) { return 8 * (((lane & 15) >> 1) & 3); }
/* Head dim of row i of PV MFMA m (lane L's A operand). */
UQ_DEV int uq_g942_v_dim(int lane, int m) { return 16 * (lane & 15) + m; }
/* Head dim of lane L's PV result register r for MFMA m. */
UQ_DEV int uq_g942_pv_dim(int lane, int m, int r) { return 16 * (4 * (lane >> 4) + r) + m; }

/* ---- the fused rotation ------------------------------------------------ */

/* Query row and 32-dim run (0..7) lane L holds in rotation pass `pass`. */
UQ_DEV int uq_g942_rot_row(int lane, int pass) { return 8 * pass + (lane >> 3); }
UQ_DEV int uq_g942_rot_run(int lane) { return lane & 7; }
/* The lane mask of the exchange for the butterfly of stride 32 << s
 * (s = 0, 1, 2): partners differ in run bit s. */
UQ_DEV int uq_g942_rot_xor(int s) { return 1 << s; }

/* ---- FP4 codes to FNUZ FP8 (integer work: CDNA3 has no FP4 convert) ----
 * Code c (sign bit 3, magnitude bits 2:0 = E2M1 exponent and mantissa) as
 * the FNUZ byte (c & 7) << 2 with the sign at bit 7: exponent field = the
 * E2M1 exponent, mantissa = the E2M1 mantissa bit at the top, so the byte's
 * value is the code's value x 2^-7 (bias 8 against E2M1's 1, subnormals
 * included: 0.5 -> 2^-8). The sign is kept only where the magnitude is not
 * 0: -0 (code 8) must give 0x00, since 0x80 is FNUZ's NaN. Of the 8 codes
 * of dword x (code e in bits 4 e + 3 : 4 e, FORMAT.md's nibble order),
 * *even gets codes 0, 2, 4, 6 as bytes 0..3 and *odd codes 1, 3, 5, 7. */
UQ_DEV void uq_g942_fp4x8_to_fnuz(uq_u32 x, uq_u32 *even, uq_u32 *odd) {
  const uq_u32 mag = x & 0x77777777u;
  /* bit 3 of each nibble: its sign where its magnitude is not 0 */
  const uq_u32 sign = (mag + 0x77777777u) & x & 0x88888888u;
  *even = ((mag & 0x07070707u) << 2) | ((sign & 0x08080808u) << 4);
  *odd = ((mag >> 2) & 0x1c1c1c1cu) | (sign & 0x80808080u);
}
