/* The specialization table without compilers or GPUs: a fake builder counts
 * its calls and sleeps, and many threads hammer a handful of keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <time.h>

#include "lib/base/error.h"
#include "lib/runtime/table.h"

#define NKEYS 5
#define NTHREADS 16
#define ROUNDS 200

typedef struct fake {
  int builds[NKEYS * 2];   /* per (key index, device 0/-1), atomic */
  int fail_index;          /* key index whose build fails (-1 none) */
  int sleep_us;
  /* When set, a build waits (up to this long) until another build runs at
   * the same time, so the overlap test does not depend on how fast threads
   * start: under valgrind, which runs one thread at a time, a lone thread
   * may otherwise build every key before the next one is scheduled. */
  int await_company_ms; /* atomic */
  int concurrent, max_concurrent; /* atomic */
} fake;

static void nap_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static int key_index(const uq_key *k) { return k->head_dim; }

static void make_key(uq_key *k, int index) {
  memset(k, 0, sizeof *k);
  k->kind = UQ_KERNEL_DECODE;
  k->dtype = UQ_DTYPE_BF16;
  k->head_dim = index; /* the fake's index, not a real head dim */
  k->num_kv_heads = 1;
  snprintf(k->target, sizeof k->target, "sm_90");
}

static int fake_build(void *user, uq__table *t, uq__entry *e) {
  (void)t;
  fake *f = user;
  int idx = key_index(&e->key) * 2 + (e->device < 0 ? 1 : 0);
  __atomic_fetch_add(&f->builds[idx], 1, __ATOMIC_RELAXED);
  int now = __atomic_add_fetch(&f->concurrent, 1, __ATOMIC_RELAXED);
  int prev = __atomic_load_n(&f->max_concurrent, __ATOMIC_RELAXED);
  while (now > prev && !__atomic_compare_exchange_n(&f->max_concurrent, &prev,
                                                    now, 0, __ATOMIC_RELAXED,
                                                    __ATOMIC_RELAXED)) {
  }
  int patience = __atomic_load_n(&f->await_company_ms, __ATOMIC_RELAXED);
  for (int waited = 0;
       __atomic_load_n(&f->max_concurrent, __ATOMIC_RELAXED) < 2; waited++) {
    if (waited >= patience) { /* give up once, for every build */
      __atomic_store_n(&f->await_company_ms, 0, __ATOMIC_RELAXED);
      break;
    }
    nap_us(1000);
  }
  nap_us(f->sleep_us);
  __atomic_sub_fetch(&f->concurrent, 1, __ATOMIC_RELAXED);
  if (key_index(&e->key) == f->fail_index)
    return uq__errorf(UQ_ECOMPILE, "fake compile error for key %d",
                      key_index(&e->key));
  e->block_threads = 100 + (uint32_t)key_index(&e->key);
  snprintf(e->symbol, sizeof e->symbol, "k%d_d%d", key_index(&e->key),
           e->device);
  uq__table_note_compile(t, 0.001);
  return 0;
}

static int released;
static void fake_release(void *user, uq__entry *e) {
  (void)user;
  (void)e;
  __atomic_fetch_add(&released, 1, __ATOMIC_RELAXED);
}

typedef struct hammer_arg {
  uq__table *t;
  int thread;
  uq__entry *seen[NKEYS]; /* the entry this thread got for each key */
  int inconsistent;
  int failures_wrong; /* failing key returned something other than ECOMPILE */
  uint64_t lookups;
} hammer_arg;

static void *hammer(void *p) {
  hammer_arg *a = p;
  for (int r = 0; r < ROUNDS; r++) {
    int index = (r + a->thread) % NKEYS;
    uq_key k;
    make_key(&k, index);
    uq__entry *e = NULL;
    int rc = uq__table_lookup(a->t, &k, 0, 1, &e, NULL);
    a->lookups++;
    if (index == NKEYS - 1) {
      if (rc != UQ_ECOMPILE || e != NULL ||
          strstr(uq_last_error(), "fake compile error") == NULL)
        a->failures_wrong++;
      continue;
    }
    if (rc != 0 || e == NULL) {
      a->inconsistent++;
      continue;
    }
    if (a->seen[index] == NULL)
      a->seen[index] = e;
    else if (a->seen[index] != e)
      a->inconsistent++;
    if (e->block_threads != 100u + (unsigned)index ||
        memcmp(&e->key, &k, sizeof k) != 0)
      a->inconsistent++;
  }
  return NULL;
}

static void table_builds_each_key_once_under_16_threads(void **state) {
  (void)state;
  fake f;
  memset(&f, 0, sizeof f);
  f.fail_index = NKEYS - 1;
  f.sleep_us = 20000;
  f.await_company_ms = 10000;
  uq__table *t;
  assert_int_equal(uq__table_create(fake_build, fake_release, &f, &t), 0);

  pthread_t th[NTHREADS];
  hammer_arg args[NTHREADS];
  memset(args, 0, sizeof args);
  for (int i = 0; i < NTHREADS; i++) {
    args[i].t = t;
    args[i].thread = i;
    assert_int_equal(pthread_create(&th[i], NULL, hammer, &args[i]), 0);
  }
  uint64_t lookups = 0;
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(args[i].inconsistent, 0);
    assert_int_equal(args[i].failures_wrong, 0);
    lookups += args[i].lookups;
  }
  /* Exactly one build per key, the failing one included (remembered). */
  for (int k = 0; k < NKEYS; k++) {
    assert_int_equal(f.builds[k * 2], 1);
    assert_int_equal(f.builds[k * 2 + 1], 0);
  }
  /* Different keys built at the same time: 16 threads start on 5 keys and
   * each build waits up to 10 s for another; a table that serialized its
   * builds would leave this at 1. */
  assert_true(f.max_concurrent >= 2);
  /* Every thread saw the same entry for a key. */
  for (int k = 0; k < NKEYS - 1; k++)
    for (int i = 1; i < NTHREADS; i++)
      assert_ptr_equal(args[i].seen[k], args[0].seen[k]);

  uq_stats st;
  uq__table_stats(t, &st);
  assert_int_equal(lookups, (uint64_t)NTHREADS * ROUNDS);
  assert_int_equal(st.hits + st.misses, lookups);
  /* Misses: one per key built, plus every replay of the failing key. */
  uint64_t failing = 0;
  for (int i = 0; i < NTHREADS; i++)
    for (int r = 0; r < ROUNDS; r++)
      failing += (r + i) % NKEYS == NKEYS - 1;
  assert_int_equal(st.misses, (uint64_t)(NKEYS - 1) + failing);
  assert_int_equal(st.compiles, (uint64_t)(NKEYS - 1));
  assert_true(st.compile_seconds > 0.0039 && st.compile_seconds < 0.0041);

  released = 0;
  uq__table_destroy(t);
  assert_int_equal(released, NKEYS - 1); /* ready entries only */
}

static void table_keeps_devices_apart(void **state) {
  (void)state;
  fake f;
  memset(&f, 0, sizeof f);
  f.fail_index = -1;
  uq__table *t;
  assert_int_equal(uq__table_create(fake_build, NULL, &f, &t), 0);
  uq_key k;
  make_key(&k, 2);
  uq__entry *a, *b, *c;
  int hit = -1;
  assert_int_equal(uq__table_lookup(t, &k, 0, 1, &a, &hit), 0);
  assert_int_equal(hit, 0);
  assert_int_equal(uq__table_lookup(t, &k, -1, 1, &b, &hit), 0);
  assert_int_equal(hit, 0);
  assert_ptr_not_equal(a, b);
  assert_string_equal(a->symbol, "k2_d0");
  assert_string_equal(b->symbol, "k2_d-1");
  assert_int_equal(uq__table_lookup(t, &k, 0, 1, &c, &hit), 0);
  assert_int_equal(hit, 1);
  assert_ptr_equal(a, c);
  /* A key differing in one byte is a different entry. */
  k.target[5] = 'a';
  assert_int_equal(uq__table_lookup(t, &k, 0, 1, &c, &hit), 0);
  assert_int_equal(hit, 0);
  assert_ptr_not_equal(a, c);
  assert_int_equal(f.builds[2 * 2], 2);
  assert_int_equal(f.builds[2 * 2 + 1], 1);
  uq__table_destroy(t);
}

static void table_grows_past_its_first_segment(void **state) {
  (void)state;
  fake f;
  memset(&f, 0, sizeof f);
  f.fail_index = -1;
  uq__table *t;
  assert_int_equal(uq__table_create(fake_build, NULL, &f, &t), 0);
  enum { N = 1000 };
  static uq__entry *first[N];
  for (int i = 0; i < N; i++) {
    uq_key k;
    make_key(&k, 0);
    k.num_partitions = i; /* 1000 distinct keys */
    assert_int_equal(uq__table_lookup(t, &k, 0, 1, &first[i], NULL), 0);
  }
  /* Entries published in early segments are still found, unmoved. */
  for (int i = 0; i < N; i++) {
    uq_key k;
    make_key(&k, 0);
    k.num_partitions = i;
    uq__entry *e;
    int hit = 0;
    assert_int_equal(uq__table_lookup(t, &k, 0, 1, &e, &hit), 0);
    assert_int_equal(hit, 1);
    assert_ptr_equal(e, first[i]);
    assert_int_equal(e->key.num_partitions, i);
  }
  assert_int_equal(f.builds[0], N);
  uq_stats st;
  uq__table_stats(t, &st);
  assert_int_equal(st.misses, N);
  assert_int_equal(st.hits, N);
  uq__table_destroy(t);
}

/* A builder that looks up another entry of the same table (as the context's
 * device builder fetches its code object) does not deadlock. */
static int nested_build(void *user, uq__table *t, uq__entry *e) {
  fake *f = user;
  if (e->device >= 0) {
    uq__entry *obj;
    int rc = uq__table_lookup(t, &e->key, -1, 0, &obj, NULL);
    if (rc != 0)
      return rc;
    e->block_threads = obj->block_threads + 1;
    return 0;
  }
  f->builds[1]++;
  e->block_threads = 41;
  return 0;
}

static void table_builder_may_look_up_other_entries(void **state) {
  (void)state;
  fake f;
  memset(&f, 0, sizeof f);
  uq__table *t;
  assert_int_equal(uq__table_create(nested_build, NULL, &f, &t), 0);
  uq_key k;
  make_key(&k, 1);
  uq__entry *e;
  assert_int_equal(uq__table_lookup(t, &k, 3, 1, &e, NULL), 0);
  assert_int_equal(e->block_threads, 42);
  assert_int_equal(f.builds[1], 1);
  uq_stats st;
  uq__table_stats(t, &st);
  assert_int_equal(st.misses, 1); /* the nested lookup is not counted */
  assert_int_equal(st.hits, 0);
  uq__table_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_builds_each_key_once_under_16_threads),
      cmocka_unit_test(table_keeps_devices_apart),
      cmocka_unit_test(table_grows_past_its_first_segment),
      cmocka_unit_test(table_builder_may_look_up_other_entries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
