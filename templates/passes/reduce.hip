/* The partition reduce: grid (B, Hq, 1), 256 threads, one block per
 * output row (a sequence's query head, all D dims). Merges the decode's
 * per-partition outputs with their max and sum in fp32 (FORMAT.md section
 * 6) and writes [B, Hq, D] in the query dtype.
 *
 * One pass over segm_out (P rows of D bf16 per block), whose speed is the
 * bytes in flight and, for few partitions, the latency of the memory
 * round trips; a block per row (not per 64 dims of it) keeps the grid to
 * one wave on a large GPU, so that the partitions of every row are read
 * at once rather than in waves of small blocks. Hence:
 * - Phase 1: thread t = (pl, dq), dq = t % (D / 8) owns 8 consecutive
 *   dims (one 16-byte load per partition; the D / 8 threads of a lane
 *   cover a row, coalesced), pl = t / (D / 8) walks partitions pl, pl +
 *   LANES, ..., loading each one's max, sum and values together
 *   (independent loads, unrolled: one round trip for several partitions)
 *   and merging them online: a running max, the sum and the weighted
 *   values rescaled when it grows. Empty partitions (max -inf) are
 *   skipped with selects, so the loads stay batched and never meet a 0
 *   weight.
 * - Phase 2: the partition lanes' states meet in shared memory; D threads
 *   (one per dim) merge them in a fixed order (deterministic), divide by
 *   the denominator and store. */
constexpr int UQ_REDUCE_THREADS = 256;
constexpr int UQ_REDUCE_VEC = 8;                                  /* dims per thread */
constexpr int UQ_REDUCE_DQ = UQ_HEAD_DIM / UQ_REDUCE_VEC;         /* threads a row */
constexpr int UQ_REDUCE_LANES = UQ_REDUCE_THREADS / UQ_REDUCE_DQ; /* partition lanes */
constexpr int UQ_REDUCE_TRIPS = (UQ_NUM_PARTITIONS + UQ_REDUCE_LANES - 1) / UQ_REDUCE_LANES;
/* The most live rows (blocks) for which the reduce lets its dependent in
 * at its start, measured on one H100 (docs/BENCHMARKS-LOG.md,
 * 2026-12-07, "The reduce's early trigger, and 1024-token partitions" and
 * "df4a965"): a chained B=64/2048/1:16 step (1024 rows) took 28.05 us with
 * the early trigger and 21.41 without; grids of up to 512 rows took
 * 0.6-3.0% less with it (1/1024/4:6 5.71 against 5.88 us, 8/1024/1:16
 * 6.36 against 6.53, 32/2048/1:16 13.35 against 13.48); 768 rows ran the
 * same either way. */
constexpr uq_i64 UQ_REDUCE_EARLY_DEPENDENTS = 512;
/* Partials row: D floats plus one pad after each 32, so that phase 2's
 * reads of consecutive dims are conflict-free and phase 1's 8-float
 * strided writes spread over the banks. */
constexpr int UQ_REDUCE_ROW = UQ_HEAD_DIM + UQ_HEAD_DIM / 32;

/* Keys hold power-of-two head_dim from 32 to 1024 (lib/codegen/key.c): a
 * row is whole 16-byte groups, 16-byte aligned (the workspace is 256-byte
 * aligned), and fits the block. */
static_assert(UQ_HEAD_DIM % UQ_REDUCE_VEC == 0 && UQ_REDUCE_DQ <= UQ_REDUCE_THREADS &&
                  UQ_REDUCE_THREADS % UQ_REDUCE_DQ == 0,
              "reduce: head_dim must be a multiple of 8 dividing 2048");
static_assert(UQ_REDUCE_THREADS % UQ_WAVE == 0, "reduce block is whole waves");

/* Eight bf16 of a row: one 16-byte load (every prelude's compiler emits
 * one for an aligned 16-byte struct). */
struct alignas(16) uq_reduce_x8 {
  uq_u32 w[4];
};

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
  uq_grid_wait(); /* the decode's partitions are complete and visible */
  /* A kernel launched as this one's programmatic dependent (the next
   * step's decode, for small decode grids) may be scheduled now where
   * this grid's live rows are few; otherwise it is let in as this grid's
   * blocks exit, since its blocks, resident and waiting, would hold
   * registers and slots the reduce's blocks need
   * (UQ_REDUCE_EARLY_DEPENDENTS). */
  if ((uq_i64)p.batch * UQ_NUM_KV_HEADS * UQ_QG <= UQ_REDUCE_EARLY_DEPENDENTS)
    uq_grid_dependents();
  if (b >= p.batch || h >= UQ_NUM_KV_HEADS * UQ_QG)
    return; /* uniform per block */
  const int kh = h / UQ_QG;
  const int i = h % UQ_QG;
  const uq_i64 row0 = ((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS * UQ_QG + i;
  const float ninf = uq_neg_inf();

  /* Phase 1. The lane's running max mx (-inf until a partition has
   * tokens), and den and n[] relative to it. */
  const int dq = tid % UQ_REDUCE_DQ;
  const int pl = tid / UQ_REDUCE_DQ;
  const int dv = dq * UQ_REDUCE_VEC; /* first of this thread's dims */
  float mx = ninf, den = 0.0f;
  float n[UQ_REDUCE_VEC];
#pragma unroll
  for (int j = 0; j < UQ_REDUCE_VEC; ++j)
    n[j] = 0.0f;
  const uq_reduce_x8 *so =
      (const uq_reduce_x8 *)((const uq_u16 *)p.segm_out + row0 * UQ_HEAD_DIM + dv);
  /* One partition step of that pointer, in its units. */
  constexpr uq_i64 step = (uq_i64)UQ_QG * UQ_HEAD_DIM / UQ_REDUCE_VEC;
#pragma unroll 4
  for (int k = 0; k < UQ_REDUCE_TRIPS; ++k) {
    const int q = pl + k * UQ_REDUCE_LANES;
    if (UQ_NUM_PARTITIONS % UQ_REDUCE_LANES == 0 || q < UQ_NUM_PARTITIONS) {
      const uq_i64 r = row0 + (uq_i64)q * UQ_QG;
      const float m = p.segm_max[r];
      const float sum = p.segm_sum[r];
      const uq_reduce_x8 v = so[(uq_i64)q * step];
      const bool live = m > ninf;
      const float m_new = uq_fmax(mx, m);
      /* 2^-inf = 0 rescales the empty start away. */
      const float c = uq_exp2((mx - m_new) * UQ_LOG2E);
      const float w = sum * uq_exp2((m - m_new) * UQ_LOG2E);
      /* Little-endian: dim dv + 2 j is the low half of word j. */
      den = live ? den * c + w : den;
#pragma unroll
      for (int j = 0; j < UQ_REDUCE_VEC; ++j) {
        const uq_u32 wd = v.w[j / 2];
        const float x = uq_bits_f32(j % 2 ? wd & 0xffff0000u : wd << 16);
        n[j] = live ? n[j] * c + w * x : n[j];
      }
      mx = live ? m_new : mx;
    }
  }

  /* Phase 2. Lanes with no tokens (max -inf) weigh 0. */
#pragma unroll
  for (int j = 0; j < UQ_REDUCE_VEC; ++j)
    part_s[uq_reduce_slot(pl, dv + j)] = n[j];
  if (dq == 0) {
    max_s[pl] = mx;
    den_s[pl] = den;
  }
  uq_barrier();
  const int d = tid;
  if (d < UQ_HEAD_DIM) {
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
        num += f * part_s[uq_reduce_slot(l, d)];
        total += f * den_s[l];
      }
    }
    const float o = total > 0.0f ? num / total : 0.0f;
    uq_store_elem(p.out, UQ_DTYPE, ((uq_i64)b * UQ_NUM_KV_HEADS * UQ_QG + h) * UQ_HEAD_DIM + d, o);
  }
}
