/* What the two NVIDIA sm_90 decode layers (decode_mma_sm90.hip,
 * decode_wgmma_sm90.hip) share: a partition's chunk schedule, the empty
 * partition, and the asynchronous copy of a chunk's raw slots into shared
 * memory (the pieces every layer needs are in layer_common.hip). The
 * layers differ in chunk size (CHUNK tokens, a power of two
 * dividing 256) and in when they start and wait for a copy.
 *
 * The copy is flat: a chunk of CHUNK slots of 272 bytes lands contiguously
 * in shared memory (slot t at 272 t), cut into PIECE-byte pieces; the
 * pieces of each run of tokens in one physical block go to a team of
 * threads, thread r of the team copying pieces r, r + team size, ... So
 * consecutive threads write consecutive shared-memory bytes (no bank
 * conflicts), and where a kv head's slots are adjacent in the cache (one
 * kv head, padded_slot 272) they read consecutive global bytes: a run is
 * one coalesced range. Tokens past seq_len are zero-filled without being
 * read (codes 0, scales 0: K and V exactly 0). */

#ifndef UQ_ROUTE_NVRTC
#error "sm90_chunks.hip belongs to the NVIDIA (NVRTC) layers"
#endif

constexpr int UQ_SM90_SLOT = 272; /* bytes of a D=256 slot */
/* 16-byte pieces need 16-byte aligned slots; other paddings copy 4 bytes
 * at a time (padded_slot is a multiple of 4). */
constexpr int UQ_SM90_PIECE = UQ_PADDED_SLOT % 16 == 0 ? 16 : 4;
constexpr int UQ_SM90_SLOT_PIECES = UQ_SM90_SLOT / UQ_SM90_PIECE;
/* Bytes between the slots of consecutive rows of one kv head. */
constexpr long long UQ_SM90_ROW_STRIDE = (long long)UQ_NUM_KV_HEADS * UQ_PADDED_SLOT;

UQ_DEV uq_u32 uq_sm90_saddr(const void *p) { return (uq_u32)__cvta_generic_to_shared(p); }

/* One piece; `valid` false zero-fills it without reading `src`. */
UQ_DEV void uq_sm90_cp(void *dst, const void *src, bool valid) {
  if (UQ_SM90_PIECE == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(uq_sm90_saddr(dst)),
                 "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(uq_sm90_saddr(dst)),
                 "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
}
UQ_DEV void uq_sm90_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/* Until at most N of this thread's commit groups are still in flight. */
template <int N> UQ_DEV void uq_sm90_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* First token of chunk k of partition `part` (FORMAT.md section 6: tile
 * groups part, part + P, ..., each 256 / CHUNK chunks). */
template <int CHUNK> UQ_DEV uq_u32 uq_sm90_chunk_base(int part, int k) {
  constexpr int per_tg = 256 / CHUNK;
  return ((uq_u32)part + (uq_u32)(k / per_tg) * UQ_NUM_PARTITIONS) * 256u +
         (uq_u32)(k % per_tg) * CHUNK;
}

/* Chunks of partition `part`: full tile groups, then the last one's
 * chunks up to seq_len (0 for a partition with no tokens). */
template <int CHUNK> UQ_DEV int uq_sm90_chunks(int part, uq_u32 seq_len) {
  constexpr uq_u32 per_tg = 256 / CHUNK;
  const uq_u32 trips = uq_tile_group_trips(part, seq_len);
  if (trips == 0u)
    return 0;
  const uq_u32 last_tg = part + (trips - 1) * UQ_NUM_PARTITIONS;
  const uq_u32 last = (seq_len - last_tg * 256u + CHUNK - 1) / CHUNK;
  return (int)((trips - 1) * per_tg + (last < per_tg ? last : per_tg));
}

/* bf16 pair times bf16 pair, rounded to nearest (exact where the layers
 * use it: a power of two times an FP4 value). */
UQ_DEV uq_u32 uq_sm90_bf16x2_mul(uq_u32 a, uq_u32 b) {
  uq_u32 d;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/* The physical blocks under a chunk: a chunk is aligned to its size, so
 * it lies in one block when block_size >= CHUNK, else it spans RUNS =
 * CHUNK / block_size whole blocks (runs of SPAN tokens). The threads split
 * into RUNS equal teams, team q copying run q: each thread needs one block
 * number, fetched a chunk ahead of its copy so that the copy does not
 * wait on the block table. A run with no token below seq_len reads as
 * block 0 and is never read from. */
template <int CHUNK> struct uq_sm90_run {
  static constexpr int SPAN = CHUNK < UQ_BLOCK_SIZE ? CHUNK : UQ_BLOCK_SIZE;
  static constexpr int RUNS = CHUNK / SPAN;
  static constexpr int TEAM = UQ_BLOCK_THREADS / RUNS;
  static_assert(UQ_BLOCK_THREADS % RUNS == 0, "sm90 chunk copy: threads per run");
};

/* This thread's block of the chunk at token `base`. */
template <int CHUNK>
UQ_DEV int uq_sm90_load_block(const int *bt_row, uq_u32 seq_len, uq_u32 base, int tid) {
  using run = uq_sm90_run<CHUNK>;
  const uq_u32 t = base + (uq_u32)(tid / run::TEAM * run::SPAN);
  return t < seq_len ? bt_row[t / UQ_BLOCK_SIZE] : 0;
}

/* Starts the copy of the chunk at token `base` of kv head kh into `dst`
 * (CHUNK * 272 bytes); `blk` is this thread's uq_sm90_load_block. The
 * caller commits. */
template <int CHUNK>
UQ_DEV void uq_sm90_copy_chunk(uq_u8 *dst, const uq_u8 *kv, int kh, uq_u32 seq_len, uq_u32 base,
                               int blk, int tid) {
  using run = uq_sm90_run<CHUNK>;
  constexpr int pieces = run::SPAN * UQ_SM90_SLOT_PIECES; /* of a run */
  constexpr int per_thread = (pieces + run::TEAM - 1) / run::TEAM;
  constexpr int step = run::TEAM * UQ_SM90_PIECE; /* bytes between a thread's pieces */
  const int q = tid / run::TEAM;
  const int r = tid % run::TEAM; /* the thread's first piece of the run */
  const uq_u32 first = base + (uq_u32)(q * run::SPAN);
  /* Pieces of the run below seq_len, less r (may be <= 0). */
  const uq_u32 left = seq_len > first ? seq_len - first : 0u;
  const int valid = (int)(left < (uq_u32)run::SPAN ? left : (uq_u32)run::SPAN) * UQ_SM90_SLOT_PIECES - r;
  const uq_i64 row = (uq_i64)blk * UQ_BLOCK_SIZE + (first % UQ_BLOCK_SIZE);
  const uq_u8 *src = kv + uq_slot_offset(row, kh);
  uq_u8 *d = dst + (q * run::SPAN * UQ_SM90_SLOT + UQ_SM90_PIECE * r);
  if (UQ_SM90_ROW_STRIDE == UQ_SM90_SLOT) {
    /* One kv head, no padding: the run is one range, piece i at byte
     * PIECE i of it. */
    const uq_u8 *s = src + UQ_SM90_PIECE * r;
#pragma unroll
    for (int j = 0; j < per_thread; ++j)
      if ((j + 1) * run::TEAM <= pieces || r + j * run::TEAM < pieces)
        uq_sm90_cp(d + step * j, s + step * j, j * run::TEAM < valid);
    return;
  }
  /* A general row stride: piece i sits at byte tok ROW_STRIDE + PIECE sub
   * of the run, (tok, sub) = divmod(i, pieces a slot). The offset walks
   * from the thread's first piece, TEAM pieces a step (whole slots and a
   * remainder that may carry into the next slot), recomputed each chunk
   * (the empty asm): a few registers rather than a hoisted offset per
   * piece, which spilled. */
  static_assert((long long)run::SPAN * UQ_SM90_ROW_STRIDE < (1LL << 31),
                "sm90 chunk copy: a run's offsets must fit 32 bits");
  constexpr int whole = run::TEAM / UQ_SM90_SLOT_PIECES;
  constexpr int rest = run::TEAM % UQ_SM90_SLOT_PIECES;
  int sub = r % UQ_SM90_SLOT_PIECES;
  int off = (r / UQ_SM90_SLOT_PIECES) * (int)UQ_SM90_ROW_STRIDE + UQ_SM90_PIECE * sub;
  asm volatile("" : "+r"(sub), "+r"(off));
#pragma unroll
  for (int j = 0; j < per_thread; ++j) {
    if ((j + 1) * run::TEAM > pieces && r + j * run::TEAM >= pieces)
      break;
    uq_sm90_cp(d + step * j, src + off, j * run::TEAM < valid);
    off += whole * (int)UQ_SM90_ROW_STRIDE + UQ_SM90_PIECE * rest;
    sub += rest;
    if (sub >= UQ_SM90_SLOT_PIECES) {
      sub -= UQ_SM90_SLOT_PIECES;
      off += (int)UQ_SM90_ROW_STRIDE - UQ_SM90_SLOT;
    }
  }
}

/* Bulk copies (the Tensor Memory Accelerator, cp.async.bulk), for the
 * warpgroup layer where every run of a chunk is one range (one kv head,
 * padded_slot 272): one instruction from one thread per run instead of a
 * 16-byte cp.async per piece from every thread, with completion counted
 * in bytes on a shared-memory barrier (mbarrier) rather than per-thread
 * commit groups. Only the tokens below seq_len are read (whole slots,
 * multiples of 16 bytes, from a 16-byte aligned cache); the rest of a
 * partial chunk is zeroed with plain stores, as the piecewise copy
 * zero-fills it. */
constexpr bool UQ_SM90_BULK = UQ_SM90_ROW_STRIDE == UQ_SM90_SLOT;

/* A barrier that completes when `count` threads have arrived and the
 * bytes they announced have landed. One thread initialises it; a block
 * barrier must follow before anybody else uses it. */
UQ_DEV void uq_sm90_mbar_init(uq_u64 *bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(uq_sm90_saddr(bar)), "r"(count)
               : "memory");
  /* Make the initialisation visible to the bulk copies (async proxy). */
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* Until the barrier's phase with this parity (0 for its first use, 1 for
 * its second, ...) has completed. */
UQ_DEV void uq_sm90_mbar_wait(uq_u64 *bar, uq_u32 parity) {
  uq_u32 done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(uq_sm90_saddr(bar)), "r"(parity)
                 : "memory");
  } while (!done);
}

/* The block number of the run thread tid < RUNS copies, fetched a chunk
 * ahead as for the piecewise copy (0 past seq_len). */
template <int CHUNK>
UQ_DEV int uq_sm90_bulk_block(const int *bt_row, uq_u32 seq_len, uq_u32 base, int tid) {
  using run = uq_sm90_run<CHUNK>;
  const uq_u32 t = base + (uq_u32)(tid * run::SPAN);
  return t < seq_len ? bt_row[t / UQ_BLOCK_SIZE] : 0;
}

/* Starts the copy of the chunk at token `base` (below seq_len) of kv head
 * kh into `dst` (CHUNK * 272 bytes, 16-byte aligned), completing on `bar`
 * (initialised for RUNS arrivals): the run of thread tid < RUNS, whose
 * uq_sm90_bulk_block is `blk`; only those threads call it. The chunk's
 * previous contents must no longer be read (a block barrier since). */
template <int CHUNK>
UQ_DEV void uq_sm90_bulk_run(uq_u8 *dst, const uq_u8 *kv, int kh, uq_u32 seq_len, uq_u32 base,
                             int blk, int tid, uq_u64 *bar) {
  static_assert(UQ_SM90_BULK, "sm90 bulk copy: slots must be one range");
  using run = uq_sm90_run<CHUNK>;
  const uq_u32 live = seq_len - base < (uq_u32)CHUNK ? seq_len - base : (uq_u32)CHUNK;
  const uq_u32 first = base + (uq_u32)(tid * run::SPAN);
  const uq_u32 left = live > (uq_u32)(tid * run::SPAN) ? live - (uq_u32)(tid * run::SPAN) : 0u;
  const uq_u32 bytes = (left < (uq_u32)run::SPAN ? left : (uq_u32)run::SPAN) * UQ_SM90_SLOT;
  const uq_i64 row = (uq_i64)blk * UQ_BLOCK_SIZE + (first % UQ_BLOCK_SIZE);
  const uq_u8 *src = kv + uq_slot_offset(row, kh);
  const uq_u32 b = uq_sm90_saddr(bar);
  /* The block barrier ordered the generic-proxy reads of the old
   * contents; this orders them before the async proxy's writes. */
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes)
               : "memory");
  if (bytes != 0u)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
                 "%2, [%3];\n" ::"r"(uq_sm90_saddr(dst + tid * run::SPAN * UQ_SM90_SLOT)),
                 "l"(src), "r"(bytes), "r"(b)
                 : "memory");
}

/* Tensor copies (cp.async.bulk.tensor), for the warpgroup layer where a
 * kv head's slots are not one range (several kv heads: a token's heads
 * sit side by side, so one head's slots are ROW_STRIDE bytes apart): the
 * host describes the cache to the Tensor Memory Accelerator as a 3-D
 * tensor of 32-bit words (slot word, kv head, cache row; strides
 * padded_slot and ROW_STRIDE bytes, which must be multiples of 16) and
 * passes that map in the kernel's parameters (uq_decode_wg_params); a box
 * of 68 words x 1 head x SPAN rows is one run of a chunk, landing dense
 * (272 bytes a slot) as the other copies do. One instruction from one
 * thread per run, completion in bytes on the chunk's mbarrier, as for the
 * bulk copies. A box always lands whole, so the rows of a partial chunk
 * past seq_len (stale slots of the run's block) are read too and zeroed
 * after the wait (uq_sm90_bulk_zero); runs with no token below seq_len
 * are not copied. */
constexpr bool UQ_SM90_TENSOR = !UQ_SM90_BULK && UQ_PADDED_SLOT % 16 == 0;

/* Lets the first tensor copy find the map's descriptor cached. */
UQ_DEV void uq_sm90_tensor_prefetch(const void *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

/* Starts the tensor copy of the run of thread tid < RUNS of the chunk at
 * token `base` (below seq_len) of kv head kh into `dst`, completing on
 * `bar` (initialised for RUNS arrivals); `blk` is the thread's
 * uq_sm90_bulk_block. Only those threads call it; the chunk's previous
 * contents must no longer be read (a block barrier since). */
template <int CHUNK>
UQ_DEV void uq_sm90_tensor_run(uq_u8 *dst, const void *map, int kh, uq_u32 seq_len, uq_u32 base,
                               int blk, int tid, uq_u64 *bar) {
  static_assert(UQ_SM90_TENSOR, "sm90 tensor copy: slots must be 16-byte aligned");
  using run = uq_sm90_run<CHUNK>;
  const uq_u32 live = seq_len - base < (uq_u32)CHUNK ? seq_len - base : (uq_u32)CHUNK;
  const uq_u32 first = base + (uq_u32)(tid * run::SPAN);
  const bool any = live > (uq_u32)(tid * run::SPAN);
  /* The host keeps every cache row below 2^31 (a 32-bit coordinate). */
  const int row = blk * UQ_BLOCK_SIZE + (int)(first % UQ_BLOCK_SIZE);
  const uq_u32 b = uq_sm90_saddr(bar);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b),
               "r"(any ? (uq_u32)(run::SPAN * UQ_SM90_SLOT) : 0u)
               : "memory");
  if (any)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(uq_sm90_saddr(dst + tid * run::SPAN * UQ_SM90_SLOT)),
                 "l"(map), "r"(0), "r"(kh), "r"(row), "r"(b)
                 : "memory");
}

/* The rest of that chunk past seq_len, zeroed with plain stores by every
 * thread (as the piecewise copy zero-fills it); nothing where the chunk
 * is full (uniform: only a partition's last chunk can be partial). */
template <int CHUNK>
UQ_DEV void uq_sm90_bulk_zero(uq_u8 *dst, uq_u32 seq_len, uq_u32 base, int tid) {
  const uq_u32 live = seq_len - base < (uq_u32)CHUNK ? seq_len - base : (uq_u32)CHUNK;
  if (live < (uq_u32)CHUNK) {
    uint4 *z = (uint4 *)(dst + live * UQ_SM90_SLOT);
    const int n = (int)((CHUNK - live) * (UQ_SM90_SLOT / 16));
    for (int i = tid; i < n; i += UQ_BLOCK_THREADS)
      z[i] = make_uint4(0u, 0u, 0u, 0u);
  }
}
