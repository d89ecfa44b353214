/* The content-hashed on-disk code-object store (DESIGN.md, "The code-object
 * cache"): opening its layers, reading entries (a bad one is a miss) and
 * publishing them atomically. The entry format is entry.c; the directories
 * and which of them are trusted, layout.c. */
#include "lib/cache/cache_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/env.h"
#include "lib/base/error.h"

/* Temporary files older than this are abandoned by a dead writer. */
#define UQ__CACHE_STALE_TEMP_SECONDS 3600
/* A hit refreshes an entry's mtime when it is older than this. */
#define UQ__CACHE_RECENCY_SECONDS 60

struct uq__cache {
  char *wdir;      /* writable root, NULL when none could be named */
  int wusable;     /* the root existed (or was created) and is safe */
  char **layers;   /* read-only roots, searched after wdir */
  size_t nlayers;
  pthread_mutex_t mu; /* guards swept */
  char **swept;    /* "<target dir>/<2 hex>" already swept in this cache */
  size_t nswept, capswept;
};

/* Warnings are about the machine's setup, so once per process is enough. */
static int warned_unsafe_dir;   /* the writable directory */
static int warned_unsafe_layer; /* a directory on the way to an entry */
static int warned_unsafe_file;  /* an entry file */
static int warned_put;
static int warned_nodir;
static int warned_layer;

/* ---- Open / close -------------------------------------------------------- */

static int add_layer(uq__cache *c, const char *start, size_t len) {
  if (len == 0)
    return 0;
  if (start[0] != '/') {
    uq__warn_once(&warned_layer,
                  "ignoring relative read-only cache layer '%.*s'", (int)len,
                  start);
    return 0;
  }
  char *p = uq__malloc(len + 1);
  if (p == NULL)
    return UQ_ENOMEM;
  memcpy(p, start, len);
  p[len] = '\0';
  while (len > 1 && p[len - 1] == '/')
    p[--len] = '\0';
  if (c->wdir != NULL && strcmp(p, c->wdir) == 0) {
    uq__free(p); /* already searched as the writable layer */
    return 0;
  }
  char **grown = uq__realloc(c->layers, (c->nlayers + 1) * sizeof *grown);
  if (grown == NULL) {
    uq__free(p);
    return UQ_ENOMEM;
  }
  c->layers = grown;
  c->layers[c->nlayers++] = p;
  return 0;
}

/* Adds each directory of a colon separated list; 0 or UQ_ENOMEM. */
static int add_layers(uq__cache *c, const char *ro) {
  while (ro != NULL && *ro != '\0') {
    const char *colon = strchr(ro, ':');
    size_t len = colon != NULL ? (size_t)(colon - ro) : strlen(ro);
    int rc = add_layer(c, ro, len);
    if (rc != 0)
      return rc;
    ro = colon != NULL ? colon + 1 : NULL;
  }
  return 0;
}

int uq__cache_open(const char *dir, const char *readonly_path, uq__cache **out) {
  *out = NULL;
  uq__cache *c = uq__calloc(1, sizeof *c);
  if (c == NULL)
    return uq__errorf(UQ_ENOMEM, "cache: out of memory");
  pthread_mutex_init(&c->mu, NULL);
  int rc = uq__cache_resolve_dir(dir, &c->wdir);
  if (rc == UQ_ENOMEM)
    goto fail;
  if (rc != 0) {
    uq__warn_once(&warned_nodir, "%s; compiled kernels stay in memory only",
                  uq_last_error());
    uq__error_clear();
  } else {
    int made = uq__cache_make_dirs(c->wdir);
    int fd = uq__cache_inject(UQ__CACHE_OP_OPEN)
                 ? -1
                 : open(c->wdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno == ENOENT && made != 0 ? made : errno;
      uq__warn_once(&warned_nodir,
                    "cache directory %s unusable (%s); compiled kernels stay "
                    "in memory only", c->wdir, strerror(e));
    } else {
      struct stat st;
      char why[UQ__CACHE_WHY_MAX];
      c->wusable = fstat(fd, &st) == 0 &&
                   uq__cache_distrust(&st, 1, why) == NULL;
      if (!c->wusable)
        uq__warn_once(&warned_unsafe_dir, "cache directory %s is not used: "
                      "it is %s", c->wdir, why);
      close(fd);
    }
  }
  const char *ro = readonly_path != NULL ? readonly_path
                                         : uq__env_get(UQ__ENV_CACHE_PATH);
  if (add_layers(c, ro) != 0 ||
      (readonly_path == NULL && add_layers(c, uq__cache_system_dir()) != 0))
    goto fail;
  *out = c;
  return 0;
fail:
  uq__cache_close(c);
  return uq__errorf(UQ_ENOMEM, "cache: out of memory");
}

int uq__cache_open_layers(const char *readonly_path, uq__cache **out) {
  *out = NULL;
  uq__cache *c = uq__calloc(1, sizeof *c);
  if (c == NULL)
    return uq__errorf(UQ_ENOMEM, "cache: out of memory");
  pthread_mutex_init(&c->mu, NULL);
  if (add_layers(c, readonly_path) != 0) {
    uq__cache_close(c);
    return uq__errorf(UQ_ENOMEM, "cache: out of memory");
  }
  *out = c;
  return 0;
}

void uq__cache_close(uq__cache *c) {
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->nlayers; i++)
    uq__free(c->layers[i]);
  for (size_t i = 0; i < c->nswept; i++)
    uq__free(c->swept[i]);
  uq__free(c->layers);
  uq__free(c->swept);
  uq__free(c->wdir);
  pthread_mutex_destroy(&c->mu);
  uq__free(c);
}

const char *uq__cache_dir(const uq__cache *c) {
  return c != NULL && c->wusable ? c->wdir : NULL;
}

/* ---- Reading ------------------------------------------------------------ */

/* Removes a bad entry so that the next put replaces it, unless another
 * writer already renamed a fresh file over that name. */
static void remove_bad_entry(int dirfd, const char *name, int fd) {
  struct stat mine, now;
  if (fstat(fd, &mine) != 0 ||
      fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0)
    return;
  if (mine.st_dev == now.st_dev && mine.st_ino == now.st_ino)
    unlinkat(dirfd, name, 0);
}

/* What one lookup asks for. */
typedef struct lookup {
  const char *target, *tdir;
  const uq__digest *key;
  char hh[3], prefix[32], preferred[UQ__CACHE_FNAME_LEN + 1];
  int has_preferred;
  void **payload;
  size_t *len;
  uq__cache_found *found;
} lookup;

static void warn_unsafe_layer(const char *root,
                              const uq__cache_refusal *ref) {
  uq__warn_once(&warned_unsafe_layer, "cache: not loading from %s: '%s' is %s",
                root, ref->level, ref->why);
}

/* Remembers the first entry of the kernel a lookup refused, so that a miss
 * can say why ("corrupt") rather than "not in the cache". */
static void note_rejected(const lookup *q, const char *root,
                          const char *fname, const char *why) {
  if (q->found == NULL || q->found->rejected[0] != '\0')
    return;
  snprintf(q->found->rejected, sizeof q->found->rejected,
           "%s/%s/%s/%s/%s is %s", root, UQ__CACHE_VERSION_DIR, q->tdir,
           q->hh, fname, why);
}

/* One file of a layer's entry directory: 0, UQ_ENOENT, or UQ_ENOMEM. */
static int try_file(const lookup *q, const char *root, int writable,
                    int dirfd, const char *fname) {
  uq__digest named;
  uint64_t prov;
  if (uq__cache_digest_from_names(q->hh, fname, &named, &prov) != 0 ||
      memcmp(named.bytes, q->key->bytes, 16) != 0)
    return UQ_ENOENT;
  int rc = UQ_ENOENT;
  struct stat st;
  char why_buf[UQ__CACHE_WHY_MAX];
  int fd = uq__cache_open_entry_file(dirfd, fname, &st);
  if (fd < 0) {
    /* A link, FIFO, directory or device: the rule names it. */
    if (errno != ENOENT &&
        fstatat(dirfd, fname, &st, AT_SYMLINK_NOFOLLOW) == 0)
      note_rejected(q, root, fname,
                    uq__cache_distrust(&st, 0, why_buf) != NULL
                        ? why_buf
                        : "not openable");
    return UQ_ENOENT;
  }
  const char *why = uq__cache_distrust(&st, 0, why_buf);
  if (why != NULL) {
    uq__warn_once(&warned_unsafe_file, "cache: not loading %s/.../%s: %s",
                  root, fname, why);
    note_rejected(q, root, fname, why);
    goto done;
  }
  uq__cache_entry_info *info = q->found != NULL ? &q->found->info : NULL;
  rc = uq__cache_read_entry(fd, q->target, q->key, &prov, q->payload, q->len,
                            info);
  if (rc == 0) {
    /* Recency for uq_cache_prune's LRU order; best effort. A minute's
     * resolution is plenty and spares most hits a metadata write. */
    if (writable && time(NULL) - st.st_mtime >= UQ__CACHE_RECENCY_SECONDS)
      futimens(fd, NULL);
    if (q->found != NULL)
      snprintf(q->found->path, sizeof q->found->path, "%s/%s/%s/%s/%s", root,
               UQ__CACHE_VERSION_DIR, q->tdir, q->hh, fname);
  } else if (rc != UQ_ENOMEM) {
    note_rejected(q, root, fname,
                  rc == UQ_ECORRUPT ? "corrupt" : "unreadable");
    if (writable && rc == UQ_ECORRUPT)
      remove_bad_entry(dirfd, fname, fd);
    rc = UQ_ENOENT;
  }
done:
  close(fd);
  return rc;
}

/* The kernel's entry names in the directory, each but the preferred one,
 * smallest name first (so a lookup is reproducible), without allocating:
 * a kernel has an entry per compiler, a few at most. 0, UQ_ENOENT or
 * UQ_ENOMEM. */
static int try_any(const lookup *q, const char *root, int writable,
                   int dirfd) {
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return UQ_ENOENT;
  }
  char last[UQ__CACHE_FNAME_LEN + 1] = "", next[UQ__CACHE_FNAME_LEN + 1];
  size_t plen = strlen(q->prefix);
  int rc = UQ_ENOENT;
  while (rc == UQ_ENOENT) {
    struct dirent *e;
    next[0] = '\0';
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
      if (strncmp(e->d_name, q->prefix, plen) != 0 ||
          strlen(e->d_name) != UQ__CACHE_FNAME_LEN ||
          (q->has_preferred && strcmp(e->d_name, q->preferred) == 0) ||
          strcmp(e->d_name, last) <= 0 ||
          (next[0] != '\0' && strcmp(e->d_name, next) >= 0))
        continue;
      memcpy(next, e->d_name, UQ__CACHE_FNAME_LEN + 1);
    }
    if (next[0] == '\0')
      break;
    rc = try_file(q, root, writable, dirfd, next);
    memcpy(last, next, sizeof last);
  }
  closedir(d);
  return rc;
}

/* One layer's lookup (`any` 0: the preferred entry only, else the rest):
 * 0, UQ_ENOENT, or UQ_ENOMEM. */
static int get_from(const lookup *q, const char *root, int writable,
                    int any) {
  uq__cache_refusal ref;
  if (!any && !q->has_preferred)
    return UQ_ENOENT;
  int dirfd = uq__cache_open_entry_dir(root, q->tdir, q->hh, 0, &ref);
  if (dirfd < 0) {
    if (ref.level != NULL) {
      warn_unsafe_layer(root, &ref);
      if (q->found != NULL && q->found->rejected[0] == '\0')
        snprintf(q->found->rejected, sizeof q->found->rejected,
                 "%s is not trusted: '%s' is %s", root, ref.level, ref.why);
    }
    return UQ_ENOENT;
  }
  int rc = any ? try_any(q, root, writable, dirfd)
               : try_file(q, root, writable, dirfd, q->preferred);
  close(dirfd);
  return rc;
}

int uq__cache_find(uq__cache *c, const char *target, const uq__digest *key,
                   const uint64_t *prefer, void **payload, size_t *len,
                   uq__cache_found *found) {
  char tdir[UQ__CACHE_TARGET_FIELD];
  lookup q;
  if (payload != NULL)
    *payload = NULL;
  if (len != NULL)
    *len = 0;
  int rc = uq__cache_target_dirname(target, tdir);
  if (rc != 0)
    return rc;
  memset(&q, 0, sizeof q);
  if (found != NULL)
    found->rejected[0] = '\0';
  q.target = target;
  q.tdir = tdir;
  q.key = key;
  q.payload = payload;
  q.len = len;
  q.found = found;
  q.has_preferred = prefer != NULL;
  uq__cache_entry_names(key, prefer != NULL ? *prefer : 0, q.hh, q.preferred,
                        q.prefix);
  /* The preferred entry in every layer before any other entry. */
  for (int any = 0; any < 2; any++) {
    if (c->wusable) {
      rc = get_from(&q, c->wdir, 1, any);
      if (rc != UQ_ENOENT)
        return rc == UQ_ENOMEM ? uq__errorf(rc, "cache: out of memory") : rc;
    }
    for (size_t i = 0; i < c->nlayers; i++) {
      rc = get_from(&q, c->layers[i], 0, any);
      if (rc != UQ_ENOENT)
        return rc == UQ_ENOMEM ? uq__errorf(rc, "cache: out of memory") : rc;
    }
  }
  return UQ_ENOENT;
}

int uq__cache_get(uq__cache *c, const char *target, const uq__digest *key,
                  void **payload, size_t *len) {
  return uq__cache_find(c, target, key, NULL, payload, len, NULL);
}

/* ---- Writing ------------------------------------------------------------ */

ssize_t (*uq__cache_write_fn)(int, const void *, size_t) = write;

static int write_full(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t w = uq__cache_inject(UQ__CACHE_OP_WRITE)
                    ? -1
                    : uq__cache_write_fn(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    if (w == 0) {
      errno = ENOSPC;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Temporary files of writers that died; fresh ones may belong to a live
 * writer and are left alone. */
static void sweep_stale_temps(int dirfd) {
  int fd = dup(dirfd);
  if (fd < 0)
    return;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (!uq__cache_is_temp_name(e->d_name))
      continue;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (now - st.st_mtime > UQ__CACHE_STALE_TEMP_SECONDS)
      unlinkat(dirfd, e->d_name, 0);
  }
  closedir(d);
}

/* 1 the first time this cache writes into "<tdir>/<hh>". */
static int first_write_here(uq__cache *c, const char *tdir, const char *hh) {
  char name[UQ__CACHE_TARGET_FIELD + 4];
  snprintf(name, sizeof name, "%s/%s", tdir, hh);
  int first = 1;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->nswept && first; i++)
    if (strcmp(c->swept[i], name) == 0)
      first = 0;
  if (first) {
    if (c->nswept == c->capswept) {
      size_t cap = c->capswept ? 2 * c->capswept : 16;
      char **grown = uq__realloc(c->swept, cap * sizeof *grown);
      if (grown != NULL) {
        c->swept = grown;
        c->capswept = cap;
      }
    }
    /* Without memory we simply sweep again next time. */
    if (c->nswept < c->capswept) {
      char *s = uq__strdup(name);
      if (s != NULL)
        c->swept[c->nswept++] = s;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return first;
}

int uq__cache_put(uq__cache *c, const char *target, const uq__digest *key,
                  const uq__cache_meta *meta, const void *payload, size_t len) {
  char tdir[UQ__CACHE_TARGET_FIELD], hh[3], fname[UQ__CACHE_FNAME_LEN + 1];
  char tmp[PATH_MAX];
  uint8_t h[UQ__CACHE_HEADER_SIZE + UQ__CACHE_MAX_META];
  int dirfd = -1, fd = -1, created = 0, rc;
  uq__cache_refusal ref;
  rc = uq__cache_target_dirname(target, tdir);
  if (rc != 0)
    return rc;
  if (len > UQ__CACHE_MAX_PAYLOAD || (payload == NULL && len > 0)) {
    rc = uq__errorf(UQ_EINVAL, "cache: payload of %zu bytes not storable",
                    len);
    goto fail;
  }
  size_t hsize = uq__cache_make_header(h, target, key, meta, payload, len);
  if (hsize == 0) {
    rc = uq__errorf(UQ_EINVAL, "cache: entry metadata too long");
    goto fail;
  }
  if (c->wdir == NULL) /* uq__cache_open warned already */
    return uq__errorf(UQ_EIO, "cache: no writable cache directory");
  uq__cache_entry_names(key, uq__cache_provenance(meta != NULL ? meta->compiler
                                                               : NULL,
                                                  meta != NULL ? meta->options
                                                               : NULL),
                        hh, fname, NULL);
  int made = uq__cache_make_dirs(c->wdir);
  dirfd = uq__cache_open_entry_dir(c->wdir, tdir, hh, 1, &ref);
  if (dirfd < 0) {
    int e = errno == ENOENT && made != 0 ? made : errno;
    rc = dirfd == UQ_ENOENT ? uq__cache_status_of_errno(e) : dirfd;
    if (ref.level != NULL)
      uq__errorf(rc, "cache: %s: '%s' is %s", c->wdir, ref.level, ref.why);
    else
      uq__errorf(rc, "cache: cannot create %s/%s/%s/%s: %s", c->wdir,
                 UQ__CACHE_VERSION_DIR, tdir, hh, strerror(e));
    goto fail;
  }
  if (first_write_here(c, tdir, hh))
    sweep_stale_temps(dirfd);
  int n = snprintf(tmp, sizeof tmp, "%s/%s/%s/%s/.%s.tmp.XXXXXX", c->wdir,
                   UQ__CACHE_VERSION_DIR, tdir, hh, fname);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    rc = uq__errorf(UQ_EIO, "cache: path too long under %s", c->wdir);
    goto fail;
  }
  fd = uq__cache_inject(UQ__CACHE_OP_CREATE) ? -1 : mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    rc = uq__errorf(uq__cache_status_of_errno(errno), "cache: cannot create a file in "
                    "%s/%s/%s/%s: %s", c->wdir, UQ__CACHE_VERSION_DIR, tdir, hh,
                    strerror(errno));
    goto fail;
  }
  created = 1;
  if (write_full(fd, h, hsize) != 0 ||
      (len > 0 && write_full(fd, payload, len) != 0) || fsync(fd) != 0) {
    rc = uq__errorf(uq__cache_status_of_errno(errno), "cache: writing %s: %s", tmp,
                    strerror(errno));
    goto fail;
  }
  /* Entries are not secret; the 0700 directories keep them private. */
  fchmod(fd, 0644);
  if (close(fd) != 0) {
    fd = -1;
    rc = uq__errorf(uq__cache_status_of_errno(errno), "cache: writing %s: %s", tmp,
                    strerror(errno));
    goto fail;
  }
  fd = -1;
  const char *tmpbase = strrchr(tmp, '/') + 1;
  int moved = uq__cache_inject(UQ__CACHE_OP_RENAME)
                  ? -1
                  : renameat(dirfd, tmpbase, dirfd, fname);
  if (moved != 0 && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
    /* A directory at the entry's path: never an entry, so remove it. */
    (void)uq__cache_remove_tree(dirfd, fname);
    moved = renameat(dirfd, tmpbase, dirfd, fname);
  }
  if (moved != 0) {
    rc = uq__errorf(uq__cache_status_of_errno(errno), "cache: publishing %s: %s", tmp,
                    strerror(errno));
    goto fail;
  }
  fsync(dirfd); /* best effort: the entry is valid either way */
  close(dirfd);
  return 0;
fail:
  if (fd >= 0) {
    close(fd);
  }
  if (dirfd >= 0) {
    if (created)
      unlinkat(dirfd, strrchr(tmp, '/') + 1, 0);
    close(dirfd);
  }
  uq__warn_once(&warned_put, "%s (further cache write failures not shown; "
                "kernels still run)", uq_last_error());
  return rc;
}
