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
#include "lib/base/os.h"

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

/* ---- Trust ---------------------------------------------------------------- */

/* The one trust rule (docs/RELIABILITY.md, "Trust model"). Loading a code
 * object runs code on the GPU, so nobody but the reader (or root) may be
 * able to put or change files where they are read: every directory below
 * a layer's root and every entry file must be of the expected type (never
 * a symbolic link: all of them are opened with O_NOFOLLOW), owned by the
 * reader's effective user or by root, and writable by neither group nor
 * others. The same rule holds in the writable cache and in read-only
 * layers. */
const char *uq__cache_distrust(const struct stat *st, int want_dir) {
  if (S_ISLNK(st->st_mode))
    return "a symbolic link";
  if (want_dir && !S_ISDIR(st->st_mode))
    return "not a directory";
  if (!want_dir && !S_ISREG(st->st_mode))
    return S_ISDIR(st->st_mode) ? "a directory, not an entry file"
                                : "not a regular file";
  if (st->st_uid != geteuid() && st->st_uid != 0)
    return "owned by another user";
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return "writable by group or others";
  return NULL;
}

int uq__cache_dir_is_safe(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && uq__cache_distrust(&st, 1) == NULL;
}

int uq__cache_file_is_safe(const struct stat *st) {
  return uq__cache_distrust(st, 0) == NULL;
}

int (*uq__cache_fault_fn)(uq__cache_op op);

int uq__cache_inject(uq__cache_op op) {
  int (*fn)(uq__cache_op) = uq__cache_fault_fn;
  int e = fn != NULL ? fn(op) : 0;
  if (e != 0)
    errno = e;
  return e != 0;
}

int uq__cache_open_entry_file(int dirfd, const char *name, struct stat *st) {
  /* O_NONBLOCK: a FIFO planted at an entry's path must not block the
   * open; O_NOFOLLOW: a symbolic link is refused. */
  int fd = uq__cache_inject(UQ__CACHE_OP_OPEN)
               ? -1
               : openat(dirfd, name,
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

/* Maps an errno from writing the cache to a status. A read-only file
 * system or a directory we may not write to is UQ_EIO with the errno's
 * words in the message: UQ_EPERM is kept for untrusted directories. */
int uq__cache_status_of_errno(int e) {
  switch (e) {
  case ENOSPC:
  case EFBIG:
#ifdef EDQUOT
  case EDQUOT:
#endif
    return UQ_ENOSPC;
  case ENOMEM:
    return UQ_ENOMEM;
  default:
    return UQ_EIO;
  }
}

/* A writer repairs a level of its own cache that is a symbolic link or
 * not a directory: it is removed and made again (the link's target is not
 * touched). The new directory's fd, or -1 with errno set. */
static int replace_level(int parent, const char *name) {
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      S_ISDIR(st.st_mode) || unlinkat(parent, name, 0) != 0 ||
      mkdirat(parent, name, 0700) != 0)
    return -1;
  return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A writer repairs a directory of its own that group or others may write
 * to by making it 0700; entry files are still checked one by one, and a
 * file only its owner can change stays trusted. 1 when it is now safe. */
static int repair_mode(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    return 0;
  return fchmod(fd, 0700) == 0 && uq__cache_dir_is_safe(fd);
}

/* Opens root/v2/<tdir>/<hh> checking every level; with `create`, missing
 * levels below the root are made 0700. Returns the 2-hex directory's fd or
 * a negative status (UQ_ENOENT when a level is missing, UQ_EPERM when one
 * is unsafe). `*unsafe` says which directory was refused. */
int uq__cache_open_entry_dir(const char *root, const char *tdir,
                             const char *hh, int create, const char **unsafe) {
  const char *levels[3] = {UQ__CACHE_VERSION_DIR, tdir, hh};
  *unsafe = NULL;
  int fd = uq__cache_inject(UQ__CACHE_OP_OPEN)
               ? -1
               : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
    if (create &&
        (uq__cache_inject(UQ__CACHE_OP_MKDIR) ||
         mkdirat(fd, levels[i], 0700) != 0) &&
        errno != EEXIST) {
      int e = errno;
      close(fd);
      errno = e;
      return e == ENOENT ? UQ_EIO : uq__cache_status_of_errno(e);
    }
    int next = uq__cache_inject(UQ__CACHE_OP_OPEN)
                   ? -1
                   : openat(fd, levels[i],
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && create && (errno == ELOOP || errno == ENOTDIR))
      next = replace_level(fd, levels[i]);
    int e = errno;
    if (next < 0) {
      close(fd);
      errno = e;
      if (e == ELOOP) {
        *unsafe = levels[i]; /* a symbolic link */
        return UQ_EPERM;
      }
      return e == ENOENT || e == ENOTDIR ? UQ_ENOENT
                                         : uq__cache_status_of_errno(e);
    }
    close(fd);
    if (!uq__cache_dir_is_safe(next) && !(create && repair_mode(next))) {
      close(next);
      *unsafe = levels[i];
      return UQ_EPERM;
    }
    fd = next;
  }
  return fd;
}

/* mkdir -p with 0700 for the levels we create. Returns the errno of the
 * last mkdir that failed other than with EEXIST (0: none), so that the
 * open that follows can report why the directory is missing (EROFS, say,
 * rather than ENOENT). */
int uq__cache_make_dirs(const char *path) {
  char buf[PATH_MAX];
  int last = 0;
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return ENAMETOOLONG;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char saved = buf[i];
      buf[i] = '\0';
      if ((uq__cache_inject(UQ__CACHE_OP_MKDIR) || mkdir(buf, 0700) != 0) &&
          errno != EEXIST)
        last = errno;
      else
        last = 0;
      buf[i] = saved;
    }
  }
  return last;
}

int uq__cache_remove_tree(int parent, const char *name) {
  return uq__os_remove_at(parent, name);
}
