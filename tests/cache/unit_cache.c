/* The on-disk code-object cache: digests, layout, verification of every
 * read and atomic publish; with unit_cache_dirs.c (its directories:
 * temporary files, failure modes, layers, maintenance) the program
 * test_cache. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "tests/cache/unit_cache.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  cu_fmt(f->w, "%s/w", f->root);
  *state = f;
  return 0;
}

int teardown(void **state) {
  fx *f = *state;
  cu_rm_rf(f->root);
  free(f);
  return 0;
}

uq__cache *open_w(const fx *f) {
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  assert_non_null(c);
  return c;
}

void put_ok(uq__cache *c, const char *target, const uq__digest *k,
                   const void *p, size_t n) {
  assert_int_equal(uq__cache_put(c, target, k, NULL, p, n), 0);
}

void expect_hit(uq__cache *c, const char *target, const uq__digest *k,
                       const void *want, size_t n) {
  void *got = NULL;
  size_t len = 0;
  assert_int_equal(uq__cache_get(c, target, k, &got, &len), 0);
  assert_int_equal(len, n);
  assert_memory_equal(got, want, n);
  uq__free(got);
}

void expect_miss(uq__cache *c, const char *target, const uq__digest *k) {
  void *got = (void *)1;
  size_t len = 1;
  assert_int_equal(uq__cache_get(c, target, k, &got, &len), UQ_ENOENT);
  assert_null(got);
  assert_int_equal(len, 0);
}

/* ---- digests ---- */

static void le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void cache_digest_is_xxh3_128_of_length_prefixed_fields(void **state) {
  (void)state;
  /* The encoding spelled out by hand: u32 version, then per field u64 label
   * length, label, u64 data length, data; canonical big-endian output. */
  uint8_t buf[256];
  size_t n = 0;
  le(buf, UQ__CACHE_FORMAT_VERSION, 4);
  n = 4;
  const char *labels[2] = {"source", "target"};
  const char *datas[2] = {"__global__ void k(){}", T};
  uq__cache_field fields[2];
  for (int i = 0; i < 2; i++) {
    size_t ll = strlen(labels[i]), dl = strlen(datas[i]);
    le(buf + n, ll, 8);
    n += 8;
    memcpy(buf + n, labels[i], ll);
    n += ll;
    le(buf + n, dl, 8);
    n += 8;
    memcpy(buf + n, datas[i], dl);
    n += dl;
    fields[i].label = labels[i];
    fields[i].data = datas[i];
    fields[i].len = dl;
  }
  XXH128_hash_t h = XXH3_128bits(buf, n);
  uint8_t want[16];
  for (int i = 0; i < 8; i++) {
    want[i] = (uint8_t)(h.high64 >> (56 - 8 * i));
    want[8 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
  }
  uq__digest d;
  uq__cache_digest(fields, 2, &d);
  assert_memory_equal(d.bytes, want, 16);
}

static void cache_digest_changes_when_any_field_changes(void **state) {
  (void)state;
  const char *base[4] = {"source text", T, "clang 22.0.0", "-O3 -mcumode"};
  const char *label[4] = {"source", "target", "compiler", "options"};
  uq__digest d[5];
  for (int variant = 0; variant < 5; variant++) {
    char copy[4][64];
    uq__cache_field f[4];
    for (int i = 0; i < 4; i++) {
      snprintf(copy[i], sizeof copy[i], "%s", base[i]);
      if (variant == i + 1)
        copy[i][0] ^= 1; /* one bit of one field */
      f[i] = (uq__cache_field){label[i], copy[i], strlen(copy[i])};
    }
    uq__cache_digest(f, 4, &d[variant]);
  }
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      assert_memory_not_equal(d[i].bytes, d[j].bytes, 16);
}

static void cache_digest_depends_on_field_boundaries(void **state) {
  (void)state;
  uq__digest a, b, c, e, g;
  uq__cache_field f1[2] = {{"x", "ab", 2}, {"y", "c", 1}};
  uq__cache_field f2[2] = {{"x", "a", 1}, {"y", "bc", 2}};
  uq__cache_field f3[1] = {{"xab", "", 0}};
  uq__cache_field f4[1] = {{"x", "ab", 2}};
  uq__cache_field f5[3] = {{"x", "ab", 2}, {"y", "c", 1}, {"", "", 0}};
  uq__cache_digest(f1, 2, &a);
  uq__cache_digest(f2, 2, &b);
  uq__cache_digest(f3, 1, &c);
  uq__cache_digest(f4, 1, &e);
  uq__cache_digest(f5, 3, &g);
  assert_memory_not_equal(a.bytes, b.bytes, 16);
  assert_memory_not_equal(c.bytes, e.bytes, 16);
  assert_memory_not_equal(a.bytes, g.bytes, 16);
  /* Same fields, same digest. */
  uq__digest a2;
  uq__cache_digest(f1, 2, &a2);
  assert_memory_equal(a.bytes, a2.bytes, 16);
}

static void cache_digest_hex_is_32_lowercase_chars(void **state) {
  (void)state;
  uq__digest d = {{0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe,
                   0xdc, 0xba, 0x98, 0x76, 0x54, 0x10}};
  char hex[33];
  memset(hex, 'Z', sizeof hex);
  uq__digest_hex(&d, hex);
  assert_string_equal(hex, "000123456789abcdeffedcba98765410");
}

/* ---- hits, misses, layout ---- */

static void cache_miss_then_put_then_hit_returns_identical_bytes(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  assert_string_equal(uq__cache_dir(c), f->w);
  uq__digest k;
  cu_key(1, &k);
  uint8_t *p = cu_payload(1, 5000);
  expect_miss(c, T, &k);
  put_ok(c, T, &k, p, 5000);
  expect_hit(c, T, &k, p, 5000);

  /* On disk where DESIGN.md says, header + payload, private directories. */
  char path[PATH_MAX];
  cu_entry_path(f->w, T, &k, path);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, H0 + 5000);
  assert_int_equal(stat(f->w, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  char v1[PATH_MAX];
  cu_fmt(v1, "%s/v2/" T_DIR, f->w);
  assert_int_equal(stat(v1, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(cu_count_temps(f->root), 0);

  /* Another cache object (another process) sees the same entry. */
  uq__cache *c2 = open_w(f);
  expect_hit(c2, T, &k, p, 5000);
  /* And another target does not. */
  expect_miss(c2, "gfx942", &k);
  uq__cache_close(c2);
  uq__cache_close(c);
  free(p);
}

static void cache_reads_entry_built_from_documented_layout(void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(2, &k);
  uint8_t *p = cu_payload(2, 777), *entry;
  size_t n = cu_build_entry(T, &k, p, 777, 777, &entry);
  char dir[PATH_MAX], path[PATH_MAX];
  cu_entry_dir(f->w, T, &k, dir);
  cu_entry_path(f->w, T, &k, path);
  cu_mkdirs(dir, 0700);
  assert_int_equal(cu_write_file(path, entry, n, 0600), 0);
  uq__cache *c = open_w(f);
  expect_hit(c, T, &k, p, 777);
  /* And what the library writes is byte for byte the documented layout. */
  uq__digest k2;
  cu_key(3, &k2);
  put_ok(c, T, &k2, p, 777);
  char path2[PATH_MAX];
  cu_entry_path(f->w, T, &k2, path2);
  uint8_t *want;
  size_t gn;
  uint8_t *got = cu_read_file(path2, &gn);
  assert_non_null(got);
  /* The creation time is the writer's clock: take it from the file. */
  int64_t created = 0;
  for (int i = 7; i >= 0; i--)
    created = (int64_t)((uint64_t)created << 8 | got[104 + i]);
  assert_true(created > 1600000000);
  static const char *const none[4] = {"", "", "", ""};
  size_t wn = cu_build_entry_of(T, &k2, none, created, p, 777, 777, &want);
  assert_int_equal(gn, wn);
  assert_memory_equal(got, want, wn);
  uq__cache_close(c);
  free(got);
  free(want);
  free(entry);
  free(p);
}

/* Puts an entry and returns its path. */
static void put_entry(const fx *f, uq__cache *c, int i, size_t n,
                      uq__digest *k, char path[PATH_MAX], uint8_t **p) {
  cu_key(i, k);
  *p = cu_payload((unsigned)i, n);
  put_ok(c, T, k, *p, n);
  cu_entry_path(f->w, T, k, path);
  assert_true(cu_exists(path));
}

static void expect_repaired(const fx *f, uq__cache *c, const uq__digest *k,
                            const char *path, const uint8_t *p, size_t n) {
  /* The bad file is gone, so the next put replaces it. */
  assert_false(cu_exists(path));
  put_ok(c, T, k, p, n);
  expect_hit(c, T, k, p, n);
  uint64_t good = 0, bad = 99;
  assert_int_equal(uq_cache_verify(f->w, &good, &bad), 0);
  assert_int_equal(bad, 0);
  assert_true(good >= 1);
}

static void cache_rejects_truncated_entry(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  static const long cuts[] = {H0 + 1999, 1000, H0 + 1, H0, H0 - 1, 50, 0};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    uq__digest k;
    char path[PATH_MAX];
    uint8_t *p;
    put_entry(f, c, 10, 2000, &k, path, &p);
    assert_int_equal(truncate(path, cuts[i]), 0);
    expect_miss(c, T, &k);
    expect_repaired(f, c, &k, path, p, 2000);
    free(p);
  }
  uq__cache_close(c);
}

static void cache_rejects_any_flipped_header_byte(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  for (long off = 0; off < H0; off++) {
    uq__digest k;
    char path[PATH_MAX];
    uint8_t *p;
    put_entry(f, c, 11, 300, &k, path, &p);
    cu_flip_byte(path, off);
    expect_miss(c, T, &k);
    expect_repaired(f, c, &k, path, p, 300);
    free(p);
  }
  uq__cache_close(c);
}

static void cache_rejects_flipped_payload_byte(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  static const long offs[] = {H0, H0 + 1234, H0 + 4095};
  for (size_t i = 0; i < 3; i++) {
    uq__digest k;
    char path[PATH_MAX];
    uint8_t *p;
    put_entry(f, c, 12, 4096, &k, path, &p);
    cu_flip_byte(path, offs[i]);
    expect_miss(c, T, &k);
    expect_repaired(f, c, &k, path, p, 4096);
    free(p);
  }
  uq__cache_close(c);
}

static void cache_rejects_entry_under_another_keys_name(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  uq__digest ka, kb;
  char pa[PATH_MAX], pb[PATH_MAX], db[PATH_MAX];
  uint8_t *p;
  put_entry(f, c, 20, 1000, &ka, pa, &p);
  cu_key(21, &kb);
  cu_entry_dir(f->w, T, &kb, db);
  cu_entry_path(f->w, T, &kb, pb);
  cu_mkdirs(db, 0700);
  size_t n;
  uint8_t *bytes = cu_read_file(pa, &n);
  assert_int_equal(cu_write_file(pb, bytes, n, 0600), 0);
  uint64_t good = 0, bad = 0;
  assert_int_equal(uq_cache_verify(f->w, &good, &bad), 0);
  assert_int_equal(good, 1);
  assert_int_equal(bad, 1);
  expect_miss(c, T, &kb);
  assert_false(cu_exists(pb));
  expect_hit(c, T, &ka, p, 1000);
  uint8_t *pbytes = cu_payload(21, 64);
  put_ok(c, T, &kb, pbytes, 64);
  expect_hit(c, T, &kb, pbytes, 64);
  assert_int_equal(uq_cache_verify(f->w, &good, &bad), 0);
  assert_int_equal(good, 2);
  assert_int_equal(bad, 0);
  uq__cache_close(c);
  free(pbytes);
  free(bytes);
  free(p);
}

static void cache_rejects_entry_of_another_target(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  uq__digest k;
  char pa[PATH_MAX], pb[PATH_MAX], db[PATH_MAX];
  uint8_t *p;
  put_entry(f, c, 22, 100, &k, pa, &p);
  /* Same key name, other target's directory. */
  cu_entry_dir(f->w, "gfx942", &k, db);
  cu_entry_path(f->w, "gfx942", &k, pb);
  cu_mkdirs(db, 0700);
  size_t n;
  uint8_t *bytes = cu_read_file(pa, &n);
  assert_int_equal(cu_write_file(pb, bytes, n, 0600), 0);
  expect_miss(c, "gfx942", &k);
  assert_false(cu_exists(pb));
  uq__cache_close(c);
  free(bytes);
  free(p);
}

static void cache_huge_claimed_payload_length_is_a_miss_without_allocating(
    void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(30, &k);
  uint8_t *p = cu_payload(30, 10), *entry;
  char dir[PATH_MAX], path[PATH_MAX];
  cu_entry_dir(f->w, T, &k, dir);
  cu_entry_path(f->w, T, &k, path);
  cu_mkdirs(dir, 0700);
  static const uint64_t claims[] = {(uint64_t)1 << 40, UQ__CACHE_MAX_PAYLOAD + 1,
                                    UINT64_MAX, 11};
  uq__cache *c = open_w(f);
  for (size_t i = 0; i < 4; i++) {
    size_t n = cu_build_entry(T, &k, p, 10, claims[i], &entry);
    assert_int_equal(cu_write_file(path, entry, n, 0600), 0);
    free(entry);
    /* Every allocation fails from here: a reader that trusted the header
     * would report UQ_ENOMEM instead of a miss. */
    uq__alloc_fail_after(0);
    void *got = NULL;
    size_t len = 0;
    int rc = uq__cache_get(c, T, &k, &got, &len);
    uq__alloc_fail_after(-1);
    assert_int_equal(rc, UQ_ENOENT);
    assert_null(got);
    assert_false(cu_exists(path));
  }
  uq__cache_close(c);
  free(p);
}

static void cache_rejects_unsafe_targets(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  uq__digest k;
  cu_key(31, &k);
  static const char *bad[] = {"", "../x", "a/b", ".hidden", "gfx..950",
                              "gfx 950", "a\\b",
                              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void *got = NULL;
    size_t len;
    assert_int_equal(uq__cache_put(c, bad[i], &k, NULL, "x", 1), UQ_EINVAL);
    assert_int_equal(uq__cache_get(c, bad[i], &k, &got, &len), UQ_EINVAL);
    assert_null(got);
  }
  assert_int_equal(cu_count_entries(f->root), 0);
  /* A 47-character target is still fine. */
  const char *longest = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  put_ok(c, longest, &k, "x", 1);
  expect_hit(c, longest, &k, "x", 1);
  uq__cache_close(c);
}


int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cache_digest_is_xxh3_128_of_length_prefixed_fields),
      cmocka_unit_test(cache_digest_changes_when_any_field_changes),
      cmocka_unit_test(cache_digest_depends_on_field_boundaries),
      cmocka_unit_test(cache_digest_hex_is_32_lowercase_chars),
#define FX(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
      FX(cache_miss_then_put_then_hit_returns_identical_bytes),
      FX(cache_reads_entry_built_from_documented_layout),
      FX(cache_rejects_truncated_entry),
      FX(cache_rejects_any_flipped_header_byte),
      FX(cache_rejects_flipped_payload_byte),
      FX(cache_rejects_entry_under_another_keys_name),
      FX(cache_rejects_entry_of_another_target),
      FX(cache_huge_claimed_payload_length_is_a_miss_without_allocating),
      FX(cache_rejects_unsafe_targets),
      FX(cache_sweeps_stale_temp_files_but_keeps_fresh_ones),
      FX(cache_put_fails_cleanly_on_unwritable_directory),
      FX(cache_put_fails_cleanly_when_directory_cannot_be_created),
      FX(cache_put_fails_cleanly_when_disk_is_full),
      FX(cache_refuses_directories_writable_by_others),
      FX(cache_searches_readonly_layers_after_writable_and_never_writes_them),
      FX(cache_directories_come_from_the_environment),
      FX(cache_list_reports_entries_and_validity),
      FX(cache_prune_keeps_most_recently_used),
#undef FX
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
