#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "uqjit %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'uqjit %s -h' for usage.\n", cmd);
  return CLI_EXIT_USAGE;
}

int cli_fail(const char *cmd, int status, const char *what) {
  const char *detail = uq_last_error();
  fprintf(stderr, "uqjit %s: %s: %s%s%s\n", cmd, what, uq_strerror(status),
          detail[0] ? ": " : "", detail);
  return CLI_EXIT_FAILURE;
}

int cli_other_arg(const char *cmd, const char *arg,
                     const cli_flag *flags, void (*usage)(FILE *out)) {
  if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  for (const cli_flag *f = flags; f != NULL && f->name != NULL; f++) {
    if (!strcmp(arg, f->name)) {
      *f->var = f->value;
      return CLI_NEXT;
    }
  }
  if (arg[0] == '-')
    return cli_usage_error(cmd, "unknown option '%s'", arg);
  return cli_usage_error(cmd, "unexpected argument '%s'", arg);
}

int cli_option(const char *cmd, int argc, char **argv, int *i,
                  const char *name, const char **value) {
  const char *arg = argv[*i];
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0)
    return 0;
  if (arg[len] == '=') {
    *value = arg + len + 1;
    return 1;
  }
  if (arg[len] != '\0')
    return 0;
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option '%s' needs a value", name);
    return -1;
  }
  *i += 1;
  *value = argv[*i];
  return 1;
}

int cli_text_option(const char *cmd, int argc, char **argv, int *i,
                       const cli_text *opts) {
  for (const cli_text *o = opts; o->name != NULL; o++) {
    int r = cli_option(cmd, argc, argv, i, o->name, o->var);
    if (r != 0)
      return r;
  }
  return 0;
}

int cli_parse_i64(const char *cmd, const char *flag, const char *text,
                     int64_t min, int64_t max, int64_t *out) {
  const char *p = text;
  int neg = *p == '-';
  if (neg)
    p++;
  int64_t v = 0;
  int ok = *p >= '0' && *p <= '9';
  for (; ok && *p; p++) {
    if (*p < '0' || *p > '9') {
      ok = 0;
      break;
    }
    int digit = *p - '0';
    /* Accumulate negatively: INT64_MIN has no positive counterpart. */
    if (v < (INT64_MIN + digit) / 10) {
      cli_usage_error(cmd, "%s: '%s' is out of range [%lld, %lld]", flag,
                         text, (long long)min, (long long)max);
      return -1;
    }
    v = v * 10 - digit;
  }
  if (!ok) {
    cli_usage_error(cmd, "%s: '%s' is not an integer", flag, text);
    return -1;
  }
  if (!neg) {
    if (v == INT64_MIN) {
      cli_usage_error(cmd, "%s: '%s' is out of range [%lld, %lld]", flag,
                         text, (long long)min, (long long)max);
      return -1;
    }
    v = -v;
  }
  if (v < min || v > max) {
    cli_usage_error(cmd, "%s: '%s' is out of range [%lld, %lld]", flag,
                       text, (long long)min, (long long)max);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_parse_i32(const char *cmd, const char *flag, const char *text,
                     int32_t min, int32_t max, int32_t *out) {
  int64_t v;
  if (cli_parse_i64(cmd, flag, text, min, max, &v) != 0)
    return -1;
  *out = (int32_t)v;
  return 0;
}

int cli_parse_float(const char *cmd, const char *flag, const char *text,
                       double min_exclusive, double max, float *out) {
  char *end = NULL;
  /* strtod skips leading blanks and reads "nan"/"inf": refuse those. */
  int starts_ok = (text[0] >= '0' && text[0] <= '9') || text[0] == '.' ||
                  text[0] == '-' || text[0] == '+';
  errno = 0;
  double v = starts_ok ? strtod(text, &end) : 0.0;
  if (!starts_ok || end == text || *end != '\0' || errno == ERANGE ||
      !isfinite(v)) {
    cli_usage_error(cmd, "%s: '%s' is not a finite number", flag, text);
    return -1;
  }
  float f = (float)v;
  if (!(v > min_exclusive) || v > max || !isfinite(f) ||
      !((double)f > min_exclusive)) {
    cli_usage_error(cmd, "%s: '%s' is out of range (%g, %g]", flag, text,
                       min_exclusive, max);
    return -1;
  }
  *out = f;
  return 0;
}

/* ------------------------------------------------------------------ */
/* The shape flags: one table drives parsing, the required check and help. */

typedef enum { T_I32, T_I64, T_FLOAT, T_DTYPE, T_TEXT, T_TARGET } flag_type;

typedef struct shape_flag {
  const char *name;
  const char *metavar;
  flag_type type;
  size_t offset; /* into cli_shape */
  int64_t min;
  int required;
  const char *help;
} shape_flag;

#define SHAPE_FIELD(f) offsetof(cli_shape, shape) + offsetof(uq_shape, f)

static const shape_flag shape_flags[] = {
    {"--batch", "B", T_I32, SHAPE_FIELD(batch), 1, 1,
     "sequences per call (also sizes the workspace)"},
    {"--q-heads", "HQ", T_I32, SHAPE_FIELD(num_q_heads), 1, 1,
     "query heads"},
    {"--kv-heads", "HK", T_I32, SHAPE_FIELD(num_kv_heads), 1, 1, "KV heads"},
    {"--head-dim", "D", T_I32, SHAPE_FIELD(head_dim), 1, 1,
     "head dimension: 64, 128 or 256"},
    {"--block-size", "BS", T_I32, SHAPE_FIELD(block_size), 1, 1,
     "tokens per cache block"},
    {"--max-blocks-per-seq", "N", T_I32, SHAPE_FIELD(max_blocks_per_seq), 1, 1,
     "block table row length"},
    {"--padded-slot", "S", T_I32, SHAPE_FIELD(padded_slot), 0, 0,
     "bytes per cache slot (default: slot size rounded up to 4)"},
    {"--scale", "X", T_FLOAT, SHAPE_FIELD(scale), 0, 0,
     "softmax scale (default: 1/sqrt(D))"},
    {"--max-kv-splits", "S", T_I32, SHAPE_FIELD(max_num_kv_splits), 1, 0,
     "floor on the KV partitions (default 32)"},
    {"--q-stride-seq", "N", T_I64, SHAPE_FIELD(q_stride_seq), 1, 0,
     "query stride between sequences, elements (default HQ*D)"},
    {"--q-stride-head", "N", T_I64, SHAPE_FIELD(q_stride_head), 1, 0,
     "query stride between heads, elements (default D)"},
    {"--q-stride-dim", "N", T_I64, SHAPE_FIELD(q_stride_dim), 1, 0,
     "query stride between a head's elements (default 1; other values go "
     "through the prologue)"},
    {"--dtype", "bf16|fp16", T_DTYPE, SHAPE_FIELD(q_dtype), 0, 0,
     "query and output dtype (default bf16)"},
    {"--target", "T", T_TARGET, offsetof(cli_shape, target), 0, 0,
     UQ_DEFAULT_TARGET " (default), gfx942, gfx90a, sm_90, sm_90a, ... with "
     ":sramecc+/-, :xnack+/-; or a GPU: mi355x, mi300x, mi325x, mi250x, "
     "h100, h200"},
    {"--variant", "V", T_TEXT, offsetof(cli_shape, variant), 0, 0,
     "decode layer: auto (the best the target has for the shape), "
     "portable, matrix, warpgroup or gfx950-emu; the best at or below it "
     "that serves the shape is used (default: UQJIT_VARIANT, else auto)"},
};
#define SHAPE_FLAG_COUNT (sizeof shape_flags / sizeof shape_flags[0])

void cli_shape_init(cli_shape *s) {
  memset(s, 0, sizeof *s);
  uq_shape_init(&s->shape);
}

/* 1 when the library knows the layer name: it plans a shape every layer
 * table serves with it (only an unknown name is an error there). */
static int variant_known(const char *variant) {
  uq_shape probe;
  uq_shape_init(&probe);
  probe.batch = probe.num_q_heads = probe.num_kv_heads = 1;
  probe.head_dim = 64;
  probe.block_size = 16;
  probe.max_blocks_per_seq = 1;
  uq_plan plan;
  return uq_plan_make_variant(&probe, "sm_80", variant, &plan) == 0;
}

static int set_flag(const char *cmd, const shape_flag *f, cli_shape *s,
                    const char *value) {
  char *base = (char *)s + f->offset;
  switch (f->type) {
  case T_I32: {
    int32_t v;
    if (cli_parse_i32(cmd, f->name, value, (int32_t)f->min, INT32_MAX,
                         &v) != 0)
      return -1;
    memcpy(base, &v, sizeof v);
    return 0;
  }
  case T_I64: {
    int64_t v;
    if (cli_parse_i64(cmd, f->name, value, f->min, INT64_MAX, &v) != 0)
      return -1;
    memcpy(base, &v, sizeof v);
    return 0;
  }
  case T_FLOAT: {
    float v;
    if (cli_parse_float(cmd, f->name, value, 0.0, 1.0e6, &v) != 0)
      return -1;
    memcpy(base, &v, sizeof v);
    return 0;
  }
  case T_DTYPE: {
    uq_dtype v;
    if (strcmp(value, "bf16") == 0)
      v = UQ_DTYPE_BF16;
    else if (strcmp(value, "fp16") == 0)
      v = UQ_DTYPE_FP16;
    else {
      cli_usage_error(cmd, "%s: '%s' is not bf16 or fp16", f->name, value);
      return -1;
    }
    memcpy(base, &v, sizeof v);
    return 0;
  }
  case T_TEXT:
    if (value[0] == '\0') {
      cli_usage_error(cmd, "%s: empty %s", f->name, f->name + 2);
      return -1;
    }
    if (f->offset == offsetof(cli_shape, variant) && !variant_known(value)) {
      cli_usage_error(cmd, "%s: %s", f->name, uq_last_error());
      return -1;
    }
    memcpy(base, &value, sizeof value);
    return 0;
  case T_TARGET:
    /* Checked here, so an unknown target is misuse (exit 2) in every
     * command that takes the shape flags. */
    if (uq_target_canonical(value, s->target_canon, sizeof s->target_canon)
        != 0) {
      cli_usage_error(cmd, "%s: %s", f->name, uq_last_error());
      return -1;
    }
    s->target = s->target_canon;
    return 0;
  }
  return -1;
}

int cli_shape_option(const char *cmd, cli_shape *s, int argc,
                        char **argv, int *i) {
  for (size_t k = 0; k < SHAPE_FLAG_COUNT; k++) {
    const shape_flag *f = &shape_flags[k];
    const char *value = NULL;
    int r = cli_option(cmd, argc, argv, i, f->name, &value);
    if (r < 0)
      return -1;
    if (r == 0)
      continue;
    if (s->seen & (1u << k)) {
      cli_usage_error(cmd, "option '%s' given twice", f->name);
      return -1;
    }
    s->seen |= 1u << k;
    return set_flag(cmd, f, s, value) == 0 ? 1 : -1;
  }
  return 0;
}

int cli_shape_command_arg(const char *cmd, cli_shape *s,
                             const cli_text *texts,
                             const cli_flag *flags,
                             void (*usage)(FILE *out), int argc, char **argv,
                             int *i) {
  int r = texts != NULL ? cli_text_option(cmd, argc, argv, i, texts) : 0;
  if (r == 0)
    r = cli_shape_option(cmd, s, argc, argv, i);
  if (r < 0)
    return CLI_EXIT_USAGE;
  if (r > 0)
    return CLI_NEXT;
  return cli_other_arg(cmd, argv[*i], flags, usage);
}

int cli_shape_finish(const char *cmd, const cli_shape *s) {
  for (size_t k = 0; k < SHAPE_FLAG_COUNT; k++)
    if (shape_flags[k].required && !(s->seen & (1u << k))) {
      cli_usage_error(cmd, "missing required option '%s'",
                         shape_flags[k].name);
      return -1;
    }
  return 0;
}

void cli_shape_help(FILE *out) {
  for (size_t k = 0; k < SHAPE_FLAG_COUNT; k++) {
    const shape_flag *f = &shape_flags[k];
    char left[64];
    snprintf(left, sizeof left, "%s %s", f->name, f->metavar);
    fprintf(out, "  %-26s %s%s\n", left, f->required ? "(required) " : "",
            f->help);
  }
}

/* ------------------------------------------------------------------ */

void cli_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        fprintf(out, "\\u%04x", *p);
      else
        fputc(*p, out);
    }
  }
  fputc('"', out);
}

const char *cli_kind_name(uint32_t kind) {
  switch (kind) {
  case UQ_KERNEL_DECODE: return "decode";
  case UQ_KERNEL_REDUCE: return "reduce";
  case UQ_KERNEL_PROLOGUE: return "prologue";
  case UQ_KERNEL_STORE: return "store";
  default: return "unknown";
  }
}

const char *cli_dtype_name(uint32_t dtype) {
  switch (dtype) {
  case UQ_DTYPE_BF16: return "bf16";
  case UQ_DTYPE_FP16: return "fp16";
  case UQ_DTYPE_FP32: return "fp32";
  default: return "unknown";
  }
}
