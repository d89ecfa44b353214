/* The layer table decides, and nothing downstream disagrees: a walk over
 * the shape space (targets, requested layers, head dims 32 to 512, query
 * groups 1 to 20, dtypes, query layouts, block sizes) checks that a plan is
 * eligible exactly when a row the target has serves the shape, that it
 * names the best such row at or below the one asked for, and that every
 * key it names is one the key parser reads back and the generator accepts
 * (uq__key_check). "unit": that, plus one source per class of kernel
 * (target, layer, kind, head dim) generated for every route of its target.
 * "compile": each class's kernels of sm_90a (NVRTC) and gfx950 (offline
 * clang) compiled, the decode kernels at the smallest and largest query
 * group the class has, and a fixed sample of the other keys (every target,
 * NVRTC for sm_*, clang for gfx*); SKIP without either compiler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/codegen/emit.h"
#include "lib/codegen/key.h"
#include "lib/codegen/layers.h"
#include "lib/compile/compiler.h"
#include "uqjit.h"

static const char *const targets[] = {"sm_90a", "sm_90", "sm_100a", "sm_80",
                                      "gfx950", "gfx942", "gfx90a"};
#define NTARGETS (sizeof targets / sizeof *targets)
static const char *const requests[] = {NULL, "portable", "matrix",
                                       "warpgroup", "gfx950-emu"};
#define NREQUESTS (sizeof requests / sizeof *requests)
static const int dims[] = {32, 64, 96, 128, 160, 256, 512};
#define NDIMS (sizeof dims / sizeof *dims)
#define QG_MAX 20

/* One class of kernel: its key with the smallest and the largest query
 * group seen (decode), or the first key (other kinds). */
typedef struct kclass {
  char target[UQ_TARGET_MAX];
  int variant, kind, head_dim;
  uq_key lo, hi;
} kclass;

#define MAX_CLASSES 512
#define MAX_SAMPLE 32
static kclass classes[MAX_CLASSES];
static size_t nclasses;
static uq_key sample[MAX_SAMPLE];
static size_t nsample;
static size_t nkeys, nplans, neligible;

static void note_class(const uq_key *k) {
  for (size_t i = 0; i < nclasses; i++) {
    kclass *c = &classes[i];
    if (strcmp(c->target, k->target) != 0 || c->variant != k->variant ||
        c->kind != (int)k->kind || c->head_dim != k->head_dim)
      continue;
    if (k->query_group_size < c->lo.query_group_size)
      c->lo = *k;
    if (k->query_group_size > c->hi.query_group_size)
      c->hi = *k;
    return;
  }
  assert_true(nclasses < MAX_CLASSES);
  kclass *c = &classes[nclasses++];
  snprintf(c->target, sizeof c->target, "%s", k->target);
  c->variant = k->variant;
  c->kind = (int)k->kind;
  c->head_dim = k->head_dim;
  c->lo = c->hi = *k;
}

/* The best layer the target has for a shape vLLM's fast path takes. */
static int best_fast_variant(const char *target) {
  if (strcmp(target, "sm_90a") == 0)
    return UQ_VARIANT_WARPGROUP;
  if (strcmp(target, "sm_90") == 0 || strcmp(target, "sm_100a") == 0 ||
      strcmp(target, "gfx950") == 0 || strcmp(target, "gfx942") == 0)
    return UQ_VARIANT_MATRIX;
  return UQ_VARIANT_PORTABLE;
}

/* The keys of one eligible plan: the name reads back to the same key, the
 * generator accepts it, the layer it names serves it on its target. */
static void check_keys(const uq_plan *plan, const char *target, int req) {
  for (int i = 0; i < plan->num_kernels; i++) {
    const uq_key *k = &plan->kernels[i];
    char name[UQ__KEY_NAME_MAX];
    uq_key back;
    if (uq_key_name(k, name, sizeof name) <= 0 ||
        uq_key_parse(name, &back) != 0 ||
        memcmp(&back, k, sizeof back) != 0)
      fail_msg("%s: the plan's key does not read back: %s", target,
               uq_last_error());
    uq__checked_key ck;
    if (uq__key_check(k, &ck) != 0)
      fail_msg("%s: the generator refuses %s: %s", target, name,
               uq_last_error());
    const uq__layer_shape s = {k->head_dim, k->query_group_size,
                               (uq_dtype)k->dtype};
    assert_true(ck.layer->available(&ck.info));
    assert_true(uq__layer_serves(ck.layer, &s));
    if (req >= 0)
      assert_true(k->variant <= req);
    if (k->kind == UQ_KERNEL_DECODE)
      assert_int_equal(uq__gen_threads_of(&ck), plan->block_threads);
    note_class(k);
    /* A fixed sample: every 499th key. */
    if (nkeys++ % 499 == 0 && nsample < MAX_SAMPLE)
      sample[nsample++] = *k;
  }
}

/* One plan of the walk and what it must say. */
static void check_plan(const char *target, const char *request, int d,
                       int qg, int i) {
  static const int block_sizes[] = {16, 256, 48, 64};
  const int hk = 1 + i % 3;
  const int bs = block_sizes[i % 4];
  uq_shape s;
  uq_shape_init(&s);
  s.batch = i % 5 == 0 ? 37 : 1 + i % 4;
  s.num_q_heads = qg * hk;
  s.num_kv_heads = hk;
  s.head_dim = d;
  s.block_size = bs;
  s.max_blocks_per_seq = 1 + (i * 131) % 700;
  s.q_dtype = i % 2 ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16;
  if (i % 3 == 1) { /* head rows apart: a prologue */
    s.q_stride_head = d + 64;
    s.q_stride_seq = (int64_t)qg * hk * (d + 64);
  }
  uq_plan plan;
  if (uq_plan_make_variant(&s, target, request, &plan) != 0)
    fail_msg("%s d %d qg %d: %s", target, d, qg, uq_last_error());
  nplans++;
  int served = (d == 64 || d == 128 || d == 256) && qg >= 1 && qg <= 16;
  int bs_ok = bs != 48;
  if (plan.eligible != (served && bs_ok))
    fail_msg("%s d %d qg %d bs %d: eligible %d (%s)", target, d, qg, bs,
             plan.eligible, plan.reason);
  if (!plan.eligible)
    return;
  neligible++;
  int req = request ? uq__layer_variant_named(request) : UQ__LAYER_BEST;
  int fast = d == 256 && (qg == 6 || qg == 8 || qg == 16);
  int want = !fast ? UQ_VARIANT_PORTABLE : best_fast_variant(target);
  if (req >= 0 && fast) {
    /* the best at or below the request the target has */
    uq__target_info info;
    char canon[UQ_TARGET_MAX];
    assert_int_equal(uq__target_parse(target, canon, sizeof canon, &info), 0);
    const uq__layer_shape ls = {d, qg, s.q_dtype};
    want = uq__layer_choose(&info, &ls, req)->variant;
    assert_true(want <= req);
  }
  if (plan.kernels[0].variant != want)
    fail_msg("%s asking for %s, d %d qg %d: variant %d, want %d", target,
             request ? request : "-", d, qg, (int)plan.kernels[0].variant,
             want);
  check_keys(&plan, target, req);
}

static void walk(void) {
  int i = 0;
  for (size_t t = 0; t < NTARGETS; t++)
    for (size_t r = 0; r < NREQUESTS; r++)
      for (size_t d = 0; d < NDIMS; d++)
        for (int qg = 1; qg <= QG_MAX; qg++)
          for (int rep = 0; rep < 3; rep++, i++)
            check_plan(targets[t], requests[r], dims[d], qg, i);
  /* store kernels of every head dim a layer serves */
  for (size_t t = 0; t < NTARGETS; t++)
    for (int d = 64; d <= 256; d *= 2) {
      uq_key k;
      assert_int_equal(uq_store_key(d, 2, 0, UQ_DTYPE_BF16, targets[t], &k),
                       0);
      uq__checked_key ck;
      assert_int_equal(uq__key_check(&k, &ck), 0);
      note_class(&k);
    }
  printf("%zu plans, %zu eligible, %zu keys, %zu classes, %zu sampled\n",
         nplans, neligible, nkeys, nclasses, nsample);
}

/* unit: the walk, and a source of each class for every route of its
 * target. */
static void plans_name_only_kernels_the_generator_accepts(void **state) {
  (void)state;
  walk();
  for (size_t i = 0; i < nclasses; i++) {
    const int nvidia = strncmp(classes[i].target, "sm_", 3) == 0;
    const uq__route routes[] = {nvidia ? UQ__ROUTE_NVRTC : UQ__ROUTE_CLANG,
                                UQ__ROUTE_HIPRTC};
    for (int r = 0; r < (nvidia ? 1 : 2); r++) {
      const uq_key *ks[] = {&classes[i].lo, &classes[i].hi};
      for (int j = 0; j < 2; j++) {
        uq__buf src;
        uq__buf_init(&src);
        int rc = uq__gen_source(ks[j], routes[r], &src);
        if (rc != 0)
          fail_msg("%s: no source for route %d: %s", classes[i].target,
                   (int)routes[r], uq_last_error());
        uq__buf_free(&src);
      }
    }
  }
}

/* ---- compile ---------------------------------------------------------- */

typedef struct job {
  uq_key key;
  const uq__compiler *cc;
  int status;
  char log[512];
} job;

#define MAX_JOBS (2 * MAX_CLASSES + MAX_SAMPLE)
static job jobs[MAX_JOBS];
static size_t njobs, next_job;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const uq__compiler *nvrtc, *clang;

static void add_job(const uq_key *k) {
  const uq__compiler *cc = strncmp(k->target, "sm_", 3) == 0 ? nvrtc : clang;
  if (cc == NULL)
    return;
  for (size_t i = 0; i < njobs; i++)
    if (memcmp(&jobs[i].key, k, sizeof *k) == 0)
      return;
  assert_true(njobs < MAX_JOBS);
  jobs[njobs].key = *k;
  jobs[njobs++].cc = cc;
}

static void run_job(job *j) {
  uq__buf src;
  uq__buf_init(&src);
  char symbol[UQ__KEY_NAME_MAX];
  int rc = uq__gen_source(&j->key, uq__compiler_route(j->cc), &src);
  if (rc == 0 && uq__gen_symbol(&j->key, symbol, sizeof symbol) <= 0)
    rc = UQ_EINVAL;
  void *obj = NULL;
  size_t len = 0;
  if (rc == 0)
    rc = uq__compiler_compile(j->cc, j->key.target, src.data, src.len,
                              symbol, &obj, &len);
  j->status = rc;
  if (rc != 0)
    snprintf(j->log, sizeof j->log, "%s", uq_last_error());
  uq__free(obj);
  uq__buf_free(&src);
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    size_t i = next_job < njobs ? next_job++ : njobs;
    pthread_mutex_unlock(&lock);
    if (i == njobs)
      return NULL;
    run_job(&jobs[i]);
  }
}

/* LLVM inside NVRTC installs its own per-thread alternate signal stack;
 * AddressSanitizer would then try to unmap that one at thread exit and
 * abort. Its own alternate stack is not needed here. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "use_sigaltstack=0"; }

static void what_plans_name_compiles(void **state) {
  (void)state;
  walk();
  for (size_t i = 0; i < nclasses; i++)
    if (strcmp(classes[i].target, "sm_90a") == 0 ||
        strcmp(classes[i].target, "gfx950") == 0) {
      add_job(&classes[i].lo);
      add_job(&classes[i].hi);
    }
  for (size_t i = 0; i < nsample; i++)
    add_job(&sample[i]);
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  int failed = 0;
  for (size_t i = 0; i < njobs; i++) {
    if (jobs[i].status == 0)
      continue;
    char name[UQ__KEY_NAME_MAX];
    uq_key_name(&jobs[i].key, name, sizeof name);
    print_error("FAILED %s: %s: %s\n", name, uq_err_name(jobs[i].status),
                jobs[i].log);
    failed++;
  }
  printf("%zu kernels compiled (%s, %s)\n", njobs,
         nvrtc ? uq__compiler_identity(nvrtc) : "no NVRTC",
         clang ? uq__compiler_identity(clang) : "no clang");
  assert_int_equal(failed, 0);
}

int main(int argc, char **argv) {
  int compile = argc > 1 && strcmp(argv[1], "compile") == 0;
  if (compile) {
    if (uq__compiler_load_route(UQ__ROUTE_NVRTC, &nvrtc) != 0) {
      printf("no NVRTC: %s\n", uq_last_error());
      nvrtc = NULL;
    }
    if (uq__compiler_load_route(UQ__ROUTE_CLANG, &clang) != 0) {
      printf("no offline clang: %s\n", uq_last_error());
      clang = NULL;
    }
    if (nvrtc == NULL && clang == NULL)
      return 77;
  }
  const struct CMUnitTest unit[] = {
      cmocka_unit_test(plans_name_only_kernels_the_generator_accepts),
  };
  const struct CMUnitTest full[] = {
      cmocka_unit_test(what_plans_name_compiles),
  };
  return compile ? cmocka_run_group_tests(full, NULL, NULL)
                 : cmocka_run_group_tests(unit, NULL, NULL);
}
