/* The uqjit command as a hostile user or a careless operator drives it
 * (docs/RELIABILITY.md): manifests written through planted links, over
 * devices and by concurrent writers; manifest input with NUL bytes,
 * without an end, with duplicates; `cache verify` naming the exact rule an
 * entry or directory broke; damaged entry paths of any depth. argv[1] is
 * the uqjit binary, argv[2] the group: "unit" (no compiler) or "compile"
 * (clang-22: warm through damage a writer must repair). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/cache/cache.h"
#include "tests/support/internal/cache_util.h"
#include "tests/support/cli_run.h"

extern char **environ;

static const char *uqjit;

/* W = 64 x 64 tokens, B = 4: a shape every target plans (cli_tools.h). */
#define SHAPE_SMALL                                                         \
  "--batch", "4", "--q-heads", "16", "--kv-heads", "2", "--head-dim",     \
      "256", "--block-size", "64", "--max-blocks-per-seq", "64"

static char *read_text(const char *path) {
  size_t len = 0;
  uint8_t *d = cu_read_file(path, &len);
  assert_non_null(d);
  char *s = realloc(d, len + 1);
  assert_non_null(s);
  s[len] = '\0';
  return s;
}

static void write_text(const char *path, const char *text) {
  assert_int_equal(cu_write_file(path, text, strlen(text), 0644), 0);
}

/* The manifest `warm --dry-run` writes for SHAPE_SMALL on gfx950, made in
 * a directory of its own. */
static char *expected_manifest(const char *root) {
  char dir[PATH_MAX], path[PATH_MAX];
  cu_fmt(dir, "%s/expected", root);
  cu_mkdirs(dir, 0700);
  cu_fmt(path, "%s/m", dir);
  result r = RUN("warm", SHAPE_SMALL, "--dry-run", "--manifest", path);
  assert_int_equal(r.code, 0);
  result_free(&r);
  char *text = read_text(path);
  assert_true(strncmp(text, "# uqjit manifest: ", 18) == 0);
  return text;
}

/* Entries of `dir` whose name starts with `prefix`. */
static int count_named(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

/* ------------------------------------------------------------------ */
/* warm --manifest: written like a cache entry. */

static void expect_refused(const char *path, const char *kind) {
  result r = RUN("warm", SHAPE_SMALL, "--dry-run", "--manifest", path);
  if (r.code != 1 || strstr(r.err, kind) == NULL ||
      strstr(r.err, "not replaced") == NULL)
    fail_msg("--manifest over %s: exit %d, stderr: %s", kind, r.code, r.err);
  result_free(&r);
}

static void warm_manifest_refuses_links_fifos_and_devices(void **state) {
  const char *root = *state;
  char victim[PATH_MAX], link[PATH_MAX], fifo[PATH_MAX], dev[PATH_MAX];
  cu_fmt(victim, "%s/victim", root);
  cu_fmt(link, "%s/link", root);
  cu_fmt(fifo, "%s/fifo", root);
  cu_fmt(dev, "%s/full", root);
  write_text(victim, "keep\n");
  assert_int_equal(symlink(victim, link), 0);
  expect_refused(link, "a symbolic link");
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  char *text = read_text(victim);
  assert_string_equal(text, "keep\n");
  free(text);
  /* A link to standard output is a link too; "-" is how to ask. */
  assert_int_equal(unlink(link), 0);
  assert_int_equal(symlink("/proc/self/fd/1", link), 0);
  expect_refused(link, "a symbolic link");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  expect_refused(fifo, "a FIFO");
  assert_int_equal(lstat(fifo, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  /* A device node of /dev/full's numbers (only root can make one). */
  if (mknod(dev, S_IFCHR | 0666, makedev(1, 7)) == 0) {
    expect_refused(dev, "a character device");
    assert_int_equal(lstat(dev, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
  } else {
    print_message("not root: the device case is skipped\n");
  }
  assert_int_equal(count_named(root, "."), 2); /* no temporary file left */
}

static void warm_manifest_never_follows_a_link_at_a_temporary_name(
    void **state) {
  const char *root = *state;
  char *want = expected_manifest(root);
  char dir[PATH_MAX], victim[PATH_MAX], path[PATH_MAX], planted[PATH_MAX];
  cu_fmt(dir, "%s/d", root);
  cu_mkdirs(dir, 0700);
  cu_fmt(victim, "%s/victim", root);
  cu_fmt(path, "%s/MANIFEST", dir);
  write_text(victim, "keep\n");
  /* The names a writer might pick: a fixed ".tmp" and a hidden one. */
  const char *names[] = {"MANIFEST.tmp", ".MANIFEST.tmp", ".MANIFEST.XXXXXX"};
  for (size_t i = 0; i < 3; i++) {
    cu_fmt(planted, "%s/%s", dir, names[i]);
    assert_int_equal(symlink(victim, planted), 0);
  }
  write_text(path, "old\n"); /* a regular file is replaced */
  result r = RUN("warm", SHAPE_SMALL, "--dry-run", "--manifest", path);
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  result_free(&r);
  char *got = read_text(path);
  assert_string_equal(got, want);
  free(got);
  got = read_text(victim);
  assert_string_equal(got, "keep\n");
  free(got);
  for (size_t i = 0; i < 3; i++) {
    struct stat st;
    cu_fmt(planted, "%s/%s", dir, names[i]);
    assert_int_equal(lstat(planted, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
  }
  assert_int_equal(count_named(dir, ""), 6); /* . .. MANIFEST, 3 links */
  free(want);
}

static void warm_manifest_dash_writes_standard_output(void **state) {
  const char *root = *state;
  char *want = expected_manifest(root);
  result r = RUN("warm", SHAPE_SMALL, "--dry-run", "--manifest", "-");
  assert_int_equal(r.code, 0);
  /* The manifest, then the dry run's own list. */
  assert_true(strncmp(r.out, want, strlen(want)) == 0);
  result_free(&r);
  expect_usage_error(
      RUN("warm", SHAPE_SMALL, "--dry-run", "--json", "--manifest", "-"),
      "--manifest - with --json");
  free(want);
}

/* Starts uqjit with args, output to /dev/null. */
static pid_t spawn_quiet(const char *const *args) {
  const char *argv[48];
  size_t n = 0;
  argv[n++] = uqjit;
  while (*args != NULL && n < 47)
    argv[n++] = *args++;
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, uqjit, &fa, NULL, (char *const *)argv,
                               environ),
                   0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

#define WRITERS 16
#define ROUNDS 4

static void concurrent_warms_writing_one_manifest_all_succeed(void **state) {
  const char *root = *state;
  char *want = expected_manifest(root);
  char dir[PATH_MAX], path[PATH_MAX];
  cu_fmt(dir, "%s/shared", root);
  cu_mkdirs(dir, 0700);
  cu_fmt(path, "%s/MANIFEST", dir);
  int failed = 0;
  for (int round = 0; round < ROUNDS; round++) {
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++)
      pids[i] = spawn_quiet((const char *const[]){
          "warm", SHAPE_SMALL, "--dry-run", "--manifest", path, NULL});
    for (int i = 0; i < WRITERS; i++) {
      int ws;
      assert_int_equal(waitpid(pids[i], &ws, 0), pids[i]);
      failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
  }
  assert_int_equal(failed, 0);
  char *got = read_text(path);
  assert_string_equal(got, want);
  free(got);
  assert_int_equal(count_named(dir, ""), 3); /* . .. MANIFEST */
  free(want);
}

/* ------------------------------------------------------------------ */
/* cache verify --manifest: what it reads. */

/* The first two kernel names warm --dry-run lists for SHAPE_SMALL. */
static void two_names(char a[512], char b[512]) {
  result r = RUN("warm", SHAPE_SMALL, "--dry-run");
  assert_int_equal(r.code, 0);
  assert_int_equal(sscanf(r.out, "%511s %511s", a, b), 2);
  result_free(&r);
}

static void verify_manifest_refuses_a_nul_byte_and_names_its_line(
    void **state) {
  const char *root = *state;
  char a[512], b[512], path[PATH_MAX], cache[PATH_MAX], text[2048];
  two_names(a, b);
  cu_fmt(path, "%s/MANIFEST", root);
  cu_fmt(cache, "%s/cache", root);
  cu_mkdirs(cache, 0700); /* a named --cache-dir must exist */
  /* "<a>\n<b>\0junk\n": before, the line read as <b> alone. */
  int n = snprintf(text, sizeof text, "%s\n%s", a, b);
  memcpy(text + n, "\0junk\n", 6);
  assert_int_equal(cu_write_file(path, text, (size_t)n + 6, 0644), 0);
  result r = RUN("cache", "verify", "--cache-dir", cache, "--manifest", path);
  if (r.code != 2 || strstr(r.err, "MANIFEST:2: a NUL byte") == NULL)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  result_free(&r);
}

static void verify_manifest_stops_at_16_mib(void **state) {
  const char *root = *state;
  char cache[PATH_MAX];
  cu_fmt(cache, "%s/cache", root);
  cu_mkdirs(cache, 0700); /* a named --cache-dir must exist */
  /* Before, /dev/zero was read for ever (the runner's limit fails it). */
  result r = RUN("cache", "verify", "--cache-dir", cache, "--manifest",
                 "/dev/zero");
  if (r.code != 2 || strstr(r.err, "larger than 16 MiB") == NULL)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  result_free(&r);
}

static void verify_manifest_counts_a_kernel_listed_twice_once(void **state) {
  const char *root = *state;
  char a[512], b[512], path[PATH_MAX], cache[PATH_MAX], text[4096];
  two_names(a, b);
  cu_fmt(path, "%s/MANIFEST", root);
  cu_fmt(cache, "%s/cache", root);
  cu_mkdirs(cache, 0700); /* a named --cache-dir must exist */
  snprintf(text, sizeof text, "%s\n%s\n  %s\t\n# again\n%s\r\n%s\n", a, b, a,
           b, a);
  write_text(path, text);
  result r = RUN("cache", "verify", "--cache-dir", cache, "--manifest", path);
  assert_int_equal(r.code, 1);
  if (strstr(r.out, "0 of 2 kernels") == NULL)
    fail_msg("stdout: %s", r.out);
  char line[600];
  snprintf(line, sizeof line, "missing: %s\n", a);
  assert_non_null(strstr(r.out, line));
  assert_null(strstr(strstr(r.out, line) + 1, line)); /* named once */
  result_free(&r);
  r = RUN("cache", "verify", "--cache-dir", cache, "--manifest", path,
          "--json");
  assert_int_equal(r.code, 1);
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "kernels"), 2);
  assert_int_equal(json_int(r.out, "present"), 0);
  result_free(&r);
}

/* ------------------------------------------------------------------ */
/* cache verify and prune name the rule each bad item broke. */

/* Stores a 1000-byte entry of key k for gfx942 in `cache`. */
static void put_entry(const char *cache, const uq__digest *k) {
  uq__cache *c = NULL;
  assert_int_equal(uq__cache_open(cache, "", &c), 0);
  uint8_t *p = cu_payload(1, 1000);
  assert_int_equal(uq__cache_put(c, "gfx942", k, NULL, p, 1000), 0);
  free(p);
  uq__cache_close(c);
}

/* Keys out[0..n) whose entries lie in n different 2-hex directories. */
static void keys_in_distinct_dirs(const char *cache, uq__digest *out,
                                  int n) {
  char dirs[8][PATH_MAX];
  int found = 0;
  for (int i = 0; found < n && i < 1000; i++) {
    cu_key(100 + i, &out[found]);
    cu_entry_dir(cache, "gfx942", &out[found], dirs[found]);
    int dup = 0;
    for (int j = 0; j < found; j++)
      dup |= strcmp(dirs[j], dirs[found]) == 0;
    found += !dup;
  }
  assert_int_equal(found, n);
}

static void expect_line(const char *text, const char *path, const char *why) {
  char line[2 * PATH_MAX];
  snprintf(line, sizeof line, "bad: %s: %s\n", path, why);
  if (strstr(text, line) == NULL)
    fail_msg("no line '%s' in:\n%s", line, text);
}

static void cache_verify_names_the_rule_each_bad_item_broke(void **state) {
  const char *root = *state;
  char cache[PATH_MAX], other[PATH_MAX], e[3][PATH_MAX], hex[PATH_MAX];
  char why[256];
  uq__digest k[3];
  cu_fmt(cache, "%s/cache", root);
  cu_mkdirs(cache, 0700); /* a named --cache-dir must exist */
  cu_fmt(other, "%s/other", root);
  keys_in_distinct_dirs(cache, k, 3);
  for (int i = 0; i < 3; i++) {
    put_entry(cache, &k[i]);
    cu_entry_path(cache, "gfx942", &k[i], e[i]);
  }
  /* A group-writable entry. */
  assert_int_equal(chmod(e[0], 0664), 0);
  /* A symbolic link at an entry's path, to a valid entry elsewhere. */
  char target[PATH_MAX];
  put_entry(other, &k[1]);
  cu_entry_path(other, "gfx942", &k[1], target);
  assert_int_equal(unlink(e[1]), 0);
  assert_int_equal(symlink(target, e[1]), 0);
  /* A 0700 directory of another user (root only). */
  cu_entry_dir(cache, "gfx942", &k[2], hex);
  int foreign = geteuid() == 0 && chown(hex, 65534, 65534) == 0;
  result r = RUN("cache", "verify", "--cache-dir", cache);
  assert_int_equal(r.code, 1);
  expect_line(r.out, e[0], "a file writable by its group (mode 0664)");
  expect_line(r.out, e[1], "a symbolic link");
  if (foreign) {
    snprintf(why, sizeof why,
             "a directory (mode 0700) owned by uid 65534, not this user "
             "(uid 0) or root");
    expect_line(r.out, hex, why);
    assert_non_null(strstr(r.out, "0 good, 3 bad"));
  } else {
    assert_non_null(strstr(r.out, "1 good, 2 bad"));
  }
  result_free(&r);
  /* prune names them too, then removes them. */
  r = RUN("cache", "prune", "--cache-dir", cache, "--max-size", "1G");
  assert_int_equal(r.code, 0);
  expect_line(r.out, e[0], "a file writable by its group (mode 0664)");
  expect_line(r.out, e[1], "a symbolic link");
  if (foreign)
    expect_line(r.out, hex, why);
  result_free(&r);
  r = RUN("cache", "verify", "--cache-dir", cache);
  assert_int_equal(r.code, 0);
  result_free(&r);
  assert_true(cu_exists(target)); /* the link's target is kept */
  if (!foreign)
    skip(); /* the foreign-directory case needs root to chown */
}

/* ------------------------------------------------------------------ */
/* Damaged entry paths. */

/* `mkdir -p $E/a/b/c/d; touch $E/a/b/c/d/f` at an entry's path: verify
 * counts it, prune removes it, verify is clean again. */
static void cache_prune_removes_a_tree_four_levels_deep_at_an_entry_path(
    void **state) {
  const char *root = *state;
  char cache[PATH_MAX], entry[PATH_MAX], deep[PATH_MAX], file[PATH_MAX];
  uq__digest k;
  cu_key(3, &k);
  cu_fmt(cache, "%s/cache", root);
  cu_mkdirs(cache, 0700); /* a named --cache-dir must exist */
  cu_entry_path(cache, "gfx942", &k, entry);
  cu_fmt(deep, "%s/a/b/c/d", entry);
  cu_mkdirs(deep, 0700);
  cu_fmt(file, "%s/f", deep);
  write_text(file, "x");
  result r = RUN("cache", "verify", "--cache-dir", cache);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "0 good, 1 bad"));
  result_free(&r);
  r = RUN("cache", "prune", "--cache-dir", cache, "--max-size", "1G");
  assert_int_equal(r.code, 0);
  if (strstr(r.out, "removed 1 file,") == NULL)
    fail_msg("prune: %s", r.out);
  result_free(&r);
  assert_false(cu_exists(entry));
  r = RUN("cache", "verify", "--cache-dir", cache);
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "0 good, 0 bad"));
  result_free(&r);
}

/* ------------------------------------------------------------------ */
/* compile: warm repairs what a writer must repair. */

static int chown_dirs(const char *dir, int depth) {
  int n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char p[PATH_MAX];
    struct stat st;
    if (e->d_name[0] == '.')
      continue;
    cu_fmt(p, "%s/%s", dir, e->d_name);
    if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    if (depth > 0)
      n += chown_dirs(p, depth - 1);
    else if (chown(p, 65534, 65534) == 0 && chmod(p, 0700) == 0)
      n++;
  }
  closedir(d);
  return n;
}

static void warm(const char *cache, const char *what, const char *want) {
  result r = RUN("warm", SHAPE_SMALL, "--target", "gfx950", "--cache-dir",
                 cache);
  if (r.code != 0 || strstr(r.out, want) == NULL)
    fail_msg("%s: exit %d, stdout:\n%s\nstderr:\n%s", what, r.code, r.out,
             r.err);
  result_free(&r);
}

/* `chown nobody <cache>/v2/gfx950/<hh>; uqjit warm`: the reader refuses
 * the directory, the writer removes it and makes it again. */
static void warm_replaces_directories_of_another_user(void **state) {
  const char *root = *state;
  if (geteuid() != 0)
    skip(); /* only root can give a directory away */
  char cache[PATH_MAX], tdir[PATH_MAX];
  cu_fmt(cache, "%s/cache", root);
  cu_mkdirs(cache, 0700); /* a named --cache-dir must exist */
  cu_fmt(tdir, "%s/v2", cache);
  warm(cache, "cold warm", "3 compiled");
  assert_int_equal(chown_dirs(tdir, 1), 3); /* the 2-hex directories */
  warm(cache, "warm through foreign 2-hex directories", "3 compiled");
  warm(cache, "warm after the repair", "3 from cache");
  assert_int_equal(chown_dirs(tdir, 0), 1); /* v2/gfx950 */
  warm(cache, "warm through a foreign target directory", "3 compiled");
  warm(cache, "warm after the repair", "3 from cache");
  result r = RUN("cache", "verify", "--cache-dir", cache);
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "3 good, 0 bad"));
  result_free(&r);
}

/* A cache that cannot be written: the kernels compile and run from
 * memory, and demo says so instead of "compile failed". */
static void demo_says_compiled_but_not_stored_when_the_store_fails(
    void **state) {
  const char *root = *state;
  char file[PATH_MAX], cache[PATH_MAX];
  cu_fmt(file, "%s/a-file", root);
  cu_fmt(cache, "%s/cache", file);
  write_text(file, "x");
  result r = RUN("demo", "--cpu", "--target", "gfx950", "--cache-dir", cache);
  if (r.code != 0 ||
      strstr(r.out, "compiled, but not stored in the cache") == NULL ||
      strstr(r.out, "Not a directory") == NULL ||
      strstr(r.out, "compile failed") != NULL ||
      strstr(r.out, "no kernel could be compiled") != NULL)
    fail_msg("exit %d, stdout:\n%s", r.code, r.out);
  result_free(&r);
}

/* ------------------------------------------------------------------ */

static int setup(void **state) {
  char *dir = malloc(PATH_MAX);
  cu_mkdtemp(dir);
  *state = dir;
  return 0;
}

static int teardown(void **state) {
  cu_rm_rf(*state);
  free(*state);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PATH-TO-UQJIT unit|compile\n", argv[0]);
    return 1;
  }
  uqjit = argv[1];
  cli_run_init(uqjit, 120000);
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest unit[] = {
      T_(warm_manifest_refuses_links_fifos_and_devices),
      T_(warm_manifest_never_follows_a_link_at_a_temporary_name),
      T_(warm_manifest_dash_writes_standard_output),
      T_(concurrent_warms_writing_one_manifest_all_succeed),
      T_(cache_prune_removes_a_tree_four_levels_deep_at_an_entry_path),
      T_(cache_verify_names_the_rule_each_bad_item_broke),
      T_(verify_manifest_refuses_a_nul_byte_and_names_its_line),
      T_(verify_manifest_stops_at_16_mib),
      T_(verify_manifest_counts_a_kernel_listed_twice_once),
  };
  const struct CMUnitTest compile[] = {
      T_(warm_replaces_directories_of_another_user),
      T_(demo_says_compiled_but_not_stored_when_the_store_fails),
  };
  if (strcmp(argv[2], "unit") == 0)
    return cmocka_run_group_tests_name("cli_reliability_unit", unit, NULL,
                                       NULL);
  if (strcmp(argv[2], "compile") == 0) {
    if (access("/usr/bin/clang-22", X_OK) != 0 &&
        getenv("UQJIT_CLANG") == NULL) {
      fprintf(stderr, "clang-22 not found: skipping\n");
      return 77;
    }
    /* Kernel names and compile times of the portable layer. */
    setenv("UQJIT_VARIANT", "portable", 1);
    return cmocka_run_group_tests_name("cli_reliability_compile", compile,
                                       NULL, NULL);
  }
#undef T_
  fprintf(stderr, "unknown group '%s'\n", argv[2]);
  return 1;
}
