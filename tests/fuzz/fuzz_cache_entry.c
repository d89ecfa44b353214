/* libFuzzer target: the cache entry reader (uq__cache_read_entry) on
 * arbitrary bytes, and the entry-name parser. With the first byte odd the
 * rest gets correct checksums first (the documented layout: header XXH3-64
 * at 120, payload XXH3-128 at 24), so that mutations reach the checks that
 * follow the checksums instead of all stopping at them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/cache/cache.h"
#include "uqjit.h"

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void fix_checksums(uint8_t *e, size_t n) {
  if (n < UQ__CACHE_HEADER_SIZE)
    return;
  size_t h = get32(e + 12);
  if (h < UQ__CACHE_HEADER_SIZE || h > n)
    h = UQ__CACHE_HEADER_SIZE;
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(e + h, n - h));
  memcpy(e + 24, c.digest, 16);
  XXH3_state_t *st = XXH3_createState();
  if (st == NULL)
    return;
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, e, 120);
  XXH3_64bits_update(st, e + UQ__CACHE_HEADER_SIZE, h - UQ__CACHE_HEADER_SIZE);
  put64(e + 120, XXH3_64bits_digest(st));
  XXH3_freeState(st);
}

static void read_names(const uint8_t *data, size_t size) {
  char hexdir[3] = "", file[80];
  if (size < 2 || size - 2 >= sizeof file)
    return;
  memcpy(hexdir, data, 2);
  memcpy(file, data + 2, size - 2);
  file[size - 2] = '\0';
  uq__digest d;
  uint64_t prov;
  (void)uq__cache_digest_from_names(hexdir, file, &d, &prov);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  read_names(data, size);
  uint8_t *e = malloc(size);
  if (e == NULL)
    return 0;
  memcpy(e, data + 1, size - 1);
  if (data[0] & 1)
    fix_checksums(e, size - 1);
  int fd = memfd_create("entry", MFD_CLOEXEC);
  if (fd < 0 || write(fd, e, size - 1) != (ssize_t)(size - 1))
    abort();
  free(e);
  uq__cache_entry_info info;
  void *payload = NULL;
  size_t len = 0;
  int rc = uq__cache_read_entry(fd, NULL, NULL, NULL, &payload, &len, &info);
  if (rc == 0 && (len != info.payload_len || len > size))
    abort(); /* a valid entry's payload is what its header says, in the file */
  if (rc != 0 && payload != NULL)
    abort(); /* nothing handed out on failure */
  uq__free(payload);
  /* Verify-only (chunked checksum) must agree with the full read. */
  lseek(fd, 0, SEEK_SET);
  int rc2 = uq__cache_read_entry(fd, NULL, NULL, NULL, NULL, NULL, NULL);
  if ((rc == 0) != (rc2 == 0))
    abort();
  close(fd);
  uq__error_clear();
  return 0;
}
