/* The launch paths: uq_decode (prologue when not fused, decode, reduce) and
 * uq_store.
 *
 * Everything is validated before anything is launched. On a table hit the
 * path allocates nothing, takes no lock and makes no synchronous runtime
 * call, so a decode can be captured into a CUDA/HIP graph: the only runtime
 * calls are cuCtxSetCurrent (hipSetDevice) and the launches.
 *
 * Alignments required (documented in the errors): out 16 bytes, and a
 * fused query 16 (the kernels load 8 bf16/fp16 at a time; its rows must
 * then start 16-byte aligned too, so stride_q_seq * element size must be a
 * multiple of 16); a query read by the prologue (strided heads or
 * elements) its element size; kv_cache 16, block_table and seq_lens 4,
 * workspace 256.
 *
 * What cannot be checked without reading device memory: seq_lens[b] <=
 * max_blocks_per_seq * block_size and block_table[b][i] < num_blocks. The
 * kernels clamp a sequence length to the block table's span; block table
 * entries are trusted, as in vLLM. */
#include <stdint.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/codegen/layers.h"
#include "lib/format/format.h"
#include "lib/runtime/context.h"
#include "lib/runtime/launch.h"

/* A platform launch: plain, or as a programmatic dependent. */
typedef int (*launch_fn)(void *function, const uint32_t grid[3], uint32_t block, void *params,
                         void *stream);

/* The last plan of this thread: repeated decodes of one shape on one
 * context (the serving loop) skip planning and the table lookups. Keyed by
 * the context's id (never reused, unlike its address) and the shape's
 * bytes; the layer is the context's, fixed at its creation. Entries stay
 * valid until the context is destroyed, and a destroyed context's id never
 * matches again. */
typedef struct plan_cache {
  uint64_t ctx_id;
  uq_shape shape;
  uq_plan plan;
  uq__entry *decode, *reduce, *prologue;
  /* How the decode and the reduce are launched, decided with the plan. */
  launch_fn decode_launch, reduce_launch;
} plan_cache;

static _Thread_local plan_cache tls_plan;

static int misaligned(const void *p, uintptr_t align) {
  return ((uintptr_t)p & (align - 1)) != 0;
}

/* Finds (builds, loads) every kernel of the plan in pc. */
static int prepare(uq_context *ctx, plan_cache *pc) {
  const uq_plan *plan = &pc->plan;
  int rc;
  pc->decode = pc->reduce = pc->prologue = NULL;
  for (int i = 0; i < plan->num_kernels; i++) {
    uq__entry *e;
    rc = uq__context_kernel(ctx, &plan->kernels[i], &e);
    if (rc != 0)
      return rc;
    switch (plan->kernels[i].kind) {
    case UQ_KERNEL_DECODE:
      pc->decode = e;
      break;
    case UQ_KERNEL_REDUCE:
      pc->reduce = e;
      break;
    case UQ_KERNEL_PROLOGUE:
      pc->prologue = e;
      break;
    default:
      break;
    }
  }
  if (pc->decode == NULL || pc->reduce == NULL ||
      (!plan->fuse_qrot && pc->prologue == NULL))
    return uq__errorf(UQ_EINVAL, "the plan lacks a decode/reduce/prologue key");
  return 0;
}

/* The plan's decode key. */
static const uq_key *decode_key(const uq_plan *plan) {
  for (int i = 0; i < plan->num_kernels; i++)
    if (plan->kernels[i].kind == UQ_KERNEL_DECODE)
      return &plan->kernels[i];
  return NULL;
}

/* Where the target has programmatic dependent launch, the reduce is
 * launched as the decode's dependent: its launch and start-up overlap the
 * decode's tail, and it waits for the decode in device code (reduce.hip:
 * uq_grid_wait). Small decode grids of a layer that allows it start the
 * same way under the kernel before them (lib/codegen/layers.h:
 * dependent_max_blocks) and wait for it in device code too. */
static void choose_launches(const uq_context *ctx, const uq__platform *pf, plan_cache *pc) {
  const uq_plan *plan = &pc->plan;
  const int dependent = pf->launch_dependent != NULL;
  const uq__layer *layer = uq__layer_find(decode_key(plan)->variant, &ctx->tinfo);
  pc->decode_launch = dependent && uq__decode_dependent(layer, &ctx->tinfo, plan->decode_grid)
                          ? pf->launch_dependent
                          : pf->launch;
  pc->reduce_launch =
      dependent && uq__target_dependent_launch(&ctx->tinfo) ? pf->launch_dependent : pf->launch;
}

static int check_decode_args(const uq_shape *shape, const uq_plan *plan,
                             const uq_decode_args *args, void *workspace,
                             size_t workspace_bytes) {
  if (args->query == NULL || args->kv_cache == NULL ||
      args->block_table == NULL || args->seq_lens == NULL || args->out == NULL)
    return uq__errorf(UQ_EINVAL,
                      "uq_decode: query, kv_cache, block_table, seq_lens and "
                      "out must not be NULL");
  /* The fused decode loads the query 16 bytes at a time; the prologue
   * reads it element by element. */
  if (misaligned(args->query, plan->fuse_qrot ? 16 : 2) ||
      misaligned(args->out, 16) || misaligned(args->kv_cache, 16))
    return uq__errorf(UQ_EALIGN,
                      "uq_decode: query (%p: 16 bytes when its rows are "
                      "dense, else 2), out (%p) and kv_cache (%p: 16 bytes) "
                      "misaligned",
                      args->query, args->out, (const void *)args->kv_cache);
  if (misaligned(args->block_table, 4) || misaligned(args->seq_lens, 4))
    return uq__errorf(UQ_EALIGN,
                      "uq_decode: block_table and seq_lens must be 4-byte "
                      "aligned");
  if (plan->fuse_qrot) {
    int64_t row_bytes = plan->kernels[0].stride_q_seq * 2;
    if (row_bytes % 16 != 0)
      return uq__errorf(UQ_EALIGN,
                        "uq_decode: query rows %lld elements apart are not "
                        "16-byte aligned",
                        (long long)plan->kernels[0].stride_q_seq);
  }
  if (plan->workspace_bytes > 0 && workspace == NULL)
    return uq__errorf(UQ_EINVAL, "uq_decode: workspace is NULL (%zu bytes "
                                 "needed)",
                      plan->workspace_bytes);
  if (misaligned(workspace, 256))
    return uq__errorf(UQ_EALIGN, "uq_decode: workspace %p is not 256-byte "
                                 "aligned",
                      workspace);
  if (workspace_bytes < plan->workspace_bytes)
    return uq__errorf(UQ_EINVAL,
                      "uq_decode: workspace of %zu bytes, %zu needed",
                      workspace_bytes, plan->workspace_bytes);
  if (args->num_blocks <= 0)
    return uq__errorf(UQ_EINVAL, "uq_decode: num_blocks %lld must be > 0",
                      (long long)args->num_blocks);
  int64_t per_block = (int64_t)shape->block_size * shape->num_kv_heads *
                      plan->padded_slot;
  if (args->num_blocks > INT64_MAX / per_block)
    return uq__errorf(UQ_EOVERFLOW,
                      "uq_decode: %lld blocks of %lld bytes overflow",
                      (long long)args->num_blocks, (long long)per_block);
  /* Tensor copies address cache rows with 32-bit signed coordinates. */
  const uq_key *dkey = decode_key(plan);
  if (dkey != NULL && uq__warpgroup_tensor_copy(dkey) &&
      args->num_blocks > INT32_MAX / shape->block_size)
    return uq__errorf(UQ_EOVERFLOW,
                      "uq_decode: %lld blocks of %d tokens: the warpgroup "
                      "layer's tensor copies address at most 2^31 - 1 "
                      "cache rows",
                      (long long)args->num_blocks, (int)shape->block_size);
  return 0;
}

void uq__decode_launch_params(const uq_plan *plan, const uq_shape *shape,
                              const uq_decode_args *args, void *workspace,
                              uq__decode_launch *out) {
  unsigned char *ws = workspace;
  memset(out, 0, sizeof *out);
  uq_prologue_params *pp = &out->prologue;
  pp->query = args->query;
  pp->q_rot = (float *)(ws + plan->ws_q_rot);
  pp->stride_seq = plan->kernels[0].stride_q_seq;
  pp->stride_head = plan->kernels[0].stride_q_head;
  pp->batch = shape->batch;
  pp->num_q_heads = shape->num_q_heads;

  uq_decode_params *dp = &out->decode;
  dp->query = plan->fuse_qrot ? args->query : (const void *)(ws + plan->ws_q_rot);
  dp->kv_cache = args->kv_cache;
  dp->block_table = args->block_table;
  dp->seq_lens = args->seq_lens;
  dp->segm_out = ws + plan->ws_segm_out;
  dp->segm_max = (float *)(ws + plan->ws_segm_max);
  dp->segm_sum = (float *)(ws + plan->ws_segm_sum);
  dp->batch = shape->batch;

  uq_reduce_params *rp = &out->reduce;
  rp->segm_out = dp->segm_out;
  rp->segm_max = dp->segm_max;
  rp->segm_sum = dp->segm_sum;
  rp->out = args->out;
  rp->batch = shape->batch;
}

int uq__decode_kernel_params(const uq__platform *pf, const uq_key *key,
                             const uq_decode_args *args,
                             const uq_decode_params *common,
                             uq_decode_wg_params *out) {
  memset(out, 0, sizeof *out);
  out->d = *common;
  if (!uq__warpgroup_tensor_copy(key))
    return 0;
  if (pf->tensor_map_slots == NULL)
    return uq__errorf(UQ_EUNSUPPORTED, "uq_decode: the %s runtime has no "
                                       "tensor copies, which this kernel "
                                       "needs",
                      pf->name);
  /* The whole cache's rows; a box is one 272-byte slot's words x the run
   * of a chunk in one block (min(64, block_size) rows). */
  int32_t span = key->kv_block_size < 64 ? key->kv_block_size : 64;
  return pf->tensor_map_slots(out->tensor_map, args->kv_cache,
                              args->num_blocks * key->kv_block_size,
                              key->num_kv_heads, key->padded_slot,
                              (int32_t)(uq_slot_size(key->head_dim) / 4),
                              span);
}

/* Launches one decode: the query prologue when the rotation is not fused,
 * the decode, then the reduce. */
static int launch_plan(const uq__platform *pf, const plan_cache *pc, const uq_shape *shape,
                       const uq_decode_args *args, void *workspace,
                       void *stream) {
  int rc;
  const uq_plan *plan = &pc->plan;
  uq__decode_launch lp;
  uq__decode_launch_params(plan, shape, args, workspace, &lp);
  if (!plan->fuse_qrot) {
    rc = pf->launch(pc->prologue->function, plan->prologue_grid,
                    pc->prologue->block_threads, &lp.prologue, stream);
    if (rc != 0)
      return rc;
  }
  /* The generated kernel's own contract (equal to plan->block_threads). */
  uq_decode_wg_params dp;
  rc = uq__decode_kernel_params(pf, decode_key(plan), args, &lp.decode, &dp);
  if (rc != 0)
    return rc;
  rc = pc->decode_launch(pc->decode->function, plan->decode_grid, pc->decode->block_threads, &dp,
                         stream);
  if (rc != 0)
    return rc;
  return pc->reduce_launch(pc->reduce->function, plan->reduce_grid, pc->reduce->block_threads,
                           &lp.reduce, stream);
}


int uq_decode(uq_context *ctx, const uq_shape *shape,
              const uq_decode_args *args, void *workspace,
              size_t workspace_bytes, void *stream) {
  uq__error_clear();
  if (ctx == NULL || shape == NULL || args == NULL)
    return uq__errorf(UQ_EINVAL, "uq_decode: ctx, shape and args must not be "
                                 "NULL");
  if (ctx->device < 0)
    return uq__errorf(UQ_ENODEV, "uq_decode: the context has no device");

  plan_cache *pc = &tls_plan;
  int cached = pc->ctx_id == ctx->id &&
               memcmp(&pc->shape, shape, sizeof *shape) == 0;
  int rc;
  if (!cached) {
    /* Validate what planning does not, before a compile can start. */
    pc->ctx_id = 0;
    uq_plan plan;
    rc = uq_context_plan(ctx, shape, &plan);
    if (rc != 0)
      return rc;
    if (!plan.eligible)
      return uq__errorf(UQ_EUNSUPPORTED, "%s", plan.reason);
    rc = check_decode_args(shape, &plan, args, workspace, workspace_bytes);
    if (rc != 0)
      return rc;
    memcpy(&pc->plan, &plan, sizeof plan);
  } else {
    rc = check_decode_args(shape, &pc->plan, args, workspace,
                           workspace_bytes);
    if (rc != 0)
      return rc;
  }

  const uq__platform *pf;
  uq__pdev *dev;
  rc = uq__context_device(ctx, &pf, &dev);
  if (rc != 0)
    return rc;
  rc = pf->make_current(dev);
  if (rc != 0)
    return rc;

  if (cached) {
    uq__table_note_hits(ctx->table, (uint64_t)pc->plan.num_kernels);
  } else {
    rc = prepare(ctx, pc);
    if (rc != 0)
      return rc;
    choose_launches(ctx, pf, pc);
    memcpy(&pc->shape, shape, sizeof *shape);
    pc->ctx_id = ctx->id;
    /* Compiling or loading may have switched this thread's context. */
    rc = pf->make_current(dev);
    if (rc != 0)
      return rc;
  }

  return launch_plan(pf, pc, shape, args, workspace, stream);
}

void uq__store_launch_params(const uq_store_args *args, uq_store_params *out,
                             uint32_t grid[3]) {
  const int64_t hd = (int64_t)args->num_kv_heads * args->head_dim;
  memset(out, 0, sizeof *out);
  out->k = args->k;
  out->v = args->v;
  out->slot_mapping = (const long long *)args->slot_mapping;
  out->kv_cache = args->kv_cache;
  out->k_stride_token = args->k_stride_token ? args->k_stride_token : hd;
  out->k_stride_head = args->k_stride_head ? args->k_stride_head
                                           : args->head_dim;
  out->v_stride_token = args->v_stride_token ? args->v_stride_token : hd;
  out->v_stride_head = args->v_stride_head ? args->v_stride_head
                                           : args->head_dim;
  out->num_tokens = args->num_tokens;
  out->num_slots = args->num_blocks * args->block_size;
  grid[0] = (uint32_t)args->num_tokens;
  grid[1] = (uint32_t)args->num_kv_heads;
  grid[2] = 1;
}

int uq_store(uq_context *ctx, const uq_store_args *args, void *stream) {
  uq__error_clear();
  if (ctx == NULL || args == NULL)
    return uq__errorf(UQ_EINVAL, "uq_store: ctx and args must not be NULL");
  if (ctx->device < 0)
    return uq__errorf(UQ_ENODEV, "uq_store: the context has no device");
  size_t esize = uq__dtype_size(args->dtype);
  if (esize == 0)
    return uq__errorf(UQ_EINVAL, "uq_store: dtype %d is not bf16, fp16 or "
                                 "fp32",
                      (int)args->dtype);
  if (args->num_tokens < 0 || args->num_tokens > INT32_MAX)
    return uq__errorf(UQ_EINVAL, "uq_store: num_tokens %lld out of range",
                      (long long)args->num_tokens);
  if (args->block_size <= 0 || args->num_blocks <= 0 ||
      args->num_kv_heads <= 0)
    return uq__errorf(UQ_EINVAL,
                      "uq_store: block_size %d, num_blocks %lld and "
                      "num_kv_heads %d must be > 0",
                      (int)args->block_size, (long long)args->num_blocks,
                      (int)args->num_kv_heads);
  uq_key key;
  int rc = uq_store_key(args->head_dim, args->num_kv_heads, args->padded_slot,
                        args->dtype, ctx->target, &key);
  if (rc != 0)
    return rc;
  if (args->num_tokens == 0)
    return 0;
  if (args->k == NULL || args->v == NULL || args->slot_mapping == NULL ||
      args->kv_cache == NULL)
    return uq__errorf(UQ_EINVAL,
                      "uq_store: k, v, slot_mapping and kv_cache must not be "
                      "NULL");
  if (misaligned(args->k, esize) || misaligned(args->v, esize) ||
      misaligned(args->slot_mapping, 8) || misaligned(args->kv_cache, 16))
    return uq__errorf(UQ_EALIGN,
                      "uq_store: k and v must be aligned to their element "
                      "size, slot_mapping to 8 and kv_cache to 16 bytes");
  int64_t per_block = (int64_t)args->block_size * args->num_kv_heads *
                      key.padded_slot;
  if (args->num_blocks > INT64_MAX / per_block)
    return uq__errorf(UQ_EOVERFLOW, "uq_store: %lld blocks overflow",
                      (long long)args->num_blocks);
  if (args->k_stride_token < 0 || args->k_stride_head < 0 ||
      args->v_stride_token < 0 || args->v_stride_head < 0)
    return uq__errorf(UQ_EINVAL, "uq_store: negative stride");

  uq_store_params sp;
  uint32_t grid[3];
  uq__store_launch_params(args, &sp, grid);

  const uq__platform *pf;
  uq__pdev *dev;
  rc = uq__context_device(ctx, &pf, &dev);
  if (rc != 0)
    return rc;
  uq__entry *e;
  rc = uq__context_kernel(ctx, &key, &e);
  if (rc == 0)
    rc = pf->make_current(dev);
  if (rc != 0)
    return rc;
  return pf->launch(e->function, grid, e->block_threads, &sp, stream);
}
