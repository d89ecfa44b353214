/* The gfx950 (MI355X) decode layer, after the production design of
 * docs/KERNELS.md ("gfx950"): one wave64 per workgroup owns (sequence b,
 * kv head kh, partition part) and all UQ_QG query heads (padded to 16
 * MFMA columns; columns >= UQ_QG hold zero queries and are never
 * written). Per 16-token tile: two scaled FP4 x E4M3 MFMAs for QK (K codes
 * with their UE8M0 bytes as A's scales; the query, rotated and converted
 * to E4M3 once per workgroup and kept in LDS, as B operands), the online
 * softmax in fp32, V converted to bf16 in LDS by the
 * hardware FP4 convert, and 16 bf16 MFMAs for PV with V read transposed.
 * Every CDNA operation goes through the uq_g950_* and uq_cdna_*
 * primitives, so this text compiles for gfx950 (cdna_prims_amd.hip,
 * gfx950_prims_amd.hip) and for NVIDIA sm_90 with each instruction
 * emulated (cdna_prims_emu.hip, gfx950_prims_emu.hip). Which lane holds
 * what: gfx950_maps.hip. */

static_assert(UQ_BLOCK_THREADS == 64, "the gfx950 layer runs one wave64 per workgroup");
static_assert(UQ_HEAD_DIM == 256, "the gfx950 layer serves head_dim 256");
static_assert(UQ_QG >= 1 && UQ_QG <= 16, "the gfx950 layer serves query groups of 1..16");

constexpr int UQ_G950_TILE = 16;         /* tokens per tile */
constexpr int UQ_G950_ROT_PASSES = (UQ_QG + 7) / 8; /* 8 query rows per pass */

/* LDS (gfx950_maps.hip): 12544 bytes at QG 16, 10496 at 8, 9984 at 6.
 * Below 160 KiB / 13 = 12603 bytes four waves a SIMD stay possible, so the
 * backend schedules for 128 VGPRs. */
constexpr int UQ_G950_VROW = UQ_G950_LDS_VROW;
constexpr int UQ_G950_REGION = UQ_G950_LDS_TILE;
constexpr int UQ_G950_KS_OFF = UQ_G950_LDS_KSCALES;
constexpr int UQ_G950_LDS = UQ_G950_LDS_BYTES(UQ_QG);
static_assert(UQ_G950_KS_OFF + UQ_G950_LDS_KSCALES_BYTES <= UQ_G950_REGION,
              "gfx950 layer: K tile too large");
static_assert(UQ_G950_LDS <= 64 + UQ_QG * 512 + 8448 + 512,
              "gfx950 layer: LDS over the production layout's budget");

/* One lane's share of a tile's cache bytes (gfx950_maps.hip, staging
 * loads): token lane >> 2, chunk lane & 3: 32 code bytes and the scale
 * dword holding the chunk's two group bytes, of K or of V. */
struct uq_g950_stage {
  uq_u32 c[8];
  uq_u32 s;
};

/* The lane's slot for the tile starting at token `base`, or null for a
 * token at or past seq_len: such tokens touch neither their block-table
 * entry nor their slot. Token indices fit 32 bits (the host refuses
 * windows past INT32_MAX); the slot offset is 64-bit. */
UQ_DEV const uq_u8 *uq_g950_slot(const uq_decode_params &p, const int *bt_row, int kh,
                                 uq_u32 base, uq_u32 seq_len, int lane) {
  const uq_u32 t = base + (uq_u32)uq_g950_stage_token(lane);
  if (t >= seq_len)
    return nullptr;
  const int blk = bt_row[t / UQ_BLOCK_SIZE];
  const uq_i64 row = (uq_i64)blk * UQ_BLOCK_SIZE + (t % UQ_BLOCK_SIZE);
  return p.kv_cache + uq_slot_offset(row, kh);
}

/* Loads the lane's K (v = 0) or V (v = 1) share of the tile at `base`.
 * 32-bit loads: slots are only 4-byte aligned (padded_slot % 4 == 0; the V
 * codes sit at +136); the AMD backend merges them into 16-byte loads.
 * Masked tokens get codes and scales 0, so their V converts to exact
 * zeros: stale bytes (scale byte 255 included) never meet a zero P as
 * 0 x inf. */
UQ_DEV void uq_g950_load_stage(uq_g950_stage &st, const uq_decode_params &p, const int *bt_row,
                               int kh, uq_u32 base, uq_u32 seq_len, int lane, int v) {
  const uq_u8 *slot = uq_g950_slot(p, bt_row, kh, base, seq_len, lane);
  if (slot != nullptr) {
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const uq_u32 *w = (const uq_u32 *)(slot + uq_g950_stage_code_byte(lane, v, part));
#pragma unroll
      for (int i = 0; i < 4; ++i)
        st.c[4 * part + i] = w[i];
    }
    st.s = *(const uq_u32 *)(slot + uq_g950_stage_scale_byte(lane, v));
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      st.c[i] = 0u;
    st.s = 0u;
  }
}

/* The lane's K codes to the K tile (row = token, 128 code bytes) and, from
 * chunks 0 and 2, scale dwords 0 and 1 of its token. */
UQ_DEV void uq_g950_k_to_lds(const uq_g950_stage &st, uq_u32 *region, int lane) {
  const int tok = uq_g950_stage_token(lane);
  const int ch = uq_g950_stage_chunk(lane);
#pragma unroll
  for (int w = 0; w < 8; ++w)
    region[tok * 32 + 8 * ch + w] = st.c[w];
  if ((ch & 1) == 0)
    region[UQ_G950_KS_OFF / 4 + tok * 2 + (ch >> 1)] = st.s;
}

/* The lane's V codes, converted to bf16 with their group scales, to the V
 * tile. Code byte n of chunk ch: head dims 64 ch + 2 n, +1, group
 * 2 ch + (n >> 4), scale byte 2 (ch & 1) + (n >> 4) of the dword. The
 * convert uses only the fp32 exponent field of its scale: the byte. */
UQ_DEV void uq_g950_v_to_lds(const uq_g950_stage &st, uq_u32 *region, int lane) {
  const int tok = uq_g950_stage_token(lane);
  const int ch = uq_g950_stage_chunk(lane);
  const float sc0 = uq_bits_f32(((st.s >> (16 * (ch & 1))) & 0xffu) << 23);
  const float sc1 = uq_bits_f32(((st.s >> (16 * (ch & 1) + 8)) & 0xffu) << 23);
  uq_u32 *vrow = region + tok * (UQ_G950_VROW / 2) + 32 * ch;
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    const float sc = w < 4 ? sc0 : sc1;
    vrow[4 * w + 0] = uq_g950_cvt_fp4x2_bf16(st.c[w], sc, 0);
    vrow[4 * w + 1] = uq_g950_cvt_fp4x2_bf16(st.c[w], sc, 1);
    vrow[4 * w + 2] = uq_g950_cvt_fp4x2_bf16(st.c[w], sc, 2);
    vrow[4 * w + 3] = uq_g950_cvt_fp4x2_bf16(st.c[w], sc, 3);
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
        const int mask = uq_g950_rot_xor(s);
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
    /* Every lane converts (primitives are called by the whole wave);
     * only rows below UQ_QG are stored. */
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
      if (live)
        q_s[(r * 256 + uq_g950_qperm(32 * run + 4 * k)) >> 2] = word;
    }
  }
}

/* Route-specific kernel attributes (prims_amd: the register budget). */
#ifndef UQ_G950_KERNEL_ATTRS
#define UQ_G950_KERNEL_ATTRS
#endif

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_BLOCK_THREADS) UQ_G950_KERNEL_ATTRS void UQ_KERNEL_NAME(uq_decode_params p) {
  UQ_SHARED uq_u32 q_s[UQ_QG * UQ_G950_LDS_QROW / 4];
  UQ_SHARED uq_u32 region[UQ_G950_REGION / 4];
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

  uq_g950_query_to_lds(p, b, kh, lane, q_s);

  const int g = lane >> 4;
  const int col = uq_g950_qk_b_query(lane);

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
                        (n & 15u) * (uq_u32)UQ_G950_TILE;
    if (base >= seq_len)
      break; /* uniform: only the last tile group runs past seq_len */

    uq_barrier(); /* the previous tile's V reads (or the query's writes) are done */
    /* The tile's V loads go out first and fly during the K staging, QK
     * and the softmax. A depth-1 prefetch of the next tile's codes in
     * registers (18 VGPRs) does not fit beside the 64 accumulator VGPRs
     * within 128: clang 22 spills 40 to 250 VGPRs to scratch with it, even
     * with only the next slot address prefetched. */
    uq_g950_stage vst;
    uq_g950_load_stage(vst, p, bt_row, kh, base, seq_len, lane, 1);
    uq_g950_stage kst;
    uq_g950_load_stage(kst, p, bt_row, kh, base, seq_len, lane, 0);
    uq_g950_k_to_lds(kst, region, lane);
    uq_barrier();

    /* QK: A lane 16 g + i = K code bytes [64 h + 16 g, +16) of token i,
     * its scale the K group byte 4 h + g of token i. */
    const int atok = uq_g950_qk_a_token(lane);
    uq_cdna_f32x4 s4 = uq_cdna_f32x4_zero();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uq_g950_fp4x32 a;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        a[k] = region[atok * 32 + uq_g950_qk_a_byte(lane, h) / 4 + k];
      const uq_u32 sa = (region[UQ_G950_KS_OFF / 4 + atok * 2 + h] >> (8 * g)) & 0xffu;
      /* B: lane 16 g + j holds bytes [128 h + 32 g, +32) of permuted
       * query row j; padding columns are zero queries. */
      uq_g950_fp8x32 qb;
#pragma unroll
      for (int k = 0; k < 8; ++k)
        qb[k] = col < UQ_QG ? q_s[(col * 256 + uq_g950_qk_b_byte(lane, h)) / 4 + k] : 0u;
      s4 = uq_g950_mfma_qk(s4, a, sa, qb);
    }

    /* Online softmax for column col over the lane's tokens 4 g + r, in
     * the steps of templates/portable/decode.hip. */
    float sc[4];
    float tmax = ninf;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uq_u32 tok = base + (uq_u32)uq_g950_acc_token(lane, r);
      sc[r] = tok < seq_len ? UQ_SCALE * s4[r] : ninf;
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

    /* V to LDS once every lane has read its K operands. */
    uq_barrier();
    uq_g950_v_to_lds(vst, region, lane);
    uq_barrier();

    /* PV: per 16 head dims m, A = V transposed, lane 16 g + q supplying
     * the address of token uq_g950_vtr_token, dims uq_g950_vtr_dim. */
    const uq_u16 *vtr = (const uq_u16 *)region + uq_g950_vtr_token(lane) * UQ_G950_VROW;
#pragma unroll
    for (int m = 0; m < 16; ++m) {
#pragma unroll
      for (int r = 0; r < 4; ++r)
        acc[m][r] = acc[m][r] * alpha;
      const uq_cdna_bf16x4 va = uq_g950_lds_read_tr16(vtr + uq_g950_vtr_dim(lane, m));
      acc[m] = uq_cdna_mfma_bf16(acc[m], va, pb);
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
