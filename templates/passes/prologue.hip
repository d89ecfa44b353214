/* The query prologue (when the decode does not fuse the rotation: a
 * query whose heads or elements are not dense): grid (B, Hq, 1),
 * UQ_BLOCK_THREADS threads. Element d of a row sits at
 * b * stride_seq + h * stride_head + d * UQ_Q_STRIDE_DIM. Writes q_rot[b, h, :] =
 * haircut(FWHT(query row)) in fp32, natural dim order: the same operations
 * in the same order as the decode's fused path, hence the same bits. */

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_BLOCK_THREADS) void UQ_KERNEL_NAME(uq_prologue_params p) {
  UQ_SHARED float x[UQ_HEAD_DIM];
  const int tid = uq_tid();
  const int b = uq_bid_x();
  const int h = uq_bid_y();
  if (b >= p.batch || h >= p.num_q_heads)
    return;
  const uq_i64 src = (uq_i64)b * p.stride_seq + (uq_i64)h * p.stride_head;
  for (int d = tid; d < UQ_HEAD_DIM; d += UQ_BLOCK_THREADS)
    x[d] = uq_load_elem(p.query, UQ_DTYPE, src + (uq_i64)d * UQ_Q_STRIDE_DIM);
  uq_fwht_shared(x, 1, UQ_HEAD_DIM, UQ_HEAD_DIM, UQ_HEAD_DIM, 0, UQ_FWHT_NORM, tid,
                 UQ_BLOCK_THREADS);
  float *dst = p.q_rot + ((uq_i64)b * p.num_q_heads + h) * UQ_HEAD_DIM;
  for (int d = tid; d < UQ_HEAD_DIM; d += UQ_BLOCK_THREADS)
    dst[d] = uq_haircut_e4m3(x[d]);
}
