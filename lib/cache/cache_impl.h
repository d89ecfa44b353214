/* Internal to lib/cache: what its files share (cache.c the store, entry.c
 * the entry format, layout.c the directories and their trust). */
#ifndef UQ_CACHE_IMPL_H
#define UQ_CACHE_IMPL_H

#include <stdint.h>
#include <sys/stat.h>

#include "lib/cache/cache.h"

/* The layout's version directory under a cache root. */
#define UQ__CACHE_VERSION_DIR "v2"
/* Length of an entry's file name: "<30 hex>.<16 hex>.co". */
#define UQ__CACHE_FNAME_LEN 50

/* The entry's directory and file names: "<2 hex>" and
 * "<30 hex>.<16 hex of provenance>.co"; `prefix` (may be NULL) gets the
 * "<30 hex>." every entry of the kernel starts with. */
void uq__cache_entry_names(const uq__digest *key, uint64_t provenance,
                           char hh[3], char fname[UQ__CACHE_FNAME_LEN + 1],
                           char prefix[32]);

/* Fills an entry's header and metadata (cache.h has the layout) into `h`,
 * which holds UQ__CACHE_HEADER_SIZE + UQ__CACHE_MAX_META bytes. Returns the
 * header size H, or 0 when a metadata string is too long. */
size_t uq__cache_make_header(uint8_t *h, const char *target,
                             const uq__digest *key, const uq__cache_meta *meta,
                             const void *payload, size_t len);

/* 1 when the directory open on fd is ours (or root's) and writable by
 * nobody else: loading a code object runs code on the GPU. */
int uq__cache_dir_is_safe(int fd);
/* 1 for a regular file that is ours (or root's) and not world-writable. */
int uq__cache_file_is_safe(const struct stat *st);
/* The status of an errno from writing the cache. */
int uq__cache_status_of_errno(int e);

/* Opens root/v2/<tdir>/<hh> checking every level; with `create`, missing
 * levels below the root are made 0700. Returns the 2-hex directory's fd or
 * a negative status (UQ_ENOENT when a level is missing, UQ_EPERM when one
 * is unsafe). `*unsafe` says which directory was refused. */
int uq__cache_open_entry_dir(const char *root, const char *tdir,
                             const char *hh, int create, const char **unsafe);
/* mkdir -p with 0700 for the levels it creates. Errors are left to the
 * open that follows, which reports them. */
void uq__cache_make_dirs(const char *path);

#endif
