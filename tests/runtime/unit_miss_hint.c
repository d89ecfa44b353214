/* A miss with UQJIT_DISABLE_JIT names the nearest cached kernel of the
 * same kind and architecture and the key fields that differ: a deployment
 * warmed for one --max-model-len and served with another. The layer holds
 * entries written through the cache's own writer under the digests the
 * runtime computes (their payloads are never loaded: every lookup here
 * misses), so no compiler is needed. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/cache/cache.h"
#include "lib/runtime/jit.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit_tools.h"

/* The decode key of B 4, Hq, Hk, D 256, block 64 and `blocks` blocks per
 * sequence for `target`. */
static uq_key decode_key(const char *target, int hq, int hk, int blocks) {
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = hq;
  s.num_kv_heads = hk;
  s.head_dim = 256;
  s.block_size = 64;
  s.max_blocks_per_seq = blocks;
  uq_plan p;
  assert_int_equal(uq_plan_make(&s, target, &p), 0);
  assert_true(p.eligible);
  return p.kernels[0];
}

/* An entry of `key` in `dir`, named as the runtime names it. */
static void put_entry(const char *dir, const uq_key *key) {
  char symbol[256], name[512];
  uq__digest d;
  uq__checked_key ck;
  assert_int_equal(uq__key_check(key, &ck), 0);
  assert_int_equal(uq__jit_kernel_digest(&ck, symbol, sizeof symbol, &d), 0);
  assert_true(uq_key_name(key, name, sizeof name) > 0);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(dir, "", &c), 0);
  uq__cache_meta meta = {name, "test", "", "clang", 0};
  static const char payload[] = "not a code object";
  assert_int_equal(uq__cache_put(c, key->target, &d, &meta, payload,
                                 sizeof payload),
                   0);
  uq__cache_close(c);
}

/* The UQ_ENOJIT detail of a lookup of `key` with `layer` as the only
 * read-only layer (static buffer). */
static const char *miss_detail(const char *layer, const char *empty,
                               const uq_key *key) {
  static char detail[16384];
  setenv("UQJIT_CACHE_PATH", layer, 1);
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = key->target;
  o.cache_dir = empty;
  uq_context *ctx = NULL;
  assert_int_equal(uq_context_create(&o, &ctx), 0);
  void *obj = NULL;
  size_t len = 0;
  assert_int_equal(uq_code_object(ctx, key, &obj, &len, NULL), UQ_ENOJIT);
  snprintf(detail, sizeof detail, "%s", uq_last_error());
  uq_context_destroy(ctx);
  unsetenv("UQJIT_CACHE_PATH");
  return detail;
}

static void miss_names_nearest_kernel_and_fields_that_differ(void **state) {
  const char *root = *state;
  char layer[PATH_MAX], empty[PATH_MAX];
  cu_fmt(layer, "%s/layer", root);
  cu_fmt(empty, "%s/empty", root);
  cu_mkdirs(layer, 0700);
  cu_mkdirs(empty, 0700);
  /* Warmed: max-model-len 131072 (2048 blocks of 64); also a shape with
   * other heads, a reduce kernel and another architecture, none nearer. */
  uq_key warmed = decode_key("gfx950", 16, 2, 2048);
  put_entry(layer, &warmed);
  uq_key other_heads = decode_key("gfx950", 64, 8, 512);
  put_entry(layer, &other_heads);
  uq_key other_arch = decode_key("gfx942", 16, 2, 512);
  put_entry(layer, &other_arch);

  /* Served with max-model-len 32768 (512 blocks) on an MI355X. */
  uq_key asked = decode_key("gfx950:sramecc+:xnack-", 16, 2, 512);
  const char *d = miss_detail(layer, empty, &asked);
  char name[512];
  uq_key_name(&warmed, name, sizeof name);
  const char *near = strstr(d, name);
  if (near == NULL)
    fail_msg("the nearest kernel %s is not named: %s", name, d);
  const char *have = strstr(d, "was warmed for ");
  const char *need = strstr(d, ", this call needs ");
  assert_non_null(have);
  assert_non_null(need);
  assert_true(have < need);
  const char *mb_have = strstr(have, "max_blocks_per_seq 2048");
  const char *mb_need = strstr(need, "max_blocks_per_seq 512");
  if (mb_have == NULL || mb_have > need || mb_need == NULL)
    fail_msg("max_blocks_per_seq not named on both sides: %s", d);
  /* The heads did not change, and the bare gfx950 entry is one an MI355X
   * loads: neither is named as a difference. */
  assert_null(strstr(have, "num_kv_heads"));
  assert_null(strstr(have, "target"));
  char layer_named[PATH_MAX + 8];
  cu_fmt(layer_named, "(in %s)", layer);
  assert_non_null(strstr(d, layer_named));
}

static void miss_with_nothing_of_its_kind_cached_has_no_hint(void **state) {
  const char *root = *state;
  char layer[PATH_MAX], empty[PATH_MAX];
  cu_fmt(layer, "%s/layer", root);
  cu_fmt(empty, "%s/empty", root);
  cu_mkdirs(layer, 0700);
  cu_mkdirs(empty, 0700);
  uq_key other_arch = decode_key("gfx942", 16, 2, 512);
  put_entry(layer, &other_arch);
  uq_key asked = decode_key("gfx950", 16, 2, 512);
  const char *d = miss_detail(layer, empty, &asked);
  assert_non_null(strstr(d, "is not in the cache"));
  assert_null(strstr(d, "nearest"));
}

int main(void) {
  setenv("UQJIT_QUIET", "1", 1);
  setenv("UQJIT_DISABLE_JIT", "1", 1);
  unsetenv("UQJIT_CACHE_PATH");
  unsetenv("UQJIT_VARIANT");
  setenv("UQJIT_CLANG", "/nonexistent/clang-22", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          miss_names_nearest_kernel_and_fields_that_differ, cu_setup_tmpdir,
          cu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(
          miss_with_nothing_of_its_kind_cached_has_no_hint, cu_setup_tmpdir,
          cu_teardown_tmpdir),
  };
  return cmocka_run_group_tests_name("miss_hint", tests, NULL, NULL);
}
