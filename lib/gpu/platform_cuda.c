/* The CUDA driver API behind lib/gpu/platform.h, loaded with dlopen.
 *
 * cuda.h renames many entry points with macros (cuMemAlloc -> cuMemAlloc_v2,
 * cuGraphInstantiate -> cuGraphInstantiateWithFlags, ...). Each pointer here
 * takes its type from the header's own prototype of the name as the header
 * spells it, and is looked up under the macro-expanded name, so the symbol
 * and the prototype always agree with the header we were built against. */
#include "lib/gpu/platform.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/dl.h"
#include "lib/base/error.h"
#include "lib/base/libs.h"
#include "lib/base/uq_config.h"

#if UQ_HAVE_CUDA_HEADERS

#include <cuda.h>
#include <dlfcn.h>

#define UQ__CUDA_API(X)                                                      \
  X(cuGetErrorName)                                                          \
  X(cuGetErrorString)                                                        \
  X(cuInit)                                                                  \
  X(cuDeviceGetCount)                                                        \
  X(cuDeviceGet)                                                             \
  X(cuDeviceGetName)                                                         \
  X(cuDeviceGetAttribute)                                                    \
  X(cuDevicePrimaryCtxRetain)                                                \
  X(cuDevicePrimaryCtxRelease)                                               \
  X(cuCtxSetCurrent)                                                         \
  X(cuCtxSynchronize)                                                        \
  X(cuModuleLoadData)                                                        \
  X(cuModuleUnload)                                                          \
  X(cuModuleGetFunction)                                                     \
  X(cuLaunchKernel)                                                          \
  X(cuMemAlloc)                                                              \
  X(cuMemFree)                                                               \
  X(cuMemcpyHtoD)                                                            \
  X(cuMemcpyDtoH)                                                            \
  X(cuMemcpyDtoDAsync)                                                       \
  X(cuMemsetD8)                                                              \
  X(cuStreamCreate)                                                          \
  X(cuStreamDestroy)                                                         \
  X(cuStreamSynchronize)                                                     \
  X(cuStreamBeginCapture)                                                    \
  X(cuStreamEndCapture)                                                      \
  X(cuGraphInstantiate)                                                      \
  X(cuGraphLaunch)                                                           \
  X(cuGraphExecDestroy)                                                      \
  X(cuGraphDestroy)                                                          \
  X(cuEventCreate)                                                           \
  X(cuEventRecord)                                                           \
  X(cuEventSynchronize)                                                      \
  X(cuEventElapsedTime)                                                      \
  X(cuEventDestroy)

/* Expands its argument first: UQ__STR(cuMemAlloc) is "cuMemAlloc_v2". */
#define UQ__STR_(x) #x
#define UQ__STR(x) UQ__STR_(x)

static struct {
#define UQ__CUDA_FIELD(fn) __typeof__(fn) *p_##fn;
  UQ__CUDA_API(UQ__CUDA_FIELD)
#undef UQ__CUDA_FIELD
  /* Optional (drivers since CUDA 11.8): launches with attributes. NULL
   * makes launch_dependent a plain launch. */
  __typeof__(cuLaunchKernelEx) *p_cuLaunchKernelEx;
  /* Optional (drivers since CUDA 12.0): tensor maps. NULL makes
   * tensor_map_slots fail with a message. */
  __typeof__(cuTensorMapEncodeTiled) *p_cuTensorMapEncodeTiled;
} api;

struct uq__pdev {
  int ordinal;
  CUdevice device;
  CUcontext context;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_status;
static char init_detail[512];

static int fail(CUresult r, const char *call) {
  const char *name = NULL, *text = NULL;
  if (api.p_cuGetErrorName == NULL ||
      api.p_cuGetErrorName(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (api.p_cuGetErrorString == NULL ||
      api.p_cuGetErrorString(r, &text) != CUDA_SUCCESS)
    text = NULL;
  return uq__errorf(UQ_EDEVICE, "%s failed: %s (%d): %s", call,
                    name ? name : "CUDA_ERROR_UNKNOWN", (int)r,
                    text ? text : "no description");
}

#define CHECK(expr, call)                                                    \
  do {                                                                       \
    CUresult r_ = (expr);                                                    \
    if (r_ != CUDA_SUCCESS)                                                  \
      return fail(r_, call);                                                 \
  } while (0)

static void do_init(void) {
  void *lib = NULL;
  int rc = uq__libs_open(UQ__LIB_CUDA, UQ_ENODEV, &lib);
  if (rc == 0) {
#define UQ__CUDA_SYM(fn)                                                     \
  if (rc == 0)                                                               \
    rc = uq__dl_sym(lib, "libcuda", UQ__STR(fn), UQ_ENODEV,                  \
                    (void **)&api.p_##fn);
    UQ__CUDA_API(UQ__CUDA_SYM)
#undef UQ__CUDA_SYM
    api.p_cuLaunchKernelEx = (__typeof__(cuLaunchKernelEx) *)dlsym(lib, UQ__STR(cuLaunchKernelEx));
    api.p_cuTensorMapEncodeTiled = (__typeof__(cuTensorMapEncodeTiled) *)dlsym(
        lib, UQ__STR(cuTensorMapEncodeTiled));
  }
  if (rc == 0) {
    CUresult r = api.p_cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE)
      rc = uq__errorf(UQ_ENODEV, "CUDA driver loaded but it sees no device");
    else if (r != CUDA_SUCCESS) {
      /* The driver's words, but a runtime that cannot start is "no device". */
      fail(r, "cuInit");
      rc = UQ_ENODEV;
    }
  }
  init_status = rc;
  if (rc != 0)
    snprintf(init_detail, sizeof init_detail, "%s", uq_last_error());
}

static int cuda_init(void) {
  pthread_once(&init_once, do_init);
  if (init_status != 0)
    return uq__errorf(init_status, "%s", init_detail);
  return 0;
}

static int cuda_device_count(int *count) {
  *count = 0;
  int rc = cuda_init();
  if (rc != 0)
    return rc;
  CHECK(api.p_cuDeviceGetCount(count), "cuDeviceGetCount");
  return 0;
}

static int cuda_device_open(int ordinal, uq__pdev **out) {
  *out = NULL;
  int rc = cuda_init();
  if (rc != 0)
    return rc;
  int count = 0;
  CHECK(api.p_cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    return uq__errorf(UQ_ENODEV, "CUDA device %d requested, %d present",
                      ordinal, count);
  uq__pdev *dev = uq__calloc(1, sizeof *dev);
  if (dev == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory opening CUDA device");
  dev->ordinal = ordinal;
  CUresult r = api.p_cuDeviceGet(&dev->device, ordinal);
  if (r == CUDA_SUCCESS)
    r = api.p_cuDevicePrimaryCtxRetain(&dev->context, dev->device);
  if (r != CUDA_SUCCESS) {
    uq__free(dev);
    return fail(r, "cuDevicePrimaryCtxRetain");
  }
  *out = dev;
  return 0;
}

static void cuda_device_close(uq__pdev *dev) {
  if (dev == NULL)
    return;
  api.p_cuDevicePrimaryCtxRelease(dev->device);
  uq__free(dev);
}

static int cuda_device_name(uq__pdev *dev, char *buf, size_t n) {
  char name[256] = "";
  CHECK(api.p_cuDeviceGetName(name, (int)sizeof name - 1, dev->device),
        "cuDeviceGetName");
  snprintf(buf, n, "%s", name);
  return 0;
}

static int cuda_device_arch(uq__pdev *dev, char *buf, size_t n) {
  int major = 0, minor = 0;
  CHECK(api.p_cuDeviceGetAttribute(
            &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device),
        "cuDeviceGetAttribute");
  CHECK(api.p_cuDeviceGetAttribute(
            &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->device),
        "cuDeviceGetAttribute");
  /* A compute capability 9.0 device is named by its arch-specific target
   * sm_90a: every CC 9.0 part (H100, H200, GH200) has the wgmma and setmaxnreg
   * instructions that only sm_90a code may use, and an sm_90a cubin runs on
   * CC 9.0 alone, which is exactly this device. The planner then picks the
   * warpgroup layer; plain sm_90 stays a valid target to ask for by name. */
  if (major == 9 && minor == 0)
    snprintf(buf, n, "sm_90a");
  else
    snprintf(buf, n, "sm_%d%d", major, minor);
  return 0;
}

static int cuda_make_current(uq__pdev *dev) {
  CHECK(api.p_cuCtxSetCurrent(dev->context), "cuCtxSetCurrent");
  return 0;
}

static int cuda_module_load(uq__pdev *dev, const void *image, size_t len,
                            void **module) {
  (void)len; /* cubins carry their own size */
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CUmodule mod = NULL;
  CHECK(api.p_cuModuleLoadData(&mod, image), "cuModuleLoadData");
  *module = mod;
  return 0;
}

static void cuda_module_unload(uq__pdev *dev, void *module) {
  if (module == NULL || cuda_make_current(dev) != 0)
    return;
  api.p_cuModuleUnload((CUmodule)module);
}

static int cuda_module_function(uq__pdev *dev, void *module,
                                const char *symbol, void **function) {
  (void)dev;
  CUfunction fn = NULL;
  CUresult r = api.p_cuModuleGetFunction(&fn, (CUmodule)module, symbol);
  if (r != CUDA_SUCCESS) {
    int rc = fail(r, "cuModuleGetFunction");
    uq__error_append(" (symbol ");
    uq__error_append(symbol);
    uq__error_append(")");
    return rc;
  }
  *function = fn;
  return 0;
}

static int cuda_launch(void *function, const uint32_t grid[3], uint32_t block,
                       void *params, void *stream) {
  void *args[1] = {params};
  CHECK(api.p_cuLaunchKernel((CUfunction)function, grid[0], grid[1], grid[2],
                             block, 1, 1, 0, (CUstream)stream, args, NULL),
        "cuLaunchKernel");
  return 0;
}

/* Programmatic stream serialization: the kernel may be scheduled once
 * every block of the previous kernel has started or called
 * griddepcontrol.launch_dependents, and waits for that kernel's
 * completion and memory itself (griddepcontrol.wait). Its launch and
 * block start-up then overlap the previous kernel's tail instead of
 * following it. Stream capture records it as a programmatic edge. */
static int cuda_launch_dependent(void *function, const uint32_t grid[3],
                                 uint32_t block, void *params, void *stream) {
  if (api.p_cuLaunchKernelEx == NULL)
    return cuda_launch(function, grid, block, params, stream);
  void *args[1] = {params};
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = grid[0];
  cfg.gridDimY = grid[1];
  cfg.gridDimZ = grid[2];
  cfg.blockDimX = block;
  cfg.blockDimY = 1;
  cfg.blockDimZ = 1;
  cfg.hStream = (CUstream)stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CHECK(api.p_cuLaunchKernelEx(&cfg, (CUfunction)function, args, NULL),
        "cuLaunchKernelEx");
  return 0;
}

static int cuda_tensor_map_slots(void *map, const void *cache, int64_t rows,
                                 int32_t kv_heads, int32_t padded_slot,
                                 int32_t box_words, int32_t box_rows) {
  if (api.p_cuTensorMapEncodeTiled == NULL)
    return uq__errorf(UQ_EDEVICE, "the CUDA driver has no "
                                  "cuTensorMapEncodeTiled (a CUDA 12 driver "
                                  "or newer is needed for this kernel)");
  cuuint64_t dims[3] = {(cuuint64_t)padded_slot / 4, (cuuint64_t)kv_heads,
                        (cuuint64_t)rows};
  cuuint64_t strides[2] = {(cuuint64_t)padded_slot,
                           (cuuint64_t)kv_heads * (cuuint64_t)padded_slot};
  cuuint32_t box[3] = {(cuuint32_t)box_words, 1, (cuuint32_t)box_rows};
  cuuint32_t steps[3] = {1, 1, 1};
  CHECK(api.p_cuTensorMapEncodeTiled(
            (CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3,
            (void *)cache, dims, strides, box, steps,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
  return 0;
}

static int cuda_mem_alloc(uq__pdev *dev, size_t bytes, void **ptr) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CUdeviceptr p = 0;
  CHECK(api.p_cuMemAlloc(&p, bytes), "cuMemAlloc");
  *ptr = (void *)(uintptr_t)p;
  return 0;
}

static int cuda_mem_free(uq__pdev *dev, void *ptr) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuMemFree((CUdeviceptr)(uintptr_t)ptr), "cuMemFree");
  return 0;
}

/* Until the device has finished the work queued so far. */
static int cuda_synchronize(uq__pdev *dev) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuCtxSynchronize(), "cuCtxSynchronize");
  return 0;
}

/* The copies and the memset are synchronous (uqjit.h): cuMemcpyHtoD from
 * pageable memory and cuMemsetD8 can return before the device has
 * finished, and are not ordered before work on a non-blocking stream, so
 * each waits for the context. The device-to-device copy is stream-ordered
 * here; uq_memcpy_d2d waits for it. */
static int cuda_memcpy_h2d(uq__pdev *dev, void *dst, const void *src,
                           size_t bytes) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes),
        "cuMemcpyHtoD");
  return cuda_synchronize(dev);
}

static int cuda_memcpy_d2h(uq__pdev *dev, void *dst, const void *src,
                           size_t bytes) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes),
        "cuMemcpyDtoH");
  return 0;
}

static int cuda_memcpy_d2d(uq__pdev *dev, void *dst, const void *src,
                           size_t bytes, void *stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst,
                                (CUdeviceptr)(uintptr_t)src, bytes,
                                (CUstream)stream),
        "cuMemcpyDtoDAsync");
  return 0;
}

static int cuda_memset_d8(uq__pdev *dev, void *dst, uint8_t value,
                          size_t bytes) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuMemsetD8((CUdeviceptr)(uintptr_t)dst, value, bytes),
        "cuMemsetD8");
  return cuda_synchronize(dev);
}

static int cuda_stream_create(uq__pdev *dev, void **stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CUstream s = NULL;
  CHECK(api.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  *stream = s;
  return 0;
}

static int cuda_stream_destroy(uq__pdev *dev, void *stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuStreamDestroy((CUstream)stream), "cuStreamDestroy");
  return 0;
}

static int cuda_stream_synchronize(uq__pdev *dev, void *stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuStreamSynchronize((CUstream)stream), "cuStreamSynchronize");
  return 0;
}

static int cuda_capture_begin(uq__pdev *dev, void *stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuStreamBeginCapture((CUstream)stream,
                                   CU_STREAM_CAPTURE_MODE_GLOBAL),
        "cuStreamBeginCapture");
  return 0;
}

static int cuda_capture_end(uq__pdev *dev, void *stream, void **exec) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CUgraph graph = NULL;
  CHECK(api.p_cuStreamEndCapture((CUstream)stream, &graph),
        "cuStreamEndCapture");
  CUgraphExec ge = NULL;
  CUresult r = api.p_cuGraphInstantiate(&ge, graph, 0);
  api.p_cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS)
    return fail(r, "cuGraphInstantiate");
  *exec = ge;
  return 0;
}

static int cuda_graph_launch(uq__pdev *dev, void *exec, void *stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuGraphLaunch((CUgraphExec)exec, (CUstream)stream),
        "cuGraphLaunch");
  return 0;
}

static int cuda_graph_destroy(uq__pdev *dev, void *exec) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuGraphExecDestroy((CUgraphExec)exec), "cuGraphExecDestroy");
  return 0;
}

static int cuda_event_create(uq__pdev *dev, void **event) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CUevent e = NULL;
  CHECK(api.p_cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  *event = e;
  return 0;
}

static int cuda_event_record(uq__pdev *dev, void *event, void *stream) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuEventRecord((CUevent)event, (CUstream)stream),
        "cuEventRecord");
  return 0;
}

static int cuda_event_elapsed_ms(uq__pdev *dev, void *start, void *end,
                                 float *ms) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuEventSynchronize((CUevent)end), "cuEventSynchronize");
  CHECK(api.p_cuEventElapsedTime(ms, (CUevent)start, (CUevent)end),
        "cuEventElapsedTime");
  return 0;
}

static int cuda_event_destroy(uq__pdev *dev, void *event) {
  int rc = cuda_make_current(dev);
  if (rc != 0)
    return rc;
  CHECK(api.p_cuEventDestroy((CUevent)event), "cuEventDestroy");
  return 0;
}

const uq__platform uq__platform_cuda = {
    .name = "cuda",
    .init = cuda_init,
    .device_count = cuda_device_count,
    .device_open = cuda_device_open,
    .device_close = cuda_device_close,
    .device_name = cuda_device_name,
    .device_arch = cuda_device_arch,
    .make_current = cuda_make_current,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .module_function = cuda_module_function,
    .launch = cuda_launch,
    .launch_dependent = cuda_launch_dependent,
    .tensor_map_slots = cuda_tensor_map_slots,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .memcpy_h2d = cuda_memcpy_h2d,
    .memcpy_d2h = cuda_memcpy_d2h,
    .memcpy_d2d = cuda_memcpy_d2d,
    .memset_d8 = cuda_memset_d8,
    .synchronize = cuda_synchronize,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .event_destroy = cuda_event_destroy,
};

#else /* !UQ_HAVE_CUDA_HEADERS */

/* Without cuda.h there are no trustworthy prototypes: the platform exists
 * but reports itself absent. */
static int cuda_absent(void) {
  return uq__errorf(UQ_ENODEV,
                    "uqjit was built without CUDA headers (meson option "
                    "nvidia_include): the CUDA platform is not available");
}

static int cuda_device_count(int *count) {
  *count = 0;
  return cuda_absent();
}

const uq__platform uq__platform_cuda = {
    .name = "cuda",
    .init = cuda_absent,
    .device_count = cuda_device_count,
};

#endif
