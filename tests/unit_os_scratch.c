/* Private scratch directories (lib/base/os.c): where they are made, and the
 * sweep that removes what killed processes left. */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
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

#include "lib/base/os.h"
#include "tests/cache_util.h"
#include "uqjit.h"

static char tmp[PATH_MAX], parent[PATH_MAX];

static int setup(void **state) {
  (void)state;
  cu_mkdtemp(tmp);
  setenv("TMPDIR", tmp, 1);
  cu_fmt(parent, "%s/uqjit-%u", tmp, (unsigned)geteuid());
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unsetenv("TMPDIR");
  cu_rm_rf(tmp);
  return 0;
}

/* A pid that was alive a moment ago and is now gone. */
static pid_t dead_pid(void) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  int ws;
  waitpid(pid, &ws, 0);
  return pid;
}

/* A scratch directory as a compile leaves it: files and a subdirectory. */
static void make_scratch(const char *dir) {
  char p[PATH_MAX];
  assert_int_equal(mkdir(dir, 0700), 0);
  cu_fmt(p, "%s/uq_decode.hip", dir);
  assert_int_equal(cu_write_file(p, "x", 1, 0600), 0);
  cu_fmt(p, "%s/clang-scratch", dir);
  assert_int_equal(mkdir(p, 0700), 0);
  cu_fmt(p, "%s/clang-scratch/a-0f1e2d.o", dir);
  assert_int_equal(cu_write_file(p, "y", 1, 0600), 0);
}

static void os_mkdtemp_makes_a_private_directory_under_tmpdir_per_user(
    void **state) {
  (void)state;
  char dir[PATH_MAX];
  assert_int_equal(uq__os_mkdtemp(dir, sizeof dir), 0);
  char want[PATH_MAX];
  cu_fmt(want, "%s/%ld-", parent, (long)getpid());
  assert_memory_equal(dir, want, strlen(want));
  struct stat st;
  assert_int_equal(stat(parent, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(stat(dir, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  char p[PATH_MAX]; /* nested content goes too */
  cu_fmt(p, "%s/sub", dir);
  assert_int_equal(mkdir(p, 0700), 0);
  cu_fmt(p, "%s/sub/f", dir);
  assert_int_equal(cu_write_file(p, "y", 1, 0600), 0);
  uq__os_rmtree(dir);
  assert_false(cu_exists(dir));
}

static void os_sweep_removes_scratch_of_dead_and_old_processes_only(
    void **state) {
  (void)state;
  char dead[PATH_MAX], live[PATH_MAX], old[PATH_MAX], other[PATH_MAX];
  assert_int_equal(mkdir(parent, 0700), 0);
  cu_fmt(dead, "%s/%ld-a1b2c3", parent, (long)dead_pid());
  cu_fmt(live, "%s/%ld-d4e5f6", parent, (long)getppid());
  cu_fmt(old, "%s/%ld-0a0b0c", parent, (long)getppid());
  cu_fmt(other, "%s/not-a-scratch-dir", parent);
  make_scratch(dead);
  make_scratch(live);
  make_scratch(old);
  make_scratch(other);
  struct timeval two_days[2] = {{time(NULL) - 2 * 86400, 0},
                                {time(NULL) - 2 * 86400, 0}};
  assert_int_equal(utimes(old, two_days), 0);
  uq__os_sweep_scratch();
  assert_false(cu_exists(dead));
  assert_true(cu_exists(live));
  assert_false(cu_exists(old));
  assert_true(cu_exists(other));
}

static void os_mkdtemp_refuses_a_parent_others_can_write(void **state) {
  (void)state;
  assert_int_equal(mkdir(parent, 0700), 0);
  assert_int_equal(chmod(parent, 0777), 0);
  char dir[PATH_MAX];
  assert_int_equal(uq__os_mkdtemp(dir, sizeof dir), UQ_EIO);
  assert_non_null(strstr(uq_last_error(), parent));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          os_mkdtemp_makes_a_private_directory_under_tmpdir_per_user, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          os_sweep_removes_scratch_of_dead_and_old_processes_only, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          os_mkdtemp_refuses_a_parent_others_can_write, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
