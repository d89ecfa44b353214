/* The content-hashed on-disk code-object store (DESIGN.md, "The code-object
 * cache"). One writable directory plus read-only layers. Every read is
 * verified; a bad entry is a miss. */
#ifndef UQ_CACHE_H
#define UQ_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The cache format's version: written into every entry's header, hashed
 * into every digest, and the name of the layout's directory under a cache
 * root ("v2": UQ__CACHE_VERSION_DIR). Directories of older versions are
 * ignored (uq_cache_legacy_dirs reports them). */
#define UQ__CACHE_FORMAT_VERSION 2

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
/* A cache of read-only layers only (a colon separated list of absolute
 * directories): nothing is ever created, written or removed. UQ_ENOMEM. */
int uq__cache_open_layers(const char *readonly_path, uq__cache **out);
/* uq__cache_open_layers of every existing layer a context with cache
 * directory `dir` searches (uq_cache_layers), in that order, the writable
 * one included but never written: what a lookup that writes nothing (as
 * uq_cache_find) searches. UQ_ENOMEM. lib/cache/layers.c. */
int uq__cache_open_search_layers(const char *dir, uq__cache **out);
void uq__cache_close(uq__cache *c);
/* The writable directory in use, or NULL when none is usable. */
const char *uq__cache_dir(const uq__cache *c);

/* Who built an entry (its provenance), recorded in the entry. NULL strings
 * are stored empty. The file name carries uq__cache_provenance(compiler,
 * options), so one kernel may have an entry per compiler. */
typedef struct uq__cache_meta {
  const char *key_name; /* uq_key_name of the kernel */
  const char *compiler; /* compiler identity, e.g. "nvrtc 12.8" */
  const char *options;  /* the options it was given */
  const char *route;    /* uq__route_name: "nvrtc", "clang", "hiprtc" */
  int64_t created;      /* unix seconds; 0: now */
} uq__cache_meta;

/* XXH3-64 of compiler identity, NUL, options (NULL taken as ""). */
uint64_t uq__cache_provenance(const char *compiler, const char *options);

/* Metadata string limits (a longer one is not storable: UQ_EINVAL). */
#define UQ__CACHE_NAME_FIELD 256
#define UQ__CACHE_COMPILER_FIELD 256
#define UQ__CACHE_OPTIONS_FIELD 2048
#define UQ__CACHE_ROUTE_FIELD 16
/* The most metadata bytes a reader accepts. */
#define UQ__CACHE_MAX_META 4096
#define UQ__CACHE_TARGET_FIELD 48
#define UQ__CACHE_PATH_MAX 4096

/* What a verified header says. */
typedef struct uq__cache_entry_info {
  char target[UQ__CACHE_TARGET_FIELD]; /* NUL-terminated when the header parsed */
  uq__digest key;
  uint64_t payload_len;
  int64_t created;
  uint64_t provenance;
  char key_name[UQ__CACHE_NAME_FIELD];
  char compiler[UQ__CACHE_COMPILER_FIELD];
  char options[UQ__CACHE_OPTIONS_FIELD];
  char route[UQ__CACHE_ROUTE_FIELD];
} uq__cache_entry_info;

/* The entry a lookup found: its file and header. */
typedef struct uq__cache_found {
  char path[UQ__CACHE_PATH_MAX];
  uq__cache_entry_info info;
  /* On a miss: the first entry of the kernel that was refused and why
   * ("<path> is corrupt"), else "". */
  char rejected[UQ__CACHE_PATH_MAX + 320];
} uq__cache_found;

/* Looks up the kernel `key` (its digest) of `target`: first the entry
 * whose provenance is `*prefer` (NULL: no preference) in the writable
 * directory then each read-only layer, then any valid entry of the kernel
 * in the same order. `payload` NULL: verify only. 0 and *payload (caller
 * frees with uq__free) on a hit, `found` (may be NULL) filled; UQ_ENOENT on
 * a miss (bad entries are skipped, and removed from the writable
 * directory); UQ_EINVAL for a bad target; UQ_ENOMEM. */
int uq__cache_find(uq__cache *c, const char *target, const uq__digest *key,
                   const uint64_t *prefer, void **payload, size_t *len,
                   uq__cache_found *found);
/* uq__cache_find without a preference or report. */
int uq__cache_get(uq__cache *c, const char *target, const uq__digest *key,
                  void **payload, size_t *len);
/* Publishes an entry atomically in the writable directory, named by the
 * key and meta's provenance (meta NULL: all empty, created now). A failure
 * (read-only, full, no directory) is returned and warned about once per
 * process here; callers go on with the compiled object. */
int uq__cache_put(uq__cache *c, const char *target, const uq__digest *key,
                  const uq__cache_meta *meta, const void *payload, size_t len);

/* The write(2) uq__cache_put writes entries with: a seam for tests that
 * inject ENOSPC, EIO and the like; write itself otherwise. */
extern ssize_t (*uq__cache_write_fn)(int fd, const void *buf, size_t n);

/* Fault injection for tests: when set, every system call the cache makes
 * of class `op` asks it first, and fails with the errno it returns (0:
 * go ahead). NULL (the default) costs one load per call. */
typedef enum {
  UQ__CACHE_OP_OPEN,   /* open/openat of roots, directories and entries */
  UQ__CACHE_OP_MKDIR,  /* mkdir/mkdirat */
  UQ__CACHE_OP_CREATE, /* creating a temporary entry file */
  UQ__CACHE_OP_WRITE,  /* writing it (besides uq__cache_write_fn) */
  UQ__CACHE_OP_RENAME, /* publishing it */
  UQ__CACHE_OP_READ,   /* reading an entry */
  UQ__CACHE_OPS
} uq__cache_op;
extern int (*uq__cache_fault_fn)(uq__cache_op op);
/* 1 with errno set when a fault is injected for `op`; 0 otherwise. */
int uq__cache_inject(uq__cache_op op);

/* The largest payload a reader accepts (a crafted header cannot make it
 * allocate more). */
#define UQ__CACHE_MAX_PAYLOAD ((uint64_t)256 << 20)

/* ---- Internal to cache/ (cache.c and cache_admin.c) and its tests. ---- */

/* Entry file = a fixed header of this size + metadata + the payload; the
 * layout, field by field, is documented beside its code in entry.c. */
#define UQ__CACHE_HEADER_SIZE 128
#define UQ__CACHE_MAGIC "UQJITCO"

/* Reads and verifies the entry open on `fd` (a regular file). `target`,
 * `key` and `provenance` (any may be NULL) must match the header. With `payload` NULL
 * the payload is checksummed in chunks and not kept. 0 when valid;
 * UQ_ECORRUPT when any check fails; UQ_ENOMEM; UQ_EIO on a read error.
 * `info` (may be NULL) gets what the header says once it parsed. */
int uq__cache_read_entry(int fd, const char *target, const uq__digest *key,
                         const uint64_t *provenance, void **payload,
                         size_t *len, uq__cache_entry_info *info);
/* The writable directory for `dir` (NULL or "": the environment's choice);
 * *out is freed with uq__free. UQ_ENOENT when nothing names one. */
int uq__cache_resolve_dir(const char *dir, char **out);
/* Validates a canonical target and writes its directory name (':' -> '.').
 * UQ_EINVAL for an empty, too long or unsafe target ('/', "..", etc.). */
int uq__cache_target_dirname(const char *target,
                             char out[UQ__CACHE_TARGET_FIELD]);
/* 1 for the name of an in-progress (or abandoned) temporary entry. */
int uq__cache_is_temp_name(const char *name);
/* Parses "<2 hex>" + "<30 hex>.<16 hex>.co" back into the digest and the
 * provenance; 0 or UQ_EINVAL. */
int uq__cache_digest_from_names(const char *hexdir, const char *file,
                                uq__digest *out, uint64_t *provenance);

#endif
