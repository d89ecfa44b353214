/* The content-hashed on-disk code-object store (DESIGN.md, "The code-object
 * cache"). One writable directory plus read-only layers. Every read is
 * verified; a bad entry is a miss. */
#ifndef UQ_CACHE_H
#define UQ_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define UQ__CACHE_FORMAT_VERSION 1

typedef struct uq__digest {
  uint8_t bytes[16]; /* XXH3-128, big-endian canonical form */
} uq__digest;

/* One labeled input of a digest. Fields are length-prefixed when hashed, so
 * no two different field lists hash alike by concatenation. */
typedef struct uq__cache_field {
  const char *label;
  const void *data;
  size_t len;
} uq__cache_field;

/* Digest of the cache format version followed by the fields. */
void uq__cache_digest(const uq__cache_field *fields, size_t n, uq__digest *out);
/* 32 lowercase hex characters + NUL. */
void uq__digest_hex(const uq__digest *d, char out[33]);

typedef struct uq__cache uq__cache;

/* Opens the cache: `dir` is the writable directory (NULL: UQJIT_CACHE_DIR,
 * else $XDG_CACHE_HOME/uqjit, else ~/.cache/uqjit); `readonly_path` a colon
 * separated list of read-only layers (NULL: UQJIT_CACHE_PATH). Never fails
 * because a directory is missing or unwritable: it degrades to fewer layers
 * and warns once. UQ_ENOMEM only. */
int uq__cache_open(const char *dir, const char *readonly_path, uq__cache **out);
void uq__cache_close(uq__cache *c);
/* The writable directory in use, or NULL when none is usable. */
const char *uq__cache_dir(const uq__cache *c);

/* Looks the entry up in the writable directory then in each read-only layer.
 * 0 and *payload (caller frees with uq__free) on a hit; UQ_ENOENT on a miss
 * (including a bad entry, which is removed from the writable directory). */
int uq__cache_get(uq__cache *c, const char *target, const uq__digest *key,
                  void **payload, size_t *len);
/* Publishes an entry atomically in the writable directory. A failure
 * (read-only, full, no directory) is returned but callers treat it as a
 * warning: the compiled object is still used. */
int uq__cache_put(uq__cache *c, const char *target, const uq__digest *key,
                  const void *payload, size_t len);

/* The largest payload a reader accepts (a crafted header cannot make it
 * allocate more). */
#define UQ__CACHE_MAX_PAYLOAD ((uint64_t)256 << 20)

#endif
