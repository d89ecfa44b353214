/* The partition reduce: grid (B, Hq, ceil(D / 64)), 256 threads, one block
 * per 64 output elements. Merges the decode's per-partition outputs with
 * their max and sum in fp32 (FORMAT.md section 6) and writes [B, Hq, D] in
 * the query dtype.
 *
 * The kernel is a pure stream over segm_out (P rows of 64 bf16 = 128 bytes
 * per block), so its speed is the number of bytes in flight. Hence:
 * - Phase 1: the block finds the maximum and the weights of all partitions
 *   together (each thread a share, then a block-wide max / sum), so that the
 *   streaming loop is only independent loads and multiply-adds.
 * - Phase 2: thread t = (pl, dq), dq = t % 16 owns 4 consecutive dims (one
 *   8-byte load per partition; 16 of them cover a 128-byte row, coalesced),
 *   pl = t / 16 walks partitions pl, pl + 16, ... (unrolled, so each thread
 *   has several loads outstanding). Empty partitions are masked with a
 *   select on w, not a branch, so the loads stay batched and 0 never meets
 *   a loaded value.
 * - Phase 3: the 16 partition lanes' partials meet in shared memory; 64
 *   threads (one per dim) add them in a fixed order (deterministic), divide
 *   by the denominator and store. */

constexpr int UQ_REDUCE_THREADS = 256;
constexpr int UQ_REDUCE_WAVES = (UQ_REDUCE_THREADS + UQ_WAVE - 1) / UQ_WAVE;
constexpr int UQ_REDUCE_DIMS = 64; /* output elements per block (grid z) */
constexpr int UQ_REDUCE_VEC = 4;   /* dims per thread: one 8-byte bf16 load */
constexpr int UQ_REDUCE_DQ = UQ_REDUCE_DIMS / UQ_REDUCE_VEC;       /* 16 */
constexpr int UQ_REDUCE_LANES = UQ_REDUCE_THREADS / UQ_REDUCE_DQ; /* 16 */
constexpr int UQ_REDUCE_TRIPS = (UQ_NUM_PARTITIONS + UQ_REDUCE_LANES - 1) / UQ_REDUCE_LANES;
/* Partials row: 64 floats plus one pad after each 32, and rows 66 apart
 * (2 banks on): a warp's 4-float-strided writes (2 lanes x 16 dq) then hit
 * 32 distinct banks, and phase 3's reads of consecutive dims stay
 * conflict-free. */
constexpr int UQ_REDUCE_ROW = UQ_REDUCE_DIMS + 2;

/* Keys hold power-of-two head_dim >= 32 (codegen/key.c): rows of 4-dim
 * groups never straddle the end of a row and stay 8-byte aligned (the
 * workspace is 256-byte aligned); D = 32 only idles half the groups. */
static_assert(UQ_HEAD_DIM % UQ_REDUCE_VEC == 0, "reduce needs head_dim % 4 == 0");
static_assert(UQ_REDUCE_THREADS % UQ_WAVE == 0, "reduce block is whole waves");

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

UQ_DEV int uq_reduce_slot(int lane, int dim) {
  return lane * UQ_REDUCE_ROW + dim + (dim >> 5);
}

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_REDUCE_THREADS) void UQ_KERNEL_NAME(uq_reduce_params p) {
  UQ_SHARED float w_s[UQ_NUM_PARTITIONS];
  UQ_SHARED float scratch[UQ_REDUCE_WAVES];
  UQ_SHARED float part_s[UQ_REDUCE_LANES * UQ_REDUCE_ROW];
  const int b = uq_bid_x();
  const int h = uq_bid_y();
  const int tid = uq_tid();
  const int d0 = uq_bid_z() * UQ_REDUCE_DIMS; /* the block's first dim */
  if (b >= p.batch || h >= UQ_NUM_KV_HEADS * UQ_QG)
    return; /* uniform per block */
  const int kh = h / UQ_QG;
  const int i = h % UQ_QG;
  const uq_i64 row0 = ((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS * UQ_QG + i;
  const float ninf = uq_neg_inf();

  /* Phase 1. Partitions with max -inf are empty (no tokens) and take no
   * part. */
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

  /* Phase 2. den is the same in every thread, so the skip is uniform. */
  const int dq = tid % UQ_REDUCE_DQ;
  const int pl = tid / UQ_REDUCE_DQ;
  const int dv = dq * UQ_REDUCE_VEC; /* first of this thread's dims */
  float n0 = 0.0f, n1 = 0.0f, n2 = 0.0f, n3 = 0.0f;
  if (d0 + dv < UQ_HEAD_DIM && den > 0.0f) {
    const uq_u64 *so =
        (const uq_u64 *)((const uq_u16 *)p.segm_out + row0 * UQ_HEAD_DIM + d0 + dv);
    /* One partition step of the u64 pointer, in u64 units. */
    constexpr uq_i64 step = (uq_i64)UQ_QG * UQ_HEAD_DIM / UQ_REDUCE_VEC;
#pragma unroll 4
    for (int k = 0; k < UQ_REDUCE_TRIPS; ++k) {
      const int q = pl + k * UQ_REDUCE_LANES;
      if (UQ_NUM_PARTITIONS % UQ_REDUCE_LANES == 0 || q < UQ_NUM_PARTITIONS) {
        const uq_u64 v = so[(uq_i64)q * step];
        const float w = w_s[q];
        const uq_u32 lo = (uq_u32)v, hi = (uq_u32)(v >> 32);
        /* Little-endian: dim dv + 0 is the low half of lo. */
        const float x0 = uq_bits_f32(lo << 16), x1 = uq_bits_f32(lo & 0xffff0000u);
        const float x2 = uq_bits_f32(hi << 16), x3 = uq_bits_f32(hi & 0xffff0000u);
        /* Empty partitions hold zeros; the select keeps 0 * anything out. */
        const bool live = w != 0.0f;
        n0 = live ? n0 + w * x0 : n0;
        n1 = live ? n1 + w * x1 : n1;
        n2 = live ? n2 + w * x2 : n2;
        n3 = live ? n3 + w * x3 : n3;
      }
    }
  }

  /* Phase 3. */
  part_s[uq_reduce_slot(pl, dv + 0)] = n0;
  part_s[uq_reduce_slot(pl, dv + 1)] = n1;
  part_s[uq_reduce_slot(pl, dv + 2)] = n2;
  part_s[uq_reduce_slot(pl, dv + 3)] = n3;
  uq_barrier();
  const int d = d0 + tid;
  if (tid < UQ_REDUCE_DIMS && d < UQ_HEAD_DIM) {
    float num = 0.0f;
#pragma unroll
    for (int l = 0; l < UQ_REDUCE_LANES; ++l)
      num += part_s[uq_reduce_slot(l, tid)];
    const float o = den > 0.0f ? num / den : 0.0f;
    uq_store_elem(p.out, UQ_DTYPE, ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + h) * UQ_HEAD_DIM + d, o);
  }
}
