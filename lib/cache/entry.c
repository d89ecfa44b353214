/* Entry files of the code-object cache: the digest that names an entry,
 * and the header + payload format (documented below, "Entry files"),
 * written and verified. */
#include "lib/cache/cache_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
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

static int parse_hex(const char *hex, size_t n, uint8_t *out) {
  for (size_t i = 0; i < n / 2; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return UQ_EINVAL;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

int uq__cache_digest_from_names(const char *hexdir, const char *file,
                                uq__digest *out, uint64_t *provenance) {
  char hex[33];
  uint8_t prov[8];
  if (strlen(hexdir) != 2 || strlen(file) != UQ__CACHE_FNAME_LEN ||
      file[30] != '.' || strcmp(file + 47, ".co") != 0)
    return UQ_EINVAL;
  memcpy(hex, hexdir, 2);
  memcpy(hex + 2, file, 30);
  if (parse_hex(hex, 32, out->bytes) != 0 || parse_hex(file + 31, 16, prov) != 0)
    return UQ_EINVAL;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = (v << 8) | prov[i];
  *provenance = v;
  return 0;
}

void uq__cache_entry_names(const uq__digest *key, uint64_t provenance,
                           char hh[3], char fname[UQ__CACHE_FNAME_LEN + 1],
                           char prefix[32]) {
  char hex[33];
  uq__digest_hex(key, hex);
  memcpy(hh, hex, 2);
  hh[2] = '\0';
  snprintf(fname, UQ__CACHE_FNAME_LEN + 1, "%s.%016llx.co", hex + 2,
           (unsigned long long)provenance);
  if (prefix != NULL)
    snprintf(prefix, 32, "%s.", hex + 2);
}

uint64_t uq__cache_provenance(const char *compiler, const char *options) {
  XXH3_state_t st;
  compiler = compiler != NULL ? compiler : "";
  options = options != NULL ? options : "";
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, compiler, strlen(compiler) + 1);
  XXH3_64bits_update(&st, options, strlen(options));
  return XXH3_64bits_digest(&st);
}

/* ---- Entry files -------------------------------------------------------
 * An entry file is a fixed header of UQ__CACHE_HEADER_SIZE bytes, the
 * metadata and the payload. Integers are little-endian; offsets in bytes:
 *
 *     0  magic "UQJITCO\0" (UQ__CACHE_MAGIC and its NUL, 8 bytes)
 *     8  u32 format version (UQ__CACHE_FORMAT_VERSION)
 *    12  u32 header size H: the fixed part and the metadata
 *    16  u64 payload length (the file's size minus H)
 *    24  XXH3-128 of the payload, canonical (16 bytes)
 *    40  the key digest (uq__cache_digest, 16 bytes)
 *    56  target, NUL-terminated and NUL-padded (UQ__CACHE_TARGET_FIELD)
 *   104  i64 created (unix seconds)
 *   112  u64 provenance: uq__cache_provenance of the compiler and options
 *        in the metadata (the file name carries it too)
 *   120  u64 XXH3-64 of bytes 0..119 followed by bytes 128..H-1, so that
 *        any flipped header or metadata byte is caught
 *   128  metadata: key name, compiler identity, options, route, each
 *        NUL-terminated, nothing else (at most UQ__CACHE_MAX_META bytes)
 *     H  the payload (the code object), to the end of the file
 *
 * A reader checks every one of them (read_header, uq__cache_read_entry);
 * any mismatch makes the entry corrupt, never a wrong kernel. */
enum {
  OFF_MAGIC = 0,
  OFF_VERSION = 8,
  OFF_HEADER_SIZE = 12,
  OFF_PAYLOAD_LEN = 16,
  OFF_PAYLOAD_SUM = 24,
  OFF_KEY = 40,
  OFF_TARGET = 56,
  OFF_CREATED = 104,
  OFF_PROVENANCE = 112,
  OFF_CHECKSUM = 120,
  OFF_META = UQ__CACHE_HEADER_SIZE,
};
_Static_assert(OFF_TARGET + UQ__CACHE_TARGET_FIELD == OFF_CREATED,
               "the target field ends where the creation time starts");
_Static_assert(OFF_CHECKSUM + 8 == OFF_META,
               "the checksum is the fixed header's last field");

static int read_full(int fd, void *buf, size_t n, off_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = uq__cache_inject(UQ__CACHE_OP_READ) ? -1 : pread(fd, p, n, off);
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

/* XXH3-64 of the fixed header (checksum field excluded) and metadata. */
static uint64_t header_checksum(const uint8_t *h, const uint8_t *meta,
                                size_t meta_len) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, h, OFF_CHECKSUM);
  XXH3_64bits_update(&st, meta, meta_len);
  return XXH3_64bits_digest(&st);
}

static size_t put_string(uint8_t *m, size_t at, const char *s, size_t field) {
  size_t n = s != NULL ? strlen(s) : 0;
  if (at == 0 || n >= field)
    return 0;
  memcpy(m + at - 1, s != NULL ? s : "", n);
  m[at - 1 + n] = '\0';
  return at + n + 1;
}

size_t uq__cache_make_header(uint8_t *h, const char *target,
                             const uq__digest *key, const uq__cache_meta *meta,
                             const void *payload, size_t len) {
  static const uq__cache_meta none = {NULL, NULL, NULL, NULL, 0};
  if (meta == NULL)
    meta = &none;
  memset(h, 0, UQ__CACHE_HEADER_SIZE);
  uint8_t *m = h + UQ__CACHE_HEADER_SIZE;
  /* Offsets are kept one-based so that 0 can mean "did not fit". */
  size_t at = 1;
  at = put_string(m, at, meta->key_name, UQ__CACHE_NAME_FIELD);
  at = put_string(m, at, meta->compiler, UQ__CACHE_COMPILER_FIELD);
  at = put_string(m, at, meta->options, UQ__CACHE_OPTIONS_FIELD);
  at = put_string(m, at, meta->route, UQ__CACHE_ROUTE_FIELD);
  if (at == 0)
    return 0;
  size_t meta_len = at - 1;
  size_t hsize = UQ__CACHE_HEADER_SIZE + meta_len;
  memcpy(h + OFF_MAGIC, UQ__CACHE_MAGIC, 8); /* includes the NUL */
  put_le32(h + OFF_VERSION, UQ__CACHE_FORMAT_VERSION);
  put_le32(h + OFF_HEADER_SIZE, (uint32_t)hsize);
  put_le64(h + OFF_PAYLOAD_LEN, len);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(payload, len));
  memcpy(h + OFF_PAYLOAD_SUM, c.digest, 16);
  memcpy(h + OFF_KEY, key->bytes, 16);
  memcpy(h + OFF_TARGET, target, strlen(target));
  put_le64(h + OFF_CREATED, (uint64_t)(meta->created != 0
                                           ? meta->created
                                           : (int64_t)time(NULL)));
  put_le64(h + OFF_PROVENANCE,
           uq__cache_provenance(meta->compiler, meta->options));
  put_le64(h + OFF_CHECKSUM, header_checksum(h, m, meta_len));
  return hsize;
}

/* Splits the metadata block into its four strings; 0 or UQ_ECORRUPT. */
static int parse_meta(const uint8_t *m, size_t n, uq__cache_entry_info *info) {
  char *fields[4] = {info->key_name, info->compiler, info->options,
                     info->route};
  const size_t caps[4] = {UQ__CACHE_NAME_FIELD, UQ__CACHE_COMPILER_FIELD,
                          UQ__CACHE_OPTIONS_FIELD, UQ__CACHE_ROUTE_FIELD};
  size_t at = 0;
  for (int i = 0; i < 4; i++) {
    const uint8_t *end = memchr(m + at, '\0', n - at);
    if (end == NULL)
      return UQ_ECORRUPT;
    size_t len = (size_t)(end - (m + at));
    if (len >= caps[i])
      return UQ_ECORRUPT;
    memcpy(fields[i], m + at, len + 1);
    at += len + 1;
  }
  return at == n ? 0 : UQ_ECORRUPT;
}

/* Reads and checks the header and metadata; on success *hsize and *plen
 * say where the payload is and how long it is. */
static int read_header(int fd, const struct stat *st, uq__cache_entry_info *in,
                       size_t *hsize, uint64_t *plen) {
  uint8_t h[UQ__CACHE_HEADER_SIZE + UQ__CACHE_MAX_META];
  /* The size is checked before the header is trusted, so a crafted length
   * can never drive an allocation or a read past the buffer. */
  if (!S_ISREG(st->st_mode) || st->st_size < UQ__CACHE_HEADER_SIZE)
    return UQ_ECORRUPT;
  int rc = read_full(fd, h, UQ__CACHE_HEADER_SIZE, 0);
  if (rc != 0)
    return rc;
  uint32_t hs = get_le32(h + OFF_HEADER_SIZE);
  if (memcmp(h + OFF_MAGIC, UQ__CACHE_MAGIC, 8) != 0 ||
      get_le32(h + OFF_VERSION) != UQ__CACHE_FORMAT_VERSION ||
      hs < UQ__CACHE_HEADER_SIZE + 4 ||
      hs > UQ__CACHE_HEADER_SIZE + UQ__CACHE_MAX_META ||
      (uint64_t)st->st_size < hs ||
      (uint64_t)st->st_size - hs > UQ__CACHE_MAX_PAYLOAD)
    return UQ_ECORRUPT;
  size_t meta_len = hs - UQ__CACHE_HEADER_SIZE;
  rc = read_full(fd, h + UQ__CACHE_HEADER_SIZE, meta_len,
                 UQ__CACHE_HEADER_SIZE);
  if (rc != 0)
    return rc;
  if (get_le64(h + OFF_CHECKSUM) !=
      header_checksum(h, h + UQ__CACHE_HEADER_SIZE, meta_len))
    return UQ_ECORRUPT;
  *plen = get_le64(h + OFF_PAYLOAD_LEN);
  if (*plen != (uint64_t)st->st_size - hs)
    return UQ_ECORRUPT;
  /* The target field: a NUL-terminated name with zero padding. */
  const char *tf = (const char *)h + OFF_TARGET;
  size_t tlen = strnlen(tf, UQ__CACHE_TARGET_FIELD);
  if (tlen == 0 || tlen == UQ__CACHE_TARGET_FIELD)
    return UQ_ECORRUPT;
  for (size_t i = tlen; i < UQ__CACHE_TARGET_FIELD; i++)
    if (tf[i] != '\0')
      return UQ_ECORRUPT;
  memcpy(in->target, tf, tlen + 1);
  memcpy(in->key.bytes, h + OFF_KEY, 16);
  in->payload_len = *plen;
  in->created = (int64_t)get_le64(h + OFF_CREATED);
  in->provenance = get_le64(h + OFF_PROVENANCE);
  if (parse_meta(h + UQ__CACHE_HEADER_SIZE, meta_len, in) != 0 ||
      in->provenance != uq__cache_provenance(in->compiler, in->options))
    return UQ_ECORRUPT;
  *hsize = hs;
  return 0;
}

/* XXH3-128 of the payload, read in chunks without keeping it. */
static int digest_payload(int fd, off_t start, uint64_t plen,
                          XXH128_canonical_t *sum) {
  uint8_t chunk[16384];
  XXH3_state_t hs;
  XXH3_128bits_reset(&hs);
  for (uint64_t off = 0; off < plen;) {
    size_t n = plen - off < sizeof chunk ? (size_t)(plen - off) : sizeof chunk;
    int rc = read_full(fd, chunk, n, (off_t)(start + (off_t)off));
    if (rc != 0)
      return rc;
    XXH3_128bits_update(&hs, chunk, n);
    off += n;
  }
  XXH128_canonicalFromHash(sum, XXH3_128bits_digest(&hs));
  return 0;
}

int uq__cache_read_entry(int fd, const char *target, const uq__digest *key,
                         const uint64_t *provenance, void **payload,
                         size_t *len, uq__cache_entry_info *info) {
  uq__cache_entry_info local;
  uq__cache_entry_info *in = info != NULL ? info : &local;
  struct stat st;
  uint8_t want_sum[16];
  void *buf = NULL;
  size_t hsize = 0;
  uint64_t plen = 0;
  if (payload != NULL)
    *payload = NULL;
  if (len != NULL)
    *len = 0;
  if (fstat(fd, &st) != 0)
    return UQ_EIO;
  memset(in, 0, sizeof *in);
  int rc = read_header(fd, &st, in, &hsize, &plen);
  if (rc != 0)
    return rc;
  if ((target != NULL && strcmp(target, in->target) != 0) ||
      (key != NULL && memcmp(key->bytes, in->key.bytes, 16) != 0) ||
      (provenance != NULL && *provenance != in->provenance))
    return UQ_ECORRUPT;
  rc = read_full(fd, want_sum, 16, OFF_PAYLOAD_SUM);
  if (rc != 0)
    return rc;
  XXH128_canonical_t sum;
  if (payload != NULL) {
    buf = uq__malloc(plen > 0 ? (size_t)plen : 1);
    if (buf == NULL)
      return UQ_ENOMEM;
    rc = read_full(fd, buf, (size_t)plen, (off_t)hsize);
    if (rc != 0)
      goto done;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(buf, (size_t)plen));
  } else {
    rc = digest_payload(fd, (off_t)hsize, plen, &sum);
    if (rc != 0)
      return rc;
  }
  if (memcmp(sum.digest, want_sum, 16) != 0) {
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
