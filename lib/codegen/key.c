/* Kernel keys. A name spells every field its kind uses, in a fixed order,
 * each number in exactly one spelling, so that name -> key -> name and
 * key -> name -> key are both exact; that is what lets logs, dumps and the
 * warm-cache tool name a specialization and get back the same bytes. */
#include "lib/codegen/key.h"

#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"
#include "lib/format/format.h"

/* The fields a name can spell, in name order. */
typedef enum {
  F_VARIANT,
  F_HEAD_DIM,
  F_KV_HEADS,
  F_PARTITIONS,
  F_MAX_BLOCKS,
  F_SCALE,
  F_QG,
  F_BLOCK_SIZE,
  F_PADDED_SLOT,
  F_FUSE_QROT,
  F_TGPP,
  F_STRIDE_SEQ,
  F_STRIDE_HEAD,
  F_COUNT_
} field;

static const char *const prefixes[F_COUNT_] = {
    [F_VARIANT] = "v",     [F_HEAD_DIM] = "d",     [F_KV_HEADS] = "hk",
    [F_PARTITIONS] = "p",  [F_MAX_BLOCKS] = "mb",  [F_SCALE] = "s",
    [F_QG] = "qg",         [F_BLOCK_SIZE] = "bs",  [F_PADDED_SLOT] = "ps",
    [F_FUSE_QROT] = "fq",  [F_TGPP] = "t",         [F_STRIDE_SEQ] = "sq",
    [F_STRIDE_HEAD] = "sh",
};

/* Fields per kind, terminated by F_COUNT_. A field not listed must be 0. */
static const unsigned char decode_fields[] = {
    F_VARIANT,     F_HEAD_DIM,  F_KV_HEADS, F_PARTITIONS, F_MAX_BLOCKS,
    F_SCALE,       F_QG,        F_BLOCK_SIZE, F_PADDED_SLOT, F_FUSE_QROT,
    F_TGPP,        F_STRIDE_SEQ, F_STRIDE_HEAD, F_COUNT_};
static const unsigned char reduce_fields[] = {
    F_VARIANT, F_HEAD_DIM, F_KV_HEADS, F_PARTITIONS, F_QG, F_COUNT_};
static const unsigned char prologue_fields[] = {F_VARIANT, F_HEAD_DIM,
                                                F_KV_HEADS, F_QG, F_COUNT_};
static const unsigned char store_fields[] = {F_HEAD_DIM, F_KV_HEADS,
                                             F_PADDED_SLOT, F_COUNT_};

typedef struct kind_desc {
  uint32_t kind;
  const char *name;
  const unsigned char *fields;
} kind_desc;

static const kind_desc kinds[] = {
    {UQ_KERNEL_DECODE, "decode", decode_fields},
    {UQ_KERNEL_REDUCE, "reduce", reduce_fields},
    {UQ_KERNEL_PROLOGUE, "prologue", prologue_fields},
    {UQ_KERNEL_STORE, "store", store_fields},
};
#define KIND_COUNT (sizeof kinds / sizeof kinds[0])

static const kind_desc *find_kind(uint32_t kind) {
  for (size_t i = 0; i < KIND_COUNT; i++)
    if (kinds[i].kind == kind)
      return &kinds[i];
  return NULL;
}

static int64_t field_get(const uq_key *k, int f) {
  switch (f) {
  case F_VARIANT: return k->variant;
  case F_HEAD_DIM: return k->head_dim;
  case F_KV_HEADS: return k->num_kv_heads;
  case F_PARTITIONS: return k->num_partitions;
  case F_MAX_BLOCKS: return k->max_blocks_per_seq;
  case F_SCALE: return k->scale_e8;
  case F_QG: return k->query_group_size;
  case F_BLOCK_SIZE: return k->kv_block_size;
  case F_PADDED_SLOT: return k->padded_slot;
  case F_FUSE_QROT: return k->fuse_qrot;
  case F_TGPP: return k->tile_groups_per_partition;
  case F_STRIDE_SEQ: return k->stride_q_seq;
  case F_STRIDE_HEAD: return k->stride_q_head;
  default: return 0;
  }
}

/* Stores v into field f; -1 when v does not fit the field's type. */
static int field_set(uq_key *k, int f, int64_t v) {
  int32_t *i32 = NULL;
  switch (f) {
  case F_VARIANT: i32 = &k->variant; break;
  case F_HEAD_DIM: i32 = &k->head_dim; break;
  case F_KV_HEADS: i32 = &k->num_kv_heads; break;
  case F_PARTITIONS: i32 = &k->num_partitions; break;
  case F_MAX_BLOCKS: i32 = &k->max_blocks_per_seq; break;
  case F_QG: i32 = &k->query_group_size; break;
  case F_BLOCK_SIZE: i32 = &k->kv_block_size; break;
  case F_PADDED_SLOT: i32 = &k->padded_slot; break;
  case F_FUSE_QROT: i32 = &k->fuse_qrot; break;
  case F_TGPP: i32 = &k->tile_groups_per_partition; break;
  case F_SCALE: k->scale_e8 = v; return 0;
  case F_STRIDE_SEQ: k->stride_q_seq = v; return 0;
  case F_STRIDE_HEAD: k->stride_q_head = v; return 0;
  default: return -1;
  }
  if (v < INT32_MIN || v > INT32_MAX)
    return -1;
  *i32 = (int32_t)v;
  return 0;
}

static int field_used(const kind_desc *d, int f) {
  for (const unsigned char *p = d->fields; *p != F_COUNT_; p++)
    if (*p == f)
      return 1;
  return 0;
}

static const char *dtype_name(uint32_t dtype) {
  switch (dtype) {
  case UQ_DTYPE_BF16: return "bf16";
  case UQ_DTYPE_FP16: return "fp16";
  case UQ_DTYPE_FP32: return "fp32";
  default: return NULL;
  }
}

/* ------------------------------------------------------------------ */

static int validate_target(const uq_key *key, uq__target_info *info) {
  const char *t = key->target;
  size_t len = strnlen(t, UQ_TARGET_MAX);
  if (len == UQ_TARGET_MAX)
    return uq__errorf(UQ_EINVAL, "key target is not NUL-terminated");
  /* Bytes after the NUL take part in hashing and memcmp: they must be the
   * zeros a memset key has. */
  for (size_t i = len; i < UQ_TARGET_MAX; i++)
    if (t[i] != '\0')
      return uq__errorf(UQ_EINVAL,
                        "key target '%s' has stray bytes after its end "
                        "(build keys with memset, then fill)",
                        t);
  char canon[UQ_TARGET_MAX];
  int rc = uq__target_parse(t, canon, sizeof canon, info);
  if (rc != 0)
    return rc;
  if (strcmp(canon, t) != 0)
    return uq__errorf(UQ_EINVAL, "key target '%s' is not canonical ('%s')", t,
                      canon);
  return 0;
}

static int check_padded_slot(const uq_key *key) {
  size_t slot = uq_slot_size(key->head_dim);
  if (key->padded_slot < 0 || (size_t)key->padded_slot < slot ||
      key->padded_slot % 4 != 0)
    return uq__errorf(UQ_EINVAL,
                      "key padded_slot %d must be >= the slot size %zu and a "
                      "multiple of 4",
                      (int)key->padded_slot, slot);
  return 0;
}

static int check_group_size(const kind_desc *d, const uq_key *key) {
  if (key->query_group_size < 1 ||
      (int64_t)key->query_group_size * key->num_kv_heads > INT32_MAX)
    return uq__errorf(UQ_EINVAL,
                      "%s key query_group_size %d must be >= 1 and give "
                      "fewer than 2^31 query heads",
                      d->name, (int)key->query_group_size);
  return 0;
}

int uq__key_query_fits(int64_t stride_seq, int64_t stride_head, int64_t stride_dim,
                       int64_t hq, int64_t d, int64_t seqs) {
  /* The last element's offset plus one, then its bytes (2 per element). */
  int64_t last = 0, heads = 0, elems = 0;
  if (__builtin_mul_overflow(seqs - 1, stride_seq, &last) ||
      __builtin_mul_overflow(hq - 1, stride_head, &heads) ||
      __builtin_mul_overflow(d - 1, stride_dim, &elems) ||
      __builtin_add_overflow(last, heads, &last) ||
      __builtin_add_overflow(last, elems + 1, &last) ||
      __builtin_mul_overflow(last, (int64_t)2, &last))
    return -1;
  return 0;
}

int uq__key_block_size_ok(int64_t block_size) {
  return block_size == 16 || block_size == 32 || block_size == 64 ||
         block_size == 128 || block_size == 256;
}

int uq__key_window_ok(int64_t max_blocks_per_seq, int64_t block_size) {
  return max_blocks_per_seq >= 1 && block_size >= 1 &&
         max_blocks_per_seq * block_size <= INT32_MAX;
}

/* The decode fields a plan derives from the caller's shape: the rules
 * the planner applies to the shape (lib/codegen/policy.c). */
static int validate_decode_shape(const uq_key *key) {
  if (!uq__key_window_ok(key->max_blocks_per_seq, key->kv_block_size))
    return uq__errorf(UQ_EINVAL,
                      "decode key max_blocks_per_seq %d and kv_block_size %d "
                      "must be >= 1 and span at most %d tokens",
                      (int)key->max_blocks_per_seq, (int)key->kv_block_size,
                      INT32_MAX);
  if (!uq__key_block_size_ok(key->kv_block_size))
    return uq__errorf(UQ_EINVAL,
                      "decode key kv_block_size %d is not 16, 32, 64, 128 "
                      "or 256",
                      (int)key->kv_block_size);
  if (key->scale_e8 <= 0 || key->scale_e8 > UQ__KEY_SCALE_E8_MAX)
    return uq__errorf(UQ_EINVAL,
                      "decode key scale_e8 %lld must be in [1, %lld] (a "
                      "softmax scale in (0, %g])",
                      (long long)key->scale_e8, UQ__KEY_SCALE_E8_MAX,
                      UQ__KEY_SCALE_MAX);
  int64_t hq = (int64_t)key->query_group_size * key->num_kv_heads;
  if (key->stride_q_seq <= 0 || key->stride_q_head <= 0 ||
      uq__key_query_fits(key->stride_q_seq, key->stride_q_head, 1, hq,
                         key->head_dim, 2) != 0)
    return uq__errorf(UQ_EINVAL,
                      "decode key query strides (%lld, %lld) must be > 0 "
                      "and address two sequences of %lld heads of %d "
                      "elements with 64-bit byte offsets",
                      (long long)key->stride_q_seq,
                      (long long)key->stride_q_head, (long long)hq,
                      (int)key->head_dim);
  return 0;
}

static int validate_decode(const uq_key *key) {
  if (!uq__is_pow2(key->num_partitions) || key->num_partitions < 2 ||
      key->num_partitions > UQ__KEY_PARTITIONS_MAX)
    return uq__errorf(UQ_EINVAL,
                      "decode key num_partitions %d must be a power of two in "
                      "[2, %d]",
                      (int)key->num_partitions, UQ__KEY_PARTITIONS_MAX);
  if (!uq__is_pow2(key->tile_groups_per_partition) ||
      key->tile_groups_per_partition > UQ__KEY_TGPP_MAX)
    return uq__errorf(UQ_EINVAL,
                      "decode key tile_groups_per_partition %d must be a power "
                      "of two in [1, %d]",
                      (int)key->tile_groups_per_partition, UQ__KEY_TGPP_MAX);
  int rc = check_group_size(&kinds[0], key);
  if (rc != 0)
    return rc;
  if ((rc = validate_decode_shape(key)) != 0)
    return rc;
  rc = check_padded_slot(key);
  if (rc != 0)
    return rc;
  if (key->fuse_qrot != 0 && key->fuse_qrot != 1)
    return uq__errorf(UQ_EINVAL, "decode key fuse_qrot %d must be 0 or 1",
                      (int)key->fuse_qrot);
  int64_t hq_d =
      (int64_t)key->query_group_size * key->num_kv_heads * key->head_dim;
  if (key->fuse_qrot &&
      (key->stride_q_head != key->head_dim || key->stride_q_seq < hq_d))
    return uq__errorf(UQ_EINVAL,
                      "decode key fuses the query rotation but its strides "
                      "(%lld, %lld) are not a dense [Hq, %d] row",
                      (long long)key->stride_q_seq,
                      (long long)key->stride_q_head, (int)key->head_dim);
  /* The strided schedule can reach tile group P*TGPP - 1 at most. */
  int64_t window = (int64_t)key->max_blocks_per_seq * key->kv_block_size;
  int64_t reach = (int64_t)key->num_partitions *
                  key->tile_groups_per_partition * 256;
  if (reach < window)
    return uq__errorf(UQ_EINVAL,
                      "decode key covers %lld tokens (P*TGPP*256) but its "
                      "block table spans %lld",
                      (long long)reach, (long long)window);
  return 0;
}

/* uq_key_validate, filling in the key's target. */
static int validate(const uq_key *key, uq__target_info *info) {
  if (key == NULL)
    return uq__errorf(UQ_EINVAL, "key is NULL");
  const kind_desc *d = find_kind(key->kind);
  if (d == NULL)
    return uq__errorf(UQ_EINVAL, "unknown key kind %u", (unsigned)key->kind);
  int rc = validate_target(key, info);
  if (rc != 0)
    return rc;
  if (dtype_name(key->dtype) == NULL ||
      (key->kind != UQ_KERNEL_STORE && key->dtype == UQ_DTYPE_FP32))
    return uq__errorf(UQ_EINVAL, "%s key has an unsupported dtype %u", d->name,
                      (unsigned)key->dtype);
  for (int f = 0; f < F_COUNT_; f++)
    if (!field_used(d, f) && field_get(key, f) != 0)
      return uq__errorf(UQ_EINVAL,
                        "%s key field '%s' is unused by this kind and must "
                        "be 0",
                        d->name, prefixes[f]);
  if (key->kind != UQ_KERNEL_PROLOGUE && key->stride_q_dim != 0)
    return uq__errorf(UQ_EINVAL,
                      "%s key field 'se' is unused by this kind and must be 0",
                      d->name);
  /* Whether the target has the layer, and whether it serves the key, are
   * uq__key_check's questions: a valid key only names a layer. */
  if (uq__layer_find(key->variant, NULL) == NULL) {
    char layers[128];
    uq__layer_list(layers, sizeof layers);
    return uq__errorf(UQ_EINVAL, "%s key has an unknown variant %d (%s)",
                      d->name, (int)key->variant, layers);
  }
  if (!uq__is_pow2(key->head_dim) || key->head_dim < UQ__KEY_HEAD_DIM_MIN ||
      key->head_dim > UQ__KEY_HEAD_DIM_MAX)
    return uq__errorf(UQ_EINVAL,
                      "%s key head_dim %d must be a power of two in [%d, %d]",
                      d->name, (int)key->head_dim, UQ__KEY_HEAD_DIM_MIN,
                      UQ__KEY_HEAD_DIM_MAX);
  if (key->num_kv_heads < 1)
    return uq__errorf(UQ_EINVAL, "%s key num_kv_heads %d must be >= 1",
                      d->name, (int)key->num_kv_heads);
  switch (key->kind) {
  case UQ_KERNEL_DECODE:
    return validate_decode(key);
  case UQ_KERNEL_REDUCE:
    if (!uq__is_pow2(key->num_partitions) || key->num_partitions < 2 ||
        key->num_partitions > UQ__KEY_PARTITIONS_MAX)
      return uq__errorf(UQ_EINVAL,
                        "reduce key num_partitions %d must be a power of two "
                        "in [2, %d]",
                        (int)key->num_partitions, UQ__KEY_PARTITIONS_MAX);
    return check_group_size(d, key);
  case UQ_KERNEL_PROLOGUE:
    if (key->stride_q_dim < 0 || key->stride_q_dim == 1)
      return uq__errorf(UQ_EINVAL,
                        "prologue key stride_q_dim %lld must be 0 (unit "
                        "stride) or >= 2",
                        (long long)key->stride_q_dim);
    return check_group_size(d, key);
  case UQ_KERNEL_STORE:
    return check_padded_slot(key);
  default:
    return uq__errorf(UQ_EINVAL, "unknown key kind %u", (unsigned)key->kind);
  }
}

int uq_key_validate(const uq_key *key) {
  uq__error_clear();
  uq__target_info info;
  return validate(key, &info);
}

/* ------------------------------------------------------------------ */

/* The name of a valid key into buf (see uq_key_name). */
static int write_name(const uq_key *key, char *buf, size_t n) {
  const kind_desc *d = find_kind(key->kind);
  char tmp[UQ__KEY_NAME_MAX];
  char target[UQ_TARGET_MAX];
  memcpy(target, key->target, sizeof target);
  for (char *c = target; *c; c++)
    if (*c == ':')
      *c = '.';
  size_t used = (size_t)snprintf(tmp, sizeof tmp, "uq_%s_%s_%s", d->name,
                                 target, dtype_name(key->dtype));
  for (const unsigned char *f = d->fields; *f != F_COUNT_; f++) {
    int64_t v = field_get(key, *f);
    int w;
    if (*f == F_SCALE)
      w = snprintf(tmp + used, sizeof tmp - used, "_s%lld.%08lld",
                   (long long)(v / 100000000), (long long)(v % 100000000));
    else
      w = snprintf(tmp + used, sizeof tmp - used, "_%s%lld", prefixes[*f],
                   (long long)v);
    used += (size_t)w;
  }
  /* The element stride is spelled only where it is not 1, so the names
   * of unit-stride prologues are what they always were. */
  if (key->stride_q_dim != 0)
    used += (size_t)snprintf(tmp + used, sizeof tmp - used, "_se%lld",
                             (long long)key->stride_q_dim);
  if (buf != NULL && n > 0) {
    size_t copy = used < n - 1 ? used : n - 1;
    memcpy(buf, tmp, copy);
    buf[copy] = '\0';
  }
  return (int)used;
}

int uq_key_name(const uq_key *key, char *buf, size_t n) {
  if (buf != NULL && n > 0)
    buf[0] = '\0';
  /* Only valid keys have names, so every name parses back to its key. */
  int rc = uq_key_validate(key);
  if (rc != 0)
    return rc;
  return write_name(key, buf, n);
}

int uq__key_check(const uq_key *key, uq__checked_key *out) {
  uq__error_clear();
  memset(out, 0, sizeof *out);
  int rc = validate(key, &out->info);
  if (rc != 0)
    return rc;
  out->key = *key; /* valid: zero after the target's NUL */
  out->layer = uq__layer_find(key->variant, &out->info);
  if ((rc = uq__layer_check_target(out->layer, &out->info, key->target)) != 0)
    return rc;
  if (key->kind == UQ_KERNEL_DECODE) {
    const uq__layer_shape shape = {key->head_dim, key->query_group_size,
                                   (uq_dtype)key->dtype};
    if ((rc = uq__layer_check_decode(out->layer, &shape)) != 0)
      return rc;
  }
  int len = write_name(key, out->name, sizeof out->name);
  if (len < 0 || (size_t)len >= sizeof out->name)
    return uq__errorf(UQ_EINVAL, "key name does not fit %d bytes",
                      UQ__KEY_NAME_MAX);
  return 0;
}

/* A non-negative decimal in its one spelling ("0" or no leading zero). */
static int parse_uint(const char **p, int64_t *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9')
    return -1;
  if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
    return -1;
  int64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    int digit = *s - '0';
    if (v > (INT64_MAX - digit) / 10)
      return -1;
    v = v * 10 + digit;
    s++;
  }
  *p = s;
  *out = v;
  return 0;
}

/* "I.FFFFFFFF": exactly eight decimals, as uq_key_name writes them. */
static int parse_scale(const char **p, int64_t *out) {
  int64_t whole;
  if (parse_uint(p, &whole) != 0 || **p != '.')
    return -1;
  const char *s = *p + 1;
  int64_t frac = 0;
  for (int i = 0; i < 8; i++, s++) {
    if (*s < '0' || *s > '9')
      return -1;
    frac = frac * 10 + (*s - '0');
  }
  if (whole > (INT64_MAX - frac) / 100000000)
    return -1;
  *p = s;
  *out = whole * 100000000 + frac;
  return 0;
}

static int malformed(const char *name, const char *at, const char *what) {
  return uq__errorf(UQ_EINVAL, "malformed key name '%s' at offset %d: %s",
                    name, (int)(at - name), what);
}

int uq_key_parse(const char *name, uq_key *key) {
  uq__error_clear();
  if (name == NULL || key == NULL)
    return uq__errorf(UQ_EINVAL, "key name or output is NULL");
  uq_key k;
  memset(&k, 0, sizeof k);
  const char *p = name;
  if (strncmp(p, "uq_", 3) != 0)
    return malformed(name, p, "expected 'uq_'");
  p += 3;
  const kind_desc *d = NULL;
  for (size_t i = 0; i < KIND_COUNT; i++) {
    size_t len = strlen(kinds[i].name);
    if (strncmp(p, kinds[i].name, len) == 0 && p[len] == '_') {
      d = &kinds[i];
      p += len + 1;
      break;
    }
  }
  if (d == NULL)
    return malformed(name, p, "unknown kernel kind");
  k.kind = d->kind;

  /* The NVIDIA spelling carries its own '_'. */
  size_t skip = strncmp(p, "sm_", 3) == 0 ? 3 : 0;
  size_t tlen = skip + strcspn(p + skip, "_");
  if (tlen == 0 || tlen >= UQ_TARGET_MAX || p[tlen] != '_')
    return malformed(name, p, "expected a target followed by '_'");
  char target[UQ_TARGET_MAX];
  memcpy(target, p, tlen);
  target[tlen] = '\0';
  /* ':' never appears in names; accepting it would give one key two names. */
  if (strchr(target, ':') != NULL)
    return malformed(name, p, "target features are separated by '.'");
  for (char *c = target; *c; c++)
    if (*c == '.')
      *c = ':';
  char canon[UQ_TARGET_MAX];
  if (uq__target_parse(target, canon, sizeof canon, NULL) != 0 ||
      strcmp(canon, target) != 0)
    return malformed(name, p, "not a canonical target");
  memcpy(k.target, canon, strlen(canon) + 1);
  p += tlen + 1;

  static const uint32_t dtypes[] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16,
                                    UQ_DTYPE_FP32};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    const char *dn = dtype_name(dtypes[i]);
    size_t len = strlen(dn);
    if (strncmp(p, dn, len) == 0 && (p[len] == '_' || p[len] == '\0')) {
      k.dtype = dtypes[i];
      p += len;
      break;
    }
  }
  if (k.dtype == 0)
    return malformed(name, p, "unknown dtype");

  for (const unsigned char *f = d->fields; *f != F_COUNT_; f++) {
    size_t plen = strlen(prefixes[*f]);
    if (p[0] != '_' || strncmp(p + 1, prefixes[*f], plen) != 0)
      return malformed(name, p, "expected the next field");
    p += 1 + plen;
    int64_t v;
    const char *at = p;
    int bad = *f == F_SCALE ? parse_scale(&p, &v) : parse_uint(&p, &v);
    if (bad != 0 || field_set(&k, *f, v) != 0)
      return malformed(name, at, "bad number");
  }
  if (k.kind == UQ_KERNEL_PROLOGUE && strncmp(p, "_se", 3) == 0) {
    const char *at = p += 3;
    /* A unit stride is spelled by leaving the field out: one name a key. */
    if (parse_uint(&p, &k.stride_q_dim) != 0 || k.stride_q_dim < 2)
      return malformed(name, at, "bad element stride (2 or more)");
  }
  if (*p != '\0')
    return malformed(name, p, "trailing characters");
  int rc = uq_key_validate(&k);
  if (rc != 0)
    return rc;
  *key = k;
  return 0;
}
