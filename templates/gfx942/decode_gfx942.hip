/* The gfx942 (MI300X, MI325X) decode layer, docs/KERNELS.md ("gfx942"):
 * one wave64 per workgroup owns (sequence b, kv head kh, partition part)
 * and all UQ_QG query heads (padded to 16 MFMA columns; columns >= UQ_QG
 * hold zero queries and are never written). Per 16-token tile every lane
 * loads, straight from the cache, the bytes its operands need (K and V are
 * not staged through LDS): QK is one FNUZ FP8 MFMA per K group of 32 dims
 * (K codes turned into FP8 by integer work, the query converted once per
 * workgroup and kept in LDS), each group's result times that token's K
 * scale (converted once per tile into a small LDS table); the online
 * softmax in fp32; V converted to
 * bf16 through FP8 and v_cvt_pk_f32_fp8 with each token's scale, and 16
 * bf16 MFMAs for PV. Every CDNA operation goes through the uq_g942_* and
 * uq_cdna_* primitives, so this text compiles for gfx942
 * (cdna_prims_amd.hip, gfx942_prims_amd.hip) and for NVIDIA sm_90 with
 * each instruction emulated (cdna_prims_emu.hip, gfx942_prims_emu.hip).
 * Which lane holds what: gfx942_maps.hip. */

static_assert(UQ_BLOCK_THREADS == 64, "the gfx942 layer runs one wave64 per workgroup");
static_assert(UQ_HEAD_DIM == 256, "the gfx942 layer serves head_dim 256");
static_assert(UQ_QG >= 1 && UQ_QG <= 16, "the gfx942 layer serves query groups of 1..16");

constexpr int UQ_G942_TILE = 16;                   /* tokens per tile */
constexpr int UQ_G942_ROT_PASSES = (UQ_QG + 7) / 8; /* 8 query rows per pass */

/* The query's FNUZ bytes are those of q / 2 (E4M3FNUZ's bias is 8, OCP
 * E4M3's 7: the same bits, half the value, so the haircut q, at most 448,
 * is exact as q / 2, at most 224); K's FP8 bytes are its FP4 values x
 * 2^-7 (uq_g942_fp4x8_to_fnuz). A group's MFMA result is therefore
 * 2^-8 x the dot product: the softmax scale takes the 2^8 back (exact). */
constexpr float UQ_G942_QK_SCALE = UQ_SCALE * 256.0f;
/* V reaches PV as its FP4 values x 2^-7 x its scale (exact in bf16): the
 * output takes the 2^7 back. */
constexpr float UQ_G942_PV_SCALE = 128.0f;

/* The slot of token `base + x` of the tile at `base` (base < seq_len).
 * A token at or past seq_len is redirected to token `base` (live): its
 * block-table entry and slot are never read, the loads stay branch-free,
 * and the bytes it gets are a live token's, finite, whose scores the
 * softmax masks to -inf (so P = 0 times a finite V: stale bytes, scale
 * byte 255 included, never reach a product). Where blocks hold whole
 * tiles (block_size a multiple of 16, every size vLLM uses) one
 * block-table entry serves the tile, and a token's slot is the tile's
 * first slot (`tile`, the same for the whole wave) plus a 32-bit offset.
 * Token indices fit 32 bits (the host refuses windows past INT32_MAX);
 * the slot offsets are 64-bit. */
constexpr bool UQ_G942_WHOLE_TILES = UQ_BLOCK_SIZE % UQ_G942_TILE == 0;
static_assert((long long)(UQ_G942_TILE - 1) * UQ_NUM_KV_HEADS * UQ_PADDED_SLOT < 0x7fffffffLL,
              "gfx942 layer: a tile's slot offsets must fit 32 bits");

UQ_DEV const uq_u8 *uq_g942_tile_slot(const uq_decode_params &p, const int *bt_row, int kh,
                                      uq_u32 base) {
  const uq_i64 row = (uq_i64)bt_row[base / UQ_BLOCK_SIZE] * UQ_BLOCK_SIZE + (base % UQ_BLOCK_SIZE);
  return p.kv_cache + uq_slot_offset(row, kh);
}

UQ_DEV const uq_u8 *uq_g942_slot(const uq_decode_params &p, const uq_u8 *tile, const int *bt_row,
                                 int kh, uq_u32 base, int x, uq_u32 seq_len) {
  const bool live = base + (uq_u32)x < seq_len;
  if (UQ_G942_WHOLE_TILES)
    return tile + (live ? (uq_u32)x * (uq_u32)(UQ_NUM_KV_HEADS * UQ_PADDED_SLOT) : 0u);
  const uq_u32 t = live ? base + (uq_u32)x : base;
  const uq_i64 row = (uq_i64)bt_row[t / UQ_BLOCK_SIZE] * UQ_BLOCK_SIZE + (t % UQ_BLOCK_SIZE);
  return p.kv_cache + uq_slot_offset(row, kh);
}

/* A dword of a slot (4-byte aligned: padded_slot % 4 == 0). */
UQ_DEV uq_u32 uq_g942_word(const uq_u8 *slot, int byte) { return *(const uq_u32 *)(slot + byte); }

/* The fp32 value 2^(e - 127) of the scale byte at bit `shift` of w; byte
 * 0 (the zero sentinel) gives 0. */
UQ_DEV float uq_g942_scale(uq_u32 w, int shift) { return uq_bits_f32((uq_u32)(uq_u8)(w >> shift) << 23); }

/* One lane's cache bytes of a tile (gfx942_maps.hip): its K token's 8
 * code dwords (one per group) and the scale dword holding two of its
 * groups, and for its four result tokens the 8 V code bytes of its dims
 * and the V scale dword. */
struct uq_g942_tile {
  uq_u32 kc[8];
  uq_u32 ks;
  uq_u32 vc[4][2];
  uq_u32 vs[4];
};

UQ_DEV void uq_g942_load_tile(uq_g942_tile &t, const uq_decode_params &p, const int *bt_row,
                              int kh, uq_u32 base, uq_u32 seq_len, int lane) {
  const uq_u8 *tile = UQ_G942_WHOLE_TILES ? uq_g942_tile_slot(p, bt_row, kh, base) : nullptr;
  const uq_u8 *ks = uq_g942_slot(p, tile, bt_row, kh, base, uq_g942_qk_a_token(lane), seq_len);
#pragma unroll
  for (int G = 0; G < 8; ++G)
    t.kc[G] = uq_g942_word(ks, uq_g942_qk_a_byte(lane, G));
  t.ks = uq_g942_word(ks, uq_g942_ks_byte(lane));
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uq_u8 *s = uq_g942_slot(p, tile, bt_row, kh, base, uq_g942_acc_token(lane, r), seq_len);
    t.vc[r][0] = uq_g942_word(s, uq_g942_v_code_byte(lane));
    t.vc[r][1] = uq_g942_word(s, uq_g942_v_code_byte(lane) + 4);
    t.vs[r] = uq_g942_word(s, uq_g942_v_scale_byte(lane));
  }
}

/* The query, hoisted: row r's 256 dims in runs of 32, run c held by lane
 * 8 (r % 8) + c in pass r / 8 (gfx942_maps.hip). Fused: the caller's query
 * rotated in registers with the shared fp32 steps (butterflies of stride
 * 1..16 in the lane, 32/64/128 with the lane whose run differs by XOR
 * 1/2/4, then one multiply by UQ_FWHT_NORM: the bits of uq_fwht_shared).
 * Else the prologue's q_rot, already rotated and haircut. Clamped to
 * +-448 (the haircut's saturation), halved (exact), values the FNUZ
 * conversion rounds to zero made +0 (FNUZ has no -0: 0x80 is its NaN),
 * converted to FNUZ with round to nearest even (the haircut's rounding, on
 * the same grid halved) and stored permuted (uq_g942_qperm) as QG rows of
 * 256 bytes. */
UQ_DEV void uq_g942_query_to_lds(const uq_decode_params &p, int b, int kh, int lane,
                                 uq_u32 *q_s) {
#pragma unroll
  for (int pass = 0; pass < UQ_G942_ROT_PASSES; ++pass) {
    const int r = uq_g942_rot_row(lane, pass);
    const int run = uq_g942_rot_run(lane);
    const bool live = r < UQ_QG;
    float x[32];
    if (live) {
      const uq_i64 e0 =
          UQ_FUSE_QROT
              ? (uq_i64)b * UQ_Q_STRIDE_SEQ + (uq_i64)(kh * UQ_QG + r) * UQ_Q_STRIDE_HEAD + 32 * run
              : ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + kh * UQ_QG + r) * UQ_HEAD_DIM + 32 * run;
#pragma unroll
      for (int j = 0; j < 32; ++j)
        x[j] = UQ_FUSE_QROT ? uq_load_elem(p.query, UQ_DTYPE, e0 + j)
                            : ((const float *)p.query)[e0 + j];
    } else {
#pragma unroll
      for (int j = 0; j < 32; ++j)
        x[j] = 0.0f;
    }
    if (UQ_FUSE_QROT) {
#pragma unroll
      for (int h = 1; h < 32; h *= 2)
#pragma unroll
        for (int j = 0; j < 32; ++j)
          if ((j & h) == 0) {
            const float a0 = x[j];
            const float a1 = x[j + h];
            x[j] = uq_fadd_rn(a0, a1);
            x[j + h] = uq_fsub_rn(a0, a1);
          }
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const int mask = uq_g942_rot_xor(s);
        const bool upper = (run & mask) != 0;
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          const float other = uq_cdna_swizzle_xor_f32(x[j], mask);
          /* lower run: mine + partner's; upper run: partner's - mine */
          x[j] = upper ? uq_fsub_rn(other, x[j]) : uq_fadd_rn(x[j], other);
        }
      }
#pragma unroll
      for (int j = 0; j < 32; ++j)
        x[j] = uq_fmul_rn(x[j], UQ_FWHT_NORM);
    }
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const float v = x[j] > 448.0f ? 448.0f : (x[j] < -448.0f ? -448.0f : x[j]);
      const float h = 0.5f * v;
      /* at most half the smallest subnormal (2^-10): rounds to zero */
      x[j] = (h <= 4.8828125e-4f && h >= -4.8828125e-4f) ? 0.0f : h;
    }
    /* Every lane converts (primitives are called by the whole wave); only
     * rows below UQ_QG are stored. Dims 8 k .. 8 k + 7 of the run: even
     * dims to the first word, odd ones to the second (uq_g942_qperm). */
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float *y = x + 8 * k;
      const uq_u32 w0 = uq_g942_cvt_fp8x2(y[0], y[2]) | (uq_g942_cvt_fp8x2(y[4], y[6]) << 16);
      const uq_u32 w1 = uq_g942_cvt_fp8x2(y[1], y[3]) | (uq_g942_cvt_fp8x2(y[5], y[7]) << 16);
      if (live) {
        const int at = (r * 256 + uq_g942_qperm(32 * run + 8 * k)) >> 2;
        q_s[at] = w0;
        q_s[at + 1] = w1;
      }
    }
  }
}

/* The tile's scores of the lane's four result tokens (unscaled: 2^-8 x
 * q . k). One FP8 MFMA per K group G: A = K code dword G of token
 * lane & 15 as FNUZ, B = bytes [32 G + 8 g, +8) of query row lane & 15
 * (rows past UQ_QG are zero queries); each group's result times the K
 * scale of the result token's group G, read from the table ks_s the
 * lanes filled. */
UQ_DEV void uq_g942_qk(const uq_g942_tile &t, const uq_u32 *q_s, const float *ks_s, int lane,
                       float s[4]) {
  const int col = uq_g942_qk_b_query(lane);
#pragma unroll
  for (int r = 0; r < 4; ++r)
    s[r] = 0.0f;
#pragma unroll
  for (int G = 0; G < 8; ++G) {
    uq_u32 even, odd;
    uq_g942_fp4x8_to_fnuz(t.kc[G], &even, &odd);
    uq_g942_fp8x8 a;
    a[0] = even;
    a[1] = odd;
    uq_g942_fp8x8 qb;
    const int at = (col * 256 + uq_g942_qk_b_byte(lane, G)) >> 2;
    qb[0] = q_s[at];
    qb[1] = q_s[at + 1];
    const uq_cdna_f32x4 d = uq_g942_mfma_fp8(uq_cdna_f32x4_zero(), a, qb);
#pragma unroll
    for (int r = 0; r < 4; ++r)
      s[r] = s[r] + d[r] * ks_s[uq_g942_ks_index(G, uq_g942_acc_token(lane, r))];
  }
}

/* Route-specific kernel attributes (prims_amd: the register budget). */
#ifndef UQ_G942_KERNEL_ATTRS
#define UQ_G942_KERNEL_ATTRS
#endif

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_BLOCK_THREADS) UQ_G942_KERNEL_ATTRS void UQ_KERNEL_NAME(uq_decode_params p) {
  UQ_SHARED uq_u32 q_s[UQ_G942_LDS_QROWS * UQ_G942_LDS_QROW / 4];
  UQ_SHARED float ks_s[UQ_G942_LDS_KSCALES / 4];
  uq_grid_dependents(); /* the reduce may be scheduled */
  const int lane = uq_tid();
  const int b = uq_bid_x();
  const int kh = uq_bid_y();
  const int part = uq_bid_z();
  if (b >= p.batch)
    return;
  const uq_u32 seq_len = uq_seq_len(p, b);
  const uq_u32 trips = uq_tile_group_trips(part, (uq_u32)seq_len);
  const uq_i64 row0 = uq_partition_row0(b, kh, part);
  if (trips == 0u) {
    uq_write_empty_partition(p, row0, lane); /* uniform per block */
    return;
  }
  const int *bt_row = p.block_table + (uq_i64)b * UQ_MAX_BLOCKS;

  uq_g942_query_to_lds(p, b, kh, lane, q_s); /* read after the tile's first barrier */
  /* The padding columns' rows: zero queries, so that the B reads need no
   * condition. */
  for (int k = lane; k < (UQ_G942_LDS_QROWS - UQ_QG) * UQ_G942_LDS_QROW / 4; k += UQ_BLOCK_THREADS)
    q_s[UQ_QG * UQ_G942_LDS_QROW / 4 + k] = 0u;

  const int g = lane >> 4;
  const int col = uq_g942_acc_query(lane);

  uq_cdna_f32x4 acc[16];
#pragma unroll
  for (int m = 0; m < 16; ++m)
    acc[m] = uq_cdna_f32x4_zero();
  float m_run = uq_neg_inf(); /* column col's running max and sum */
  float l_run = 0.0f;
  const float ninf = uq_neg_inf();

  const uq_u32 tiles = trips * 16u;
  /* One tile per iteration: unrolling would multiply the live registers
   * past the 128-VGPR budget. */
#pragma unroll 1
  for (uq_u32 n = 0; n < tiles; ++n) {
    /* tile n: tile group part + (n / 16) P, tile n % 16 of it (at most
     * seq_len + 255: fits 32 bits) */
    const uq_u32 base = ((uq_u32)part + (n >> 4) * (uq_u32)UQ_NUM_PARTITIONS) * 256u +
                        (n & 15u) * (uq_u32)UQ_G942_TILE;
    if (base >= seq_len)
      break; /* uniform: only the last tile group runs past seq_len */

    uq_g942_tile t;
    uq_g942_load_tile(t, p, bt_row, kh, base, seq_len, lane);

    uq_barrier(); /* the previous tile's K scale reads are done */
#pragma unroll
    for (int k = 0; k < 2; ++k)
      ks_s[uq_g942_ks_index(uq_g942_ks_group(lane, k), uq_g942_qk_a_token(lane))] =
          uq_g942_scale(t.ks, uq_g942_ks_shift(lane, k));
    uq_barrier();

    float s4[4];
    uq_g942_qk(t, q_s, ks_s, lane, s4);

    /* Online softmax for column col over the lane's tokens 4 g + r, in
     * the steps of templates/portable/decode.hip. */
    float sc[4];
    float tmax = ninf;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uq_u32 tok = base + (uq_u32)uq_g942_acc_token(lane, r);
      sc[r] = tok < seq_len ? UQ_G942_QK_SCALE * s4[r] : ninf;
      tmax = uq_fmax(tmax, sc[r]);
    }
    tmax = uq_fmax(tmax, uq_cdna_wave_xor_f32(tmax, 16));
    tmax = uq_fmax(tmax, uq_cdna_wave_xor_f32(tmax, 32));
    const float m_new = uq_fmax(m_run, tmax);
    float alpha = 1.0f;
    if (m_new != ninf)
      alpha = m_run == ninf ? 0.0f : uq_exp2((m_run - m_new) * UQ_LOG2E);
    float pr[4];
    float psum = 0.0f;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      pr[r] = sc[r] == ninf ? 0.0f : uq_exp2((sc[r] - m_new) * UQ_LOG2E);
      psum += pr[r];
    }
    psum += uq_cdna_wave_xor_f32(psum, 16);
    psum += uq_cdna_wave_xor_f32(psum, 32);
    m_run = m_new;
    l_run = l_run * alpha + psum;

    /* P in bf16 is PV's B operand as it stands: lane 16 g + j holds
     * tokens 4 g .. 4 g + 3 of column j. */
    uq_cdna_bf16x4 pb;
    pb[0] = (uq_u32)uq_f32_to_bf16(pr[0]) | ((uq_u32)uq_f32_to_bf16(pr[1]) << 16);
    pb[1] = (uq_u32)uq_f32_to_bf16(pr[2]) | ((uq_u32)uq_f32_to_bf16(pr[3]) << 16);

    /* The accumulators follow the running max only where it moved (alpha
     * is exactly 1 elsewhere): once the max settles, no lane rescales
     * and the wave skips the block. */
    if (alpha != 1.0f) {
#pragma unroll
      for (int m = 0; m < 16; ++m)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          acc[m][r] = acc[m][r] * alpha;
    }

    /* V: token r's 16 codes (dims 16 i .. 16 i + 15) as FNUZ, four words:
     * codes 0 2 4 6, 1 3 5 7, 8 10 12 14, 9 11 13 15. */
    uq_u32 vw[4][4];
    float vsc[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      uq_g942_fp4x8_to_fnuz(t.vc[r][0], &vw[r][0], &vw[r][1]);
      uq_g942_fp4x8_to_fnuz(t.vc[r][1], &vw[r][2], &vw[r][3]);
      vsc[r] = uq_g942_scale(t.vs[r], uq_g942_v_scale_shift(lane));
    }
    /* PV: MFMAs m and m + 2 take bytes 2 sel and 2 sel + 1 of word
     * 2 half + par, m = 8 half + 4 sel + par. Each value: FP8 -> fp32
     * (exact), times the token's scale (exact: a power of two), the bf16
     * of the product its top half (exact: at most two significant bits). */
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int sel = 0; sel < 2; ++sel)
#pragma unroll
        for (int par = 0; par < 2; ++par) {
          uq_g942_f32x2 f[4];
#pragma unroll
          for (int r = 0; r < 4; ++r)
            f[r] = uq_g942_cvt_f32x2_fp8(vw[r][2 * half + par], sel, vsc[r]);
#pragma unroll
          for (int k = 0; k < 2; ++k) {
            const int m = 8 * half + 4 * sel + par + 2 * k;
            uq_cdna_bf16x4 va;
            va[0] = uq_g942_pack_bf16(f[0][k], f[1][k]);
            va[1] = uq_g942_pack_bf16(f[2][k], f[3][k]);
            acc[m] = uq_cdna_mfma_bf16(acc[m], va, pb);
          }
        }
  }

  /* Partition output: bf16(acc x 2^7 / l); lane L holds dims
   * 16 (4 (L >> 4) + r) + m of column L & 15: for each r, 16 dims in a
   * row. */
  if (col < UQ_QG) {
    uq_u32 *out = (uq_u32 *)((uq_u16 *)p.segm_out + (row0 + col) * UQ_HEAD_DIM);
    const float inv = l_run > 0.0f ? UQ_G942_PV_SCALE / l_run : 0.0f;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int m = 0; m < 16; m += 2) {
        const float o0 = acc[m][r] * inv;
        const float o1 = acc[m + 1][r] * inv;
        out[uq_g942_pv_dim(lane, m, r) / 2] =
            (uq_u32)uq_f32_to_bf16(o0) | ((uq_u32)uq_f32_to_bf16(o1) << 16);
      }
    if (g == 0) {
      p.segm_max[row0 + col] = m_run;
      p.segm_sum[row0 + col] = l_run;
    }
  }
}
