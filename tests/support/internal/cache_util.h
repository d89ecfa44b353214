/* Helpers shared by the cache tests: temporary directories, files, and an
 * independent rendering of the documented entry layout. */
#ifndef UQ_TEST_CACHE_UTIL_H
#define UQ_TEST_CACHE_UTIL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cache/cache.h"

/* snprintf into a PATH_MAX buffer (aborts when the path does not fit). */
void cu_fmt(char *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* mkdtemp under /tmp; aborts the test program on failure. */
void cu_mkdtemp(char out[PATH_MAX]);
/* cmocka setup / teardown: *state is a fresh temporary directory's path,
 * removed (and freed) even when the test fails. */
int cu_setup_tmpdir(void **state);
int cu_teardown_tmpdir(void **state);
/* rm -rf, restoring permissions on the way down. */
void cu_rm_rf(const char *path);
/* A digest made from one labeled field "source" = "k<i>". */
void cu_key(int i, uq__digest *out);
/* Deterministic payload bytes for (seed, n); caller frees with free(). */
uint8_t *cu_payload(unsigned seed, size_t n);
/* XXH3-64 of compiler, NUL, options: an entry's provenance. */
uint64_t cu_provenance(const char *compiler, const char *options);
/* <root>/v2/<target with ':'->'.'>/<hh>/<30 hex>.<16 hex>.co, computed here,
 * for an entry of that compiler and options. */
void cu_entry_path_of(const char *root, const char *target,
                      const uq__digest *key, const char *compiler,
                      const char *options, char out[PATH_MAX]);
/* The same for an entry without provenance (put with meta NULL). */
void cu_entry_path(const char *root, const char *target, const uq__digest *key,
                   char out[PATH_MAX]);
/* Directory of that entry. */
void cu_entry_dir(const char *root, const char *target, const uq__digest *key,
                  char out[PATH_MAX]);
/* Whole file into malloc'd memory; NULL when missing. */
uint8_t *cu_read_file(const char *path, size_t *len);
int cu_write_file(const char *path, const void *data, size_t len, int mode);
void cu_flip_byte(const char *path, long offset);
int cu_exists(const char *path);
/* Files whose name holds ".tmp." anywhere under root. */
int cu_count_temps(const char *root);
/* Files named *.co anywhere under root. */
int cu_count_entries(const char *root);
/* mkdir -p with mode. */
void cu_mkdirs(const char *path, int mode);
/* An entry file in the documented layout, built without the library's
 * writer: header fields little-endian, checksums with xxHash directly.
 * meta: key name, compiler, options, route. */
size_t cu_build_entry_of(const char *target, const uq__digest *key,
                         const char *const meta[4], int64_t created,
                         const void *payload, size_t len,
                         uint64_t claimed_len, uint8_t **out);
/* The same with empty metadata, created at 1. */
size_t cu_build_entry(const char *target, const uq__digest *key,
                      const void *payload, size_t len, uint64_t claimed_len,
                      uint8_t **out);

#endif
