/* The partition reduce: grid (B, Hq, ceil(D / 64)), 64 threads, one thread
 * per output element. Merges the decode's per-partition outputs with their
 * max and sum in fp32 (FORMAT.md section 6) and writes [B, Hq, D] in the
 * query dtype. The block first finds the maximum and the weights of all
 * partitions together (each thread a share of them, then a block-wide
 * max / sum), so that the per-element loop is only independent loads and
 * multiply-adds: with hundreds of partitions a serial walk per thread
 * would wait on memory once per partition. */

constexpr int UQ_REDUCE_THREADS = 64;
constexpr int UQ_REDUCE_WAVES = (UQ_REDUCE_THREADS + UQ_WAVE - 1) / UQ_WAVE;

/* Block-wide max (sum when `sum`) of one value per thread; every thread
 * gets the result. */
UQ_DEV float uq_reduce_block(float v, bool sum, float *scratch, int tid) {
#pragma unroll
  for (int m = UQ_WAVE / 2; m >= 1; m /= 2) {
    const float o = uq_lane_xor_f32(v, m);
    v = sum ? v + o : uq_fmax(v, o);
  }
  if (UQ_REDUCE_WAVES > 1) {
    if (tid % UQ_WAVE == 0)
      scratch[tid / UQ_WAVE] = v;
    uq_barrier();
    v = scratch[0];
    for (int k = 1; k < UQ_REDUCE_WAVES; ++k)
      v = sum ? v + scratch[k] : uq_fmax(v, scratch[k]);
    uq_barrier();
  }
  return v;
}

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_REDUCE_THREADS) void UQ_KERNEL_NAME(uq_reduce_params p) {
  UQ_SHARED float w_s[UQ_NUM_PARTITIONS];
  UQ_SHARED float scratch[UQ_REDUCE_WAVES];
  const int b = uq_bid_x();
  const int h = uq_bid_y();
  const int tid = uq_tid();
  const int d = uq_bid_z() * UQ_REDUCE_THREADS + tid;
  if (b >= p.batch || h >= UQ_NUM_KV_HEADS * UQ_QG)
    return; /* uniform per block */
  const int kh = h / UQ_QG;
  const int i = h % UQ_QG;
  const uq_i64 row0 = ((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS * UQ_QG + i;
  const float ninf = uq_neg_inf();

  /* Partitions with max -inf are empty (no tokens) and take no part. */
  float mx = ninf;
  for (int q = tid; q < UQ_NUM_PARTITIONS; q += UQ_REDUCE_THREADS) {
    const float m = p.segm_max[row0 + (uq_i64)q * UQ_QG];
    if (m > ninf)
      mx = uq_fmax(mx, m);
  }
  mx = uq_reduce_block(mx, false, scratch, tid);
  float den = 0.0f;
  for (int q = tid; q < UQ_NUM_PARTITIONS; q += UQ_REDUCE_THREADS) {
    const uq_i64 r = row0 + (uq_i64)q * UQ_QG;
    const float m = p.segm_max[r];
    const float w = m > ninf ? p.segm_sum[r] * uq_exp2((m - mx) * UQ_LOG2E) : 0.0f;
    w_s[q] = w;
    den += w;
  }
  den = uq_reduce_block(den, true, scratch, tid);
  uq_barrier(); /* w_s is complete */

  float num = 0.0f;
  if (d < UQ_HEAD_DIM && den > 0.0f) {
    const uq_u16 *so = (const uq_u16 *)p.segm_out + row0 * UQ_HEAD_DIM + d;
#pragma unroll 8
    for (int q = 0; q < UQ_NUM_PARTITIONS; ++q) {
      const float w = w_s[q];
      /* Empty partitions hold zeros; skipping them keeps 0 * anything out. */
      if (w != 0.0f)
        num += w * uq_bf16_to_f32(so[(uq_i64)q * UQ_QG * UQ_HEAD_DIM]);
    }
  }
  if (d < UQ_HEAD_DIM) {
    const float o = den > 0.0f ? num / den : 0.0f;
    uq_store_elem(p.out, UQ_DTYPE, ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + h) * UQ_HEAD_DIM + d, o);
  }
}
