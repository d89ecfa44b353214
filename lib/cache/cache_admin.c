/* Cache maintenance (uqjit cache ls / verify / prune): walks
 * <dir>/v2/<target>/<2 hex>/ and checks every entry the way a reader does,
 * plus the one thing a reader cannot see: that the file sits under the
 * name of its own key and target; and finds the directories of older
 * cache formats, which nothing reads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/cache/cache_impl.h"
#include "uqjit.h"

/* A temporary file younger than this may belong to a live writer. */
#define UQ__CACHE_PRUNE_TEMP_SECONDS 60

typedef struct walk_item {
  const char *path;
  int hexfd;          /* directory holding `name` */
  const char *name;
  const struct stat *st;
  int is_temp;
  int untrusted_dir;  /* a level (or the root) the loader refuses; `name`
                         is under hexfd, or NULL for the root itself */
  int valid;          /* entries only */
  const char *problem; /* why it is bad, in the trust rule's words ("" for
                          a valid entry or a temporary file) */
  const char *target; /* from the header, "" when it did not parse */
  const uq__cache_entry_info *info; /* what the header says (zeroed if bad) */
} walk_item;

/* Returns non-zero to stop the walk (passed through), or a negative status. */
typedef int (*walk_fn)(void *user, const walk_item *item);

/* Reports a directory level (or what stands in its place) that the
 * loader would refuse: by the loader's own rule, uq__cache_distrust. */
static int visit_untrusted(const char *path, int parent, const char *name,
                           const struct stat *st, const char *why, walk_fn fn,
                           void *user) {
  walk_item it;
  uq__cache_entry_info info;
  memset(&it, 0, sizeof it);
  memset(&info, 0, sizeof info);
  it.path = path;
  it.hexfd = parent;
  it.name = name;
  it.st = st;
  it.untrusted_dir = 1;
  it.problem = why;
  it.target = "";
  it.info = &info;
  return fn(user, &it);
}

/* Opens a level of the layout below `parent` for the walk: NULL with *rc 0
 * when it is gone, NULL with *rc from `fn` when it was reported as
 * untrusted. */
static DIR *open_sub(int parent, const char *name, const char *path,
                     walk_fn fn, void *user, int *rc) {
  struct stat st;
  *rc = 0;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return NULL;
  int fd = -1;
  if (S_ISDIR(st.st_mode))
    fd = uq__cache_inject(UQ__CACHE_OP_OPEN)
             ? -1
             : openat(parent, name,
                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 && fstat(fd, &st) != 0) {
    close(fd);
    return NULL;
  }
  char why[UQ__CACHE_WHY_MAX];
  int e = errno;
  if (fd < 0 || uq__cache_distrust(&st, 1, why) != NULL) {
    if (fd >= 0)
      close(fd);
    else if (uq__cache_distrust(&st, 1, why) == NULL)
      snprintf(why, sizeof why, "a directory that cannot be opened: %s",
               strerror(e));
    *rc = visit_untrusted(path, parent, name, &st, why, fn, user);
    return NULL;
  }
  DIR *d = fdopendir(fd);
  if (d == NULL)
    close(fd);
  return d;
}

static int visit_file(const char *root, const char *tname, const char *hname,
                      int hexfd, const char *fname, walk_fn fn, void *user) {
  char path[PATH_MAX];
  struct stat st;
  uq__cache_entry_info info;
  walk_item it;
  int n = snprintf(path, sizeof path, "%s/%s/%s/%s/%s", root,
                   UQ__CACHE_VERSION_DIR, tname, hname, fname);
  if (n < 0 || (size_t)n >= sizeof path)
    return 0;
  memset(&it, 0, sizeof it);
  it.path = path;
  it.hexfd = hexfd;
  it.name = fname;
  it.st = &st;
  it.target = "";
  it.problem = "";
  memset(&info, 0, sizeof info);
  it.info = &info;
  if (uq__cache_is_temp_name(fname)) {
    if (fstatat(hexfd, fname, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      return 0;
    it.is_temp = 1;
    return fn(user, &it);
  }
  uq__digest want;
  uint64_t prov;
  if (uq__cache_digest_from_names(hname, fname, &want, &prov) != 0)
    return 0; /* not ours */
  int fd = uq__cache_open_entry_file(hexfd, fname, &st);
  if (fd < 0) {
    int e = errno;
    if (fstatat(hexfd, fname, &st, AT_SYMLINK_NOFOLLOW) != 0)
      return 0; /* raced with a remover */
    /* A regular file that could not be opened (EIO, EMFILE, ...) is not
     * known to be bad: report it rather than let prune remove it. */
    if (S_ISREG(st.st_mode) && e != ELOOP && e != EINVAL)
      return uq__errorf(e == ENOMEM ? UQ_ENOMEM : UQ_EIO,
                        "cache: opening %s: %s", path, strerror(e));
    /* A directory, FIFO, link or device at an entry's path: bad. */
    char why[UQ__CACHE_WHY_MAX];
    it.problem = uq__cache_distrust(&st, 0, why) != NULL ? why : "unreadable";
    return fn(user, &it);
  }
  char why[UQ__CACHE_WHY_MAX];
  int rc = uq__cache_distrust(&st, 0, why) == NULL
               ? uq__cache_read_entry(fd, NULL, &want, &prov, NULL, NULL,
                                      &info)
               : UQ_EPERM;
  close(fd);
  if (rc == UQ_ENOMEM || rc == UQ_EIO)
    return uq__errorf(rc, "cache: reading %s failed", path);
  it.target = info.target;
  it.valid = rc == 0;
  if (rc == UQ_EPERM)
    it.problem = why;
  else if (rc != 0)
    it.problem = "corrupt: its header, name or checksums do not match";
  if (it.valid) {
    char tdir[UQ__CACHE_TARGET_FIELD];
    it.valid = uq__cache_target_dirname(info.target, tdir) == 0 &&
               strcmp(tdir, tname) == 0;
    uq__error_clear();
    if (!it.valid)
      it.problem = "an entry of another target, filed under this one";
  }
  return fn(user, &it);
}

/* The path of a level for messages: root/v2[/t[/h]]. */
static const char *level_path(char *buf, size_t n, const char *root,
                              const char *t, const char *h) {
  snprintf(buf, n, "%s/%s%s%s%s%s", root, UQ__CACHE_VERSION_DIR,
           t != NULL ? "/" : "", t != NULL ? t : "", h != NULL ? "/" : "",
           h != NULL ? h : "");
  return buf;
}

/* Every entry of one <target> directory. */
static int walk_target(const char *root, DIR *td, const char *tname,
                       walk_fn fn, void *user) {
  char path[PATH_MAX];
  struct dirent *he;
  int rc = 0;
  while (rc == 0 && (he = readdir(td)) != NULL) {
    if (he->d_name[0] == '.' || strlen(he->d_name) != 2)
      continue;
    DIR *hd = open_sub(dirfd(td), he->d_name,
                       level_path(path, sizeof path, root, tname, he->d_name),
                       fn, user, &rc);
    if (hd == NULL)
      continue;
    struct dirent *fe;
    while (rc == 0 && (fe = readdir(hd)) != NULL) {
      if (strcmp(fe->d_name, ".") == 0 || strcmp(fe->d_name, "..") == 0)
        continue;
      rc = visit_file(root, tname, he->d_name, dirfd(hd), fe->d_name, fn,
                      user);
    }
    closedir(hd);
  }
  return rc;
}

static int walk(const char *dir, walk_fn fn, void *user) {
  char *root = NULL, path[PATH_MAX];
  DIR *vd = NULL;
  int rootfd = -1, rc = uq__cache_resolve_dir(dir, &root);
  if (rc != 0)
    return rc;
  rootfd = uq__cache_inject(UQ__CACHE_OP_OPEN)
               ? -1
               : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) {
    rc = uq__errorf(errno == ENOENT ? UQ_ENOENT : UQ_EIO,
                    "cache directory %s: %s", root, strerror(errno));
    goto done;
  }
  struct stat rst;
  char why[UQ__CACHE_WHY_MAX];
  if (fstat(rootfd, &rst) == 0 && uq__cache_distrust(&rst, 1, why) != NULL) {
    /* The loader uses nothing under an untrusted root. */
    rc = visit_untrusted(root, rootfd, NULL, &rst, why, fn, user);
    goto done;
  }
  vd = open_sub(rootfd, UQ__CACHE_VERSION_DIR,
                level_path(path, sizeof path, root, NULL, NULL), fn, user,
                &rc);
  if (vd == NULL)
    goto done; /* an empty cache, or an untrusted v2 reported */
  struct dirent *te;
  while (rc == 0 && (te = readdir(vd)) != NULL) {
    if (te->d_name[0] == '.')
      continue;
    DIR *td = open_sub(dirfd(vd), te->d_name,
                       level_path(path, sizeof path, root, te->d_name, NULL),
                       fn, user, &rc);
    if (td == NULL)
      continue;
    rc = walk_target(root, td, te->d_name, fn, user);
    closedir(td);
  }
done:
  if (vd != NULL)
    closedir(vd);
  if (rootfd >= 0)
    close(rootfd);
  uq__free(root);
  return rc;
}

/* ---- list ---------------------------------------------------------------- */

typedef struct list_ctx {
  uq_cache_visit_fn visit;
  void *user;
} list_ctx;

static int list_one(void *user, const walk_item *it) {
  list_ctx *lc = user;
  if (it->is_temp)
    return 0;
  uq_cache_entry e;
  memset(&e, 0, sizeof e);
  e.path = it->path;
  e.target = it->target;
  e.size = (uint64_t)it->st->st_size;
  e.mtime = (int64_t)it->st->st_mtime;
  e.valid = it->valid;
  e.key_name = it->info->key_name;
  e.compiler = it->info->compiler;
  e.options = it->info->options;
  e.route = it->info->route;
  e.created = it->info->created;
  e.problem = it->problem;
  /* A positive value stops the walk without looking like a failure. */
  return lc->visit(lc->user, &e) != 0 ? 1 : 0;
}

int uq_cache_list(const char *dir, uq_cache_visit_fn visit, void *user) {
  uq__error_clear();
  if (visit == NULL)
    return uq__errorf(UQ_EINVAL, "uq_cache_list: visit is NULL");
  list_ctx lc = {visit, user};
  int rc = walk(dir, list_one, &lc);
  return rc > 0 ? 0 : rc;
}

/* ---- verify -------------------------------------------------------------- */

typedef struct verify_ctx {
  uint64_t good, bad;
} verify_ctx;

static int verify_one(void *user, const walk_item *it) {
  verify_ctx *vc = user;
  if (!it->is_temp) {
    if (it->valid)
      vc->good++;
    else
      vc->bad++;
  }
  return 0;
}

int uq_cache_verify(const char *dir, uint64_t *good, uint64_t *bad) {
  uq__error_clear();
  verify_ctx vc = {0, 0};
  int rc = walk(dir, verify_one, &vc);
  if (good != NULL)
    *good = vc.good;
  if (bad != NULL)
    *bad = vc.bad;
  return rc;
}

/* ---- prune --------------------------------------------------------------- */

typedef struct kept {
  char *path;
  uint64_t size;
  struct timespec mtime;
} kept;

typedef struct prune_ctx {
  kept *items;
  size_t n, cap;
  uint64_t removed;
  time_t now;
} prune_ctx;

/* Repairs a level the loader refuses: one of ours that group or others
 * may write becomes 0700 (entry files are still checked one by one); a
 * link or file in a directory's place, or a directory of another user, is
 * removed with what it holds (a link's target is not touched). The root
 * is the user's to fix. 1 when something was repaired. */
static int repair_level(const walk_item *it) {
  if (it->name == NULL)
    return 0;
  if (S_ISDIR(it->st->st_mode) && it->st->st_uid == geteuid())
    return fchmodat(it->hexfd, it->name, 0700, 0) == 0;
  return uq__cache_remove_tree(it->hexfd, it->name) == 0;
}

static int prune_one(void *user, const walk_item *it) {
  prune_ctx *pc = user;
  if (it->is_temp) {
    if (pc->now - it->st->st_mtime > UQ__CACHE_PRUNE_TEMP_SECONDS &&
        unlinkat(it->hexfd, it->name, 0) == 0)
      pc->removed++;
    return 0;
  }
  if (it->untrusted_dir) {
    if (repair_level(it))
      pc->removed++;
    return 0;
  }
  if (!it->valid) {
    /* Whatever stands at an entry's path: a file, FIFO, link or a
     * directory tree. */
    if (uq__cache_remove_tree(it->hexfd, it->name) == 0)
      pc->removed++;
    return 0;
  }
  if (pc->n == pc->cap) {
    size_t cap = pc->cap ? 2 * pc->cap : 64;
    kept *grown = uq__realloc(pc->items, cap * sizeof *grown);
    if (grown == NULL)
      return uq__errorf(UQ_ENOMEM, "uq_cache_prune: out of memory");
    pc->items = grown;
    pc->cap = cap;
  }
  char *p = uq__strdup(it->path);
  if (p == NULL)
    return uq__errorf(UQ_ENOMEM, "uq_cache_prune: out of memory");
  kept *k = &pc->items[pc->n++];
  k->path = p;
  k->size = (uint64_t)it->st->st_size;
  k->mtime = it->st->st_mtim;
  return 0;
}

/* Oldest first; ties by path so the order is reproducible. */
static int by_age(const void *a, const void *b) {
  const kept *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->path, y->path);
}

int uq_cache_prune(const char *dir, uint64_t max_bytes, uint64_t *removed,
                   uint64_t *bytes_left) {
  uq__error_clear();
  prune_ctx pc;
  memset(&pc, 0, sizeof pc);
  pc.now = time(NULL);
  uint64_t total = 0;
  int rc = walk(dir, prune_one, &pc);
  if (rc != 0)
    goto done;
  for (size_t i = 0; i < pc.n; i++)
    total += pc.items[i].size;
  if (pc.n > 1) /* qsort's base must not be NULL, even for no items */
    qsort(pc.items, pc.n, sizeof *pc.items, by_age);
  for (size_t i = 0; i < pc.n && total > max_bytes; i++) {
    if (unlink(pc.items[i].path) == 0) {
      pc.removed++;
      total -= pc.items[i].size;
    } else if (errno == ENOENT) {
      total -= pc.items[i].size; /* someone else removed it */
    }
  }
done:
  for (size_t i = 0; i < pc.n; i++)
    uq__free(pc.items[i].path);
  uq__free(pc.items);
  if (removed != NULL)
    *removed = pc.removed;
  if (bytes_left != NULL)
    *bytes_left = total;
  return rc;
}

int uq_cache_default_dir(char **dir) {
  uq__error_clear();
  if (dir == NULL)
    return uq__errorf(UQ_EINVAL, "uq_cache_default_dir: dir is NULL");
  return uq__cache_resolve_dir(NULL, dir);
}

int uq_cache_legacy_dirs(const char *dir, uq_cache_legacy_fn visit,
                         void *user) {
  uq__error_clear();
  if (visit == NULL)
    return uq__errorf(UQ_EINVAL, "uq_cache_legacy_dirs: visit is NULL");
  char *root = NULL;
  int rc = uq__cache_resolve_dir(dir, &root);
  if (rc != 0)
    return rc;
  /* Every format before this one named its directory "v<version>". */
  for (int v = 1; v < UQ__CACHE_FORMAT_VERSION; v++) {
    char path[UQ__CACHE_PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/v%d", root, v);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && visit(user, path, v))
      break;
  }
  uq__free(root);
  return 0;
}
