/* The partition reduce: grid (B, Hq, ceil(D / 64)), 256 threads, one block
 * per 64 output elements. Merges the decode's per-partition outputs with
 * their max and sum in fp32 (FORMAT.md section 6) and writes [B, Hq, D] in
 * the query dtype.
 *
 * One pass over segm_out (P rows of 64 bf16 = 128 bytes per block), whose
 * speed is the bytes in flight and, for few partitions, the latency of
 * the memory round trips. Hence:
 * - Phase 1: thread t = (pl, dq), dq = t % 16 owns 4 consecutive dims (one
 *   8-byte load per partition; 16 of them cover a 128-byte row, coalesced),
 *   pl = t / 16 walks partitions pl, pl + 16, ..., loading each one's max,
 *   sum and values together (independent loads, unrolled: one round trip
 *   for several partitions) and merging them online: a running max, the
 *   sum and the weighted values rescaled when it grows. Empty partitions
 *   (max -inf) are skipped with selects, so the loads stay batched and
 *   never meet a 0 weight.
 * - Phase 2: the 16 partition lanes' states meet in shared memory; 64
 *   threads (one per dim) merge them in a fixed order (deterministic),
 *   divide by the denominator and store. */
constexpr int UQ_REDUCE_THREADS = 256;
constexpr int UQ_REDUCE_DIMS = 64; /* output elements per block (grid z) */
constexpr int UQ_REDUCE_VEC = 4;   /* dims per thread: one 8-byte bf16 load */
constexpr int UQ_REDUCE_DQ = UQ_REDUCE_DIMS / UQ_REDUCE_VEC;       /* 16 */
constexpr int UQ_REDUCE_LANES = UQ_REDUCE_THREADS / UQ_REDUCE_DQ; /* 16 */
constexpr int UQ_REDUCE_TRIPS = (UQ_NUM_PARTITIONS + UQ_REDUCE_LANES - 1) / UQ_REDUCE_LANES;
/* Partials row: 64 floats plus one pad after each 32, and rows 66 apart
 * (2 banks on): a warp's 4-float-strided writes (2 lanes x 16 dq) then hit
 * 32 distinct banks, and phase 2's reads of consecutive dims stay
 * conflict-free. */
constexpr int UQ_REDUCE_ROW = UQ_REDUCE_DIMS + 2;

/* Keys hold power-of-two head_dim >= 32 (lib/codegen/key.c): rows of 4-dim
 * groups never straddle the end of a row and stay 8-byte aligned (the
 * workspace is 256-byte aligned); D = 32 only idles half the groups. */
static_assert(UQ_HEAD_DIM % UQ_REDUCE_VEC == 0, "reduce needs head_dim % 4 == 0");
static_assert(UQ_REDUCE_THREADS % UQ_WAVE == 0, "reduce block is whole waves");

UQ_DEV int uq_reduce_slot(int lane, int dim) {
  return lane * UQ_REDUCE_ROW + dim + (dim >> 5);
}

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_REDUCE_THREADS) void UQ_KERNEL_NAME(uq_reduce_params p) {
  UQ_SHARED float part_s[UQ_REDUCE_LANES * UQ_REDUCE_ROW];
  UQ_SHARED float max_s[UQ_REDUCE_LANES];
  UQ_SHARED float den_s[UQ_REDUCE_LANES];
  const int b = uq_bid_x();
  const int h = uq_bid_y();
  const int tid = uq_tid();
  const int d0 = uq_bid_z() * UQ_REDUCE_DIMS; /* the block's first dim */
  uq_grid_wait(); /* the decode's partitions are complete and visible */
  if (b >= p.batch || h >= UQ_NUM_KV_HEADS * UQ_QG)
    return; /* uniform per block */
  const int kh = h / UQ_QG;
  const int i = h % UQ_QG;
  const uq_i64 row0 = ((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS * UQ_QG + i;
  const float ninf = uq_neg_inf();

  /* Phase 1. The lane's running max mx (-inf until a partition has
   * tokens), and den and n0..n3 relative to it. */
  const int dq = tid % UQ_REDUCE_DQ;
  const int pl = tid / UQ_REDUCE_DQ;
  const int dv = dq * UQ_REDUCE_VEC; /* first of this thread's dims */
  const bool mine = d0 + dv < UQ_HEAD_DIM;
  float mx = ninf, den = 0.0f;
  float n0 = 0.0f, n1 = 0.0f, n2 = 0.0f, n3 = 0.0f;
  const uq_u64 *so = (const uq_u64 *)((const uq_u16 *)p.segm_out + row0 * UQ_HEAD_DIM + d0 +
                                      (mine ? dv : 0));
  /* One partition step of the u64 pointer, in u64 units. */
  constexpr uq_i64 step = (uq_i64)UQ_QG * UQ_HEAD_DIM / UQ_REDUCE_VEC;
#pragma unroll 4
  for (int k = 0; k < UQ_REDUCE_TRIPS; ++k) {
    const int q = pl + k * UQ_REDUCE_LANES;
    if (UQ_NUM_PARTITIONS % UQ_REDUCE_LANES == 0 || q < UQ_NUM_PARTITIONS) {
      const uq_i64 r = row0 + (uq_i64)q * UQ_QG;
      const float m = p.segm_max[r];
      const float sum = p.segm_sum[r];
      const uq_u64 v = so[(uq_i64)q * step];
      const bool live = m > ninf;
      const float m_new = uq_fmax(mx, m);
      /* 2^-inf = 0 rescales the empty start away. */
      const float c = uq_exp2((mx - m_new) * UQ_LOG2E);
      const float w = sum * uq_exp2((m - m_new) * UQ_LOG2E);
      const uq_u32 lo = (uq_u32)v, hi = (uq_u32)(v >> 32);
      /* Little-endian: dim dv + 0 is the low half of lo. */
      const float x0 = uq_bits_f32(lo << 16), x1 = uq_bits_f32(lo & 0xffff0000u);
      const float x2 = uq_bits_f32(hi << 16), x3 = uq_bits_f32(hi & 0xffff0000u);
      den = live ? den * c + w : den;
      n0 = live ? n0 * c + w * x0 : n0;
      n1 = live ? n1 * c + w * x1 : n1;
      n2 = live ? n2 * c + w * x2 : n2;
      n3 = live ? n3 * c + w * x3 : n3;
      mx = live ? m_new : mx;
    }
  }

  /* Phase 2. Lanes with no tokens (max -inf) weigh 0. */
  part_s[uq_reduce_slot(pl, dv + 0)] = n0;
  part_s[uq_reduce_slot(pl, dv + 1)] = n1;
  part_s[uq_reduce_slot(pl, dv + 2)] = n2;
  part_s[uq_reduce_slot(pl, dv + 3)] = n3;
  if (dq == 0) {
    max_s[pl] = mx;
    den_s[pl] = den;
  }
  uq_barrier();
  const int d = d0 + tid;
  if (tid < UQ_REDUCE_DIMS && d < UQ_HEAD_DIM) {
    float m_all = ninf;
#pragma unroll
    for (int l = 0; l < UQ_REDUCE_LANES; ++l)
      m_all = uq_fmax(m_all, max_s[l]);
    float num = 0.0f, total = 0.0f;
    if (m_all > ninf) {
#pragma unroll
      for (int l = 0; l < UQ_REDUCE_LANES; ++l) {
        const float ml = max_s[l];
        const float f = ml > ninf ? uq_exp2((ml - m_all) * UQ_LOG2E) : 0.0f;
        num += f * part_s[uq_reduce_slot(l, tid)];
        total += f * den_s[l];
      }
    }
    const float o = total > 0.0f ? num / total : 0.0f;
    uq_store_elem(p.out, UQ_DTYPE, ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + h) * UQ_HEAD_DIM + d, o);
  }
}
