/* NVRTC: CUDA C++ -> cubin (real SASS for the sm_NN asked for), no GPU
 * needed. The library is dlopen()ed; nvrtc.h supplies only the types. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "compiler_impl.h"
#include "dl.h"
#include "error.h"
#include "uq_config.h"

#if UQ_HAVE_CUDA_HEADERS

#include <nvrtc.h>

typedef nvrtcResult (*version_fn)(int *, int *);
typedef nvrtcResult (*create_fn)(nvrtcProgram *, const char *, const char *,
                                 int, const char *const *, const char *const *);
typedef nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*size_fn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*get_fn)(nvrtcProgram, char *);
typedef nvrtcResult (*destroy_fn)(nvrtcProgram *);
typedef const char *(*errstr_fn)(nvrtcResult);

static const char *const candidates[] = {
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so",
    "/usr/local/cuda/lib64/libnvrtc.so.13",
    "/usr/local/cuda/lib64/libnvrtc.so.12",
    "/usr/local/cuda/lib64/libnvrtc.so",
    NULL,
};

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

static int nvrtc_compile(const uq__compiler *cc, const char *target,
                         const char *src, size_t len, const char *name,
                         void **obj, size_t *obj_len) {
  int status = 0;
  nvrtcProgram prog = NULL;
  char *text = NULL, *log = NULL, *code = NULL;
  char opts[UQ__OPTIONS_MAX], prog_name[256];
  const char *argv[16];
  const uq__rtc_api *api = &cc->api;

  /* NVRTC wants a NUL-terminated source; the caller's may not be. */
  text = uq__malloc(len + 1);
  if (text == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory copying a %zu-byte source",
                        len);
    goto cleanup;
  }
  memcpy(text, src, len);
  text[len] = '\0';
  snprintf(prog_name, sizeof prog_name, "%s.cu", name);
  nvrtc_options(cc, target, opts, sizeof opts);
  int argc = uq__compiler_split(opts, argv, 16);

  nvrtcResult r = ((create_fn)api->create)(&prog, text, prog_name, 0, NULL,
                                           NULL);
  if (r != NVRTC_SUCCESS) {
    prog = NULL;
    status = uq__errorf(UQ_ECOMPILE, "nvrtcCreateProgram failed: %s",
                        ((errstr_fn)api->errstr)(r));
    goto cleanup;
  }
  nvrtcResult cr = ((compile_fn)api->compile)(prog, argc, argv);
  size_t log_size = 0;
  if (((size_fn)api->log_size)(prog, &log_size) == NVRTC_SUCCESS &&
      log_size > 0) {
    log = uq__malloc(log_size + 1);
    if (log != NULL) {
      if (((get_fn)api->log)(prog, log) != NVRTC_SUCCESS)
        log[0] = '\0';
      log[log_size] = '\0';
    }
  }
  if (cr != NVRTC_SUCCESS) {
    status = uq__errorf(UQ_ECOMPILE, "%s failed to compile %s for %s (%s):\n",
                        cc->identity, prog_name, target,
                        ((errstr_fn)api->errstr)(cr));
    uq__error_append(log != NULL ? log : "(no log)");
    goto cleanup;
  }
  size_t size = 0;
  r = ((size_fn)api->code_size)(prog, &size);
  if (r != NVRTC_SUCCESS || size == 0) {
    status = uq__errorf(UQ_ECOMPILE, "nvrtcGetCUBINSize failed for %s: %s",
                        target, ((errstr_fn)api->errstr)(r));
    goto cleanup;
  }
  code = uq__malloc(size);
  if (code == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory for a %zu-byte cubin", size);
    goto cleanup;
  }
  r = ((get_fn)api->code)(prog, code);
  if (r != NVRTC_SUCCESS) {
    status = uq__errorf(UQ_ECOMPILE, "nvrtcGetCUBIN failed: %s",
                        ((errstr_fn)api->errstr)(r));
    goto cleanup;
  }
  *obj = code;
  *obj_len = size;
  code = NULL;
cleanup:
  if (prog != NULL)
    ((destroy_fn)api->destroy)(&prog);
  uq__free(text);
  uq__free(log);
  uq__free(code);
  return status;
}

int uq__nvrtc_load(uq__compiler *cc) {
  void *h = NULL;
  int status = uq__dl_open(UQ__ENV_NVRTC_LIB, candidates, "NVRTC",
                           UQ_ENOCOMPILER, &h);
  if (status != 0)
    return status;
  struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"nvrtcVersion", &cc->api.version},
      {"nvrtcCreateProgram", &cc->api.create},
      {"nvrtcCompileProgram", &cc->api.compile},
      {"nvrtcGetProgramLogSize", &cc->api.log_size},
      {"nvrtcGetProgramLog", &cc->api.log},
      {"nvrtcGetCUBINSize", &cc->api.code_size},
      {"nvrtcGetCUBIN", &cc->api.code},
      {"nvrtcDestroyProgram", &cc->api.destroy},
      {"nvrtcGetErrorString", &cc->api.errstr},
  };
  uq__dl_path(h, cc->location, sizeof cc->location);
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    status = uq__dl_sym(h, cc->location, syms[i].name, UQ_ENOCOMPILER,
                        syms[i].slot);
    if (status != 0)
      return status; /* the handle stays open: dlopen handles are immortal */
  }
  int major = 0, minor = 0;
  nvrtcResult r = ((version_fn)cc->api.version)(&major, &minor);
  if (r != NVRTC_SUCCESS)
    return uq__errorf(UQ_ENOCOMPILER, "nvrtcVersion failed in %s: %s",
                      cc->location, ((errstr_fn)cc->api.errstr)(r));
  /* The resolved file name carries the patch release (libnvrtc.so.13.0.88),
   * which nvrtcVersion does not; the directory is left out so that a cache
   * warmed elsewhere matches the same release installed anywhere. */
  const char *base = strrchr(cc->location, '/');
  snprintf(cc->identity, sizeof cc->identity, "nvrtc %d.%d (%s)", major,
           minor, base != NULL ? base + 1 : cc->location);
  cc->options = nvrtc_options;
  cc->compile = nvrtc_compile;
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
