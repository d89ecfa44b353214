/* The per-kernel lock of the writable cache (lib/cache/lock.c): exclusion
 * between threads and processes, the bounded wait, recovery from a holder
 * killed with SIGKILL, removal and sweeping of lock files, and cache walkers
 * that do not mistake a lock file for an entry. */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/cache/cache.h"
#include "lib/cache/lock.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

#define T "gfx942:sramecc+:xnack-"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Lock files ('.*.lock') in the entry directory of key i. */
static int count_lock_files(const char *root, int i) {
  char dir[PATH_MAX];
  uq__digest k;
  cu_key(i, &k);
  cu_entry_dir(root, T, &k, dir);
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += uq__cache_is_lock_name(e->d_name);
  closedir(d);
  return n;
}

static void cache_lock_excludes_a_second_holder_until_released(void **state) {
  const char *root = *state;
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(root, "", &c), 0);
  uq__digest k, other;
  cu_key(0, &k);
  cu_key(1, &other);
  uq__cache_flight *a = NULL, *b = NULL;
  assert_int_equal(uq__cache_lock(c, T, &k, 0, &a), 0);
  assert_non_null(a);
  assert_int_equal(count_lock_files(root, 0), 1);
  double t0 = now_s();
  assert_int_equal(uq__cache_lock(c, T, &k, 200, &b), UQ_EIO);
  double waited = now_s() - t0;
  assert_null(b);
  assert_true(waited >= 0.19 && waited < 5.0); /* bounded, and it did wait */
  /* Another kernel's lock is independent. */
  assert_int_equal(uq__cache_lock(c, T, &other, 0, &b), 0);
  uq__cache_unlock(b);
  uq__cache_unlock(a);
  assert_int_equal(count_lock_files(root, 0), 0);
  assert_int_equal(uq__cache_lock(c, T, &k, 0, &b), 0);
  uq__cache_unlock(b);
  uq__cache_close(c);
}

static void cache_lock_of_a_holder_killed_by_sigkill_is_taken_at_once(
    void **state) {
  const char *root = *state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    uq__cache *c = NULL;
    uq__digest k;
    cu_key(0, &k);
    uq__cache_flight *l = NULL;
    if (uq__cache_open(root, "", &c) != 0 ||
        uq__cache_lock(c, T, &k, 0, &l) != 0)
      _exit(1);
    (void)!write(fds[1], "x", 1);
    for (;;)
      pause();
  }
  char ch;
  assert_int_equal(read(fds[0], &ch, 1), 1);
  close(fds[0]);
  close(fds[1]);
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(root, "", &c), 0);
  uq__digest k;
  cu_key(0, &k);
  uq__cache_flight *l = NULL;
  assert_int_equal(uq__cache_lock(c, T, &k, 0, &l), UQ_EIO); /* held */
  kill(pid, SIGKILL);
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_int_equal(count_lock_files(root, 0), 1); /* left by the dead one */
  assert_int_equal(uq__cache_lock(c, T, &k, 0, &l), 0);
  uq__cache_unlock(l);
  assert_int_equal(count_lock_files(root, 0), 0);
  uq__cache_close(c);
}

static void cache_lock_sweeps_old_unheld_lock_files_and_keeps_held_ones(
    void **state) {
  const char *root = *state;
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(root, "", &c), 0);
  uq__digest k;
  cu_key(0, &k);
  uq__cache_flight *held = NULL, *l = NULL;
  assert_int_equal(uq__cache_lock(c, T, &k, 0, &held), 0);
  /* An abandoned lock file of another kernel in the same directory, and
   * the held one, both made an hour old. */
  char dir[PATH_MAX], dead[PATH_MAX], mine[PATH_MAX], hex[33];
  cu_entry_dir(root, T, &k, dir);
  uq__digest_hex(&k, hex);
  cu_fmt(dead, "%s/.%.2s0000000000000000000000000000.lock", dir, hex);
  cu_fmt(mine, "%s/.%.30s.lock", dir, hex + 2);
  assert_int_equal(cu_write_file(dead, "", 0, 0600), 0);
  struct timeval old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
  assert_int_equal(utimes(dead, old), 0);
  assert_int_equal(utimes(mine, old), 0);
  /* Taking any lock in that directory sweeps it. */
  uq__digest other;
  int j = 1;
  char odir[PATH_MAX];
  for (;; j++) {
    cu_key(j, &other);
    cu_entry_dir(root, T, &other, odir);
    if (strcmp(odir, dir) == 0)
      break;
  }
  assert_int_equal(uq__cache_lock(c, T, &other, 0, &l), 0);
  assert_false(cu_exists(dead));
  assert_true(cu_exists(mine));
  uq__cache_unlock(l);
  uq__cache_unlock(held);
  uq__cache_close(c);
}

/* Threads that each hold the lock while checking that nobody else is
 * inside: flock locks belong to open files, so threads exclude too. */
typedef struct shared {
  const char *root;
  pthread_mutex_t mu;
  int inside, max_inside, entered;
} shared;

static void *locker(void *arg) {
  shared *s = arg;
  uq__cache *c = NULL;
  if (uq__cache_open(s->root, "", &c) != 0)
    return NULL;
  uq__digest k;
  cu_key(0, &k);
  for (int i = 0; i < 20; i++) {
    uq__cache_flight *l = NULL;
    if (uq__cache_lock(c, T, &k, 10000, &l) != 0)
      continue;
    pthread_mutex_lock(&s->mu);
    s->inside++;
    s->entered++;
    if (s->inside > s->max_inside)
      s->max_inside = s->inside;
    pthread_mutex_unlock(&s->mu);
    usleep(500);
    pthread_mutex_lock(&s->mu);
    s->inside--;
    pthread_mutex_unlock(&s->mu);
    uq__cache_unlock(l);
  }
  uq__cache_close(c);
  return NULL;
}

static void cache_lock_admits_one_thread_at_a_time(void **state) {
  shared s = {.root = *state, .mu = PTHREAD_MUTEX_INITIALIZER};
  pthread_t th[8];
  for (int i = 0; i < 8; i++)
    assert_int_equal(pthread_create(&th[i], NULL, locker, &s), 0);
  for (int i = 0; i < 8; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(s.entered, 8 * 20);
  assert_int_equal(s.max_inside, 1);
  assert_int_equal(count_lock_files(s.root, 0), 0);
}

static void cache_verify_and_prune_ignore_lock_files(void **state) {
  const char *root = *state;
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(root, "", &c), 0);
  uq__digest k;
  cu_key(0, &k);
  uint8_t *p = cu_payload(0, 100);
  assert_int_equal(uq__cache_put(c, T, &k, NULL, p, 100), 0);
  free(p);
  uq__cache_flight *l = NULL;
  assert_int_equal(uq__cache_lock(c, T, &k, 0, &l), 0);
  uint64_t good = 0, bad = 0, removed = 0, left = 0;
  assert_int_equal(uq_cache_verify(root, &good, &bad), 0);
  assert_int_equal(good, 1);
  assert_int_equal(bad, 0);
  assert_int_equal(uq_cache_prune(root, UINT64_MAX, &removed, &left), 0);
  assert_int_equal(removed, 0);
  assert_int_equal(count_lock_files(root, 0), 1);
  uq__cache_unlock(l);
  uq__cache_close(c);
}


int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          cache_lock_excludes_a_second_holder_until_released, cu_setup_tmpdir,
          cu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(
          cache_lock_of_a_holder_killed_by_sigkill_is_taken_at_once, cu_setup_tmpdir,
          cu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(
          cache_lock_sweeps_old_unheld_lock_files_and_keeps_held_ones, cu_setup_tmpdir,
          cu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(cache_lock_admits_one_thread_at_a_time,
                                      cu_setup_tmpdir, cu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(cache_verify_and_prune_ignore_lock_files,
                                      cu_setup_tmpdir, cu_teardown_tmpdir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
