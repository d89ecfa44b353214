/* Device numerics shared by every kernel (FORMAT.md sections 2-4). Each
 * function matches its CPU twin in lib/format/format.c bit for bit; none depends
 * on the specialization constants. */

constexpr float UQ_LOG2E = 1.44269504088896340736f;
constexpr uq_u32 UQ_F32_INF_BITS = 0x7f800000u;

UQ_DEV float uq_neg_inf() { return uq_bits_f32(0xff800000u); }
UQ_DEV float uq_abs(float x) { return uq_bits_f32(uq_f32_bits(x) & 0x7fffffffu); }

/* 2^e for e in [-126, 127], exactly (a normal fp32 built from its bits). */
UQ_DEV float uq_pow2i(int e) { return uq_bits_f32((uq_u32)(e + 127) << 23); }

/* ---- bf16 / fp16 ------------------------------------------------------ */

UQ_DEV float uq_bf16_to_f32(uq_u16 h) { return uq_bits_f32((uq_u32)h << 16); }

UQ_DEV uq_u16 uq_f32_to_bf16(float f) {
  uq_u32 b = uq_f32_bits(f);
  if ((b & 0x7fffffffu) > UQ_F32_INF_BITS)
    return (uq_u16)((b >> 16) | 0x0040u); /* keep NaN a quiet NaN */
  b += 0x7fffu + ((b >> 16) & 1u);
  return (uq_u16)(b >> 16);
}

/* fp32 rounded to the nearest bf16 value (ties to even), kept in fp32. */
UQ_DEV float uq_round_bf16(float f) { return uq_bf16_to_f32(uq_f32_to_bf16(f)); }

UQ_DEV float uq_fp16_to_f32(uq_u16 h) {
  uq_u32 sign = (uq_u32)(h & 0x8000u) << 16;
  uq_u32 e = (h >> 10) & 0x1fu;
  uq_u32 mant = h & 0x3ffu;
  if (e == 0) {
    /* Zero or subnormal: mant * 2^-24 is exact. */
    float v = uq_fmul_rn((float)mant, 0x1p-24f);
    return uq_bits_f32(uq_f32_bits(v) | sign);
  }
  if (e == 31)
    return uq_bits_f32(sign | UQ_F32_INF_BITS | (mant << 13));
  return uq_bits_f32(sign | ((e + 112u) << 23) | (mant << 13));
}

UQ_DEV uq_u16 uq_f32_to_fp16(float f) {
  uq_u32 b = uq_f32_bits(f);
  uq_u16 sign = (uq_u16)((b >> 16) & 0x8000u);
  uq_u32 a = b & 0x7fffffffu;
  if (a > UQ_F32_INF_BITS)
    return (uq_u16)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a == UQ_F32_INF_BITS)
    return (uq_u16)(sign | 0x7c00u);
  if (a < 0x38800000u) {
    /* Below 2^-14 the fp16 quantum is 2^-24: the scaling is exact and rint
     * rounds to nearest even; 1024 carries into the exponent field. */
    float q = uq_rint(uq_fmul_rn(uq_bits_f32(a), 0x1p24f));
    return (uq_u16)(sign | (uq_u16)q);
  }
  uq_u32 r = a - 0x38000000u; /* rebias 127 -> 15 */
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  if (r >= 0x7c00u)
    return (uq_u16)(sign | 0x7c00u);
  return (uq_u16)(sign | r);
}

/* Element i of a row of `dtype` (1 bf16, 2 fp16, 3 fp32) as fp32. The
 * dtype is a compile-time constant at every call, so one branch remains. */
UQ_DEV float uq_load_elem(const void *base, int dtype, uq_i64 i) {
  if (dtype == 3)
    return ((const float *)base)[i];
  uq_u16 h = ((const uq_u16 *)base)[i];
  return dtype == 1 ? uq_bf16_to_f32(h) : uq_fp16_to_f32(h);
}

UQ_DEV void uq_store_elem(void *base, int dtype, uq_i64 i, float v) {
  if (dtype == 3) {
    ((float *)base)[i] = v;
    return;
  }
  ((uq_u16 *)base)[i] = dtype == 1 ? uq_f32_to_bf16(v) : uq_f32_to_fp16(v);
}

/* ---- FP4 E2M1 and UE8M0 ------------------------------------------------ */

/* Twice the magnitude of E2M1 codes 0..7 (0 1 2 3 4 6 8 12), one per
 * nibble, so that a code decodes with a shift and no table in memory. */
constexpr uq_u32 UQ_FP4_TWICE = 0xC8643210u;

/* FP4 code (low 4 bits) -> 2 * value, exactly. */
UQ_DEV float uq_fp4_twice(uq_u32 code) {
  float m = (float)((UQ_FP4_TWICE >> ((code & 7u) * 4u)) & 15u);
  return uq_bits_f32(uq_f32_bits(m) | ((code & 8u) << 28));
}

/* UE8M0 byte -> 2^(byte-127) / 2, the factor that goes with uq_fp4_twice:
 * byte 0 -> 0; byte 1 -> 2^-127 (subnormal, exact). Byte 255 gives 2^127
 * here; the encoder never writes it. */
UQ_DEV float uq_ue8m0_half(uq_u32 byte) {
  if (byte == 0u)
    return 0.0f;
  if (byte == 1u)
    return uq_bits_f32(0x00400000u);
  return uq_bits_f32((byte - 1u) << 23);
}

/* ---- the query haircut: fp32 -> E4M3FN -> fp32 --------------------------- */

/* Round to nearest even on 3 mantissa bits, quantum 2^-9 below 2^-6,
 * saturating at +-448; NaN stays NaN. Same steps as uq_haircut_e4m3. */
UQ_DEV float uq_haircut_e4m3(float x) {
  uq_u32 bits = uq_f32_bits(x);
  uq_u32 sign = bits & 0x80000000u;
  uq_u32 abits = bits & 0x7fffffffu;
  if (abits > UQ_F32_INF_BITS)
    return x;
  if (abits >= 0x43e00000u) /* 448.0f */
    return uq_bits_f32(sign | 0x43e00000u);
  int e = (int)(abits >> 23) - 127;
  if (e < -6)
    e = -6;
  int qexp = e - 3; /* quantum 2^qexp, qexp in [-9, 5] */
  float a = uq_bits_f32(abits);
  /* Scaling by powers of two is exact here (a / quantum < 16). */
  float q = uq_rint(uq_fmul_rn(a, uq_pow2i(-qexp)));
  float r = uq_fmul_rn(q, uq_pow2i(qexp));
  return uq_bits_f32(uq_f32_bits(r) | sign);
}

/* ---- the fast Walsh-Hadamard transform ------------------------------------ */

/* In-place FWHT of `rows` rows of n values in shared memory, shared by the
 * `threads` threads of the block: unnormalised butterflies in stage order
 * 1, 2, 4, ..., then one multiply by `norm` = (float)(1/sqrt(n)). Element
 * j of row r lives at x[r * row_stride + idx(j)], idx(j) = j + (j / span) *
 * pad, which lets callers pad rows against bank conflicts. Every operation
 * is explicitly rounded, so the bits equal uq_fwht's on the CPU. Starts and
 * ends with a barrier. */
UQ_DEV void uq_fwht_shared(float *x, int rows, int n, int row_stride,
                           int span, int pad, float norm, int tid,
                           int threads) {
  uq_barrier();
  const int half = n / 2;
  for (int h = 1; h < n; h *= 2) {
    for (int k = tid; k < rows * half; k += threads) {
      int r = k / half;
      int c = k % half;
      int j = (c / h) * 2 * h + (c % h);
      int j2 = j + h;
      float *row = x + r * row_stride;
      int ij = j + (j / span) * pad;
      int ij2 = j2 + (j2 / span) * pad;
      float a = row[ij];
      float b = row[ij2];
      row[ij] = uq_fadd_rn(a, b);
      row[ij2] = uq_fsub_rn(a, b);
    }
    uq_barrier();
  }
  for (int k = tid; k < rows * n; k += threads) {
    int r = k / n;
    int j = k % n;
    float *row = x + r * row_stride;
    int ij = j + (j / span) * pad;
    row[ij] = uq_fmul_rn(row[ij], norm);
  }
  uq_barrier();
}

/* ---- the group encoder (FORMAT.md section 3) ---------------------------- */

/* Encodes this lane's value x of a group of 32 held by 32 consecutive lanes
 * (lane % 32 = element index); all lanes of the wave must call it. Returns
 * the 4-bit code and sets *scale_byte. Uses integer max on |x|'s bits, so
 * a NaN anywhere in the group (bits above +inf's) is never dropped. */
UQ_DEV uq_u32 uq_encode_lane(float x, uq_u32 *scale_byte) {
  uq_u32 amax_bits = uq_f32_bits(x) & 0x7fffffffu;
  for (int m = 16; m >= 1; m /= 2) {
    uq_u32 o = uq_lane_xor_u32(amax_bits, m);
    amax_bits = o > amax_bits ? o : amax_bits;
  }
  if (amax_bits >= UQ_F32_INF_BITS) {
    *scale_byte = 0u;
    return 0u;
  }
  float s_raw = uq_fmul_rn(0.156f, uq_bits_f32(amax_bits));
  uq_u32 sbits = uq_f32_bits(s_raw);
  if (!(s_raw > 0.0f) || sbits >= UQ_F32_INF_BITS) {
    *scale_byte = 0u;
    return 0u;
  }
  uq_u32 biased = sbits >> 23;
  int e = biased == 0u ? -126
                       : (int)biased - 127 + ((sbits & 0x7fffffu) >= 0x3504F4u ? 1 : 0);
  e = e < -126 ? -126 : (e > 127 ? 127 : e);
  *scale_byte = (uq_u32)(e + 127);
  /* x / 2^e: a multiply by the exact power 2^-e rounds the same real value
   * once; 2^-127 (e = 127) is a subnormal, built from its bits. */
  float inv = e == 127 ? uq_bits_f32(0x00400000u) : uq_pow2i(-e);
  float y = uq_fmul_rn(x, inv);
  uq_u32 level = (y > -5.0f) + (y > -3.5f) + (y > -2.5f) + (y > -1.75f) +
                 (y > -1.25f) + (y > -0.75f) + (y > -0.25f) + (y > 0.25f) +
                 (y > 0.75f) + (y > 1.25f) + (y > 1.75f) + (y > 2.5f) +
                 (y > 3.5f) + (y > 5.0f);
  return level < 7u ? 15u - level : level - 7u;
}
