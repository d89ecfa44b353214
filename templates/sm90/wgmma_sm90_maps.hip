/* Pure helpers of the Hopper warpgroup decode layer (decode_wgmma_sm90.hip):
 * the FP4 -> E4M3 conversion of K, and the maps between a thread, the
 * wgmma fragments it holds and the head dims / tokens / shared-memory
 * bytes they stand for. Written in the common subset of C11 and CUDA C++
 * (after mma_sm90_maps.hip, whose FP4 -> bf16 conversion V reuses) so
 * that tests/unit_wgmma_maps.c compiles this very text on the host and
 * checks it against an independent model of the PTX layouts.
 *
 * The layer runs a warpgroup (four warps, 128 threads) on chunks of 64
 * tokens:
 *  - QK as S^T = K Q^T: wgmma m64n16k32 e4m3, one per 32-dim group g.
 *    A = K codes (64 tokens x 32 dims) from registers, B = the haircut
 *    query (32 dims x 16 queries) from shared memory. Warp w's rows are
 *    tokens 16 w .. 16 w + 15 in the order of uq_wg_qk_token; a thread
 *    (grp = lane / 4, tig = lane % 4) holds rows grp and grp + 8,
 *    k = 4 tig .. + 3 (registers a0, a1) and
 *    k = 16 + 4 tig .. + 3 (a2, a3), four E4M3 per register: code word
 *    tig of the group of each of its two tokens, even codes in a0 / a1,
 *    odd codes in a2 / a3. The query is stored with the matching
 *    permutation of dims (uq_wg_q_dim), so q.k is unchanged.
 *  - PV as O^T = V^T P^T: wgmma m64n16k16 bf16, one per (64-dim tile mt,
 *    16-token step). A = V (64 dims x 16 tokens) from registers, B = P
 *    (16 tokens x 16 queries, bf16) from shared memory; K index j of
 *    step ks is token uq_wg_pv_token(ks, j). A thread holds rows (dims)
 *    grp and grp + 8 of its warp's sixteen, k 2 tig, 2 tig + 1 (a0 row
 *    grp, a1 row grp + 8) and 2 tig + 8, + 9 (a2, a3): for every token, V
 *    code word 8 w + grp, whose eight codes are the thread's rows of the
 *    four tiles (uq_wg_o_dim).
 *  - D fragments (both products): thread holds rows grp (d0, d1, d4, d5)
 *    and grp + 8 (d2, d3, d6, d7) of its warp's sixteen, columns 2 tig +
 *    e (d0..d3) and 8 + 2 tig + e (d4..d7), e = 0, 1.
 *  - B operands in shared memory, K-major without swizzle: 8 x 16-byte
 *    core matrices, the one of N-block nb and K-block kb at kb * 256 + nb
 *    * 128 (leading-dimension byte offset 256, stride-dimension 128). */

constexpr int UQ_WG_LBO = 256; /* bytes between K-adjacent core matrices */
constexpr int UQ_WG_SBO = 128; /* bytes between N-adjacent core matrices */

/* Eight FP4 E2M1 codes (code j in nibble j of w, FORMAT.md 1) -> eight
 * E4M3 bytes, each exactly v * 2^-6: magnitude bits e1 e0 m to E4M3 bits
 * 4..2 (exponent field 00e1e0, mantissa m00; so 0.5 becomes the E4M3
 * subnormal 2^-7), sign to bit 7. *even gets codes 0 2 4 6 (byte i: code
 * 2 i), *odd codes 1 3 5 7. */
UQ_DEV void uq_wg_fp4x8_e4m3(uq_u32 w, uq_u32 *even, uq_u32 *odd) {
  *even = ((w << 2) & 0x1C1C1C1Cu) | ((w & 0x08080808u) << 4);
  *odd = ((w >> 2) & 0x1C1C1C1Cu) | (w & 0x80808080u);
}
/* The factor uq_wg_fp4x8_e4m3 leaves out, applied to the fp32 scores. */
#define UQ_WG_K_UNSCALE 64.0f

/* Head dim (0..255) of k index kk (0..31) of the QK product of group g:
 * registers a0 / a1 (kk < 16) carry the even codes of word tig = kk / 4
 * (dims 32 g + 8 tig + 2 i), a2 / a3 the odd ones. */
UQ_DEV int uq_wg_q_dim(int g, int kk) {
  return 32 * g + 8 * ((kk & 15) >> 2) + 2 * (kk & 3) + (kk >> 4);
}

/* Byte offset, in the query operand, of query n (0..15), k index kk of
 * group g: K-block 2 g + kk / 16 of 16 E4M3 values. */
UQ_DEV int uq_wg_q_offset(int n, int g, int kk) {
  return (2 * g + (kk >> 4)) * UQ_WG_LBO + (n >> 3) * UQ_WG_SBO + (n & 7) * 16 + (kk & 15);
}

/* Byte offset, in the P operand, of query n, K index k (0..63) of PV
 * over the chunk: K-block k / 8 of 8 bf16 values. */
UQ_DEV int uq_wg_p_offset(int n, int k) {
  return (k >> 3) * UQ_WG_LBO + (n >> 3) * UQ_WG_SBO + (n & 7) * 16 + 2 * (k & 7);
}

/* Token (0..63 of the chunk) of QK row grp + 8 h of warp w. The rows are
 * a permutation of the warp's sixteen tokens 16 w .. + 15, chosen so that
 *  - the thread's two rows (h = 0, 1) are adjacent K indices of PV
 *    (uq_wg_p_k): its two P values of a query are one 32-bit store;
 *  - the shared-memory reads of QK and PV are free of bank conflicts: for
 *    a fixed h the eight lane groups' tokens differ mod 8 (272-byte slots
 *    put token t at bank 4 t mod 32, and tig adds 0..3), and PV's
 *    K indices 2 tig + e / 2 tig + 8 + e take tokens 2 tig (+ 1) + 8 e,
 *    apart by 8 banks (grp adds 0..7). */
UQ_DEV int uq_wg_qk_token(int w, int grp, int h) {
  return 16 * w + 8 * h + 2 * (grp & 3) + (grp >> 2);
}

/* K index of PV (the column of P) of the token of QK row grp + 8 h of
 * warp w: 16 w + 2 grp + h, so that PV step ks (K indices 16 ks .. + 15)
 * covers exactly warp ks's tokens. */
UQ_DEV int uq_wg_p_k(int w, int grp, int h) { return 16 * w + 2 * grp + h; }

/* Token of K index j (0..15) of PV step ks: the inverse of uq_wg_p_k. */
UQ_DEV int uq_wg_pv_token(int ks, int j) { return uq_wg_qk_token(ks, j >> 1, j & 1); }

/* The tokens of K indices 2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9 (j = 0..3)
 * of PV step ks, less the token of K index 2 tig of step 0: the same for
 * every tig, so that one per-thread offset serves every step. */
UQ_DEV int uq_wg_pv_step(int ks, int j) { return 16 * ks + 8 * (j & 1) + (j >> 1); }

/* Byte offset, inside a slot, of the K code word a thread reads for group
 * g: dims 32 g + 8 tig .. + 7. */
UQ_DEV int uq_wg_k_word_offset(int g, int tig) { return 16 * g + 4 * tig; }

/* The V code word (0..31) of warp w, lane group grp: dims 8 (8 w + grp)
 * .. + 7; its group (scale byte) is word / 4. */
UQ_DEV int uq_wg_v_word(int w, int grp) { return 8 * w + grp; }

/* Head dim of row grp + 8 h (h = 0, 1) of warp w in the PV tile mt
 * (0..3): code 2 mt + h of the thread's V word. */
UQ_DEV int uq_wg_o_dim(int w, int grp, int mt, int h) {
  return 8 * uq_wg_v_word(w, grp) + 2 * mt + h;
}

/* Two tokens' V code words x (token a) and y (token b) -> eight bf16
 * pairs, r[n] = (code n of x, code n of y), each value v * 2^-126 as
 * uq_mma_fp4x8_bf16s gives: the low (high) two bytes of each word are
 * brought together first, so codes 0..3 (4..7) of x and y sit 16 bits
 * apart. */
UQ_DEV void uq_wg_fp4x8x2_bf16s(uq_u32 x, uq_u32 y, uq_u32 r[8]) {
  uq_mma_fp4x8_bf16s(uq_prmt(x, y, 0x5410u), r);
  uq_mma_fp4x8_bf16s(uq_prmt(x, y, 0x7632u), r + 4);
}

/* The V scale factors. A group's values come from uq_wg_fp4x8x2_bf16s as
 * v * 2^-126 and are multiplied by one bf16 factor per token before PV.
 * The whole range of scale bytes (1..254) does not fit one bf16 factor
 * 2^(byte - 1), so each V group g of a block carries a limit L_g (the
 * largest byte seen in that group, at least UQ_WG_VLIM_MIN) and PV
 * computes the group's output divided by 2^(L_g - 128): the factor of a
 * byte b <=
 * L_g is
 *   lo(b, L) = 2^(b - 1 - (L - 128)),  bf16 exponent field b + 254 - L,
 * which lies in [0, 254] for every b in 0..L (L <= 254), so the factor is
 * a normal bf16 or zero, and v * 2^-126 times it is v * 2^(b - 127) / 2^(L
 * - 128): exact unless b lies more than about 120 below L (a contribution
 * 2^-120 below the group's largest, then rounded to bf16's subnormals).
 * When a chunk brings a byte over its group's limit, the block raises the
 * limit and rescales that group's accumulators by 2^(L_old - L_new): a
 * rare event on served data (once per new maximum), so the common chunk
 * costs one factor multiply per bf16 pair whatever the bytes. Byte 0 (the
 * zero-group sentinel) only comes with all-zero codes; its factor is
 * 2^(126 - L) or 0, harmless. Only the default (shift) conversions, whose
 * values are scaled by 2^-126, are supported here. */
#if !UQ_MMA_SUBNORMAL_OPERANDS
#error "wgmma_sm90_maps.hip: the V factors assume the shift conversions (v * 2^-126)"
#endif
/* A group's limit before any byte over it: 136, groups up to 6 x 2^9 in
 * magnitude. Served V rows often have groups past 12 (byte 128) and
 * rarely past 3000, so they never take the raise, whose extra barriers
 * cost 1-4% at short context on the H200 against a start at 128
 * (docs/BENCHMARKS-LOG.md, 2026-12-04). Under it every byte from 16 up is
 * exact; smaller ones (groups under 2^-111) round in bf16's subnormal
 * range by less than 2^-133. */
constexpr uq_u32 UQ_WG_VLIM_MIN = 136u;
constexpr uq_u32 UQ_WG_VLIM_MAX = 254u; /* the largest byte the encoder writes */

/* lo of one byte a under limit lim (a <= lim; a larger byte is taken as
 * lim), a bf16 in the low 16 bits. */
UQ_DEV uq_u32 uq_wg_vscale_lo1(uq_u32 a, uq_u32 lim) {
  return ((a < lim ? a : lim) + 254u - lim) << 7;
}
UQ_DEV uq_u32 uq_wg_vscale_lo2(uq_u32 a, uq_u32 b, uq_u32 lim) {
  return uq_wg_vscale_lo1(a, lim) | (uq_wg_vscale_lo1(b, lim) << 16);
}

/* The per-group constants of uq_wg_vscale_lo_x2 for limit lim, kept in
 * shared memory while the limit holds: the limit in both 16-bit halves,
 * and the exponent offset (254 - lim) << 7 in both halves. */
UQ_DEV uq_u32 uq_wg_vlim_x2(uq_u32 lim) { return lim * 0x00010001u; }
UQ_DEV uq_u32 uq_wg_vlim_offset_x2(uq_u32 lim) { return ((254u - lim) << 7) * 0x00010001u; }

/* uq_wg_vscale_lo2 of two bytes held as the 16-bit halves of h (a low, b
 * high), both at once under the limits lim_x2 = uq_wg_vlim_x2(L) and
 * off_x2 = uq_wg_vlim_offset_x2(L): a 16-bit-pair minimum and one
 * multiply-add, which keep the integer pipe (the layer's bottleneck) free
 * of the per-byte extract / clamp / shift; *over says whether either byte
 * is over the limit (the minimum moved it: the block must raise L). */
#ifndef UQ_MMA_HOST_MODEL
UQ_DEV uq_u32 uq_wg_min_x2(uq_u32 h, uq_u32 lim_x2) {
  uq_u32 d;
  asm("min.u16x2 %0, %1, %2;\n" : "=r"(d) : "r"(h), "r"(lim_x2));
  return d;
}
#else
UQ_DEV uq_u32 uq_wg_min_x2(uq_u32 h, uq_u32 lim_x2) {
  const uq_u32 lo = h & 0xFFFFu, hi = h >> 16, llo = lim_x2 & 0xFFFFu, lhi = lim_x2 >> 16;
  return (lo < llo ? lo : llo) | ((hi < lhi ? hi : lhi) << 16);
}
#endif
UQ_DEV uq_u32 uq_wg_vscale_lo_x2(uq_u32 h, uq_u32 lim_x2, uq_u32 off_x2, bool *over) {
  const uq_u32 m = uq_wg_min_x2(h, lim_x2);
  *over = m != h;
  return m * 128u + off_x2; /* (min(byte, L) + 254 - L) << 7 per half */
}

/* The new limit of a group whose chunk brought bytes a, b over the old
 * one (never past UQ_WG_VLIM_MAX: a byte of 255 is no encoder's), and the
 * fp32 bits of the accumulators' rescale 2^(old - new) (old <= new). */
UQ_DEV uq_u32 uq_wg_vlim_raise(uq_u32 old, uq_u32 a, uq_u32 b) {
  uq_u32 m = a > b ? a : b;
  m = m < UQ_WG_VLIM_MAX ? m : UQ_WG_VLIM_MAX;
  return m > old ? m : old;
}
UQ_DEV uq_u32 uq_wg_vlim_rescale_bits(uq_u32 old, uq_u32 lim) { return (127u + old - lim) << 23; }
/* fp32 bits of 2^(lim - 128), the factor a group's output is divided by. */
UQ_DEV uq_u32 uq_wg_vlim_unscale_bits(uq_u32 lim) { return (lim - 128u + 127u) << 23; }

/* The chunk's V factors lo, computed once per chunk into shared memory:
 * table row g (V group) holds the bf16 lo of each token's scale byte at
 * its PV K index (uq_wg_p_k), so that a thread's pair of K indices 2 j,
 * 2 j + 1 is one aligned 32-bit word, as uq_wg_vscale_lo2 builds it. Rows
 * are 72 bf16 apart (64 + 8 of padding): the two groups a warp reads, four
 * words each, sit in different banks. */
constexpr int UQ_WG_VFAC_ROW = 144;
UQ_DEV int uq_wg_vfac_offset(int g, int k) { return g * UQ_WG_VFAC_ROW + 2 * k; }

/* Who computes which words of the table: thread tid takes the K index
 * pair 2 i, 2 i + 1 of step ks (pair tid / 4: ks = tid / 32, i = tid / 4
 * % 8), whose tokens are uq_wg_vfac_token(tid, 0) and (tid, 1), and the
 * groups 2 (tid % 4) and 2 (tid % 4) + 1: two words, each one
 * uq_wg_vscale_lo_x2 of the tokens' bytes of that group. */
UQ_DEV int uq_wg_vfac_token(int tid, int h) { return uq_wg_qk_token(tid >> 5, (tid >> 2) & 7, h); }
UQ_DEV int uq_wg_vfac_k(int tid) { return 16 * (tid >> 5) + 2 * ((tid >> 2) & 7); }
UQ_DEV int uq_wg_vfac_group(int tid) { return 2 * (tid & 3); }
/* The argument of uq_wg_vscale_lo_x2 for group uq_wg_vfac_group + j (j =
 * 0, 1) from the two tokens' scale bytes of both groups (x0, x1: 16-bit
 * loads, group + 0 in the low byte): byte j of each as a 16-bit half. */
UQ_DEV uq_u32 uq_wg_vfac_pair(uq_u32 x0, uq_u32 x1, int j) {
  return uq_prmt(x0, x1, j ? 0x2521u : 0x2420u);
}

/* The K scale table (fp32, [half][token]): lane l of warp w fills token
 * 16 w + l / 2, groups 4 (l % 2) .. + 3, for its own warp, whose QK rows
 * (uq_wg_qk_token) are exactly those sixteen tokens. */
UQ_DEV int uq_wg_kscale_token(int w, int lane) { return 16 * w + (lane >> 1); }
UQ_DEV int uq_wg_kscale_half(int lane) { return lane & 1; }

/* The layer's schedule: a sequence's 64-token chunks go round-robin over
 * the partitions, partition part taking chunks part, part + P, ..., at
 * most 4 TGPP of them, where FORMAT.md section 6 deals out whole 256-token
 * tile groups. Both cover the window (P TGPP tile groups); the finer
 * stride spreads a sequence of n tokens over up to n / 64 blocks instead
 * of n / 256, each with a quarter of the serial work, so short sequences
 * finish sooner. P and TGPP are the plan's; the schedule is the layer's
 * (v2 in every key), and the reduce merges partitions whatever they
 * hold. */
UQ_DEV int uq_wg_chunks(int part, uq_u32 seq_len, int parts, int tgpp) {
  const uq_u32 total = (seq_len + 63u) / 64u;
  if (total <= (uq_u32)part)
    return 0;
  const uq_u32 n = (total - (uq_u32)part + (uq_u32)parts - 1u) / (uq_u32)parts;
  return n < 4u * (uq_u32)tgpp ? (int)n : 4 * tgpp;
}

/* First token of chunk k of partition part. */
UQ_DEV uq_u32 uq_wg_chunk_token(int part, int k, int parts) {
  return ((uq_u32)part + (uq_u32)k * (uq_u32)parts) * 64u;
}

/* Byte j (0..3) of a word of K scale bytes as the fp32 bits of 2^(byte -
 * 127) (byte 0 -> 0; byte 255, never written for a valid token, -> inf). */
UQ_DEV uq_u32 uq_wg_kscale_bits(uq_u32 w, int j) {
  return (j < 3 ? w << (23 - 8 * j) : w >> 1) & 0x7F800000u;
}
