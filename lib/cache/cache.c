/* The content-hashed on-disk code-object store (DESIGN.md, "The code-object
 * cache"). Paths are walked with openat() from each layer's root so that the
 * directories checked for safety are the ones the entry is read from. */
#include "lib/cache/cache.h"

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

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

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

/* ---- Digest ---------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static uint64_t get_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

void uq__cache_digest(const uq__cache_field *fields, size_t n, uq__digest *out) {
  XXH3_state_t st;
  uint8_t word[8];
  XXH3_128bits_reset(&st);
  put_le32(word, UQ__CACHE_FORMAT_VERSION);
  XXH3_128bits_update(&st, word, 4);
  for (size_t i = 0; i < n; i++) {
    const char *label = fields[i].label != NULL ? fields[i].label : "";
    size_t llen = strlen(label);
    put_le64(word, llen);
    XXH3_128bits_update(&st, word, 8);
    XXH3_128bits_update(&st, label, llen);
    put_le64(word, fields[i].len);
    XXH3_128bits_update(&st, word, 8);
    if (fields[i].len > 0)
      XXH3_128bits_update(&st, fields[i].data, fields[i].len);
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
  memcpy(out->bytes, c.digest, 16);
}

void uq__digest_hex(const uq__digest *d, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[d->bytes[i] >> 4];
    out[2 * i + 1] = hex[d->bytes[i] & 15];
  }
  out[32] = '\0';
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int uq__cache_digest_from_names(const char *hexdir, const char *file,
                                uq__digest *out) {
  char hex[33];
  if (strlen(hexdir) != 2 || strlen(file) != 33 || strcmp(file + 30, ".co") != 0)
    return UQ_EINVAL;
  memcpy(hex, hexdir, 2);
  memcpy(hex + 2, file, 30);
  for (int i = 0; i < 16; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return UQ_EINVAL;
    out->bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

/* ---- Names ------------------------------------------------------------- */

int uq__cache_target_dirname(const char *target,
                             char out[UQ__CACHE_TARGET_FIELD]) {
  if (target == NULL)
    return uq__errorf(UQ_EINVAL, "cache: target is NULL");
  size_t n = strlen(target);
  if (n == 0 || n >= UQ__CACHE_TARGET_FIELD)
    return uq__errorf(UQ_EINVAL, "cache: target length %zu not in 1..%d", n,
                      UQ__CACHE_TARGET_FIELD - 1);
  /* The target becomes a directory name: only the characters canonical
   * targets use, so it can never climb out of the cache. */
  if (target[0] == '.' || strstr(target, "..") != NULL)
    return uq__errorf(UQ_EINVAL, "cache: unsafe target '%s'", target);
  for (size_t i = 0; i < n; i++) {
    char c = target[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '+' ||
             c == '.' || c == ':';
    if (!ok)
      return uq__errorf(UQ_EINVAL, "cache: bad character in target '%s'",
                        target);
    out[i] = c == ':' ? '.' : c;
  }
  out[n] = '\0';
  return 0;
}

int uq__cache_is_temp_name(const char *name) {
  return name[0] == '.' && strstr(name, ".tmp.") != NULL;
}

int uq__cache_resolve_dir(const char *dir, char **out) {
  *out = NULL;
  const char *base = NULL, *suffix = "";
  if (dir != NULL && dir[0] != '\0') {
    base = dir;
  } else if ((base = uq__env_get(UQ__ENV_CACHE_DIR)) != NULL) {
  } else if ((base = uq__env_get(UQ__ENV_XDG_CACHE_HOME)) != NULL) {
    suffix = "/uqjit";
  } else if ((base = uq__env_get(UQ__ENV_HOME)) != NULL) {
    suffix = "/.cache/uqjit";
  } else {
    return uq__errorf(UQ_ENOENT,
                      "no cache directory: set UQJIT_CACHE_DIR or HOME");
  }
  size_t n = strlen(base) + strlen(suffix) + 1;
  char *p = uq__malloc(n);
  if (p == NULL)
    return uq__errorf(UQ_ENOMEM, "cache: out of memory");
  snprintf(p, n, "%s%s", base, suffix);
  /* Trailing slashes would only make paths in messages look odd. */
  for (size_t len = strlen(p); len > 1 && p[len - 1] == '/'; len--)
    p[len - 1] = '\0';
  *out = p;
  return 0;
}

/* ---- Directory safety --------------------------------------------------- */

/* Loading a code object runs code on the GPU: nobody but us (or root) may
 * be able to put files where we read them. */
static int dir_is_safe(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return 0;
  return (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

static int file_is_safe(const struct stat *st) {
  if (!S_ISREG(st->st_mode))
    return 0;
  if (st->st_uid != geteuid() && st->st_uid != 0)
    return 0;
  return (st->st_mode & S_IWOTH) == 0;
}

/* Maps an errno from writing the cache to a status. */
static int status_of_errno(int e) {
  switch (e) {
  case ENOSPC:
  case EFBIG:
#ifdef EDQUOT
  case EDQUOT:
#endif
    return UQ_ENOSPC;
  case EACCES:
  case EPERM:
  case EROFS:
    return UQ_EPERM;
  case ENOMEM:
    return UQ_ENOMEM;
  default:
    return UQ_EIO;
  }
}

/* Opens root/v1/<tdir>/<hh> checking every level; with `create`, missing
 * levels below the root are made 0700. Returns the 2-hex directory's fd or
 * a negative status (UQ_ENOENT when a level is missing, UQ_EPERM when one
 * is unsafe). `*unsafe` says which directory was refused. */
static int open_entry_dir(const char *root, const char *tdir, const char *hh,
                          int create, const char **unsafe) {
  const char *levels[3] = {"v1", tdir, hh};
  *unsafe = NULL;
  int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT || errno == ENOTDIR ? UQ_ENOENT
                                               : status_of_errno(errno);
  if (!dir_is_safe(fd)) {
    close(fd);
    *unsafe = root;
    return UQ_EPERM;
  }
  for (int i = 0; i < 3; i++) {
    if (create && mkdirat(fd, levels[i], 0700) != 0 && errno != EEXIST) {
      int e = errno;
      close(fd);
      return e == ENOENT ? UQ_EIO : status_of_errno(e);
    }
    int next = openat(fd, levels[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(fd);
    if (next < 0)
      return e == ENOENT || e == ENOTDIR ? UQ_ENOENT : status_of_errno(e);
    if (!dir_is_safe(next)) {
      close(next);
      *unsafe = levels[i];
      return UQ_EPERM;
    }
    fd = next;
  }
  return fd;
}

/* mkdir -p with 0700 for the levels we create. Errors are left to the
 * open that follows, which reports them. */
static void make_dirs(const char *path) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char saved = buf[i];
      buf[i] = '\0';
      (void)mkdir(buf, 0700);
      buf[i] = saved;
    }
  }
}

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
    make_dirs(c->wdir);
    int fd = open(c->wdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      uq__warn_once(&warned_nodir,
                    "cache directory %s unusable (%s); compiled kernels stay "
                    "in memory only", c->wdir, strerror(errno));
    } else {
      c->wusable = dir_is_safe(fd);
      if (!c->wusable)
        uq__warn_once(&warned_unsafe_dir,
                      "cache directory %s is writable by another user or not "
                      "ours: not used", c->wdir);
      close(fd);
    }
  }
  const char *ro = readonly_path != NULL ? readonly_path
                                         : uq__env_get(UQ__ENV_CACHE_PATH);
  while (ro != NULL && *ro != '\0') {
    const char *colon = strchr(ro, ':');
    size_t len = colon != NULL ? (size_t)(colon - ro) : strlen(ro);
    rc = add_layer(c, ro, len);
    if (rc != 0)
      goto fail;
    ro = colon != NULL ? colon + 1 : NULL;
  }
  *out = c;
  return 0;
fail:
  uq__cache_close(c);
  return uq__errorf(UQ_ENOMEM, "cache: out of memory");
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

static int read_full(int fd, void *buf, size_t n, off_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, n, off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return UQ_EIO;
    if (r == 0)
      return UQ_ECORRUPT; /* shrank under us */
    p += r;
    off += r;
    n -= (size_t)r;
  }
  return 0;
}

static void make_header(uint8_t *h, const char *target, const uq__digest *key,
                        const void *payload, size_t len) {
  memset(h, 0, UQ__CACHE_HEADER_SIZE);
  memcpy(h, UQ__CACHE_MAGIC, 8); /* includes the NUL */
  put_le32(h + 8, UQ__CACHE_FORMAT_VERSION);
  put_le32(h + 12, UQ__CACHE_HEADER_SIZE);
  put_le64(h + 16, len);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(payload, len));
  memcpy(h + 24, c.digest, 16);
  memcpy(h + 40, key->bytes, 16);
  memcpy(h + 56, target, strlen(target));
  put_le64(h + 104, XXH3_64bits(h, 104));
}

int uq__cache_read_entry(int fd, const char *target, const uq__digest *key,
                         void **payload, size_t *len,
                         uq__cache_entry_info *info) {
  uint8_t h[UQ__CACHE_HEADER_SIZE];
  struct stat st;
  void *buf = NULL;
  int rc;
  if (payload != NULL)
    *payload = NULL;
  if (len != NULL)
    *len = 0;
  if (fstat(fd, &st) != 0)
    return UQ_EIO;
  /* The size is checked before the header is trusted, so a crafted length
   * can never drive an allocation. */
  if (!S_ISREG(st.st_mode) || st.st_size < UQ__CACHE_HEADER_SIZE ||
      (uint64_t)st.st_size - UQ__CACHE_HEADER_SIZE > UQ__CACHE_MAX_PAYLOAD)
    return UQ_ECORRUPT;
  rc = read_full(fd, h, sizeof h, 0);
  if (rc != 0)
    return rc;
  if (memcmp(h, UQ__CACHE_MAGIC, 8) != 0 ||
      get_le32(h + 8) != UQ__CACHE_FORMAT_VERSION ||
      get_le32(h + 12) != UQ__CACHE_HEADER_SIZE ||
      get_le64(h + 104) != XXH3_64bits(h, 104))
    return UQ_ECORRUPT;
  uint64_t plen = get_le64(h + 16);
  if (plen != (uint64_t)st.st_size - UQ__CACHE_HEADER_SIZE)
    return UQ_ECORRUPT;
  /* The target field: a NUL-terminated name with zero padding. */
  const char *tf = (const char *)h + 56;
  size_t tlen = strnlen(tf, UQ__CACHE_TARGET_FIELD);
  if (tlen == 0 || tlen == UQ__CACHE_TARGET_FIELD)
    return UQ_ECORRUPT;
  for (size_t i = tlen; i < UQ__CACHE_TARGET_FIELD; i++)
    if (tf[i] != '\0')
      return UQ_ECORRUPT;
  if (info != NULL) {
    memcpy(info->target, tf, tlen + 1);
    memcpy(info->key.bytes, h + 40, 16);
    info->payload_len = plen;
  }
  if (target != NULL && strcmp(target, tf) != 0)
    return UQ_ECORRUPT;
  if (key != NULL && memcmp(key->bytes, h + 40, 16) != 0)
    return UQ_ECORRUPT;

  XXH128_canonical_t sum;
  if (payload != NULL) {
    buf = uq__malloc((size_t)plen);
    if (buf == NULL)
      return UQ_ENOMEM;
    rc = read_full(fd, buf, (size_t)plen, UQ__CACHE_HEADER_SIZE);
    if (rc != 0)
      goto done;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(buf, (size_t)plen));
  } else {
    uint8_t chunk[16384];
    XXH3_state_t hs;
    XXH3_128bits_reset(&hs);
    for (uint64_t off = 0; off < plen;) {
      size_t n = plen - off < sizeof chunk ? (size_t)(plen - off) : sizeof chunk;
      rc = read_full(fd, chunk, n, (off_t)(UQ__CACHE_HEADER_SIZE + off));
      if (rc != 0)
        return rc;
      XXH3_128bits_update(&hs, chunk, n);
      off += n;
    }
    XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(&hs));
  }
  if (memcmp(sum.digest, h + 24, 16) != 0) {
    rc = UQ_ECORRUPT;
    goto done;
  }
  if (payload != NULL) {
    *payload = buf;
    buf = NULL;
  }
  if (len != NULL)
    *len = (size_t)plen;
  rc = 0;
done:
  uq__free(buf);
  return rc;
}

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

/* One layer's lookup: 0, UQ_ENOENT, or UQ_ENOMEM. */
static int get_from(const char *root, int writable, const char *target,
                    const char *tdir, const char *hh, const char *fname,
                    const uq__digest *key, void **payload, size_t *len) {
  const char *unsafe;
  int dirfd = open_entry_dir(root, tdir, hh, 0, &unsafe);
  if (dirfd < 0) {
    if (unsafe != NULL)
      uq__warn_once(&warned_unsafe_layer,
                    "cache: not loading from %s: '%s' is writable by another "
                    "user or owned by one", root, unsafe);
    return UQ_ENOENT;
  }
  int rc = UQ_ENOENT;
  int fd = openat(dirfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    goto done;
  struct stat st;
  if (fstat(fd, &st) != 0)
    goto done;
  if (!file_is_safe(&st)) {
    if (S_ISREG(st.st_mode))
      uq__warn_once(&warned_unsafe_file,
                    "cache: not loading %s/.../%s: writable by others or not "
                    "ours", root, fname);
    goto done;
  }
  rc = uq__cache_read_entry(fd, target, key, payload, len, NULL);
  if (rc == 0) {
    /* Recency for uq_cache_prune's LRU order; best effort. A minute's
     * resolution is plenty and spares most hits a metadata write. */
    if (writable && time(NULL) - st.st_mtime >= UQ__CACHE_RECENCY_SECONDS)
      futimens(fd, NULL);
  } else if (rc != UQ_ENOMEM) {
    if (writable && rc == UQ_ECORRUPT)
      remove_bad_entry(dirfd, fname, fd);
    rc = UQ_ENOENT;
  }
done:
  if (fd >= 0)
    close(fd);
  close(dirfd);
  return rc;
}

static void entry_names(const uq__digest *key, char hh[3], char fname[34]) {
  char hex[33];
  uq__digest_hex(key, hex);
  memcpy(hh, hex, 2);
  hh[2] = '\0';
  snprintf(fname, 34, "%s.co", hex + 2);
}

int uq__cache_get(uq__cache *c, const char *target, const uq__digest *key,
                  void **payload, size_t *len) {
  char tdir[UQ__CACHE_TARGET_FIELD], hh[3], fname[34];
  *payload = NULL;
  *len = 0;
  int rc = uq__cache_target_dirname(target, tdir);
  if (rc != 0)
    return rc;
  entry_names(key, hh, fname);
  if (c->wusable) {
    rc = get_from(c->wdir, 1, target, tdir, hh, fname, key, payload, len);
    if (rc != UQ_ENOENT)
      return rc == UQ_ENOMEM ? uq__errorf(rc, "cache: out of memory") : rc;
  }
  for (size_t i = 0; i < c->nlayers; i++) {
    rc = get_from(c->layers[i], 0, target, tdir, hh, fname, key, payload, len);
    if (rc != UQ_ENOENT)
      return rc == UQ_ENOMEM ? uq__errorf(rc, "cache: out of memory") : rc;
  }
  return UQ_ENOENT;
}

/* ---- Writing ------------------------------------------------------------ */

static int write_full(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
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
                  const void *payload, size_t len) {
  char tdir[UQ__CACHE_TARGET_FIELD], hh[3], fname[34];
  char tmp[PATH_MAX];
  uint8_t h[UQ__CACHE_HEADER_SIZE];
  int dirfd = -1, fd = -1, created = 0, rc;
  const char *unsafe = NULL;
  rc = uq__cache_target_dirname(target, tdir);
  if (rc != 0)
    return rc;
  if (len > UQ__CACHE_MAX_PAYLOAD || (payload == NULL && len > 0)) {
    rc = uq__errorf(UQ_EINVAL, "cache: payload of %zu bytes not storable",
                    len);
    goto fail;
  }
  if (c->wdir == NULL) /* uq__cache_open warned already */
    return uq__errorf(UQ_EIO, "cache: no writable cache directory");
  entry_names(key, hh, fname);
  make_dirs(c->wdir);
  dirfd = open_entry_dir(c->wdir, tdir, hh, 1, &unsafe);
  if (dirfd < 0) {
    rc = dirfd == UQ_ENOENT ? UQ_EIO : dirfd;
    if (unsafe != NULL)
      uq__errorf(rc, "cache: %s: '%s' is writable by another user or owned "
                 "by one", c->wdir, unsafe);
    else
      uq__errorf(rc, "cache: cannot create %s/v1/%s/%s", c->wdir, tdir, hh);
    goto fail;
  }
  if (first_write_here(c, tdir, hh))
    sweep_stale_temps(dirfd);
  int n = snprintf(tmp, sizeof tmp, "%s/v1/%s/%s/.%s.tmp.XXXXXX", c->wdir,
                   tdir, hh, fname);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    rc = uq__errorf(UQ_EIO, "cache: path too long under %s", c->wdir);
    goto fail;
  }
  fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    rc = uq__errorf(status_of_errno(errno), "cache: cannot create a file in "
                    "%s/v1/%s/%s: %s", c->wdir, tdir, hh, strerror(errno));
    goto fail;
  }
  created = 1;
  make_header(h, target, key, payload, len);
  if (write_full(fd, h, sizeof h) != 0 ||
      (len > 0 && write_full(fd, payload, len) != 0) || fsync(fd) != 0) {
    rc = uq__errorf(status_of_errno(errno), "cache: writing %s: %s", tmp,
                    strerror(errno));
    goto fail;
  }
  /* Entries are not secret; the 0700 directories keep them private. */
  fchmod(fd, 0644);
  if (close(fd) != 0) {
    fd = -1;
    rc = uq__errorf(status_of_errno(errno), "cache: writing %s: %s", tmp,
                    strerror(errno));
    goto fail;
  }
  fd = -1;
  const char *tmpbase = strrchr(tmp, '/') + 1;
  if (renameat(dirfd, tmpbase, dirfd, fname) != 0) {
    rc = uq__errorf(status_of_errno(errno), "cache: publishing %s: %s", tmp,
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
