/* Allocation-failure injection for the fault tests (see alloc_inject.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "tests/runtime/alloc_inject.h"
#include "uqjit.h"

long ai_inject_each(const char *name, int (*fn)(void *), void *arg,
                    int also) {
  int rc = fn(arg);
  if (rc != 0)
    fail_msg("%s: fails with no fault injected: %d (%s)", name, rc,
             uq_last_error());
  long n;
  for (n = 0;; n++) {
    long a0, f0, x0, a1, f1, x1;
    uq__alloc_counts(&a0, &f0, &x0);
    uq__alloc_fail_after(n);
    rc = fn(arg);
    uq__alloc_fail_after(-1);
    uq__alloc_counts(&a1, &f1, &x1);
    if (a1 - a0 != f1 - f0)
      fail_msg("%s: allocation %ld failing: %ld allocations, %ld frees", name,
               n + 1, a1 - a0, f1 - f0);
    if (x1 == x0) {
      if (rc != 0)
        fail_msg("%s: no fault injected but status %d (%s)", name, rc,
                 uq_last_error());
      break;
    }
    if (rc != UQ_ENOMEM && (also == 0 || rc != also) && rc != 0)
      fail_msg("%s: allocation %ld failing gave %d (%s)", name, n + 1, rc,
               uq_last_error());
  }
  print_message("%-22s %ld allocation sites failed\n", name, n);
  return n;
}
