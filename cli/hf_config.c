/* `uqjit warm --hf-config`: the attention fields of a HuggingFace
 * config.json, read with cJSON (Debian's libcjson-dev), and their split
 * across tensor-parallel ranks. Without cJSON at build time (the meson
 * dependency is optional) the reader says so and fails. */
#include "cli/hf_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#if defined(UQ_HAVE_CJSON)
#include <cjson/cJSON.h>
#endif

/* Configs larger than this are not HuggingFace model configs. */
#define CONFIG_MAX_BYTES (16u << 20)

int cli_hf_available(void) {
#if defined(UQ_HAVE_CJSON)
  return 1;
#else
  return 0;
#endif
}

#if defined(UQ_HAVE_CJSON)

/* The whole file, NUL-terminated (caller frees); NULL with a message. */
static char *read_file(const char *cmd, const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "uqjit %s: --hf-config %s: %s\n", cmd, path,
            strerror(errno));
    return NULL;
  }
  char *text = malloc(CONFIG_MAX_BYTES + 1);
  size_t n = text ? fread(text, 1, CONFIG_MAX_BYTES + 1, f) : 0;
  int bad = text == NULL || ferror(f) || n > CONFIG_MAX_BYTES;
  fclose(f);
  if (bad) {
    fprintf(stderr, "uqjit %s: --hf-config %s: %s\n", cmd, path,
            text == NULL ? "out of memory"
                         : n > CONFIG_MAX_BYTES ? "larger than 16 MiB"
                                                : "read error");
    free(text);
    return NULL;
  }
  text[n] = '\0';
  return text;
}

/* The field `name` at the top level, else in text_config (where
 * multimodal models keep the language model's fields). *where gets the
 * spelling for messages. NULL when in neither. */
static const cJSON *field(const cJSON *root, const char *name,
                          const char **where) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
  *where = "";
  if (v != NULL && !cJSON_IsNull(v))
    return v;
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
  if (!cJSON_IsObject(tc))
    return NULL;
  v = cJSON_GetObjectItemCaseSensitive(tc, name);
  *where = "text_config.";
  return v != NULL && !cJSON_IsNull(v) ? v : NULL;
}

/* A positive integer field into *out. 1 when absent (and !required), 0
 * when read, -1 (message printed) when missing or malformed. */
static int int_field(const char *cmd, const char *path, const cJSON *root,
                     const char *name, int required, int32_t *out) {
  const char *where;
  const cJSON *v = field(root, name, &where);
  if (v == NULL) {
    if (!required)
      return 1;
    fprintf(stderr,
            "uqjit %s: %s: no field '%s' (nor text_config.%s): uqjit "
            "needs it to size the attention\n",
            cmd, path, name, name);
    return -1;
  }
  double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
  if (!(d >= 1.0 && d <= 1048576.0 && d == floor(d))) {
    fprintf(stderr,
            "uqjit %s: %s: field '%s%s' is not a positive integer\n", cmd,
            path, where, name);
    return -1;
  }
  *out = (int32_t)d;
  return 0;
}

/* torch_dtype (newer configs: dtype) into m, unless overridden. */
static int read_dtype(const char *cmd, const char *path, const cJSON *root,
                      int dtype_override, cli_hf_model *m) {
  const char *where, *name = "torch_dtype";
  const cJSON *v = field(root, name, &where);
  if (v == NULL) {
    name = "dtype";
    v = field(root, name, &where);
  }
  m->dtype = dtype_override >= 0 ? (uq_dtype)dtype_override : UQ_DTYPE_BF16;
  if (v == NULL)
    return 0;
  if (!cJSON_IsString(v)) {
    fprintf(stderr, "uqjit %s: %s: field '%s%s' is not a string\n", cmd,
            path, where, name);
    return -1;
  }
  snprintf(m->dtype_name, sizeof m->dtype_name, "%s", v->valuestring);
  if (dtype_override >= 0)
    return 0;
  if (strcmp(v->valuestring, "bfloat16") == 0)
    m->dtype = UQ_DTYPE_BF16;
  else if (strcmp(v->valuestring, "float16") == 0)
    m->dtype = UQ_DTYPE_FP16;
  else {
    fprintf(stderr,
            "uqjit %s: %s: field '%s%s' is '%s': the kernels take bfloat16 "
            "or float16 queries (give --dtype bf16|fp16 to choose)\n",
            cmd, path, where, name, v->valuestring);
    return -1;
  }
  return 0;
}

/* The fields of a parsed config into m. */
static int read_fields(const char *cmd, const char *path, const cJSON *root,
                       int dtype_override, cli_hf_model *m) {
  if (int_field(cmd, path, root, "num_attention_heads", 1,
                &m->num_attention_heads) < 0)
    return -1;
  int r = int_field(cmd, path, root, "num_key_value_heads", 0,
                    &m->num_key_value_heads);
  if (r < 0)
    return -1;
  if (r > 0) /* multi-head attention: one KV head per query head */
    m->num_key_value_heads = m->num_attention_heads;
  if ((r = int_field(cmd, path, root, "head_dim", 0, &m->head_dim)) < 0)
    return -1;
  if (r > 0) {
    if (int_field(cmd, path, root, "hidden_size", 1, &m->hidden_size) < 0)
      return -1;
    m->head_dim = m->hidden_size / m->num_attention_heads;
    m->head_dim_derived = 1;
  }
  const char *where;
  const cJSON *s = field(root, "query_pre_attn_scalar", &where);
  if (s != NULL) {
    if (!cJSON_IsNumber(s) || !(s->valuedouble > 0.0)) {
      fprintf(stderr,
              "uqjit %s: %s: field '%squery_pre_attn_scalar' is not a "
              "positive number\n",
              cmd, path, where);
      return -1;
    }
    m->query_pre_attn_scalar = s->valuedouble;
  }
  return read_dtype(cmd, path, root, dtype_override, m);
}

int cli_hf_read(const char *cmd, const char *path, int dtype_override,
                cli_hf_model *m) {
  memset(m, 0, sizeof *m);
  m->path = path;
  char *text = read_file(cmd, path);
  if (text == NULL)
    return CLI_EXIT_USAGE;
  cJSON *root = cJSON_Parse(text);
  int code = CLI_EXIT_OK;
  if (root == NULL || !cJSON_IsObject(root)) {
    const char *at = root == NULL ? cJSON_GetErrorPtr() : NULL;
    fprintf(stderr, "uqjit %s: %s: not a JSON object%s%.20s%s\n", cmd, path,
            at ? " (error near '" : "", at ? at : "", at ? "')" : "");
    code = CLI_EXIT_USAGE;
  } else if (read_fields(cmd, path, root, dtype_override, m) != 0) {
    code = CLI_EXIT_USAGE;
  }
  cJSON_Delete(root);
  free(text);
  return code;
}

#else /* !UQ_HAVE_CJSON */

int cli_hf_read(const char *cmd, const char *path, int dtype_override,
                cli_hf_model *m) {
  (void)dtype_override;
  memset(m, 0, sizeof *m);
  m->path = path;
  fprintf(stderr,
          "uqjit %s: --hf-config: this uqjit was built without cJSON "
          "(install libcjson-dev and rebuild), so it cannot read %s; give "
          "the shape flags instead\n",
          cmd, path);
  return CLI_EXIT_FAILURE;
}

#endif

/* The head_dim field's name for messages: where the value came from. */
static void head_dim_source(const cli_hf_model *m, char *buf, size_t n) {
  if (m->head_dim_derived)
    snprintf(buf, n, "head_dim %d (hidden_size %d / num_attention_heads %d)",
             m->head_dim, m->hidden_size, m->num_attention_heads);
  else
    snprintf(buf, n, "head_dim %d", m->head_dim);
}

/* Divisibility of the heads by tp, as vLLM requires it. */
static int check_tp(const char *cmd, const cli_hf_model *m, int32_t tp) {
  if (m->num_attention_heads % tp != 0) {
    fprintf(stderr,
            "uqjit %s: %s: num_attention_heads %d is not divisible by --tp "
            "%d: each rank needs a whole number of query heads\n",
            cmd, m->path, m->num_attention_heads, tp);
    return -1;
  }
  int32_t kv = m->num_key_value_heads;
  if ((tp <= kv && kv % tp != 0) || (tp > kv && tp % kv != 0)) {
    fprintf(stderr,
            "uqjit %s: %s: num_key_value_heads %d and --tp %d: the KV heads "
            "must divide evenly across ranks (or the ranks across KV "
            "heads, which vLLM replicates)\n",
            cmd, m->path, kv, tp);
    return -1;
  }
  if (m->num_attention_heads % kv != 0) {
    fprintf(stderr,
            "uqjit %s: %s: num_attention_heads %d is not a multiple of "
            "num_key_value_heads %d (Hq %% Hk != 0)\n",
            cmd, m->path, m->num_attention_heads, kv);
    return -1;
  }
  return 0;
}

int cli_hf_derive(const char *cmd, cli_hf_model *m, int32_t tp) {
  if (check_tp(cmd, m, tp) != 0)
    return CLI_EXIT_USAGE;
  m->tp = tp;
  m->hq = m->num_attention_heads / tp;
  m->hk = m->num_key_value_heads >= tp ? m->num_key_value_heads / tp : 1;
  m->qg = m->hq / m->hk;
  /* What the layers serve is the library's to say: a plan of one rank's
   * heads, on its default target, with any layer (the portable one is on
   * every target). */
  uq_shape probe;
  uq_shape_init(&probe);
  probe.batch = 1;
  probe.num_q_heads = m->hq;
  probe.num_kv_heads = m->hk;
  probe.head_dim = m->head_dim;
  probe.block_size = 16;
  probe.max_blocks_per_seq = 1;
  probe.q_dtype = m->dtype;
  uq_plan plan;
  int rc = uq_plan_make_variant(&probe, NULL, "auto", &plan);
  if (rc != 0 || !plan.eligible) {
    char hd[128];
    head_dim_source(m, hd, sizeof hd);
    fprintf(stderr,
            "uqjit %s: %s: %s; num_attention_heads %d / num_key_value_heads "
            "%d at --tp %d gives %d query heads per KV head on a rank (Hq "
            "%d, Hk %d): %s\n",
            cmd, m->path, hd, m->num_attention_heads, m->num_key_value_heads,
            tp, m->qg, m->hq, m->hk, rc != 0 ? uq_last_error() : plan.reason);
    return CLI_EXIT_USAGE;
  }
  double denom = m->query_pre_attn_scalar > 0.0 ? m->query_pre_attn_scalar
                                                : (double)m->head_dim;
  m->scale = (float)(1.0 / sqrt(denom));
  return CLI_EXIT_OK;
}

size_t cli_vllm_capture_sizes(int32_t max_num_seqs, int64_t *out) {
  static const int64_t head[] = {1, 2, 4};
  size_t n = 0;
  for (size_t k = 0; k < 3 && head[k] <= max_num_seqs; k++)
    out[n++] = head[k];
  for (int64_t b = 8; b <= 512 && b <= max_num_seqs; b += 8)
    out[n++] = b;
  int64_t last = n ? out[n - 1] : 0;
  if (max_num_seqs > last && max_num_seqs <= 512)
    out[n++] = max_num_seqs;
  return n;
}
