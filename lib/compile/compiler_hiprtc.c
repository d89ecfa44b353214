/* hipRTC: HIP C++ -> AMD code object, no GPU needed. In ROCm 5 it lives in
 * libamdhip64 (Debian 12 ships 5.2), from ROCm 6 in libhiprtc. The ABI is
 * plain C and has not changed, so it is called through compiler_rtc.c's
 * own prototypes rather than the HIP headers (which need a platform macro
 * and C++). */
#include <stdio.h>
#include <string.h>

#include "lib/compile/compiler_impl.h"

/* Same numerics policy as the other routes: contraction allowed globally,
 * written out because it is part of the cache key; the templates protect
 * the codec steps with explicit intrinsics. ROCm 5.2 spells the target
 * --gpu-architecture (later releases accept it too). */
static void hiprtc_options(const uq__compiler *cc, const char *target,
                           char *buf, size_t n) {
  (void)cc;
  snprintf(buf, n, "--gpu-architecture=%s -O3 -std=c++17 -ffp-contract=fast",
           target);
}

static const uq__rtc_desc hiprtc = {
    .prefix = "hiprtc",
    .code_size = "GetCodeSize",
    .code = "GetCode",
    .source_ext = ".hip",
    .code_what = "code object",
    .lib = UQ__LIB_HIPRTC,
};

static int hiprtc_compile(const uq__compiler *cc, const char *target,
                          const char *src, size_t len, const char *name,
                          void **obj, size_t *obj_len) {
  /* ROCm 5's hipRTC is not documented as thread-safe (it keeps comgr state
   * behind the program), so its compiles are serialised; ROCm 6+ runs them
   * concurrently. */
  pthread_mutex_t *serial =
      cc->rocm5 ? (pthread_mutex_t *)&cc->compile_lock : NULL;
  return uq__rtc_compile(cc, &hiprtc, serial, target, src, len, name, NULL,
                         obj, obj_len, NULL);
}

int uq__hiprtc_load(uq__compiler *cc) {
  int major = 0, minor = 0;
  int status = uq__rtc_load(cc, &hiprtc, &major, &minor);
  if (status != 0)
    return status;
  const char *base = strrchr(cc->location, '/');
  base = base != NULL ? base + 1 : cc->location;
  cc->rocm5 = strncmp(base, "libamdhip64", 11) == 0;
  /* hiprtcVersion alone does not tell ROCm releases apart (5.2 reports
   * 9.0); the resolved file name (libamdhip64.so.5.2.21153) does. */
  snprintf(cc->identity, sizeof cc->identity, "hiprtc %d.%d (%s)", major,
           minor, base);
  cc->options = hiprtc_options;
  cc->compile = hiprtc_compile;
  return 0;
}
