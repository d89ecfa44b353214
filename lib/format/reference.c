/* The CPU golden model (FORMAT.md section 5): decode attention in double
 * precision straight from the encoded cache, and the CPU store. Everything
 * is validated before the first byte of output is written, so a refused
 * call leaves the caller's buffers as they were. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/format/format.h"

/* A decode call's shape with every default resolved. */
typedef struct ref_dims {
  int32_t batch, hq, hk, d, block_size, max_blocks, padded_slot, qg;
  int dtype;
  size_t esize;
  int64_t stride_seq, stride_head, stride_dim;
  int64_t max_seq_len;
  double scale;
} ref_dims;

/* The slot of token n of a sequence (block table `table`) for kv head kh. */
static const uint8_t *slot_at(const uint8_t *kv_cache, const ref_dims *dims,
                              const int32_t *table, int64_t n, int32_t kh) {
  int64_t blk = table[n / dims->block_size];
  int64_t row = n % dims->block_size;
  return kv_cache +
         ((blk * dims->block_size + row) * dims->hk + kh) * dims->padded_slot;
}

static int mul64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

static int add64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}

static int fits_size(int64_t bytes) {
#if SIZE_MAX < INT64_MAX
  return bytes >= 0 && (uint64_t)bytes <= (uint64_t)SIZE_MAX;
#else
  return bytes >= 0;
#endif
}

/* Bytes spanned by an array indexed up to `last_index` (inclusive), or -1
 * when that overflows. */
static int64_t span_bytes(int64_t last_index, size_t esize) {
  int64_t n, bytes;
  if (add64(last_index, 1, &n) || mul64(n, (int64_t)esize, &bytes) ||
      !fits_size(bytes))
    return -1;
  return bytes;
}

/* Every pointer the call reads or writes is given. */
static int check_pointers(const uq_shape *shape, const uq_decode_args *args,
                          int want_f64, const double *out64) {
  if (shape == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: shape is NULL");
  if (args == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: args is NULL");
  if (args->query == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: args->query is NULL");
  if (args->kv_cache == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: args->kv_cache is NULL");
  if (args->block_table == NULL)
    return uq__errorf(UQ_EINVAL,
                      "reference decode: args->block_table is NULL");
  if (args->seq_lens == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: args->seq_lens is NULL");
  if (want_f64 && out64 == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: out64 is NULL");
  if (!want_f64 && args->out == NULL)
    return uq__errorf(UQ_EINVAL, "reference decode: args->out is NULL");
  return 0;
}

/* The shape's sizes and options, then the dims with every default
 * resolved. */
static int check_shape(const uq_shape *shape, const uq_decode_args *args,
                       ref_dims *dims) {
  const struct {
    const char *name;
    int32_t value;
  } sizes[] = {{"batch", shape->batch},
               {"num_q_heads", shape->num_q_heads},
               {"num_kv_heads", shape->num_kv_heads},
               {"head_dim", shape->head_dim},
               {"block_size", shape->block_size},
               {"max_blocks_per_seq", shape->max_blocks_per_seq}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i].value <= 0)
      return uq__errorf(UQ_EINVAL, "reference decode: %s = %d is not positive",
                        sizes[i].name, (int)sizes[i].value);
  if (args->num_blocks <= 0)
    return uq__errorf(UQ_EINVAL,
                      "reference decode: num_blocks = %lld is not positive",
                      (long long)args->num_blocks);
  if (shape->head_dim % 32 != 0 || !uq__is_pow2(shape->head_dim))
    return uq__errorf(UQ_EINVAL,
                      "reference decode: head_dim = %d is not a power of two "
                      ">= 32",
                      (int)shape->head_dim);
  if (shape->num_q_heads % shape->num_kv_heads != 0)
    return uq__errorf(UQ_EINVAL,
                      "reference decode: num_q_heads = %d is not a multiple "
                      "of num_kv_heads = %d",
                      (int)shape->num_q_heads, (int)shape->num_kv_heads);
  int32_t padded;
  int rc = uq__resolve_padded_slot(shape->head_dim, shape->padded_slot,
                                   &padded);
  if (rc != 0)
    return rc;
  int dtype = shape->q_dtype == 0 ? UQ_DTYPE_BF16 : (int)shape->q_dtype;
  if (dtype != UQ_DTYPE_BF16 && dtype != UQ_DTYPE_FP16)
    return uq__errorf(UQ_EINVAL,
                      "reference decode: q_dtype = %d is not bf16 or fp16",
                      (int)shape->q_dtype);
  if (shape->has_sinks)
    return uq__errorf(UQ_EUNSUPPORTED,
                      "reference decode: attention sinks are not supported");
  if (shape->sliding_window > 0)
    return uq__errorf(UQ_EUNSUPPORTED,
                      "reference decode: sliding_window = %d is not supported",
                      (int)shape->sliding_window);
  /* As uq_plan_make: 0 means 1/sqrt(D), a negative scale is refused. */
  if (!isfinite(shape->scale) || shape->scale < 0.0f)
    return uq__errorf(UQ_EINVAL, "reference decode: scale %g is not finite "
                      "and >= 0", (double)shape->scale);
  if (shape->q_stride_seq < 0 || shape->q_stride_head < 0 ||
      shape->q_stride_dim < 0)
    return uq__errorf(UQ_EINVAL,
                      "reference decode: negative query stride (seq %lld, "
                      "head %lld, dim %lld)",
                      (long long)shape->q_stride_seq,
                      (long long)shape->q_stride_head,
                      (long long)shape->q_stride_dim);

  dims->batch = shape->batch;
  dims->hq = shape->num_q_heads;
  dims->hk = shape->num_kv_heads;
  dims->d = shape->head_dim;
  dims->block_size = shape->block_size;
  dims->max_blocks = shape->max_blocks_per_seq;
  dims->padded_slot = padded;
  dims->qg = shape->num_q_heads / shape->num_kv_heads;
  dims->dtype = dtype;
  dims->esize = uq__dtype_size(dtype);
  dims->stride_head = shape->q_stride_head ? shape->q_stride_head : dims->d;
  dims->stride_dim = shape->q_stride_dim ? shape->q_stride_dim : 1;
  dims->stride_seq = shape->q_stride_seq
                         ? shape->q_stride_seq
                         : (int64_t)dims->hq * dims->d;
  dims->scale = shape->scale != 0.0f ? (double)shape->scale
                                     : 1.0 / sqrt((double)dims->d);
  return 0;
}

/* Every byte count the decode loops will touch must be addressable. */
static int check_spans(const uq_decode_args *args, const ref_dims *dims,
                       int want_f64) {
  int64_t cache_bytes, last_q, t1, t2, out_elems, table_elems;
  if (mul64(args->num_blocks, dims->block_size, &cache_bytes) ||
      mul64(cache_bytes, dims->hk, &cache_bytes) ||
      mul64(cache_bytes, dims->padded_slot, &cache_bytes) ||
      !fits_size(cache_bytes))
    return uq__errorf(UQ_EOVERFLOW,
                      "reference decode: kv_cache of %lld blocks overflows",
                      (long long)args->num_blocks);
  if (mul64(dims->batch - 1, dims->stride_seq, &t1) ||
      mul64(dims->hq - 1, dims->stride_head, &t2) || add64(t1, t2, &last_q) ||
      mul64(dims->d - 1, dims->stride_dim, &t2) || add64(last_q, t2, &last_q) ||
      span_bytes(last_q, dims->esize) < 0)
    return uq__errorf(UQ_EOVERFLOW,
                      "reference decode: query strides (%lld, %lld) overflow",
                      (long long)dims->stride_seq,
                      (long long)dims->stride_head);
  if (mul64(dims->batch, dims->hq, &out_elems) ||
      mul64(out_elems, dims->d, &out_elems) ||
      span_bytes(out_elems, want_f64 ? sizeof(double) : dims->esize) < 0 ||
      mul64(dims->batch, dims->max_blocks, &table_elems) ||
      span_bytes(table_elems, sizeof(int32_t)) < 0)
    return uq__errorf(UQ_EOVERFLOW, "reference decode: output overflows");
  return 0;
}

/* Sequence lengths within the window and the block-table entries they use
 * within the cache; records the longest sequence. */
static int check_sequences(const uq_decode_args *args, ref_dims *dims) {
  int64_t max_tokens = (int64_t)dims->max_blocks * dims->block_size;
  dims->max_seq_len = 0;
  for (int32_t b = 0; b < dims->batch; b++) {
    int32_t len = args->seq_lens[b];
    if (len < 1 || len > max_tokens)
      return uq__errorf(UQ_EINVAL,
                        "reference decode: seq_lens[%d] = %d is outside "
                        "[1, %lld]",
                        (int)b, (int)len, (long long)max_tokens);
    if (len > dims->max_seq_len)
      dims->max_seq_len = len;
    int32_t used = (int32_t)((len + dims->block_size - 1) / dims->block_size);
    const int32_t *row = args->block_table + (int64_t)b * dims->max_blocks;
    for (int32_t i = 0; i < used; i++)
      if (row[i] < 0 || row[i] >= args->num_blocks)
        return uq__errorf(UQ_EINVAL,
                          "reference decode: block_table[%d][%d] = %d is "
                          "outside [0, %lld)",
                          (int)b, (int)i, (int)row[i],
                          (long long)args->num_blocks);
  }
  return 0;
}

static int check_decode(const uq_shape *shape, const uq_decode_args *args,
                        int want_f64, const double *out64, ref_dims *dims) {
  memset(dims, 0, sizeof *dims);
  int rc = check_pointers(shape, args, want_f64, out64);
  if (rc == 0)
    rc = check_shape(shape, args, dims);
  if (rc == 0)
    rc = check_spans(args, dims, want_f64);
  if (rc == 0)
    rc = check_sequences(args, dims);
  return rc;
}

/* Dequantizes one code run (n elements) to double: value(code) * 2^(e-127),
 * exact in double for every byte including 255. */
static void dequant_row(const uint8_t *codes, const uint8_t *scales, int n,
                        double *out) {
  for (int g = 0; g < n / 32; g++) {
    double s = uq__ue8m0_to_double(scales[g]);
    const uint8_t *c = codes + 16 * g;
    double *o = out + 32 * g;
    for (int j = 0; j < 16; j++) {
      o[2 * j] = uq__fp4_values_f64[c[j] & 15u] * s;
      o[2 * j + 1] = uq__fp4_values_f64[c[j] >> 4] * s;
    }
  }
}

/* Scratch of one decode call: the rotated queries of a sequence, scores
 * and accumulators of one kv head's query group, one K and V row. */
typedef struct ref_scratch {
  double *qhc, *scores, *acc, *krow, *vrow;
  float *qrow;
  size_t n_acc;
  int64_t lmax;
  uq_slot_layout lay;
} ref_scratch;

/* The queries of sequence b go through the same fp32 rotation as the store
 * path, then the E4M3 haircut; from there on everything is double. */
static void rotate_queries(const uq_decode_args *args, const ref_dims *dims,
                           int32_t b, ref_scratch *sc) {
  const int32_t d = dims->d;
  for (int32_t h = 0; h < dims->hq; h++) {
    int64_t base = b * dims->stride_seq + h * dims->stride_head;
    for (int32_t i = 0; i < d; i++)
      sc->qrow[i] = uq__load_f32(args->query, dims->dtype,
                                 base + i * dims->stride_dim);
    uq__fwht_f32(sc->qrow, d);
    for (int32_t i = 0; i < d; i++)
      sc->qhc[(int64_t)h * d + i] = (double)uq_haircut_e4m3(sc->qrow[i]);
  }
}

/* Softmax over the first len scores of each of the qg rows. */
static void softmax_rows(double *scores, int32_t qg, int64_t lmax,
                         int64_t len) {
  for (int32_t g = 0; g < qg; g++) {
    double *s = scores + g * lmax;
    double m = s[0];
    for (int64_t n = 1; n < len; n++)
      if (s[n] > m)
        m = s[n];
    double sum = 0.0;
    for (int64_t n = 0; n < len; n++) {
      s[n] = exp(s[n] - m);
      sum += s[n];
    }
    for (int64_t n = 0; n < len; n++)
      s[n] /= sum;
  }
}

/* Attention of kv head kh's query group over a sequence of len tokens
 * (block table `table`) into sc->acc. K and V of a token are dequantized
 * once and shared by the QG query heads of this kv head. */
static void attend(const uq_decode_args *args, const ref_dims *dims,
                   const int32_t *table, int64_t len, int32_t kh,
                   ref_scratch *sc) {
  const int32_t d = dims->d, qg = dims->qg;
  const int64_t lmax = sc->lmax;
  const double *q0 = sc->qhc + (int64_t)kh * qg * d;
  for (int64_t n = 0; n < len; n++) {
    const uint8_t *slot = slot_at(args->kv_cache, dims, table, n, kh);
    dequant_row(slot + sc->lay.k_codes, slot + sc->lay.k_scales, d, sc->krow);
    for (int32_t g = 0; g < qg; g++) {
      const double *q = q0 + (int64_t)g * d;
      double dot = 0.0;
      for (int32_t i = 0; i < d; i++)
        dot += q[i] * sc->krow[i];
      sc->scores[g * lmax + n] = dims->scale * dot;
    }
  }
  softmax_rows(sc->scores, qg, lmax, len);
  memset(sc->acc, 0, sc->n_acc);
  for (int64_t n = 0; n < len; n++) {
    const uint8_t *slot = slot_at(args->kv_cache, dims, table, n, kh);
    dequant_row(slot + sc->lay.v_codes, slot + sc->lay.v_scales, d, sc->vrow);
    for (int32_t g = 0; g < qg; g++) {
      double p = sc->scores[g * lmax + n];
      double *a = sc->acc + (int64_t)g * d;
      for (int32_t i = 0; i < d; i++)
        a[i] += p * sc->vrow[i];
    }
  }
}

/* Writes kv head kh's accumulators as the outputs of its query heads. */
static void write_heads(const uq_decode_args *args, const ref_dims *dims,
                        int32_t b, int32_t kh, const ref_scratch *sc,
                        int want_f64, double *out64) {
  const int32_t d = dims->d, qg = dims->qg;
  for (int32_t g = 0; g < qg; g++) {
    int64_t h = (int64_t)kh * qg + g;
    int64_t o = ((int64_t)b * dims->hq + h) * d;
    const double *a = sc->acc + (int64_t)g * d;
    if (want_f64) {
      memcpy(out64 + o, a, (size_t)d * sizeof(double));
    } else {
      uint16_t *out = (uint16_t *)args->out + o;
      for (int32_t i = 0; i < d; i++)
        out[i] = dims->dtype == UQ_DTYPE_BF16 ? uq__double_to_bf16(a[i])
                                              : uq__double_to_fp16(a[i]);
    }
  }
}

static int reference_decode(const uq_shape *shape, const uq_decode_args *args,
                            int want_f64, double *out64) {
  uq__error_clear();
  ref_dims dims;
  int rc = check_decode(shape, args, want_f64, out64, &dims);
  if (rc != 0)
    return rc;

  const int32_t d = dims.d, qg = dims.qg;
  ref_scratch sc;
  memset(&sc, 0, sizeof sc);
  sc.lmax = dims.max_seq_len;
  int overflow = 0;
  size_t n_q = uq__mul_size((size_t)dims.hq * (size_t)d, sizeof(double),
                            &overflow);
  size_t n_s = uq__mul_size(
      uq__mul_size((size_t)qg, (size_t)sc.lmax, &overflow), sizeof(double),
      &overflow);
  sc.n_acc = uq__mul_size((size_t)qg * (size_t)d, sizeof(double), &overflow);
  if (overflow)
    return uq__errorf(UQ_EOVERFLOW,
                      "reference decode: scratch for seq_len %lld overflows",
                      (long long)sc.lmax);
  sc.qhc = uq__malloc(n_q);
  sc.scores = uq__malloc(n_s);
  sc.acc = uq__malloc(sc.n_acc);
  sc.krow = uq__malloc((size_t)d * 2 * sizeof(double));
  sc.qrow = uq__malloc((size_t)d * sizeof(float));
  if (sc.qhc == NULL || sc.scores == NULL || sc.acc == NULL ||
      sc.krow == NULL || sc.qrow == NULL) {
    rc = uq__errorf(UQ_ENOMEM, "reference decode: no memory for scratch");
    goto cleanup;
  }
  sc.vrow = sc.krow + d;
  const uq_slot_layout lay = {(uint32_t)d,
                              0,
                              (uint32_t)d / 2,
                              (uint32_t)(d / 2 + d / 32),
                              (uint32_t)(d + d / 32),
                              (uint32_t)(d + 2 * (d / 32))};
  sc.lay = lay;

  for (int32_t b = 0; b < dims.batch; b++) {
    const int64_t len = args->seq_lens[b];
    const int32_t *table = args->block_table + (int64_t)b * dims.max_blocks;
    rotate_queries(args, &dims, b, &sc);
    for (int32_t kh = 0; kh < dims.hk; kh++) {
      attend(args, &dims, table, len, kh, &sc);
      write_heads(args, &dims, b, kh, &sc, want_f64, out64);
    }
  }

cleanup:
  uq__free(sc.qhc);
  uq__free(sc.scores);
  uq__free(sc.acc);
  uq__free(sc.krow);
  uq__free(sc.qrow);
  return rc;
}

int uq_reference_decode(const uq_shape *shape, const uq_decode_args *args) {
  return reference_decode(shape, args, 0, NULL);
}

int uq_reference_decode_f64(const uq_shape *shape, const uq_decode_args *args,
                            double *out64) {
  return reference_decode(shape, args, 1, out64);
}

int uq_reference_store(const uq_store_args *args) {
  uq__error_clear();
  if (args == NULL)
    return uq__errorf(UQ_EINVAL, "reference store: args is NULL");
  if (args->kv_cache == NULL)
    return uq__errorf(UQ_EINVAL, "reference store: args->kv_cache is NULL");
  if (args->num_tokens < 0)
    return uq__errorf(UQ_EINVAL,
                      "reference store: num_tokens = %lld is negative",
                      (long long)args->num_tokens);
  if (args->num_tokens > 0 &&
      (args->k == NULL || args->v == NULL || args->slot_mapping == NULL))
    return uq__errorf(UQ_EINVAL, "reference store: args->%s is NULL",
                      args->k == NULL   ? "k"
                      : args->v == NULL ? "v"
                                        : "slot_mapping");
  if (args->num_blocks <= 0 || args->block_size <= 0 ||
      args->num_kv_heads <= 0)
    return uq__errorf(UQ_EINVAL,
                      "reference store: num_blocks = %lld, block_size = %d, "
                      "num_kv_heads = %d must be positive",
                      (long long)args->num_blocks, (int)args->block_size,
                      (int)args->num_kv_heads);
  const int32_t d = args->head_dim;
  if (d < 32 || !uq__is_pow2(d))
    return uq__errorf(UQ_EINVAL,
                      "reference store: head_dim = %d is not a power of two "
                      ">= 32",
                      (int)d);
  size_t esize = uq__dtype_size(args->dtype);
  if (esize == 0)
    return uq__errorf(UQ_EINVAL,
                      "reference store: dtype = %d is not bf16, fp16 or fp32",
                      (int)args->dtype);
  int32_t padded;
  int rc = uq__resolve_padded_slot(d, args->padded_slot, &padded);
  if (rc != 0)
    return rc;
  if (args->k_stride_token < 0 || args->k_stride_head < 0 ||
      args->v_stride_token < 0 || args->v_stride_head < 0)
    return uq__errorf(UQ_EINVAL, "reference store: negative row stride");
  const int32_t hk = args->num_kv_heads;
  const int64_t kst = args->k_stride_token ? args->k_stride_token
                                           : (int64_t)hk * d;
  const int64_t ksh = args->k_stride_head ? args->k_stride_head : d;
  const int64_t vst = args->v_stride_token ? args->v_stride_token
                                           : (int64_t)hk * d;
  const int64_t vsh = args->v_stride_head ? args->v_stride_head : d;

  int64_t slots, cache_bytes;
  if (mul64(args->num_blocks, args->block_size, &slots) ||
      mul64(slots, hk, &cache_bytes) ||
      mul64(cache_bytes, padded, &cache_bytes) || !fits_size(cache_bytes))
    return uq__errorf(UQ_EOVERFLOW,
                      "reference store: kv_cache of %lld blocks overflows",
                      (long long)args->num_blocks);
  if (args->num_tokens > 0) {
    const int64_t strides[2][2] = {{kst, ksh}, {vst, vsh}};
    for (int r = 0; r < 2; r++) {
      int64_t t1, t2, last;
      if (mul64(args->num_tokens - 1, strides[r][0], &t1) ||
          mul64(hk - 1, strides[r][1], &t2) || add64(t1, t2, &last) ||
          add64(last, d - 1, &last) || span_bytes(last, esize) < 0)
        return uq__errorf(UQ_EOVERFLOW,
                          "reference store: %s rows of %lld tokens overflow",
                          r == 0 ? "k" : "v", (long long)args->num_tokens);
    }
  }
  for (int64_t t = 0; t < args->num_tokens; t++)
    if (args->slot_mapping[t] >= slots)
      return uq__errorf(UQ_EINVAL,
                        "reference store: slot_mapping[%lld] = %lld is not "
                        "below num_blocks * block_size = %lld",
                        (long long)t, (long long)args->slot_mapping[t],
                        (long long)slots);

  float *buf = uq__malloc((size_t)d * 2 * sizeof(float));
  if (buf == NULL)
    return uq__errorf(UQ_ENOMEM, "reference store: no memory for %d floats",
                      2 * (int)d);
  for (int64_t t = 0; t < args->num_tokens; t++) {
    int64_t slot_index = args->slot_mapping[t];
    if (slot_index < 0)
      continue;
    for (int32_t h = 0; h < hk; h++) {
      int64_t kb = t * kst + h * ksh, vb = t * vst + h * vsh;
      for (int32_t i = 0; i < d; i++) {
        buf[i] = uq__load_f32(args->k, args->dtype, kb + i);
        buf[d + i] = uq__load_f32(args->v, args->dtype, vb + i);
      }
      uq__encode_slot_f32(d, buf, buf + d,
                          args->kv_cache + (slot_index * hk + h) * padded);
    }
  }
  uq__free(buf);
  return 0;
}
