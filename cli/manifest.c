/* Sorted key-name lists and the manifest file (cli/manifest.h). */
#include "cli/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_LEN 512

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void cli_names_free(char **names, size_t count) {
  if (names == NULL)
    return;
  for (size_t i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

int cli_key_names(const uq_key *keys, size_t n, char ***names,
                  size_t *count) {
  *names = NULL;
  *count = 0;
  char **v = calloc(n ? n : 1, sizeof *v);
  if (v == NULL)
    return UQ_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    char buf[NAME_LEN];
    int len = uq_key_name(&keys[i], buf, sizeof buf);
    if (len < 0 || (size_t)len >= sizeof buf || !(v[i] = strdup(buf))) {
      cli_names_free(v, i);
      return len < 0 ? len : UQ_ENOMEM;
    }
  }
  qsort(v, n, sizeof *v, cmp_names);
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    if (out > 0 && strcmp(v[out - 1], v[i]) == 0)
      free(v[i]);
    else
      v[out++] = v[i];
  }
  *names = v;
  *count = out;
  return 0;
}

/* What stands at `path`, in words, when it is not a regular file. */
static const char *kind_of(mode_t mode) {
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/* The header and names, one a line; 0, or -1 with errno. */
static int write_lines(FILE *f, const char *header, char *const *names,
                       size_t count) {
  fprintf(f, "# %s\n", header);
  for (size_t i = 0; i < count; i++)
    fprintf(f, "%s\n", names[i]);
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* "-": standard output. */
static int write_stdout(const char *cmd, const char *header,
                        char *const *names, size_t count) {
  if (write_lines(stdout, header, names, count) == 0)
    return 0;
  fprintf(stderr, "uqjit %s: --manifest -: %s\n", cmd, strerror(errno));
  return -1;
}

/* 0 when `path` is a regular file or nothing; else -1 with a message
 * naming what is there. */
static int check_target(const char *cmd, const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT)
      return 0;
    fprintf(stderr, "uqjit %s: --manifest %s: %s\n", cmd, path,
            strerror(errno));
    return -1;
  }
  if (S_ISREG(st.st_mode))
    return 0;
  fprintf(stderr,
          "uqjit %s: --manifest %s: %s, not a regular file: not replaced "
          "(give --manifest - for standard output)\n",
          cmd, path, kind_of(st.st_mode));
  return -1;
}

/* A private file beside `path` (".<name>.XXXXXX", O_EXCL and O_NOFOLLOW:
 * nothing planted there is opened), written, synced and renamed over
 * `path`. 0, or -1 with errno; the temporary file is gone on failure. */
static int replace_file(const char *path, const char *header,
                        char *const *names, size_t count) {
  const char *slash = strrchr(path, '/');
  size_t dlen = slash != NULL ? (size_t)(slash - path) + 1 : 0;
  size_t len = strlen(path) + 16;
  char *tmp = malloc(len);
  if (tmp == NULL) {
    errno = ENOMEM;
    return -1;
  }
  snprintf(tmp, len, "%.*s.%s.XXXXXX", (int)dlen, path, path + dlen);
  int fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  int e = 0;
  if (f == NULL) {
    e = errno;
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
    free(tmp);
    errno = e;
    return -1;
  }
  /* Readable as a file made with fopen would be: 0666 less the umask. */
  mode_t mask = umask(0);
  umask(mask);
  int ok = fchmod(fd, 0666 & ~mask) == 0 &&
           write_lines(f, header, names, count) == 0 && fsync(fd) == 0;
  e = errno;
  ok = fclose(f) == 0 && ok;
  e = ok ? 0 : e ? e : errno;
  if (ok && rename(tmp, path) != 0) {
    ok = 0;
    e = errno;
  }
  if (!ok)
    unlink(tmp);
  free(tmp);
  errno = e;
  return ok ? 0 : -1;
}

int cli_manifest_write(const char *cmd, const char *path, const char *header,
                       char *const *names, size_t count) {
  if (strcmp(path, "-") == 0)
    return write_stdout(cmd, header, names, count);
  if (check_target(cmd, path) != 0)
    return -1;
  if (replace_file(path, header, names, count) == 0)
    return 0;
  fprintf(stderr, "uqjit %s: --manifest %s: %s\n", cmd, path,
          strerror(errno));
  return -1;
}
