/* Picking the GPU runtime, and the small device utilities of the public
 * API (so that tools and tests need only uqjit.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/gpu/platform.h"
#include "lib/runtime/context.h"
#include "uqjit_tools.h"

static pthread_once_t pick_once = PTHREAD_ONCE_INIT;
static const uq__platform *picked;
static int pick_status;
static char pick_detail[1100];

static void do_pick(void) {
  static const uq__platform *const order[] = {&uq__platform_cuda,
                                              &uq__platform_hip};
  char why[2][520] = {"", ""};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    int count = 0;
    int rc = order[i]->init();
    if (rc == 0)
      rc = order[i]->device_count(&count);
    if (rc == 0 && count > 0) {
      picked = order[i];
      return;
    }
    if (rc == 0)
      uq__errorf(UQ_ENODEV, "no device");
    snprintf(why[i], sizeof why[i], "%s", uq_last_error());
  }
  pick_status = UQ_ENODEV;
  snprintf(pick_detail, sizeof pick_detail, "no GPU found: CUDA: %s; HIP: %s",
           why[0], why[1]);
}

int uq__platform_pick(const uq__platform **out) {
  pthread_once(&pick_once, do_pick);
  *out = picked;
  if (picked == NULL)
    return uq__errorf(pick_status, "%s", pick_detail);
  return 0;
}

int uq_device_count(int *count) {
  uq__error_clear();
  if (count == NULL)
    return uq__errorf(UQ_EINVAL, "uq_device_count: count is NULL");
  *count = 0;
  const uq__platform *pf;
  /* No runtime is not an error here: there are simply no devices (the
   * reason stays in uq_last_error()). */
  if (uq__platform_pick(&pf) != 0)
    return 0;
  return pf->device_count(count);
}

/* The context's device, for a utility call (made current by the platform
 * functions themselves). */
static int device_of(uq_context *ctx, const uq__platform **pf,
                     uq__pdev **dev) {
  if (ctx == NULL)
    return uq__errorf(UQ_EINVAL, "context is NULL");
  return uq__context_device(ctx, pf, dev);
}

int uq_device_name(uq_context *ctx, char *buf, size_t n) {
  uq__error_clear();
  if (buf == NULL || n == 0)
    return uq__errorf(UQ_EINVAL, "uq_device_name: empty buffer");
  buf[0] = '\0';
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  if (rc == 0)
    rc = pf->make_current(dev);
  return rc != 0 ? rc : pf->device_name(dev, buf, n);
}

int uq_device_alloc(uq_context *ctx, size_t bytes, void **ptr) {
  uq__error_clear();
  if (ptr == NULL)
    return uq__errorf(UQ_EINVAL, "uq_device_alloc: ptr is NULL");
  *ptr = NULL;
  if (bytes == 0)
    return uq__errorf(UQ_EINVAL, "uq_device_alloc: 0 bytes");
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->mem_alloc(dev, bytes, ptr);
}

int uq_device_free(uq_context *ctx, void *ptr) {
  uq__error_clear();
  if (ptr == NULL)
    return 0;
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->mem_free(dev, ptr);
}

static int copy_args(const void *dst, const void *src, size_t bytes,
                     const char *fn) {
  if (bytes > 0 && (dst == NULL || src == NULL))
    return uq__errorf(UQ_EINVAL, "%s: NULL pointer", fn);
  return 0;
}

int uq_memcpy_h2d(uq_context *ctx, void *dst, const void *src, size_t bytes) {
  uq__error_clear();
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = copy_args(dst, src, bytes, "uq_memcpy_h2d");
  if (rc == 0)
    rc = device_of(ctx, &pf, &dev);
  if (rc != 0 || bytes == 0)
    return rc;
  return pf->memcpy_h2d(dev, dst, src, bytes);
}

int uq_memcpy_d2h(uq_context *ctx, void *dst, const void *src, size_t bytes) {
  uq__error_clear();
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = copy_args(dst, src, bytes, "uq_memcpy_d2h");
  if (rc == 0)
    rc = device_of(ctx, &pf, &dev);
  if (rc != 0 || bytes == 0)
    return rc;
  return pf->memcpy_d2h(dev, dst, src, bytes);
}

int uq_memcpy_d2d_async(uq_context *ctx, void *dst, const void *src,
                        size_t bytes, void *stream) {
  uq__error_clear();
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = copy_args(dst, src, bytes, "uq_memcpy_d2d");
  if (rc == 0)
    rc = device_of(ctx, &pf, &dev);
  if (rc != 0 || bytes == 0)
    return rc;
  return pf->memcpy_d2d(dev, dst, src, bytes, stream);
}

int uq_memcpy_d2d(uq_context *ctx, void *dst, const void *src, size_t bytes) {
  int rc = uq_memcpy_d2d_async(ctx, dst, src, bytes, NULL);
  return rc != 0 || bytes == 0 ? rc : uq_synchronize(ctx);
}

int uq_memset_d8(uq_context *ctx, void *dst, uint8_t value, size_t bytes) {
  uq__error_clear();
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = bytes > 0 && dst == NULL
               ? uq__errorf(UQ_EINVAL, "uq_memset_d8: NULL pointer")
               : 0;
  if (rc == 0)
    rc = device_of(ctx, &pf, &dev);
  if (rc != 0 || bytes == 0)
    return rc;
  return pf->memset_d8(dev, dst, value, bytes);
}

int uq_synchronize(uq_context *ctx) {
  uq__error_clear();
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->synchronize(dev);
}

/* Streams, events and graphs. Each handle that needs its device later keeps
 * the platform and device beside the runtime's own handle. */

int uq_stream_create(uq_context *ctx, void **stream) {
  uq__error_clear();
  if (stream == NULL)
    return uq__errorf(UQ_EINVAL, "uq_stream_create: stream is NULL");
  *stream = NULL;
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->stream_create(dev, stream);
}

int uq_stream_destroy(uq_context *ctx, void *stream) {
  uq__error_clear();
  if (stream == NULL)
    return 0;
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->stream_destroy(dev, stream);
}

int uq_stream_synchronize(uq_context *ctx, void *stream) {
  uq__error_clear();
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->stream_synchronize(dev, stream);
}

struct uq_event {
  const uq__platform *pf;
  uq__pdev *dev;
  void *handle;
};

int uq_event_create(uq_context *ctx, uq_event **event) {
  uq__error_clear();
  if (event == NULL)
    return uq__errorf(UQ_EINVAL, "uq_event_create: event is NULL");
  *event = NULL;
  uq_event *e = uq__calloc(1, sizeof *e);
  if (e == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory creating an event");
  int rc = device_of(ctx, &e->pf, &e->dev);
  if (rc == 0)
    rc = e->pf->event_create(e->dev, &e->handle);
  if (rc != 0) {
    uq__free(e);
    return rc;
  }
  *event = e;
  return 0;
}

int uq_event_record(uq_event *event, void *stream) {
  uq__error_clear();
  if (event == NULL)
    return uq__errorf(UQ_EINVAL, "uq_event_record: event is NULL");
  return event->pf->event_record(event->dev, event->handle, stream);
}

int uq_event_elapsed_ms(uq_event *start, uq_event *end, float *ms) {
  uq__error_clear();
  if (start == NULL || end == NULL || ms == NULL)
    return uq__errorf(UQ_EINVAL, "uq_event_elapsed_ms: NULL argument");
  if (start->dev != end->dev)
    return uq__errorf(UQ_EINVAL,
                      "uq_event_elapsed_ms: events of different devices");
  return start->pf->event_elapsed_ms(start->dev, start->handle, end->handle,
                                     ms);
}

void uq_event_destroy(uq_event *event) {
  if (event == NULL)
    return;
  /* Destroy cannot report; a failure here leaks only the runtime's handle. */
  (void)event->pf->event_destroy(event->dev, event->handle);
  uq__free(event);
}

struct uq_graph {
  const uq__platform *pf;
  uq__pdev *dev;
  void *exec;
};

int uq_graph_capture_begin(uq_context *ctx, void *stream) {
  uq__error_clear();
  if (stream == NULL)
    return uq__errorf(UQ_EINVAL,
                      "uq_graph_capture_begin: capture needs a created "
                      "stream, not the default stream");
  const uq__platform *pf;
  uq__pdev *dev;
  int rc = device_of(ctx, &pf, &dev);
  return rc != 0 ? rc : pf->capture_begin(dev, stream);
}

int uq_graph_capture_end(uq_context *ctx, void *stream, uq_graph **graph) {
  uq__error_clear();
  if (stream == NULL || graph == NULL)
    return uq__errorf(UQ_EINVAL, "uq_graph_capture_end: NULL argument");
  *graph = NULL;
  uq_graph *g = uq__calloc(1, sizeof *g);
  if (g == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory ending a capture");
  int rc = device_of(ctx, &g->pf, &g->dev);
  if (rc == 0)
    rc = g->pf->capture_end(g->dev, stream, &g->exec);
  if (rc != 0) {
    uq__free(g);
    return rc;
  }
  *graph = g;
  return 0;
}

int uq_graph_launch(uq_graph *graph, void *stream) {
  uq__error_clear();
  if (graph == NULL)
    return uq__errorf(UQ_EINVAL, "uq_graph_launch: graph is NULL");
  return graph->pf->graph_launch(graph->dev, graph->exec, stream);
}

void uq_graph_destroy(uq_graph *graph) {
  if (graph == NULL)
    return;
  (void)graph->pf->graph_destroy(graph->dev, graph->exec);
  uq__free(graph);
}
