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

/* What a file's mode says it is, for messages. */
static const char *kind_of(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "of an unknown type";
}

/* The one trust rule (docs/RELIABILITY.md, "Trust model"). Loading a code
 * object runs code on the GPU, so nobody but the reader (or root) may be
 * able to put or change files where they are read: every directory below
 * a layer's root and every entry file must be of the expected type (never
 * a symbolic link: all of them are opened with O_NOFOLLOW), owned by the
 * reader's effective user or by root, and writable by neither group nor
 * others. The same rule holds in the writable cache and in read-only
 * layers. The words name the one condition that failed, with the numbers
 * that made it fail. */
const char *uq__cache_distrust(const struct stat *st, int want_dir,
                               char why[UQ__CACHE_WHY_MAX]) {
  unsigned mode = (unsigned)(st->st_mode & 07777);
  const char *what = want_dir ? "directory" : "file";
  if (S_ISLNK(st->st_mode))
    snprintf(why, UQ__CACHE_WHY_MAX, "a symbolic link");
  else if (want_dir && !S_ISDIR(st->st_mode))
    snprintf(why, UQ__CACHE_WHY_MAX, "%s, not a directory",
             kind_of(st->st_mode));
  else if (!want_dir && !S_ISREG(st->st_mode))
    snprintf(why, UQ__CACHE_WHY_MAX, "%s, not a regular file",
             kind_of(st->st_mode));
  else if (st->st_uid != geteuid() && st->st_uid != 0)
    snprintf(why, UQ__CACHE_WHY_MAX,
             "a %s (mode %04o) owned by uid %u, not this user (uid %u) or "
             "root",
             what, mode, (unsigned)st->st_uid, (unsigned)geteuid());
  else if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0)
    snprintf(why, UQ__CACHE_WHY_MAX, "a %s %s (mode %04o)", what,
             (st->st_mode & S_IWGRP) == 0 ? "writable by others"
             : (st->st_mode & S_IWOTH) == 0 ? "writable by its group"
                                            : "writable by group and others",
             mode);
  else
    return NULL;
  return why;
}

int uq__cache_dir_is_safe(int fd) {
  struct stat st;
  char why[UQ__CACHE_WHY_MAX];
  return fstat(fd, &st) == 0 && uq__cache_distrust(&st, 1, why) == NULL;
}

int uq__cache_file_is_safe(const struct stat *st) {
  char why[UQ__CACHE_WHY_MAX];
  return uq__cache_distrust(st, 0, why) == NULL;
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

/* A writer's repair of a level of its own cache that the rule refuses
 * (docs/RELIABILITY.md, "Trust model"): its own directory that group or
 * others may write becomes 0700 (entry files are still checked one by
 * one); a symbolic link or anything else that is not a directory (the
 * link's target is not touched), and a directory of another user, are
 * removed with their contents and made again. The level's fd, or -1 with
 * errno set. */
static int repair_level(int parent, const char *name) {
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return -1;
  if (S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
    int fd = openat(parent, name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && fchmod(fd, 0700) != 0) {
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    return fd;
  }
  if (uq__os_remove_at(parent, name) != 0 || mkdirat(parent, name, 0700) != 0)
    return -1;
  return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The rule's verdict on what stands at `name` under `parent` (a level
 * that could not be opened as a directory, or `fd` when it was). */
static const char *level_distrust(int parent, const char *name, int fd,
                                  char why[UQ__CACHE_WHY_MAX]) {
  struct stat st;
  int ok = fd >= 0 ? fstat(fd, &st) == 0
                   : fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!ok) {
    snprintf(why, UQ__CACHE_WHY_MAX, "not readable: %s", strerror(errno));
    return why;
  }
  return uq__cache_distrust(&st, 1, why);
}

/* Opens one level below the directory open on fd, making it first with
 * `create`, and applies the rule to it; a writer repairs what it refuses.
 * The level's fd, or a negative status (UQ_ENOENT, UQ_EPERM with *ref
 * filled, or the status of an errno). Closes nothing. */
static int open_level(int fd, const char *name, int create,
                      uq__cache_refusal *ref) {
  if (create &&
      (uq__cache_inject(UQ__CACHE_OP_MKDIR) || mkdirat(fd, name, 0700) != 0) &&
      errno != EEXIST)
    return errno == ENOENT ? UQ_EIO : uq__cache_status_of_errno(errno);
  int next = uq__cache_inject(UQ__CACHE_OP_OPEN)
                 ? -1
                 : openat(fd, name,
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (next < 0 && errno != ELOOP && !(create && errno == ENOTDIR)) {
    int e = errno;
    return e == ENOENT || e == ENOTDIR ? UQ_ENOENT
                                       : uq__cache_status_of_errno(e);
  }
  char why[UQ__CACHE_WHY_MAX];
  if (level_distrust(fd, name, next, why) == NULL)
    return next;
  if (next >= 0)
    close(next);
  ref->level = name;
  snprintf(ref->why, sizeof ref->why, "%s", why);
  if (!create)
    return UQ_EPERM;
  next = repair_level(fd, name);
  if (next >= 0 && level_distrust(fd, name, next, why) == NULL) {
    ref->level = NULL;
    ref->why[0] = '\0';
    return next;
  }
  int e = next >= 0 ? EPERM : errno;
  if (next >= 0)
    close(next);
  size_t used = strlen(ref->why);
  snprintf(ref->why + used, sizeof ref->why - used, "; cannot repair it: %s",
           strerror(e));
  return UQ_EPERM;
}

int uq__cache_open_entry_dir(const char *root, const char *tdir,
                             const char *hh, int create,
                             uq__cache_refusal *ref) {
  const char *levels[3] = {UQ__CACHE_VERSION_DIR, tdir, hh};
  memset(ref, 0, sizeof *ref);
  int fd = uq__cache_inject(UQ__CACHE_OP_OPEN)
               ? -1
               : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT || errno == ENOTDIR
               ? UQ_ENOENT
               : uq__cache_status_of_errno(errno);
  if (level_distrust(-1, NULL, fd, ref->why) != NULL) {
    close(fd);
    ref->level = root;
    return UQ_EPERM;
  }
  for (int i = 0; i < 3; i++) {
    int next = open_level(fd, levels[i], create, ref);
    int e = errno;
    close(fd);
    errno = e;
    if (next < 0)
      return next;
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
