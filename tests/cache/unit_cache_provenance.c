/* Cache format v2: one entry per kernel and compiler, the provenance each
 * records, which one a reader takes, v1 directories ignored, and
 * uq_cache_find (a kernel's entry without any compiler). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "lib/runtime/jit.h"
#include "lib/runtime/table.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

#define T "gfx950"

typedef struct fx {
  char root[PATH_MAX];
  char w[PATH_MAX];  /* root/w: the writable cache */
  char ro[PATH_MAX]; /* root/ro: a read-only layer */
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  cu_fmt(f->w, "%s/w", f->root);
  cu_fmt(f->ro, "%s/ro", f->root);
  unsetenv("UQJIT_CACHE_PATH");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  cu_rm_rf(f->root);
  unsetenv("UQJIT_CACHE_PATH");
  free(f);
  return 0;
}

static const uq__cache_meta CLANG = {"uq_k", "clang 22.1.8", "-O3 --gfx950",
                                     "clang", 1000};
static const uq__cache_meta HIPRTC = {"uq_k", "hiprtc 6.4", "-O3", "hiprtc",
                                      2000};

static void put_meta(const char *dir, const uq__digest *k,
                     const uq__cache_meta *m, const char *payload) {
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(dir, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, k, m, payload, strlen(payload)), 0);
  uq__cache_close(c);
}

/* Looks k up with `prefer` (NULL: none); returns the payload's first byte
 * and the compiler the entry records. */
static char find_one(uq__cache *c, const uq__digest *k, const uq__cache_meta *prefer,
                     char compiler[UQ__CACHE_COMPILER_FIELD]) {
  uint64_t p = prefer != NULL
                   ? uq__cache_provenance(prefer->compiler, prefer->options)
                   : 0;
  void *got = NULL;
  size_t len = 0;
  uq__cache_found *found = malloc(sizeof *found);
  assert_int_equal(uq__cache_find(c, T, k, prefer != NULL ? &p : NULL, &got,
                                  &len, found),
                   0);
  assert_true(len > 0);
  char first = *(char *)got;
  strcpy(compiler, found->info.compiler);
  uq__free(got);
  free(found);
  return first;
}

static void cache_prefers_entry_of_own_compiler_else_takes_any_valid(
    void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(1, &k);
  put_meta(f->w, &k, &CLANG, "C-object");
  put_meta(f->w, &k, &HIPRTC, "H-object");
  /* Two files for one kernel, named by their compilers. */
  char pc[PATH_MAX], ph[PATH_MAX];
  cu_entry_path_of(f->w, T, &k, CLANG.compiler, CLANG.options, pc);
  cu_entry_path_of(f->w, T, &k, HIPRTC.compiler, HIPRTC.options, ph);
  assert_true(cu_exists(pc) && cu_exists(ph));
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  char comp[UQ__CACHE_COMPILER_FIELD];
  assert_int_equal(find_one(c, &k, &HIPRTC, comp), 'H');
  assert_string_equal(comp, "hiprtc 6.4");
  assert_int_equal(find_one(c, &k, &CLANG, comp), 'C');
  assert_string_equal(comp, "clang 22.1.8");
  /* A compiler with no entry of its own, and no compiler at all, take a
   * valid one: the same one each time (smallest name). */
  const uq__cache_meta other = {"uq_k", "nvrtc 13.0", "", "nvrtc", 0};
  char a = find_one(c, &k, &other, comp), b = find_one(c, &k, NULL, comp);
  assert_int_equal(a, b);
  assert_int_equal(a, strcmp(strrchr(pc, '/'), strrchr(ph, '/')) < 0 ? 'C' : 'H');
  /* The preferred one bad: another valid entry serves. */
  cu_flip_byte(ph, 160); /* in the payload */
  assert_int_equal(find_one(c, &k, &HIPRTC, comp), 'C');
  uq__cache_close(c);
}

static void cache_preferred_entry_in_layer_wins_over_other_in_writable_dir(
    void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(2, &k);
  put_meta(f->w, &k, &CLANG, "C");
  put_meta(f->ro, &k, &HIPRTC, "H");
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, f->ro, &c), 0);
  char comp[UQ__CACHE_COMPILER_FIELD];
  assert_int_equal(find_one(c, &k, &HIPRTC, comp), 'H');
  assert_int_equal(find_one(c, &k, &CLANG, comp), 'C');
  uq__cache_close(c);
}

typedef struct seen {
  int n;
  char key_name[64], compiler[64], options[64], route[16];
  int64_t created;
  int valid;
} seen;

static int remember(void *user, const uq_cache_entry *e) {
  seen *s = user;
  s->n++;
  snprintf(s->key_name, sizeof s->key_name, "%s", e->key_name);
  snprintf(s->compiler, sizeof s->compiler, "%s", e->compiler);
  snprintf(s->options, sizeof s->options, "%s", e->options);
  snprintf(s->route, sizeof s->route, "%s", e->route);
  s->created = e->created;
  s->valid = e->valid;
  return 0;
}

typedef struct legacy_seen {
  int n, version;
  char path[PATH_MAX];
} legacy_seen;

static int remember_legacy(void *user, const char *path, int version) {
  legacy_seen *l = user;
  l->n++;
  l->version = version;
  snprintf(l->path, sizeof l->path, "%s", path);
  return 0;
}

static void cache_entry_records_key_name_compiler_options_route_created(
    void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(3, &k);
  put_meta(f->w, &k, &CLANG, "payload");
  seen s;
  memset(&s, 0, sizeof s);
  assert_int_equal(uq_cache_list(f->w, remember, &s), 0);
  assert_int_equal(s.n, 1);
  assert_true(s.valid);
  assert_string_equal(s.key_name, "uq_k");
  assert_string_equal(s.compiler, "clang 22.1.8");
  assert_string_equal(s.options, "-O3 --gfx950");
  assert_string_equal(s.route, "clang");
  assert_int_equal(s.created, 1000);
  /* Byte for byte the documented layout. */
  char path[PATH_MAX];
  cu_entry_path_of(f->w, T, &k, CLANG.compiler, CLANG.options, path);
  const char *const meta[4] = {"uq_k", "clang 22.1.8", "-O3 --gfx950",
                               "clang"};
  uint8_t *want;
  size_t wn = cu_build_entry_of(T, &k, meta, 1000, "payload", 7, 7, &want), gn;
  uint8_t *got = cu_read_file(path, &gn);
  assert_non_null(got);
  assert_int_equal(gn, wn);
  assert_memory_equal(got, want, wn);
  free(got);
  free(want);
}

static void cache_entry_under_another_compilers_name_is_bad(void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(4, &k);
  put_meta(f->w, &k, &CLANG, "C");
  char pc[PATH_MAX], ph[PATH_MAX];
  cu_entry_path_of(f->w, T, &k, CLANG.compiler, CLANG.options, pc);
  cu_entry_path_of(f->w, T, &k, HIPRTC.compiler, HIPRTC.options, ph);
  assert_int_equal(rename(pc, ph), 0);
  uint64_t good = 9, bad = 9;
  assert_int_equal(uq_cache_verify(f->w, &good, &bad), 0);
  assert_int_equal(good, 0);
  assert_int_equal(bad, 1);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  void *got = NULL;
  size_t len = 0;
  assert_int_equal(uq__cache_get(c, T, &k, &got, &len), UQ_ENOENT);
  uq__cache_close(c);
}

static void cache_metadata_too_long_is_not_storable(void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(5, &k);
  char longid[UQ__CACHE_COMPILER_FIELD + 1];
  memset(longid, 'x', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  uq__cache_meta m = CLANG;
  m.compiler = longid;
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, &k, &m, "x", 1), UQ_EINVAL);
  uq__cache_close(c);
  assert_int_equal(cu_count_entries(f->root), 0);
}

static void cache_v1_directory_is_ignored(void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(6, &k);
  /* A file where format v1 kept this key's entry. */
  char dir[PATH_MAX], path[PATH_MAX], hex[33];
  uq__digest_hex(&k, hex);
  cu_fmt(dir, "%s/v1/%s/%.2s", f->w, T, hex);
  cu_mkdirs(dir, 0700);
  cu_fmt(path, "%s/%s.co", dir, hex + 2);
  assert_int_equal(cu_write_file(path, "old entry", 9, 0600), 0);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  void *got = NULL;
  size_t len = 0;
  assert_int_equal(uq__cache_get(c, T, &k, &got, &len), UQ_ENOENT);
  uq__cache_close(c);
  seen s;
  memset(&s, 0, sizeof s);
  assert_int_equal(uq_cache_list(f->w, remember, &s), 0);
  assert_int_equal(s.n, 0);
  assert_true(cu_exists(path)); /* ignored, not removed */
  /* The cache API names the v1 directory, and only that one. */
  legacy_seen l;
  memset(&l, 0, sizeof l);
  assert_int_equal(uq_cache_legacy_dirs(f->w, remember_legacy, &l), 0);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.version, 1);
  cu_fmt(dir, "%s/v1", f->w);
  assert_string_equal(l.path, dir);
  assert_true(cu_exists(path));
  assert_int_equal(uq_cache_legacy_dirs(f->w, NULL, NULL), UQ_EINVAL);
}

static void cache_legacy_dirs_none_without_older_format(void **state) {
  fx *f = *state;
  legacy_seen l;
  memset(&l, 0, sizeof l);
  assert_int_equal(uq_cache_legacy_dirs(f->w, remember_legacy, &l), 0);
  assert_int_equal(l.n, 0);
  /* A v1 file (not a directory) is not a directory of the old format. */
  char path[PATH_MAX];
  cu_fmt(path, "%s/v1", f->w);
  cu_mkdirs(f->w, 0700);
  assert_int_equal(cu_write_file(path, "x", 1, 0600), 0);
  assert_int_equal(uq_cache_legacy_dirs(f->w, remember_legacy, &l), 0);
  assert_int_equal(l.n, 0);
}

/* A real kernel's key and the digest the JIT files it under. */
static void store_key(uq_key *key, uq__digest *d) {
  assert_int_equal(uq_key_parse("uq_store_gfx950_bf16_d256_hk1_ps272", key), 0);
  char symbol[UQ__SYMBOL_MAX];
  uq__checked_key ck;
  assert_int_equal(uq__key_check(key, &ck), 0);
  assert_int_equal(uq__jit_kernel_digest(&ck, symbol, sizeof symbol, d), 0);
}

static void cache_find_public_finds_kernel_in_dir_or_layer_writing_nothing(
    void **state) {
  fx *f = *state;
  uq_key key;
  uq__digest d;
  store_key(&key, &d);
  const uq__cache_meta m = {"uq_store_gfx950_bf16_d256_hk1_ps272",
                            "clang 22.1.8", "-O3", "clang", 0};
  seen s;
  memset(&s, 0, sizeof s);
  /* Nothing yet: a miss, and nothing created. */
  assert_int_equal(uq_cache_find(f->w, &key, remember, &s), UQ_ENOENT);
  assert_int_equal(s.n, 0);
  assert_false(cu_exists(f->w));
  put_meta(f->ro, &d, &m, "object");
  assert_int_equal(uq_cache_find(f->ro, &key, remember, &s), 0);
  assert_int_equal(s.n, 1);
  assert_true(s.valid);
  assert_string_equal(s.key_name, m.key_name);
  assert_string_equal(s.compiler, "clang 22.1.8");
  /* Through UQJIT_CACHE_PATH with an empty writable directory. */
  cu_mkdirs(f->w, 0700);
  assert_int_equal(uq_cache_find(f->w, &key, NULL, NULL), UQ_ENOENT);
  setenv("UQJIT_CACHE_PATH", f->ro, 1);
  assert_int_equal(uq_cache_find(f->w, &key, remember, &s), 0);
  assert_int_equal(s.n, 2);
  char v2[PATH_MAX];
  cu_fmt(v2, "%s/v2", f->w);
  assert_false(cu_exists(v2));
  /* Another kernel is not found; an invalid key is refused. */
  uq_key other = key;
  other.num_kv_heads = 2;
  assert_int_equal(uq_cache_find(f->w, &other, NULL, NULL), UQ_ENOENT);
  other.head_dim = 0;
  assert_int_equal(uq_cache_find(f->w, &other, NULL, NULL), UQ_EINVAL);
  assert_int_equal(uq_cache_find(f->w, NULL, NULL, NULL), UQ_EINVAL);
}

static void kernel_digest_names_what_the_kernel_is(void **state) {
  (void)state;
  uq_key a, b;
  uq__digest da, db;
  store_key(&a, &da);
  store_key(&b, &db);
  assert_memory_equal(da.bytes, db.bytes, 16);
  /* The compiler choice for AMD does not change it. */
  setenv("UQJIT_AMD_COMPILER", "hiprtc", 1);
  store_key(&b, &db);
  unsetenv("UQJIT_AMD_COMPILER");
  assert_memory_equal(da.bytes, db.bytes, 16);
  b.num_kv_heads = 2;
  char symbol[UQ__SYMBOL_MAX];
  uq__checked_key ck;
  assert_int_equal(uq__key_check(&b, &ck), 0);
  assert_int_equal(uq__jit_kernel_digest(&ck, symbol, sizeof symbol, &db), 0);
  assert_memory_not_equal(da.bytes, db.bytes, 16);
}

#define FX(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
  setenv("UQJIT_QUIET", "1", 1);
  const struct CMUnitTest tests[] = {
      FX(cache_prefers_entry_of_own_compiler_else_takes_any_valid),
      FX(cache_preferred_entry_in_layer_wins_over_other_in_writable_dir),
      FX(cache_entry_records_key_name_compiler_options_route_created),
      FX(cache_entry_under_another_compilers_name_is_bad),
      FX(cache_metadata_too_long_is_not_storable),
      FX(cache_v1_directory_is_ignored),
      FX(cache_legacy_dirs_none_without_older_format),
      FX(cache_find_public_finds_kernel_in_dir_or_layer_writing_nothing),
      FX(kernel_digest_names_what_the_kernel_is),
  };
  return cmocka_run_group_tests_name("cache_provenance", tests, NULL, NULL);
}
