#include "lib/runtime/table.h"

#include <pthread.h>
#include <string.h>

#include <xxhash.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"

/* Segment i holds 64 << i slots, so 40 segments are more entries than any
 * process will ever build. */
#define SEG_FIRST 64
#define SEG_MAX 40

typedef struct segment {
  size_t cap;           /* power of two */
  size_t used;          /* written under the mutex only */
  uq__entry **slots;    /* published with release stores */
} segment;

struct uq__table {
  pthread_mutex_t mutex; /* inserts and waits; never held during a build */
  pthread_cond_t built;  /* broadcast when any entry becomes final */
  segment *segs[SEG_MAX]; /* published with release stores */
  int nsegs;              /* atomic */
  uq__entry *all;         /* under the mutex */
  uq__table_build_fn build;
  uq__table_release_fn release;
  void *user;
  uint64_t hits, misses, disk_hits, compiles, compile_ns; /* atomic */
};

static uint64_t hash_of(const uq_key *key, int device) {
  return XXH3_64bits_withSeed(key, sizeof *key, (uint64_t)(uint32_t)device);
}

static int same(const uq__entry *e, const uq_key *key, int device) {
  return e->device == device && memcmp(&e->key, key, sizeof *key) == 0;
}

/* Lock-free: every pointer read here was published with a release store
 * after the object it points to was complete. */
static uq__entry *find(uq__table *t, const uq_key *key, int device,
                       uint64_t h) {
  int n = __atomic_load_n(&t->nsegs, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    segment *s = __atomic_load_n(&t->segs[i], __ATOMIC_ACQUIRE);
    size_t mask = s->cap - 1;
    for (size_t j = (size_t)h & mask;; j = (j + 1) & mask) {
      uq__entry *e = __atomic_load_n(&s->slots[j], __ATOMIC_ACQUIRE);
      if (e == NULL)
        break;
      if (same(e, key, device))
        return e;
    }
  }
  return NULL;
}

static segment *segment_new(size_t cap) {
  segment *s = uq__calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->cap = cap;
  s->slots = uq__calloc(cap, sizeof *s->slots);
  if (s->slots == NULL) {
    uq__free(s);
    return NULL;
  }
  return s;
}

/* Under the mutex. Keeps every segment at most half full so that probes
 * always reach an empty slot. */
static int insert(uq__table *t, uq__entry *e, uint64_t h) {
  int n = t->nsegs;
  segment *s = n > 0 ? t->segs[n - 1] : NULL;
  if (s == NULL || (s->used + 1) * 2 > s->cap) {
    if (n == SEG_MAX)
      return UQ_ENOMEM;
    s = segment_new(n == 0 ? SEG_FIRST : t->segs[n - 1]->cap * 2);
    if (s == NULL)
      return UQ_ENOMEM;
    __atomic_store_n(&t->segs[n], s, __ATOMIC_RELEASE);
    __atomic_store_n(&t->nsegs, n + 1, __ATOMIC_RELEASE);
  }
  size_t mask = s->cap - 1;
  size_t j = (size_t)h & mask;
  while (s->slots[j] != NULL)
    j = (j + 1) & mask;
  s->used++;
  __atomic_store_n(&s->slots[j], e, __ATOMIC_RELEASE);
  e->next_all = t->all;
  t->all = e;
  return 0;
}

int uq__table_create(uq__table_build_fn build, uq__table_release_fn release,
                     void *user, uq__table **out) {
  *out = NULL;
  uq__table *t = uq__calloc(1, sizeof *t);
  if (t == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory creating the table");
  if (pthread_mutex_init(&t->mutex, NULL) != 0) {
    uq__free(t);
    return uq__errorf(UQ_ENOMEM, "pthread_mutex_init failed");
  }
  if (pthread_cond_init(&t->built, NULL) != 0) {
    pthread_mutex_destroy(&t->mutex);
    uq__free(t);
    return uq__errorf(UQ_ENOMEM, "pthread_cond_init failed");
  }
  t->build = build;
  t->release = release;
  t->user = user;
  *out = t;
  return 0;
}

void uq__table_destroy(uq__table *t) {
  if (t == NULL)
    return;
  /* Newest first, so an entry that depends on an older one (a device entry
   * on its code object) is released before it. */
  for (uq__entry *e = t->all, *next; e != NULL; e = next) {
    next = e->next_all;
    if (t->release != NULL && e->state == UQ__ENTRY_READY)
      t->release(t->user, e);
    uq__free(e->object);
    uq__free(e->detail);
    uq__free(e);
  }
  for (int i = 0; i < t->nsegs; i++) {
    uq__free(t->segs[i]->slots);
    uq__free(t->segs[i]);
  }
  pthread_cond_destroy(&t->built);
  pthread_mutex_destroy(&t->mutex);
  uq__free(t);
}

static void count_add(uint64_t *c, uint64_t n) {
  __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static int replay_failure(const uq__entry *e) {
  return uq__errorf(e->status, "%s",
                    e->detail != NULL ? e->detail : uq_strerror(e->status));
}

int uq__table_lookup(uq__table *t, const uq_key *key, int device, int count,
                     uq__entry **out, int *was_hit) {
  *out = NULL;
  if (was_hit != NULL)
    *was_hit = 0;
  uint64_t h = hash_of(key, device);
  uq__entry *e = find(t, key, device, h);
  if (e != NULL &&
      __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == UQ__ENTRY_READY) {
    if (count)
      count_add(&t->hits, 1);
    if (was_hit != NULL)
      *was_hit = 1;
    *out = e;
    return 0;
  }

  int mine = 0;
  if (e == NULL) {
    pthread_mutex_lock(&t->mutex);
    e = find(t, key, device, h);
    if (e == NULL) {
      e = uq__calloc(1, sizeof *e);
      if (e != NULL) {
        /* Identity first: insert() publishes the pointer with a release
         * store, after which lock-free readers compare these bytes. */
        memcpy(&e->key, key, sizeof *key);
        e->device = device;
      }
      if (e == NULL || insert(t, e, h) != 0) {
        pthread_mutex_unlock(&t->mutex);
        uq__free(e);
        return uq__errorf(UQ_ENOMEM, "out of memory growing the table");
      }
      mine = 1;
    }
    pthread_mutex_unlock(&t->mutex);
  }

  if (!mine) {
    pthread_mutex_lock(&t->mutex);
    while (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == UQ__ENTRY_BUILDING)
      pthread_cond_wait(&t->built, &t->mutex);
    pthread_mutex_unlock(&t->mutex);
    if (e->state == UQ__ENTRY_FAILED) {
      if (count)
        count_add(&t->misses, 1);
      return replay_failure(e);
    }
    if (count)
      count_add(&t->hits, 1);
    if (was_hit != NULL)
      *was_hit = 1;
    *out = e;
    return 0;
  }

  if (count)
    count_add(&t->misses, 1);
  int rc = t->build(t->user, t, e);
  if (rc != 0) {
    e->status = rc;
    e->detail = uq__strdup(uq_last_error());
  }
  pthread_mutex_lock(&t->mutex);
  __atomic_store_n(&e->state, rc == 0 ? UQ__ENTRY_READY : UQ__ENTRY_FAILED,
                   __ATOMIC_RELEASE);
  pthread_cond_broadcast(&t->built);
  pthread_mutex_unlock(&t->mutex);
  if (rc != 0)
    return rc; /* the builder's detail is still this thread's */
  *out = e;
  return 0;
}

void uq__table_note_disk_hit(uq__table *t) { count_add(&t->disk_hits, 1); }

void uq__table_note_compile(uq__table *t, double seconds) {
  count_add(&t->compiles, 1);
  count_add(&t->compile_ns, (uint64_t)(seconds * 1e9 + 0.5));
}

void uq__table_note_hits(uq__table *t, uint64_t n) { count_add(&t->hits, n); }

void uq__table_stats(const uq__table *t, uq_stats *stats) {
  memset(stats, 0, sizeof *stats);
  stats->hits = __atomic_load_n(&t->hits, __ATOMIC_RELAXED);
  stats->misses = __atomic_load_n(&t->misses, __ATOMIC_RELAXED);
  stats->disk_hits = __atomic_load_n(&t->disk_hits, __ATOMIC_RELAXED);
  stats->compiles = __atomic_load_n(&t->compiles, __ATOMIC_RELAXED);
  stats->compile_seconds =
      (double)__atomic_load_n(&t->compile_ns, __ATOMIC_RELAXED) * 1e-9;
}
