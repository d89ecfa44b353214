/* Contexts, the code-object path (source -> digest -> cache or compiler) and
 * the table builder that loads code objects on the device. */
#include "lib/runtime/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/codegen/emit.h"
#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "lib/base/env.h"
#include "lib/base/error.h"

static uint64_t next_context_id = 1;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void uq_context_options_init(uq_context_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts); /* device 0, target and cache from the
                                   * environment */
  opts->use_disk_cache = 1;
}

/* ---- the code object of a key ---------------------------------------- */

/* Builds the device -1 entry: source, digest over everything that decides
 * the bytes, then the disk cache, else the compiler (unless JIT is off). */
static int build_object(uq_context *ctx, uq__entry *e) {
  const uq_key *key = &e->key;
  uq__buf src;
  uq__buf_init(&src);
  const uq__compiler *cc = NULL;
  void *obj = NULL;
  size_t obj_len = 0;
  char name[512] = "";
  uq_key_name(key, name, sizeof name);

  int rc = uq__compiler_for_target(key->target, &cc);
  if (rc != 0)
    goto cleanup;
  rc = uq__gen_source(key, uq__compiler_route(cc), &src);
  if (rc == 0 && src.status != 0)
    rc = uq__errorf(src.status, "out of memory generating %s", name);
  if (rc != 0)
    goto cleanup;
  int need = uq__gen_symbol(key, e->symbol, sizeof e->symbol);
  if (need < 0 || (size_t)need >= sizeof e->symbol) {
    rc = uq__errorf(UQ_EINVAL, "kernel symbol of %s does not fit", name);
    goto cleanup;
  }
  e->block_threads = uq__gen_block_threads(key);

  const char *identity = uq__compiler_identity(cc);
  const char *options = uq__compiler_options(cc, key->target);
  if (options == NULL)
    options = "";
  const uq__cache_field fields[] = {
      {"source", src.data, src.len},
      {"target", key->target, strlen(key->target)},
      {"compiler", identity, strlen(identity)},
      {"options", options, strlen(options)},
      {"symbol", e->symbol, strlen(e->symbol)},
  };
  uq__digest digest;
  uq__cache_digest(fields, sizeof fields / sizeof fields[0], &digest);

  if (ctx->cache != NULL &&
      uq__cache_get(ctx->cache, key->target, &digest, &obj, &obj_len) == 0) {
    e->from_disk = 1;
    uq__table_note_disk_hit(ctx->table);
    goto done;
  }
  uq__error_clear(); /* a miss is not this call's failure */

  if (uq__env_flag("UQJIT_DISABLE_JIT")) {
    char hex[33];
    uq__digest_hex(&digest, hex);
    rc = uq__errorf(UQ_ENOJIT,
                    "kernel %s (digest %s, compiler %s) is not in the cache "
                    "and UQJIT_DISABLE_JIT is set",
                    name, hex, identity);
    goto cleanup;
  }

  double t0 = now_seconds();
  rc = uq__compiler_compile(cc, key->target, src.data, src.len, e->symbol,
                            &obj, &obj_len);
  if (rc != 0)
    goto cleanup;
  uq__table_note_compile(ctx->table, now_seconds() - t0);
  /* A failed write is not this call's failure (uq__cache_put warns). */
  if (ctx->cache != NULL &&
      uq__cache_put(ctx->cache, key->target, &digest, obj, obj_len) != 0)
    uq__error_clear();

done:
  e->object = obj;
  e->object_len = obj_len;
  obj = NULL;
cleanup:
  uq__free(obj);
  uq__buf_free(&src);
  return rc;
}

/* Loads the key's code object on the context's device. */
static int build_kernel(uq_context *ctx, uq__table *t, uq__entry *e) {
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = uq__context_device(ctx, &pf, &dev);
  if (rc != 0)
    return rc;
  uq__entry *obj;
  rc = uq__table_lookup(t, &e->key, -1, 0, &obj, NULL);
  if (rc != 0)
    return rc;
  rc = pf->module_load(dev, obj->object, obj->object_len, &e->module);
  if (rc != 0)
    return rc;
  rc = pf->module_function(dev, e->module, obj->symbol, &e->function);
  if (rc != 0) {
    pf->module_unload(dev, e->module);
    e->module = NULL;
    return rc;
  }
  memcpy(e->symbol, obj->symbol, sizeof e->symbol);
  e->block_threads = obj->block_threads;
  e->from_disk = obj->from_disk;
  return 0;
}

static int build_entry(void *user, uq__table *t, uq__entry *e) {
  uq_context *ctx = user;
  return e->device < 0 ? build_object(ctx, e) : build_kernel(ctx, t, e);
}

static void release_entry(void *user, uq__entry *e) {
  uq_context *ctx = user;
  if (e->module != NULL && ctx->pf != NULL && ctx->dev != NULL)
    ctx->pf->module_unload(ctx->dev, e->module);
  e->module = NULL;
}

int uq__context_object(uq_context *ctx, const uq_key *key, int count,
                       uq__entry **entry, int *was_hit) {
  /* Table keys are compared as bytes: copy into a zeroed key so that
   * garbage after the target string's NUL cannot make two equal keys
   * differ. */
  uq_key k;
  memset(&k, 0, sizeof k);
  memcpy(&k, key, offsetof(uq_key, target));
  snprintf(k.target, sizeof k.target, "%.*s", (int)sizeof key->target - 1,
           key->target);
  return uq__table_lookup(ctx->table, &k, -1, count, entry, was_hit);
}

/* ---- the device ------------------------------------------------------ */

int uq__context_device(uq_context *ctx, const uq__platform **pf,
                       uq__pdev **dev) {
  int state = __atomic_load_n(&ctx->dev_state, __ATOMIC_ACQUIRE);
  if (state == 1) {
    *pf = ctx->pf;
    *dev = ctx->dev;
    return 0;
  }
  if (ctx->device < 0)
    return uq__errorf(UQ_ENODEV,
                      "the context was created without a device (device -1)");
  pthread_mutex_lock(&ctx->dev_mutex);
  int rc = 0;
  state = ctx->dev_state;
  if (state == 0) {
    const uq__platform *p = NULL;
    uq__pdev *d = NULL;
    rc = uq__platform_pick(&p);
    if (rc == 0)
      rc = p->device_open(ctx->device, &d);
    if (rc == 0 && ctx->target[0] != '\0') {
      int want_nvidia = ctx->tinfo.family == UQ__TARGET_NVIDIA;
      int is_nvidia = strcmp(p->name, "cuda") == 0;
      if (want_nvidia != is_nvidia) {
        rc = uq__errorf(UQ_EINVAL,
                        "context target %s cannot run on the %s device %d",
                        ctx->target, p->name, ctx->device);
        p->device_close(d);
      }
    }
    if (rc == 0) {
      ctx->pf = p;
      ctx->dev = d;
      __atomic_store_n(&ctx->dev_state, 1, __ATOMIC_RELEASE);
    } else {
      snprintf(ctx->dev_detail, sizeof ctx->dev_detail, "%s",
               uq_last_error());
      __atomic_store_n(&ctx->dev_state, rc, __ATOMIC_RELEASE);
    }
  } else if (state < 0) {
    rc = uq__errorf(state, "%s", ctx->dev_detail);
  }
  pthread_mutex_unlock(&ctx->dev_mutex);
  if (rc == 0) {
    *pf = ctx->pf;
    *dev = ctx->dev;
  }
  return rc;
}

/* ---- contexts -------------------------------------------------------- */

int uq_context_create(const uq_context_options *opts, uq_context **out) {
  uq__error_clear();
  if (out == NULL)
    return uq__errorf(UQ_EINVAL, "uq_context_create: out is NULL");
  *out = NULL;
  uq_context_options defaults;
  if (opts == NULL) {
    uq_context_options_init(&defaults);
    opts = &defaults;
  }
  if (opts->device < -1)
    return uq__errorf(UQ_EINVAL, "device %d: use -1 for no device",
                      opts->device);
  if (opts->device < 0 && opts->target == NULL)
    return uq__errorf(UQ_EINVAL,
                      "a context without a device (device -1) needs a target");

  uq_context *ctx = uq__calloc(1, sizeof *ctx);
  if (ctx == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory creating a context");
  int rc = 0;
  if (pthread_mutex_init(&ctx->dev_mutex, NULL) != 0) {
    uq__free(ctx);
    return uq__errorf(UQ_ENOMEM, "pthread_mutex_init failed");
  }
  ctx->device = opts->device;
  ctx->id = __atomic_fetch_add(&next_context_id, 1, __ATOMIC_RELAXED);

  rc = uq__table_create(build_entry, release_entry, ctx, &ctx->table);
  if (rc != 0)
    goto fail;

  if (opts->target != NULL) {
    rc = uq__target_parse(opts->target, ctx->target, sizeof ctx->target,
                          &ctx->tinfo);
    if (rc != 0)
      goto fail;
  } else {
    /* The device decides the target, so it is opened now. */
    const uq__platform *pf;
    uq__pdev *dev;
    char arch[UQ_TARGET_MAX];
    rc = uq__context_device(ctx, &pf, &dev);
    if (rc == 0)
      rc = pf->device_arch(dev, arch, sizeof arch);
    if (rc == 0)
      rc = uq__target_parse(arch, ctx->target, sizeof ctx->target,
                            &ctx->tinfo);
    if (rc != 0)
      goto fail;
  }

  if (opts->use_disk_cache) {
    rc = uq__cache_open(opts->cache_dir, NULL, &ctx->cache);
    if (rc != 0)
      goto fail;
  }
  *out = ctx;
  return 0;

fail:
  uq_context_destroy(ctx);
  return rc;
}

void uq_context_destroy(uq_context *ctx) {
  if (ctx == NULL)
    return;
  /* Modules go before the context that holds them. */
  uq__table_destroy(ctx->table);
  if (ctx->dev != NULL)
    ctx->pf->device_close(ctx->dev);
  if (ctx->cache != NULL)
    uq__cache_close(ctx->cache);
  pthread_mutex_destroy(&ctx->dev_mutex);
  uq__free(ctx);
}

const char *uq_context_target(const uq_context *ctx) {
  return ctx != NULL ? ctx->target : "";
}

int uq_get_stats(const uq_context *ctx, uq_stats *stats) {
  uq__error_clear();
  if (ctx == NULL || stats == NULL)
    return uq__errorf(UQ_EINVAL, "uq_get_stats: NULL argument");
  uq__table_stats(ctx->table, stats);
  return 0;
}

/* ---- sources and code objects ---------------------------------------- */

int uq_kernel_source(const uq_key *key, char **src, size_t *len) {
  uq__error_clear();
  if (key == NULL || src == NULL)
    return uq__errorf(UQ_EINVAL, "uq_kernel_source: NULL argument");
  *src = NULL;
  if (len != NULL)
    *len = 0;
  int rc = uq_key_validate(key);
  if (rc != 0)
    return rc;
  uq__buf buf;
  uq__buf_init(&buf);
  rc = uq__gen_source(key, uq__route_for_target(key->target), &buf);
  if (rc == 0 && buf.status != 0)
    rc = uq__errorf(buf.status, "out of memory generating a kernel source");
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
  int rc = uq_key_validate(key);
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
    const uq__compiler *cc;
    if (uq__compiler_for_target(key->target, &cc) == 0)
      snprintf(info->compiler, sizeof info->compiler, "%s",
               uq__compiler_identity(cc));
    else
      uq__error_clear();
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
    int rc = uq_key_validate(key);
    if (rc == 0)
      rc = uq__context_object(job->ctx, key, 1, &e, &was_hit);
    int from_cache = rc == 0 && (was_hit || e->from_disk);
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
  for (size_t i = 0; i < n; i++) {
    memset(&distinct[i], 0, sizeof distinct[i]);
    memcpy(&distinct[i], &keys[i], offsetof(uq_key, target));
    snprintf(distinct[i].target, sizeof distinct[i].target, "%.*s",
             (int)sizeof keys[i].target - 1, keys[i].target);
  }
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
