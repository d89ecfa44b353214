/* Internal to lib/cache: what its files share (cache.c the store, entry.c
 * the entry format, layout.c the directories and their trust). */
#ifndef UQ_CACHE_IMPL_H
#define UQ_CACHE_IMPL_H

#include <stdint.h>
#include <sys/stat.h>

#include "lib/cache/cache.h"

/* The entry's directory and file names: "<2 hex>" and "<30 hex>.co". */
void uq__cache_entry_names(const uq__digest *key, char hh[3], char fname[34]);

/* Fills the UQ__CACHE_HEADER_SIZE bytes of an entry's header for the
 * payload (cache.h has the layout). */
void uq__cache_make_header(uint8_t *h, const char *target,
                           const uq__digest *key, const void *payload,
                           size_t len);

/* 1 when the directory open on fd is ours (or root's) and writable by
 * nobody else: loading a code object runs code on the GPU. */
int uq__cache_dir_is_safe(int fd);
/* 1 for a regular file that is ours (or root's) and not world-writable. */
int uq__cache_file_is_safe(const struct stat *st);
/* The status of an errno from writing the cache. */
int uq__cache_status_of_errno(int e);

/* Opens root/v1/<tdir>/<hh> checking every level; with `create`, missing
 * levels below the root are made 0700. Returns the 2-hex directory's fd or
 * a negative status (UQ_ENOENT when a level is missing, UQ_EPERM when one
 * is unsafe). `*unsafe` says which directory was refused. */
int uq__cache_open_entry_dir(const char *root, const char *tdir,
                             const char *hh, int create, const char **unsafe);
/* mkdir -p with 0700 for the levels it creates. Errors are left to the
 * open that follows, which reports them. */
void uq__cache_make_dirs(const char *path);

#endif
