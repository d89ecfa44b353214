/* The gfx950 (MI355X) decode layer, after the production design of
 * docs/KERNELS.md ("gfx950"): one wave64 per workgroup owns (sequence b,
 * kv head kh, partition part) and all UQ_QG query heads (padded to 16
 * MFMA columns; columns >= UQ_QG hold zero queries and are never
 * written). Per 16-token tile: two scaled FP4 x E4M3 MFMAs for QK (K codes
 * with their UE8M0 bytes as A's scales, the query hoisted as E4M3 B
 * operands), the online softmax in fp32, V converted to bf16 in LDS by the
 * hardware FP4 convert, and 16 bf16 MFMAs for PV with V read transposed.
 * Every CDNA4 operation goes through the uq_g950_* primitives, so this
 * text compiles for gfx950 (gfx950_prims_amd.hip) and for NVIDIA sm_90
 * with each instruction emulated (gfx950_prims_emu.hip). Which lane holds
 * what: gfx950_maps.hip. */

static_assert(UQ_BLOCK_THREADS == 64, "the gfx950 layer runs one wave64 per workgroup");
static_assert(UQ_HEAD_DIM == 256, "the gfx950 layer serves head_dim 256");
static_assert(UQ_QG >= 1 && UQ_QG <= 16, "the gfx950 layer serves query groups of 1..16");

constexpr int UQ_G950_TILE = 16;         /* tokens per tile */
constexpr int UQ_G950_VROW = 256 + 8;    /* bf16 V tile row, padded by 8 elements */
constexpr int UQ_G950_ROT_PASSES = (UQ_QG + 7) / 8; /* 8 query rows per pass */

/* LDS (bytes): the E4M3 query (QG rows of 256), the K code tile (16 x 128),
 * the K scale dwords (16 x 2) and the bf16 V tile (16 x 264 x 2). */
constexpr int UQ_G950_LDS = UQ_QG * 256 + 16 * 128 + 16 * 8 + 16 * UQ_G950_VROW * 2;
static_assert(UQ_G950_LDS <= 64 + 16 * 512 + 8448 + 512,
              "gfx950 layer: LDS over the production layout's budget");

/* One lane's share of a tile's cache bytes (gfx950_maps.hip, staging
 * loads): token lane >> 2, chunk lane & 3: 32 K code bytes, 32 V code
 * bytes and the scale dwords holding the chunk's two group bytes. */
struct uq_g950_stage {
  uq_u32 k[8];
  uq_u32 v[8];
  uq_u32 ks;
  uq_u32 vs;
};

/* Four 32-bit loads: slots are only 4-byte aligned (padded_slot % 4 == 0;
 * the V codes sit at +136), so no wider access is assumed; the AMD
 * backend merges them where it can. */
UQ_DEV void uq_g950_load_words(uq_u32 *dst, const uq_u8 *src) {
  const uq_u32 *w = (const uq_u32 *)src;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    dst[i] = w[i];
}

/* Loads the lane's share of the tile starting at token `base`. Tokens at
 * or past seq_len touch neither their block-table entry nor their slot:
 * their codes and scales are 0, so their V converts to exact zeros (stale
 * bytes, scale byte 255 included, never meet a zero P as 0 x inf). */
UQ_DEV void uq_g950_load_stage(uq_g950_stage &s, const uq_decode_params &p, const int *bt_row,
                               int kh, long long base, long long seq_len, int lane) {
  const long long t = base + uq_g950_stage_token(lane);
  if (t < seq_len) {
    const int blk = bt_row[t / UQ_BLOCK_SIZE];
    const uq_i64 row = (uq_i64)blk * UQ_BLOCK_SIZE + (t % UQ_BLOCK_SIZE);
    const uq_u8 *slot = p.kv_cache + uq_slot_offset(row, kh);
    uq_g950_load_words(s.k, slot + uq_g950_stage_code_byte(lane, 0, 0));
    uq_g950_load_words(s.k + 4, slot + uq_g950_stage_code_byte(lane, 0, 1));
    uq_g950_load_words(s.v, slot + uq_g950_stage_code_byte(lane, 1, 0));
    uq_g950_load_words(s.v + 4, slot + uq_g950_stage_code_byte(lane, 1, 1));
    s.ks = *(const uq_u32 *)(slot + uq_g950_stage_scale_byte(lane, 0));
    s.vs = *(const uq_u32 *)(slot + uq_g950_stage_scale_byte(lane, 1));
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      s.k[i] = 0u;
      s.v[i] = 0u;
    }
    s.ks = 0u;
    s.vs = 0u;
  }
}

/* Writes the lane's staged K codes and scale dword to LDS and its V codes,
 * converted to bf16 with their group scales, to the V tile. */
UQ_DEV void uq_g950_stage_to_lds(const uq_g950_stage &s, uq_u32 *k_s, uq_u32 *ks_s, uq_u32 *v_s,
                                 int lane) {
  const int tok = uq_g950_stage_token(lane);
  const int ch = uq_g950_stage_chunk(lane);
#pragma unroll
  for (int w = 0; w < 8; ++w)
    k_s[tok * 32 + 8 * ch + w] = s.k[w];
  if ((ch & 1) == 0) /* chunks 0 and 2 hold scale dwords 0 and 1 */
    ks_s[tok * 2 + (ch >> 1)] = s.ks;
  /* V code byte n of the chunk: head dims 64 ch + 2 n, +1, group
   * 2 ch + (n >> 4), scale byte 2 (ch & 1) + (n >> 4) of the dword. The
   * convert uses only the fp32 exponent field: the byte itself. */
  const float sc0 = uq_bits_f32(((s.vs >> (16 * (ch & 1))) & 0xffu) << 23);
  const float sc1 = uq_bits_f32(((s.vs >> (16 * (ch & 1) + 8)) & 0xffu) << 23);
  uq_u32 *vrow = v_s + tok * (UQ_G950_VROW / 2) + 32 * ch;
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    const float sc = w < 4 ? sc0 : sc1;
    vrow[4 * w + 0] = uq_g950_cvt_fp4x2_bf16(s.v[w], sc, 0);
    vrow[4 * w + 1] = uq_g950_cvt_fp4x2_bf16(s.v[w], sc, 1);
    vrow[4 * w + 2] = uq_g950_cvt_fp4x2_bf16(s.v[w], sc, 2);
    vrow[4 * w + 3] = uq_g950_cvt_fp4x2_bf16(s.v[w], sc, 3);
  }
}

/* The query, hoisted: row r's 256 dims in runs of 32, run c held by lane
 * 8 (r % 8) + c in pass r / 8 (gfx950_maps.hip). Fused: the caller's query
 * rotated in registers with the shared fp32 steps (butterflies of stride
 * 1..16 in the lane, 32/64/128 with the lane whose run differs by XOR
 * 1/2/4, then one multiply by UQ_FWHT_NORM: the bits of uq_fwht_shared).
 * Else the prologue's q_rot, already rotated and haircut. Converted to
 * E4M3 (clamped to +-448: the haircut's saturation) and stored permuted
 * (uq_g950_qperm) as QG rows of 256 bytes. */
UQ_DEV void uq_g950_query_to_lds(const uq_decode_params &p, int b, int kh, int lane,
                                 uq_u32 *q_s) {
#pragma unroll
  for (int pass = 0; pass < UQ_G950_ROT_PASSES; ++pass) {
    const int r = uq_g950_rot_row(lane, pass);
    const int run = uq_g950_rot_run(lane);
    const bool live = r < UQ_QG;
    float x[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int d = 32 * run + j;
      float v = 0.0f;
      if (live) {
        if (UQ_FUSE_QROT) {
          const uq_i64 e = (uq_i64)b * UQ_Q_STRIDE_SEQ + (uq_i64)(kh * UQ_QG + r) * UQ_Q_STRIDE_HEAD + d;
          v = uq_load_elem(p.query, UQ_DTYPE, e);
        } else {
          const uq_i64 e = ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + kh * UQ_QG + r) * UQ_HEAD_DIM + d;
          v = ((const float *)p.query)[e];
        }
      }
      x[j] = v;
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
        const int mask = uq_g950_rot_xor(s);
        const bool upper = (run & mask) != 0;
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          const float other = uq_g950_swizzle_xor_f32(x[j], mask);
          /* lower run: mine + partner's; upper run: partner's - mine */
          x[j] = upper ? uq_fsub_rn(other, x[j]) : uq_fadd_rn(x[j], other);
        }
      }
#pragma unroll
      for (int j = 0; j < 32; ++j)
        x[j] = uq_fmul_rn(x[j], UQ_FWHT_NORM);
    }
    if (live) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        float c[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float v = x[4 * k + e];
          c[e] = v > 448.0f ? 448.0f : (v < -448.0f ? -448.0f : v);
        }
        const uq_u32 word = uq_g950_cvt_fp8x2(c[0], c[1]) | (uq_g950_cvt_fp8x2(c[2], c[3]) << 16);
        /* four consecutive dims stay consecutive under the permutation */
        q_s[(r * 256 + uq_g950_qperm(32 * run + 4 * k)) >> 2] = word;
      }
    }
  }
}

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_BLOCK_THREADS) void UQ_KERNEL_NAME(uq_decode_params p) {
  UQ_SHARED uq_u32 q_s[UQ_QG * 64];
  UQ_SHARED uq_u32 k_s[UQ_G950_TILE * 32];
  UQ_SHARED uq_u32 ks_s[UQ_G950_TILE * 2];
  UQ_SHARED uq_u32 v_s[UQ_G950_TILE * UQ_G950_VROW / 2];

  uq_grid_dependents(); /* the reduce may be scheduled */
  const int lane = uq_tid();
  const int b = uq_bid_x();
  const int kh = uq_bid_y();
  const int part = uq_bid_z();
  if (b >= p.batch)
    return;
  const long long seq_len = uq_seq_len(p, b);
  const uq_u32 trips = uq_tile_group_trips(part, (uq_u32)seq_len);
  const uq_i64 row0 = uq_partition_row0(b, kh, part);
  if (trips == 0u) {
    uq_write_empty_partition(p, row0, lane); /* uniform per block */
    return;
  }
  const int *bt_row = p.block_table + (uq_i64)b * UQ_MAX_BLOCKS;

  /* The first tile's loads go out before the query work. */
  uq_g950_stage st;
  uq_g950_load_stage(st, p, bt_row, kh, (long long)part * 256, seq_len, lane);

  uq_g950_query_to_lds(p, b, kh, lane, q_s);
  uq_barrier();
  /* B operands of the two QK MFMAs: lane 16 g + j holds bytes
   * [128 h + 32 g, +32) of permuted query row j; padding columns are 0. */
  const int g = lane >> 4;
  const int col = uq_g950_qk_b_query(lane);
  uq_g950_fp8x32 qb[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int k = 0; k < 8; ++k)
      qb[h][k] = col < UQ_QG ? q_s[(col * 256 + uq_g950_qk_b_byte(lane, h)) / 4 + k] : 0u;

  uq_g950_f32x4 acc[16];
#pragma unroll
  for (int m = 0; m < 16; ++m)
    acc[m] = uq_g950_f32x4_zero();
  float m_run = uq_neg_inf(); /* column col's running max and sum */
  float l_run = 0.0f;
  const float ninf = uq_neg_inf();

  const uq_u32 tiles = trips * 16u;
  for (uq_u32 n = 0; n < tiles; ++n) {
    const long long base =
        ((long long)part + (long long)(n >> 4) * UQ_NUM_PARTITIONS) * 256 + (n & 15u) * UQ_G950_TILE;
    if (base >= seq_len)
      break; /* uniform: only the last tile group runs past seq_len */

    uq_barrier(); /* the previous tile's LDS reads are done */
    uq_g950_stage_to_lds(st, k_s, ks_s, v_s, lane);
    /* Depth-1 prefetch: the next tile's loads fly during this tile's math. */
    const uq_u32 n1 = n + 1u;
    const long long base1 =
        n1 < tiles ? ((long long)part + (long long)(n1 >> 4) * UQ_NUM_PARTITIONS) * 256 +
                         (n1 & 15u) * UQ_G950_TILE
                   : seq_len;
    uq_g950_load_stage(st, p, bt_row, kh, base1, seq_len, lane);
    uq_barrier();

    /* QK: A lane 16 g + i = K code bytes [64 h + 16 g, +16) of token i,
     * its scale the K group byte 4 h + g of token i. */
    const int atok = uq_g950_qk_a_token(lane);
    uq_g950_f32x4 s4 = uq_g950_f32x4_zero();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uq_g950_fp4x32 a;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        a[k] = k_s[atok * 32 + uq_g950_qk_a_byte(lane, h) / 4 + k];
      const uq_u32 sa = (ks_s[atok * 2 + h] >> (8 * g)) & 0xffu;
      s4 = uq_g950_mfma_qk(s4, a, sa, qb[h]);
    }

    /* Online softmax for column col over the lane's tokens 4 g + r, in
     * the steps of templates/portable/decode.hip. */
    float sc[4];
    float tmax = ninf;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const long long tok = base + uq_g950_acc_token(lane, r);
      sc[r] = tok < seq_len ? UQ_SCALE * s4[r] : ninf;
      tmax = uq_fmax(tmax, sc[r]);
    }
    tmax = uq_fmax(tmax, uq_g950_wave_xor_f32(tmax, 16));
    tmax = uq_fmax(tmax, uq_g950_wave_xor_f32(tmax, 32));
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
    psum += uq_g950_wave_xor_f32(psum, 16);
    psum += uq_g950_wave_xor_f32(psum, 32);
    m_run = m_new;
    l_run = l_run * alpha + psum;

    /* P in bf16 is PV's B operand as it stands: lane 16 g + j holds
     * tokens 4 g .. 4 g + 3 of column j. */
    uq_g950_bf16x4 pb;
    pb[0] = (uq_u32)uq_f32_to_bf16(pr[0]) | ((uq_u32)uq_f32_to_bf16(pr[1]) << 16);
    pb[1] = (uq_u32)uq_f32_to_bf16(pr[2]) | ((uq_u32)uq_f32_to_bf16(pr[3]) << 16);

    /* PV: per 16 head dims m, A = V transposed, lane 16 g + q supplying
     * the address of token uq_g950_vtr_token, dims uq_g950_vtr_dim. */
    const uq_u16 *vtr = (const uq_u16 *)v_s + uq_g950_vtr_token(lane) * UQ_G950_VROW;
#pragma unroll
    for (int m = 0; m < 16; ++m) {
#pragma unroll
      for (int r = 0; r < 4; ++r)
        acc[m][r] = acc[m][r] * alpha;
      const uq_g950_bf16x4 va = uq_g950_lds_read_tr16(vtr + uq_g950_vtr_dim(lane, m));
      acc[m] = uq_g950_mfma_pv(acc[m], va, pb);
    }
  }

  /* Partition output: bf16(acc / l); lane L holds dims
   * 16 m + 4 (L >> 4) + r of column L & 15. */
  if (col < UQ_QG) {
    uq_u32 *out = (uq_u32 *)((uq_u16 *)p.segm_out + (row0 + col) * UQ_HEAD_DIM);
#pragma unroll
    for (int m = 0; m < 16; ++m) {
      uq_u32 w[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const float o0 = l_run > 0.0f ? acc[m][2 * k] / l_run : 0.0f;
        const float o1 = l_run > 0.0f ? acc[m][2 * k + 1] / l_run : 0.0f;
        w[k] = (uq_u32)uq_f32_to_bf16(o0) | ((uq_u32)uq_f32_to_bf16(o1) << 16);
      }
      const int d = uq_g950_pv_dim(lane, m, 0);
      out[d / 2] = w[0];
      out[d / 2 + 1] = w[1];
    }
    if (g == 0) {
      p.segm_max[row0 + col] = m_run;
      p.segm_sum[row0 + col] = l_run;
    }
  }
}
