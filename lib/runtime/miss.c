/* Why a kernel missed with the JIT off: the nearest kernel of the same
 * kind and architecture that the cache layers do hold, and the key fields
 * that differ ("warmed for max_blocks_per_seq 2048, this call needs
 * max_blocks_per_seq 512"): a deployment served with another
 * --max-model-len or tensor-parallel size than it was warmed for. Runs on
 * the error path only: it reads every entry of every layer. */
#include "lib/runtime/miss.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/codegen/target.h"

/* The fields a kernel key is made of, by the names the plan and the
 * manifest use. A model's geometry (heads, head_dim, block size, dtype,
 * scale, layer) weighs more than what the lengths and batch decide
 * (partitions, blocks per sequence, strides): the nearest kernel is the
 * same model warmed for other lengths before another model. */
typedef struct field {
  const char *name;
  size_t offset;
  int wide;   /* int64_t, else int32_t / uint32_t */
  int weight;
} field;

#define MODEL 16
#define F32(f, w) {#f, offsetof(uq_key, f), 0, w}
#define F64(f, w) {#f, offsetof(uq_key, f), 1, w}
static const field fields[] = {
    F32(dtype, MODEL),        F32(head_dim, MODEL),
    F32(num_kv_heads, MODEL), F32(query_group_size, MODEL),
    F32(kv_block_size, MODEL), F32(padded_slot, MODEL),
    F32(variant, MODEL),      F64(scale_e8, MODEL),
    F32(num_partitions, 1),   F32(max_blocks_per_seq, 1),
    F32(fuse_qrot, 1),        F32(tile_groups_per_partition, 1),
    F64(stride_q_seq, 1),     F64(stride_q_head, 1),
    F64(stride_q_dim, 1),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static int64_t value_of(const uq_key *k, const field *f) {
  const char *p = (const char *)k + f->offset;
  if (f->wide) {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The architecture of a target: "gfx950" of "gfx950:sramecc+". */
static size_t arch_len(const char *target) {
  const char *colon = strchr(target, ':');
  return colon != NULL ? (size_t)(colon - target) : strlen(target);
}

/* 1 when a device reporting `device` loads code built for `target` (no
 * difference worth naming). */
static int loads(const char *device, const char *target) {
  char t[UQ_TARGET_MAX];
  for (int i = 0; uq__target_loadable(device, i, t, sizeof t) == 0; i++)
    if (strcmp(t, target) == 0)
      return 1;
  return 0;
}

typedef struct search {
  const uq_key *want;
  const char *layer;
  int best;               /* weighted differences of the best; -1: none */
  uq_key best_key;
  char best_name[UQ__MISS_NAME_MAX];
  char best_layer[UQ__MISS_LAYER_MAX];
} search;

static int consider(void *user, const uq_cache_entry *e) {
  search *s = user;
  uq_key k;
  if (!e->valid || e->key_name == NULL || e->key_name[0] == '\0' ||
      uq_key_parse(e->key_name, &k) != 0)
    return 0;
  const uq_key *w = s->want;
  size_t n = arch_len(w->target);
  if (k.kind != w->kind || arch_len(k.target) != n ||
      strncmp(k.target, w->target, n) != 0)
    return 0;
  int differ = loads(w->target, k.target) ? 0 : MODEL;
  for (size_t i = 0; i < NFIELDS; i++)
    if (value_of(&k, &fields[i]) != value_of(w, &fields[i]))
      differ += fields[i].weight;
  /* The first of the nearest: layers in search order, then the list's. */
  if (s->best >= 0 && differ >= s->best)
    return 0;
  s->best = differ;
  s->best_key = k;
  snprintf(s->best_name, sizeof s->best_name, "%s", e->key_name);
  snprintf(s->best_layer, sizeof s->best_layer, "%s", s->layer);
  return 0;
}

static int each_layer(void *user, const uq_cache_layer *l) {
  search *s = user;
  if (!l->exists)
    return 0;
  s->layer = l->path;
  (void)uq_cache_list(l->path, consider, s); /* an unreadable layer: skip */
  return 0;
}

/* "f1 v1, f2 v2" of the fields of `k` that differ from `other`. */
static size_t list_fields(char *buf, size_t n, const uq_key *k,
                          const uq_key *other) {
  size_t used = 0;
#define PUT(...)                                                            \
  used += (size_t)snprintf(buf + used, used < n ? n - used : 0, __VA_ARGS__)
  for (size_t i = 0; i < NFIELDS; i++) {
    int64_t a = value_of(k, &fields[i]), b = value_of(other, &fields[i]);
    if (a != b)
      PUT("%s%s %lld", used ? ", " : "", fields[i].name, (long long)a);
  }
  if (!loads(k->target, other->target) && !loads(other->target, k->target))
    PUT("%starget %s", used ? ", " : "", k->target);
#undef PUT
  return used;
}

void uq__miss_hint(const char *dir, const uq_key *key, char *buf, size_t n) {
  if (n == 0)
    return;
  buf[0] = '\0';
  search *s = uq__calloc(1, sizeof *s);
  if (s == NULL)
    return;
  s->want = key;
  s->best = -1;
  (void)uq_cache_layers(dir, each_layer, s);
  uq__error_clear();
  if (s->best > 0) {
    char have[512], need[512];
    list_fields(have, sizeof have, &s->best_key, key);
    list_fields(need, sizeof need, key, &s->best_key);
    snprintf(buf, n,
             "; the nearest cached kernel of this kind, %s (in %s), was "
             "warmed for %s, this call needs %s",
             s->best_name, s->best_layer, have, need);
  }
  uq__free(s);
}
