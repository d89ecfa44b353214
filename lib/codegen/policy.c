/* The launcher policy (FORMAT.md section 6): a mirror of vLLM's Python
 * launcher, so that a shape gets the same partitions and kernel keys here as
 * there. Plans read only the named fields of the caller's shape and build
 * every key with memset-then-fill, so equal shapes give equal bytes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/format/format.h"
#include "lib/codegen/key.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"

/* Tokens per tile group (16 tiles of 16 tokens). */
#define KV_COMPUTE_BLOCK 256
/* Workspace regions start on this boundary. */
#define WS_ALIGN 256
/* The largest softmax scale a key can spell with room to spare. */
#define SCALE_MAX 1.0e6

void uq_shape_init(uq_shape *shape) {
  if (shape == NULL)
    return;
  memset(shape, 0, sizeof *shape);
  shape->q_dtype = UQ_DTYPE_BF16;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Product of the factors into *out; -1 on size_t overflow. */
static int mul_sizes(size_t *out, const int64_t *factors, int count) {
  size_t acc = 1;
  for (int i = 0; i < count; i++)
    if (__builtin_mul_overflow(acc, (size_t)factors[i], &acc))
      return -1;
  *out = acc;
  return 0;
}

/* Appends a region of `bytes` at the next aligned offset of *end. */
static int place(size_t *end, size_t bytes, size_t *offset) {
  size_t at;
  if (__builtin_add_overflow(*end, (size_t)WS_ALIGN - 1, &at))
    return -1;
  at &= ~(size_t)(WS_ALIGN - 1);
  if (__builtin_add_overflow(at, bytes, end))
    return -1;
  *offset = at;
  return 0;
}

/* Refusals of the fast path: not an error, the caller reads the reason. */
static int ineligible(uq_plan *plan, const char *fmt, ...) UQ__PRINTF(2, 3);
static int ineligible(uq_plan *plan, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  plan->eligible = 0;
  vsnprintf(plan->reason, sizeof plan->reason, fmt, ap);
  va_end(ap);
  return 0;
}

int uq_plan_make(const uq_shape *shape, const char *target, uq_plan *plan) {
  uq__error_clear();
  if (shape == NULL || plan == NULL)
    return uq__errorf(UQ_EINVAL, "shape or plan is NULL");
  memset(plan, 0, sizeof *plan);

  const int64_t batch = shape->batch, hq = shape->num_q_heads,
                hk = shape->num_kv_heads, d = shape->head_dim,
                bs = shape->block_size, mb = shape->max_blocks_per_seq;
  if (batch <= 0 || hq <= 0 || hk <= 0 || d <= 0 || bs <= 0 || mb <= 0)
    return uq__errorf(UQ_EINVAL,
                      "shape sizes must be positive: batch %lld, q heads "
                      "%lld, kv heads %lld, head_dim %lld, block_size %lld, "
                      "max_blocks_per_seq %lld",
                      (long long)batch, (long long)hq, (long long)hk,
                      (long long)d, (long long)bs, (long long)mb);
  if (hq % hk != 0)
    return uq__errorf(UQ_EINVAL,
                      "num_q_heads %lld is not a multiple of num_kv_heads %lld",
                      (long long)hq, (long long)hk);
  if (uq_slot_size((int)d) == 0)
    return uq__errorf(UQ_EINVAL, "head_dim %lld is not a multiple of 32",
                      (long long)d);
  int64_t window = bs * mb;
  if (window > INT32_MAX)
    return uq__errorf(UQ_EOVERFLOW,
                      "block_size %lld x max_blocks_per_seq %lld = %lld "
                      "tokens exceeds the int32 sequence lengths",
                      (long long)bs, (long long)mb, (long long)window);

  int32_t padded;
  int rc = uq__resolve_padded_slot((int)d, shape->padded_slot, &padded);
  if (rc != 0)
    return rc;
  if (shape->max_num_kv_splits < 0)
    return uq__errorf(UQ_EINVAL, "max_num_kv_splits %d is negative",
                      (int)shape->max_num_kv_splits);
  int64_t splits = shape->max_num_kv_splits ? shape->max_num_kv_splits : 32;

  int64_t stride_seq = shape->q_stride_seq ? shape->q_stride_seq : hq * d;
  int64_t stride_head = shape->q_stride_head ? shape->q_stride_head : d;
  if (stride_seq < 0 || stride_head < 0)
    return uq__errorf(UQ_EINVAL, "query strides (%lld, %lld) are negative",
                      (long long)shape->q_stride_seq,
                      (long long)shape->q_stride_head);

  uq_dtype dtype = shape->q_dtype ? shape->q_dtype : UQ_DTYPE_BF16;
  if (dtype != UQ_DTYPE_BF16 && dtype != UQ_DTYPE_FP16)
    return uq__errorf(UQ_EINVAL,
                      "query dtype %d is not bf16 (%d) or fp16 (%d)",
                      (int)dtype, UQ_DTYPE_BF16, UQ_DTYPE_FP16);

  float scale = shape->scale;
  if (scale == 0.0f)
    scale = 1.0f / sqrtf((float)d);
  if (!isfinite(scale) || scale < 0.0f || scale > SCALE_MAX)
    return uq__errorf(UQ_EINVAL, "softmax scale %g must be in (0, %g]",
                      (double)scale, SCALE_MAX);
  /* The kernels bake the scale rounded to 8 decimals (vLLM's key does the
   * same), so that is the scale the plan reports. */
  int64_t scale_e8 = llround((double)scale * 1e8);
  if (scale_e8 <= 0)
    return uq__errorf(UQ_EINVAL,
                      "softmax scale %g rounds to 0 at 8 decimals",
                      (double)scale);

  char canon[UQ_TARGET_MAX];
  uq__target_info info;
  rc = uq__target_parse(target ? target : "gfx950", canon, sizeof canon,
                        &info);
  if (rc != 0)
    return rc;
  /* The layer: by default the best one uqjit has for the target
   * (lib/codegen/layers.c); UQJIT_VARIANT may ask for a lower one, to
   * compare or to work around one, but a layer the target lacks is never
   * chosen. The variant is part of every key (the name spells it as v0 /
   * v1 / v2), so all layers can live in one cache. */
  const uq__layer *layer = uq__layer_choose(&info);
  const int variant = layer->variant;

  const int64_t qg = hq / hk;
  plan->query_group_size = (int32_t)qg;
  plan->padded_slot = padded;
  plan->scale = (float)((double)scale_e8 / 1e8);
  plan->block_threads = uq__target_block_threads(&info, variant);

  if (d != 256)
    return ineligible(plan, "head_dim %lld is not 256", (long long)d);
  if (qg != 6 && qg != 8 && qg != 16)
    return ineligible(plan,
                      "query group size (q heads / kv heads) %lld is not 6, 8 "
                      "or 16",
                      (long long)qg);
  if (shape->has_sinks)
    return ineligible(plan, "attention sinks are not supported");
  if (shape->sliding_window > 0)
    return ineligible(plan, "sliding window %lld is not supported",
                      (long long)shape->sliding_window);
  if (bs != 16 && bs != 32 && bs != 64 && bs != 128 && bs != 256)
    return ineligible(plan,
                      "block_size %lld is not 16, 32, 64, 128 or 256",
                      (long long)bs);

  /* Split-KV sizing, FORMAT.md section 6, line for line, except where the
   * layer has rules of its own (the fewest tokens worth a partition, the
   * partition count). */
  int64_t required = ceil_div(window, KV_COMPUTE_BLOCK);
  int64_t cap = batch <= 8 ? 512 : 256;
  int64_t floor_p = min64(cap, max64(1, splits));
  int64_t actual = max64(floor_p, min64(cap, required));
  actual = min64(actual,
                 max64(1, ceil_div(window, layer->min_partition_tokens)));
  int64_t parts = max64(2, next_pow2(actual));
  if (layer->partitions != NULL)
    parts = layer->partitions(batch * hk, parts);
  int64_t tgpp = next_pow2(max64(1, ceil_div(required, parts)));
  int fuse = stride_head == d && stride_seq >= hq * d;

  /* Workspace: segm_out bf16 [B,Hk,P,QG,D], segm_max/segm_sum fp32
   * [B,Hk,P,QG], q_rot fp32 [B,Hq,D] when the prologue runs. */
  size_t out_bytes, stat_bytes, qrot_bytes = 0, end = 0;
  const int64_t out_dims[] = {batch, hk, parts, qg, d, 2};
  const int64_t stat_dims[] = {batch, hk, parts, qg, 4};
  const int64_t qrot_dims[] = {batch, hq, d, 4};
  int over = mul_sizes(&out_bytes, out_dims, 6) ||
             mul_sizes(&stat_bytes, stat_dims, 5) ||
             (!fuse && mul_sizes(&qrot_bytes, qrot_dims, 4));
  over = over || place(&end, out_bytes, &plan->ws_segm_out) ||
         place(&end, stat_bytes, &plan->ws_segm_max) ||
         place(&end, stat_bytes, &plan->ws_segm_sum) ||
         (!fuse && place(&end, qrot_bytes, &plan->ws_q_rot));
  size_t total = 0;
  over = over || place(&end, 0, &total);
  if (over) {
    plan->ws_segm_out = plan->ws_segm_max = plan->ws_segm_sum = 0;
    plan->ws_q_rot = 0;
    return uq__errorf(UQ_EOVERFLOW,
                      "workspace of batch %lld, %lld kv heads, %lld "
                      "partitions overflows size_t",
                      (long long)batch, (long long)hk, (long long)parts);
  }

  plan->eligible = 1;
  plan->num_partitions = (int32_t)parts;
  plan->tile_groups_per_partition = (int32_t)tgpp;
  plan->fuse_qrot = fuse;
  plan->workspace_bytes = total;
  plan->decode_grid[0] = (uint32_t)batch;
  plan->decode_grid[1] = (uint32_t)hk;
  plan->decode_grid[2] = (uint32_t)parts;
  plan->reduce_grid[0] = (uint32_t)batch;
  plan->reduce_grid[1] = (uint32_t)hq;
  plan->reduce_grid[2] = (uint32_t)(d / 64);
  if (!fuse) {
    plan->prologue_grid[0] = (uint32_t)batch;
    plan->prologue_grid[1] = (uint32_t)hq;
    plan->prologue_grid[2] = 1;
  }

  /* The fields every kind carries; each key adds its own to a copy (the
   * plan was zeroed, so the bytes stay reproducible). */
  uq_key common;
  memset(&common, 0, sizeof common);
  common.dtype = (uint32_t)dtype;
  common.variant = variant;
  common.head_dim = (int32_t)d;
  common.num_kv_heads = (int32_t)hk;
  common.query_group_size = (int32_t)qg;
  memcpy(common.target, canon, strlen(canon) + 1);

  uq_key *dec = &plan->kernels[0];
  *dec = common;
  dec->kind = UQ_KERNEL_DECODE;
  dec->num_partitions = (int32_t)parts;
  dec->max_blocks_per_seq = (int32_t)mb;
  dec->scale_e8 = scale_e8;
  dec->kv_block_size = (int32_t)bs;
  dec->padded_slot = padded;
  dec->fuse_qrot = fuse;
  dec->tile_groups_per_partition = (int32_t)tgpp;
  dec->stride_q_seq = stride_seq;
  dec->stride_q_head = stride_head;

  uq_key *red = &plan->kernels[1];
  *red = common;
  red->kind = UQ_KERNEL_REDUCE;
  red->num_partitions = (int32_t)parts;

  plan->num_kernels = 2;
  if (!fuse) {
    plan->kernels[2] = common;
    plan->kernels[2].kind = UQ_KERNEL_PROLOGUE;
    plan->num_kernels = 3;
  }
  return 0;
}

int uq_store_key(int head_dim, int num_kv_heads, int padded_slot,
                 uq_dtype dtype, const char *target, uq_key *key) {
  uq__error_clear();
  if (key == NULL)
    return uq__errorf(UQ_EINVAL, "key is NULL");
  if (head_dim < UQ__KEY_HEAD_DIM_MIN || head_dim > UQ__KEY_HEAD_DIM_MAX ||
      !uq__is_pow2(head_dim))
    return uq__errorf(UQ_EINVAL,
                      "store head_dim %d must be a power of two in [%d, %d]",
                      head_dim, UQ__KEY_HEAD_DIM_MIN, UQ__KEY_HEAD_DIM_MAX);
  if (num_kv_heads < 1)
    return uq__errorf(UQ_EINVAL, "store num_kv_heads %d must be >= 1",
                      num_kv_heads);
  int32_t padded;
  int rc = uq__resolve_padded_slot(head_dim, padded_slot, &padded);
  if (rc != 0)
    return rc;
  if (uq__dtype_size(dtype) == 0)
    return uq__errorf(UQ_EINVAL, "store dtype %d is not bf16, fp16 or fp32",
                      (int)dtype);
  uq_key k;
  memset(&k, 0, sizeof k);
  rc = uq__target_parse(target ? target : "gfx950", k.target,
                        sizeof k.target, NULL);
  if (rc != 0)
    return rc;
  k.kind = UQ_KERNEL_STORE;
  k.dtype = (uint32_t)dtype;
  k.head_dim = head_dim;
  k.num_kv_heads = num_kv_heads;
  k.padded_slot = padded;
  *key = k;
  return 0;
}
