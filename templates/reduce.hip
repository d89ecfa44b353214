/* The partition reduce: grid (B, Hq, ceil(D / 64)), 64 threads, one thread
 * per output element. Merges the decode's per-partition outputs with their
 * max and sum in fp32 (FORMAT.md section 6) and writes [B, Hq, D] in the
 * query dtype. */

constexpr int UQ_REDUCE_THREADS = 64;

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_REDUCE_THREADS) void UQ_KERNEL_NAME(uq_reduce_params p) {
  const int b = uq_bid_x();
  const int h = uq_bid_y();
  const int d = uq_bid_z() * UQ_REDUCE_THREADS + uq_tid();
  if (b >= p.batch || h >= UQ_NUM_KV_HEADS * UQ_QG || d >= UQ_HEAD_DIM)
    return;
  const int kh = h / UQ_QG;
  const int i = h % UQ_QG;
  const uq_i64 row0 = ((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS * UQ_QG + i;
  const float ninf = uq_neg_inf();

  /* Partitions with max -inf are empty (no tokens) and take no part. */
  float mx = ninf;
  for (int q = 0; q < UQ_NUM_PARTITIONS; ++q) {
    const float m = p.segm_max[row0 + (uq_i64)q * UQ_QG];
    if (m > ninf)
      mx = uq_fmax(mx, m);
  }
  float num = 0.0f;
  float den = 0.0f;
  if (mx > ninf) {
    const uq_u16 *so = (const uq_u16 *)p.segm_out;
    for (int q = 0; q < UQ_NUM_PARTITIONS; ++q) {
      const uq_i64 r = row0 + (uq_i64)q * UQ_QG;
      const float m = p.segm_max[r];
      if (!(m > ninf))
        continue;
      const float w = p.segm_sum[r] * uq_exp2((m - mx) * UQ_LOG2E);
      num += w * uq_bf16_to_f32(so[r * UQ_HEAD_DIM + d]);
      den += w;
    }
  }
  const float o = den > 0.0f ? num / den : 0.0f;
  uq_store_elem(p.out, UQ_DTYPE, ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + h) * UQ_HEAD_DIM + d, o);
}
