/* The cache's directories (part of test_cache, unit_cache.h): temporary
 * files swept or kept, puts into directories that refuse them, the trust
 * rule for directories writable by others, read-only layers searched after
 * the writable one, directories from the environment, and maintenance
 * (list, prune). */
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

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "tests/cache/unit_cache.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

/* ---- temporary files ---- */

void cache_sweeps_stale_temp_files_but_keeps_fresh_ones(void **state) {
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

void cache_put_fails_cleanly_on_unwritable_directory(void **state) {
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

void cache_put_fails_cleanly_when_directory_cannot_be_created(
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

void cache_put_fails_cleanly_when_disk_is_full(void **state) {
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

void cache_refuses_directories_writable_by_others(void **state) {
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

void cache_searches_readonly_layers_after_writable_and_never_writes_them(
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

void cache_directories_come_from_the_environment(void **state) {
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

void cache_list_reports_entries_and_validity(void **state) {
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

void cache_prune_keeps_most_recently_used(void **state) {
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
