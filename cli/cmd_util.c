#include "cli/cmd_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

int cli_parse_list(const char *cmd, const char *flag, const char *text,
                       int64_t min, int64_t max, int64_t *out, size_t cap,
                       size_t *n) {
  *n = 0;
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item) {
      cli_usage_error(cmd, "%s: '%s' is not a comma-separated list", flag,
                         text);
      return -1;
    }
    if (*n == cap) {
      cli_usage_error(cmd, "%s: more than %zu values", flag, cap);
      return -1;
    }
    memcpy(item, p, len);
    item[len] = '\0';
    if (cli_parse_i64(cmd, flag, item, min, max, &out[*n]) != 0)
      return -1;
    *n += 1;
    if (comma == NULL)
      return 0;
    p = comma + 1;
  }
}

int cli_parse_size(const char *cmd, const char *flag, const char *text,
                       uint64_t *out) {
  size_t len = strlen(text);
  uint64_t mult = 1;
  char digits[32];
  if (len > 0) {
    switch (text[len - 1]) {
    case 'k': case 'K': mult = 1ull << 10; len--; break;
    case 'm': case 'M': mult = 1ull << 20; len--; break;
    case 'g': case 'G': mult = 1ull << 30; len--; break;
    case 't': case 'T': mult = 1ull << 40; len--; break;
    default: break;
    }
  }
  if (len == 0 || len >= sizeof digits) {
    cli_usage_error(cmd, "%s: '%s' is not a size (BYTES, or with K/M/G)",
                       flag, text);
    return -1;
  }
  memcpy(digits, text, len);
  digits[len] = '\0';
  int64_t v;
  if (cli_parse_i64(cmd, flag, digits, 0, INT64_MAX, &v) != 0)
    return -1;
  if ((uint64_t)v > UINT64_MAX / mult) {
    cli_usage_error(cmd, "%s: '%s' is too large", flag, text);
    return -1;
  }
  *out = (uint64_t)v * mult;
  return 0;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_rng_seed(cli_rng *r, uint64_t seed) { r->state = seed; }

uint64_t cli_rng_next(cli_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double cli_rng_normal(cli_rng *r) {
  /* 53-bit uniforms in (0, 1]: log(0) never happens. */
  double u1 = ((double)(cli_rng_next(r) >> 11) + 1.0) * 0x1p-53;
  double u2 = (double)(cli_rng_next(r) >> 11) * 0x1p-53;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

size_t cli_query_elems(const uq_shape *s) {
  int64_t head = s->q_stride_head ? s->q_stride_head : s->head_dim;
  int64_t seq = s->q_stride_seq ? s->q_stride_seq
                                : (int64_t)s->num_q_heads * s->head_dim;
  return (size_t)((s->batch - 1) * seq + (s->num_q_heads - 1) * head +
                  s->head_dim);
}

static uint16_t to_half(uq_dtype dtype, double x) {
  return dtype == UQ_DTYPE_FP16 ? uq_float_to_fp16((float)x)
                                : uq_float_to_bf16((float)x);
}

static double from_half(uq_dtype dtype, uint16_t h) {
  return dtype == UQ_DTYPE_FP16 ? uq_fp16_to_float(h) : uq_bf16_to_float(h);
}

void cli_problem_free(cli_problem *p) {
  free(p->seq_lens);
  free(p->block_table);
  free(p->slot_mapping);
  free(p->k);
  free(p->v);
  free(p->query);
  memset(p, 0, sizeof *p);
}

int cli_problem_make(cli_problem *p, const uq_shape *shape,
                         const int32_t *seq_lens, uint64_t seed) {
  memset(p, 0, sizeof *p);
  p->shape = *shape;
  uq_shape *s = &p->shape;
  if (s->q_dtype == 0)
    s->q_dtype = UQ_DTYPE_BF16;
  if (s->padded_slot == 0)
    s->padded_slot = (int32_t)((uq_slot_size(s->head_dim) + 3) & ~(size_t)3);
  int64_t b = s->batch, hk = s->num_kv_heads, d = s->head_dim;
  int64_t bs = s->block_size, mb = s->max_blocks_per_seq;
  int64_t w = bs * mb;
  p->num_blocks = 0;
  p->num_tokens = 0;
  for (int64_t i = 0; i < b; i++) {
    if (seq_lens[i] < 1 || seq_lens[i] > w)
      return UQ_EINVAL;
    p->num_blocks += (seq_lens[i] + bs - 1) / bs;
    p->num_tokens += seq_lens[i];
  }
  p->cache_bytes =
      (size_t)(p->num_blocks * bs * hk * (int64_t)s->padded_slot);
  p->query_elems = cli_query_elems(s);
  size_t rows = (size_t)(p->num_tokens * hk * d);
  p->seq_lens = malloc((size_t)b * sizeof *p->seq_lens);
  p->block_table = calloc((size_t)(b * mb), sizeof *p->block_table);
  p->slot_mapping = malloc((size_t)p->num_tokens * sizeof *p->slot_mapping);
  p->k = malloc(rows * sizeof *p->k);
  p->v = malloc(rows * sizeof *p->v);
  p->query = calloc(p->query_elems, sizeof *p->query);
  int64_t *perm = malloc((size_t)p->num_blocks * sizeof *perm);
  if (!p->seq_lens || !p->block_table || !p->slot_mapping || !p->k ||
      !p->v || !p->query || !perm) {
    free(perm);
    cli_problem_free(p);
    return UQ_ENOMEM;
  }
  cli_rng rng;
  cli_rng_seed(&rng, seed);
  /* Shuffled physical blocks, so the block table is really exercised. */
  for (int64_t i = 0; i < p->num_blocks; i++)
    perm[i] = i;
  for (int64_t i = p->num_blocks - 1; i > 0; i--) {
    int64_t j = (int64_t)(cli_rng_next(&rng) % (uint64_t)(i + 1));
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t next_block = 0, tok = 0;
  for (int64_t i = 0; i < b; i++) {
    p->seq_lens[i] = seq_lens[i];
    int64_t nb = (seq_lens[i] + bs - 1) / bs;
    for (int64_t j = 0; j < nb; j++)
      p->block_table[i * mb + j] = (int32_t)perm[next_block++];
    for (int64_t t = 0; t < seq_lens[i]; t++)
      p->slot_mapping[tok++] = p->block_table[i * mb + t / bs] * bs + t % bs;
  }
  free(perm);
  for (size_t i = 0; i < rows; i++) {
    p->k[i] = to_half(s->q_dtype, cli_rng_normal(&rng));
    p->v[i] = to_half(s->q_dtype, cli_rng_normal(&rng));
  }
  for (size_t i = 0; i < p->query_elems; i++)
    p->query[i] = to_half(s->q_dtype, cli_rng_normal(&rng));
  return 0;
}

double cli_rel_l2(uq_dtype dtype, const uint16_t *out, const double *ref,
                      size_t n, double *max_abs, size_t *bad) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double x = from_half(dtype, out[i]);
    if (!isfinite(x)) {
      *bad += 1;
      continue;
    }
    double e = x - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
    if (fabs(e) > *max_abs)
      *max_abs = fabs(e);
  }
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

const char *cli_bytes(uint64_t bytes, char *buf, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, n, "%llu B", (unsigned long long)bytes);
  else
    snprintf(buf, n, "%.2f %s", v, units[u]);
  return buf;
}

int cli_compile_context(const char *target, const char *cache_dir,
                            uq_context **out) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = target;
  o.cache_dir = cache_dir;
  return uq_context_create(&o, out);
}
