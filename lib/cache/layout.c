/* Where the code-object cache keeps its files and which of them it trusts:
 * the writable directory, target directory names, and directories walked
 * with openat() from a layer's root, so that the directories checked for
 * safety are the ones an entry is read from. */
#include "lib/cache/cache_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/env.h"
#include "lib/base/error.h"

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
int uq__cache_dir_is_safe(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return 0;
  return (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

int uq__cache_file_is_safe(const struct stat *st) {
  if (!S_ISREG(st->st_mode))
    return 0;
  if (st->st_uid != geteuid() && st->st_uid != 0)
    return 0;
  return (st->st_mode & S_IWOTH) == 0;
}

/* Maps an errno from writing the cache to a status. */
int uq__cache_status_of_errno(int e) {
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

/* Opens root/v2/<tdir>/<hh> checking every level; with `create`, missing
 * levels below the root are made 0700. Returns the 2-hex directory's fd or
 * a negative status (UQ_ENOENT when a level is missing, UQ_EPERM when one
 * is unsafe). `*unsafe` says which directory was refused. */
int uq__cache_open_entry_dir(const char *root, const char *tdir,
                             const char *hh, int create, const char **unsafe) {
  const char *levels[3] = {UQ__CACHE_VERSION_DIR, tdir, hh};
  *unsafe = NULL;
  int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT || errno == ENOTDIR
               ? UQ_ENOENT
               : uq__cache_status_of_errno(errno);
  if (!uq__cache_dir_is_safe(fd)) {
    close(fd);
    *unsafe = root;
    return UQ_EPERM;
  }
  for (int i = 0; i < 3; i++) {
    if (create && mkdirat(fd, levels[i], 0700) != 0 && errno != EEXIST) {
      int e = errno;
      close(fd);
      return e == ENOENT ? UQ_EIO : uq__cache_status_of_errno(e);
    }
    int next = openat(fd, levels[i],
                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(fd);
    if (next < 0)
      return e == ENOENT || e == ENOTDIR ? UQ_ENOENT
                                         : uq__cache_status_of_errno(e);
    if (!uq__cache_dir_is_safe(next)) {
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
void uq__cache_make_dirs(const char *path) {
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
