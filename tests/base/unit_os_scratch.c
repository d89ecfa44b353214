/* Private scratch directories (lib/base/os.c): where they are made, the
 * lock that says their owner lives (also to processes of other PID
 * namespaces), the private fallback when the per-user parent is squatted,
 * and the sweep that removes what killed processes left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/os.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

extern char **environ;

#define OWNER_LOCK ".uqjit-owner"

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

/* A scratch directory as a compile leaves it: files and a subdirectory;
 * with `lock`, the owner's lock file (not held). */
static void make_scratch(const char *dir, int lock) {
  char p[PATH_MAX];
  assert_int_equal(mkdir(dir, 0700), 0);
  cu_fmt(p, "%s/uq_decode.hip", dir);
  assert_int_equal(cu_write_file(p, "x", 1, 0600), 0);
  cu_fmt(p, "%s/clang-scratch", dir);
  assert_int_equal(mkdir(p, 0700), 0);
  cu_fmt(p, "%s/clang-scratch/a-0f1e2d.o", dir);
  assert_int_equal(cu_write_file(p, "y", 1, 0600), 0);
  if (lock) {
    cu_fmt(p, "%s/" OWNER_LOCK, dir);
    assert_int_equal(cu_write_file(p, "", 0, 0600), 0);
  }
}

/* Holds the lock of a scratch directory as a live owner does: the fd. */
static int hold_lock(const char *dir) {
  char p[PATH_MAX];
  cu_fmt(p, "%s/" OWNER_LOCK, dir);
  int fd = open(p, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
  return fd;
}

/* 1 when another open file description can take the lock in dir. */
static int lock_is_free(const char *dir) {
  char p[PATH_MAX];
  cu_fmt(p, "%s/" OWNER_LOCK, dir);
  int fd = open(p, O_RDONLY);
  assert_true(fd >= 0);
  int got = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return got;
}

/* A whole file as a string; NULL when missing. */
static char *read_text(const char *path) {
  size_t len = 0;
  uint8_t *d = cu_read_file(path, &len);
  char *t = d != NULL ? realloc(d, len + 1) : NULL;
  if (t != NULL)
    t[len] = '\0';
  return t;
}

static void set_age(const char *path, time_t seconds) {
  struct timeval t[2] = {{time(NULL) - seconds, 0},
                         {time(NULL) - seconds, 0}};
  assert_int_equal(utimes(path, t), 0);
}

static void scratch_is_private_per_user_and_locked_while_it_lives(
    void **state) {
  (void)state;
  uq__os_scratch s;
  assert_int_equal(uq__os_scratch_make(&s), 0);
  char want[PATH_MAX];
  cu_fmt(want, "%s/%ld-", parent, (long)getpid());
  assert_memory_equal(s.path, want, strlen(want));
  assert_int_equal(strlen(s.path), strlen(want) + 6);
  struct stat st;
  assert_int_equal(stat(parent, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(stat(s.path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_false(lock_is_free(s.path)); /* held by its owner */
  char p[PATH_MAX]; /* nested content goes too */
  cu_fmt(p, "%s/sub", s.path);
  assert_int_equal(mkdir(p, 0700), 0);
  cu_fmt(p, "%s/sub/f", s.path);
  assert_int_equal(cu_write_file(p, "y", 1, 0600), 0);
  char path[PATH_MAX];
  cu_fmt(path, "%s", s.path);
  uq__os_scratch_remove(&s);
  assert_false(cu_exists(path));
  assert_int_equal(s.lock_fd, -1);
  uq__os_scratch_remove(&s); /* twice is harmless */
}

static void sweep_removes_what_no_owner_holds_and_keeps_the_rest(
    void **state) {
  (void)state;
  char unlocked[PATH_MAX], held[PATH_MAX], legacy_dead[PATH_MAX];
  char legacy_live[PATH_MAX], legacy_old[PATH_MAX], other[PATH_MAX];
  char link[PATH_MAX], target[PATH_MAX];
  long live = (long)getppid(), dead = (long)dead_pid();
  assert_int_equal(mkdir(parent, 0700), 0);
  /* The lock decides, whatever the pid says. */
  cu_fmt(unlocked, "%s/%ld-a1b2c3", parent, live);
  cu_fmt(held, "%s/%ld-d4e5f6", parent, dead);
  make_scratch(unlocked, 1);
  make_scratch(held, 1);
  int held_fd = hold_lock(held);
  set_age(held, 2 * 86400); /* a held lock outweighs age */
  /* Without the lock file (a uqjit before locks, or an owner about to
   * make it): the pid, or a day's age. */
  cu_fmt(legacy_dead, "%s/%ld-0a0b0c", parent, dead);
  cu_fmt(legacy_live, "%s/%ld-1a1b1c", parent, live);
  cu_fmt(legacy_old, "%s/%ld-2a2b2c", parent, live);
  make_scratch(legacy_dead, 0);
  make_scratch(legacy_live, 0);
  make_scratch(legacy_old, 0);
  set_age(legacy_old, 2 * 86400);
  /* Not ours to judge: another name, a link. */
  cu_fmt(other, "%s/not-a-scratch-dir", parent);
  make_scratch(other, 1);
  cu_fmt(target, "%s/target", tmp);
  make_scratch(target, 1);
  cu_fmt(link, "%s/%ld-5a5b5c", parent, dead);
  assert_int_equal(symlink(target, link), 0);
  uq__os_sweep_scratch();
  assert_false(cu_exists(unlocked));
  assert_true(cu_exists(held));
  assert_false(cu_exists(legacy_dead));
  assert_true(cu_exists(legacy_live));
  assert_false(cu_exists(legacy_old));
  assert_true(cu_exists(other));
  assert_true(cu_exists(link));
  assert_true(cu_exists(target));
  close(held_fd);
  uq__os_sweep_scratch();
  assert_false(cu_exists(held)); /* its owner is gone now */
}

/* Runs uq__os_scratch_make in a child with stderr (the warning) in
 * `errfile`; the child writes the path it got, or "ERR <detail>", to
 * `outfile`. */
static void make_in_child(const char *outfile, const char *errfile) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    unsetenv("UQJIT_QUIET");
    uq__os_scratch s;
    char text[PATH_MAX + 64];
    if (uq__os_scratch_make(&s) == 0)
      snprintf(text, sizeof text, "%s", s.path);
    else
      snprintf(text, sizeof text, "ERR %s", uq_last_error());
    cu_write_file(outfile, text, strlen(text), 0600);
    _exit(0); /* keeps the directory, for the parent to look at */
  }
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

/* Each way of squatting $TMPDIR/uqjit-<uid>: compiles still get a private
 * directory of their own, and the warning says why. */
static void squatted_parent_gives_a_private_fallback_directory(void **state) {
  (void)state;
  char out[PATH_MAX], err[PATH_MAX], elsewhere[PATH_MAX], want[PATH_MAX];
  cu_fmt(out, "%s/child.out", tmp);
  cu_fmt(err, "%s/child.err", tmp);
  cu_fmt(elsewhere, "%s/elsewhere", tmp);
  cu_mkdirs(elsewhere, 0777);
  assert_int_equal(chmod(elsewhere, 0777), 0);
  const char *squats[] = {"a symbolic link", "not a directory",
                          "writable by group or others (mode 0777)",
                          "owned by uid 65534"};
  for (int i = 0; i < 4; i++) {
    cu_rm_rf(parent);
    unlink(parent);
    if (i == 0)
      assert_int_equal(symlink(elsewhere, parent), 0);
    else if (i == 1)
      assert_int_equal(cu_write_file(parent, "x", 1, 0644), 0);
    else
      assert_int_equal(mkdir(parent, 0700), 0);
    if (i == 2)
      assert_int_equal(chmod(parent, 0777), 0);
    if (i == 3 && (geteuid() != 0 || chown(parent, 65534, 65534) != 0)) {
      print_message("not root: the foreign-owner case is skipped\n");
      continue;
    }
    make_in_child(out, err);
    char *path = read_text(out);
    char *warning = read_text(err);
    assert_non_null(path);
    assert_non_null(warning);
    cu_fmt(want, "%s/uqjit-%u-", tmp, (unsigned)geteuid());
    if (strncmp(path, want, strlen(want)) != 0)
      fail_msg("squat '%s': got %s", squats[i], path);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(st.st_mode & 0777, 0700);
    if (strstr(warning, parent) == NULL ||
        strstr(warning, squats[i]) == NULL ||
        strstr(warning, "private directories") == NULL)
      fail_msg("squat '%s': warning '%s'", squats[i], warning);
    cu_rm_rf(path);
    free(path);
    free(warning);
  }
  /* Nothing was made in the squatter's directory. */
  DIR *d = opendir(elsewhere);
  assert_non_null(d);
  int n = 0;
  while (readdir(d) != NULL)
    n++;
  closedir(d);
  assert_int_equal(n, 2);
}

static void sweep_removes_abandoned_fallback_directories(void **state) {
  (void)state;
  char dead[PATH_MAX], held[PATH_MAX], foreign_name[PATH_MAX];
  long gone = (long)dead_pid();
  cu_fmt(dead, "%s/uqjit-%u-%ld-a1b2c3", tmp, (unsigned)geteuid(), gone);
  cu_fmt(held, "%s/uqjit-%u-%ld-d4e5f6", tmp, (unsigned)geteuid(), gone);
  cu_fmt(foreign_name, "%s/uqjit-%u-%ld-a1b2c3", tmp,
         (unsigned)geteuid() + 1, gone);
  make_scratch(dead, 1);
  make_scratch(held, 1);
  make_scratch(foreign_name, 1);
  int fd = hold_lock(held);
  uq__os_sweep_scratch();
  assert_false(cu_exists(dead));
  assert_true(cu_exists(held));
  assert_true(cu_exists(foreign_name)); /* another uid's name */
  close(fd);
}

/* ---- another PID namespace ---- */

/* A pid free on this side, near the top of the pid range, that the
 * namespace's child can be given. */
static long free_pid(void) {
  long max = 32768;
  FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
  if (f != NULL) {
    if (fscanf(f, "%ld", &max) != 1)
      max = 32768;
    fclose(f);
  }
  for (long p = max - 100; p > max / 2; p--)
    if (kill((pid_t)p, 0) != 0 && errno == ESRCH)
      return p;
  return 0;
}

/* The helper, run as pid 1 of a new PID namespace: forks a child with pid
 * `want` there, which makes a scratch directory, prints its path and keeps
 * it (with its lock) until its standard input closes. */
static int hold_in_namespace(long want) {
  FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
  if (f == NULL || fprintf(f, "%ld", want - 1) < 0 || fclose(f) != 0) {
    printf("SKIP cannot set ns_last_pid: %s\n", strerror(errno));
    return 0;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    uq__os_scratch s = {"", -1};
    if ((long)getpid() != want)
      printf("SKIP got pid %ld, not %ld\n", (long)getpid(), want);
    else if (uq__os_scratch_make(&s) != 0)
      printf("ERR %s\n", uq_last_error());
    else
      printf("%s\n", s.path);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    uq__os_scratch_remove(&s);
    _exit(0);
  }
  int ws;
  waitpid(pid, &ws, 0);
  return 0;
}

static char self_exe[PATH_MAX];

static void sweep_keeps_scratch_of_a_live_process_in_another_pid_namespace(
    void **state) {
  (void)state;
  long want = free_pid();
  if (want == 0 || geteuid() != 0) {
    print_message("needs root (unshare --pid) and a free pid: skipped\n");
    skip();
  }
  char arg[32];
  snprintf(arg, sizeof arg, "%ld", want);
  int in[2], out[2];
  assert_int_equal(pipe(in), 0);
  assert_int_equal(pipe(out), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  char *argv[] = {"unshare", "--pid", "--fork", "--mount-proc", self_exe,
                  "--hold-in-namespace", arg, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "unshare", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    print_message("no unshare: %s: skipped\n", strerror(rc));
    skip();
  }
  char line[PATH_MAX + 64] = "";
  size_t n = 0;
  char c;
  while (n + 1 < sizeof line && read(out[0], &c, 1) == 1 && c != '\n')
    line[n++] = c;
  line[n] = '\0';
  int ready = line[0] == '/';
  char path[PATH_MAX];
  cu_fmt(path, "%s", ready ? line : "");
  int kept = 0;
  if (ready) {
    uq__os_sweep_scratch();
    kept = cu_exists(path);
  }
  close(in[1]); /* the helper removes its directory and exits */
  int ws;
  waitpid(pid, &ws, 0);
  close(out[0]);
  if (!ready) {
    print_message("namespace helper: '%s': skipped\n",
                  line[0] ? line : "unshare refused");
    if (strncmp(line, "ERR", 3) == 0)
      fail_msg("%s", line);
    skip();
  }
  char prefix[PATH_MAX];
  cu_fmt(prefix, "%s/%ld-", parent, want);
  assert_memory_equal(path, prefix, strlen(prefix));
  assert_int_equal(kill((pid_t)want, 0), -1); /* no such pid on this side */
  if (!kept)
    fail_msg("the sweep removed %s, a live compile's directory in another "
             "PID namespace", path);
  assert_false(cu_exists(path)); /* its owner removed it at the end */
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--hold-in-namespace") == 0)
    return hold_in_namespace(atol(argv[2]));
  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  self_exe[n > 0 ? n : 0] = '\0';
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T_(scratch_is_private_per_user_and_locked_while_it_lives),
      T_(sweep_removes_what_no_owner_holds_and_keeps_the_rest),
      T_(squatted_parent_gives_a_private_fallback_directory),
      T_(sweep_removes_abandoned_fallback_directories),
      T_(sweep_keeps_scratch_of_a_live_process_in_another_pid_namespace),
  };
#undef T_
  return cmocka_run_group_tests(tests, NULL, NULL);
}
