/* The offline clang route (lib/compile/compiler_clang.c): one source always
 * compiles to the same bytes (a fixed compilation-unit id), and a compile
 * killed with SIGKILL leaves its scratch files, clang's own included, only
 * in a private directory that the next process sweeps. */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/base/os.h"
#include "lib/compile/compiler.h"
#include "lib/compile/compiler_impl.h"
#include "tests/support/internal/cache_util.h"
#include "uqjit.h"

/* -nogpuinc: no HIP headers, so the attribute is spelled out. A static
 * device variable is what makes clang emit the __hip_cuid_ symbol. */
static const char src[] =
    "#define __global__ __attribute__((global))\n"
    "static __attribute__((device)) float bias = 1.0f;\n"
    "extern \"C\" __global__ void uq_test_write(float *p) {\n"
    "  p[__builtin_amdgcn_workitem_id_x()] = 2.0f + bias;\n"
    "}\n";

static const uq__compiler *clang_or_skip(void) {
  const uq__compiler *cc = NULL;
  if (uq__compiler_load_route(UQ__ROUTE_CLANG, &cc) != 0) {
    print_message("no offline clang: %s\n", uq_last_error());
    skip();
  }
  return cc;
}

static void compile_in(const uq__compiler *cc, const char *tmpdir, void **obj,
                       size_t *len) {
  setenv("TMPDIR", tmpdir, 1);
  int rc = uq__compiler_compile(cc, "gfx942", src, strlen(src), "uq_test",
                                obj, len);
  unsetenv("TMPDIR");
  if (rc != 0)
    print_message("%s\n", uq_last_error());
  assert_int_equal(rc, 0);
}

static void clang_compiles_one_source_to_identical_bytes_every_time(
    void **state) {
  (void)state;
  const uq__compiler *cc = clang_or_skip();
  char t1[PATH_MAX], t2[PATH_MAX];
  cu_mkdtemp(t1);
  cu_mkdtemp(t2);
  void *a = NULL, *b = NULL;
  size_t alen = 0, blen = 0;
  /* Different scratch directories: clang's default id hashes the path. */
  compile_in(cc, t1, &a, &alen);
  compile_in(cc, t2, &b, &blen);
  assert_int_equal(alen, blen);
  assert_memory_equal(a, b, alen);
  assert_non_null(strstr(uq__compiler_options(cc, "gfx942"), "-cuid="));
  uq__free(a);
  uq__free(b);
  cu_rm_rf(t1);
  cu_rm_rf(t2);
}

/* A stand-in clang that identifies as the real one, then leaves a scratch
 * file in $TMPDIR (as clang does) and hangs until killed. */
static void write_hanging_clang(const char *path, const char *real) {
  char text[2 * PATH_MAX];
  snprintf(text, sizeof text,
           "#!/bin/sh\n"
           "if [ \"$1\" = --version ]; then exec %s --version; fi\n"
           "echo $$ > \"$TMPDIR/clang-scratch.o\"\n"
           "exec sleep 60\n",
           real);
  assert_int_equal(cu_write_file(path, text, strlen(text), 0700), 0);
}

/* Entries of `dir` other than "." and "..". */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static void clang_scratch_of_a_killed_compile_is_private_and_swept(
    void **state) {
  (void)state;
  const uq__compiler *real = clang_or_skip();
  char tmp[PATH_MAX], fake[PATH_MAX], parent[PATH_MAX], scratch[PATH_MAX];
  cu_mkdtemp(tmp);
  cu_fmt(fake, "%s/fake-clang", tmp);
  write_hanging_clang(fake, uq__compiler_location(real));
  cu_fmt(parent, "%s/uqjit-%u", tmp, (unsigned)geteuid());
  setenv("TMPDIR", tmp, 1);
  setenv("UQJIT_CLANG", fake, 1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    uq__compiler *cc = calloc(1, sizeof *cc);
    void *obj = NULL;
    size_t len = 0;
    if (cc == NULL || uq__clang_load(cc) != 0)
      _exit(3);
    cc->compile(cc, "gfx942", src, strlen(src), "uq_test", &obj, &len);
    _exit(4);
  }
  unsetenv("UQJIT_CLANG");
  /* Wait for the stand-in's scratch file in the child's directory. */
  long clang_pid = 0;
  for (int i = 0; i < 1000 && clang_pid == 0; i++) {
    DIR *d = opendir(parent);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
      if (atol(e->d_name) != (long)pid)
        continue;
      cu_fmt(scratch, "%s/%s/clang-scratch.o", parent, e->d_name);
      size_t n = 0;
      char *text = (char *)cu_read_file(scratch, &n);
      if (text != NULL && n > 0)
        clang_pid = atol(text);
      free(text);
    }
    if (d != NULL)
      closedir(d);
    usleep(10000);
  }
  kill(pid, SIGKILL);
  int ws;
  waitpid(pid, &ws, 0);
  if (clang_pid > 0)
    kill((pid_t)clang_pid, SIGKILL);
  assert_true(clang_pid > 0);
  /* Nothing outside the private directory; the dead one's is swept. */
  assert_int_equal(count_entries(tmp), 2); /* fake-clang, uqjit-<uid> */
  assert_true(count_entries(parent) >= 1); /* its scratch and its log */
  uq__os_sweep_scratch();
  assert_int_equal(count_entries(parent), 0);
  unsetenv("TMPDIR");
  cu_rm_rf(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(clang_compiles_one_source_to_identical_bytes_every_time),
      cmocka_unit_test(clang_scratch_of_a_killed_compile_is_private_and_swept),
  };
  return cmocka_run_group_tests_name("compile", tests, NULL, NULL);
}
