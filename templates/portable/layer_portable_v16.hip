/* The portable layer's tile load for head dims whose V code run starts
 * 2 bytes past a 4-byte boundary: V codes begin at byte D/2 + D/32 of a
 * slot (FORMAT.md section 1), 34 for head_dim 64, so the 32-bit loads of
 * layer_portable.hip's uq_layer_load_tile would be misaligned there (a
 * fault on NVIDIA). This load reads them as 16-bit halves and is
 * otherwise the same; it follows layer_portable.hip in the source of such
 * keys only (lib/codegen/layers.c, templates_v16), so the head dims whose
 * V codes are 4-byte aligned keep their sources unchanged, and takes the
 * decode core's calls by name. */

static_assert((UQ_HEAD_DIM / 2 + UQ_HEAD_DIM / 32) % 2 == 0,
              "V codes start on a 2-byte boundary (slots are 4-byte aligned)");

UQ_DEV void uq_layer_load_tile_v16(uq_layer_smem *sm, const float *q_s,
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
      /* Little-endian halves: bytes b0..b3 are b0 | b1 << 8 | b2 << 16 |
       * b3 << 24 either way. */
      const uq_u16 *vc = (const uq_u16 *)(slot + UQ_HEAD_DIM / 2 + UQ_HEAD_DIM / 32 + dg / 2);
#pragma unroll
      for (int w = 0; w < 4; ++w)
        vw[w] = (uq_u32)vc[2 * w] | ((uq_u32)vc[2 * w + 1] << 16);
      kscale = uq_ue8m0_half(slot[UQ_HEAD_DIM / 2 + dg / 32]);
      vscale = uq_ue8m0_half(slot[UQ_HEAD_DIM + UQ_HEAD_DIM / 32 + dg / 32]);
    }
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

/* The decode core (decode.hip) calls uq_layer_load_tile by name. */
#define uq_layer_load_tile uq_layer_load_tile_v16
