/* The HIP runtime (libamdhip64) behind lib/gpu/platform.h, loaded with dlopen.
 *
 * uqjit builds without HIP headers, so the few prototypes used are declared
 * here from the HIP API documentation; every handle is an opaque pointer and
 * every status an int (hipSuccess = 0). hipDeviceProp_t changed layout in
 * ROCm 6 (hipGetDevicePropertiesR0600), so the architecture name is not read
 * at a fixed offset: the properties are written into a large zeroed buffer
 * and the NUL-terminated "gfx..." string (gcnArchName, the only field that
 * starts that way) is located in it. */
#include "lib/gpu/platform.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/dl.h"
#include "lib/base/error.h"
#include "lib/base/libs.h"

typedef int hip_status;
typedef void *hip_ptr;

static struct {
  const char *(*GetErrorName)(hip_status);
  const char *(*GetErrorString)(hip_status);
  hip_status (*Init)(unsigned);
  hip_status (*GetDeviceCount)(int *);
  hip_status (*DeviceGetName)(char *, int, int);
  hip_status (*GetDeviceProperties)(void *, int);
  hip_status (*SetDevice)(int);
  hip_status (*ModuleLoadData)(hip_ptr *, const void *);
  hip_status (*ModuleUnload)(hip_ptr);
  hip_status (*ModuleGetFunction)(hip_ptr *, hip_ptr, const char *);
  hip_status (*ModuleLaunchKernel)(hip_ptr, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, unsigned, unsigned,
                                   hip_ptr, void **, void **);
  hip_status (*Malloc)(void **, size_t);
  hip_status (*Free)(void *);
  hip_status (*MemcpyHtoD)(void *, const void *, size_t);
  hip_status (*MemcpyDtoH)(void *, void *, size_t);
  hip_status (*MemcpyDtoDAsync)(void *, void *, size_t, hip_ptr);
  hip_status (*Memset)(void *, int, size_t);
  hip_status (*DeviceSynchronize)(void);
  hip_status (*StreamCreate)(hip_ptr *);
  hip_status (*StreamDestroy)(hip_ptr);
  hip_status (*StreamSynchronize)(hip_ptr);
  hip_status (*StreamBeginCapture)(hip_ptr, int);
  hip_status (*StreamEndCapture)(hip_ptr, hip_ptr *);
  hip_status (*GraphInstantiate)(hip_ptr *, hip_ptr, hip_ptr *, char *,
                                 size_t);
  hip_status (*GraphLaunch)(hip_ptr, hip_ptr);
  hip_status (*GraphExecDestroy)(hip_ptr);
  hip_status (*GraphDestroy)(hip_ptr);
  hip_status (*EventCreate)(hip_ptr *);
  hip_status (*EventRecord)(hip_ptr, hip_ptr);
  hip_status (*EventSynchronize)(hip_ptr);
  hip_status (*EventElapsedTime)(float *, hip_ptr, hip_ptr);
  hip_status (*EventDestroy)(hip_ptr);
} api;

struct uq__pdev {
  int ordinal;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_status;
static char init_detail[512];

static int fail(hip_status r, const char *call) {
  const char *name = api.GetErrorName ? api.GetErrorName(r) : NULL;
  const char *text = api.GetErrorString ? api.GetErrorString(r) : NULL;
  return uq__errorf(UQ_EDEVICE, "%s failed: %s (%d): %s", call,
                    name ? name : "hipErrorUnknown", r,
                    text ? text : "no description");
}

#define CHECK(expr, call)                                                    \
  do {                                                                       \
    hip_status r_ = (expr);                                                  \
    if (r_ != 0)                                                             \
      return fail(r_, call);                                                 \
  } while (0)

static void do_init(void) {
  void *lib = NULL;
  int rc = uq__libs_open(UQ__LIB_HIP, UQ_ENODEV, &lib);
  static const struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"hipGetErrorName", (void **)&api.GetErrorName},
      {"hipGetErrorString", (void **)&api.GetErrorString},
      {"hipInit", (void **)&api.Init},
      {"hipGetDeviceCount", (void **)&api.GetDeviceCount},
      {"hipDeviceGetName", (void **)&api.DeviceGetName},
      {"hipSetDevice", (void **)&api.SetDevice},
      {"hipModuleLoadData", (void **)&api.ModuleLoadData},
      {"hipModuleUnload", (void **)&api.ModuleUnload},
      {"hipModuleGetFunction", (void **)&api.ModuleGetFunction},
      {"hipModuleLaunchKernel", (void **)&api.ModuleLaunchKernel},
      {"hipMalloc", (void **)&api.Malloc},
      {"hipFree", (void **)&api.Free},
      {"hipMemcpyHtoD", (void **)&api.MemcpyHtoD},
      {"hipMemcpyDtoH", (void **)&api.MemcpyDtoH},
      {"hipMemcpyDtoDAsync", (void **)&api.MemcpyDtoDAsync},
      {"hipMemset", (void **)&api.Memset},
      {"hipDeviceSynchronize", (void **)&api.DeviceSynchronize},
      {"hipStreamCreate", (void **)&api.StreamCreate},
      {"hipStreamDestroy", (void **)&api.StreamDestroy},
      {"hipStreamSynchronize", (void **)&api.StreamSynchronize},
      {"hipStreamBeginCapture", (void **)&api.StreamBeginCapture},
      {"hipStreamEndCapture", (void **)&api.StreamEndCapture},
      {"hipGraphInstantiate", (void **)&api.GraphInstantiate},
      {"hipGraphLaunch", (void **)&api.GraphLaunch},
      {"hipGraphExecDestroy", (void **)&api.GraphExecDestroy},
      {"hipGraphDestroy", (void **)&api.GraphDestroy},
      {"hipEventCreate", (void **)&api.EventCreate},
      {"hipEventRecord", (void **)&api.EventRecord},
      {"hipEventSynchronize", (void **)&api.EventSynchronize},
      {"hipEventElapsedTime", (void **)&api.EventElapsedTime},
      {"hipEventDestroy", (void **)&api.EventDestroy},
  };
  for (size_t i = 0; rc == 0 && i < sizeof syms / sizeof syms[0]; i++)
    rc = uq__dl_sym(lib, "libamdhip64", syms[i].name, UQ_ENODEV,
                    syms[i].slot);
  if (rc == 0) {
    /* ROCm 6 keeps the old name for the old struct layout; either works
     * with the scan below. */
    if (uq__dl_sym(lib, "libamdhip64", "hipGetDevicePropertiesR0600",
                   UQ_ENODEV, (void **)&api.GetDeviceProperties) != 0)
      rc = uq__dl_sym(lib, "libamdhip64", "hipGetDeviceProperties",
                      UQ_ENODEV, (void **)&api.GetDeviceProperties);
  }
  if (rc == 0) {
    hip_status r = api.Init(0);
    int count = 0;
    if (r == 0)
      r = api.GetDeviceCount(&count);
    if (r == 100 /* hipErrorNoDevice */ || (r == 0 && count == 0))
      rc = uq__errorf(UQ_ENODEV, "HIP runtime loaded but it sees no device");
    else if (r != 0) {
      fail(r, "hipInit");
      rc = UQ_ENODEV;
    }
  }
  init_status = rc;
  if (rc != 0)
    snprintf(init_detail, sizeof init_detail, "%s", uq_last_error());
}

static int hip_init(void) {
  pthread_once(&init_once, do_init);
  if (init_status != 0)
    return uq__errorf(init_status, "%s", init_detail);
  return 0;
}

static int hip_device_count(int *count) {
  *count = 0;
  int rc = hip_init();
  if (rc != 0)
    return rc;
  CHECK(api.GetDeviceCount(count), "hipGetDeviceCount");
  return 0;
}

static int hip_device_open(int ordinal, uq__pdev **out) {
  *out = NULL;
  int count = 0;
  int rc = hip_device_count(&count);
  if (rc != 0)
    return rc;
  if (ordinal < 0 || ordinal >= count)
    return uq__errorf(UQ_ENODEV, "HIP device %d requested, %d present",
                      ordinal, count);
  uq__pdev *dev = uq__calloc(1, sizeof *dev);
  if (dev == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory opening HIP device");
  dev->ordinal = ordinal;
  *out = dev;
  return 0;
}

static void hip_device_close(uq__pdev *dev) { uq__free(dev); }

static int hip_make_current(uq__pdev *dev) {
  CHECK(api.SetDevice(dev->ordinal), "hipSetDevice");
  return 0;
}

static int hip_device_name(uq__pdev *dev, char *buf, size_t n) {
  char name[256] = "";
  CHECK(api.DeviceGetName(name, (int)sizeof name - 1, dev->ordinal),
        "hipDeviceGetName");
  snprintf(buf, n, "%s", name);
  return 0;
}

static int hip_device_arch(uq__pdev *dev, char *buf, size_t n) {
  /* Far larger than any hipDeviceProp_t layout (about 1.5 KB in ROCm 6). */
  enum { PROPS = 16384 };
  char *props = uq__calloc(1, PROPS);
  if (props == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory reading device properties");
  hip_status r = api.GetDeviceProperties(props, dev->ordinal);
  int rc = 0;
  if (r != 0) {
    rc = fail(r, "hipGetDeviceProperties");
    goto cleanup;
  }
  rc = uq__errorf(UQ_EDEVICE, "no gcnArchName found in hipDeviceProp_t");
  for (size_t i = 0; i + 4 < PROPS; i++) {
    if ((i > 0 && props[i - 1] != '\0') || memcmp(props + i, "gfx", 3) != 0 ||
        !isxdigit((unsigned char)props[i + 3]))
      continue;
    size_t len = strnlen(props + i, PROPS - i);
    if (len >= 64 || i + len >= PROPS)
      continue;
    snprintf(buf, n, "%s", props + i);
    uq__error_clear();
    rc = 0;
    break;
  }
cleanup:
  uq__free(props);
  return rc;
}

static int hip_module_load(uq__pdev *dev, const void *image, size_t len,
                           void **module) {
  (void)len;
  int rc = hip_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.ModuleLoadData(module, image), "hipModuleLoadData");
  return 0;
}

static void hip_module_unload(uq__pdev *dev, void *module) {
  if (module != NULL && hip_make_current(dev) == 0)
    api.ModuleUnload(module);
}

static int hip_module_function(uq__pdev *dev, void *module,
                               const char *symbol, void **function) {
  (void)dev;
  hip_status r = api.ModuleGetFunction(function, module, symbol);
  if (r != 0) {
    int rc = fail(r, "hipModuleGetFunction");
    uq__error_append(" (symbol ");
    uq__error_append(symbol);
    uq__error_append(")");
    return rc;
  }
  return 0;
}

static int hip_launch(void *function, const uint32_t grid[3], uint32_t block,
                      void *params, void *stream) {
  void *args[1] = {params};
  CHECK(api.ModuleLaunchKernel(function, grid[0], grid[1], grid[2], block, 1,
                               1, 0, stream, args, NULL),
        "hipModuleLaunchKernel");
  return 0;
}

#define CURRENT(dev)                                                         \
  do {                                                                       \
    int rc_ = hip_make_current(dev);                                         \
    if (rc_ != 0)                                                            \
      return rc_;                                                            \
  } while (0)

static int hip_mem_alloc(uq__pdev *dev, size_t bytes, void **ptr) {
  CURRENT(dev);
  CHECK(api.Malloc(ptr, bytes), "hipMalloc");
  return 0;
}

static int hip_mem_free(uq__pdev *dev, void *ptr) {
  CURRENT(dev);
  CHECK(api.Free(ptr), "hipFree");
  return 0;
}

/* Until the device has finished the work queued so far. */
static int hip_synchronize(uq__pdev *dev) {
  CURRENT(dev);
  CHECK(api.DeviceSynchronize(), "hipDeviceSynchronize");
  return 0;
}

/* The copies and the memset are synchronous (uqjit.h): hipMemcpyHtoD and
 * hipMemset can return before the device has finished, and are not
 * ordered before work on a non-blocking stream, so each waits for the
 * device. The device-to-device copy is stream-ordered here; uq_memcpy_d2d
 * waits for it. */
static int hip_memcpy_h2d(uq__pdev *dev, void *dst, const void *src,
                          size_t bytes) {
  CURRENT(dev);
  CHECK(api.MemcpyHtoD(dst, src, bytes), "hipMemcpyHtoD");
  return hip_synchronize(dev);
}

static int hip_memcpy_d2h(uq__pdev *dev, void *dst, const void *src,
                          size_t bytes) {
  CURRENT(dev);
  CHECK(api.MemcpyDtoH(dst, (void *)src, bytes), "hipMemcpyDtoH");
  return 0;
}

static int hip_memcpy_d2d(uq__pdev *dev, void *dst, const void *src,
                          size_t bytes, void *stream) {
  CURRENT(dev);
  CHECK(api.MemcpyDtoDAsync(dst, (void *)src, bytes, (hip_ptr)stream),
        "hipMemcpyDtoDAsync");
  return 0;
}

static int hip_memset_d8(uq__pdev *dev, void *dst, uint8_t value,
                         size_t bytes) {
  CURRENT(dev);
  CHECK(api.Memset(dst, value, bytes), "hipMemset");
  return hip_synchronize(dev);
}

static int hip_stream_create(uq__pdev *dev, void **stream) {
  CURRENT(dev);
  CHECK(api.StreamCreate(stream), "hipStreamCreate");
  return 0;
}

static int hip_stream_destroy(uq__pdev *dev, void *stream) {
  CURRENT(dev);
  CHECK(api.StreamDestroy(stream), "hipStreamDestroy");
  return 0;
}

static int hip_stream_synchronize(uq__pdev *dev, void *stream) {
  CURRENT(dev);
  CHECK(api.StreamSynchronize(stream), "hipStreamSynchronize");
  return 0;
}

static int hip_capture_begin(uq__pdev *dev, void *stream) {
  CURRENT(dev);
  CHECK(api.StreamBeginCapture(stream, 0 /* hipStreamCaptureModeGlobal */),
        "hipStreamBeginCapture");
  return 0;
}

static int hip_capture_end(uq__pdev *dev, void *stream, void **exec) {
  CURRENT(dev);
  void *graph = NULL;
  CHECK(api.StreamEndCapture(stream, &graph), "hipStreamEndCapture");
  hip_status r = api.GraphInstantiate(exec, graph, NULL, NULL, 0);
  api.GraphDestroy(graph);
  if (r != 0)
    return fail(r, "hipGraphInstantiate");
  return 0;
}

static int hip_graph_launch(uq__pdev *dev, void *exec, void *stream) {
  CURRENT(dev);
  CHECK(api.GraphLaunch(exec, stream), "hipGraphLaunch");
  return 0;
}

static int hip_graph_destroy(uq__pdev *dev, void *exec) {
  CURRENT(dev);
  CHECK(api.GraphExecDestroy(exec), "hipGraphExecDestroy");
  return 0;
}

static int hip_event_create(uq__pdev *dev, void **event) {
  CURRENT(dev);
  CHECK(api.EventCreate(event), "hipEventCreate");
  return 0;
}

static int hip_event_record(uq__pdev *dev, void *event, void *stream) {
  CURRENT(dev);
  CHECK(api.EventRecord(event, stream), "hipEventRecord");
  return 0;
}

static int hip_event_elapsed_ms(uq__pdev *dev, void *start, void *end,
                                float *ms) {
  CURRENT(dev);
  CHECK(api.EventSynchronize(end), "hipEventSynchronize");
  CHECK(api.EventElapsedTime(ms, start, end), "hipEventElapsedTime");
  return 0;
}

static int hip_event_destroy(uq__pdev *dev, void *event) {
  CURRENT(dev);
  CHECK(api.EventDestroy(event), "hipEventDestroy");
  return 0;
}

const uq__platform uq__platform_hip = {
    .name = "hip",
    .init = hip_init,
    .device_count = hip_device_count,
    .device_open = hip_device_open,
    .device_close = hip_device_close,
    .device_name = hip_device_name,
    .device_arch = hip_device_arch,
    .make_current = hip_make_current,
    .module_load = hip_module_load,
    .module_unload = hip_module_unload,
    .module_function = hip_module_function,
    .launch = hip_launch,
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .memcpy_h2d = hip_memcpy_h2d,
    .memcpy_d2h = hip_memcpy_d2h,
    .memcpy_d2d = hip_memcpy_d2d,
    .memset_d8 = hip_memset_d8,
    .synchronize = hip_synchronize,
    .stream_create = hip_stream_create,
    .stream_destroy = hip_stream_destroy,
    .stream_synchronize = hip_stream_synchronize,
    .capture_begin = hip_capture_begin,
    .capture_end = hip_capture_end,
    .graph_launch = hip_graph_launch,
    .graph_destroy = hip_graph_destroy,
    .event_create = hip_event_create,
    .event_record = hip_event_record,
    .event_elapsed_ms = hip_event_elapsed_ms,
    .event_destroy = hip_event_destroy,
};
