/* Source emission. A source is: a header comment naming the key and the
 * route, the route's prelude, the ABI header, the shared numerics, a block
 * of constexpr constants computed from the key, then the kind's templates.
 * Specialization enters only through that constants block, and every byte
 * is a pure function of (key, route): floats are spelled as hex literals
 * built from their bits, never through locale-dependent printf. */
#include "lib/codegen/emit.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/codegen/key.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"

typedef struct uq__template {
  const char *name;
  const char *text;
  size_t len;
} uq__template;

/* Defined in the generated uq_templates.c (lib/codegen/embed_templates.py). */
extern const uq__template uq__templates[];
extern const size_t uq__templates_count;

const char *uq__template_text(const char *name, size_t *len) {
  if (name == NULL)
    return NULL;
  for (size_t i = 0; i < uq__templates_count; i++) {
    if (strcmp(uq__templates[i].name, name) == 0) {
      if (len != NULL)
        *len = uq__templates[i].len;
      return uq__templates[i].text;
    }
  }
  return NULL;
}

const char *uq__route_name(uq__route route) {
  switch (route) {
  case UQ__ROUTE_NVRTC: return "nvrtc";
  case UQ__ROUTE_HIPRTC: return "hiprtc";
  case UQ__ROUTE_CLANG: return "clang";
  default: return "unknown";
  }
}

static const char *prelude_name(uq__route route) {
  switch (route) {
  case UQ__ROUTE_NVRTC: return "prelude_nvrtc.hip";
  case UQ__ROUTE_HIPRTC: return "prelude_hiprtc.hip";
  default: return "prelude_clang.hip";
  }
}

/* Spells a finite float as a C99/C++17 hex literal from its bits, e.g.
 * 0.0625f -> "0x1.000000p-4f". */
static void put_hex_float(uq__buf *out, float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  const char *sign = (bits >> 31) ? "-" : "";
  uint32_t exp = (bits >> 23) & 0xffu;
  uint32_t mant = bits & 0x7fffffu;
  if (exp == 0 && mant == 0)
    uq__buf_printf(out, "%s0x0p+0f", sign);
  else if (exp == 0) /* subnormal: 0.m * 2^-126 */
    uq__buf_printf(out, "%s0x0.%06xp-126f", sign, (unsigned)(mant << 1));
  else
    uq__buf_printf(out, "%s0x1.%06xp%+df", sign, (unsigned)(mant << 1),
                   (int)exp - 127);
}

unsigned uq__gen_threads_of(const uq__checked_key *ck) {
  const uq_key *key = &ck->key;
  switch (key->kind) {
  case UQ_KERNEL_DECODE:
    return uq__layer_block_threads(&ck->info, key->variant);
  case UQ_KERNEL_REDUCE:
    return 256u; /* UQ_REDUCE_THREADS in templates/passes/reduce.hip */
  case UQ_KERNEL_PROLOGUE:
    return key->head_dim < 64 ? 64u
                              : (key->head_dim > 256 ? 256u
                                                     : (unsigned)key->head_dim);
  case UQ_KERNEL_STORE:
    return (unsigned)key->head_dim;
  default:
    return 0u;
  }
}

unsigned uq__gen_block_threads(const uq_key *key) {
  uq__checked_key ck;
  if (uq__key_check(key, &ck) != 0)
    return 0u;
  return uq__gen_threads_of(&ck);
}

int uq__gen_symbol_of(const uq__checked_key *ck, char *buf, size_t n) {
  char name[UQ__KEY_NAME_MAX];
  size_t len = strlen(ck->name);
  memcpy(name, ck->name, len + 1);
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_';
    if (c == '+')
      name[i] = 'P';
    else if (c == '-')
      name[i] = 'M';
    else if (!ok)
      name[i] = '_';
  }
  if (buf != NULL && n > 0) {
    size_t copy = len < n - 1 ? len : n - 1;
    memcpy(buf, name, copy);
    buf[copy] = '\0';
  }
  return (int)len;
}

int uq__gen_symbol(const uq_key *key, char *buf, size_t n) {
  if (buf != NULL && n > 0)
    buf[0] = '\0';
  uq__checked_key ck;
  int rc = uq__key_check(key, &ck);
  if (rc != 0)
    return rc;
  return uq__gen_symbol_of(&ck, buf, n);
}

static int append_template(uq__buf *out, const char *name) {
  size_t len = 0;
  const char *text = uq__template_text(name, &len);
  if (text == NULL)
    return uq__errorf(UQ_EINVAL, "template %s is not embedded", name);
  uq__buf_printf(out, "\n/* ---- %s ---- */\n", name);
  uq__buf_append(out, text, len);
  return 0;
}

static void put_constants(uq__buf *out, const uq_key *key, unsigned threads,
                          const char *symbol) {
  /* The same float as the host's (float)scale and uq_fwht's norm. */
  float scale = (float)((double)key->scale_e8 / 1e8);
  float norm = (float)(1.0 / sqrt((double)key->head_dim));
  uq__buf_puts(out, "\n/* ---- specialization constants ---- */\n");
  uq__buf_printf(out, "constexpr int UQ_KIND = %u;\n", (unsigned)key->kind);
  uq__buf_printf(out, "constexpr int UQ_VARIANT = %d;\n", (int)key->variant);
  uq__buf_printf(out, "constexpr int UQ_DTYPE = %u; /* 1 bf16, 2 fp16, 3 fp32 */\n",
                 (unsigned)key->dtype);
  uq__buf_printf(out, "constexpr bool UQ_OUT_BF16 = %s;\n",
                 key->dtype == UQ_DTYPE_BF16 ? "true" : "false");
  uq__buf_printf(out, "constexpr int UQ_HEAD_DIM = %d;\n", (int)key->head_dim);
  uq__buf_printf(out, "constexpr int UQ_NUM_KV_HEADS = %d;\n",
                 (int)key->num_kv_heads);
  uq__buf_printf(out, "constexpr int UQ_QG = %d;\n", (int)key->query_group_size);
  uq__buf_printf(out, "constexpr int UQ_NUM_PARTITIONS = %d;\n",
                 (int)key->num_partitions);
  uq__buf_printf(out, "constexpr int UQ_TGPP = %d;\n",
                 (int)key->tile_groups_per_partition);
  uq__buf_printf(out, "constexpr int UQ_BLOCK_SIZE = %d;\n",
                 (int)key->kv_block_size);
  uq__buf_printf(out, "constexpr int UQ_MAX_BLOCKS = %d;\n",
                 (int)key->max_blocks_per_seq);
  uq__buf_printf(out, "constexpr int UQ_PADDED_SLOT = %d;\n",
                 (int)key->padded_slot);
  uq__buf_printf(out, "constexpr bool UQ_FUSE_QROT = %s;\n",
                 key->fuse_qrot ? "true" : "false");
  uq__buf_printf(out, "constexpr long long UQ_Q_STRIDE_SEQ = %lldLL;\n",
                 (long long)key->stride_q_seq);
  uq__buf_printf(out, "constexpr long long UQ_Q_STRIDE_HEAD = %lldLL;\n",
                 (long long)key->stride_q_head);
  /* Only the prologue reads a query with an element stride (the other
   * kinds' sources stay as they were). */
  if (key->kind == UQ_KERNEL_PROLOGUE)
    uq__buf_printf(out, "constexpr long long UQ_Q_STRIDE_DIM = %lldLL;\n",
                   (long long)(key->stride_q_dim ? key->stride_q_dim : 1));
  uq__buf_puts(out, "constexpr float UQ_SCALE = ");
  put_hex_float(out, scale);
  uq__buf_printf(out, "; /* scale_e8 = %lld */\n", (long long)key->scale_e8);
  uq__buf_puts(out, "constexpr float UQ_FWHT_NORM = ");
  put_hex_float(out, norm);
  uq__buf_puts(out, "; /* (float)(1 / sqrt(UQ_HEAD_DIM)) */\n");
  uq__buf_printf(out, "constexpr int UQ_BLOCK_THREADS = %u;\n", threads);
  uq__buf_printf(out, "#define UQ_KERNEL_NAME %s\n", symbol);
}

int uq__gen_emit(const uq__checked_key *ck, uq__route route, uq__buf *out) {
  if (out == NULL)
    return uq__errorf(UQ_EINVAL, "uq__gen_emit: out is NULL");
  const uq_key *key = &ck->key;
  int amd_route = route == UQ__ROUTE_HIPRTC || route == UQ__ROUTE_CLANG;
  if (route != UQ__ROUTE_NVRTC && !amd_route)
    return uq__errorf(UQ_EINVAL, "unknown compile route %d", (int)route);
  if ((ck->info.family == UQ__TARGET_NVIDIA) != (route == UQ__ROUTE_NVRTC))
    return uq__errorf(UQ_EINVAL, "route %s cannot compile for target %s",
                      uq__route_name(route), key->target);
  const char *name = ck->name;
  char symbol[UQ__KEY_NAME_MAX];
  uq__gen_symbol_of(ck, symbol, sizeof symbol);
  unsigned threads = uq__gen_threads_of(ck);
  int rc;

  uq__buf_printf(out,
                 "/* uqjit %s kernel %s\n * route: %s. Generated from "
                 "templates/ by lib/codegen/emit.c: do not edit. */\n",
                 UQ_VERSION_STRING, name, uq__route_name(route));
  static const char *const reduce_parts[] = {"reduce.hip", NULL};
  static const char *const prologue_parts[] = {"prologue.hip", NULL};
  static const char *const store_parts[] = {"store.hip", NULL};
  const char *const *parts;
  switch (key->kind) {
  case UQ_KERNEL_DECODE:
    parts = uq__layer_templates(ck->layer, key->head_dim);
    break;
  case UQ_KERNEL_REDUCE: parts = reduce_parts; break;
  case UQ_KERNEL_PROLOGUE: parts = prologue_parts; break;
  case UQ_KERNEL_STORE: parts = store_parts; break;
  default:
    return uq__errorf(UQ_EINVAL, "unknown kernel kind %u", (unsigned)key->kind);
  }
  if (parts == NULL)
    return uq__errorf(UQ_EINVAL, "the %s layer has no templates for head_dim %d",
                      ck->layer->name, (int)key->head_dim);
  if ((rc = append_template(out, prelude_name(route))) != 0 ||
      (rc = append_template(out, "uq_abi.h")) != 0 ||
      (rc = append_template(out, "numerics.hip")) != 0)
    return rc;
  put_constants(out, key, threads, symbol);
  for (int i = 0; parts[i] != NULL; i++)
    if ((rc = append_template(out, parts[i])) != 0)
      return rc;
  if (out->status != 0)
    return uq__errorf(out->status, "out of memory emitting %s", name);
  return 0;
}

int uq__gen_source(const uq_key *key, uq__route route, uq__buf *out) {
  if (out == NULL)
    return uq__errorf(UQ_EINVAL, "uq__gen_source: out is NULL");
  uq__checked_key ck;
  int rc = uq__key_check(key, &ck);
  if (rc != 0)
    return rc;
  return uq__gen_emit(&ck, route, out);
}
