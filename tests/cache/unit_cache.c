/* The on-disk code-object cache: digests, layout, verification of every
 * read, atomic publish, failure modes, layers, and maintenance. */
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

#include "lib/cache/cache.h"
#include "tests/support/internal/cache_util.h"
#include "lib/base/alloc.h"
#include "uqjit.h"

#define T "gfx950:sramecc+:xnack-"
#define T_DIR "gfx950.sramecc+.xnack-"
/* Header size of an entry put without provenance: the fixed part and four
 * empty metadata strings. */
#define H0 (UQ__CACHE_HEADER_SIZE + 4)

typedef struct fx {
  char root[PATH_MAX]; /* the test's temporary directory */
  char w[PATH_MAX];    /* root/w: the writable cache */
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  cu_fmt(f->w, "%s/w", f->root);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  cu_rm_rf(f->root);
  free(f);
  return 0;
}

static uq__cache *open_w(const fx *f) {
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  assert_non_null(c);
  return c;
}

static void put_ok(uq__cache *c, const char *target, const uq__digest *k,
                   const void *p, size_t n) {
  assert_int_equal(uq__cache_put(c, target, k, NULL, p, n), 0);
}

static void expect_hit(uq__cache *c, const char *target, const uq__digest *k,
                       const void *want, size_t n) {
  void *got = NULL;
  size_t len = 0;
  assert_int_equal(uq__cache_get(c, target, k, &got, &len), 0);
  assert_int_equal(len, n);
  assert_memory_equal(got, want, n);
  uq__free(got);
}

static void expect_miss(uq__cache *c, const char *target, const uq__digest *k) {
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

/* ---- temporary files ---- */

static void cache_sweeps_stale_temp_files_but_keeps_fresh_ones(void **state) {
  fx *f = *state;
  uq__digest k;
  cu_key(40, &k);
  char dir[PATH_MAX], old_tmp[PATH_MAX], fresh_tmp[PATH_MAX];
  cu_entry_dir(f->w, T, &k, dir);
  cu_mkdirs(dir, 0700);
  cu_fmt(old_tmp, "%s/.abc.co.tmp.OLD123", dir);
  cu_fmt(fresh_tmp, "%s/.abc.co.tmp.NEW123", dir);
  assert_int_equal(cu_write_file(old_tmp, "partial", 7, 0600), 0);
  assert_int_equal(cu_write_file(fresh_tmp, "partial", 7, 0600), 0);
  struct timespec ts[2];
  clock_gettime(CLOCK_REALTIME, &ts[0]);
  ts[0].tv_sec -= 2 * 3600;
  ts[1] = ts[0];
  assert_int_equal(utimensat(AT_FDCWD, old_tmp, ts, 0), 0);

  uq__cache *c = open_w(f);
  put_ok(c, T, &k, "payload", 7);
  assert_false(cu_exists(old_tmp));
  assert_true(cu_exists(fresh_tmp));
  uq__cache_close(c);

  /* prune takes temp files older than a minute, not younger ones. */
  uint64_t removed = 99, left = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, &left), 0);
  assert_int_equal(removed, 0);
  assert_true(cu_exists(fresh_tmp));
  assert_int_equal(left, H0 + 7);
  clock_gettime(CLOCK_REALTIME, &ts[0]);
  ts[0].tv_sec -= 120;
  ts[1] = ts[0];
  assert_int_equal(utimensat(AT_FDCWD, fresh_tmp, ts, 0), 0);
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, &left), 0);
  assert_int_equal(removed, 1);
  assert_false(cu_exists(fresh_tmp));
  assert_int_equal(cu_count_entries(f->w), 1);
}

/* ---- failing directories ---- */

static int put_status_is_a_clean_failure(int rc) {
  return rc == UQ_EIO || rc == UQ_EPERM || rc == UQ_ENOSPC;
}

static void cache_put_fails_cleanly_on_unwritable_directory(void **state) {
  fx *f = *state;
  char dir[PATH_MAX];
  if (geteuid() == 0) {
    /* Permission bits do not stop root; a directory of /proc does. */
    snprintf(dir, sizeof dir, "/proc/%ld", (long)getpid());
  } else {
    cu_fmt(dir, "%s", f->w);
    cu_mkdirs(dir, 0700);
    assert_int_equal(chmod(dir, 0500), 0);
  }
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(dir, "", &c), 0);
  uq__digest k;
  cu_key(50, &k);
  uint8_t *p = cu_payload(50, 50000);
  for (int i = 0; i < 3; i++) {
    int rc = uq__cache_put(c, T, &k, NULL, p, 50000);
    assert_true(put_status_is_a_clean_failure(rc));
    expect_miss(c, T, &k);
  }
  assert_int_equal(cu_count_temps(f->root), 0);
  assert_int_equal(cu_count_entries(f->root), 0);
  uq__cache_close(c);
  free(p);
}

static void cache_put_fails_cleanly_when_directory_cannot_be_created(
    void **state) {
  fx *f = *state;
  char file[PATH_MAX], dir[PATH_MAX];
  cu_fmt(file, "%s/plainfile", f->root);
  assert_int_equal(cu_write_file(file, "x", 1, 0600), 0);
  /* Under a regular file: no mkdir can succeed, not even as root. */
  cu_fmt(dir, "%s/sub/cache", file);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(dir, "", &c), 0);
  assert_null(uq__cache_dir(c));
  uq__digest k;
  cu_key(51, &k);
  assert_int_equal(uq__cache_put(c, T, &k, NULL, "abc", 3), UQ_EIO);
  expect_miss(c, T, &k);
  uq__cache_close(c);
}

static void cache_put_fails_cleanly_when_disk_is_full(void **state) {
  fx *f = *state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The child hits a 4 KiB file-size limit, the stand-in for a full disk. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    struct rlimit small = {4096, rl.rlim_max};
    uq__cache *c = NULL;
    if (uq__cache_open(f->w, "", &c) != 0)
      _exit(10);
    uq__digest k;
    cu_key(52, &k);
    uint8_t *p = cu_payload(52, 50000);
    if (setrlimit(RLIMIT_FSIZE, &small) != 0)
      _exit(11);
    int rc = uq__cache_put(c, T, &k, NULL, p, 50000);
    if (rc != UQ_ENOSPC)
      _exit(12);
    if (cu_count_temps(f->w) != 0)
      _exit(13);
    void *got = NULL;
    size_t len;
    if (uq__cache_get(c, T, &k, &got, &len) != UQ_ENOENT || got != NULL)
      _exit(14);
    /* A small entry still fits, and the big one once space is back. */
    uq__digest k2;
    cu_key(53, &k2);
    if (uq__cache_put(c, T, &k2, NULL, p, 100) != 0)
      _exit(15);
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
      _exit(16);
    if (uq__cache_put(c, T, &k, NULL, p, 50000) != 0)
      _exit(17);
    if (uq__cache_get(c, T, &k, &got, &len) != 0 || len != 50000 ||
        memcmp(got, p, len) != 0)
      _exit(18);
    uq__free(got);
    uq__cache_close(c);
    free(p);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(cu_count_temps(f->root), 0);
  uint64_t good = 0, bad = 1;
  assert_int_equal(uq_cache_verify(f->w, &good, &bad), 0);
  assert_int_equal(good, 2);
  assert_int_equal(bad, 0);
}

/* ---- layers and safety ---- */

/* Fills `dir` as a writable cache with one entry of key i. */
static void fill_layer(const char *dir, int i, const uint8_t *p, size_t n) {
  uq__cache *c = NULL;
  uq__digest k;
  cu_key(i, &k);
  assert_int_equal(uq__cache_open(dir, "", &c), 0);
  put_ok(c, T, &k, p, n);
  uq__cache_close(c);
}

static void cache_refuses_directories_writable_by_others(void **state) {
  fx *f = *state;
  char ro[PATH_MAX], hexdir[PATH_MAX], v1[PATH_MAX], path[PATH_MAX];
  cu_fmt(ro, "%s/ro", f->root);
  uint8_t *p = cu_payload(60, 999);
  fill_layer(ro, 60, p, 999);
  uq__digest k;
  cu_key(60, &k);
  cu_entry_dir(ro, T, &k, hexdir);
  cu_entry_path(ro, T, &k, path);
  cu_fmt(v1, "%s/v2", ro);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, ro, &c), 0);
  expect_hit(c, T, &k, p, 999);

  /* Each level on the way, and the entry file itself. */
  const char *levels[3] = {ro, v1, hexdir};
  const int modes[3] = {0757, 0777, 0770};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(chmod(levels[i], modes[i]), 0);
    expect_miss(c, T, &k);
    assert_int_equal(chmod(levels[i], 0700), 0);
    expect_hit(c, T, &k, p, 999);
  }
  assert_int_equal(chmod(path, 0646), 0);
  expect_miss(c, T, &k);
  assert_int_equal(chmod(path, 0644), 0);
  expect_hit(c, T, &k, p, 999);

  /* Owned by another user (root can arrange that). */
  if (geteuid() == 0) {
    assert_int_equal(chown(ro, 4242, 4242), 0);
    expect_miss(c, T, &k);
    assert_int_equal(chown(ro, 0, 0), 0);
    expect_hit(c, T, &k, p, 999);
  }
  assert_true(cu_exists(path)); /* refused, never removed */
  uq__cache_close(c);

  /* A writable directory open to others is neither read nor written. */
  fill_layer(f->w, 60, p, 999);
  assert_int_equal(chmod(f->w, 0777), 0);
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  assert_null(uq__cache_dir(c));
  expect_miss(c, T, &k);
  uq__digest k2;
  cu_key(61, &k2);
  assert_int_equal(uq__cache_put(c, T, &k2, NULL, p, 10), UQ_EPERM);
  assert_int_equal(cu_count_entries(f->w), 1);
  uq__cache_close(c);
  free(p);
}

static void cache_searches_readonly_layers_after_writable_and_never_writes_them(
    void **state) {
  fx *f = *state;
  char ro1[PATH_MAX], ro2[PATH_MAX], layers[2 * PATH_MAX + 8];
  cu_fmt(ro1, "%s/ro1", f->root);
  cu_fmt(ro2, "%s/ro2", f->root);
  cu_fmt(layers, "%s::%s", ro1, ro2);
  uint8_t *a = cu_payload(70, 100), *b = cu_payload(71, 200),
          *d = cu_payload(72, 300);
  fill_layer(ro1, 70, b, 200);
  fill_layer(ro2, 70, d, 300);
  fill_layer(ro2, 71, d, 300);
  uq__digest k70, k71, k72;
  cu_key(70, &k70);
  cu_key(71, &k71);
  cu_key(72, &k72);
  char p70[PATH_MAX];
  cu_entry_path(ro1, T, &k70, p70);
  struct timespec old[2];
  clock_gettime(CLOCK_REALTIME, &old[0]);
  old[0].tv_sec -= 1000;
  old[1] = old[0];
  assert_int_equal(utimensat(AT_FDCWD, p70, old, 0), 0);

  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, layers, &c), 0);
  expect_hit(c, T, &k70, b, 200);  /* first layer wins over the second */
  expect_hit(c, T, &k71, d, 300);  /* found in the second */
  put_ok(c, T, &k70, a, 100);
  expect_hit(c, T, &k70, a, 100);  /* the writable one is searched first */
  put_ok(c, T, &k72, a, 100);
  assert_int_equal(cu_count_entries(ro1), 1);
  assert_int_equal(cu_count_entries(ro2), 2);
  assert_int_equal(cu_count_entries(f->w), 2);
  /* Reads of a read-only layer leave its times alone. */
  struct stat st;
  assert_int_equal(stat(p70, &st), 0);
  assert_int_equal(st.st_mtime, old[0].tv_sec);

  /* A corrupt entry in a read-only layer is a miss there but stays. */
  char w70[PATH_MAX];
  cu_entry_path(f->w, T, &k70, w70);
  assert_int_equal(unlink(w70), 0);
  cu_flip_byte(p70, H0 + 5);
  expect_hit(c, T, &k70, d, 300); /* falls through to ro2 */
  assert_true(cu_exists(p70));
  uq__cache_close(c);
  free(a);
  free(b);
  free(d);
}

static void cache_directories_come_from_the_environment(void **state) {
  fx *f = *state;
  const char *names[4] = {"UQJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME",
                          "UQJIT_CACHE_PATH"};
  char *saved[4];
  for (int i = 0; i < 4; i++) {
    const char *v = getenv(names[i]);
    saved[i] = v != NULL ? strdup(v) : NULL;
    unsetenv(names[i]);
  }
  char a[PATH_MAX], x[PATH_MAX], h[PATH_MAX], want[PATH_MAX];
  cu_fmt(a, "%s/envdir", f->root);
  cu_fmt(x, "%s/xdg", f->root);
  cu_fmt(h, "%s/home", f->root);
  uq__cache *c = NULL;
  char *dd = NULL;

  setenv("HOME", h, 1);
  assert_int_equal(uq__cache_open(NULL, NULL, &c), 0);
  cu_fmt(want, "%s/.cache/uqjit", h);
  assert_string_equal(uq__cache_dir(c), want);
  struct stat st;
  assert_int_equal(stat(want, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  uq__cache_close(c);

  setenv("XDG_CACHE_HOME", x, 1);
  assert_int_equal(uq_cache_default_dir(&dd), 0);
  cu_fmt(want, "%s/uqjit", x);
  assert_string_equal(dd, want);
  uq_free(dd);

  setenv("UQJIT_CACHE_DIR", a, 1);
  assert_int_equal(uq_cache_default_dir(&dd), 0);
  assert_string_equal(dd, a);
  uq_free(dd);
  /* An explicit argument wins over all of them. */
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  assert_string_equal(uq__cache_dir(c), f->w);
  uq__cache_close(c);

  /* UQJIT_CACHE_PATH supplies read-only layers. */
  char ro[PATH_MAX];
  cu_fmt(ro, "%s/ro", f->root);
  uint8_t *p = cu_payload(80, 64);
  fill_layer(ro, 80, p, 64);
  setenv("UQJIT_CACHE_PATH", ro, 1);
  uq__digest k;
  cu_key(80, &k);
  assert_int_equal(uq__cache_open(NULL, NULL, &c), 0);
  assert_string_equal(uq__cache_dir(c), a);
  expect_hit(c, T, &k, p, 64);
  uq__cache_close(c);
  /* An explicit empty list means no layers. */
  assert_int_equal(uq__cache_open(NULL, "", &c), 0);
  expect_miss(c, T, &k);
  uq__cache_close(c);

  /* Nothing names a directory: still opens, with no writable layer. */
  unsetenv("UQJIT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  assert_int_equal(uq__cache_open(NULL, "", &c), 0);
  assert_null(uq__cache_dir(c));
  assert_int_equal(uq__cache_put(c, T, &k, NULL, p, 64), UQ_EIO);
  expect_miss(c, T, &k);
  uq__cache_close(c);
  assert_int_equal(uq_cache_default_dir(&dd), UQ_ENOENT);

  for (int i = 0; i < 4; i++) {
    if (saved[i] != NULL)
      setenv(names[i], saved[i], 1);
    else
      unsetenv(names[i]);
    free(saved[i]);
  }
  free(p);
}

/* ---- maintenance ---- */

typedef struct seen {
  int n, valid, invalid;
  uint64_t bytes;
  int stop_after;
  char targets[8][64];
} seen;

static int record(void *user, const uq_cache_entry *e) {
  seen *s = user;
  if (s->n < 8)
    snprintf(s->targets[s->n], sizeof s->targets[0], "%s", e->target);
  s->n++;
  s->bytes += e->size;
  if (e->valid)
    s->valid++;
  else
    s->invalid++;
  assert_true(cu_exists(e->path));
  assert_true(e->mtime > 0);
  return s->stop_after > 0 && s->n >= s->stop_after;
}

static void cache_list_reports_entries_and_validity(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  uint8_t *p = cu_payload(90, 1000);
  uq__digest k;
  for (int i = 0; i < 3; i++) {
    cu_key(90 + i, &k);
    put_ok(c, T, &k, p, 1000);
  }
  cu_key(93, &k);
  put_ok(c, "sm_90", &k, p, 10);
  char path[PATH_MAX];
  cu_key(91, &k);
  cu_entry_path(f->w, T, &k, path);
  cu_flip_byte(path, H0 + 999);
  seen s;
  memset(&s, 0, sizeof s);
  assert_int_equal(uq_cache_list(f->w, record, &s), 0);
  assert_int_equal(s.n, 4);
  assert_int_equal(s.valid, 3);
  assert_int_equal(s.invalid, 1);
  assert_int_equal(s.bytes, 3 * (H0 + 1000) + H0 + 10);
  int n_t = 0, n_sm = 0;
  for (int i = 0; i < 4; i++) {
    n_t += strcmp(s.targets[i], T) == 0;
    n_sm += strcmp(s.targets[i], "sm_90") == 0;
  }
  assert_int_equal(n_t, 3);
  assert_int_equal(n_sm, 1);
  /* The visitor can stop the walk. */
  memset(&s, 0, sizeof s);
  s.stop_after = 2;
  assert_int_equal(uq_cache_list(f->w, record, &s), 0);
  assert_int_equal(s.n, 2);
  uint64_t good, bad;
  assert_int_equal(uq_cache_verify(f->w, &good, &bad), 0);
  assert_int_equal(good, 3);
  assert_int_equal(bad, 1);
  assert_true(cu_exists(path)); /* verify keeps bad ones */
  /* A missing directory is reported, an empty one is an empty cache. */
  char missing[PATH_MAX];
  cu_fmt(missing, "%s/nope", f->root);
  assert_int_equal(uq_cache_verify(missing, &good, &bad), UQ_ENOENT);
  assert_int_equal(uq_cache_list(f->w, NULL, NULL), UQ_EINVAL);
  cu_mkdirs(missing, 0700);
  assert_int_equal(uq_cache_verify(missing, &good, &bad), 0);
  assert_int_equal(good + bad, 0);
  uq__cache_close(c);
  free(p);
}

static void cache_prune_keeps_most_recently_used(void **state) {
  fx *f = *state;
  uq__cache *c = open_w(f);
  uint8_t *p = cu_payload(100, 1000);
  uq__digest k[5];
  char path[5][PATH_MAX];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  for (int i = 0; i < 5; i++) {
    cu_key(100 + i, &k[i]);
    put_ok(c, T, &k[i], p, 1000);
    cu_entry_path(f->w, T, &k[i], path[i]);
    /* Entry i last used 1000 - 100 i seconds ago: 0 is the oldest. */
    struct timespec ts[2];
    ts[0].tv_sec = now.tv_sec - 1000 + 100 * i;
    ts[0].tv_nsec = 0;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, path[i], ts, 0), 0);
  }
  /* Using the oldest makes it the most recent. */
  expect_hit(c, T, &k[0], p, 1000);
  /* One bad entry goes first whatever its age. */
  cu_flip_byte(path[4], 40);
  uint64_t removed = 0, left = 0;
  assert_int_equal(uq_cache_prune(f->w, 2 * (H0 + 1000) + 500, &removed, &left),
                   0);
  /* Bad 4 removed, then 1 and 2 (oldest); 3 and 0 stay. */
  assert_int_equal(removed, 3);
  assert_int_equal(left, 2 * (H0 + 1000));
  assert_true(cu_exists(path[0]));
  assert_false(cu_exists(path[1]));
  assert_false(cu_exists(path[2]));
  assert_true(cu_exists(path[3]));
  assert_false(cu_exists(path[4]));
  expect_hit(c, T, &k[3], p, 1000);
  /* A limit above the total removes nothing; 0 empties the cache. */
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, &left), 0);
  assert_int_equal(removed, 0);
  assert_int_equal(left, 2 * (H0 + 1000));
  assert_int_equal(uq_cache_prune(f->w, 0, &removed, &left), 0);
  assert_int_equal(removed, 2);
  assert_int_equal(left, 0);
  assert_int_equal(cu_count_entries(f->w), 0);
  uq__cache_close(c);
  free(p);
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
