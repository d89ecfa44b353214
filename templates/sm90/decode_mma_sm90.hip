/* The decode kernel on NVIDIA sm_90 with the matrix units (variant
 * MATRIX). Same contract as decode.hip: grid (B, Hk, P), one block owns
 * (sequence b, kv head kh, partition part) and all UQ_QG query heads of
 * that kv head, walks the strided tile-group schedule (FORMAT.md section
 * 6), and writes the partition's bf16 output normalised by its own sum,
 * with its max (natural-log units of the scaled logits) and sum. Same
 * numerics: the query rotated and haircut to E4M3 with the shared fp32
 * steps (or read from the prologue's q_rot), K and V dequantized exactly,
 * P rounded to bf16 for PV, fp32 accumulation.
 *
 * Four warps. Tokens go in chunks of 32 (8 per 256-token tile group),
 * copied raw (272 bytes a slot) into shared memory with cp.async
 * (sm90_chunks.hip, shared with the warpgroup layer), double
 * buffered: chunk k + 2 is copied while chunk k + 1 waits and chunk k is
 * computed; two barriers a chunk.
 *  - QK: warp w scores tokens 8w..8w+7 of the chunk for the 16 query rows
 *    (rows >= UQ_QG are zero) with two m16n8k16 f16 mma per 32-dim group
 *    (E4M3 query values and FP4 values are exact in f16: the same products
 *    as an e4m3 mma, which sm_90 would itself run as f16 mma after
 *    converting both operands); the group's K scale multiplies the fp32
 *    result per token. K codes become f16 times 2^-14 in registers with
 *    shifts and masks (mma_sm90_maps.hip; the 2^14 joins the softmax
 *    scale); the haircut query is converted once per block to f16 in
 *    shared memory, permuted to match.
 *  - Online softmax over the chunk: row maxima and sums meet in shared
 *    memory; every thread keeps the running max and sum of its two rows.
 *  - V: each thread dequantizes one token's 64 dims to bf16 with the scale
 *    folded in (exact: shifts and masks give the value times 2^-126, two
 *    bf16 multiplies at most apply 2^126 times the scale) into its warp's
 *    part of shared memory, dims permuted within runs of eight; PV runs
 *    m16n8k16 bf16 mma with P and V fetched by ldmatrix; warp w owns dims
 *    64w..64w+63. */

#ifndef UQ_ROUTE_NVRTC
#error "decode_mma_sm90.hip is the NVIDIA (NVRTC) matrix layer"
#endif

static_assert(UQ_HEAD_DIM == 256, "matrix decode layer: head_dim must be 256");
static_assert(UQ_QG >= 1 && UQ_QG <= 16, "matrix decode layer: query_group_size must be <= 16");
static_assert(UQ_BLOCK_THREADS == 128, "matrix decode layer: four warps");

constexpr int UQ_MMA_CHUNK = 32;                          /* tokens per chunk */
constexpr int UQ_MMA_KSCALE = 128;                        /* slot offsets */
constexpr int UQ_MMA_VCODE = 136;
constexpr int UQ_MMA_VSCALE = 264;
constexpr int UQ_MMA_PROW = UQ_MMA_CHUNK + 8;             /* P row, bf16 (+16 B: no bank conflicts) */
constexpr int UQ_MMA_VROW = UQ_HEAD_DIM + 8;              /* V row, bf16 (+16 B) */
constexpr int UQ_MMA_QROW = UQ_HEAD_DIM + 32;             /* Q row, f16 (+64 B: no bank conflicts) */
/* Blocks per multiprocessor the register budget is sized for (<= 128
 * registers a thread; 5 blocks would spill). Each block keeps one or two
 * chunks (8.7 KB each) in flight while it computes another. */
constexpr int UQ_MMA_MIN_BLOCKS = 4;

struct alignas(16) uq_mma_smem {
  uq_u8 raw[2][UQ_MMA_CHUNK * UQ_SM90_SLOT];
  union {
    float q[UQ_QG * UQ_HEAD_DIM];                 /* the query, before the loop */
    uq_u16 v[UQ_MMA_CHUNK * UQ_MMA_VROW];         /* the chunk's V in bf16 */
  } u;
  uq_u16 qh[16 * UQ_MMA_QROW];                    /* the haircut query in f16 */
  uq_u16 p[16 * UQ_MMA_PROW];
  float4 red_max[16]; /* [row]: the four warps' values */
  float4 red_sum[16];
};
static_assert(sizeof(uq_mma_smem) <= 48 * 1024, "matrix decode layer: static shared memory");


UQ_DEV void uq_mma_qk(float (&d)[4], uq_u32 a0, uq_u32 a1, uq_u32 a2, uq_u32 a3, uq_u32 b0,
                      uq_u32 b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

UQ_DEV void uq_mma_pv(float (&d)[4], const uq_u32 (&a)[4], uq_u32 b0, uq_u32 b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

UQ_DEV void uq_mma_ldm_x4(uq_u32 (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(uq_sm90_saddr(p)));
}
UQ_DEV void uq_mma_ldm_x4_trans(uq_u32 (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(uq_sm90_saddr(p)));
}

UQ_KERNEL __launch_bounds__(UQ_BLOCK_THREADS, UQ_MMA_MIN_BLOCKS) void UQ_KERNEL_NAME(uq_decode_params p) {
  UQ_SHARED uq_mma_smem sm;

  uq_grid_dependents(); /* the reduce may be scheduled */
  const int tid = uq_tid();
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int grp = lane >> 2; /* mma fragment row / column */
  const int tig = lane & 3;
  const int b = uq_bid_x();
  const int kh = uq_bid_y();
  const int part = uq_bid_z();
  if (b >= p.batch)
    return;

  const uq_u32 seq_len = uq_seq_len(p, b);
  const int nch = uq_sm90_chunks<UQ_MMA_CHUNK>(part, seq_len);
  const uq_i64 row0 = uq_partition_row0(b, kh, part);
  uq_u16 *out = (uq_u16 *)p.segm_out;
  if (nch == 0) {
    uq_write_empty_partition(p, row0, tid); /* uniform per block */
    return;
  }

  const int *bt_row = p.block_table + (uq_i64)b * UQ_MAX_BLOCKS;
  auto block_of = [&](int k) {
    return uq_sm90_load_block<UQ_MMA_CHUNK>(bt_row, seq_len, uq_sm90_chunk_base<UQ_MMA_CHUNK>(part, k), tid);
  };
  auto copy_chunk = [&](int k, int blk) {
    uq_sm90_copy_chunk<UQ_MMA_CHUNK>(sm.raw[k & 1], p.kv_cache, kh, seq_len,
                                    uq_sm90_chunk_base<UQ_MMA_CHUNK>(part, k), blk, tid);
  };

  /* Start the first two chunks' copies (one commit group each, empty
   * when there is no such chunk) before the query work. */
  copy_chunk(0, block_of(0));
  uq_sm90_cp_commit();
  if (nch > 1)
    copy_chunk(1, block_of(1));
  uq_sm90_cp_commit();

  /* The query in f16, rows >= UQ_QG zero, each run of eight dims stored
   * in the order of the QK operands (uq_mma_qk_pos): the haircut values
   * (E4M3, hence exact in f16) of the fused rotation or of the prologue's
   * q_rot. */
  if (UQ_FUSE_QROT) {
    float *q_s = sm.u.q;
    for (int k = tid; k < UQ_QG * UQ_HEAD_DIM; k += UQ_BLOCK_THREADS) {
      const int i = k / UQ_HEAD_DIM;
      const int d = k % UQ_HEAD_DIM;
      const uq_i64 e = (uq_i64)b * UQ_Q_STRIDE_SEQ + (uq_i64)(kh * UQ_QG + i) * UQ_Q_STRIDE_HEAD + d;
      q_s[k] = uq_load_elem(p.query, UQ_DTYPE, e);
    }
    uq_fwht_shared(q_s, UQ_QG, UQ_HEAD_DIM, UQ_HEAD_DIM, UQ_HEAD_DIM, 0, UQ_FWHT_NORM, tid,
                   UQ_BLOCK_THREADS);
    for (int k = tid; k < 16 * UQ_HEAD_DIM; k += UQ_BLOCK_THREADS) {
      const int i = k / UQ_HEAD_DIM;
      const int d = k % UQ_HEAD_DIM;
      sm.qh[i * UQ_MMA_QROW + uq_mma_qk_pos(d)] =
          i < UQ_QG ? uq_f32_to_fp16(uq_haircut_e4m3(q_s[k])) : 0;
    }
  } else {
    /* The prologue's q_rot: rotated and haircut already, natural order. */
    const float *q_rot =
        (const float *)p.query + ((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_QG * UQ_HEAD_DIM;
    for (int k = tid; k < 16 * UQ_HEAD_DIM; k += UQ_BLOCK_THREADS) {
      const int i = k / UQ_HEAD_DIM;
      const int d = k % UQ_HEAD_DIM;
      sm.qh[i * UQ_MMA_QROW + uq_mma_qk_pos(d)] = i < UQ_QG ? uq_f32_to_fp16(q_rot[k]) : 0;
    }
  }
  const int r0 = grp, r1 = grp + 8;
  /* The V buffer overlays the fp32 query, read by other warps above. */
  uq_sm90_cp_wait<1>();
  uq_barrier(); /* the query and chunk 0 are in */

  /* Running max and sum of rows r0 and r1 (the same in every thread that
   * holds the row), and the PV accumulators: acc[j] is the m16n8 tile of
   * dims 64 warp + 8 j .. + 7. */
  const float ninf = uq_neg_inf();
  float m_run[2] = {ninf, ninf};
  float l_run[2] = {0.0f, 0.0f};
  float acc[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc[j][e] = 0.0f;

  /* Two barriers a chunk. Chunk k's raw bytes are read only before X(k),
   * so the copy of chunk k + 2 into the same buffer starts right after it;
   * each thread waits for its own copies of chunk k + 1 before Y(k), which
   * publishes them for QK(k + 1). red_max and red_sum of chunk k + 1 are
   * written after Y(k) and X(k + 1), when every warp has read those of
   * chunk k; P likewise. The V buffer is per warp (warp w writes and reads
   * dims 64w..64w+63 only), ordered by __syncwarp. */
#pragma unroll 1
  for (int k = 0; k < nch; ++k) {
    const int blk2 = block_of(k + 2 < nch ? k + 2 : k);
    const uq_u8 *raw = sm.raw[k & 1];
    const uq_u32 base = uq_sm90_chunk_base<UQ_MMA_CHUNK>(part, k);

    /* ---- QK: tokens 8 warp + grp (B operand) and 8 warp + 2 tig + {0,1}
     * (C columns) ---- */
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    {
      const uq_u8 *kslot = raw + (8 * warp + grp) * UQ_SM90_SLOT;
      const int c0 = 8 * warp + 2 * tig;
      const uq_u32 *ks0 = (const uq_u32 *)(raw + c0 * UQ_SM90_SLOT + UQ_MMA_KSCALE);
      const uq_u32 *ks1 = (const uq_u32 *)(raw + (c0 + 1) * UQ_SM90_SLOT + UQ_MMA_KSCALE);
      const uq_u32 sw0[2] = {ks0[0], ks0[1]};
      const uq_u32 sw1[2] = {ks1[0], ks1[1]};
      uq_u32 kw[8];
#pragma unroll
      for (int g = 0; g < 8; ++g)
        kw[g] = *(const uq_u32 *)(kslot + uq_mma_k_word_offset(g, tig));
      /* Eight f16 of rows r0 and r1 per group, in operand order: the A
       * registers of both steps. */
      const uq_u16 *q0 = sm.qh + r0 * UQ_MMA_QROW + uq_mma_qk_pos(uq_mma_qk_dim(0, tig, 0, 0, 0));
      const uq_u16 *q1 = sm.qh + r1 * UQ_MMA_QROW + uq_mma_qk_pos(uq_mma_qk_dim(0, tig, 0, 0, 0));
#pragma unroll
      for (int g = 0; g < 8; ++g) {
        const uint4 x0 = *(const uint4 *)(q0 + 32 * g);
        const uint4 x1 = *(const uint4 *)(q1 + 32 * g);
        uq_u32 kb[4];
        uq_mma_fp4x8_f16s(kw[g], kb);
        float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        uq_mma_qk(c, x0.x, x1.x, x0.y, x1.y, kb[0], kb[1]);
        uq_mma_qk(c, x0.z, x1.z, x0.w, x1.w, kb[2], kb[3]);
        const float sa =
            uq_bits_f32(uq_mma_f32_scale_bits((sw0[g >> 2] >> (8 * (g & 3))) & 0xffu));
        const float sb =
            uq_bits_f32(uq_mma_f32_scale_bits((sw1[g >> 2] >> (8 * (g & 3))) & 0xffu));
        s[0] += sa * c[0];
        s[1] += sb * c[1];
        s[2] += sa * c[2];
        s[3] += sb * c[3];
      }
      /* The sums are the scores times 2^-14 (uq_mma_fp4x8_f16s): the
       * product of the two constants is exact, and so is the result. */
      constexpr float kscale = UQ_SCALE * UQ_MMA_K_UNSCALE;
      const bool va = base + c0 < seq_len;
      const bool vb = base + c0 + 1 < seq_len;
      s[0] = va ? kscale * s[0] : ninf;
      s[2] = va ? kscale * s[2] : ninf;
      s[1] = vb ? kscale * s[1] : ninf;
      s[3] = vb ? kscale * s[3] : ninf;
    }
    {
      float mx0 = uq_fmax(s[0], s[1]);
      float mx1 = uq_fmax(s[2], s[3]);
#pragma unroll
      for (int mask = 1; mask <= 2; mask *= 2) {
        mx0 = uq_fmax(mx0, uq_lane_xor_f32(mx0, mask));
        mx1 = uq_fmax(mx1, uq_lane_xor_f32(mx1, mask));
      }
      if (tig == 0) {
        ((float *)&sm.red_max[r0])[warp] = mx0;
        ((float *)&sm.red_max[r1])[warp] = mx1;
      }
    }

    /* ---- V: token `lane`, dims 64 warp .. + 63, scale folded in; each
     * run of eight dims stored in the order uq_mma_v_dim gives ---- */
    {
      const uq_u8 *vslot = raw + lane * UQ_SM90_SLOT;
      const uq_u32 *vc = (const uq_u32 *)(vslot + UQ_MMA_VCODE + 32 * warp);
      const uq_u32 vs = *(const uq_u16 *)(vslot + UQ_MMA_VSCALE + 2 * warp);
      /* All code words first: the stores below may not be reordered above
       * loads the compiler cannot tell apart from them. */
      uint2 w2[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        w2[i] = *(const uint2 *)(vc + 2 * i);
      const uq_u32 vb0 = vs & 0xffu, vb1 = vs >> 8;
      const uq_u32 slo[2] = {uq_mma_bf16_vscale_lo(vb0), uq_mma_bf16_vscale_lo(vb1)};
      const uq_u32 shi[2] = {uq_mma_bf16_vscale_hi(vb0), uq_mma_bf16_vscale_hi(vb1)};
      /* Scale bytes over 128 (V groups past 12 in magnitude) need the
       * second factor; a multiply by 1 changes nothing in other lanes. */
      const bool big = __any_sync(0xffffffffu, vb0 > 128u || vb1 > 128u);
      uq_u16 *vrow = sm.u.v + lane * UQ_MMA_VROW + 64 * warp;
      __syncwarp(); /* this warp's PV of chunk k - 1 has read the buffer */
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        uq_u32 r[4];
        uq_mma_fp4x8_bf16s((i & 1) ? w2[i >> 1].y : w2[i >> 1].x, r);
        const uq_u32 lo = slo[i >> 2];
        uint4 o;
        o.x = uq_sm90_bf16x2_mul(r[0], lo);
        o.y = uq_sm90_bf16x2_mul(r[1], lo);
        o.z = uq_sm90_bf16x2_mul(r[2], lo);
        o.w = uq_sm90_bf16x2_mul(r[3], lo);
        if (big) {
          const uq_u32 hi = shi[i >> 2];
          o.x = uq_sm90_bf16x2_mul(o.x, hi);
          o.y = uq_sm90_bf16x2_mul(o.y, hi);
          o.z = uq_sm90_bf16x2_mul(o.z, hi);
          o.w = uq_sm90_bf16x2_mul(o.w, hi);
        }
        *(uint4 *)(vrow + 8 * i) = o;
      }
    }
    uq_barrier(); /* X: row maxima are in; chunk k's raw bytes are consumed */

    if (k + 2 < nch)
      copy_chunk(k + 2, blk2);
    uq_sm90_cp_commit();

    /* ---- online softmax of the chunk ---- */
    float alpha[2];
    {
      float mn[2];
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int r = rr ? r1 : r0;
        const float4 rm = sm.red_max[r];
        const float m = uq_fmax(uq_fmax(uq_fmax(m_run[rr], rm.x), rm.y), uq_fmax(rm.z, rm.w));
        mn[rr] = m;
        alpha[rr] = 1.0f;
        if (m != ninf)
          alpha[rr] = m_run[rr] == ninf ? 0.0f : uq_exp2((m_run[rr] - m) * UQ_LOG2E);
        m_run[rr] = m;
      }
      float pr[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        pr[e] = s[e] == ninf ? 0.0f : uq_exp2((s[e] - mn[e >> 1]) * UQ_LOG2E);
      /* The sum keeps the unrounded fp32 p; PV takes p in bf16. */
      const int c0 = 8 * warp + 2 * tig;
      *(uq_u32 *)(sm.p + r0 * UQ_MMA_PROW + c0) =
          (uq_u32)uq_f32_to_bf16(pr[0]) | ((uq_u32)uq_f32_to_bf16(pr[1]) << 16);
      *(uq_u32 *)(sm.p + r1 * UQ_MMA_PROW + c0) =
          (uq_u32)uq_f32_to_bf16(pr[2]) | ((uq_u32)uq_f32_to_bf16(pr[3]) << 16);
      float ps0 = pr[0] + pr[1];
      float ps1 = pr[2] + pr[3];
#pragma unroll
      for (int mask = 1; mask <= 2; mask *= 2) {
        ps0 += uq_lane_xor_f32(ps0, mask);
        ps1 += uq_lane_xor_f32(ps1, mask);
      }
      if (tig == 0) {
        ((float *)&sm.red_sum[r0])[warp] = ps0;
        ((float *)&sm.red_sum[r1])[warp] = ps1;
      }
    }
    uq_sm90_cp_wait<1>(); /* this thread's copies of chunk k + 1 are in */
    uq_barrier();      /* Y: P, the row sums and chunk k + 1 are in */

#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int r = rr ? r1 : r0;
      const float4 rs = sm.red_sum[r];
      const float sum = rs.x + rs.y + rs.z + rs.w;
      l_run[rr] = l_run[rr] * alpha[rr] + sum;
    }
    /* Once the row maxima settle, alpha is 1 in every lane: skipping the
     * multiply by 1 changes no bit. */
    if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        acc[j][0] *= alpha[0];
        acc[j][1] *= alpha[0];
        acc[j][2] *= alpha[1];
        acc[j][3] *= alpha[1];
      }
    }

    /* ---- PV: dims 64 warp .. + 63, two k16 steps of 16 tokens ---- */
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      uq_u32 pa[4];
      uq_mma_ldm_x4(pa, sm.p + uq_mma_ldm_p_row(lane) * UQ_MMA_PROW + 16 * ks +
                            uq_mma_ldm_p_col(lane));
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        uq_u32 vb[4];
        uq_mma_ldm_x4_trans(vb, sm.u.v + (16 * ks + uq_mma_ldm_v_tok(lane)) * UQ_MMA_VROW +
                                    64 * warp + 16 * jj + uq_mma_ldm_v_dim(lane));
        uq_mma_pv(acc[2 * jj], pa, vb[0], vb[1]);
        uq_mma_pv(acc[2 * jj + 1], pa, vb[2], vb[3]);
      }
    }
  }
  uq_sm90_cp_wait<0>();

  /* Partition output: bf16(acc / l). */
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int r = rr ? r1 : r0;
    if (r >= UQ_QG)
      continue;
    const float l = l_run[rr];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float o0 = l > 0.0f ? acc[j][2 * rr] / l : 0.0f;
      const float o1 = l > 0.0f ? acc[j][2 * rr + 1] / l : 0.0f;
      /* Columns 2 tig and 2 tig + 1 of the tile: V positions, so the
       * dims uq_mma_v_dim gives. */
      uq_u16 *o = out + (row0 + r) * UQ_HEAD_DIM + 64 * warp + 8 * j;
      o[uq_mma_v_dim(2 * tig)] = uq_f32_to_bf16(o0);
      o[uq_mma_v_dim(2 * tig + 1)] = uq_f32_to_bf16(o1);
    }
    if (warp == 0 && tig == 0) {
      p.segm_max[row0 + r] = m_run[rr];
      p.segm_sum[row0 + r] = l_run[rr];
    }
  }
}
