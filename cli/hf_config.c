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

/* The whole file, NUL-terminated (caller frees), its length in *len;
 * NULL with a message. */
static char *read_file(const char *cmd, const char *path, size_t *len) {
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
  *len = n;
  return text;
}

/* ---- Python's json, where cJSON differs ----
 * transformers reads config.json as UTF-8 and parses it with Python's
 * json.loads, and vLLM uses what that gives. cJSON accepts more: invalid
 * UTF-8, a byte order mark, control characters (as whitespace or inside
 * strings), numbers such as 01 or 1., trailing data;
 * and it keeps duplicate keys, where lookups find the first and Python's
 * dict keeps the last. So the text is checked against what Python refuses
 * first, and after parsing every object keeps only the last of each key.
 * Two things Python accepts are refused here, failing closed: NaN and
 * Infinity (cJSON cannot parse them) and \u0000 (cJSON cannot hold it). */

/* Length of the UTF-8 sequence at p (strict, as Python decodes: no
 * overlong forms, surrogates or code points past U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2
               : c >= 0xe0 && c <= 0xef             ? 3
               : c >= 0xf0 && c <= 0xf4             ? 4
                                                    : 0;
  if (len == 0 || len > n)
    return 0;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c == 0xe0)
    lo = 0xa0;
  else if (c == 0xed)
    hi = 0x9f;
  else if (c == 0xf0)
    lo = 0x90;
  else if (c == 0xf4)
    hi = 0x8f;
  for (size_t i = 1; i < len; i++, lo = 0x80, hi = 0xbf)
    if (p[i] < lo || p[i] > hi)
      return 0;
  return len;
}

static int digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Length of the JSON number at p, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?
 * [0-9]+)?, when nothing that could continue a number follows it (cJSON
 * reads "01", "1." and "1.e5" as numbers, Python refuses them); else 0. */
static size_t number_len(const unsigned char *p, size_t n) {
  size_t i = p[0] == '-';
  if (i >= n || !digit(p[i]))
    return 0;
  if (p[i++] != '0')
    while (i < n && digit(p[i]))
      i++;
  if (i + 1 < n && p[i] == '.' && digit(p[i + 1]))
    for (i++; i < n && digit(p[i]); i++) {
    }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    size_t j = i + 1 + (i + 1 < n && (p[i + 1] == '+' || p[i + 1] == '-'));
    if (j < n && digit(p[j]))
      for (i = j; i < n && digit(p[i]); i++) {
      }
  }
  return i < n && strchr("0123456789+-.eE", p[i]) != NULL ? 0 : i;
}

/* Why Python's json would refuse the text where cJSON might not (NULL:
 * it would not); *at gets the offset. */
static const char *python_refuses(const unsigned char *t, size_t n,
                                  size_t *at) {
  int in_string = 0;
  *at = 0;
  if (n >= 3 && memcmp(t, "\xef\xbb\xbf", 3) == 0) /* cJSON skips one */
    return "a UTF-8 byte order mark";
  for (size_t i = 0; i < n;) {
    unsigned char c = t[i];
    *at = i;
    size_t k = utf8_len(t + i, n - i);
    if (k == 0)
      return "not UTF-8";
    if (k > 1) {
      i += k;
    } else if (in_string) {
      if (c < 0x20)
        return "a control character in a string";
      if (c == '\\' && i + 5 < n && t[i + 1] == 'u' &&
          strncmp((const char *)t + i + 2, "0000", 4) == 0)
        return "a \\u0000 escape, which this reader cannot represent";
      in_string = c != '"';
      i += c == '\\' && i + 1 < n && t[i + 1] < 0x80 ? 2 : 1;
    } else if (c == '"') {
      in_string = 1;
      i++;
    } else if (c == '-' || digit(c)) {
      if ((k = number_len(t + i, n - i)) == 0)
        return "a malformed number";
      i += k;
    } else if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      return c == 0 ? "a NUL byte" : "a control character";
    } else {
      i++;
    }
  }
  return NULL;
}

typedef struct member {
  cJSON *item;
  size_t index;
} member;

static int by_key_then_position(const void *a, const void *b) {
  const member *x = a, *y = b;
  int c = strcmp(x->item->string, y->item->string);
  return c != 0 ? c : x->index < y->index ? -1 : x->index > y->index;
}

/* Drops each member of an object that a later member of the same name
 * replaces, as Python's dict does, here and in every object nested
 * inside. 0, or -1 out of memory. */
static int keep_last_duplicates(cJSON *node) {
  size_t n = 0;
  for (const cJSON *c = node->child; c != NULL; c = c->next)
    n++;
  if (cJSON_IsObject(node) && n > 1) {
    member *m = malloc(n * sizeof *m);
    if (m == NULL)
      return -1;
    size_t i = 0;
    for (cJSON *c = node->child; c != NULL; c = c->next, i++)
      m[i] = (member){c, i};
    qsort(m, n, sizeof *m, by_key_then_position);
    for (i = 0; i + 1 < n; i++)
      if (strcmp(m[i].item->string, m[i + 1].item->string) == 0)
        cJSON_Delete(cJSON_DetachItemViaPointer(node, m[i].item));
    free(m);
  }
  for (cJSON *c = node->child; c != NULL; c = c->next)
    if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && keep_last_duplicates(c))
      return -1;
  return 0;
}

/* The text parsed as Python's json.loads would take it, or NULL with a
 * message. The caller deletes the result. */
static cJSON *parse_like_python(const char *cmd, const char *path,
                                const char *text, size_t n) {
  size_t at = 0;
  const char *why = python_refuses((const unsigned char *)text, n, &at);
  if (why != NULL) {
    fprintf(stderr, "uqjit %s: %s: not a JSON object: %s at byte %zu\n", cmd,
            path, why, at);
    return NULL;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
  if (root == NULL || !cJSON_IsObject(root)) {
    const char *near = root == NULL ? cJSON_GetErrorPtr() : NULL;
    fprintf(stderr, "uqjit %s: %s: not a JSON object%s%.20s%s\n", cmd, path,
            near ? " (error near '" : "", near ? near : "",
            near ? "')" : "");
    cJSON_Delete(root);
    return NULL;
  }
  while (end != NULL && end < text + n && strchr(" \t\n\r", *end) != NULL)
    end++;
  if (end != text + n) {
    fprintf(stderr, "uqjit %s: %s: not a JSON object: data after the "
            "object at byte %zu\n", cmd, path,
            end != NULL ? (size_t)(end - text) : n);
    cJSON_Delete(root);
    return NULL;
  }
  if (keep_last_duplicates(root) != 0) {
    fprintf(stderr, "uqjit %s: %s: out of memory\n", cmd, path);
    cJSON_Delete(root);
    return NULL;
  }
  return root;
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
  size_t len = 0;
  char *text = read_file(cmd, path, &len);
  if (text == NULL)
    return CLI_EXIT_USAGE;
  cJSON *root = parse_like_python(cmd, path, text, len);
  int code = CLI_EXIT_OK;
  if (root == NULL ||
      read_fields(cmd, path, root, dtype_override, m) != 0)
    code = CLI_EXIT_USAGE;
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
