/* The decode kernel on NVIDIA sm_90a with warpgroup matrix instructions
 * (variant WARPGROUP). Same contract as decode.hip: grid (B, Hk, P), one
 * block owns (sequence b, kv head kh, partition part) and all UQ_QG query
 * heads of that kv head, walks the strided tile-group schedule (FORMAT.md
 * section 6) and writes the partition's bf16 output normalised by its own
 * sum, with its max (natural-log units of the scaled logits) and sum. Same
 * numerics: the query rotated and haircut to E4M3 with the shared fp32
 * steps (or read from the prologue's q_rot), K and V dequantized exactly,
 * P rounded to bf16 for PV, fp32 accumulation.
 *
 * One warpgroup (128 threads). Tokens go in chunks of 64 (four per
 * 256-token tile group), copied raw (272 bytes a slot) into shared memory
 * with cp.async, double buffered: chunk k + 1 is copied while chunk k is
 * computed. Per chunk (wgmma_sm90_maps.hip has the fragment maps):
 *  - QK: eight wgmma m64n16k32 e4m3, one per 32-dim group, K converted to
 *    E4M3 in registers (A), the haircut query read by the tensor cores
 *    from shared memory (B); each group's fp32 result times the group's
 *    K scale per token, summed in fp32. Two groups in flight while the
 *    next two are converted.
 *  - Softmax: the chunk's per-query maxima meet in shared memory (one
 *    barrier); every thread then knows the running max, rescales its
 *    accumulators, and writes its P (bf16) into the B operand of PV; the
 *    row sums stay per thread until the end.
 *  - PV: sixteen wgmma m64n16k16 bf16 (four 64-dim tiles x four 16-token
 *    steps), V dequantized to bf16 with the scale folded in, straight into
 *    the A registers (no shared-memory round trip), one step converted
 *    while the previous one runs.
 * Three barriers a chunk: A (chunk k is in, chunk k - 1's buffer and P
 * are free), B (row maxima), C (P is in). */

#ifndef UQ_ROUTE_NVRTC
#error "decode_wgmma_sm90.hip is the NVIDIA (NVRTC) warpgroup layer"
#endif

static_assert(UQ_HEAD_DIM == 256, "warpgroup decode layer: head_dim must be 256");
static_assert(UQ_QG >= 1 && UQ_QG <= 16, "warpgroup decode layer: query_group_size must be <= 16");
static_assert(UQ_BLOCK_THREADS == 128, "warpgroup decode layer: one warpgroup");

constexpr int UQ_WG_CHUNK = 64;                        /* tokens per chunk */
constexpr int UQ_WG_SLOT = 272;                        /* bytes of a D=256 slot */
constexpr int UQ_WG_KSCALE = 128;                      /* slot offsets */
constexpr int UQ_WG_VCODE = 136;
constexpr int UQ_WG_VSCALE = 264;
constexpr bool UQ_WG_CP16 = UQ_PADDED_SLOT % 16 == 0;  /* 16-byte copies stay aligned */
/* Blocks per multiprocessor the register budget is sized for (<= 128
 * registers a thread); shared memory (42 KB a block) allows five. */
constexpr int UQ_WG_MIN_BLOCKS = 4;

struct alignas(128) uq_wg_smem {
  union {
    uq_u8 raw[2][UQ_WG_CHUNK * UQ_WG_SLOT];
  } u;
  alignas(128) uq_u8 qt[16 * UQ_HEAD_DIM];       /* B of QK: the haircut query, E4M3 */
  alignas(128) uq_u8 pt[16 * UQ_WG_CHUNK * 2];   /* B of PV: P, bf16 */
  float4 red_max[16];                            /* [query]: the four warps' values */
  float4 red_sum[16];
};
static_assert(sizeof(uq_wg_smem) <= 48 * 1024, "warpgroup decode layer: static shared memory");

UQ_DEV uq_u32 uq_wg_saddr(const void *p) { return (uq_u32)__cvta_generic_to_shared(p); }

UQ_DEV void uq_wg_cp16(void *dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(uq_wg_saddr(dst)), "l"(src),
               "r"(bytes)
               : "memory");
}
UQ_DEV void uq_wg_cp4(void *dst, const void *src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(uq_wg_saddr(dst)), "l"(src),
               "r"(bytes)
               : "memory");
}
UQ_DEV void uq_wg_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
UQ_DEV void uq_wg_cp_wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

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

UQ_DEV uq_u32 uq_wg_bf16x2_mul(uq_u32 a, uq_u32 b) {
  uq_u32 d;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/* The E4M3 byte of a value that is one already (the haircut query):
 * exact, so the rounding mode does not matter. */
UQ_DEV uq_u32 uq_wg_e4m3_byte(float x) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(0.0f), "f"(x));
  return (uq_u32)r & 0xFFu;
}

/* First token of chunk k of this partition's schedule (token indices fit
 * 32 bits: the host refuses windows past INT32_MAX). */
UQ_DEV uq_u32 uq_wg_chunk_base(int part, int k) {
  return ((uq_u32)part + (uq_u32)(k >> 2) * UQ_NUM_PARTITIONS) * 256u + (uq_u32)(k & 3) * UQ_WG_CHUNK;
}

UQ_KERNEL __launch_bounds__(UQ_BLOCK_THREADS, UQ_WG_MIN_BLOCKS) void UQ_KERNEL_NAME(uq_decode_params p) {
  UQ_SHARED uq_wg_smem sm;

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

  const long long window = (long long)UQ_MAX_BLOCKS * UQ_BLOCK_SIZE;
  long long len64 = p.seq_lens[b];
  len64 = len64 < 0 ? 0 : (len64 > window ? window : len64);
  const uq_u32 seq_len = (uq_u32)len64;
  const uq_u32 total = (seq_len + 255u) / 256u;
  int nch = 0;
  if (total > (uq_u32)part) {
    uq_u32 trips = (total - part + UQ_NUM_PARTITIONS - 1) / UQ_NUM_PARTITIONS;
    trips = trips < (uq_u32)UQ_TGPP ? trips : (uq_u32)UQ_TGPP;
    const uq_u32 last_tg = part + (trips - 1) * UQ_NUM_PARTITIONS;
    const uq_u32 last = (seq_len - last_tg * 256u + UQ_WG_CHUNK - 1) / UQ_WG_CHUNK;
    nch = (int)((trips - 1) * 4 + (last < 4u ? last : 4u));
  }

  const uq_i64 row0 = (((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS + part) * UQ_QG;
  uq_u16 *out = (uq_u16 *)p.segm_out;
  if (nch == 0) {
    /* An empty partition: max -inf, sum 0, zeros (uniform per block). */
    uq_u32 *o = (uq_u32 *)(out + row0 * UQ_HEAD_DIM);
    for (int k = tid; k < UQ_QG * UQ_HEAD_DIM / 2; k += UQ_BLOCK_THREADS)
      o[k] = 0u;
    if (tid < UQ_QG) {
      p.segm_max[row0 + tid] = uq_neg_inf();
      p.segm_sum[row0 + tid] = 0.0f;
    }
    return;
  }

  /* Copy roles: two threads per token of a chunk. Tokens past seq_len
   * never touch their block-table entry or slot: their copy is zero-filled
   * (codes 0, scales 0: K and V exactly 0, and the score is masked). */
  const int ctok = tid >> 1;
  const int csub = tid & 1;
  const int *bt_row = p.block_table + (uq_i64)b * UQ_MAX_BLOCKS;
  auto load_block = [&](int k) -> int {
    const uq_u32 t = uq_wg_chunk_base(part, k) + ctok;
    return t < seq_len ? bt_row[t / UQ_BLOCK_SIZE] : 0;
  };
  auto issue = [&](int k, int blk) {
    const uq_u32 t = uq_wg_chunk_base(part, k) + ctok;
    const bool valid = t < seq_len;
    const uq_u8 *src = p.kv_cache;
    if (valid) {
      const uq_i64 row = (uq_i64)blk * UQ_BLOCK_SIZE + (t % UQ_BLOCK_SIZE);
      src += (row * UQ_NUM_KV_HEADS + kh) * (uq_i64)UQ_PADDED_SLOT;
    }
    uq_u8 *dst = sm.u.raw[k & 1] + ctok * UQ_WG_SLOT;
    if (UQ_WG_CP16) {
      const int n = valid ? 16 : 0;
#pragma unroll
      for (int jj = 0; jj < 9; ++jj) {
        const int j = 2 * jj + csub;
        if (j < UQ_WG_SLOT / 16)
          uq_wg_cp16(dst + 16 * j, src + (valid ? 16 * j : 0), n);
      }
    } else {
      const int n = valid ? 4 : 0;
#pragma unroll 2
      for (int j = csub; j < UQ_WG_SLOT / 4; j += 2)
        uq_wg_cp4(dst + 4 * j, src + (valid ? 4 * j : 0), n);
    }
  };

  /* Chunk 0's copy goes first, before the query work; chunk 1's block
   * numbers are fetched one chunk ahead of its copy. */
  issue(0, load_block(0));
  uq_wg_cp_commit();
  int blk_next = nch > 1 ? load_block(1) : 0;

  /* The query as the B operand of QK: E4M3 bytes, rows >= UQ_QG zero, the
   * dims of each group permuted as the K registers are (uq_wg_q_dim). Warp
   * w takes rows 4 w .. 4 w + 3, lane l dims 8 l .. 8 l + 7 of a row: the
   * rotation's butterflies of stride 1, 2, 4 stay in registers, those of
   * stride 8 .. 128 pair lanes l and l ^ (stride / 8); same operations in
   * the same order as uq_fwht_shared (hence the same bits), without its
   * shared-memory round trips. The lane's E4M3 bytes are two words of
   * the operand: even dims at K-block 2 g, odd dims at 2 g + 1 (g = l / 4),
   * positions 4 (l % 4) .. + 3. */
#pragma unroll 1
  for (int j = 0; j < 4; ++j) {
    const int n = 4 * warp + j;
    uq_u32 even = 0u, odd = 0u;
    if (n < UQ_QG) {
      float v[8];
      if (UQ_FUSE_QROT) {
        const uq_i64 e0 = (uq_i64)b * UQ_Q_STRIDE_SEQ + (uq_i64)(kh * UQ_QG + n) * UQ_Q_STRIDE_HEAD + 8 * lane;
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = uq_load_elem(p.query, UQ_DTYPE, e0 + i);
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
          const bool upper = (lane & m) != 0;
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const float o = uq_lane_xor_f32(v[i], m);
            v[i] = upper ? uq_fsub_rn(o, v[i]) : uq_fadd_rn(v[i], o);
          }
        }
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = uq_haircut_e4m3(uq_fmul_rn(v[i], UQ_FWHT_NORM));
      } else {
        /* The prologue's q_rot: rotated and haircut already, natural order. */
        const float *q_rot = (const float *)p.query +
                             (((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_QG + n) * UQ_HEAD_DIM + 8 * lane;
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = q_rot[i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        even |= uq_wg_e4m3_byte(v[2 * i]) << (8 * i);
        odd |= uq_wg_e4m3_byte(v[2 * i + 1]) << (8 * i);
      }
    }
    const int at = uq_wg_q_offset(n, lane / 4, 4 * (lane & 3));
    *(uq_u32 *)(sm.qt + at) = even;
    *(uq_u32 *)(sm.qt + at + UQ_WG_LBO) = odd;
  }
  uq_wg_fence_async();
  const uq_u64 desc_q = uq_wg_desc(uq_wg_saddr(sm.qt));
  const uq_u64 desc_p = uq_wg_desc(uq_wg_saddr(sm.pt));

  /* This thread's queries: 2 tig + e and 8 + 2 tig + e (index i = e + 2 h
   * below), and the D-fragment element of query i in row half r (0: row
   * grp, 1: row grp + 8): (i & 1) + 2 r + 4 (i >> 1). */
  const float ninf = uq_neg_inf();
  float m_run[4] = {ninf, ninf, ninf, ninf}; /* same in every thread */
  float l_part[4] = {0.0f, 0.0f, 0.0f, 0.0f}; /* this thread's tokens only */
  float acc[4][8];
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc[mt][e] = 0.0f;

  const int vword = uq_wg_v_word(warp, grp);
  const int voff = UQ_WG_VCODE + 4 * vword;
  const int vsoff = UQ_WG_VSCALE + vword / 4;

#pragma unroll 1
  for (int k = 0; k < nch; ++k) {
    uq_wg_cp_wait0();
    uq_barrier(); /* A: chunk k is in (and the query, for k = 0); chunk
                   * k - 1's buffer and P are no longer read */
    if (k + 1 < nch) {
      issue(k + 1, blk_next);
      blk_next = k + 2 < nch ? load_block(k + 2) : 0;
    }
    uq_wg_cp_commit();

    const uq_u8 *raw = sm.u.raw[k & 1];
    const uq_u32 base = uq_wg_chunk_base(part, k);

    /* ---- QK: rows (tokens) 16 warp + grp and + 8 ---- */
    float s[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      s[e] = 0.0f;
    {
      const uq_u8 *k0 = raw + (16 * warp + grp) * UQ_WG_SLOT;
      const uq_u8 *k1 = k0 + 8 * UQ_WG_SLOT;
      const uint2 sc0 = *(const uint2 *)(k0 + UQ_WG_KSCALE);
      const uint2 sc1 = *(const uint2 *)(k1 + UQ_WG_KSCALE);
      uq_u32 a[2][2][4];   /* [set][group of the pair][register] */
      float c[2][2][8];
      auto convert = [&](int set, int g0) {
#pragma unroll
        for (int gi = 0; gi < 2; ++gi) {
          const int g = g0 + gi;
          const uq_u32 x = *(const uq_u32 *)(k0 + uq_wg_k_word_offset(g, tig));
          const uq_u32 y = *(const uq_u32 *)(k1 + uq_wg_k_word_offset(g, tig));
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
#pragma unroll
        for (int gi = 0; gi < 2; ++gi) {
          const int g = g0 + gi;
          const uq_u32 w0 = g < 4 ? sc0.x : sc0.y;
          const uq_u32 w1 = g < 4 ? sc1.x : sc1.y;
          const float sa = uq_bits_f32(uq_wg_kscale_bits(w0, g & 3));
          const float sb = uq_bits_f32(uq_wg_kscale_bits(w1, g & 3));
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

    /* ---- softmax: the scaled scores (2^6 and the softmax scale folded in,
     * exact), masked past seq_len ---- */
    constexpr float kscale = UQ_SCALE * UQ_WG_K_UNSCALE;
    const uq_u32 t0 = base + 16 * warp + grp;
    const bool v0 = t0 < seq_len;
    const bool v1 = t0 + 8 < seq_len;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const bool v = (e & 2) ? v1 : v0;
      s[e] = v ? kscale * s[e] : ninf;
    }
    {
      float mx[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = (i & 1) + 4 * (i >> 1);
        mx[i] = uq_fmax(s[e], s[e + 2]);
      }
#pragma unroll
      for (int mask = 4; mask <= 16; mask *= 2)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          mx[i] = uq_fmax(mx[i], uq_lane_xor_f32(mx[i], mask));
      if (grp == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          ((float *)&sm.red_max[(i & 1) + 2 * tig + 8 * (i >> 1)])[warp] = mx[i];
      }
    }
    uq_barrier(); /* B: the chunk's row maxima are in */

    float alpha[4];
    float mn[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 rm = sm.red_max[(i & 1) + 2 * tig + 8 * (i >> 1)];
      const float m = uq_fmax(uq_fmax(uq_fmax(m_run[i], rm.x), rm.y), uq_fmax(rm.z, rm.w));
      mn[i] = m;
      alpha[i] = 1.0f;
      if (m != ninf)
        alpha[i] = m_run[i] == ninf ? 0.0f : uq_exp2((m_run[i] - m) * UQ_LOG2E);
      m_run[i] = m;
    }
    {
      float pr[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int i = (e & 1) + 2 * (e >> 2);
        pr[e] = s[e] == ninf ? 0.0f : uq_exp2((s[e] - mn[i]) * UQ_LOG2E);
      }
      /* The sums keep the unrounded fp32 p; PV takes p in bf16. */
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = (i & 1) + 4 * (i >> 1);
        l_part[i] = l_part[i] * alpha[i] + (pr[e] + pr[e + 2]);
      }
      const int tl = 16 * warp + grp;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int n = (e & 1) + 2 * tig + 8 * (e >> 2);
        const int t = tl + 8 * ((e >> 1) & 1);
        *(uq_u16 *)(sm.pt + uq_wg_p_offset(n, t)) = uq_f32_to_bf16(pr[e]);
      }
      uq_wg_fence_async();
    }
    /* alpha is the same in every thread (the maxima are): skipping a
     * multiply by 1 changes no bit. */
    if (alpha[0] != 1.0f || alpha[1] != 1.0f || alpha[2] != 1.0f || alpha[3] != 1.0f) {
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[mt][e] *= alpha[(e & 1) + 2 * (e >> 2)];
    }
    uq_barrier(); /* C: P is in */

    /* ---- PV: step ks covers tokens 16 ks .. + 15; this thread's A
     * registers hold tokens 2 tig, + 1 (a0, a1) and 2 tig + 8, + 9 (a2, a3)
     * of the step, dims from its V word ---- */
    {
      uq_u32 va[2][8], vb[2][8]; /* [set]: token pairs (2 tig, + 1), (2 tig + 8, + 9) */
      auto convert = [&](int set, int ks) {
        const uq_u8 *r0 = raw + (16 * ks + 2 * tig) * UQ_WG_SLOT;
        const uq_u32 xa = *(const uq_u32 *)(r0 + voff);
        const uq_u32 ya = *(const uq_u32 *)(r0 + UQ_WG_SLOT + voff);
        const uq_u32 xb = *(const uq_u32 *)(r0 + 8 * UQ_WG_SLOT + voff);
        const uq_u32 yb = *(const uq_u32 *)(r0 + 9 * UQ_WG_SLOT + voff);
        const uq_u32 bxa = r0[vsoff];
        const uq_u32 bya = r0[UQ_WG_SLOT + vsoff];
        const uq_u32 bxb = r0[8 * UQ_WG_SLOT + vsoff];
        const uq_u32 byb = r0[9 * UQ_WG_SLOT + vsoff];
        uq_wg_fp4x8x2_bf16s(xa, ya, va[set]);
        uq_wg_fp4x8x2_bf16s(xb, yb, vb[set]);
        const uq_u32 lo_a = uq_wg_vscale_lo2(bxa, bya);
        const uq_u32 lo_b = uq_wg_vscale_lo2(bxb, byb);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          va[set][j] = uq_wg_bf16x2_mul(va[set][j], lo_a);
          vb[set][j] = uq_wg_bf16x2_mul(vb[set][j], lo_b);
        }
        /* Scale bytes over 128 (V groups past 12 in magnitude) need the
         * second factor; a multiply by 1 changes nothing elsewhere. */
        const bool big = bxa > 128u || bya > 128u || bxb > 128u || byb > 128u;
        if (__any_sync(0xffffffffu, big)) {
          const uq_u32 hi_a = uq_wg_vscale_hi2(bxa, bya);
          const uq_u32 hi_b = uq_wg_vscale_hi2(bxb, byb);
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            va[set][j] = uq_wg_bf16x2_mul(va[set][j], hi_a);
            vb[set][j] = uq_wg_bf16x2_mul(vb[set][j], hi_b);
          }
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
  uq_wg_cp_wait0();

  /* ---- the partition's sums, then bf16(acc / l) ---- */
  float l[4];
  {
#pragma unroll
    for (int mask = 4; mask <= 16; mask *= 2)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        l_part[i] += uq_lane_xor_f32(l_part[i], mask);
    if (grp == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ((float *)&sm.red_sum[(i & 1) + 2 * tig + 8 * (i >> 1)])[warp] = l_part[i];
    }
    uq_barrier();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 rs = sm.red_sum[(i & 1) + 2 * tig + 8 * (i >> 1)];
      l[i] = (rs.x + rs.y) + (rs.z + rs.w);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int n = (i & 1) + 2 * tig + 8 * (i >> 1);
    if (n >= UQ_QG)
      continue;
    const float inv_ok = l[i] > 0.0f ? 1.0f : 0.0f;
    uq_u32 w[4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      /* dims 8 vword + 2 mt + h: rows grp (h = 0) and grp + 8 (h = 1) */
      const int e0 = (i & 1) + 4 * (i >> 1);
      const float o0 = inv_ok != 0.0f ? acc[mt][e0] / l[i] : 0.0f;
      const float o1 = inv_ok != 0.0f ? acc[mt][e0 + 2] / l[i] : 0.0f;
      w[mt] = (uq_u32)uq_f32_to_bf16(o0) | ((uq_u32)uq_f32_to_bf16(o1) << 16);
    }
    uint4 v;
    v.x = w[0];
    v.y = w[1];
    v.z = w[2];
    v.w = w[3];
    *(uint4 *)(out + (row0 + n) * UQ_HEAD_DIM + 8 * vword) = v;
    if (warp == 0 && grp == 0) {
      p.segm_max[row0 + n] = m_run[i];
      p.segm_sum[row0 + n] = l[i];
    }
  }
}
