/* Entry files of the code-object cache: the digest that names an entry,
 * and the header + payload format, written and verified (cache.h). */
#include "lib/cache/cache_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"

/* ---- Digest ---------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static uint64_t get_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

void uq__cache_digest(const uq__cache_field *fields, size_t n, uq__digest *out) {
  XXH3_state_t st;
  uint8_t word[8];
  XXH3_128bits_reset(&st);
  put_le32(word, UQ__CACHE_FORMAT_VERSION);
  XXH3_128bits_update(&st, word, 4);
  for (size_t i = 0; i < n; i++) {
    const char *label = fields[i].label != NULL ? fields[i].label : "";
    size_t llen = strlen(label);
    put_le64(word, llen);
    XXH3_128bits_update(&st, word, 8);
    XXH3_128bits_update(&st, label, llen);
    put_le64(word, fields[i].len);
    XXH3_128bits_update(&st, word, 8);
    if (fields[i].len > 0)
      XXH3_128bits_update(&st, fields[i].data, fields[i].len);
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
  memcpy(out->bytes, c.digest, 16);
}

void uq__digest_hex(const uq__digest *d, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[d->bytes[i] >> 4];
    out[2 * i + 1] = hex[d->bytes[i] & 15];
  }
  out[32] = '\0';
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int uq__cache_digest_from_names(const char *hexdir, const char *file,
                                uq__digest *out) {
  char hex[33];
  if (strlen(hexdir) != 2 || strlen(file) != 33 || strcmp(file + 30, ".co") != 0)
    return UQ_EINVAL;
  memcpy(hex, hexdir, 2);
  memcpy(hex + 2, file, 30);
  for (int i = 0; i < 16; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return UQ_EINVAL;
    out->bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

void uq__cache_entry_names(const uq__digest *key, char hh[3],
                           char fname[34]) {
  char hex[33];
  uq__digest_hex(key, hex);
  memcpy(hh, hex, 2);
  hh[2] = '\0';
  snprintf(fname, 34, "%s.co", hex + 2);
}

/* ---- Entry files ------------------------------------------------------- */

static int read_full(int fd, void *buf, size_t n, off_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, n, off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return UQ_EIO;
    if (r == 0)
      return UQ_ECORRUPT; /* shrank under us */
    p += r;
    off += r;
    n -= (size_t)r;
  }
  return 0;
}

void uq__cache_make_header(uint8_t *h, const char *target,
                           const uq__digest *key, const void *payload,
                           size_t len) {
  memset(h, 0, UQ__CACHE_HEADER_SIZE);
  memcpy(h, UQ__CACHE_MAGIC, 8); /* includes the NUL */
  put_le32(h + 8, UQ__CACHE_FORMAT_VERSION);
  put_le32(h + 12, UQ__CACHE_HEADER_SIZE);
  put_le64(h + 16, len);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(payload, len));
  memcpy(h + 24, c.digest, 16);
  memcpy(h + 40, key->bytes, 16);
  memcpy(h + 56, target, strlen(target));
  put_le64(h + 104, XXH3_64bits(h, 104));
}

int uq__cache_read_entry(int fd, const char *target, const uq__digest *key,
                         void **payload, size_t *len,
                         uq__cache_entry_info *info) {
  uint8_t h[UQ__CACHE_HEADER_SIZE];
  struct stat st;
  void *buf = NULL;
  int rc;
  if (payload != NULL)
    *payload = NULL;
  if (len != NULL)
    *len = 0;
  if (fstat(fd, &st) != 0)
    return UQ_EIO;
  /* The size is checked before the header is trusted, so a crafted length
   * can never drive an allocation. */
  if (!S_ISREG(st.st_mode) || st.st_size < UQ__CACHE_HEADER_SIZE ||
      (uint64_t)st.st_size - UQ__CACHE_HEADER_SIZE > UQ__CACHE_MAX_PAYLOAD)
    return UQ_ECORRUPT;
  rc = read_full(fd, h, sizeof h, 0);
  if (rc != 0)
    return rc;
  if (memcmp(h, UQ__CACHE_MAGIC, 8) != 0 ||
      get_le32(h + 8) != UQ__CACHE_FORMAT_VERSION ||
      get_le32(h + 12) != UQ__CACHE_HEADER_SIZE ||
      get_le64(h + 104) != XXH3_64bits(h, 104))
    return UQ_ECORRUPT;
  uint64_t plen = get_le64(h + 16);
  if (plen != (uint64_t)st.st_size - UQ__CACHE_HEADER_SIZE)
    return UQ_ECORRUPT;
  /* The target field: a NUL-terminated name with zero padding. */
  const char *tf = (const char *)h + 56;
  size_t tlen = strnlen(tf, UQ__CACHE_TARGET_FIELD);
  if (tlen == 0 || tlen == UQ__CACHE_TARGET_FIELD)
    return UQ_ECORRUPT;
  for (size_t i = tlen; i < UQ__CACHE_TARGET_FIELD; i++)
    if (tf[i] != '\0')
      return UQ_ECORRUPT;
  if (info != NULL) {
    memcpy(info->target, tf, tlen + 1);
    memcpy(info->key.bytes, h + 40, 16);
    info->payload_len = plen;
  }
  if (target != NULL && strcmp(target, tf) != 0)
    return UQ_ECORRUPT;
  if (key != NULL && memcmp(key->bytes, h + 40, 16) != 0)
    return UQ_ECORRUPT;

  XXH128_canonical_t sum;
  if (payload != NULL) {
    buf = uq__malloc((size_t)plen);
    if (buf == NULL)
      return UQ_ENOMEM;
    rc = read_full(fd, buf, (size_t)plen, UQ__CACHE_HEADER_SIZE);
    if (rc != 0)
      goto done;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(buf, (size_t)plen));
  } else {
    uint8_t chunk[16384];
    XXH3_state_t hs;
    XXH3_128bits_reset(&hs);
    for (uint64_t off = 0; off < plen;) {
      size_t n = plen - off < sizeof chunk ? (size_t)(plen - off) : sizeof chunk;
      rc = read_full(fd, chunk, n, (off_t)(UQ__CACHE_HEADER_SIZE + off));
      if (rc != 0)
        return rc;
      XXH3_128bits_update(&hs, chunk, n);
      off += n;
    }
    XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(&hs));
  }
  if (memcmp(sum.digest, h + 24, 16) != 0) {
    rc = UQ_ECORRUPT;
    goto done;
  }
  if (payload != NULL) {
    *payload = buf;
    buf = NULL;
  }
  if (len != NULL)
    *len = (size_t)plen;
  rc = 0;
done:
  uq__free(buf);
  return rc;
}
