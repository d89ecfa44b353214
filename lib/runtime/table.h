/* The specialization table (DESIGN.md): (full key, device) -> an entry with
 * the code object and, for a device, the loaded module and function.
 *
 * Hot path: a hit is a hash of the key bytes, a few acquire loads and a
 * memcmp; it takes no lock and allocates nothing. Entries live in
 * fixed-capacity open-addressing segments; when a segment fills, a new one
 * twice as large is published after it (nothing is ever moved or
 * reallocated under readers), and entries are freed only by
 * uq__table_destroy.
 *
 * A miss inserts a placeholder under the table mutex and builds it outside
 * the mutex: exactly one thread builds a given entry; other threads asking
 * for the same entry wait for it on a condition variable; different entries
 * build concurrently. A failed build is REMEMBERED: later lookups of that
 * entry fail at once with the same status and detail (a compile error does
 * not fix itself; a new context starts afresh). */
#ifndef UQ_TABLE_H
#define UQ_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

#define UQ__SYMBOL_MAX 256

enum {
  UQ__ENTRY_BUILDING = 0,
  UQ__ENTRY_READY = 1,
  UQ__ENTRY_FAILED = 2
};

typedef struct uq__entry {
  /* Identity: compared as bytes. device -1 = the code object only. */
  uq_key key;
  int32_t device;
  int32_t state; /* atomic: UQ__ENTRY_* (release store when final) */
  int32_t status; /* when FAILED */
  char *detail;   /* uq_last_error() of the failed build (may be NULL) */
  /* Filled by the builder before it returns. */
  void *object; /* code object (uq__malloc'ed; the builder may leave NULL) */
  size_t object_len;
  void *module;   /* loaded module (device entries) */
  void *function; /* kernel handle (device entries) */
  char symbol[UQ__SYMBOL_MAX];
  uint32_t block_threads;
  int from_disk; /* the code object came from the on-disk cache */
  char compiler[256]; /* identity of the compiler that built the object */
  int32_t store_status;  /* why a compiled object is not in the disk cache
                            (0: stored, found there, or no cache) */
  char store_detail[512]; /* uq_last_error() of that failure */
  struct uq__entry *next_all; /* every entry, for destroy */
} uq__entry;

typedef struct uq__table uq__table;

/* Builds `e` (key and device set, everything else zero). Returns 0 or a
 * UQ_E* status with the detail in uq_last_error(). May look up other
 * entries of the same table (e.g. a device entry its code object). */
typedef int (*uq__table_build_fn)(void *user, uq__table *t, uq__entry *e);
/* Releases what the builder put into `e` (not `e` itself). May be NULL. */
typedef void (*uq__table_release_fn)(void *user, uq__entry *e);

int uq__table_create(uq__table_build_fn build, uq__table_release_fn release,
                     void *user, uq__table **out);
/* Releases every entry. No lookup may be running. */
void uq__table_destroy(uq__table *t);

/* Finds or builds the entry of (key, device). On success *out is READY and
 * stays valid until uq__table_destroy; *was_hit (may be NULL) is 1 when the
 * entry was already READY or another thread built it while this one waited.
 * `count` = 0 keeps this lookup out of the hit/miss counters (lookups
 * made by a builder). The key must be byte-reproducible (memset, fill). */
int uq__table_lookup(uq__table *t, const uq_key *key, int device, int count,
                     uq__entry **out, int *was_hit);

/* Counter updates by builders, and the counters. */
void uq__table_note_disk_hit(uq__table *t);
void uq__table_note_compile(uq__table *t, double seconds);
void uq__table_note_hits(uq__table *t, uint64_t n);
void uq__table_stats(const uq__table *t, uq_stats *stats);

#endif
