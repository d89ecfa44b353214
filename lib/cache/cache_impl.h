/* Internal to lib/cache: what its files share (cache.c the store, entry.c
 * the entry format, layout.c the directories and their trust). */
#ifndef UQ_CACHE_IMPL_H
#define UQ_CACHE_IMPL_H

#include <stdint.h>
#include <sys/stat.h>

#include "lib/cache/cache.h"

/* The layout's version directory under a cache root: "v" and the format
 * version (UQ__CACHE_FORMAT_VERSION, a plain integer), e.g. "v2". */
#define UQ__CACHE_STR_(x) #x
#define UQ__CACHE_STR(x) UQ__CACHE_STR_(x)
#define UQ__CACHE_VERSION_DIR "v" UQ__CACHE_STR(UQ__CACHE_FORMAT_VERSION)
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

/* Room for the words of uq__cache_distrust. */
#define UQ__CACHE_WHY_MAX 160

/* The trust rule for the cache's directories (want_dir 1) and entry files
 * (want_dir 0), applied by the loader, put, verify, prune and ls alike:
 * NULL when `st` (from fstat or fstatat without following links) is
 * trusted, else `why`, filled with the one condition that failed ("a
 * symbolic link", "a FIFO, not a regular file", "a directory (mode 0700)
 * owned by uid 1000, not this user (uid 0) or root", "a file writable by
 * its group (mode 0664)"). docs/RELIABILITY.md, "Trust model". */
const char *uq__cache_distrust(const struct stat *st, int want_dir,
                               char why[UQ__CACHE_WHY_MAX]);
/* uq__cache_distrust of the directory open on fd is NULL. */
int uq__cache_dir_is_safe(int fd);
/* uq__cache_distrust of an entry file's stat is NULL. */
int uq__cache_file_is_safe(const struct stat *st);
/* Opens an entry file for reading without ever blocking (a FIFO) or
 * following a link, and fstats it into *st: the fd, or -1 (errno) when it
 * cannot be opened or is not a regular file. */
int uq__cache_open_entry_file(int dirfd, const char *name, struct stat *st);
/* The status of an errno from writing the cache. */
int uq__cache_status_of_errno(int e);

/* A directory uq__cache_open_entry_dir refused, and why. */
typedef struct uq__cache_refusal {
  const char *level;            /* the root's path or a level's name; NULL:
                                   none was refused */
  char why[UQ__CACHE_WHY_MAX];  /* the rule it broke (and, for a writer,
                                   why it could not be repaired) */
} uq__cache_refusal;

/* Opens root/v2/<tdir>/<hh> checking every level; with `create`, missing
 * levels below the root are made 0700. Returns the 2-hex directory's fd or
 * a negative status (UQ_ENOENT when a level is missing, UQ_EPERM when one
 * is untrusted, *ref naming it and the rule) with errno set. With `create`
 * the writer repairs a level below the root: its own directory that group
 * or others may write is made 0700; a symbolic link, a file, or another
 * user's directory is removed with its contents and made again. */
int uq__cache_open_entry_dir(const char *root, const char *tdir,
                             const char *hh, int create,
                             uq__cache_refusal *ref);
/* mkdir -p with 0700 for the levels it creates. Returns the errno of the
 * deepest level that could not be made (0: all exist), for the open that
 * follows to report in place of its ENOENT. */
int uq__cache_make_dirs(const char *path);
/* Removes `name` under dirfd: a file, link or FIFO, or a directory with
 * what it holds at any depth (uq__os_remove_at: never following a link).
 * 0, or -1 with errno set. */
int uq__cache_remove_tree(int dirfd, const char *name);

/* The system layer: <prefix>/<datadir>/uqjit/cache seen from the loaded
 * libuqjit (the configured absolute path when linked statically).
 * Static; computed once. lib/cache/layers.c. */
const char *uq__cache_system_dir(void);

#endif
