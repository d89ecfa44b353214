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
/* A manifest larger than this is no manifest (a deployment lists a few
 * thousand names at most): reading stops there, so /dev/zero ends too. */
#define MANIFEST_MAX_BYTES (16u << 20)

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

/* The whole file (at most MANIFEST_MAX_BYTES), or NULL with a message. */
static char *read_all(const char *cmd, const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "uqjit %s: cannot read %s: %s\n", cmd, path,
            strerror(errno));
    return NULL;
  }
  char *text = malloc(MANIFEST_MAX_BYTES + 1);
  size_t n = 0;
  while (text != NULL && n <= MANIFEST_MAX_BYTES) {
    size_t got = fread(text + n, 1, MANIFEST_MAX_BYTES + 1 - n, f);
    if (got == 0)
      break;
    n += got;
  }
  int bad = text == NULL || ferror(f) || n > MANIFEST_MAX_BYTES;
  int e = errno;
  fclose(f);
  if (bad) {
    fprintf(stderr, "uqjit %s: cannot read %s: %s\n", cmd, path,
            text == NULL                 ? "out of memory"
            : n > MANIFEST_MAX_BYTES ? "larger than 16 MiB: not a manifest"
                                         : strerror(e));
    free(text);
    return NULL;
  }
  *len = n;
  return text;
}

/* One line (not NUL-terminated) into keys[*n]: 0 (a name or nothing to
 * take), -1 with a message. */
static int take_line(const char *cmd, const char *path, long lineno,
                     char *line, size_t len, uq_key *keys, size_t *n) {
  if (memchr(line, '\0', len) != NULL) {
    fprintf(stderr, "uqjit %s: %s:%ld: a NUL byte in the line\n", cmd, path,
            lineno);
    return -1;
  }
  while (len > 0 && strchr("\r \t", line[len - 1]) != NULL)
    len--;
  while (len > 0 && (*line == ' ' || *line == '\t')) {
    line++;
    len--;
  }
  if (len == 0 || *line == '#')
    return 0;
  char name[NAME_LEN];
  if (len >= sizeof name) {
    fprintf(stderr, "uqjit %s: %s:%ld: malformed kernel name (%zu "
            "characters)\n", cmd, path, lineno, len);
    return -1;
  }
  memcpy(name, line, len);
  name[len] = '\0';
  if (uq_key_parse(name, &keys[*n]) != 0) {
    fprintf(stderr, "uqjit %s: %s:%ld: malformed kernel name '%s': %s\n",
            cmd, path, lineno, name, uq_last_error());
    return -1;
  }
  (*n)++;
  return 0;
}

int cli_manifest_read(const char *cmd, const char *path, char ***names,
                      size_t *count) {
  *names = NULL;
  *count = 0;
  size_t len = 0;
  char *text = read_all(cmd, path, &len);
  if (text == NULL)
    return -1;
  size_t cap = 1;
  for (size_t i = 0; i < len; i++)
    cap += text[i] == '\n';
  uq_key *keys = calloc(cap, sizeof *keys);
  size_t n = 0;
  int rc = keys != NULL ? 0 : -1;
  if (keys == NULL)
    fprintf(stderr, "uqjit %s: %s: out of memory\n", cmd, path);
  long lineno = 0;
  for (size_t at = 0; rc == 0 && at < len;) {
    char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl != NULL ? (size_t)(nl - text) : len;
    rc = take_line(cmd, path, ++lineno, text + at, end - at, keys, &n);
    at = end + 1;
  }
  if (rc == 0 && cli_key_names(keys, n, names, count) != 0) {
    fprintf(stderr, "uqjit %s: %s: cannot name the kernels\n", cmd, path);
    rc = -1;
  }
  free(keys);
  free(text);
  return rc;
}
