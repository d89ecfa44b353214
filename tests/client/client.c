/* A client of the installed library: compiled against the installed
 * uqjit.h and linked with the flags pkg-config gives (tests/client/run.sh
 * does both), it may use only what the public headers declare. Plans a
 * shape, names its kernels, and decodes a tiny problem with the CPU
 * reference: every token of a sequence has the same V row, so whatever the
 * attention weights, the output must be that row as the cache holds it.
 * The tools' header, uqjit_tools.h, is installed beside uqjit.h and found
 * with the same flags. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uqjit.h>
#include <uqjit_tools.h>

#define D 256
#define HK 1
#define QG 8
#define BS 16
#define MB 2

static int failures;

static void check(int ok, const char *fmt, ...) {
  if (ok)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "client: FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  failures++;
}

/* A few deterministic values in about [-2, 2). */
static float next_value(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

static void check_errors(void) {
  check(strcmp(uq_err_name(UQ_EINVAL), "UQ_EINVAL") == 0, "uq_err_name");
  check(strcmp(uq_strerror(UQ_ENOMEM), "out of memory") == 0, "uq_strerror");
  check(uq_strerror(12345) != NULL && uq_err_name(12345) != NULL,
        "unknown statuses have text");
  const char *want = getenv("UQ_EXPECT_VERSION");
  check(want == NULL || strcmp(uq_version_string(), want) == 0,
        "uq_version_string %s, expected %s", uq_version_string(),
        want ? want : "");
}

static void shape_of(uq_shape *s, int batch) {
  uq_shape_init(s);
  s->batch = batch;
  s->num_q_heads = HK * QG;
  s->num_kv_heads = HK;
  s->head_dim = D;
  s->block_size = BS;
  s->max_blocks_per_seq = MB;
  s->q_dtype = UQ_DTYPE_BF16;
}

static void check_plan(void) {
  uq_shape s;
  shape_of(&s, 2);
  uq_plan plan;
  int rc = uq_plan_make(&s, "gfx950", &plan);
  check(rc == 0, "uq_plan_make: %s: %s", uq_err_name(rc), uq_last_error());
  if (rc != 0)
    return;
  check(plan.eligible && plan.num_kernels >= 1, "plan not eligible: %s",
        plan.reason);
  if (!plan.eligible || plan.num_kernels < 1)
    return;
  char name[512];
  int len = uq_key_name(&plan.kernels[0], name, sizeof name);
  check(len > 0 && (size_t)len < sizeof name, "uq_key_name: %d", len);
  check(strncmp(name, "uq_decode_gfx950_bf16_", 22) == 0, "key name %s",
        name);
  uq_key back;
  check(uq_key_parse(name, &back) == 0 && uq_key_validate(&back) == 0,
        "key %s does not parse back", name);
  check(uq_plan_make(NULL, "gfx950", &plan) == UQ_EINVAL,
        "uq_plan_make(NULL) is not UQ_EINVAL");
}

/* Sequences of 1 and 2*BS - 3 tokens; all tokens of sequence b carry K
 * rows of their own and the V row vrow[b]. */
static void check_reference_decode(void) {
  enum { B = 2, T = 1 + 2 * BS - 3, HQ = HK * QG };
  static const int32_t lens[B] = {1, 2 * BS - 3};
  static const int32_t table[B * MB] = {3, 0, 1, 2}; /* shuffled blocks */
  static uint16_t k[T * HK * D], v[T * HK * D], q[B * HQ * D], out[B * HQ * D];
  static uint16_t vrow[B][D];
  static double out64[B * HQ * D];
  int64_t map[T];
  uint32_t st = 7;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < D; i++)
      vrow[b][i] = uq_float_to_bf16(next_value(&st));
  int t = 0;
  for (int b = 0; b < B; b++)
    for (int j = 0; j < lens[b]; j++, t++) {
      map[t] = (int64_t)table[b * MB + j / BS] * BS + j % BS;
      for (int i = 0; i < D; i++) {
        k[t * D + i] = uq_float_to_bf16(next_value(&st));
        v[t * D + i] = vrow[b][i];
      }
    }
  for (int i = 0; i < B * HQ * D; i++)
    q[i] = uq_float_to_bf16(next_value(&st));

  const int64_t num_blocks = 4;
  const size_t padded = (uq_slot_size(D) + 3) & ~(size_t)3;
  size_t cache_bytes = (size_t)num_blocks * BS * HK * padded;
  uint8_t *cache = calloc(cache_bytes, 1);
  check(cache != NULL, "out of memory");
  if (cache == NULL)
    return;
  uq_store_args sa;
  memset(&sa, 0, sizeof sa);
  sa.k = k;
  sa.v = v;
  sa.slot_mapping = map;
  sa.num_tokens = T;
  sa.kv_cache = cache;
  sa.num_blocks = num_blocks;
  sa.block_size = BS;
  sa.num_kv_heads = HK;
  sa.head_dim = D;
  sa.dtype = UQ_DTYPE_BF16;
  int rc = uq_reference_store(&sa);
  check(rc == 0, "uq_reference_store: %s: %s", uq_err_name(rc),
        uq_last_error());

  uq_shape s;
  shape_of(&s, B);
  uq_decode_args a;
  memset(&a, 0, sizeof a);
  a.query = q;
  a.kv_cache = cache;
  a.num_blocks = num_blocks;
  a.block_table = table;
  a.seq_lens = lens;
  a.out = out;
  rc = uq_reference_decode(&s, &a);
  check(rc == 0, "uq_reference_decode: %s: %s", uq_err_name(rc),
        uq_last_error());
  rc = uq_reference_decode_f64(&s, &a, out64);
  check(rc == 0, "uq_reference_decode_f64: %s: %s", uq_err_name(rc),
        uq_last_error());

  /* The V row as the cache holds it: decode the first token's slot. */
  float vq[B][D];
  for (int b = 0; b < B; b++) {
    const uint8_t *slot = cache + (size_t)table[b * MB] * BS * HK * padded;
    check(uq_decode_slot(D, slot, NULL, vq[b]) == 0, "uq_decode_slot");
  }
  double worst = 0;
  for (int b = 0; b < B; b++)
    for (int h = 0; h < HQ; h++)
      for (int i = 0; i < D; i++) {
        size_t o = ((size_t)b * HQ + h) * D + i;
        double e = fabs(out64[o] - vq[b][i]);
        double c = fabs((double)uq_bf16_to_float(out[o]) - vq[b][i]);
        worst = e > worst ? e : worst;
        check(e <= 1e-6 * (1 + fabs(vq[b][i])) &&
                  c <= 1e-2 * (1 + fabs(vq[b][i])),
              "seq %d head %d element %d: %g (f64 %g), want %g", b, h, i,
              (double)uq_bf16_to_float(out[o]), out64[o], (double)vq[b][i]);
      }
  printf("client: reference decode of %d sequences: worst error %.3g\n", B,
         worst);
  free(cache);
  check(uq_reference_decode(&s, NULL) == UQ_EINVAL,
        "uq_reference_decode(NULL args) is not UQ_EINVAL");
}

/* The tools' header declares what the library exports. */
static void check_tools(void) {
  const char *mfma = uq_isa_class_name(UQ_ISA_MFMA);
  check(mfma != NULL && strcmp(mfma, "mfma") == 0, "uq_isa_class_name: %s",
        mfma != NULL ? mfma : "NULL");
  check(uq_isa_class_name(UQ_ISA_CLASSES) == NULL,
        "uq_isa_class_name(UQ_ISA_CLASSES) is not NULL");
  uq_isa_mix mix;
  check(uq_code_isa_mix(NULL, &mix) == UQ_EINVAL,
        "uq_code_isa_mix(NULL text) is not UQ_EINVAL");
}

int main(void) {
  printf("client: uqjit %s\n", uq_version_string());
  check_errors();
  check_plan();
  check_reference_decode();
  check_tools();
  if (failures > 0) {
    fprintf(stderr, "client: %d check(s) failed\n", failures);
    return 1;
  }
  printf("client: all checks passed\n");
  return 0;
}
