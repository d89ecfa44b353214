#include "lib/base/os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/error.h"

extern char **environ;

static int executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
         access(path, X_OK) == 0;
}

static int resolve_into(const char *path, char *out, size_t n) {
  char resolved[PATH_MAX];
  if (!executable_file(path) || realpath(path, resolved) == NULL)
    return UQ_ENOENT;
  if ((size_t)snprintf(out, n, "%s", resolved) >= n)
    return UQ_ENOENT;
  return 0;
}

int uq__os_find_program(const char *name, char *out, size_t n) {
  if (name == NULL || name[0] == '\0')
    return UQ_ENOENT;
  if (strchr(name, '/') != NULL)
    return resolve_into(name, out, n);
  /* PATH is the process's own search path, not a uqjit setting, so it is
   * read directly rather than through env.h. */
  const char *path = getenv("PATH");
  if (path == NULL || path[0] == '\0')
    path = "/usr/local/bin:/usr/bin:/bin";
  const char *p = path;
  while (*p != '\0') {
    const char *end = strchr(p, ':');
    size_t dlen = end != NULL ? (size_t)(end - p) : strlen(p);
    char cand[PATH_MAX];
    if (dlen > 0 &&
        (size_t)snprintf(cand, sizeof cand, "%.*s/%s", (int)dlen, p, name) <
            sizeof cand &&
        resolve_into(cand, out, n) == 0)
      return 0;
    if (end == NULL)
      break;
    p = end + 1;
  }
  return UQ_ENOENT;
}

/* A scratch directory without its owner's lock whose pid is alive here is
 * removed once older than this. */
#define UQ__OS_STALE_SCRATCH_SECONDS (24 * 3600)

/* Directory levels held open at once while a tree is emptied: a
 * directory deeper than this is moved up into the tree's top and emptied
 * from there, so that no depth costs more descriptors or stack. */
#define UQ__OS_REMOVE_HOLD 16

typedef struct remover {
  int top;           /* the directory being emptied */
  dev_t dev;         /* its file system: mounts below are not entered */
  unsigned moved;    /* names given to directories moved up */
  size_t progress;   /* entries removed or moved in this pass */
} remover;

/* Removes what it can below the directory open on fd, `level` levels
 * below r->top. Never follows a link: every name is looked at with
 * AT_SYMLINK_NOFOLLOW and opened with O_NOFOLLOW. */
static void empty_dir(remover *r, int fd, int level) {
  int dup_fd = dup(fd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (d == NULL) {
    if (dup_fd >= 0)
      close(dup_fd);
    return;
  }
  rewinddir(d); /* the duplicate shares fd's offset, at the end after a pass */
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    struct stat st;
    if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
        fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (!S_ISDIR(st.st_mode) || unlinkat(fd, n, AT_REMOVEDIR) == 0) {
      if (S_ISDIR(st.st_mode) || unlinkat(fd, n, 0) == 0)
        r->progress++;
      continue;
    }
    if (st.st_dev != r->dev)
      continue; /* a mount point: its contents are not ours to remove */
    if (level + 1 >= UQ__OS_REMOVE_HOLD) {
      char up[32];
      snprintf(up, sizeof up, ".uqjit-rm-%u", r->moved++);
      if (renameat(fd, n, r->top, up) == 0)
        r->progress++;
      continue;
    }
    int sub = openat(fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
      continue;
    empty_dir(r, sub, level + 1);
    close(sub);
    if (unlinkat(fd, n, AT_REMOVEDIR) == 0)
      r->progress++;
  }
  closedir(d);
}

int uq__os_remove_at(int dirfd, const char *name) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode))
    return unlinkat(dirfd, name, 0);
  if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
    return 0;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  remover r = {fd, st.st_dev, 0, 0};
  int rc;
  /* Passes until the directory goes: one that removes or moves nothing
   * (no permission, a mount point) ends it. */
  do {
    r.progress = 0;
    empty_dir(&r, fd, 0);
    rc = unlinkat(dirfd, name, AT_REMOVEDIR);
  } while (rc != 0 && (errno == ENOTEMPTY || errno == EEXIST) &&
           r.progress > 0);
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

/* The file in every scratch directory that its owner holds an flock(2)
 * on for the directory's whole life. The kernel drops the lock when the
 * owner dies, whatever PID namespace it ran in, so a lock that can be
 * taken means the directory is abandoned. The sweep holds the lock it
 * took while it removes the directory, and an owner uses a directory only
 * once it holds the lock on the file still named there, so the two never
 * share one: an owner that loses the race makes another. */
#define UQ__OS_OWNER_LOCK ".uqjit-owner"

/* TMPDIR is the system's convention for scratch space (read-only images
 * often point it somewhere writable); it is no uqjit setting. */
static const char *tmp_base(void) {
  const char *base = secure_getenv("TMPDIR");
  return base != NULL && base[0] == '/' ? base : "/tmp";
}

/* Why the per-user parent is not ours to use, or NULL when it is. */
static const char *parent_distrust(const struct stat *st, char *why,
                                   size_t n) {
  if (S_ISLNK(st->st_mode))
    snprintf(why, n, "a symbolic link");
  else if (!S_ISDIR(st->st_mode))
    snprintf(why, n, "not a directory");
  else if (st->st_uid != geteuid())
    snprintf(why, n, "owned by uid %u, not this user (uid %u)",
             (unsigned)st->st_uid, (unsigned)geteuid());
  else if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0)
    snprintf(why, n, "writable by group or others (mode %04o)",
             (unsigned)(st->st_mode & 07777));
  else
    return NULL;
  return why;
}

/* "$TMPDIR/uqjit-<uid>" (TMPDIR unset or relative: /tmp), made 0700 when
 * missing. 0 when it is a real directory of ours that nobody else can
 * write (compilers read their inputs back from it); 1 when something else
 * stands there, `why` saying what (anyone can squat the name in a shared
 * /tmp); a negative status when it cannot be made at all. */
static int scratch_parent(char *out, size_t n, char *why, size_t wn) {
  const char *base = tmp_base();
  if ((size_t)snprintf(out, n, "%s/uqjit-%u", base, (unsigned)geteuid()) >= n)
    return uq__errorf(UQ_EIO, "temporary directory name too long: %s", base);
  if (mkdir(out, 0700) != 0 && errno != EEXIST) {
    int e = errno;
    return uq__errorf(UQ_EIO, "cannot create a temporary directory in %s: %s",
                      base, strerror(e));
  }
  struct stat st;
  if (lstat(out, &st) != 0) {
    int e = errno;
    return uq__errorf(UQ_EIO, "cannot use temporary directory %s: %s", out,
                      strerror(e));
  }
  return parent_distrust(&st, why, wn) != NULL ? 1 : 0;
}

/* Removes the scratch directory `name` (of process `pid`, last changed
 * `age` seconds ago) under pfd when it is abandoned: when the sweep can
 * take its owner's lock, which it holds while removing. A directory
 * without the lock file (made by a uqjit that predates it, or by an owner
 * that has not yet made it) is taken over, by making the file, when its
 * pid is gone here or it is older than a day; an owner that then finds
 * the file made or unnamed makes another directory. */
static void sweep_one(int pfd, const char *name, long pid, time_t age) {
  int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return;
  int lfd = openat(dfd, UQ__OS_OWNER_LOCK,
                   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (lfd < 0 && errno == ENOENT &&
      (age > UQ__OS_STALE_SCRATCH_SECONDS ||
       (kill((pid_t)pid, 0) != 0 && errno == ESRCH)))
    lfd = openat(dfd, UQ__OS_OWNER_LOCK,
                 O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  close(dfd);
  if (lfd < 0)
    return;
  if (flock(lfd, LOCK_EX | LOCK_NB) == 0)
    (void)uq__os_remove_at(pfd, name);
  close(lfd);
}

/* The pid of a scratch directory's name "<prefix><pid>-XXXXXX", or 0. */
static long scratch_pid(const char *name, const char *prefix) {
  size_t k = strlen(prefix);
  if (strncmp(name, prefix, k) != 0)
    return 0;
  char *end;
  long pid = strtol(name + k, &end, 10);
  return end != name + k && *end == '-' && strlen(end) == 7 && pid > 0 ? pid
                                                                       : 0;
}

/* Removes the abandoned scratch directories named "<prefix><pid>-XXXXXX"
 * in the directory open on pfd. Only real directories of ours are looked
 * at. */
static void sweep_dir(int pfd, const char *prefix) {
  int fd = dup(pfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return;
  }
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid = scratch_pid(e->d_name, prefix);
    struct stat st;
    if (pid == 0 || pid == (long)getpid() ||
        fstatat(pfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
      continue;
    sweep_one(pfd, e->d_name, pid, now - st.st_mtime);
  }
  closedir(d);
}

/* The prefix of private scratch directories made directly in $TMPDIR
 * when the per-user parent is not ours: "uqjit-<uid>-". */
static void fallback_prefix(char *out, size_t n) {
  snprintf(out, n, "uqjit-%u-", (unsigned)geteuid());
}

void uq__os_sweep_scratch(void) {
  char parent[PATH_MAX], why[128], prefix[64];
  if (scratch_parent(parent, sizeof parent, why, sizeof why) == 0) {
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd >= 0) {
      sweep_dir(pfd, "");
      close(pfd);
    }
  }
  uq__error_clear();
  /* What fallback directories killed processes left in $TMPDIR itself. */
  int bfd = open(tmp_base(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (bfd >= 0) {
    fallback_prefix(prefix, sizeof prefix);
    sweep_dir(bfd, prefix);
    close(bfd);
  }
}

static pthread_once_t sweep_once = PTHREAD_ONCE_INIT;
static int warned_fallback;

/* 1 when fd is the file named `name` under dirfd. */
static int still_named(int dirfd, const char *name, int fd) {
  struct stat a, b;
  return fstat(fd, &a) == 0 &&
         fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* One attempt at "<dir>/<name>XXXXXX" (mkdtemp, 0700) with its lock held:
 * 0, 1 when a sweep took it over first (try again), or a status. */
static int try_make(const char *dir, const char *name, uq__os_scratch *s) {
  if ((size_t)snprintf(s->path, sizeof s->path, "%s/%sXXXXXX", dir, name) >=
      sizeof s->path)
    return uq__errorf(UQ_EIO, "temporary directory name too long: %s", dir);
  if (mkdtemp(s->path) == NULL) {
    int e = errno;
    return uq__errorf(UQ_EIO, "cannot create a temporary directory in %s: %s",
                      dir, strerror(e));
  }
  int dfd = open(s->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  s->lock_fd = dfd < 0 ? -1
                       : openat(dfd, UQ__OS_OWNER_LOCK,
                                O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
                                    O_CLOEXEC,
                                0600);
  /* A sweep holding the lock finishes its removal before this returns. */
  int locked = s->lock_fd >= 0 && flock(s->lock_fd, LOCK_EX) == 0;
  int e = errno;
  int ok = locked && still_named(dfd, UQ__OS_OWNER_LOCK, s->lock_fd);
  /* Unnamed, gone or made by a sweep: taken over; else a failure. */
  int taken = locked || e == ENOENT || e == EEXIST || e == EINTR;
  if (dfd >= 0)
    close(dfd);
  if (ok)
    return 0;
  char dir_copy[PATH_MAX];
  snprintf(dir_copy, sizeof dir_copy, "%s", s->path);
  uq__os_scratch_remove(s);
  if (!taken)
    return uq__errorf(UQ_EIO, "cannot set up temporary directory %s: %s",
                      dir_copy, strerror(e));
  return 1;
}

int uq__os_scratch_make(uq__os_scratch *s) {
  s->path[0] = '\0';
  s->lock_fd = -1;
  pthread_once(&sweep_once, uq__os_sweep_scratch);
  char parent[PATH_MAX], why[128], name[64];
  int status = scratch_parent(parent, sizeof parent, why, sizeof why);
  if (status < 0)
    return status;
  const char *dir = parent;
  if (status == 0) {
    snprintf(name, sizeof name, "%ld-", (long)getpid());
  } else {
    /* Squatted: a private directory of our own in $TMPDIR instead. */
    dir = tmp_base();
    fallback_prefix(name, sizeof name);
    size_t k = strlen(name);
    snprintf(name + k, sizeof name - k, "%ld-", (long)getpid());
    uq__warn_once(&warned_fallback,
                  "temporary directory %s is %s: not used; compiling in "
                  "private directories %s/%sXXXXXX instead",
                  parent, why, dir, name);
  }
  for (int tries = 0; tries < 16; tries++)
    if ((status = try_make(dir, name, s)) != 1)
      return status;
  return uq__errorf(UQ_EIO, "cannot set up a temporary directory in %s: "
                    "taken over by other processes 16 times", dir);
}

void uq__os_scratch_remove(uq__os_scratch *s) {
  if (s->path[0] != '\0')
    (void)uq__os_remove_at(AT_FDCWD, s->path);
  if (s->lock_fd >= 0)
    close(s->lock_fd); /* after the removal: the lock guards it to the end */
  s->path[0] = '\0';
  s->lock_fd = -1;
}

int uq__os_read_file(const char *path, char **data, size_t *len) {
  int status = 0;
  uq__buf b;
  uq__buf_init(&b);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return uq__errorf(UQ_EIO, "cannot open %s: %s", path, strerror(e));
  }
  char chunk[65536];
  for (;;) {
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      status = uq__errorf(UQ_EIO, "cannot read %s: %s", path, strerror(e));
      goto cleanup;
    }
    if (r == 0)
      break;
    uq__buf_append(&b, chunk, (size_t)r);
  }
  /* An empty file still yields a valid empty string. */
  uq__buf_append(&b, "", 0);
  if (b.status != 0 || b.data == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory reading %s", path);
    goto cleanup;
  }
  *data = uq__buf_take(&b, len);
  if (*data == NULL)
    status = uq__errorf(UQ_ENOMEM, "out of memory reading %s", path);
cleanup:
  close(fd);
  uq__buf_free(&b);
  return status;
}

int uq__os_write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    return uq__errorf(UQ_EIO, "cannot create %s: %s", path, strerror(e));
  }
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return uq__errorf(UQ_EIO, "cannot write %s: %s", path, strerror(e));
    }
    p += w;
    len -= (size_t)w;
  }
  if (close(fd) != 0) {
    int e = errno;
    return uq__errorf(UQ_EIO, "cannot write %s: %s", path, strerror(e));
  }
  return 0;
}

static int run_env(char *const argv[], char *const envp[],
                   const char *stdin_path, char **out, size_t *out_len,
                   char **err, int *exit_code) {
  int status = 0;
  uq__os_scratch dir;
  char out_path[PATH_MAX + 16], err_path[PATH_MAX + 16];
  char *out_data = NULL, *err_data = NULL;
  size_t out_n = 0, err_n = 0;
  posix_spawn_file_actions_t fa;
  int fa_ok = 0;

  if (out != NULL)
    *out = NULL;
  if (err != NULL)
    *err = NULL;
  status = uq__os_scratch_make(&dir);
  if (status != 0)
    return status;
  snprintf(out_path, sizeof out_path, "%s/stdout", dir.path);
  snprintf(err_path, sizeof err_path, "%s/stderr", dir.path);

  if (posix_spawn_file_actions_init(&fa) != 0) {
    status = uq__errorf(UQ_ENOMEM, "posix_spawn_file_actions_init failed");
    goto cleanup;
  }
  fa_ok = 1;
  /* Files rather than pipes: no reader thread, and no deadlock when the
   * program writes a large log before reading its input. */
  if (posix_spawn_file_actions_addopen(&fa, 0,
                                       stdin_path ? stdin_path : "/dev/null",
                                       O_RDONLY, 0) != 0 ||
      posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                       O_WRONLY | O_CREAT | O_TRUNC, 0600) != 0 ||
      posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                       O_WRONLY | O_CREAT | O_TRUNC, 0600) != 0) {
    status = uq__errorf(UQ_ENOMEM, "posix_spawn_file_actions_addopen failed");
    goto cleanup;
  }
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
  if (rc != 0) {
    status = uq__errorf(UQ_EIO, "cannot run %s: %s", argv[0], strerror(rc));
    goto cleanup;
  }
  int ws;
  while (waitpid(pid, &ws, 0) < 0) {
    if (errno != EINTR) {
      int e = errno;
      status = uq__errorf(UQ_EIO, "waiting for %s failed: %s", argv[0],
                          strerror(e));
      goto cleanup;
    }
  }
  *exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws)
                             : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 255;
  if (out != NULL) {
    status = uq__os_read_file(out_path, &out_data, &out_n);
    if (status != 0)
      goto cleanup;
  }
  if (err != NULL) {
    status = uq__os_read_file(err_path, &err_data, &err_n);
    if (status != 0)
      goto cleanup;
  }
  if (out != NULL) {
    *out = out_data;
    out_data = NULL;
    if (out_len != NULL)
      *out_len = out_n;
  }
  if (err != NULL) {
    *err = err_data;
    err_data = NULL;
  }
cleanup:
  if (fa_ok)
    posix_spawn_file_actions_destroy(&fa);
  uq__free(out_data);
  uq__free(err_data);
  uq__os_scratch_remove(&dir);
  return status;
}

int uq__os_run(char *const argv[], const char *stdin_path, char **out,
               size_t *out_len, char **err, int *exit_code) {
  return run_env(argv, environ, stdin_path, out, out_len, err, exit_code);
}

int uq__os_run_in(char *const argv[], const char *tmpdir, char **out,
                  size_t *out_len, char **err, int *exit_code) {
  size_t n = 0;
  while (environ[n] != NULL)
    n++;
  size_t vlen = strlen("TMPDIR=") + strlen(tmpdir) + 1;
  char **envp = uq__malloc((n + 2) * sizeof *envp);
  char *var = uq__malloc(vlen);
  if (envp == NULL || var == NULL) {
    uq__free(envp);
    uq__free(var);
    return uq__errorf(UQ_ENOMEM, "out of memory running %s", argv[0]);
  }
  snprintf(var, vlen, "TMPDIR=%s", tmpdir);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TMPDIR=", 7) != 0)
      envp[k++] = environ[i];
  envp[k++] = var;
  envp[k] = NULL;
  int status = run_env(argv, envp, NULL, out, out_len, err, exit_code);
  uq__free(var);
  uq__free(envp);
  return status;
}
