/* The decode layer of a context is fixed when it is created: from
 * uq_context_options.variant, else from UQJIT_VARIANT as it is then. The
 * plans uq_decode launches (uq_context_plan) read no environment: changing
 * or unsetting UQJIT_VARIANT afterwards changes nothing, and no getenv of
 * it happens (this program counts them). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "uqjit.h"

/* Reads of UQJIT_VARIANT, by anyone in this process. */
static int variant_reads;

char *getenv(const char *name) {
  static char *(*real)(const char *);
  if (real == NULL)
    real = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
  if (strcmp(name, "UQJIT_VARIANT") == 0)
    variant_reads++;
  return real(name);
}

static uq_context *make(const char *variant) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "sm_90a";
  o.use_disk_cache = 0;
  o.variant = variant;
  uq_context *ctx = NULL;
  assert_int_equal(uq_context_create(&o, &ctx), 0);
  return ctx;
}

static int planned_variant(const uq_context *ctx) {
  uq_shape s;
  uq_shape_init(&s);
  s.batch = 4;
  s.num_q_heads = 16;
  s.num_kv_heads = 2;
  s.head_dim = 256;
  s.block_size = 32;
  s.max_blocks_per_seq = 64;
  uq_plan plan;
  assert_int_equal(uq_context_plan(ctx, &s, &plan), 0);
  assert_true(plan.eligible);
  return (int)plan.kernels[0].variant;
}

static void context_layer_is_fixed_at_creation(void **state) {
  (void)state;
  setenv("UQJIT_VARIANT", "portable", 1);
  variant_reads = 0;
  uq_context *from_env = make(NULL);
  assert_int_equal(variant_reads, 1); /* the count sees the one read */
  uq_context *named = make("matrix");
  uq_context *best = make("auto");
  unsetenv("UQJIT_VARIANT");
  uq_context *unset = make(NULL);

  static const char *const later[] = {"warpgroup", "gfx950-emu", "bogus",
                                      NULL};
  for (int i = 0; i < 4; i++) {
    if (later[i] != NULL)
      setenv("UQJIT_VARIANT", later[i], 1);
    else
      unsetenv("UQJIT_VARIANT");
    variant_reads = 0;
    for (int rep = 0; rep < 3; rep++) {
      assert_int_equal(planned_variant(from_env), UQ_VARIANT_PORTABLE);
      assert_int_equal(planned_variant(named), UQ_VARIANT_MATRIX);
      assert_int_equal(planned_variant(best), UQ_VARIANT_WARPGROUP);
      assert_int_equal(planned_variant(unset), UQ_VARIANT_WARPGROUP);
    }
    assert_int_equal(variant_reads, 0);
  }
  uq_context_destroy(from_env);
  uq_context_destroy(named);
  uq_context_destroy(best);
  uq_context_destroy(unset);
  unsetenv("UQJIT_VARIANT");
}

/* A name the caller spelled is checked (an error); the environment's is
 * warned about and ignored, as every variable is. */
static void context_refuses_an_unknown_layer_name(void **state) {
  (void)state;
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = "sm_90a";
  o.use_disk_cache = 0;
  o.variant = "Portable";
  uq_context *ctx = (uq_context *)&o; /* must be cleared */
  assert_int_equal(uq_context_create(&o, &ctx), UQ_EINVAL);
  assert_null(ctx);
  assert_non_null(strstr(uq_last_error(), "unknown variant 'Portable'"));
  setenv("UQJIT_VARIANT", "Portable", 1);
  ctx = make(NULL);
  assert_int_equal(planned_variant(ctx), UQ_VARIANT_WARPGROUP);
  uq_context_destroy(ctx);
  unsetenv("UQJIT_VARIANT");
  assert_int_equal(uq_context_plan(NULL, NULL, NULL), UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(context_layer_is_fixed_at_creation),
      cmocka_unit_test(context_refuses_an_unknown_layer_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
