/* The cache's trust rule and its hostile cases (docs/RELIABILITY.md): one
 * rule for directories and entry files that the loader, verify, ls and
 * prune all apply; FIFOs and directories at entry paths; links in place of
 * the layout's directories; write failures injected through the writer's
 * seam; a read-only file system named as such. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "lib/cache/cache_impl.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

#define T "gfx942"
#define LEN 4000

typedef struct fx {
  char root[PATH_MAX];
  char w[PATH_MAX];     /* the writable cache */
  char entry[PATH_MAX]; /* the path of key k's entry in w */
  char hex[PATH_MAX];   /* its 2-hex directory */
  uq__digest k;
  uint8_t *p;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  cu_mkdtemp(f->root);
  cu_fmt(f->w, "%s/w", f->root);
  cu_key(7, &f->k);
  f->p = cu_payload(7, LEN);
  cu_entry_path(f->w, T, &f->k, f->entry);
  cu_entry_dir(f->w, T, &f->k, f->hex);
  /* A hang on a FIFO must fail the test, not stall the suite. */
  alarm(20);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  alarm(0);
  cu_rm_rf(f->root);
  free(f->p);
  free(f);
  return 0;
}

static uq__cache *open_w(const fx *f) {
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(f->w, "", &c), 0);
  return c;
}

static void put_entry(const fx *f) {
  uq__cache *c = open_w(f);
  assert_int_equal(uq__cache_put(c, T, &f->k, NULL, f->p, LEN), 0);
  uq__cache_close(c);
}

static int get_status(const fx *f) {
  uq__cache *c = open_w(f);
  void *got = NULL;
  size_t len = 0;
  int rc = uq__cache_get(c, T, &f->k, &got, &len);
  uq__free(got);
  uq__cache_close(c);
  return rc;
}

static void expect_verify(const fx *f, uint64_t good, uint64_t bad) {
  uint64_t g = 99, b = 99;
  assert_int_equal(uq_cache_verify(f->w, &g, &b), 0);
  assert_int_equal(g, good);
  assert_int_equal(b, bad);
}

static int count_cb(void *user, const uq_cache_entry *e) {
  int *n = user;
  n[e->valid ? 0 : 1]++;
  return 0;
}

/* ---- the rule itself ---- */

/* The rule's verdict: NULL (trusted) or its words. */
static void expect_why(const struct stat *st, int want_dir,
                       const char *want) {
  char why[UQ__CACHE_WHY_MAX];
  const char *got = uq__cache_distrust(st, want_dir, why);
  if (want == NULL && got != NULL)
    fail_msg("trusted expected, got '%s'", got);
  if (want != NULL && (got == NULL || strcmp(got, want) != 0))
    fail_msg("expected '%s', got '%s'", want, got ? got : "(trusted)");
}

static void distrust_refuses_group_write_links_and_non_regular_files(
    void **state) {
  (void)state;
  struct stat st;
  char want[UQ__CACHE_WHY_MAX];
  unsigned me = (unsigned)geteuid(), other = me == 12345 ? 12346 : 12345;
  memset(&st, 0, sizeof st);
  st.st_uid = geteuid();
  st.st_mode = S_IFREG | 0644;
  expect_why(&st, 0, NULL);
  st.st_mode = S_IFREG | 0664;
  expect_why(&st, 0, "a file writable by its group (mode 0664)");
  st.st_mode = S_IFREG | 0646;
  expect_why(&st, 0, "a file writable by others (mode 0646)");
  st.st_mode = S_IFREG | 0666;
  expect_why(&st, 0, "a file writable by group and others (mode 0666)");
  st.st_mode = S_IFIFO | 0600;
  expect_why(&st, 0, "a FIFO, not a regular file");
  st.st_mode = S_IFCHR | 0600;
  expect_why(&st, 0, "a character device, not a regular file");
  st.st_mode = S_IFLNK | 0777;
  expect_why(&st, 0, "a symbolic link");
  expect_why(&st, 1, "a symbolic link");
  st.st_mode = S_IFDIR | 0700;
  expect_why(&st, 0, "a directory, not a regular file");
  expect_why(&st, 1, NULL);
  st.st_mode = S_IFREG | 0600;
  expect_why(&st, 1, "a regular file, not a directory");
  st.st_mode = S_IFDIR | 0770;
  expect_why(&st, 1, "a directory writable by its group (mode 0770)");
  st.st_mode = S_IFDIR | 01777;
  expect_why(&st, 1, "a directory writable by group and others (mode 1777)");
  st.st_mode = S_IFDIR | 0700;
  st.st_uid = 0;
  expect_why(&st, 1, NULL); /* root's read-only layers */
  st.st_uid = other;
  snprintf(want, sizeof want,
           "a directory (mode 0700) owned by uid %u, not this user (uid %u) "
           "or root",
           other, me);
  expect_why(&st, 1, want);
  st.st_mode = S_IFREG | 0644;
  snprintf(want, sizeof want,
           "a file (mode 0644) owned by uid %u, not this user (uid %u) or "
           "root",
           other, me);
  expect_why(&st, 0, want);
}

/* ---- entry files ---- */

static void group_writable_entry_is_refused_by_loader_and_verify(
    void **state) {
  fx *f = *state;
  put_entry(f);
  assert_int_equal(chmod(f->entry, 0664), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  uint64_t removed = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
  assert_int_equal(removed, 1);
  put_entry(f);
  assert_int_equal(get_status(f), 0);
}

static void fifo_at_entry_path_is_bad_and_never_blocks(void **state) {
  fx *f = *state;
  cu_mkdirs(f->hex, 0700);
  assert_int_equal(mkfifo(f->entry, 0600), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  int n[2] = {0, 0};
  assert_int_equal(uq_cache_list(f->w, count_cb, n), 0);
  assert_int_equal(n[1], 1);
  uint64_t removed = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
  assert_int_equal(removed, 1);
  assert_false(cu_exists(f->entry));
}

static void directory_at_entry_path_is_bad_and_repaired(void **state) {
  fx *f = *state;
  char inner[PATH_MAX];
  cu_mkdirs(f->entry, 0700);
  cu_fmt(inner, "%s/x", f->entry);
  assert_int_equal(cu_write_file(inner, "x", 1, 0600), 0);
  expect_verify(f, 0, 1);
  uint64_t removed = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
  assert_int_equal(removed, 1);
  expect_verify(f, 0, 0);
  /* A writer replaces one too. */
  cu_mkdirs(f->entry, 0700);
  assert_int_equal(cu_write_file(inner, "x", 1, 0600), 0);
  put_entry(f);
  assert_int_equal(get_status(f), 0);
  expect_verify(f, 1, 0);
}

/* A directory tree `depth` levels deep at `path`, made level by level
 * with mkdirat (no path grows past PATH_MAX), with a file at every level
 * and, at the bottom, a link to `outside` and a FIFO. */
static void make_deep_tree(const char *path, int depth, const char *outside) {
  cu_mkdirs(path, 0700);
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  assert_true(fd >= 0);
  for (int i = 0; i < depth; i++) {
    int f = openat(fd, "f", O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(f >= 0);
    close(f);
    assert_int_equal(mkdirat(fd, "d", 0700), 0);
    int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
    assert_true(next >= 0);
    close(fd);
    fd = next;
  }
  assert_int_equal(symlinkat(outside, fd, "link"), 0);
  assert_int_equal(mkfifoat(fd, "fifo", 0600), 0);
  close(fd);
}

static void deep_tree_at_entry_path_is_removed_by_prune_and_by_a_writer(
    void **state) {
  fx *f = *state;
  char outside[PATH_MAX], kept[PATH_MAX];
  cu_fmt(outside, "%s/outside", f->root);
  cu_fmt(kept, "%s/outside/file", f->root);
  cu_mkdirs(outside, 0700);
  assert_int_equal(cu_write_file(kept, "x", 1, 0600), 0);
  const int depths[] = {4, 5, 40, 300};
  for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
    make_deep_tree(f->entry, depths[i], outside);
    expect_verify(f, 0, 1);
    uint64_t removed = 0;
    assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
    if (removed != 1 || cu_exists(f->entry))
      fail_msg("depth %d: removed %llu, entry path %s", depths[i],
               (unsigned long long)removed,
               cu_exists(f->entry) ? "still there" : "gone");
    expect_verify(f, 0, 0);
    /* A writer replaces one too, and the kernel is back. */
    make_deep_tree(f->entry, depths[i], outside);
    put_entry(f);
    assert_int_equal(get_status(f), 0);
    expect_verify(f, 1, 0);
    assert_int_equal(unlink(f->entry), 0);
  }
  assert_true(cu_exists(kept)); /* the links' target was never entered */
}

/* ---- directories ---- */

static void symlinked_hex_directory_is_bad_in_verify_and_removed(
    void **state) {
  fx *f = *state;
  char other[PATH_MAX], other_hex[PATH_MAX];
  cu_fmt(other, "%s/other", f->root);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(other, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, &f->k, NULL, f->p, LEN), 0);
  uq__cache_close(c);
  cu_entry_dir(other, T, &f->k, other_hex);
  put_entry(f);
  cu_rm_rf(f->hex);
  assert_int_equal(symlink(other_hex, f->hex), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  uint64_t removed = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
  assert_int_equal(removed, 1);
  expect_verify(f, 0, 0);
  assert_int_equal(cu_count_entries(other), 1); /* the link's target kept */
}

static void symlinked_version_and_target_directories_are_bad(void **state) {
  fx *f = *state;
  char other[PATH_MAX], v[PATH_MAX], t[PATH_MAX], ov[PATH_MAX];
  cu_fmt(other, "%s/other", f->root);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(other, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, &f->k, NULL, f->p, LEN), 0);
  uq__cache_close(c);
  cu_fmt(ov, "%s/v2", other);
  cu_fmt(v, "%s/v2", f->w);
  cu_mkdirs(f->w, 0700);
  assert_int_equal(symlink(ov, v), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  assert_int_equal(unlink(v), 0);
  cu_mkdirs(v, 0700);
  cu_fmt(t, "%s/" T, v);
  cu_fmt(ov, "%s/v2/" T, other);
  assert_int_equal(symlink(ov, t), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  /* A writer replaces the link with a directory of its own. */
  put_entry(f);
  struct stat st;
  assert_int_equal(lstat(t, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(get_status(f), 0);
  expect_verify(f, 1, 0);
}

static void world_writable_hex_directory_is_bad_and_repaired(void **state) {
  fx *f = *state;
  put_entry(f);
  assert_int_equal(chmod(f->hex, 0777), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  uint64_t removed = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
  struct stat st;
  assert_int_equal(stat(f->hex, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  expect_verify(f, 1, 0);
  /* A writer repairs it as well. */
  assert_int_equal(chmod(f->hex, 0770), 0);
  put_entry(f);
  assert_int_equal(stat(f->hex, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(get_status(f), 0);
}

static void foreign_owned_hex_directory_is_bad_and_removed(void **state) {
  fx *f = *state;
  put_entry(f);
  if (geteuid() != 0 || chown(f->hex, 65534, 65534) != 0)
    skip(); /* only root can give a directory away */
  assert_int_equal(get_status(f), UQ_ENOENT);
  expect_verify(f, 0, 1);
  uint64_t removed = 0;
  assert_int_equal(uq_cache_prune(f->w, UINT64_MAX, &removed, NULL), 0);
  assert_int_equal(removed, 1);
  assert_false(cu_exists(f->hex));
  expect_verify(f, 0, 0);
}

/* docs/RELIABILITY.md promises that a writer removes another user's
 * directory in its cache and makes it again; the loader names the rule. */
static void foreign_owned_hex_directory_is_replaced_by_a_writer(void **state) {
  fx *f = *state;
  put_entry(f);
  if (geteuid() != 0 || chown(f->hex, 65534, 65534) != 0)
    skip(); /* only root can give a directory away */
  assert_int_equal(chmod(f->hex, 0700), 0);
  uq__cache *c = open_w(f);
  uq__cache_found *found = calloc(1, sizeof *found);
  assert_int_equal(uq__cache_find(c, T, &f->k, NULL, NULL, NULL, found),
                   UQ_ENOENT);
  uq__cache_close(c);
  if (strstr(found->rejected, "owned by uid 65534, not this user (uid 0) "
                              "or root") == NULL ||
      strstr(found->rejected, "mode 0700") == NULL)
    fail_msg("rejected: %s", found->rejected);
  free(found);
  c = open_w(f);
  int rc = uq__cache_put(c, T, &f->k, NULL, f->p, LEN);
  if (rc != 0)
    fail_msg("put: %s: %s", uq_strerror(rc), uq_last_error());
  uq__cache_close(c);
  struct stat st;
  assert_int_equal(lstat(f->hex, &st), 0);
  assert_int_equal(st.st_uid, 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(get_status(f), 0);
  expect_verify(f, 1, 0);
}

/* ---- write failures ---- */

static int injected_errno;
static ssize_t failing_write(int fd, const void *buf, size_t n) {
  (void)fd;
  (void)buf;
  (void)n;
  errno = injected_errno;
  return -1;
}

static void injected_write_failures_are_returned_and_leave_no_file(
    void **state) {
  fx *f = *state;
  const int errs[] = {ENOSPC, EIO, EDQUOT};
  const int want[] = {UQ_ENOSPC, UQ_EIO, UQ_ENOSPC};
  uq__cache *c = open_w(f);
  for (int i = 0; i < 3; i++) {
    injected_errno = errs[i];
    uq__cache_write_fn = failing_write;
    int rc = uq__cache_put(c, T, &f->k, NULL, f->p, LEN);
    uq__cache_write_fn = write;
    assert_int_equal(rc, want[i]);
    assert_non_null(strstr(uq_last_error(), strerror(errs[i])));
  }
  uq__cache_close(c);
  assert_int_equal(cu_count_entries(f->w), 0);
  assert_int_equal(cu_count_temps(f->w), 0);
  assert_int_equal(get_status(f), UQ_ENOENT);
}

static void read_only_file_system_is_named_read_only(void **state) {
  fx *f = *state;
  char mnt[PATH_MAX], dir[PATH_MAX];
  cu_fmt(mnt, "%s/ro", f->root);
  cu_mkdirs(mnt, 0700);
  if (mount("tmpfs", mnt, "tmpfs", MS_RDONLY, "size=16k") != 0)
    skip(); /* no mount permission here */
  cu_fmt(dir, "%s/cache", mnt);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(dir, "", &c), 0);
  int rc = uq__cache_put(c, T, &f->k, NULL, f->p, LEN);
  const char *msg = uq_last_error();
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", msg);
  uq__cache_close(c);
  umount(mnt);
  assert_int_equal(rc, UQ_EIO);
  assert_non_null(strstr(copy, strerror(EROFS)));
}

/* ---- read-only layers ---- */

static void corrupt_entry_in_read_only_layer_is_reported_as_corrupt(
    void **state) {
  fx *f = *state;
  char layer[PATH_MAX], path[PATH_MAX];
  cu_fmt(layer, "%s/layer", f->root);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(layer, "", &c), 0);
  assert_int_equal(uq__cache_put(c, T, &f->k, NULL, f->p, LEN), 0);
  uq__cache_close(c);
  cu_entry_path(layer, T, &f->k, path);
  cu_flip_byte(path, UQ__CACHE_HEADER_SIZE + 100);
  assert_int_equal(uq__cache_open_layers(layer, &c), 0);
  uq__cache_found *found = calloc(1, sizeof *found);
  assert_int_equal(
      uq__cache_find(c, T, &f->k, NULL, NULL, NULL, found), UQ_ENOENT);
  assert_non_null(strstr(found->rejected, "corrupt"));
  assert_non_null(strstr(found->rejected, path));
  free(found);
  uq__cache_close(c);
  assert_int_equal(cu_exists(path), 1); /* read-only: never removed */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(distrust_refuses_group_write_links_and_non_regular_files),
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T_(group_writable_entry_is_refused_by_loader_and_verify),
      T_(fifo_at_entry_path_is_bad_and_never_blocks),
      T_(directory_at_entry_path_is_bad_and_repaired),
      T_(deep_tree_at_entry_path_is_removed_by_prune_and_by_a_writer),
      T_(symlinked_hex_directory_is_bad_in_verify_and_removed),
      T_(symlinked_version_and_target_directories_are_bad),
      T_(world_writable_hex_directory_is_bad_and_repaired),
      T_(foreign_owned_hex_directory_is_bad_and_removed),
      T_(foreign_owned_hex_directory_is_replaced_by_a_writer),
      T_(injected_write_failures_are_returned_and_leave_no_file),
      T_(read_only_file_system_is_named_read_only),
      T_(corrupt_entry_in_read_only_layer_is_reported_as_corrupt),
#undef T_
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
