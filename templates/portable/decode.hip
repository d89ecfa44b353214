/* The decode core: one block owns (sequence b, kv head kh, partition p) and
 * all UQ_QG query heads h = kh * UQ_QG + i of that kv head. It walks its
 * share of the strided tile-group schedule (FORMAT.md section 6) in tiles
 * of 16 tokens, runs the online softmax (FA2) and writes the partition's
 * normalised bf16 output with its max and sum (the reduce kernel merges
 * partitions). The target layer (uq_layer_*) supplies the tile math. */

constexpr int UQ_TILES_PER_GROUP = 16; /* 256 tokens per tile group */
/* Static shared memory: NVIDIA caps it at 48 KiB. Within the policy's
 * shapes (D = 256, QG <= 16) it stays under 35 KiB; only D = 512 with
 * QG >= 13 exceeds it. */
constexpr int UQ_DECODE_SMEM = (int)(sizeof(float) * UQ_QG * (UQ_QROW + UQ_TILE + 3) +
                                     sizeof(float) * UQ_KGRP * UQ_QG * UQ_TILE +
                                     2 * UQ_TILE * UQ_VROW);
#ifdef UQ_ROUTE_NVRTC
static_assert(UQ_DECODE_SMEM <= 48 * 1024,
              "decode: static shared memory over 48 KiB (head_dim 512 needs query_group_size <= 12)");
#endif
constexpr int UQ_SOFTMAX_ITERS = (UQ_QG * UQ_TILE + UQ_BLOCK_THREADS - 1) / UQ_BLOCK_THREADS;

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_BLOCK_THREADS) void UQ_KERNEL_NAME(uq_decode_params p) {
  UQ_SHARED float q_s[UQ_QG * UQ_QROW];
  UQ_SHARED uq_layer_smem sm;
  UQ_SHARED float p_s[UQ_QG * UQ_TILE];
  UQ_SHARED float m_s[UQ_QG];
  UQ_SHARED float l_s[UQ_QG];
  UQ_SHARED float alpha_s[UQ_QG];

  uq_grid_dependents(); /* the reduce may be scheduled */
  const int tid = uq_tid();
  const int b = uq_bid_x();
  const int kh = uq_bid_y();
  const int part = uq_bid_z();
  if (b >= p.batch)
    return;
  const long long seq_len = uq_seq_len(p, b);
  const uq_u32 trips = uq_tile_group_trips(part, (uq_u32)seq_len);
  const uq_i64 row0 = uq_partition_row0(b, kh, part);
  if (trips == 0u) {
    uq_write_empty_partition(p, row0, tid); /* uniform per block */
    return;
  }

  /* The query: rotated and haircut here, or read from the prologue's
   * workspace; either way the same fp32 bits. */
  if (UQ_FUSE_QROT) {
    for (int k = tid; k < UQ_QG * UQ_HEAD_DIM; k += UQ_BLOCK_THREADS) {
      const int i = k / UQ_HEAD_DIM;
      const int d = k % UQ_HEAD_DIM;
      const uq_i64 e = (uq_i64)b * UQ_Q_STRIDE_SEQ + (uq_i64)(kh * UQ_QG + i) * UQ_Q_STRIDE_HEAD + d;
      q_s[uq_q_index(i, d)] = uq_load_elem(p.query, UQ_DTYPE, e);
    }
    uq_fwht_shared(q_s, UQ_QG, UQ_HEAD_DIM, UQ_QROW, UQ_KDPT, UQ_QPAD, UQ_FWHT_NORM,
                   tid, UQ_BLOCK_THREADS);
    for (int k = tid; k < UQ_QG * UQ_HEAD_DIM; k += UQ_BLOCK_THREADS) {
      const int idx = uq_q_index(k / UQ_HEAD_DIM, k % UQ_HEAD_DIM);
      q_s[idx] = uq_haircut_e4m3(q_s[idx]);
    }
  } else {
    const float *q_rot = (const float *)p.query;
    for (int k = tid; k < UQ_QG * UQ_HEAD_DIM; k += UQ_BLOCK_THREADS) {
      const int i = k / UQ_HEAD_DIM;
      const int d = k % UQ_HEAD_DIM;
      const uq_i64 e = ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + kh * UQ_QG + i) * UQ_HEAD_DIM + d;
      q_s[uq_q_index(i, d)] = q_rot[e];
    }
  }
  if (tid < UQ_QG) {
    m_s[tid] = uq_neg_inf();
    l_s[tid] = 0.0f;
  }
  uq_barrier();

  float acc[UQ_PV_HPT][UQ_PV_DPT];
#pragma unroll
  for (int j = 0; j < UQ_PV_HPT; ++j)
#pragma unroll
    for (int k = 0; k < UQ_PV_DPT; ++k)
      acc[j][k] = 0.0f;

  const int *bt_row = p.block_table + (uq_i64)b * UQ_MAX_BLOCKS;
  const int ktok = tid / UQ_KGRP;
  for (uq_u32 trip = 0; trip < trips; ++trip) {
    const long long tg = part + trip * UQ_NUM_PARTITIONS;
    for (int tile = 0; tile < UQ_TILES_PER_GROUP; ++tile) {
      const long long base = tg * 256 + tile * UQ_TILE;
      if (base >= seq_len)
        break; /* uniform across the block */

      /* Tokens past seq_len never touch their block-table entry or slot. */
      const long long t = base + ktok;
      const uq_u8 *slot = nullptr;
      if (tid < UQ_TILE * UQ_KGRP && t < seq_len) {
        const int blk = bt_row[t / UQ_BLOCK_SIZE];
        const uq_i64 row = (uq_i64)blk * UQ_BLOCK_SIZE + (t % UQ_BLOCK_SIZE);
        slot = p.kv_cache + uq_slot_offset(row, kh);
      }
      uq_layer_load_tile(&sm, q_s, slot, tid);
      uq_barrier();

      /* Online softmax: 16 lanes per query head, reduced with lane
       * exchanges (every lane takes part; idle lanes carry -inf). */
#pragma unroll
      for (int it = 0; it < UQ_SOFTMAX_ITERS; ++it) {
        const int idx = it * UQ_BLOCK_THREADS + tid;
        const bool valid = idx < UQ_QG * UQ_TILE;
        const int i = valid ? idx / UQ_TILE : 0;
        const int tok = idx % UQ_TILE;
        float s = uq_neg_inf();
        float m_old = uq_neg_inf();
        if (valid) {
          m_old = m_s[i];
          if (base + tok < seq_len)
            s = UQ_SCALE * uq_layer_score(&sm, i, tok);
        }
        float tmax = s;
        for (int mask = UQ_TILE / 2; mask >= 1; mask /= 2)
          tmax = uq_fmax(tmax, uq_lane_xor_f32(tmax, mask));
        const float m_new = uq_fmax(m_old, tmax);
        const float ninf = uq_neg_inf();
        const float pr = s == ninf ? 0.0f : uq_exp2((s - m_new) * UQ_LOG2E);
        float alpha = 1.0f;
        if (m_new != ninf)
          alpha = m_old == ninf ? 0.0f : uq_exp2((m_old - m_new) * UQ_LOG2E);
        float psum = pr;
        for (int mask = UQ_TILE / 2; mask >= 1; mask /= 2)
          psum += uq_lane_xor_f32(psum, mask);
        if (valid) {
          /* The sum keeps the unrounded fp32 p; PV takes p in bf16. */
          p_s[i * UQ_TILE + tok] = uq_round_bf16(pr);
          if (tok == 0) {
            m_s[i] = m_new;
            l_s[i] = l_s[i] * alpha + psum;
            alpha_s[i] = alpha;
          }
        }
      }
      uq_barrier();
      uq_layer_pv(&sm, p_s, alpha_s, acc, tid);
      uq_barrier();
    }
  }

  /* Partition output: bf16(acc / l). */
  uq_u16 *out = (uq_u16 *)p.segm_out;
  const int dl = tid % UQ_PV_TPR;
  const int hs = tid / UQ_PV_TPR;
#pragma unroll
  for (int j = 0; j < UQ_PV_HPT; ++j) {
    const int i = hs + j * UQ_PV_HS;
    if (UQ_PV_HS > 1 && i >= UQ_QG)
      break;
    const float l = l_s[i];
#pragma unroll
    for (int k = 0; k < UQ_PV_DPT; ++k) {
      const int d = dl + k * UQ_PV_TPR;
      const float o = l > 0.0f ? acc[j][k] / l : 0.0f;
      out[(row0 + i) * UQ_HEAD_DIM + d] = uq_f32_to_bf16(o);
    }
  }
  if (tid < UQ_QG) {
    p.segm_max[row0 + tid] = m_s[tid];
    p.segm_sum[row0 + tid] = l_s[tid];
  }
}
