/* Contexts: target, disk cache, specialization table and the device, and
 * the table builder that loads code objects on the device (the code
 * objects themselves come from lib/runtime/jit.c). */
#include "lib/runtime/context.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/codegen/policy.h"
#include "lib/runtime/jit.h"

static uint64_t next_context_id = 1;

void uq_context_options_init(uq_context_options *opts) {
  if (opts == NULL)
    return;
  memset(opts, 0, sizeof *opts); /* device 0, target, cache and layer
                                   * from the environment */
  opts->use_disk_cache = 1;
}

/* Loads the key's code object on the context's device. */
static int build_kernel(uq_context *ctx, uq__table *t, uq__entry *e) {
  const uq__platform *pf = NULL;
  uq__pdev *dev = NULL;
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
  return e->device < 0 ? uq__jit_object(ctx, e) : build_kernel(ctx, t, e);
}

static void release_entry(void *user, uq__entry *e) {
  uq_context *ctx = user;
  if (e->module != NULL && ctx->pf != NULL && ctx->dev != NULL)
    ctx->pf->module_unload(ctx->dev, e->module);
  e->module = NULL;
}

void uq__context_key_copy(uq_key *dst, const uq_key *src) {
  memset(dst, 0, sizeof *dst);
  memcpy(dst, src, offsetof(uq_key, target));
  snprintf(dst->target, sizeof dst->target, "%.*s",
           (int)sizeof src->target - 1, src->target);
  dst->stride_q_dim = src->stride_q_dim;
}

int uq__context_object(uq_context *ctx, const uq_key *key, int count,
                       uq__entry **entry, int *was_hit) {
  uq_key k;
  uq__context_key_copy(&k, key);
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
  /* The layer is read once, here: decodes read no environment. */
  int variant;
  int rc = uq__plan_requested(opts->variant, &variant);
  if (rc != 0)
    return rc;

  uq_context *ctx = uq__calloc(1, sizeof *ctx);
  if (ctx == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory creating a context");
  if (pthread_mutex_init(&ctx->dev_mutex, NULL) != 0) {
    uq__free(ctx);
    return uq__errorf(UQ_ENOMEM, "pthread_mutex_init failed");
  }
  ctx->device = opts->device;
  ctx->variant = variant;
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

int uq_context_plan(const uq_context *ctx, const uq_shape *shape,
                    uq_plan *plan) {
  uq__error_clear();
  if (ctx == NULL)
    return uq__errorf(UQ_EINVAL, "uq_context_plan: ctx is NULL");
  return uq__plan_make(shape, ctx->target, ctx->variant, plan);
}

int uq_get_stats(const uq_context *ctx, uq_stats *stats) {
  uq__error_clear();
  if (ctx == NULL || stats == NULL)
    return uq__errorf(UQ_EINVAL, "uq_get_stats: NULL argument");
  uq__table_stats(ctx->table, stats);
  return 0;
}

