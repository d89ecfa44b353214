#include "tests/support/internal/cache_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

void cu_fmt(char *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, PATH_MAX, fmt, ap);
  va_end(ap);
  if (n < 0 || n >= PATH_MAX)
    abort();
}

void cu_mkdtemp(char out[PATH_MAX]) {
  cu_fmt(out, "/tmp/uqcache-test-XXXXXX");
  if (mkdtemp(out) == NULL) {
    perror("mkdtemp");
    abort();
  }
}

void cu_rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    chmod(path, 0700);
    DIR *d = opendir(path);
    if (d != NULL) {
      struct dirent *e;
      while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
          continue;
        char sub[PATH_MAX];
        cu_fmt(sub, "%s/%s", path, e->d_name);
        cu_rm_rf(sub);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

void cu_key(int i, uq__digest *out) {
  char src[32];
  cu_fmt(src, "k%d", i);
  uq__cache_field f = {"source", src, strlen(src)};
  uq__cache_digest(&f, 1, out);
}

uint8_t *cu_payload(unsigned seed, size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
  return p;
}

static void hex_of(const uq__digest *key, char hex[33]) {
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", key->bytes[i]);
}

void cu_entry_dir(const char *root, const char *target, const uq__digest *key,
                  char out[PATH_MAX]) {
  char t[64], hex[33];
  cu_fmt(t, "%s", target);
  for (char *p = t; *p; p++)
    if (*p == ':')
      *p = '.';
  hex_of(key, hex);
  cu_fmt(out, "%s/v2/%s/%.2s", root, t, hex);
}

uint64_t cu_provenance(const char *compiler, const char *options) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, compiler, strlen(compiler) + 1);
  XXH3_64bits_update(&st, options, strlen(options));
  return XXH3_64bits_digest(&st);
}

void cu_entry_path_of(const char *root, const char *target,
                      const uq__digest *key, const char *compiler,
                      const char *options, char out[PATH_MAX]) {
  char dir[PATH_MAX], hex[33];
  cu_entry_dir(root, target, key, dir);
  hex_of(key, hex);
  cu_fmt(out, "%s/%s.%016llx.co", dir, hex + 2,
         (unsigned long long)cu_provenance(compiler, options));
}

void cu_entry_path(const char *root, const char *target, const uq__digest *key,
                   char out[PATH_MAX]) {
  cu_entry_path_of(root, target, key, "", "", out);
}

uint8_t *cu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
  size_t got = fread(p, 1, (size_t)n, f);
  fclose(f);
  *len = got;
  return p;
}

int cu_write_file(const char *path, const void *data, size_t len, int mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0)
    return -1;
  ssize_t w = write(fd, data, len);
  close(fd);
  chmod(path, mode);
  return w == (ssize_t)len ? 0 : -1;
}

void cu_flip_byte(const char *path, long offset) {
  int fd = open(path, O_RDWR);
  uint8_t b = 0;
  if (fd < 0 || pread(fd, &b, 1, offset) != 1)
    abort();
  b ^= 0x40;
  if (pwrite(fd, &b, 1, offset) != 1)
    abort();
  close(fd);
}

int cu_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static int count_where(const char *root, int temps) {
  int n = 0;
  DIR *d = opendir(root);
  if (d == NULL)
    return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char sub[PATH_MAX];
    struct stat st;
    cu_fmt(sub, "%s/%s", root, e->d_name);
    if (lstat(sub, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      n += count_where(sub, temps);
    } else if (temps) {
      n += strstr(e->d_name, ".tmp.") != NULL;
    } else {
      size_t l = strlen(e->d_name);
      n += l > 3 && strcmp(e->d_name + l - 3, ".co") == 0;
    }
  }
  closedir(d);
  return n;
}

int cu_count_temps(const char *root) { return count_where(root, 1); }
int cu_count_entries(const char *root) { return count_where(root, 0); }

void cu_mkdirs(const char *path, int mode) {
  char buf[PATH_MAX];
  cu_fmt(buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      mkdir(buf, mode);
      *p = '/';
    }
  }
  mkdir(buf, mode);
}

static void le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

size_t cu_build_entry_of(const char *target, const uq__digest *key,
                         const char *const meta[4], int64_t created,
                         const void *payload, size_t len,
                         uint64_t claimed_len, uint8_t **out) {
  size_t mlen = 0;
  for (int i = 0; i < 4; i++)
    mlen += strlen(meta[i]) + 1;
  size_t hsize = 128 + mlen, total = hsize + len;
  uint8_t *b = calloc(1, total);
  memcpy(b, "UQJITCO", 8);
  le(b + 8, 2, 4);
  le(b + 12, hsize, 4);
  le(b + 16, claimed_len, 8);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(payload, len));
  memcpy(b + 24, c.digest, 16);
  memcpy(b + 40, key->bytes, 16);
  memcpy(b + 56, target, strlen(target));
  le(b + 104, (uint64_t)created, 8);
  le(b + 112, cu_provenance(meta[1], meta[2]), 8);
  size_t at = 128;
  for (int i = 0; i < 4; i++) {
    memcpy(b + at, meta[i], strlen(meta[i]) + 1);
    at += strlen(meta[i]) + 1;
  }
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, b, 120);
  XXH3_64bits_update(&st, b + 128, mlen);
  le(b + 120, XXH3_64bits_digest(&st), 8);
  if (len > 0)
    memcpy(b + hsize, payload, len);
  *out = b;
  return total;
}

size_t cu_build_entry(const char *target, const uq__digest *key,
                      const void *payload, size_t len, uint64_t claimed_len,
                      uint8_t **out) {
  static const char *const none[4] = {"", "", "", ""};
  return cu_build_entry_of(target, key, none, 1, payload, len, claimed_len,
                           out);
}

int cu_setup_tmpdir(void **state) {
  char *root = malloc(PATH_MAX);
  if (root == NULL)
    return -1;
  cu_mkdtemp(root);
  *state = root;
  return 0;
}

int cu_teardown_tmpdir(void **state) {
  cu_rm_rf(*state);
  free(*state);
  return 0;
}
