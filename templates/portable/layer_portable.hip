/* The portable target layer of the decode kernel: scalar FMA on any GPU.
 * It owns the four target-specific steps of a 16-token tile (the QK tile
 * product, the V dequantization, the PV tile product, and the layout of
 * the query in shared memory they read); the decode core around it does
 * paging, masking, the online softmax and the partial outputs. A matrix
 * layer replaces this file and keeps the same names.
 *
 * Thread mapping: for QK and V, UQ_KGRP threads per token, each owning
 * UQ_KDPT consecutive head dims (whole groups of 32, so one UE8M0 byte per
 * 32 dims); adjacent threads read adjacent 16-byte chunks of a slot. For PV,
 * each thread owns UQ_PV_DPT dims (stride UQ_PV_TPR) of UQ_PV_HPT heads. */

constexpr int UQ_TILE = 16;
constexpr int UQ_KGRP = UQ_BLOCK_THREADS / UQ_TILE < UQ_HEAD_DIM / 32
                            ? UQ_BLOCK_THREADS / UQ_TILE : UQ_HEAD_DIM / 32;
constexpr int UQ_KDPT = UQ_HEAD_DIM / UQ_KGRP;
/* The query row is padded by one float after each thread's span, so that
 * the UQ_KGRP threads of a token read distinct banks. */
constexpr int UQ_QPAD = 1;
constexpr int UQ_QROW = UQ_HEAD_DIM + UQ_KGRP * UQ_QPAD;
constexpr int UQ_PV_TPR = UQ_BLOCK_THREADS < UQ_HEAD_DIM ? UQ_BLOCK_THREADS : UQ_HEAD_DIM;
constexpr int UQ_PV_DPT = UQ_HEAD_DIM / UQ_PV_TPR;
constexpr int UQ_PV_HS = UQ_BLOCK_THREADS / UQ_PV_TPR;
constexpr int UQ_PV_HPT = (UQ_QG + UQ_PV_HS - 1) / UQ_PV_HS;
/* V tile rows in bf16 (dequantized FP4 values are exact in bf16), padded
 * by two elements to stagger banks and keep rows 4-byte aligned. */
constexpr int UQ_VROW = UQ_HEAD_DIM + 2;

static_assert(UQ_KGRP >= 1 && UQ_KDPT % 32 == 0, "QK mapping needs whole groups");
static_assert(UQ_BLOCK_THREADS % UQ_WAVE == 0 || UQ_BLOCK_THREADS < UQ_WAVE,
              "block is whole waves");

/* Element j of query row i in shared memory. */
UQ_DEV int uq_q_index(int i, int j) { return i * UQ_QROW + j + (j / UQ_KDPT) * UQ_QPAD; }

struct uq_layer_smem {
  float red[UQ_KGRP][UQ_QG][UQ_TILE]; /* partial dots per dim span */
  uq_u16 v[UQ_TILE][UQ_VROW];         /* the V tile, bf16 bits */
};

/* QK partial dots and V dequantization of one token by one thread.
 * `slot` is the token's slot, or null for a masked token (never read: its
 * V row becomes exact zeros). Threads past UQ_TILE * UQ_KGRP do nothing. */
UQ_DEV void uq_layer_load_tile(uq_layer_smem *sm, const float *q_s,
                               const uq_u8 *slot, int tid) {
  if (tid >= UQ_TILE * UQ_KGRP)
    return;
  const int tok = tid / UQ_KGRP;
  const int grp = tid % UQ_KGRP;
  const int d0 = grp * UQ_KDPT;
  float part[UQ_QG];
#pragma unroll
  for (int i = 0; i < UQ_QG; ++i)
    part[i] = 0.0f;
#pragma unroll 1
  for (int sg = 0; sg < UQ_KDPT / 32; ++sg) {
    const int dg = d0 + sg * 32;
    const uq_u32 *kc = slot != nullptr ? (const uq_u32 *)(slot + dg / 2) : nullptr;
    uq_u32 vw[4] = {0u, 0u, 0u, 0u};
    float kscale = 0.0f;
    float vscale = 0.0f;
    if (slot != nullptr) {
      const uq_u32 *vc = (const uq_u32 *)(slot + UQ_HEAD_DIM / 2 + UQ_HEAD_DIM / 32 + dg / 2);
#pragma unroll
      for (int w = 0; w < 4; ++w)
        vw[w] = vc[w];
      kscale = uq_ue8m0_half(slot[UQ_HEAD_DIM / 2 + dg / 32]);
      vscale = uq_ue8m0_half(slot[UQ_HEAD_DIM + UQ_HEAD_DIM / 32 + dg / 32]);
    }
    /* One code word (8 dims) at a time keeps few query values live. The
     * products twice * half-scale are the dequantized K values, exactly. */
#pragma unroll 1
    for (int w = 0; w < 4; ++w) {
      const uq_u32 word = slot != nullptr ? kc[w] : 0u;
      float kv[8];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        kv[e] = uq_fp4_twice(word >> (e * 4)) * kscale;
#pragma unroll
      for (int i = 0; i < UQ_QG; ++i) {
        const float *qr = q_s + uq_q_index(i, dg + w * 8);
        float s = part[i];
#pragma unroll
        for (int e = 0; e < 8; ++e)
          s += qr[e] * kv[e];
        part[i] = s;
      }
    }
    /* A masked token has zero codes and scale: its V row is exact zeros. */
    uq_u32 *vrow = (uq_u32 *)&sm->v[tok][dg];
#pragma unroll
    for (int d = 0; d < 32; d += 2) {
      float v0 = uq_fp4_twice(vw[d / 8] >> ((d % 8) * 4)) * vscale;
      float v1 = uq_fp4_twice(vw[d / 8] >> ((d % 8) * 4 + 4)) * vscale;
      vrow[d / 2] = (uq_f32_bits(v0) >> 16) | (uq_f32_bits(v1) & 0xffff0000u);
    }
  }
#pragma unroll
  for (int i = 0; i < UQ_QG; ++i)
    sm->red[grp][i][tok] = part[i];
}

/* The unscaled score of query head i and token tok (after a barrier). */
UQ_DEV float uq_layer_score(const uq_layer_smem *sm, int i, int tok) {
  float s = 0.0f;
#pragma unroll
  for (int g = 0; g < UQ_KGRP; ++g)
    s += sm->red[g][i][tok];
  return s;
}

/* acc = acc * alpha + P . V for this thread's (head, dim) pairs; p_s holds
 * P rounded to bf16, [UQ_QG][UQ_TILE]. */
UQ_DEV void uq_layer_pv(const uq_layer_smem *sm, const float *p_s,
                        const float *alpha_s, float (&acc)[UQ_PV_HPT][UQ_PV_DPT],
                        int tid) {
  const int dl = tid % UQ_PV_TPR;
  const int hs = tid / UQ_PV_TPR;
#pragma unroll
  for (int j = 0; j < UQ_PV_HPT; ++j) {
    const int i = hs + j * UQ_PV_HS;
    const float alpha = (UQ_PV_HS == 1 || i < UQ_QG) ? alpha_s[i] : 0.0f;
#pragma unroll
    for (int k = 0; k < UQ_PV_DPT; ++k)
      acc[j][k] *= alpha;
  }
  /* Token-outer order keeps only one V value per dim and one P per head
   * live, not the whole tile. */
#pragma unroll 2
  for (int t = 0; t < UQ_TILE; ++t) {
    float v[UQ_PV_DPT];
#pragma unroll
    for (int k = 0; k < UQ_PV_DPT; ++k)
      v[k] = uq_bf16_to_f32(sm->v[t][dl + k * UQ_PV_TPR]);
#pragma unroll
    for (int j = 0; j < UQ_PV_HPT; ++j) {
      const int i = hs + j * UQ_PV_HS;
      if (UQ_PV_HS > 1 && i >= UQ_QG)
        break;
      const float pt = p_s[i * UQ_TILE + t];
#pragma unroll
      for (int k = 0; k < UQ_PV_DPT; ++k)
        acc[j][k] += pt * v[k];
    }
  }
}
