/* The attention shape of a HuggingFace model, read from its config.json
 * (cJSON) and split per tensor-parallel rank the way vLLM splits it, for
 * `uqjit warm --hf-config`. Uses only uqjit.h. */
#ifndef CLI_HF_CONFIG_H
#define CLI_HF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

/* What the config says, and the per-rank shape derived from it. */
typedef struct cli_hf_model {
  const char *path;             /* the config file (not owned) */
  /* From the config: the top level, else its text_config (multimodal). */
  int32_t num_attention_heads;
  int32_t num_key_value_heads;  /* absent: num_attention_heads (MHA) */
  int32_t head_dim;             /* absent: hidden_size / num_attention_heads */
  int head_dim_derived;         /* 1 when computed from hidden_size */
  int32_t hidden_size;          /* 0 when absent and not needed */
  double query_pre_attn_scalar; /* 0 when absent */
  uq_dtype dtype;               /* torch_dtype (or dtype); default bf16 */
  char dtype_name[16];          /* as the config spells it ("" if absent) */
  /* Per rank, from cli_hf_derive. */
  int32_t tp;
  int32_t hq, hk, qg;           /* query heads, KV heads, query group */
  float scale;                  /* 1/sqrt(head_dim or query_pre_attn_scalar) */
} cli_hf_model;

/* 1 when this uqjit was built with cJSON (--hf-config works). */
int cli_hf_available(void);

/* Reads `path` into *m (zeroed first). `dtype_override` >= 0 (a uq_dtype
 * from --dtype) replaces torch_dtype and allows configs whose torch_dtype
 * is neither bfloat16 nor float16. An exit status: CLI_EXIT_OK, or
 * CLI_EXIT_USAGE with a message on stderr naming the file and the field
 * (unreadable file, bad JSON, missing or malformed field), or
 * CLI_EXIT_FAILURE when built without cJSON. */
int cli_hf_read(const char *cmd, const char *path, int dtype_override,
                cli_hf_model *m);

/* Splits m across `tp` ranks as vLLM does: Hq = num_attention_heads / tp;
 * Hk = num_key_value_heads / tp, or 1 when tp > num_key_value_heads (vLLM
 * then replicates each KV head on tp / num_key_value_heads ranks); QG =
 * Hq / Hk. Then asks the library whether a layer serves one rank's shape
 * (head_dim, QG). CLI_EXIT_OK, or CLI_EXIT_USAGE with a message on stderr
 * naming the config fields and the library's reason. */
int cli_hf_derive(const char *cmd, cli_hf_model *m, int32_t tp);

/* vLLM's default CUDA-graph capture sizes, [1, 2, 4] + list(range(8, 513,
 * 8)), cut to those <= max_num_seqs as vLLM cuts them (a decode batch
 * between two sizes is padded up to the next captured one), then
 * max_num_seqs itself when it lies above the last size kept and is at
 * most 512: vLLM runs such batches without a graph at their own size, and
 * max_num_seqs is the largest the scheduler forms (the sizes between are
 * left to --batch-sizes). Writes at most CLI_VLLM_SIZES_MAX into out;
 * returns the count. */
#define CLI_VLLM_SIZES_MAX 68
size_t cli_vllm_capture_sizes(int32_t max_num_seqs, int64_t *out);

#endif
