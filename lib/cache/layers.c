/* The cache's layers as a whole: which directories a context searches and
 * in what order (the writable one, UQJIT_CACHE_PATH, the system layer
 * under the install prefix), a read-only cache over all of them, and
 * making a directory readable by every user for an image
 * (uq_cache_share). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/uq_config.h"
#include "lib/cache/cache_impl.h"
#include "uqjit.h"

/* ---- The system layer ---------------------------------------------------- */

static pthread_once_t system_once = PTHREAD_ONCE_INIT;
static char system_dir[PATH_MAX];

/* Drops "." and "x/.." from an absolute path, in place (no file system
 * access: the directory need not exist). */
static void normalise(char *path) {
  char *out = path;
  for (char *p = path; *p != '\0';) {
    while (*p == '/')
      p++;
    char *end = strchr(p, '/');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.') {
      while (out > path && *--out != '/')
        ;
    } else if (len > 0 && !(len == 1 && p[0] == '.')) {
      *out++ = '/';
      memmove(out, p, len);
      out += len;
    }
    p += len;
  }
  if (out == path)
    *out++ = '/';
  *out = '\0';
}

/* The shared library uqjit runs from, seen through dladdr: when it lies
 * in <root>/<libdir> (an install, wherever it was moved), the layer is
 * <root>/<datadir>/uqjit/cache. Otherwise (a build tree, a static link)
 * the configured <prefix>/<datadir>/uqjit/cache. */
static void find_system_dir(void) {
  snprintf(system_dir, sizeof system_dir, "%s", UQ_SYSTEM_CACHE);
  const char *libdir = UQ_LIBDIR_IN_PREFIX, *datadir = UQ_DATADIR_IN_PREFIX;
  Dl_info info;
  if (libdir[0] == '\0' || datadir[0] == '\0' ||
      dladdr((void *)find_system_dir, &info) == 0 || info.dli_fname == NULL)
    return;
  const char *base = strrchr(info.dli_fname, '/');
  if (base == NULL || strncmp(base + 1, "libuqjit.so", 11) != 0)
    return;
  char *lib = realpath(info.dli_fname, NULL);
  if (lib == NULL)
    return;
  *strrchr(lib, '/') = '\0';
  size_t n = strlen(lib), m = strlen(libdir);
  if (n > m && lib[n - m - 1] == '/' && strcmp(lib + n - m, libdir) == 0) {
    lib[n - m - 1] = '\0';
    snprintf(system_dir, sizeof system_dir, "%s/%s/uqjit/cache", lib,
             datadir);
  }
  free(lib); /* realpath's */
}

const char *uq__cache_system_dir(void) {
  pthread_once(&system_once, find_system_dir);
  return system_dir;
}

/* ---- uq_cache_layers -------------------------------------------------------- */

/* Which variable named the default writable directory. */
static const char *writable_origin(const char *dir) {
  if (dir != NULL && dir[0] != '\0')
    return "argument";
  if (uq__env_get(UQ__ENV_CACHE_DIR) != NULL)
    return "UQJIT_CACHE_DIR";
  if (uq__env_get(UQ__ENV_XDG_CACHE_HOME) != NULL)
    return "XDG_CACHE_HOME";
  return "HOME";
}

typedef struct layer_list {
  char **paths;
  size_t n;
} layer_list;

/* Calls visit for `path` unless it was listed already. 0, the visitor's
 * non-zero value, or UQ_ENOMEM. */
static int visit_layer(layer_list *seen, const char *path, size_t len,
                       int writable, const char *origin,
                       uq_cache_layer_fn visit, void *user) {
  while (len > 1 && path[len - 1] == '/')
    len--;
  if (len == 0 || path[0] != '/')
    return 0; /* relative layers are ignored, as the loader does */
  for (size_t i = 0; i < seen->n; i++)
    if (strlen(seen->paths[i]) == len && !strncmp(seen->paths[i], path, len))
      return 0;
  char **grown = uq__realloc(seen->paths, (seen->n + 1) * sizeof *grown);
  if (grown == NULL)
    return UQ_ENOMEM;
  seen->paths = grown;
  char *copy = uq__malloc(len + 1);
  if (copy == NULL)
    return UQ_ENOMEM;
  memcpy(copy, path, len);
  copy[len] = '\0';
  seen->paths[seen->n++] = copy;
  struct stat st;
  uq_cache_layer l = {copy, writable, origin,
                      stat(copy, &st) == 0 && S_ISDIR(st.st_mode)};
  return visit(user, &l);
}

static int walk_layers(const char *dir, layer_list *seen,
                       uq_cache_layer_fn visit, void *user) {
  char *wdir = NULL;
  int rc = uq__cache_resolve_dir(dir, &wdir);
  if (rc == UQ_ENOMEM)
    return rc;
  uq__error_clear(); /* no writable directory: the layers alone */
  if (wdir != NULL && wdir[0] != '/') {
    /* A relative argument: the directory it names now. */
    char cwd[PATH_MAX], abs[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) != NULL &&
        snprintf(abs, sizeof abs, "%s/%s", cwd, wdir) < (int)sizeof abs) {
      normalise(abs);
      char *copy = uq__strdup(abs);
      uq__free(wdir);
      wdir = copy;
      if (wdir == NULL)
        return UQ_ENOMEM;
    }
  }
  if (wdir != NULL) {
    rc = visit_layer(seen, wdir, strlen(wdir), 1, writable_origin(dir),
                     visit, user);
    uq__free(wdir);
    if (rc != 0)
      return rc;
  }
  for (const char *p = uq__env_get(UQ__ENV_CACHE_PATH); p != NULL && *p;) {
    const char *colon = strchr(p, ':');
    size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
    rc = visit_layer(seen, p, len, 0, "UQJIT_CACHE_PATH", visit, user);
    if (rc != 0)
      return rc;
    p = colon != NULL ? colon + 1 : NULL;
  }
  const char *sys = uq__cache_system_dir();
  return visit_layer(seen, sys, strlen(sys), 0, "system", visit, user);
}

int uq_cache_layers(const char *dir, uq_cache_layer_fn visit, void *user) {
  uq__error_clear();
  if (visit == NULL)
    return uq__errorf(UQ_EINVAL, "uq_cache_layers: visit is NULL");
  layer_list seen = {NULL, 0};
  int rc = walk_layers(dir, &seen, visit, user);
  for (size_t i = 0; i < seen.n; i++)
    uq__free(seen.paths[i]);
  uq__free(seen.paths);
  if (rc == UQ_ENOMEM)
    return uq__errorf(rc, "uq_cache_layers: out of memory");
  return rc < 0 ? rc : 0;
}

static int join_layer(void *user, const uq_cache_layer *l) {
  uq__buf *b = user;
  if (l->exists)
    uq__buf_printf(b, "%s%s", b->len > 0 ? ":" : "", l->path);
  return 0;
}

int uq__cache_open_search_layers(const char *dir, uq__cache **out) {
  *out = NULL;
  uq__buf b;
  uq__buf_init(&b);
  char *layers = NULL;
  int rc = uq_cache_layers(dir, join_layer, &b);
  if (rc == 0)
    uq__buf_puts(&b, "");
  if (rc == 0 && (b.status != 0 || (layers = uq__buf_take(&b, NULL)) == NULL))
    rc = uq__errorf(UQ_ENOMEM, "cache: out of memory");
  uq__buf_free(&b);
  if (rc == 0)
    rc = uq__cache_open_layers(layers, out);
  uq__free(layers);
  return rc;
}

/* ---- uq_cache_share ---------------------------------------------------------- */

typedef struct share_state {
  uint64_t changed;
  int status;          /* the first failure */
  char detail[PATH_MAX + 128];
} share_state;

static void share_fail(share_state *s, int status, const char *path,
                       const char *why) {
  if (s->status != 0)
    return;
  s->status = status;
  snprintf(s->detail, sizeof s->detail, "%s: %s", path, why);
}

/* Gives the file or directory open on fd `mode` when it is ours; checks
 * that every user can read it otherwise. */
static void share_one(share_state *s, int fd, mode_t mode, const char *path) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    share_fail(s, UQ_EIO, path, strerror(errno));
    return;
  }
  if (st.st_uid != geteuid()) {
    mode_t need = S_ISDIR(st.st_mode) ? S_IROTH | S_IXOTH : S_IROTH;
    if ((st.st_mode & need) != need)
      share_fail(s, UQ_EPERM, path,
                 "owned by another user and not readable by all");
    return;
  }
  if ((st.st_mode & 07777) == mode)
    return;
  if (fchmod(fd, mode) != 0)
    share_fail(s, UQ_EIO, path, strerror(errno));
  else
    s->changed++;
}

/* The directory `name` under `parent` (a level of the layout), shared,
 * then what it holds down to `depth` more levels of directories; at depth
 * 0 its regular files are entries. */
static void share_dir(share_state *s, int parent, const char *name,
                      const char *path, int depth) {
  /* The root may be a link (the loader opens it so); no level below. */
  int nofollow = parent == AT_FDCWD ? 0 : O_NOFOLLOW;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | nofollow | O_CLOEXEC);
  if (fd < 0)
    return; /* a link or a file in a directory's place: the loader refuses it */
  share_one(s, fd, 0755, path);
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') /* ".", "..", temporary entries */
      continue;
    char sub[PATH_MAX];
    if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >=
        (int)sizeof sub)
      continue;
    if (depth > 0) {
      share_dir(s, fd, e->d_name, sub, depth - 1);
      continue;
    }
    struct stat st;
    int f = uq__cache_open_entry_file(fd, e->d_name, &st);
    if (f < 0)
      continue; /* not a regular file: never loaded */
    share_one(s, f, 0644, sub);
    close(f);
  }
  closedir(d);
}

int uq_cache_share(const char *dir, uint64_t *changed) {
  uq__error_clear();
  if (changed != NULL)
    *changed = 0;
  char *root = NULL;
  int rc = uq__cache_resolve_dir(dir, &root);
  if (rc != 0)
    return rc;
  share_state s;
  memset(&s, 0, sizeof s);
  struct stat st;
  errno = 0;
  if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    rc = uq__errorf(UQ_ENOENT, "cache directory %s: %s", root,
                    errno != 0 ? strerror(errno) : "not a directory");
    uq__free(root);
    return rc;
  }
  /* root, v2, <target>, <2 hex>, then the entries. */
  share_dir(&s, AT_FDCWD, root, root, 3);
  uq__free(root);
  if (changed != NULL)
    *changed = s.changed;
  if (s.status != 0)
    return uq__errorf(s.status, "cannot share the cache: %s", s.detail);
  return 0;
}
