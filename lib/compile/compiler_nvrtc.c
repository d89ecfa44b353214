/* NVRTC: CUDA C++ -> cubin (real SASS for the sm_NN asked for), no GPU
 * needed. The library is dlopen()ed; nvrtc.h supplies only the types. */
#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/uq_config.h"
#include "lib/compile/compiler_impl.h"

#if UQ_HAVE_CUDA_HEADERS

#include <nvrtc.h>

/* compiler_rtc.c calls these entry points with `int` status and opaque
 * pointer handles. */
_Static_assert(NVRTC_SUCCESS == 0 && sizeof(nvrtcResult) == sizeof(int),
               "nvrtcResult is not an int with 0 for success");

/* --fmad=true is NVRTC's default, spelled out because it is part of the
 * numerics contract and of the cache key: contraction is allowed globally
 * (the attention math needs it to be fast) and the templates use explicit
 * __fmul_rn/__fadd_rn where the codec steps must round separately. No
 * --use_fast_math (it would change division, sqrt and denormals). */
static void nvrtc_options(const uq__compiler *cc, const char *target,
                          char *buf, size_t n) {
  (void)cc;
  snprintf(buf, n, "-arch=%s --std=c++17 --fmad=true", target);
}

static const uq__rtc_desc nvrtc = {
    .prefix = "nvrtc",
    .code_size = "GetCUBINSize",
    .code = "GetCUBIN",
    .source_ext = ".cu",
    .code_what = "cubin",
    .lib = UQ__LIB_NVRTC,
};

static int nvrtc_compile(const uq__compiler *cc, const char *target,
                         const char *src, size_t len, const char *name,
                         void **obj, size_t *obj_len) {
  return uq__rtc_compile(cc, &nvrtc, NULL, target, src, len, name, NULL, obj,
                         obj_len, NULL);
}

/* The same compile with `extra` options after the usual ones, handing back
 * NVRTC's log (ptxas's notes with "--ptxas-options=-v"). */
static int nvrtc_compile_log(const uq__compiler *cc, const char *target,
                             const char *src, size_t len, const char *name,
                             const char *extra, void **obj, size_t *obj_len,
                             char **log) {
  return uq__rtc_compile(cc, &nvrtc, NULL, target, src, len, name, extra, obj,
                         obj_len, log);
}

int uq__nvrtc_load(uq__compiler *cc) {
  int major = 0, minor = 0;
  int status = uq__rtc_load(cc, &nvrtc, &major, &minor);
  if (status != 0)
    return status;
  /* The resolved file name carries the patch release (libnvrtc.so.13.0.88),
   * which nvrtcVersion does not; the directory is left out so that a cache
   * warmed elsewhere matches the same release installed anywhere. */
  const char *base = strrchr(cc->location, '/');
  snprintf(cc->identity, sizeof cc->identity, "nvrtc %d.%d (%s)", major,
           minor, base != NULL ? base + 1 : cc->location);
  cc->options = nvrtc_options;
  cc->compile = nvrtc_compile;
  cc->compile_log = nvrtc_compile_log;
  return 0;
}

#else /* !UQ_HAVE_CUDA_HEADERS */

int uq__nvrtc_load(uq__compiler *cc) {
  (void)cc;
  return uq__errorf(UQ_ENOCOMPILER,
                    "NVRTC support was not built (nvrtc.h was not found at "
                    "configure time; see the meson option nvidia_include)");
}

#endif
