/* Error details (lib/base/error.c): text composed from the current detail
 * never formats the detail into itself, and a failure to run a compiler
 * keeps the reason its callee gave, once, with the callee's status. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/error.h"
#include "lib/compile/compiler.h"
#include "uqjit.h"

/* A detail long enough that formatting it into itself would run over
 * what it reads. */
static void long_detail(char *want, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    want[i] = (char)('a' + i % 26);
  want[n - 1] = '\0';
  uq__errorf(UQ_EIO, "%s", want);
}

static void errorf_with_the_detail_as_argument_keeps_it_whole(void **state) {
  (void)state;
  char detail[600], want[700];
  long_detail(detail, sizeof detail);
  uq__errorf(UQ_EIO, "cannot run x: %s", uq_last_error());
  snprintf(want, sizeof want, "cannot run x: %s", detail);
  assert_string_equal(uq_last_error(), want);
  /* A pointer into the middle of the detail as well. */
  uq__errorf(UQ_EIO, "%s|%s", uq_last_error() + 14, uq_last_error());
  char want2[1400];
  snprintf(want2, sizeof want2, "%s|%s", detail, want);
  assert_string_equal(uq_last_error(), want2);
}

static void error_wrap_puts_the_words_in_front_once(void **state) {
  (void)state;
  char detail[600], want[700];
  long_detail(detail, sizeof detail);
  assert_int_equal(uq__error_wrap(UQ_ECOMPILE, "step %d", 3), UQ_ECOMPILE);
  snprintf(want, sizeof want, "step 3: %s", detail);
  assert_string_equal(uq_last_error(), want);
  uq__error_clear();
  uq__error_wrap(UQ_EIO, "alone");
  assert_string_equal(uq_last_error(), "alone");
  /* Appending the detail to itself doubles it. */
  uq__errorf(UQ_EIO, "ab");
  uq__error_append(uq_last_error());
  assert_string_equal(uq_last_error(), "abab");
}

/* A found "clang" that cannot be run because there is no scratch
 * directory: the reason is the scratch directory's, named once, and the
 * status is an I/O error, not "no compiler found". */
static void clang_that_cannot_run_names_the_scratch_problem_once(
    void **state) {
  (void)state;
  char prog[PATH_MAX];
  const char *cands[] = {"/usr/bin/true", "/bin/true"};
  prog[0] = '\0';
  for (size_t i = 0; i < 2 && prog[0] == '\0'; i++)
    if (access(cands[i], X_OK) == 0 && realpath(cands[i], prog) == NULL)
      prog[0] = '\0';
  if (prog[0] == '\0')
    skip();
  const char *tmp = "/nonexistent-uqjit-test-tmpdir";
  setenv("UQJIT_CLANG", prog, 1);
  setenv("TMPDIR", tmp, 1);
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_load_route(UQ__ROUTE_CLANG, &cc);
  char got[2048];
  snprintf(got, sizeof got, "%s", uq_last_error());
  unsetenv("UQJIT_CLANG");
  unsetenv("TMPDIR");
  char want[2048];
  snprintf(want, sizeof want,
           "cannot run %s --version: cannot create a temporary directory "
           "in %s: No such file or directory",
           prog, tmp);
  assert_int_equal(rc, UQ_EIO);
  assert_string_equal(got, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(errorf_with_the_detail_as_argument_keeps_it_whole),
      cmocka_unit_test(error_wrap_puts_the_words_in_front_once),
      cmocka_unit_test(clang_that_cannot_run_names_the_scratch_problem_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
