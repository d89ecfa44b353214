/* Kernel parameter blocks: the launch contract between lib/runtime/launch.c
 * (host C) and the kernel templates (device C++). This one file is compiled on both
 * sides, so it uses only fixed-width C types and no padding holes: pointers
 * first, then 64-bit, then 32-bit fields, each block a multiple of 8 bytes.
 * Every kernel takes exactly one of these by value. */
#ifndef UQ_ABI_H
#define UQ_ABI_H

#ifdef __cplusplus
#define UQ_ABI_PTR(T) T *__restrict__
#else
#define UQ_ABI_PTR(T) T *
#endif

/* Device code has no <stdint.h> when compiled with -nogpuinc: the preludes
 * define these names; host code gets them from <stdint.h>. */

typedef struct uq_decode_params {
  const void *query;            /* fused: the caller's query; else the fp32 q_rot workspace */
  const unsigned char *kv_cache;
  const int *block_table;       /* [B, max_blocks_per_seq] */
  const int *seq_lens;          /* [B] */
  void *segm_out;               /* bf16 [B, Hk, P, QG, D] */
  float *segm_max;              /* [B, Hk, P, QG] */
  float *segm_sum;              /* [B, Hk, P, QG] */
  int batch;
  int reserved;
} uq_decode_params;

/* The sm_90a warpgroup layer's block: the common one, then the cache
 * described to the Tensor Memory Accelerator (a CUtensorMap: 128 opaque
 * bytes, 64-byte aligned), which the host encodes for each call where the
 * layer copies chunks with tensor copies (several kv heads with slots a
 * multiple of 16 bytes: lib/codegen/layers.c, uq__warpgroup_tensor_copy)
 * and leaves zero otherwise. */
#ifdef __cplusplus
#define UQ_ABI_ALIGN64 alignas(64)
#else
#define UQ_ABI_ALIGN64 _Alignas(64)
#endif
typedef struct uq_decode_wg_params {
  uq_decode_params d;
  UQ_ABI_ALIGN64 unsigned char tensor_map[128];
} uq_decode_wg_params;

typedef struct uq_reduce_params {
  const void *segm_out;
  const float *segm_max;
  const float *segm_sum;
  void *out;                    /* [B, Hq, D] of the query dtype */
  int batch;
  int reserved;
} uq_reduce_params;

typedef struct uq_prologue_params {
  const void *query;            /* [B, Hq, D] with the strides below */
  float *q_rot;                 /* [B, Hq, D] fp32, rotated and haircut */
  long long stride_seq;         /* elements */
  long long stride_head;
  int batch;
  int num_q_heads;
} uq_prologue_params;

typedef struct uq_store_params {
  const void *k;                /* [T, Hk, D] rows, strides below */
  const void *v;
  const long long *slot_mapping;/* [T]; < 0 = skip */
  unsigned char *kv_cache;
  long long k_stride_token, k_stride_head;
  long long v_stride_token, v_stride_head;
  long long num_tokens;
  long long num_slots;          /* num_blocks * block_size: bound for slot_mapping */
} uq_store_params;

#endif
