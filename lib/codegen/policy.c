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
#include "lib/codegen/key.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/policy.h"
#include "lib/codegen/target.h"
#include "lib/format/format.h"

/* Tokens per tile group (16 tiles of 16 tokens). */
#define KV_COMPUTE_BLOCK 256
/* Workspace regions start on this boundary. */
#define WS_ALIGN 256

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

/* A shape with its defaults filled in and checked: what every step of the
 * plan reads. */
typedef struct plan_in {
  int64_t batch, hq, hk, d, bs, mb;
  int64_t qg;          /* query group size: hq / hk */
  int64_t window;      /* block_size x max_blocks_per_seq tokens */
  int64_t splits;      /* max_num_kv_splits, 32 when 0 */
  int64_t stride_seq, stride_head;
  int64_t stride_dim;  /* between a head's elements (1 unless given) */
  int64_t scale_e8;    /* the softmax scale at 8 decimals */
  int32_t padded;      /* the padded slot */
  uq_dtype dtype;
  int fuse;            /* the query rotation runs inside the decode kernel */
  uq__target_info info;
  const uq__layer *layer;
  char target[UQ_TARGET_MAX]; /* canonical */
} plan_in;

/* What the split-KV sizing decides. */
typedef struct plan_split {
  int64_t parts, tgpp;
} plan_split;

/* The shape's sizes: positive, whole query groups, a head_dim with a slot,
 * a window of int32 tokens. */
static int read_sizes(const uq_shape *shape, plan_in *in) {
  in->batch = shape->batch;
  in->hq = shape->num_q_heads;
  in->hk = shape->num_kv_heads;
  in->d = shape->head_dim;
  in->bs = shape->block_size;
  in->mb = shape->max_blocks_per_seq;
  if (in->batch <= 0 || in->hq <= 0 || in->hk <= 0 || in->d <= 0 ||
      in->bs <= 0 || in->mb <= 0)
    return uq__errorf(UQ_EINVAL,
                      "shape sizes must be positive: batch %lld, q heads "
                      "%lld, kv heads %lld, head_dim %lld, block_size %lld, "
                      "max_blocks_per_seq %lld",
                      (long long)in->batch, (long long)in->hq,
                      (long long)in->hk, (long long)in->d, (long long)in->bs,
                      (long long)in->mb);
  if (in->hq % in->hk != 0)
    return uq__errorf(UQ_EINVAL,
                      "num_q_heads %lld is not a multiple of num_kv_heads %lld",
                      (long long)in->hq, (long long)in->hk);
  if (uq_slot_size((int)in->d) == 0)
    return uq__errorf(UQ_EINVAL, "head_dim %lld is not a multiple of 32",
                      (long long)in->d);
  in->qg = in->hq / in->hk;
  in->window = in->bs * in->mb;
  if (!uq__key_window_ok(in->mb, in->bs))
    return uq__errorf(UQ_EOVERFLOW,
                      "block_size %lld x max_blocks_per_seq %lld = %lld "
                      "tokens exceeds the int32 sequence lengths",
                      (long long)in->bs, (long long)in->mb,
                      (long long)in->window);
  return 0;
}

/* The softmax scale: 1/sqrt(D) when 0, baked into the kernels rounded to
 * 8 decimals (vLLM's key does the same), so that is the scale the plan
 * reports. */
static int read_scale(const uq_shape *shape, plan_in *in) {
  float scale = shape->scale;
  if (scale == 0.0f)
    scale = 1.0f / sqrtf((float)in->d);
  if (!isfinite(scale) || scale < 0.0f || scale > UQ__KEY_SCALE_MAX)
    return uq__errorf(UQ_EINVAL, "softmax scale %g must be in (0, %g]",
                      (double)scale, UQ__KEY_SCALE_MAX);
  in->scale_e8 = llround((double)scale * 1e8);
  if (in->scale_e8 <= 0)
    return uq__errorf(UQ_EINVAL,
                      "softmax scale %g rounds to 0 at 8 decimals",
                      (double)scale);
  return 0;
}

/* The shape's options, defaults filled in: padded slot, KV splits, query
 * strides and dtype, then the scale. */
static int read_options(const uq_shape *shape, plan_in *in) {
  int rc = uq__resolve_padded_slot((int)in->d, shape->padded_slot,
                                   &in->padded);
  if (rc != 0)
    return rc;
  if (shape->max_num_kv_splits < 0)
    return uq__errorf(UQ_EINVAL, "max_num_kv_splits %d is negative",
                      (int)shape->max_num_kv_splits);
  in->splits = shape->max_num_kv_splits ? shape->max_num_kv_splits : 32;
  in->stride_seq = shape->q_stride_seq ? shape->q_stride_seq : in->hq * in->d;
  in->stride_head = shape->q_stride_head ? shape->q_stride_head : in->d;
  in->stride_dim = shape->q_stride_dim ? shape->q_stride_dim : 1;
  if (in->stride_seq < 0 || in->stride_head < 0 || in->stride_dim < 0)
    return uq__errorf(UQ_EINVAL,
                      "query strides (%lld, %lld, %lld) are negative",
                      (long long)shape->q_stride_seq,
                      (long long)shape->q_stride_head,
                      (long long)shape->q_stride_dim);
  /* The query's last element, in bytes, must be addressable: the kernels
   * index it with 64-bit offsets. The rule is the key's (at least two
   * sequences), so that every key a plan makes is a valid key. */
  if (uq__key_query_fits(in->stride_seq, in->stride_head, in->stride_dim, in->hq, in->d,
                         in->batch > 2 ? in->batch : 2) != 0)
    return uq__errorf(UQ_EOVERFLOW,
                      "query strides (%lld, %lld) overflow the query's size",
                      (long long)in->stride_seq, (long long)in->stride_head);
  /* The fused rotation reads dense rows; anything else, an element
   * stride other than 1 included, goes through the prologue. */
  in->fuse = in->stride_dim == 1 && in->stride_head == in->d &&
             in->stride_seq >= in->hq * in->d;
  in->dtype = shape->q_dtype ? shape->q_dtype : UQ_DTYPE_BF16;
  if (in->dtype != UQ_DTYPE_BF16 && in->dtype != UQ_DTYPE_FP16)
    return uq__errorf(UQ_EINVAL,
                      "query dtype %d is not bf16 (%d) or fp16 (%d)",
                      (int)in->dtype, UQ_DTYPE_BF16, UQ_DTYPE_FP16);
  return read_scale(shape, in);
}

/* The target: canonical, with what the layer table needs to know. */
static int read_target(const char *target, plan_in *in) {
  return uq__target_parse(target != NULL ? target : UQ_DEFAULT_TARGET,
                          in->target, sizeof in->target, &in->info);
}

/* Refusals of the fast path: not an error, the caller reads the reason. */
static int ineligible(uq_plan *plan, const char *fmt, ...) UQ__PRINTF(2, 3);
static int ineligible(uq_plan *plan, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  plan->eligible = 0;
  vsnprintf(plan->reason, sizeof plan->reason, fmt, ap);
  va_end(ap);
  return 1;
}

/* The layer, 0 when some row the target has serves the shape, else 1
 * with the reason set; then what every layer needs. By default the best
 * layer the target has for the shape (lib/codegen/layers.c); `requested`
 * may ask for a lower one, to compare or to work around one, but a layer
 * the target lacks or that does not serve the shape is never chosen. The
 * variant is part of every key (the name spells it as v0 / v1 / ...), so
 * all layers can live in one cache. */
static int choose_layer(const uq_shape *shape, plan_in *in, int requested,
                        uq_plan *plan) {
  const uq__layer_shape ls = {(int32_t)in->d, (int32_t)in->qg, in->dtype};
  in->layer = uq__layer_choose(&in->info, &ls, requested);
  if (in->layer == NULL) {
    uq__layer_refusal(&in->info, &ls, plan->reason, sizeof plan->reason);
    plan->eligible = 0;
    return 1;
  }
  if (shape->has_sinks)
    return ineligible(plan, "attention sinks are not supported");
  if (shape->sliding_window > 0)
    return ineligible(plan, "sliding window %lld is not supported",
                      (long long)shape->sliding_window);
  if (!uq__key_block_size_ok(in->bs))
    return ineligible(plan,
                      "block_size %lld is not 16, 32, 64, 128 or 256",
                      (long long)in->bs);
  return 0;
}

/* Split-KV sizing, FORMAT.md section 6, line for line, except where the
 * layer has rules of its own (the fewest tokens worth a partition, the
 * partition count). */
static plan_split split_kv(const plan_in *in) {
  plan_split s;
  int64_t required = ceil_div(in->window, KV_COMPUTE_BLOCK);
  int64_t cap = in->batch <= 8 ? 512 : 256;
  int64_t floor_p = min64(cap, max64(1, in->splits));
  int64_t actual = max64(floor_p, min64(cap, required));
  actual = min64(actual, max64(1, ceil_div(in->window,
                                           in->layer->min_partition_tokens)));
  s.parts = max64(2, next_pow2(actual));
  if (in->layer->partitions != NULL)
    s.parts = in->layer->partitions(in->batch * in->hk, s.parts, in->window);
  s.tgpp = next_pow2(max64(1, ceil_div(required, s.parts)));
  return s;
}

/* Workspace: segm_out bf16 [B,Hk,P,QG,D], segm_max/segm_sum fp32
 * [B,Hk,P,QG], q_rot fp32 [B,Hq,D] when the prologue runs. */
static int place_workspace(const plan_in *in, int64_t parts, uq_plan *plan) {
  size_t out_bytes, stat_bytes, qrot_bytes = 0, end = 0, total = 0;
  const int64_t out_dims[] = {in->batch, in->hk, parts, in->qg, in->d, 2};
  const int64_t stat_dims[] = {in->batch, in->hk, parts, in->qg, 4};
  const int64_t qrot_dims[] = {in->batch, in->hq, in->d, 4};
  const int fuse = in->fuse;
  int over = mul_sizes(&out_bytes, out_dims, 6) ||
             mul_sizes(&stat_bytes, stat_dims, 5) ||
             (!fuse && mul_sizes(&qrot_bytes, qrot_dims, 4));
  over = over || place(&end, out_bytes, &plan->ws_segm_out) ||
         place(&end, stat_bytes, &plan->ws_segm_max) ||
         place(&end, stat_bytes, &plan->ws_segm_sum) ||
         (!fuse && place(&end, qrot_bytes, &plan->ws_q_rot));
  over = over || place(&end, 0, &total);
  if (over) {
    plan->ws_segm_out = plan->ws_segm_max = plan->ws_segm_sum = 0;
    plan->ws_q_rot = 0;
    return uq__errorf(UQ_EOVERFLOW,
                      "workspace of batch %lld, %lld kv heads, %lld "
                      "partitions overflows size_t",
                      (long long)in->batch, (long long)in->hk,
                      (long long)parts);
  }
  plan->workspace_bytes = total;
  return 0;
}

static void set_grids(const plan_in *in, plan_split s, uq_plan *plan) {
  plan->eligible = 1;
  plan->num_partitions = (int32_t)s.parts;
  plan->tile_groups_per_partition = (int32_t)s.tgpp;
  plan->fuse_qrot = in->fuse;
  plan->decode_grid[0] = (uint32_t)in->batch;
  plan->decode_grid[1] = (uint32_t)in->hk;
  plan->decode_grid[2] = (uint32_t)s.parts;
  plan->reduce_grid[0] = (uint32_t)in->batch;
  plan->reduce_grid[1] = (uint32_t)in->hq;
  plan->reduce_grid[2] = 1; /* a block per output row (reduce.hip) */
  if (!in->fuse) {
    plan->prologue_grid[0] = (uint32_t)in->batch;
    plan->prologue_grid[1] = (uint32_t)in->hq;
    plan->prologue_grid[2] = 1;
  }
}

/* The plan's keys: decode, reduce and, unless fused, prologue. The fields
 * every kind carries go in first; each key adds its own to a copy (the
 * plan was zeroed, so the bytes stay reproducible). */
static void set_keys(const plan_in *in, plan_split s, uq_plan *plan) {
  uq_key common;
  memset(&common, 0, sizeof common);
  common.dtype = (uint32_t)in->dtype;
  common.variant = in->layer->variant;
  common.head_dim = (int32_t)in->d;
  common.num_kv_heads = (int32_t)in->hk;
  common.query_group_size = (int32_t)in->qg;
  memcpy(common.target, in->target, strlen(in->target) + 1);

  uq_key *dec = &plan->kernels[0];
  *dec = common;
  dec->kind = UQ_KERNEL_DECODE;
  dec->num_partitions = (int32_t)s.parts;
  dec->max_blocks_per_seq = (int32_t)in->mb;
  dec->scale_e8 = in->scale_e8;
  dec->kv_block_size = (int32_t)in->bs;
  dec->padded_slot = in->padded;
  dec->fuse_qrot = in->fuse;
  dec->tile_groups_per_partition = (int32_t)s.tgpp;
  dec->stride_q_seq = in->stride_seq;
  dec->stride_q_head = in->stride_head;

  uq_key *red = &plan->kernels[1];
  *red = common;
  red->kind = UQ_KERNEL_REDUCE;
  red->num_partitions = (int32_t)s.parts;

  plan->num_kernels = 2;
  if (!in->fuse) {
    plan->kernels[2] = common;
    plan->kernels[2].kind = UQ_KERNEL_PROLOGUE;
    plan->kernels[2].stride_q_dim = in->stride_dim == 1 ? 0 : in->stride_dim;
    plan->num_kernels = 3;
  }
}

int uq__plan_requested(const char *variant, int *requested) {
  static int warned;
  *requested = UQ__LAYER_BEST;
  if (variant == NULL) {
    /* The environment module passes the value through unchecked: the
     * names are the layer table's. */
    const char *env = uq__env_get(UQ__ENV_VARIANT);
    int v = uq__layer_variant_named(env);
    if (env != NULL && v == UQ__LAYER_UNKNOWN)
      uq__warn_once(&warned, "ignoring invalid %s=%s",
                    uq__env_name(UQ__ENV_VARIANT), env);
    else if (env != NULL)
      *requested = v;
    return 0;
  }
  int v = uq__layer_variant_named(variant);
  if (v == UQ__LAYER_UNKNOWN) {
    char layers[128];
    uq__layer_list(layers, sizeof layers);
    return uq__errorf(UQ_EINVAL,
                      "unknown variant '%s': expected auto or a layer name "
                      "(%s)",
                      variant, layers);
  }
  *requested = v;
  return 0;
}

int uq_plan_make(const uq_shape *shape, const char *target, uq_plan *plan) {
  return uq_plan_make_variant(shape, target, NULL, plan);
}

int uq_plan_make_variant(const uq_shape *shape, const char *target,
                         const char *variant, uq_plan *plan) {
  uq__error_clear();
  int requested;
  int rc = uq__plan_requested(variant, &requested);
  if (rc != 0) {
    if (plan != NULL)
      memset(plan, 0, sizeof *plan);
    return rc;
  }
  return uq__plan_make(shape, target, requested, plan);
}

int uq__plan_make(const uq_shape *shape, const char *target, int requested,
                  uq_plan *plan) {
  uq__error_clear();
  if (shape == NULL || plan == NULL)
    return uq__errorf(UQ_EINVAL, "shape or plan is NULL");
  memset(plan, 0, sizeof *plan);
  plan_in in;
  memset(&in, 0, sizeof in);
  int rc = read_sizes(shape, &in);
  if (rc == 0)
    rc = read_options(shape, &in);
  if (rc == 0)
    rc = read_target(target, &in);
  if (rc != 0)
    return rc;
  /* Ineligible plans report these too (block_threads: the layer's when
   * one serves the shape, else the portable layer's). */
  plan->query_group_size = (int32_t)in.qg;
  plan->padded_slot = in.padded;
  plan->scale = (float)((double)in.scale_e8 / 1e8);
  int refused = choose_layer(shape, &in, requested, plan);
  plan->block_threads = uq__layer_block_threads(
      &in.info, in.layer != NULL ? in.layer->variant : UQ_VARIANT_PORTABLE);
  if (refused)
    return 0;
  plan_split s = split_kv(&in);
  /* Every plan's keys must be valid keys (uq_key_validate). */
  if (s.tgpp > UQ__KEY_TGPP_MAX) {
    ineligible(plan,
               "a window of %lld tokens needs %lld tile groups per "
               "partition, more than a decode kernel takes (%d)",
               (long long)in.window, (long long)s.tgpp, UQ__KEY_TGPP_MAX);
    return 0;
  }
  rc = place_workspace(&in, s.parts, plan);
  if (rc != 0)
    return rc;
  set_grids(&in, s, plan);
  set_keys(&in, s, plan);
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
  rc = uq__target_parse(target != NULL ? target : UQ_DEFAULT_TARGET, k.target,
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
