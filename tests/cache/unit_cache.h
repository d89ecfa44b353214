/* What the two files of test_cache share (unit_cache.c, the fixture and
 * main; unit_cache_dirs.c, the directory tests). */
#ifndef UQ_TESTS_CACHE_UNIT_CACHE_H
#define UQ_TESTS_CACHE_UNIT_CACHE_H

#include <limits.h>
#include <stddef.h>

#include "lib/cache/cache.h"

#define T "gfx950:sramecc+:xnack-"
#define T_DIR "gfx950.sramecc+.xnack-"
/* Header size of an entry put without provenance: the fixed part and four
 * empty metadata strings. */
#define H0 (UQ__CACHE_HEADER_SIZE + 4)

typedef struct fx {
  char root[PATH_MAX]; /* the test's temporary directory */
  char w[PATH_MAX];    /* root/w: the writable cache */
} fx;

/* cmocka setup / teardown: *state is an fx on a fresh temporary root. */
int setup(void **state);
int teardown(void **state);
/* The writable cache of f, opened (fails the test otherwise). */
uq__cache *open_w(const fx *f);
/* Put without provenance, which must succeed. */
void put_ok(uq__cache *c, const char *target, const uq__digest *k,
            const void *p, size_t n);
/* A get that must return exactly want[0..n). */
void expect_hit(uq__cache *c, const char *target, const uq__digest *k,
                const void *want, size_t n);
/* A get that must miss, leaving nothing allocated. */
void expect_miss(uq__cache *c, const char *target, const uq__digest *k);

/* The tests of unit_cache_dirs.c. */
void cache_sweeps_stale_temp_files_but_keeps_fresh_ones(void **state);
void cache_put_fails_cleanly_on_unwritable_directory(void **state);
void cache_put_fails_cleanly_when_directory_cannot_be_created(void **state);
void cache_put_fails_cleanly_when_disk_is_full(void **state);
void cache_refuses_directories_writable_by_others(void **state);
void cache_searches_readonly_layers_after_writable_and_never_writes_them(void **state);
void cache_directories_come_from_the_environment(void **state);
void cache_list_reports_entries_and_validity(void **state);
void cache_prune_keeps_most_recently_used(void **state);

#endif
