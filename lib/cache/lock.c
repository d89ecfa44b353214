/* Cross-process single flight: one compile per kernel across every process
 * and thread sharing a writable cache. The lock is an flock(2) on
 * "<2 hex>/.<30 hex>.lock" beside the kernel's entries: the kernel drops it
 * when its holder dies, however it dies, so a killed compile never leaves
 * a lock that blocks others; the file it leaves is removed by the next
 * holder or by the sweep below. Each locker opens the file itself, so
 * threads of one process exclude each other too (flock locks belong to the
 * open file, not to the process). */
#include "lib/cache/lock.h"

#include "lib/cache/cache_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"

/* A lock file untouched for this long is looked at by the sweep (a held
 * one is never removed: the sweep takes the lock before unlinking). */
#define UQ__CACHE_LOCK_SWEEP_SECONDS 60

struct uq__cache_flight {
  int dirfd;
  int fd;
  char name[40]; /* ".<30 hex>.lock" */
};

int uq__cache_is_lock_name(const char *name) {
  size_t n = strlen(name);
  return n > 6 && name[0] == '.' && strcmp(name + n - 5, ".lock") == 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* 1 when `fd` is still the file named `name` in `dirfd` (a holder that
 * finishes unlinks the name before unlocking, so a lock won on an unlinked
 * file proves nothing). */
static int still_named(int dirfd, const char *name, int fd) {
  struct stat mine, now;
  return fstat(fd, &mine) == 0 &&
         fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
         mine.st_dev == now.st_dev && mine.st_ino == now.st_ino;
}

/* Lock files left by holders that died: each is locked first, so one in
 * use is never taken away. */
static void sweep_locks(int dirfd) {
  int dfd = dup(dirfd);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL) {
    if (dfd >= 0)
      close(dfd);
    return;
  }
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (!uq__cache_is_lock_name(e->d_name) ||
        fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        now - st.st_mtime < UQ__CACHE_LOCK_SWEEP_SECONDS)
      continue;
    if (!S_ISREG(st.st_mode)) {
      unlinkat(dirfd, e->d_name, 0); /* not ours to lock; never a lock */
      continue;
    }
    int fd = openat(dirfd, e->d_name,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && still_named(dirfd, e->d_name, fd))
      unlinkat(dirfd, e->d_name, 0);
    close(fd);
  }
  closedir(d);
}

/* One attempt: opens (creating) the lock file and waits for it until
 * `deadline`. 1 held, 0 retry (the file was replaced), -1 give up. */
static int try_lock(uq__cache_flight *l, double deadline) {
  l->fd = openat(l->dirfd, l->name,
                 O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (l->fd < 0)
    return -1;
  struct stat st;
  if (fstat(l->fd, &st) != 0 || !uq__cache_file_is_safe(&st))
    goto give_up;
  int pause = 1;
  while (flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || now_ms() >= deadline)
      goto give_up;
    sleep_ms(pause);
    pause = pause < 50 ? 2 * pause : 50;
  }
  if (still_named(l->dirfd, l->name, l->fd))
    return 1;
  close(l->fd);
  l->fd = -1;
  return 0;
give_up:
  close(l->fd);
  l->fd = -1;
  return -1;
}

int uq__cache_lock(uq__cache *c, const char *target, const uq__digest *key,
                   int wait_ms, uq__cache_flight **out) {
  char tdir[UQ__CACHE_TARGET_FIELD], hh[3], fname[UQ__CACHE_FNAME_LEN + 1];
  char prefix[32];
  uq__cache_refusal ref;
  *out = NULL;
  const char *root = uq__cache_dir(c);
  if (root == NULL || uq__cache_target_dirname(target, tdir) != 0) {
    uq__error_clear();
    return UQ_ENOENT;
  }
  uq__cache_entry_names(key, 0, hh, fname, prefix);
  uq__cache_flight *l = uq__calloc(1, sizeof *l);
  if (l == NULL)
    return UQ_ENOMEM;
  l->fd = -1;
  /* prefix is "<30 hex>."; the lock is ".<30 hex>.lock". */
  snprintf(l->name, sizeof l->name, ".%slock", prefix);
  uq__cache_make_dirs(root);
  l->dirfd = uq__cache_open_entry_dir(root, tdir, hh, 1, &ref);
  if (l->dirfd < 0) {
    uq__free(l);
    return UQ_ENOENT;
  }
  sweep_locks(l->dirfd);
  double deadline = now_ms() + (wait_ms > 0 ? wait_ms : 0);
  int got;
  /* A replaced file is retried at once; a bounded number of times so that
   * a directory someone keeps churning cannot hold us forever. */
  for (int tries = 0; (got = try_lock(l, deadline)) == 0 && tries < 100;
       tries++) {
  }
  if (got != 1) {
    close(l->dirfd);
    uq__free(l);
    return UQ_EIO;
  }
  *out = l;
  return 0;
}

void uq__cache_unlock(uq__cache_flight *l) {
  if (l == NULL)
    return;
  /* Unlinked while still held: a waiter that then wins the old file sees
   * it is no longer named and starts over on a fresh one. */
  unlinkat(l->dirfd, l->name, 0);
  close(l->fd);
  close(l->dirfd);
  uq__free(l);
}
