/* The decode kernel on NVIDIA sm_90a with warpgroup matrix instructions
 * (variant WARPGROUP). Same contract as decode.hip: grid (B, Hk, P), one
 * block owns (sequence b, kv head kh, partition part) and all UQ_QG query
 * heads of that kv head, walks its share of the sequence's 64-token
 * chunks (uq_wg_chunks: strided like FORMAT.md section 6's tile groups,
 * but a chunk at a time) and writes the partition's bf16 output normalised
 * by its own sum, with its max (natural-log units of the scaled logits) and sum. Same
 * numerics: the query rotated and haircut to E4M3 with the shared fp32
 * steps (or read from the prologue's q_rot), K and V dequantized exactly,
 * P rounded to bf16 for PV, fp32 accumulation.
 *
 * One warpgroup (128 threads). Tokens go in chunks of 64, copied raw
 * (272 bytes a slot) into shared memory (sm90_chunks.hip: TMA bulk copies
 * where a chunk's runs are single ranges, else flat 16- or 4-byte
 * cp.async pieces), double buffered: chunk k + 1 is copied while chunk k
 * is computed. Per
 * chunk (wgmma_sm90_maps.hip has the fragment maps):
 *  - QK: eight wgmma m64n16k32 e4m3, one per 32-dim group, K converted to
 *    E4M3 in registers (A), the haircut query read by the tensor cores
 *    from shared memory (B); each group's fp32 result times the group's
 *    K scale per token, summed in fp32. Two groups in flight while the
 *    next two are converted. The K scales come as fp32 from a per-warp
 *    table each warp fills for its own tokens.
 *  - Softmax in base 2: the scores are scaled by scale * log2(e) once, so
 *    every exponential is one ex2. P (bf16 pairs, one 32-bit store per
 *    query, into the B operand of PV) is taken against a per-query
 *    reference every thread holds; only when a score passes it by more
 *    than 2^8 (and on the first chunk) do the chunk's maxima meet in
 *    shared memory, the reference move, the accumulators rescale and P
 *    get rewritten. The row sums stay per thread until the end.
 *  - PV: sixteen wgmma m64n16k16 bf16 (four 64-dim tiles x four 16-token
 *    steps), V dequantized to bf16 with the scale folded in, straight into
 *    the A registers (no shared-memory round trip), one step converted
 *    while the previous one runs. The scale factors are computed once per
 *    chunk into a small table (a thread: two tokens, two groups), each
 *    under its V group's limit (wgmma_sm90_maps.hip): a chunk with a
 *    scale byte over its group's limit takes the slow path below, which
 *    raises the limit, rescales that group's accumulators and rewrites
 *    the table, so that every scale byte the format allows is served by
 *    one bf16 factor (served V rows have groups past 12 in magnitude).
 * The integer pipe, which the FP4 conversions keep busy (it issues at
 * half rate), is the layer's tightest resource: work that can go to the
 * load or fma pipes (tables, multiply-adds) goes there.
 * Two barriers a chunk: A (chunk k is in, chunk k - 1's buffer, P and
 * the factor table are free) and C (P and the factors are in; a block-wide
 * OR of the slow path's flags: a softmax reference to move or a V limit
 * to raise); the slow path adds two, and four when it raises a limit. */

#ifndef UQ_ROUTE_NVRTC
#error "decode_wgmma_sm90.hip is the NVIDIA (NVRTC) warpgroup layer"
#endif

static_assert(UQ_HEAD_DIM == 256, "warpgroup decode layer: head_dim must be 256");
static_assert(UQ_QG >= 1 && UQ_QG <= 16, "warpgroup decode layer: query_group_size must be <= 16");
static_assert(UQ_BLOCK_THREADS == 128, "warpgroup decode layer: one warpgroup");

constexpr int UQ_WG_CHUNK = 64;   /* tokens per chunk */
constexpr int UQ_WG_KSCALE = 128; /* slot offsets */
constexpr int UQ_WG_VCODE = 136;
constexpr int UQ_WG_VSCALE = 264;
static_assert(UQ_SM90_SLOT == 272, "warpgroup decode layer: D=256 slots");
/* Blocks per multiprocessor the register budget is sized for (<= 128
 * registers a thread); shared memory (42 KB a block) allows five. */
constexpr int UQ_WG_MIN_BLOCKS = 4;
/* Chunks come through the Tensor Memory Accelerator (sm90_chunks.hip: a
 * bulk copy per run for one kv head, a tensor copy per run for several,
 * issued by threads 0 .. RUNS - 1, completing on an mbarrier) wherever
 * the slots allow, else as cp.async pieces from every thread. Without
 * copy state in every thread the TMA paths have registers for the
 * hoisted offsets below. */
constexpr bool UQ_WG_TMA = UQ_SM90_BULK || UQ_SM90_TENSOR;
/* How far (base 2) a score may pass its query's softmax reference before
 * the reference moves: weights reach 2^8 at most. */
constexpr float UQ_WG_SLACK = 8.0f;

struct alignas(128) uq_wg_smem {
  uq_u8 raw[2][UQ_WG_CHUNK * UQ_SM90_SLOT];
  alignas(128) uq_u8 qt[16 * UQ_HEAD_DIM];       /* B of QK: the haircut query, E4M3 */
  alignas(128) uq_u8 pt[16 * UQ_WG_CHUNK * 2];   /* B of PV: P, bf16 */
  alignas(16) uq_u8 vfac[8 * UQ_WG_VFAC_ROW];    /* the chunk's V factors lo */
  float4 red_max[16];                            /* [query]: the four warps' maxima */
  float4 red_sum[16];                            /* [query]: the four warps' sums (end) */
  float4 kscale[2][UQ_WG_CHUNK];                 /* [half][token]: K scales of groups 4 half .. + 3 */
  float4 seen[UQ_BLOCK_THREADS];                 /* each thread's maxima so far */
  uint2 vlim[8];      /* [V group]: uq_wg_vlim_x2, uq_wg_vlim_offset_x2 of its limit */
  uq_u32 vlim_next[8]; /* [V group]: the limit raised by this chunk's bytes */
  uq_u64 full[2];                                /* bulk copies: raw[i] has landed */
};
static_assert(sizeof(uq_wg_smem) <= 48 * 1024, "warpgroup decode layer: static shared memory");

/* Shared-memory writes of the generic proxy (the query, P) made visible to
 * the tensor cores' reads (async proxy); a barrier follows. */
UQ_DEV void uq_wg_fence_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
UQ_DEV void uq_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
UQ_DEV void uq_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> UQ_DEV void uq_wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Compiler-level fences on registers a wgmma reads or writes
 * asynchronously: an empty asm that "uses and redefines" them after the
 * wgmma.wait_group that retires the instruction, so that the compiler
 * neither reads results nor reuses operand registers before that point. */
UQ_DEV void uq_wg_hold(uq_u32 &r) { asm volatile("" : "+r"(r)::"memory"); }
UQ_DEV void uq_wg_hold(float &r) { asm volatile("" : "+f"(r)::"memory"); }
template <typename T, int N> UQ_DEV void uq_wg_hold(T (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    uq_wg_hold(r[i]);
}

/* Descriptor of a K-major, unswizzled B operand at shared address `addr`
 * (wgmma_sm90_maps.hip: core matrix (N-block nb, K-block kb) at kb * 256
 * + nb * 128). Fields: start >> 4 (bits 0-13), leading-dimension byte
 * offset >> 4 (16-29), stride-dimension byte offset >> 4 (32-45), swizzle
 * 0 (62-63). */
UQ_DEV uq_u64 uq_wg_desc(uq_u32 addr) {
  return (uq_u64)((addr & 0x3FFFFu) >> 4) | ((uq_u64)(UQ_WG_LBO >> 4) << 16) |
         ((uq_u64)(UQ_WG_SBO >> 4) << 32);
}

/* The thread index, read again where it is used (the compiler cannot
 * reuse an earlier read, so values derived from it are not kept live
 * across the loop for a rare path). */
UQ_DEV int uq_wg_tid_fresh() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

/* Component j (0..3, a constant after unrolling) of v. */
UQ_DEV float uq_wg_f4_at(const float4 &v, int j) {
  return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

/* d = A B (the accumulator is not read): 64 tokens x 16 queries over one
 * 32-dim group. */
UQ_DEV void uq_wg_qk(float (&d)[8], const uq_u32 (&a)[4], uq_u64 desc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 "
               "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1;\n}\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]),
                 "=f"(d[6]), "=f"(d[7])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(0));
}

/* d += A B: 64 dims x 16 queries over 16 tokens. */
UQ_DEV void uq_wg_pv(float (&d)[8], uq_u32 a0, uq_u32 a1, uq_u32 a2, uq_u32 a3, uq_u64 desc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
               "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                 "+f"(d[6]), "+f"(d[7])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc), "n"(1));
}

/* Two fp32 values as E4M3 bytes (hi in bits 8-15, lo in 0-7), rounded to
 * nearest even and saturated to +-448: exactly the haircut of
 * numerics.hip (uq_haircut_e4m3), whose values are E4M3 numbers. */
UQ_DEV uq_u32 uq_wg_e4m3x2(float hi, float lo) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
  return (uq_u32)r;
}

/* Two fp32 values as a bf16 pair (hi in the upper half), each rounded to
 * nearest even: uq_f32_to_bf16's bits for every non-NaN value. */
UQ_DEV uq_u32 uq_wg_bf16x2(float hi, float lo) {
  uq_u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/* 2^x, flushing results below 2^-126 to zero (those weights are below
 * any bf16 P that matters next to the row's maximum, which weighs 1);
 * 2^-inf = 0. */
UQ_DEV float uq_wg_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

/* The parameters: the common block and the cache's tensor map (set by the
 * host where UQ_SM90_TENSOR holds), which the copies address in place
 * (hence a grid constant). */
UQ_KERNEL __launch_bounds__(UQ_BLOCK_THREADS, UQ_WG_MIN_BLOCKS) void UQ_KERNEL_NAME(
    const __grid_constant__ uq_decode_wg_params wp) {
  UQ_SHARED uq_wg_smem sm;
  const uq_decode_params p = wp.d;

  /* Small grids are launched as programmatic dependents of the kernel
   * before (lib/codegen/layers.c): nothing is read before it is done. */
  uq_grid_wait();
  uq_grid_dependents(); /* the reduce may be scheduled */
  const int tid = uq_tid();
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int grp = lane >> 2;
  const int tig = lane & 3;
  const int b = uq_bid_x();
  const int kh = uq_bid_y();
  const int part = uq_bid_z();
  if (b >= p.batch)
    return;

  /* Loads that need only the block's coordinates go out before the
   * sequence length is back and share its memory round trip: on the TMA
   * paths the query rows (the rotation below reads them), and on the bulk
   * path chunk 0's block numbers (threads tid < RUNS; the index clamped
   * into the table row, the number used only where its run starts below
   * seq_len), so that chunk 0's copy waits for one round trip instead of
   * two. The tensor-copy path fetches its block numbers after the length:
   * an early load there takes some of its kernels to 16 bytes of stack
   * (ptxas), past the layer's 8 (compile.kernels). Measured on the H200:
   * 1-3% on short and several-kv-head shapes (docs/BENCHMARKS-LOG.md,
   * 2026-12-06). */
  constexpr int RUNS = uq_sm90_run<UQ_WG_CHUNK>::RUNS;
  const int *bt_row = p.block_table + (uq_i64)b * UQ_MAX_BLOCKS;
  int blk_first = 0;
  if (UQ_SM90_BULK && tid < RUNS) {
    const uq_u32 t = uq_wg_chunk_token(part, 0, UQ_NUM_PARTITIONS) +
                     (uq_u32)(tid * uq_sm90_run<UQ_WG_CHUNK>::SPAN);
    const uq_u32 i = t / UQ_BLOCK_SIZE;
    blk_first = bt_row[i < (uq_u32)UQ_MAX_BLOCKS ? i : (uq_u32)UQ_MAX_BLOCKS - 1u];
  }
  auto q_elem0 = [&](int n) {
    return (uq_i64)b * UQ_Q_STRIDE_SEQ + (uq_i64)(kh * UQ_QG + n) * UQ_Q_STRIDE_HEAD + 8 * lane;
  };
  const bool q_vec = UQ_FUSE_QROT && UQ_Q_STRIDE_SEQ % 8 == 0 && UQ_Q_STRIDE_HEAD % 8 == 0 &&
                     ((unsigned long long)p.query & 15u) == 0;
  uint4 q_queue[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int n = 4 * warp + j;
    q_queue[j] = make_uint4(0u, 0u, 0u, 0u);
    if (UQ_WG_TMA && q_vec && n < UQ_QG)
      q_queue[j] = *(const uint4 *)((const uq_u16 *)p.query + q_elem0(n));
  }

  const uq_u32 seq_len = uq_seq_len(p, b);
  const int nch = uq_wg_chunks(part, seq_len, UQ_NUM_PARTITIONS, UQ_TGPP);
  const uq_i64 row0 = uq_partition_row0(b, kh, part);
  if (nch == 0) {
    uq_write_empty_partition(p, row0, tid); /* uniform per block */
    return;
  }

  /* Chunk 0's copy goes out before the query work (on the bulk path
   * right after the query's loads); each chunk's block numbers are
   * fetched one chunk ahead of its copy. Where a chunk's runs
   * are single ranges, bulk copies completing on sm.full[k & 1] (use
   * k / 2 of that barrier: parity (k >> 1) & 1), issued by threads 0 ..
   * RUNS - 1 alone (the other threads skip the address work); otherwise
   * cp.async pieces from every thread, one commit group a chunk. */
  auto block_of = [&](int k) { /* bulk: threads tid < RUNS only */
    const uq_u32 t = uq_wg_chunk_token(part, k, UQ_NUM_PARTITIONS);
    if constexpr (UQ_WG_TMA)
      return uq_sm90_bulk_block<UQ_WG_CHUNK>(bt_row, seq_len, t, tid);
    else
      return uq_sm90_load_block<UQ_WG_CHUNK>(bt_row, seq_len, t, tid);
  };
  int blk_next = 0;
  /* Chunk k's copy from blk_next, then chunk k_next's block numbers into
   * blk_next (none past the last chunk). Every thread calls it. */
  auto copy_chunk = [&](int k, int k_next) {
    const uq_u32 t = uq_wg_chunk_token(part, k, UQ_NUM_PARTITIONS);
    if constexpr (UQ_WG_TMA) {
      if (tid < RUNS) {
        if constexpr (UQ_SM90_BULK)
          uq_sm90_bulk_run<UQ_WG_CHUNK>(sm.raw[k & 1], p.kv_cache, kh, seq_len, t, blk_next, tid,
                                        &sm.full[k & 1]);
        else
          uq_sm90_tensor_run<UQ_WG_CHUNK>(sm.raw[k & 1], &wp.tensor_map, kh, seq_len, t, blk_next,
                                          tid, &sm.full[k & 1]);
        if (k_next < nch)
          blk_next = block_of(k_next);
      }
      if constexpr (UQ_SM90_BULK)
        uq_sm90_bulk_zero<UQ_WG_CHUNK>(sm.raw[k & 1], seq_len, t, tid);
    } else {
      uq_sm90_copy_chunk<UQ_WG_CHUNK>(sm.raw[k & 1], p.kv_cache, kh, seq_len, t, blk_next, tid);
      uq_sm90_cp_commit();
      if (k_next < nch)
        blk_next = block_of(k_next);
    }
  };
  auto wait_chunk = [&](int k) {
    if constexpr (UQ_WG_TMA) {
      uq_sm90_mbar_wait(&sm.full[k & 1], (uq_u32)(k >> 1) & 1u);
      /* A tensor copy lands whole runs: the rows past seq_len go now,
       * before barrier A (the bulk copy zeroed them when it started). */
      if constexpr (UQ_SM90_TENSOR)
        uq_sm90_bulk_zero<UQ_WG_CHUNK>(sm.raw[k & 1], seq_len,
                                       uq_wg_chunk_token(part, k, UQ_NUM_PARTITIONS), tid);
    } else {
      uq_sm90_cp_wait<0>();
    }
  };
  /* Chunk 0's block numbers (on the bulk path already back with the
   * length) are in flight across the barrier; the thread issuing the copy
   * waits for them there. */
  if constexpr (UQ_WG_TMA) {
    if (UQ_SM90_BULK && tid < RUNS)
      blk_next = uq_wg_chunk_token(part, 0, UQ_NUM_PARTITIONS) +
                             (uq_u32)(tid * uq_sm90_run<UQ_WG_CHUNK>::SPAN) <
                         seq_len
                     ? blk_first
                     : 0;
    else if (tid < RUNS)
      blk_next = block_of(0);
    if (UQ_SM90_TENSOR && tid == 0)
      uq_sm90_tensor_prefetch(&wp.tensor_map);
    if (tid == 0) {
      uq_sm90_mbar_init(&sm.full[0], RUNS);
      uq_sm90_mbar_init(&sm.full[1], RUNS);
    }
    uq_barrier();
  } else {
    blk_next = block_of(0);
    copy_chunk(0, 1);
  }

  /* The query as the B operand of QK: E4M3 bytes, rows >= UQ_QG zero, the
   * dims of each group permuted as the K registers are (uq_wg_q_dim). Warp
   * w takes rows 4 w .. 4 w + 3, lane l dims 8 l .. 8 l + 7 of a row: the
   * rotation's butterflies of stride 1, 2, 4 stay in registers, those of
   * stride 8 .. 128 pair lanes l and l ^ (stride / 8); same operations in
   * the same order as uq_fwht_shared (hence the same bits), without its
   * shared-memory round trips: the lower lane of a pair adds, the upper
   * one subtracts, each as one fma by +-1 (a single rounding of a + b or
   * a - b, as uq_fadd_rn / uq_fsub_rn). The lane's E4M3 bytes are two
   * words of the operand: even dims at K-block 2 g, odd dims at 2 g + 1
   * (g = l / 4), positions 4 (l % 4) .. + 3.
   *
   * The lane's eight 16-bit elements of a row come in one 16-byte load
   * where the strides and the pointer allow (one L2 sector of the row per
   * lane pair instead of eight scattered loads). On the TMA paths the
   * four rows' loads went out at the top (one memory round trip per block
   * instead of four, which short sequences feel) and are handed down a
   * register queue, so that the rotation stays one loop body; the
   * piecewise path has no registers to spare for the queue here (its copy
   * state is live) and loads each row in turn. */
  if constexpr (UQ_WG_TMA)
    copy_chunk(0, 1);
#pragma unroll 1
  for (int j = 0; j < 4; ++j) {
    const int n = 4 * warp + j;
    const uint4 w = UQ_WG_TMA || !q_vec || n >= UQ_QG
                        ? q_queue[0]
                        : *(const uint4 *)((const uq_u16 *)p.query + q_elem0(n));
    q_queue[0] = q_queue[1];
    q_queue[1] = q_queue[2];
    q_queue[2] = q_queue[3];
    uq_u32 even = 0u, odd = 0u;
    if (n < UQ_QG) {
      float v[8];
      if (UQ_FUSE_QROT) {
        if (q_vec) {
          const uq_u32 words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const uq_u16 h = (uq_u16)(words[i / 2] >> (16 * (i & 1)));
            v[i] = UQ_DTYPE == 1 ? uq_bf16_to_f32(h) : uq_fp16_to_f32(h);
          }
        } else {
#pragma unroll
          for (int i = 0; i < 8; ++i)
            v[i] = uq_load_elem(p.query, UQ_DTYPE, q_elem0(n) + i);
        }
#pragma unroll
        for (int h = 1; h < 8; h *= 2)
#pragma unroll
          for (int i = 0; i < 8; ++i)
            if ((i & h) == 0) {
              const float a = v[i], c = v[i + h];
              v[i] = uq_fadd_rn(a, c);
              v[i + h] = uq_fsub_rn(a, c);
            }
#pragma unroll
        for (int m = 1; m < 32; m *= 2) {
          const float sign = (lane & m) != 0 ? -1.0f : 1.0f;
#pragma unroll
          for (int i = 0; i < 8; ++i)
            v[i] = __fmaf_rn(sign, v[i], uq_lane_xor_f32(v[i], m));
        }
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = uq_fmul_rn(v[i], UQ_FWHT_NORM);
      } else {
        /* The prologue's q_rot: rotated and haircut already, natural order. */
        const float *q_rot = (const float *)p.query +
                             (((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_QG + n) * UQ_HEAD_DIM + 8 * lane;
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = q_rot[i];
      }
      even = uq_wg_e4m3x2(v[2], v[0]) | uq_wg_e4m3x2(v[6], v[4]) << 16;
      odd = uq_wg_e4m3x2(v[3], v[1]) | uq_wg_e4m3x2(v[7], v[5]) << 16;
    }
    const int at = uq_wg_q_offset(n, lane / 4, 4 * (lane & 3));
    *(uq_u32 *)(sm.qt + at) = even;
    *(uq_u32 *)(sm.qt + at + UQ_WG_LBO) = odd;
  }
  uq_wg_fence_async();
  const uq_u64 desc_q = uq_wg_desc(uq_sm90_saddr(sm.qt));
  const uq_u64 desc_p = uq_wg_desc(uq_sm90_saddr(sm.pt));

  /* This thread's queries: 2 tig + e and 8 + 2 tig + e (index i = e + 2 h
   * below), and the D-fragment element of query i in row half r (0: row
   * grp, 1: row grp + 8): (i & 1) + 2 r + 4 (i >> 1). Maxima are in base
   * 2 (log2(e) times the scaled logits). */
  auto query_of = [&](int i) { return (i & 1) + 2 * tig + 8 * (i >> 1); };
  auto elem_of = [](int i) { return (i & 1) + 4 * (i >> 1); }; /* row half 0 */
  const float ninf = uq_neg_inf();
  float m_run[4] = {ninf, ninf, ninf, ninf}; /* the reference: same in every thread */
  /* The true maxima of this thread's scores, kept in shared memory
   * (registers are at the budget); only this thread reads them. */
  sm.seen[tid] = make_float4(ninf, ninf, ninf, ninf);
  if (tid < 8) { /* read after barrier A */
    sm.vlim[tid] = make_uint2(uq_wg_vlim_x2(UQ_WG_VLIM_MIN), uq_wg_vlim_offset_x2(UQ_WG_VLIM_MIN));
    sm.vlim_next[tid] = UQ_WG_VLIM_MIN;
  }
  float l_part[4] = {0.0f, 0.0f, 0.0f, 0.0f}; /* against m_run; this thread's tokens */
  float acc[4][8];
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc[mt][e] = 0.0f;

  /* QK rows grp, grp + 8 are tokens tq and tq + 8 of the chunk. */
  const int tq = uq_wg_qk_token(warp, grp, 0);
  const int vword = uq_wg_v_word(warp, grp);
  const int voff = UQ_WG_VCODE + 4 * vword;
  /* P of the thread's queries, K indices 2 grp (+ 1) of its warp's step:
   * offset of query 2 tig; query + 1 is 16 bytes on, + 8 one N-block. */
  const int p_at = uq_wg_p_offset(2 * tig, uq_wg_p_k(warp, grp, 0));
  /* The V factor words this thread computes each chunk: groups vf_g and
   * vf_g + 1 of the K index pair vf_k, tokens vf_t and vf_t + 8. */
  const int vf_t = uq_wg_vfac_token(tid, 0);
  const int vf_k = uq_wg_vfac_k(tid);
  const int vf_g = uq_wg_vfac_group(tid);
  const int vgroup = vword / 4;
  /* Byte offsets of this thread's accesses: inside a chunk buffer its K
   * words (group g at + 16 g, row tq + 8 at + 8 slots), V words
   * (uq_wg_pv_step), V factor bytes and K scale words; inside the K scale
   * table its reads and its write; inside P its write. Computed once and,
   * on the bulk path, hidden from the compiler (the empty asm), which
   * otherwise derives them again from the thread index every chunk to
   * save registers. The register budget decides how many: the piecewise
   * path's copy state leaves no room, the prologue-query (q_rot) path
   * room for four (more spill there). The piecewise path keeps its own
   * address expressions at each use (the UQ_WG_TMA selects below):
   * written through these offsets, even unhidden, it spills. */
  int o_k = tq * UQ_SM90_SLOT + uq_wg_k_word_offset(0, tig);
  int o_pv = uq_wg_pv_token(0, 2 * tig) * UQ_SM90_SLOT + voff;
  int o_vf = vf_t * UQ_SM90_SLOT + UQ_WG_VSCALE + vf_g;
  int o_kr = tq * (int)sizeof(float4);
  int o_ks = uq_wg_kscale_token(warp, lane) * UQ_SM90_SLOT + UQ_WG_KSCALE + 4 * uq_wg_kscale_half(lane);
  int o_kd = (uq_wg_kscale_half(lane) * UQ_WG_CHUNK + uq_wg_kscale_token(warp, lane)) * (int)sizeof(float4);
  int o_p = p_at;
  if constexpr (UQ_WG_TMA)
    asm volatile("" : "+r"(o_k), "+r"(o_pv), "+r"(o_vf), "+r"(o_kr));
  if constexpr (UQ_WG_TMA && UQ_FUSE_QROT)
    asm volatile("" : "+r"(o_ks), "+r"(o_kd), "+r"(o_p));

#pragma unroll 1
  for (int k = 0; k < nch; ++k) {
    wait_chunk(k);
    uq_barrier(); /* A: chunk k is in (and the query, for k = 0); chunk
                   * k - 1's buffer, P and the V factor table are no
                   * longer read */
    /* Chunk k + 1's copy: on the bulk path its issue waits for QK's first
     * products (below), where every warp waits anyway, so that the
     * issuing warp does not hold up the others' first wgmma. */
    if (!UQ_WG_TMA && k + 1 < nch)
      copy_chunk(k + 1, k + 2);

    const uq_u8 *raw = sm.raw[k & 1];
    const uq_u32 base = uq_wg_chunk_token(part, k, UQ_NUM_PARTITIONS);

    /* ---- V factors lo of the chunk (read by PV after barrier C; PV of
     * chunk k - 1 is done with the table: barrier A) ---- */
    /* The thread's factor words under its groups' limits (src: its two
     * tokens' scale bytes of groups g, g + 1; kd: the word of group g);
     * returns whether a byte passed its group's limit. The slow path
     * calls it again with addresses derived afresh from the thread index
     * (uq_wg_tid_fresh), so that none of this stays live across it. */
    auto write_vfac = [&](const uq_u8 *src, int g, int kd) {
      const uq_u32 x0 = *(const uq_u16 *)src;
      const uq_u32 x1 = *(const uq_u16 *)(src + 8 * UQ_SM90_SLOT); /* uq_wg_vfac_token(tid, 1) */
      const uint4 lim = *(const uint4 *)&sm.vlim[g]; /* groups g, g + 1 */
      bool over0, over1;
      *(uq_u32 *)(sm.vfac + kd) = uq_wg_vscale_lo_x2(uq_wg_vfac_pair(x0, x1, 0), lim.x, lim.y, &over0);
      *(uq_u32 *)(sm.vfac + kd + UQ_WG_VFAC_ROW) =
          uq_wg_vscale_lo_x2(uq_wg_vfac_pair(x0, x1, 1), lim.z, lim.w, &over1);
      return over0 || over1;
    };
    const bool vbig = write_vfac(raw + (UQ_WG_TMA ? o_vf : vf_t * UQ_SM90_SLOT + UQ_WG_VSCALE + vf_g),
                                 vf_g, uq_wg_vfac_offset(vf_g, vf_k));

    /* ---- K scales of the warp's sixteen tokens as fp32, four a lane:
     * QK's accumulation then loads them (the load pipe has room; the
     * integer pipe, which extracting them per use took, has not). Only
     * this warp reads them: a warp barrier orders it. ---- */
    {
      const int t = uq_wg_kscale_token(warp, lane);
      const int h = uq_wg_kscale_half(lane);
      const uq_u32 w = *(const uq_u32 *)(raw + (UQ_WG_TMA ? o_ks : t * UQ_SM90_SLOT + UQ_WG_KSCALE + 4 * h));
      float4 *kd = UQ_WG_TMA ? (float4 *)((uq_u8 *)sm.kscale + o_kd) : &sm.kscale[h][t];
      *kd = make_float4(uq_bits_f32(uq_wg_kscale_bits(w, 0)), uq_bits_f32(uq_wg_kscale_bits(w, 1)),
                        uq_bits_f32(uq_wg_kscale_bits(w, 2)), uq_bits_f32(uq_wg_kscale_bits(w, 3)));
      __syncwarp();
    }

    /* ---- QK: rows (tokens) tq and tq + 8 ---- */
    float s[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      s[e] = 0.0f;
    {
      const uq_u8 *k0 = raw + (UQ_WG_TMA ? o_k : tq * UQ_SM90_SLOT);
      const int k_tig = UQ_WG_TMA ? 0 : tig; /* the rest of o_k */
      const uq_u8 *k1 = k0 + 8 * UQ_SM90_SLOT;
      uq_u32 a[2][2][4];   /* [set][group of the pair][register] */
      float c[2][2][8];
      auto convert = [&](int set, int g0) {
#pragma unroll
        for (int gi = 0; gi < 2; ++gi) {
          const int g = g0 + gi;
          const uq_u32 x = *(const uq_u32 *)(k0 + uq_wg_k_word_offset(g, k_tig));
          const uq_u32 y = *(const uq_u32 *)(k1 + uq_wg_k_word_offset(g, k_tig));
          uq_wg_fp4x8_e4m3(x, &a[set][gi][0], &a[set][gi][2]);
          uq_wg_fp4x8_e4m3(y, &a[set][gi][1], &a[set][gi][3]);
        }
      };
      auto launch = [&](int set, int g0) {
        uq_wg_fence();
        uq_wg_qk(c[set][0], a[set][0], desc_q + (uq_u64)((2 * g0 * UQ_WG_LBO) >> 4));
        uq_wg_qk(c[set][1], a[set][1], desc_q + (uq_u64)((2 * (g0 + 1) * UQ_WG_LBO) >> 4));
        uq_wg_commit();
      };
      auto accumulate = [&](int set, int g0) {
        uq_wg_hold(c[set][0]);
        uq_wg_hold(c[set][1]);
        uq_wg_hold(a[set][0]);
        uq_wg_hold(a[set][1]);
        /* groups g0, g0 + 1 (g0 even) are in one half of the table */
        const float4 *kr = UQ_WG_TMA ? (const float4 *)((const uq_u8 *)sm.kscale[g0 >> 2] + o_kr)
                                        : &sm.kscale[g0 >> 2][tq];
        const float4 ka = kr[0];
        const float4 kb = kr[8];
#pragma unroll
        for (int gi = 0; gi < 2; ++gi) {
          const int g = g0 + gi;
          const float sa = uq_wg_f4_at(ka, g & 3);
          const float sb = uq_wg_f4_at(kb, g & 3);
          const float *cc = c[set][gi];
          s[0] += sa * cc[0];
          s[1] += sa * cc[1];
          s[2] += sb * cc[2];
          s[3] += sb * cc[3];
          s[4] += sa * cc[4];
          s[5] += sa * cc[5];
          s[6] += sb * cc[6];
          s[7] += sb * cc[7];
        }
      };
      convert(0, 0);
      launch(0, 0);
      convert(1, 2);
      launch(1, 2);
      if (UQ_WG_TMA && k + 1 < nch)
        copy_chunk(k + 1, k + 2);
      uq_wg_wait<1>();
      accumulate(0, 0);
      convert(0, 4);
      launch(0, 4);
      uq_wg_wait<1>();
      accumulate(1, 2);
      convert(1, 6);
      launch(1, 6);
      uq_wg_wait<1>();
      accumulate(0, 4);
      uq_wg_wait<0>();
      accumulate(1, 6);
    }

    /* ---- softmax: base-2 scores (2^6, the softmax scale and log2(e)
     * folded into one factor), masked past seq_len in the last chunk ---- */
    constexpr float kscale2 = UQ_SCALE * UQ_WG_K_UNSCALE * UQ_LOG2E;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      s[e] *= kscale2;
    if (base + UQ_WG_CHUNK > seq_len) { /* uniform */
      const uq_u32 t0 = base + tq;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (t0 + 8u * ((e >> 1) & 1) >= seq_len)
          s[e] = ninf;
    }
    /* The chunk's P is taken against the reference m_run, which every
     * thread holds: no exchange of maxima unless a score passes m_run +
     * UQ_WG_SLACK (the first chunk always does: m_run starts at -inf).
     * Weights up to 2^UQ_WG_SLACK are as exact in bf16 and fp32 as
     * weights up to 1, and the sums and outputs only need one reference
     * per query and partition. Each thread also keeps the true maximum of
     * its own scores (sm.seen), merged once at the end, so that segm_max
     * is the partition's maximum as FORMAT.md section 6 has it. */
    float mx[4];
    bool need = false;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = elem_of(i);
      mx[i] = uq_fmax(s[e], s[e + 2]);
      need |= mx[i] > m_run[i] + UQ_WG_SLACK; /* -inf + slack is -inf */
    }
    {
      const float4 m = sm.seen[tid];
      sm.seen[tid] = make_float4(uq_fmax(m.x, mx[0]), uq_fmax(m.y, mx[1]), uq_fmax(m.z, mx[2]),
                                 uq_fmax(m.w, mx[3]));
    }
    /* The chunk's weights per query, added to l_part once the reference
     * is settled (after barrier C or C'). */
    float p_sum[4];
    auto write_p = [&]() {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        /* On the first chunk the reference is -inf and these are inf or
         * NaN; but every chunk has a token below seq_len, whose finite
         * score forces the exchange below, which rewrites P and the sums
         * (and scales l_part and acc, still 0, by 0). */
        const int e = elem_of(i);
        const float p0 = uq_wg_exp2(s[e] - m_run[i]);
        const float p1 = uq_wg_exp2(s[e + 2] - m_run[i]);
        /* The sums keep the unrounded fp32 p; PV takes p in bf16. */
        p_sum[i] = p0 + p1;
        const int n_off = 16 * (i & 1) + UQ_WG_SBO * (i >> 1);
        *(uq_u32 *)(sm.pt + (UQ_WG_TMA ? o_p : p_at) + n_off) = uq_wg_bf16x2(p1, p0);
      }
      uq_wg_fence_async();
    };
    write_p();
    /* C: P and the V factors are in, unless some thread needs a new
     * reference or saw a V scale byte over its group's limit (rare once
     * the limits have settled); then the slow path below. */
    if (__syncthreads_or(need || vbig)) { /* uniform */
      /* The row maxima of the chunk meet in shared memory (the lane
       * groups by shuffles, then the four warps); the barrier carries the
       * V flag. */
#pragma unroll
      for (int mask = 4; mask <= 16; mask *= 2)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          mx[i] = uq_fmax(mx[i], uq_lane_xor_f32(mx[i], mask));
      if (grp == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          ((float *)&sm.red_max[query_of(i)])[warp] = mx[i];
      }
      /* A byte over its group's limit raises the limit (shared atomics,
       * ordered by the barrier that carries the flag). */
      const int tid_f = uq_wg_tid_fresh();
      const int vf_g_f = uq_wg_vfac_group(tid_f);
      const uq_u8 *vf_src = raw + uq_wg_vfac_token(tid_f, 0) * UQ_SM90_SLOT + UQ_WG_VSCALE + vf_g_f;
      if (vbig) {
        const uq_u32 x0 = *(const uq_u16 *)vf_src;
        const uq_u32 x1 = *(const uq_u16 *)(vf_src + 8 * UQ_SM90_SLOT);
        atomicMax(&sm.vlim_next[vf_g_f], uq_wg_vlim_raise(UQ_WG_VLIM_MIN, x0 & 0xFFu, x1 & 0xFFu));
        atomicMax(&sm.vlim_next[vf_g_f + 1], uq_wg_vlim_raise(UQ_WG_VLIM_MIN, x0 >> 8, x1 >> 8));
      }
      const bool any_big = __syncthreads_or(vbig) != 0;
      /* A query moves its reference to the chunk's maximum only when that
       * passes the slack: the same decision in every thread that holds
       * the query (same shared values), but threads holding other queries
       * may decide otherwise: nothing below is conditional on it. */
      float alpha[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 rm = sm.red_max[query_of(i)];
        const float cm = uq_fmax(uq_fmax(rm.x, rm.y), uq_fmax(rm.z, rm.w));
        const float m = cm > m_run[i] + UQ_WG_SLACK ? cm : m_run[i];
        alpha[i] = uq_wg_exp2(m_run[i] - m); /* 2^-inf = 0 for the first */
        m_run[i] = m;
      }
      /* Unconditionally (the slow path is rare): a query that kept its
       * reference has alpha 1 and gets the same sums and P bits again. */
#pragma unroll
      for (int i = 0; i < 4; ++i)
        l_part[i] *= alpha[i];
      /* Raised V limits: the thread's accumulators (all of its V word's
       * group) move to the new one, and its factor words are rewritten
       * under the new limits (nobody reads them before barrier C'). */
      if (any_big) { /* uniform */
        const int vg = uq_wg_v_word(tid_f >> 5, (tid_f & 31) >> 2) / 4; /* vgroup */
        const uq_u32 old = sm.vlim[vg].x & 0xFFFFu;
        const float f = uq_bits_f32(uq_wg_vlim_rescale_bits(old, sm.vlim_next[vg]));
#pragma unroll
        for (int i = 0; i < 4; ++i)
          alpha[i] *= f;
        uq_barrier(); /* every thread has read its old limit */
        if (tid_f < 8) {
          const uq_u32 lim = sm.vlim_next[tid_f];
          sm.vlim[tid_f] = make_uint2(uq_wg_vlim_x2(lim), uq_wg_vlim_offset_x2(lim));
        }
        uq_barrier(); /* the new limits are in */
        write_vfac(vf_src, vf_g_f, uq_wg_vfac_offset(vf_g_f, uq_wg_vfac_k(tid_f)));
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[mt][e] *= alpha[(e & 1) + 2 * (e >> 2)];
      /* Nobody reads P before PV, which follows the barrier. */
      write_p();
      uq_barrier(); /* C': P against the new references and the V factors are in; red_max is read */
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
      l_part[i] += p_sum[i];

    /* ---- PV: step ks covers warp ks's tokens; this thread's A registers
     * hold K indices 2 tig, + 1 (va) and 2 tig + 8, + 9 (vb) of the step,
     * dims from its V word ---- */
    {
      uq_u32 va[2][8], vb[2][8]; /* [set] */
      auto convert = [&](int set, int ks) {
        /* V words of K indices 2 tig, + 1, + 8, + 9 */
        const uq_u8 *ra, *rb, *rc, *rd;
        if constexpr (UQ_WG_TMA) {
          ra = raw + o_pv + uq_wg_pv_step(ks, 0) * UQ_SM90_SLOT;
          rb = raw + o_pv + uq_wg_pv_step(ks, 1) * UQ_SM90_SLOT;
          rc = raw + o_pv + uq_wg_pv_step(ks, 2) * UQ_SM90_SLOT;
          rd = raw + o_pv + uq_wg_pv_step(ks, 3) * UQ_SM90_SLOT;
        } else {
          ra = raw + uq_wg_pv_token(ks, 2 * tig) * UQ_SM90_SLOT + voff;
          rb = raw + uq_wg_pv_token(ks, 2 * tig + 1) * UQ_SM90_SLOT + voff;
          rc = raw + uq_wg_pv_token(ks, 2 * tig + 8) * UQ_SM90_SLOT + voff;
          rd = raw + uq_wg_pv_token(ks, 2 * tig + 9) * UQ_SM90_SLOT + voff;
        }
        const uq_u32 xa = *(const uq_u32 *)ra;
        const uq_u32 ya = *(const uq_u32 *)rb;
        const uq_u32 xb = *(const uq_u32 *)rc;
        const uq_u32 yb = *(const uq_u32 *)rd;
        uq_wg_fp4x8x2_bf16s(xa, ya, va[set]);
        uq_wg_fp4x8x2_bf16s(xb, yb, vb[set]);
        /* lo of K indices 2 tig, + 1 and 2 tig + 8, + 9: one word each */
        const uq_u32 lo_a = *(const uq_u32 *)(sm.vfac + uq_wg_vfac_offset(vgroup, 16 * ks + 2 * tig));
        const uq_u32 lo_b = *(const uq_u32 *)(sm.vfac + uq_wg_vfac_offset(vgroup, 16 * ks + 2 * tig + 8));
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          va[set][j] = uq_sm90_bf16x2_mul(va[set][j], lo_a);
          vb[set][j] = uq_sm90_bf16x2_mul(vb[set][j], lo_b);
        }
      };
      auto retire = [&](int set) {
        uq_wg_hold(va[set]);
        uq_wg_hold(vb[set]);
      };
      auto launch = [&](int set, int ks) {
        uq_wg_fence();
        const uq_u64 d = desc_p + (uq_u64)((2 * ks * UQ_WG_LBO) >> 4);
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
          uq_wg_pv(acc[mt], va[set][2 * mt], va[set][2 * mt + 1], vb[set][2 * mt],
                   vb[set][2 * mt + 1], d);
        uq_wg_commit();
      };
      convert(0, 0);
      launch(0, 0);
      convert(1, 1);
      launch(1, 1);
      uq_wg_wait<1>();
      retire(0);
      convert(0, 2);
      launch(0, 2);
      uq_wg_wait<1>();
      retire(1);
      convert(1, 3);
      launch(1, 3);
      uq_wg_wait<0>();
      retire(0);
      retire(1);
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
        uq_wg_hold(acc[mt]);
    }
  }
  /* Every copy was waited for: the last one at the top of the last chunk. */

  /* ---- the partition's maxima and sums (against m_run), then bf16(acc
   * / l) ---- */
  float l[4], m_true[4];
  {
    const float4 seen = sm.seen[tid];
    float m_seen[4] = {seen.x, seen.y, seen.z, seen.w};
#pragma unroll
    for (int mask = 4; mask <= 16; mask *= 2)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        l_part[i] += uq_lane_xor_f32(l_part[i], mask);
        m_seen[i] = uq_fmax(m_seen[i], uq_lane_xor_f32(m_seen[i], mask));
      }
    if (grp == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int n = query_of(i);
        ((float *)&sm.red_sum[n])[warp] = l_part[i];
        ((float *)&sm.red_max[n])[warp] = m_seen[i]; /* free since C' */
      }
    }
    uq_barrier();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int n = query_of(i);
      const float4 rs = sm.red_sum[n];
      const float4 rm = sm.red_max[n];
      l[i] = (rs.x + rs.y) + (rs.z + rs.w);
      m_true[i] = uq_fmax(uq_fmax(rm.x, rm.y), uq_fmax(rm.z, rm.w));
    }
  }
  uq_u16 *out = (uq_u16 *)p.segm_out;
  /* The accumulators hold the output of the thread's V group divided by
   * 2^(limit - 128) (wgmma_sm90_maps.hip); every limit is settled here
   * (the barrier above follows the last change). */
  const float vunscale = uq_bits_f32(uq_wg_vlim_unscale_bits(sm.vlim[vgroup].x & 0xFFFFu));
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int n = query_of(i);
    if (n >= UQ_QG)
      continue;
    /* One correctly rounded reciprocal per query; acc * (1 / l) is within
     * an fp32 ulp of acc / l before the bf16 rounding (and the power of
     * two changes no rounding). */
    const float inv = l[i] > 0.0f ? __frcp_rn(l[i]) * vunscale : 0.0f;
    uq_u32 w[4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      /* dims 8 vword + 2 mt + h: rows grp (h = 0) and grp + 8 (h = 1) */
      const int e0 = elem_of(i);
      w[mt] = uq_wg_bf16x2(acc[mt][e0 + 2] * inv, acc[mt][e0] * inv);
    }
    uint4 v;
    v.x = w[0];
    v.y = w[1];
    v.z = w[2];
    v.w = w[3];
    *(uint4 *)(out + (row0 + n) * UQ_HEAD_DIM + 8 * vword) = v;
    if (warp == 0 && grp == 0) {
      /* The true maximum, back in natural-log units (FORMAT.md section
       * 6), and the sum moved to it: m_run <= m_true <= m_run + slack
       * (m_run is a chunk's maximum), so the factor is in [2^-8, 1]. */
      p.segm_max[row0 + n] = m_true[i] * (1.0f / UQ_LOG2E);
      p.segm_sum[row0 + n] = l[i] * uq_wg_exp2(m_run[i] - m_true[i]);
    }
  }
}
