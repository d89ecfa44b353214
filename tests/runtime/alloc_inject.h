/* Allocation-failure injection for the fault tests: run a call with its
 * 1st, 2nd, 3rd, ... allocation failing until a run reaches no injected
 * failure. */
#ifndef UQ_TEST_ALLOC_INJECT_H
#define UQ_TEST_ALLOC_INJECT_H

/* Runs fn(arg) once unfailed (it must succeed: this warms any process-wide
 * lazy state), then with allocation n failing for n = 0, 1, ... until a
 * run reaches no injected failure (that run must succeed). Failing runs
 * must return UQ_ENOMEM, 0 (degraded but whole) or `also` (another status
 * the call documents for this case; 0 for none), and balance allocations
 * and frees; fn releases whatever a successful call handed out. Fails the
 * running cmocka test otherwise. Prints and returns the number of
 * allocation sites failed. */
long ai_inject_each(const char *name, int (*fn)(void *), void *arg, int also);

#endif
