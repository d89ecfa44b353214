/* Pure index maps of the gfx950 decode layer (decode_gfx950.hip): which
 * lane loads, holds and writes what. Written in the common subset of C11
 * and HIP/CUDA C++ (no specialization constants, no device state) so that
 * tests/unit_gfx950_maps.c compiles this very text on the host and checks
 * every map against an independent model.
 *
 * Facts (docs/KERNELS.md, "gfx950"): one wave64 a workgroup; a tile is 16
 * tokens; lane L = 16 g + i, g = L >> 4, i = L & 15.
 *  - Staging loads: lane L loads token L >> 2, chunk L & 3 (64 head dims:
 *    32 code bytes) of K and of V, and the scale dword holding its chunk's
 *    two group bytes.
 *  - QK, v_mfma_scale_f32_16x16x128_f8f6f4 h (h = 0, 1: head dims 128 h ..
 *    128 h + 127), A = K codes (E2M1, 32 nibbles a lane), B = the query
 *    (E4M3, 32 bytes a lane): A lane 16 g + i holds K code bytes
 *    [64 h + 16 g, +16) of token i, its scale register the K scale byte
 *    4 h + g of token i; B lane 16 g + j holds bytes [128 h + 32 g, +32) of
 *    query row j stored permuted (uq_g950_qperm).
 *  - D (16 x 16 f32): lane L, register r holds token 4 (L >> 4) + r of
 *    query L & 15 (rows: tokens, columns: queries).
 *  - PV, 16 v_mfma_f32_16x16x16_bf16 a tile (m = 0..15: head dims 16 m ..
 *    16 m + 15), A = V transposed (rows: head dims, k: tokens), B = P
 *    (k: tokens, columns: queries): B lane 16 g + j holds tokens 4 g ..
 *    4 g + 3 of query j, exactly the QK result lane L's four registers, so
 *    P needs no exchange; A lane 16 g + i holds tokens 4 g .. 4 g + 3 of
 *    head dim 16 m + i, read from the bf16 V tile in LDS with
 *    ds_read_b64_tr_b16 (uq_g950_vtr_token / uq_g950_vtr_dim give the
 *    address each lane supplies). D lane L, register r: head dim
 *    16 m + 4 (L >> 4) + r of query L & 15.
 *  - Fused rotation: query row r's 256 dims in 8 runs of 32, run c held by
 *    lane 8 (r % 8) + c in pass r / 8; the butterflies of stride 32, 64
 *    and 128 pair lanes whose run differs by XOR 1, 2, 4. */

/* Slot byte offsets at head_dim 256 (FORMAT.md section 1). */
#define UQ_G950_SLOT_K 0
#define UQ_G950_SLOT_KSCALE 128
#define UQ_G950_SLOT_V 136
#define UQ_G950_SLOT_VSCALE 264

/* ---- LDS (bytes) --------------------------------------------------------
 * Two arrays: the E4M3 query, QG rows of 256 bytes (permuted), and one
 * tile region that holds, between barriers, first the K code tile (16
 * tokens x 128 bytes) followed by the K scale dwords (16 x 2 x 4), then the
 * bf16 V tile (16 rows of 256 + 8 padding elements). */
#define UQ_G950_LDS_QROW 256
#define UQ_G950_LDS_VROW (256 + 8)
#define UQ_G950_LDS_TILE (16 * UQ_G950_LDS_VROW * 2)
#define UQ_G950_LDS_KCODES 0
#define UQ_G950_LDS_KSCALES (16 * 128)
#define UQ_G950_LDS_KSCALES_BYTES (16 * 8)
#define UQ_G950_LDS_BYTES(qg) ((qg) * UQ_G950_LDS_QROW + UQ_G950_LDS_TILE)

/* ---- staging loads ---------------------------------------------------- */

UQ_DEV int uq_g950_stage_token(int lane) { return lane >> 2; }
UQ_DEV int uq_g950_stage_chunk(int lane) { return lane & 3; }
/* Slot byte of the lane's 16-byte code load `part` (0, 1), K (v = 0) or V
 * (v = 1). */
UQ_DEV int uq_g950_stage_code_byte(int lane, int v, int part) {
  return (v ? UQ_G950_SLOT_V : UQ_G950_SLOT_K) + 32 * (lane & 3) + 16 * part;
}
/* Slot byte of the lane's scale dword (its chunk's two group bytes are
 * bytes 2 (chunk & 1) and 2 (chunk & 1) + 1 of it). */
UQ_DEV int uq_g950_stage_scale_byte(int lane, int v) {
  return (v ? UQ_G950_SLOT_VSCALE : UQ_G950_SLOT_KSCALE) + 4 * ((lane & 3) >> 1);
}

/* ---- the query permutation --------------------------------------------- */

/* Position in the kernel's E4M3 query row of logical head dim d (0..255):
 * within each 128-dim slice, group g (0..3) element s (0..31) sits at
 * 32 (s >> 4) + 64 (g % 2) + 16 (g / 2) + (s & 15). */
UQ_DEV int uq_g950_qperm(int d) {
  const int base = d & ~127;
  const int g = (d >> 5) & 3;
  const int s = d & 31;
  return base + 32 * (s >> 4) + 64 * (g & 1) + 16 * (g >> 1) + (s & 15);
}

/* ---- QK operands and result ------------------------------------------- */

/* Token (row of A) and first K code byte of lane L's A operand of MFMA h. */
UQ_DEV int uq_g950_qk_a_token(int lane) { return lane & 15; }
UQ_DEV int uq_g950_qk_a_byte(int lane, int h) { return 64 * h + 16 * (lane >> 4); }
/* Index (0..7) of the K scale byte lane L supplies for MFMA h. */
UQ_DEV int uq_g950_qk_a_scale_group(int lane, int h) { return 4 * h + (lane >> 4); }
/* Query (column of B) and first byte of the permuted query row of lane L's
 * B operand of MFMA h. */
UQ_DEV int uq_g950_qk_b_query(int lane) { return lane & 15; }
UQ_DEV int uq_g950_qk_b_byte(int lane, int h) { return 128 * h + 32 * (lane >> 4); }
/* Token and query of lane L's result register r (also P's B operand). */
UQ_DEV int uq_g950_acc_token(int lane, int r) { return 4 * (lane >> 4) + r; }
UQ_DEV int uq_g950_acc_query(int lane) { return lane & 15; }

/* ---- PV ---------------------------------------------------------------- */

/* The V tile row and column whose 8 bytes (4 bf16) lane L supplies to
 * ds_read_b64_tr_b16 for head-dim block m: lane 16 g + q points at token
 * 4 g + (q >> 2), dims 16 m + 4 (q & 3) .. + 3. */
UQ_DEV int uq_g950_vtr_token(int lane) { return 4 * (lane >> 4) + ((lane & 15) >> 2); }
UQ_DEV int uq_g950_vtr_dim(int lane, int m) { return 16 * m + 4 * (lane & 3); }
/* Head dim of lane L's PV result register r for block m. */
UQ_DEV int uq_g950_pv_dim(int lane, int m, int r) { return 16 * m + 4 * (lane >> 4) + r; }

/* ---- the fused rotation ------------------------------------------------ */

/* Query row and 32-dim run (0..7) lane L holds in rotation pass `pass`. */
UQ_DEV int uq_g950_rot_row(int lane, int pass) { return 8 * pass + (lane >> 3); }
UQ_DEV int uq_g950_rot_run(int lane) { return lane & 7; }
/* The lane mask of the exchange for the butterfly of stride 32 << s
 * (s = 0, 1, 2): partners differ in run bit s. */
UQ_DEV int uq_g950_rot_xor(int s) { return 1 << s; }
