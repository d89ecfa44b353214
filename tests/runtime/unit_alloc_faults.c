/* Allocation failure at every allocation site of the CPU-side public
 * calls: each call runs with its 1st, 2nd, 3rd, ... allocation failing
 * (uq__alloc_fail_after) until it runs without reaching the injected
 * failure. Every failing run must return UQ_ENOMEM (or a status the call
 * documents for that case), never crash, and release everything it
 * allocated (allocations = frees through the allocator hook; the ASan
 * build's LeakSanitizer checks the rest). The code-object paths run from
 * a disk-cache entry with UQJIT_DISABLE_JIT=1 (no compiler needed); the
 * compile path is in compile.cache_faults and compile.alloc_faults_compile,
 * as is uq_info_libraries (it loads the GPU libraries, which the unit
 * suite never does: it runs under valgrind). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "lib/runtime/jit.h"
#include "lib/runtime/table.h"
#include "tests/runtime/alloc_inject.h"
#include "tests/support/internal/cache_util.h"
#include "tests/support/testkit.h"
#include "uqjit_tools.h"

#define T "gfx950"
#define STORE_KEY "uq_store_gfx950_bf16_d256_hk1_ps272"

typedef struct fx {
  char root[PATH_MAX];
  char dir[PATH_MAX]; /* a cache holding the store kernel's entry */
  uq_key key;
  synth_problem prob;
  void *out;
} fx;

static long total_faults;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  cu_fmt(f->dir, "%s/cache", f->root);
  assert_int_equal(uq_key_parse(STORE_KEY, &f->key), 0);
  char symbol[UQ__SYMBOL_MAX];
  uq__digest d;
  uq__checked_key ck;
  assert_int_equal(uq__key_check(&f->key, &ck), 0);
  assert_int_equal(uq__jit_kernel_digest(&ck, symbol, sizeof symbol, &d), 0);
  const uq__cache_meta m = {STORE_KEY, "clang 22.1.8", "-O3", "clang", 0};
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->dir, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, &d, &m, "object", 6), 0);
  uq__cache_close(c);
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 2;
  s.num_q_heads = 4;
  s.num_kv_heads = 1;
  s.head_dim = 64;
  s.block_size = 16;
  s.max_blocks_per_seq = 4;
  const int32_t lens[2] = {40, 7};
  assert_int_equal(synth_problem_make(&f->prob, &s, lens, NULL), 0);
  assert_int_equal(synth_problem_store(&f->prob), 0);
  f->out = calloc(f->prob.query_elems, 2);
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  unsetenv("UQJIT_DISABLE_JIT");
  synth_problem_free(&f->prob);
  free(f->out);
  cu_rm_rf(f->root);
  free(f);
  return 0;
}

static int call_key_parse(void *arg) {
  (void)arg;
  uq_key k;
  char name[256];
  int rc = uq_key_parse(STORE_KEY, &k);
  if (rc == 0 && uq_key_name(&k, name, sizeof name) <= 0)
    rc = UQ_EINVAL;
  return rc;
}

static int call_plan_make(void *arg) {
  fx *f = arg;
  uq_plan p;
  return uq_plan_make(&f->prob.shape, "sm_90a", &p);
}

static int call_kernel_source(void *arg) {
  fx *f = arg;
  char *src = NULL;
  size_t len = 0;
  int rc = uq_kernel_source(&f->key, &src, &len);
  uq_free(src);
  return rc;
}

static int open_ctx(fx *f, uq_context **ctx) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = T;
  o.cache_dir = f->dir;
  return uq_context_create(&o, ctx);
}

static int call_context_create(void *arg) {
  fx *f = arg;
  uq_context *ctx = NULL;
  int rc = open_ctx(f, &ctx);
  uq_context_destroy(ctx);
  return rc;
}

static int call_code_object_hit(void *arg) {
  fx *f = arg;
  uq_context *ctx = NULL;
  int rc = open_ctx(f, &ctx);
  if (rc != 0)
    return rc;
  void *obj = NULL;
  size_t len = 0;
  rc = uq_code_object(ctx, &f->key, &obj, &len, NULL);
  if (rc == 0 && (len != 6 || memcmp(obj, "object", 6) != 0))
    rc = UQ_EIO;
  uq_free(obj);
  uq_context_destroy(ctx);
  return rc;
}

static int call_compile_keys_hit(void *arg) {
  fx *f = arg;
  uq_context *ctx = NULL;
  int rc = open_ctx(f, &ctx);
  if (rc != 0)
    return rc;
  uq_compile_summary sum;
  rc = uq_compile_keys(ctx, &f->key, 1, 2, NULL, NULL, &sum);
  uq_context_destroy(ctx);
  return rc;
}

static int count_visit(void *user, const uq_cache_entry *e) {
  (void)e;
  ++*(int *)user;
  return 0;
}

static int call_cache_list(void *arg) {
  fx *f = arg;
  int n = 0;
  int rc = uq_cache_list(f->dir, count_visit, &n);
  return rc == 0 && n != 1 ? UQ_EIO : rc;
}

static int call_cache_verify(void *arg) {
  fx *f = arg;
  uint64_t good = 0, bad = 0;
  int rc = uq_cache_verify(f->dir, &good, &bad);
  return rc == 0 && (good != 1 || bad != 0) ? UQ_EIO : rc;
}

static int call_cache_prune(void *arg) {
  fx *f = arg;
  uint64_t removed = 0, left = 0;
  int rc = uq_cache_prune(f->dir, UINT64_MAX, &removed, &left);
  return rc == 0 && removed != 0 ? UQ_EIO : rc;
}

static int call_cache_find(void *arg) {
  fx *f = arg;
  int n = 0;
  int rc = uq_cache_find(f->dir, &f->key, count_visit, &n);
  return rc == 0 && n != 1 ? UQ_EIO : rc;
}

static int call_cache_default_dir(void *arg) {
  (void)arg;
  char *d = NULL;
  int rc = uq_cache_default_dir(&d);
  uq_free(d);
  return rc;
}

static int call_reference_store(void *arg) {
  fx *f = arg;
  uint8_t *cache = malloc(f->prob.cache_bytes);
  memset(cache, 0, f->prob.cache_bytes);
  uq_store_args a = synth_problem_store_args(&f->prob, NULL, NULL, NULL, cache);
  int rc = uq_reference_store(&a);
  if (rc == 0 && memcmp(cache, f->prob.cache, f->prob.cache_bytes) != 0)
    rc = UQ_EIO;
  free(cache);
  return rc;
}

static int call_reference_decode(void *arg) {
  fx *f = arg;
  uq_decode_args a = synth_problem_decode_args(&f->prob, f->out);
  return uq_reference_decode(&f->prob.shape, &a);
}

static int call_isa_mix(void *arg) {
  (void)arg;
  static const char text[] =
      "  s_load_dwordx2 s[0:1], s[4:5], 0x0 // 000000001000: C0060002\n"
      "  v_add_u32 v1, v2, v3 // 000000001008: 68020702\n"
      "  s_cbranch_scc1 65534 // 00000000100C: BF85FFFE\n"
      "  s_endpgm // 000000001010: BF810000\n";
  uq_isa_mix m;
  return uq_code_isa_mix(text, &m);
}

#define CASE(fn, also) {#fn + 5, fn, also}
static const struct {
  const char *name;
  int (*fn)(void *);
  int also; /* another documented status for an allocation failure */
} cases[] = {
    CASE(call_key_parse, 0),        CASE(call_plan_make, 0),
    CASE(call_kernel_source, 0),    CASE(call_context_create, 0),
    CASE(call_code_object_hit, 0),  CASE(call_compile_keys_hit, 0),
    CASE(call_cache_list, 0),       CASE(call_cache_verify, 0),
    CASE(call_cache_prune, 0),      CASE(call_cache_find, 0),
    CASE(call_cache_default_dir, 0), CASE(call_reference_store, 0),
    CASE(call_reference_decode, 0), CASE(call_isa_mix, 0),
};

static void every_allocation_failure_gives_enomem_and_leaks_nothing(
    void **state) {
  fx *f = *state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    total_faults +=
        ai_inject_each(cases[i].name, cases[i].fn, f, cases[i].also);
  print_message("%zu calls, %ld allocation faults injected\n",
                sizeof cases / sizeof cases[0], total_faults);
  assert_true(total_faults > 0);
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          every_allocation_failure_gives_enomem_and_leaks_nothing, setup,
          teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
