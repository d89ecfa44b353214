/* The JIT step: a key's code object from its source, through the disk
 * cache or the compiler, and the public calls built on it (sources, code
 * objects, ahead-of-time compiles of many keys). */
#include "lib/runtime/jit.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/cache/lock.h"
#include "lib/codegen/emit.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "lib/runtime/miss.h"
#include "uqjit_tools.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The route whose source names a kernel in the disk cache. AMD's is the
 * offline clang route: the hipRTC route's source differs only by its
 * prelude, and a hipRTC runtime must find clang-warmed entries. */
static uq__route canonical_route(const char *target) {
  return strncmp(target, "sm_", 3) == 0 ? UQ__ROUTE_NVRTC : UQ__ROUTE_CLANG;
}

/* The source of a checked key for `route` into `src` (initialised by the
 * caller). */
static int gen_source(const uq__checked_key *ck, uq__route route,
                      uq__buf *src) {
  int rc = uq__gen_emit(ck, route, src);
  if (rc == 0 && src->status != 0)
    rc = uq__errorf(src->status, "out of memory generating a kernel source");
  return rc;
}

int uq__jit_kernel_digest(const uq__checked_key *ck, char *symbol, size_t n,
                          uq__digest *out) {
  const uq_key *key = &ck->key;
  int need = uq__gen_symbol_of(ck, symbol, n);
  if ((size_t)need >= n)
    return uq__errorf(UQ_EINVAL, "kernel symbol %s... does not fit", symbol);
  uq__buf src;
  uq__buf_init(&src);
  int rc = gen_source(ck, canonical_route(key->target), &src);
  if (rc == 0) {
    const uq__cache_field fields[] = {
        {"target", key->target, strlen(key->target)},
        {"symbol", symbol, strlen(symbol)},
        {"source", src.data, src.len},
    };
    uq__cache_digest(fields, sizeof fields / sizeof fields[0], out);
  }
  uq__buf_free(&src);
  return rc;
}

/* Compiles the checked key of `e` with `cc` and publishes the object under
 * `digest`. */
static int compile_and_store(uq_context *ctx, uq__entry *e,
                             const uq__checked_key *ck,
                             const uq__compiler *cc, const uq__digest *digest,
                             void **obj, size_t *obj_len) {
  const uq_key *key = &ck->key;
  const char *name = ck->name;
  uq__buf src;
  uq__buf_init(&src);
  int rc = gen_source(ck, uq__compiler_route(cc), &src);
  if (rc != 0)
    goto done;
  double t0 = now_seconds();
  rc = uq__compiler_compile(cc, key->target, src.data, src.len, e->symbol,
                            obj, obj_len);
  if (rc != 0)
    goto done;
  double took = now_seconds() - t0;
  uq__table_note_compile(ctx->table, took);
  uq__log(UQ__LOG_INFO, "compiled %s with %s in %.2f s", name,
          uq__compiler_identity(cc), took);
  const uq__cache_meta meta = {name, uq__compiler_identity(cc),
                               uq__compiler_options(cc, key->target),
                               uq__route_name(uq__compiler_route(cc)), 0};
  /* A failed write is not this call's failure: the kernel still runs
   * (uq__cache_put warns once). uq_compile_keys, whose job is to fill the
   * cache, counts it as failed from e->store_status. */
  if (ctx->cache != NULL) {
    int put = uq__cache_put(ctx->cache, key->target, digest, &meta, *obj,
                            *obj_len);
    if (put != 0) {
      e->store_status = put;
      snprintf(e->store_detail, sizeof e->store_detail, "%s",
               uq_last_error());
    }
    uq__error_clear();
  }
done:
  uq__buf_free(&src);
  return rc;
}

/* The layer (cache root) an entry path lies in: the path without its
 * last four components (v2/<target>/<2 hex>/<file>). */
static void layer_of(const char *path, char *out, size_t n) {
  snprintf(out, n, "%s", path);
  for (int i = 0; i < 4; i++) {
    char *slash = strrchr(out, '/');
    if (slash == NULL)
      return;
    *slash = '\0';
  }
}

/* Looks the kernel of `key` up under each target a device reporting
 * key->target loads (uq__target_loadable), most specific first: the
 * device's own entry wins, then one built for fewer features (a warm for
 * "gfx950" serves a "gfx950:sramecc+:xnack-" device). `exact` is the
 * digest of `key` itself, `prefer` its preferred provenance (NULL: none).
 * 0 with `symbol` set to the entry's kernel symbol; UQ_ENOENT with
 * found->rejected the first refusal seen; another status on failure. */
static int find_loadable(uq__cache *c, const uq_key *key,
                         const uq__digest *exact, const uint64_t *prefer,
                         void **obj, size_t *obj_len, uq__cache_found *found,
                         char *symbol, size_t symbol_n) {
  char first_rejected[sizeof found->rejected];
  first_rejected[0] = '\0';
  for (int i = 0;; i++) {
    uq_key alt;
    char alt_symbol[UQ__SYMBOL_MAX];
    uq__digest d = *exact;
    uq__context_key_copy(&alt, key);
    if (i > 0) {
      char t[UQ_TARGET_MAX];
      if (uq__target_loadable(key->target, i, t, sizeof t) != 0) {
        uq__error_clear();
        break;
      }
      /* Keys are compared as bytes: nothing may follow the NUL. */
      memset(alt.target, 0, sizeof alt.target);
      memcpy(alt.target, t, strlen(t));
      /* A form the layers refuse (never for sramecc/xnack) is skipped. */
      uq__checked_key alt_ck;
      if (uq__key_check(&alt, &alt_ck) != 0 ||
          uq__jit_kernel_digest(&alt_ck, alt_symbol, sizeof alt_symbol, &d) != 0) {
        uq__error_clear();
        continue;
      }
    }
    if (uq__log_on(UQ__LOG_DEBUG)) {
      char hex[33];
      uq__digest_hex(&d, hex);
      uq__log(UQ__LOG_DEBUG, "looking up %s for target %s (digest %s)",
              i == 0 ? "the kernel" : alt_symbol, alt.target, hex);
    }
    int rc = uq__cache_find(c, alt.target, &d, i == 0 ? prefer : NULL, obj,
                            obj_len, found);
    if (rc == 0) {
      if (i > 0)
        snprintf(symbol, symbol_n, "%s", alt_symbol);
      return 0;
    }
    if (rc != UQ_ENOENT)
      return rc;
    if (first_rejected[0] == '\0')
      memcpy(first_rejected, found->rejected, sizeof first_rejected);
  }
  memcpy(found->rejected, first_rejected, sizeof found->rejected);
  return UQ_ENOENT;
}

int uq__jit_object(uq_context *ctx, uq__entry *e) {
  const uq__compiler *cc = NULL;
  void *obj = NULL;
  size_t obj_len = 0;
  char why[1024] = "";
  /* The one check of the key on this path: below, the checked key. */
  uq__checked_key checked;
  const uq__checked_key *ck = &checked;
  int rc = uq__key_check(&e->key, &checked);
  if (rc != 0)
    return rc;
  const uq_key *key = &ck->key;
  const char *name = ck->name;
  uq__digest digest;
  rc = uq__jit_kernel_digest(ck, e->symbol, sizeof e->symbol, &digest);
  if (rc != 0)
    return rc;
  e->block_threads = uq__gen_threads_of(ck);

  /* The compiler only decides which entry is preferred; without one any
   * valid entry serves. With UQJIT_DISABLE_JIT none is looked for. */
  int no_jit = uq__env_bool(UQ__ENV_DISABLE_JIT);
  int cc_status = 0;
  uint64_t prefer = 0;
  if (!no_jit) {
    cc_status = uq__compiler_for_target(key->target, &cc);
    if (cc_status == 0)
      prefer = uq__cache_provenance(uq__compiler_identity(cc),
                                    uq__compiler_options(cc, key->target));
    else
      snprintf(why, sizeof why, "%s", uq_last_error());
    uq__error_clear();
  }
  uq__cache_found *found = uq__malloc(sizeof *found);
  if (found == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory looking up %s", name);
  uq__cache_flight *lock = NULL;
  if (ctx->cache != NULL) {
    rc = find_loadable(ctx->cache, key, &digest, cc != NULL ? &prefer : NULL,
                       &obj, &obj_len, found, e->symbol, sizeof e->symbol);
    if (rc == 0)
      goto hit;
    if (rc == UQ_ENOMEM) /* not a miss: compiling would hide it */
      goto cleanup;
  }
  rc = 0;
  uq__error_clear(); /* a miss is not this call's failure */
  /* Single flight: whoever holds the kernel's lock compiles it; the others
   * wait, then find its entry. Without the lock we compile anyway. */
  if (!no_jit && cc != NULL && ctx->cache != NULL &&
      uq__cache_lock(ctx->cache, key->target, &digest, UQ__CACHE_LOCK_WAIT_MS,
                     &lock) == 0) {
    rc = find_loadable(ctx->cache, key, &digest, &prefer, &obj, &obj_len,
                       found, e->symbol, sizeof e->symbol);
    if (rc == 0)
      goto hit;
    if (rc == UQ_ENOMEM)
      goto cleanup;
    rc = 0;
  }
  uq__error_clear();
  uq__log(UQ__LOG_INFO, "cache miss %s%s", name,
          no_jit ? " (UQJIT_DISABLE_JIT: not compiled)" : "");
  if (no_jit) {
    char hex[33];
    uq__digest_hex(&digest, hex);
    /* On the heap: the hint names a kernel and a layer path. */
    char *hint = uq__malloc(UQ__MISS_NAME_MAX + UQ__MISS_LAYER_MAX + 1024);
    if (hint != NULL)
      uq__miss_hint(ctx->cache != NULL ? uq__cache_dir(ctx->cache) : NULL,
                    key, hint, UQ__MISS_NAME_MAX + UQ__MISS_LAYER_MAX + 1024);
    if (found->rejected[0] != '\0')
      rc = uq__errorf(UQ_ENOJIT,
                      "kernel %s (digest %s): no usable cache entry (%s) and "
                      "UQJIT_DISABLE_JIT is set%s", name, hex, found->rejected,
                      hint != NULL ? hint : "");
    else
      rc = uq__errorf(UQ_ENOJIT,
                      "kernel %s (digest %s) is not in the cache and "
                      "UQJIT_DISABLE_JIT is set%s", name, hex,
                      hint != NULL ? hint : "");
    uq__free(hint);
    goto cleanup;
  }
  if (cc == NULL) {
    rc = uq__errorf(cc_status, "%s", why);
    goto cleanup;
  }
  rc = compile_and_store(ctx, e, ck, cc, &digest, &obj, &obj_len);
  if (rc != 0)
    goto cleanup;
  snprintf(e->compiler, sizeof e->compiler, "%s", uq__compiler_identity(cc));
  goto done;
hit:
  if (uq__log_on(UQ__LOG_INFO)) {
    char layer[UQ__CACHE_PATH_MAX];
    layer_of(found->path, layer, sizeof layer);
    const char *w = uq__cache_dir(ctx->cache);
    uq__log(UQ__LOG_INFO, "cache hit %s: %s (%s layer %s)", name,
            found->path,
            w != NULL && strcmp(w, layer) == 0 ? "writable" : "read-only",
            layer);
  }
  e->from_disk = 1;
  snprintf(e->compiler, sizeof e->compiler, "%s", found->info.compiler);
  uq__table_note_disk_hit(ctx->table);
done:
  e->object = obj;
  e->object_len = obj_len;
  obj = NULL;
cleanup:
  uq__cache_unlock(lock);
  uq__free(found);
  uq__free(obj);
  return rc;
}

/* ---- sources and code objects ---------------------------------------- */

int uq_kernel_source(const uq_key *key, char **src, size_t *len) {
  uq__error_clear();
  if (key == NULL || src == NULL)
    return uq__errorf(UQ_EINVAL, "uq_kernel_source: NULL argument");
  *src = NULL;
  if (len != NULL)
    *len = 0;
  uq__checked_key ck;
  int rc = uq__key_check(key, &ck);
  if (rc != 0)
    return rc;
  uq__buf buf;
  uq__buf_init(&buf);
  rc = gen_source(&ck, uq__route_for_target(key->target), &buf);
  if (rc != 0) {
    uq__buf_free(&buf);
    return rc;
  }
  size_t n = 0;
  char *text = uq__buf_take(&buf, &n);
  if (text == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory generating a kernel source");
  *src = text;
  if (len != NULL)
    *len = n;
  return 0;
}

int uq_code_object(uq_context *ctx, const uq_key *key, void **obj,
                   size_t *len, uq_code_info *info) {
  uq__error_clear();
  if (ctx == NULL || key == NULL || obj == NULL || len == NULL)
    return uq__errorf(UQ_EINVAL, "uq_code_object: NULL argument");
  *obj = NULL;
  *len = 0;
  /* Refused before it reaches the table, which remembers every key. */
  uq__checked_key ck;
  int rc = uq__key_check(key, &ck);
  if (rc != 0)
    return rc;
  uq__entry *e;
  rc = uq__context_object(ctx, key, 1, &e, NULL);
  if (rc != 0)
    return rc;
  void *copy = uq__malloc(e->object_len > 0 ? e->object_len : 1);
  if (copy == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory copying a code object");
  memcpy(copy, e->object, e->object_len);
  if (info != NULL) {
    memset(info, 0, sizeof *info);
    info->vgprs = info->sgprs = info->agprs = info->registers = -1;
    info->lds_bytes = info->scratch_bytes = -1;
    /* Unreadable metadata is not a failure of this call: fields stay -1. */
    if (uq__code_info_from_object(key->target, e->object, e->object_len,
                                  info) != 0)
      uq__error_clear();
    snprintf(info->compiler, sizeof info->compiler, "%.127s", e->compiler);
  }
  *obj = copy;
  *len = e->object_len;
  return 0;
}

/* ---- uq_compile_keys ------------------------------------------------- */

typedef struct compile_job {
  uq_context *ctx;
  const uq_key *keys; /* distinct */
  size_t n;
  size_t next;        /* atomic: next key to take */
  pthread_mutex_t mutex; /* progress, counters, first failure */
  size_t done;
  uq_progress_fn progress;
  void *user;
  uint64_t compiled, hits, failed;
  int first_status;
  char first_detail[1024];
} compile_job;

static void *compile_worker(void *arg) {
  compile_job *job = arg;
  for (;;) {
    size_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->n)
      break;
    const uq_key *key = &job->keys[i];
    uq__error_clear();
    uq__entry *e = NULL;
    int was_hit = 0;
    uq__checked_key ck;
    int rc = uq__key_check(key, &ck);
    if (rc == 0)
      rc = uq__context_object(job->ctx, key, 1, &e, &was_hit);
    int from_cache = rc == 0 && (was_hit || e->from_disk);
    /* Filling the cache is this call's job: a kernel compiled but not
     * stored there failed. */
    if (rc == 0 && !e->from_disk && e->store_status != 0) {
      rc = e->store_status;
      uq__errorf(rc, "%s", e->store_detail);
      from_cache = 0;
    }
    pthread_mutex_lock(&job->mutex);
    job->done++;
    if (rc != 0) {
      job->failed++;
      if (job->first_status == 0) {
        job->first_status = rc;
        snprintf(job->first_detail, sizeof job->first_detail, "%s",
                 uq_last_error());
      }
    } else if (from_cache) {
      job->hits++;
    } else {
      job->compiled++;
    }
    if (job->progress != NULL)
      job->progress(job->user, job->done, job->n, key, rc, from_cache);
    pthread_mutex_unlock(&job->mutex);
  }
  return NULL;
}

static int key_cmp(const void *a, const void *b) {
  return memcmp(a, b, sizeof(uq_key));
}

int uq_compile_keys(uq_context *ctx, const uq_key *keys, size_t n, int jobs,
                    uq_progress_fn progress, void *user,
                    uq_compile_summary *summary) {
  uq__error_clear();
  double t0 = now_seconds();
  if (summary != NULL)
    memset(summary, 0, sizeof *summary);
  if (ctx == NULL || (keys == NULL && n > 0))
    return uq__errorf(UQ_EINVAL, "uq_compile_keys: NULL argument");
  if (jobs < 0)
    return uq__errorf(UQ_EINVAL, "uq_compile_keys: jobs = %d", jobs);
  if (n == 0)
    return 0;

  int overflow = 0;
  size_t bytes = uq__mul_size(n, sizeof(uq_key), &overflow);
  if (overflow)
    return uq__errorf(UQ_EOVERFLOW, "uq_compile_keys: %zu keys", n);
  uq_key *distinct = uq__malloc(bytes);
  if (distinct == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory for %zu keys", n);
  /* Canonical bytes (zeroed tail after the target) before comparing. */
  for (size_t i = 0; i < n; i++)
    uq__context_key_copy(&distinct[i], &keys[i]);
  qsort(distinct, n, sizeof *distinct, key_cmp);
  size_t m = 1;
  for (size_t i = 1; i < n; i++)
    if (memcmp(&distinct[i], &distinct[m - 1], sizeof *distinct) != 0)
      distinct[m++] = distinct[i];

  compile_job job;
  memset(&job, 0, sizeof job);
  job.ctx = ctx;
  job.keys = distinct;
  job.n = m;
  job.progress = progress;
  job.user = user;
  pthread_mutex_init(&job.mutex, NULL);

  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t want = jobs > 0 ? (size_t)jobs : (cpus > 0 ? (size_t)cpus : 1);
  if (want > m)
    want = m;
  if (want > 256)
    want = 256;
  pthread_t threads[256];
  size_t started = 0;
  /* The calling thread is worker 0; a thread that cannot start just means
   * fewer workers. */
  for (size_t i = 1; i < want; i++) {
    if (pthread_create(&threads[started], NULL, compile_worker, &job) != 0)
      break;
    started++;
  }
  compile_worker(&job);
  for (size_t i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  pthread_mutex_destroy(&job.mutex);
  uq__free(distinct);

  if (summary != NULL) {
    summary->keys = m;
    summary->compiled = job.compiled;
    summary->hits = job.hits;
    summary->failed = job.failed;
    summary->seconds = now_seconds() - t0;
  }
  if (job.first_status != 0)
    return uq__errorf(job.first_status, "%s", job.first_detail);
  uq__error_clear();
  return 0;
}

/* ---- uq_cache_find --------------------------------------------------- */

/* Reports a found entry through `visit` as uq_cache_list would. */
static int report_found(const uq__cache_found *f, uq_cache_visit_fn visit,
                        void *user) {
  struct stat st;
  uq_cache_entry ce;
  memset(&ce, 0, sizeof ce);
  if (stat(f->path, &st) == 0) {
    ce.size = (uint64_t)st.st_size;
    ce.mtime = (int64_t)st.st_mtime;
  }
  ce.path = f->path;
  ce.target = f->info.target;
  ce.valid = 1;
  ce.key_name = f->info.key_name;
  ce.compiler = f->info.compiler;
  ce.options = f->info.options;
  ce.route = f->info.route;
  ce.created = f->info.created;
  char layer[UQ__CACHE_PATH_MAX];
  layer_of(f->path, layer, sizeof layer);
  ce.layer = layer;
  visit(user, &ce);
  return 0;
}

int uq_cache_find(const char *dir, const uq_key *key, uq_cache_visit_fn visit,
                  void *user) {
  uq__error_clear();
  if (key == NULL)
    return uq__errorf(UQ_EINVAL, "uq_cache_find: key is NULL");
  uq__checked_key ck;
  int rc = uq__key_check(key, &ck);
  if (rc != 0)
    return rc;
  char symbol[UQ__SYMBOL_MAX];
  uq__digest digest;
  rc = uq__jit_kernel_digest(&ck, symbol, sizeof symbol, &digest);
  if (rc != 0)
    return rc;
  uq__cache *c = NULL;
  uq__cache_found *found = NULL;
  rc = uq__cache_open_search_layers(dir, &c);
  if (rc == 0 && (found = uq__malloc(sizeof *found)) == NULL)
    rc = uq__errorf(UQ_ENOMEM, "uq_cache_find: out of memory");
  if (rc == 0)
    rc = find_loadable(c, key, &digest, NULL, NULL, NULL, found, symbol,
                       sizeof symbol);
  if (rc == 0 && visit != NULL)
    report_found(found, visit, user);
  if (rc == UQ_ENOENT) {
    char *hint = uq__malloc(UQ__MISS_NAME_MAX + UQ__MISS_LAYER_MAX + 1024);
    if (hint != NULL)
      uq__miss_hint(dir, key, hint,
                    UQ__MISS_NAME_MAX + UQ__MISS_LAYER_MAX + 1024);
    uq__errorf(rc, "no valid cache entry for %s%s%s%s%s", ck.name,
               found->rejected[0] ? " (" : "", found->rejected,
               found->rejected[0] ? ")" : "", hint != NULL ? hint : "");
    uq__free(hint);
  }
  uq__free(found);
  uq__cache_close(c);
  return rc;
}
