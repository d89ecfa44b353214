/* hipRTC: HIP C++ -> AMD code object, no GPU needed. In ROCm 5 it lives in
 * libamdhip64 (Debian 12 ships 5.2), from ROCm 6 in libhiprtc. The ABI is
 * plain C and has not changed, so the prototypes are declared here rather
 * than pulling in the HIP headers (which need a platform macro and C++). */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "compiler_impl.h"
#include "dl.h"
#include "error.h"

typedef int hiprtc_result; /* hiprtcResult: HIPRTC_SUCCESS = 0 */
typedef void *hiprtc_program;

typedef hiprtc_result (*version_fn)(int *, int *);
typedef hiprtc_result (*create_fn)(hiprtc_program *, const char *,
                                   const char *, int, const char *const *,
                                   const char *const *);
typedef hiprtc_result (*compile_fn)(hiprtc_program, int, const char *const *);
typedef hiprtc_result (*size_fn)(hiprtc_program, size_t *);
typedef hiprtc_result (*get_fn)(hiprtc_program, char *);
typedef hiprtc_result (*destroy_fn)(hiprtc_program *);
typedef const char *(*errstr_fn)(hiprtc_result);

/* ROCm 6+ first (it serves every current target), then ROCm 5's. */
static const char *const candidates[] = {
    "libhiprtc.so.7",
    "libhiprtc.so.6",
    "libhiprtc.so",
    "/opt/rocm/lib/libhiprtc.so",
    "libamdhip64.so.5",
    "/opt/rocm/lib/libamdhip64.so.5",
    NULL,
};

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

static int hiprtc_compile(const uq__compiler *cc, const char *target,
                          const char *src, size_t len, const char *name,
                          void **obj, size_t *obj_len) {
  int status = 0;
  hiprtc_program prog = NULL;
  char *text = NULL, *log = NULL, *code = NULL;
  char opts[UQ__OPTIONS_MAX], prog_name[256];
  const char *argv[16];
  const uq__rtc_api *api = &cc->api;
  pthread_mutex_t *serial =
      cc->rocm5 ? (pthread_mutex_t *)&cc->compile_lock : NULL;
  int locked = 0;

  text = uq__malloc(len + 1);
  if (text == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory copying a %zu-byte source",
                        len);
    goto cleanup;
  }
  memcpy(text, src, len);
  text[len] = '\0';
  snprintf(prog_name, sizeof prog_name, "%s.hip", name);
  hiprtc_options(cc, target, opts, sizeof opts);
  int argc = uq__compiler_split(opts, argv, 16);

  /* ROCm 5's hipRTC is not documented as thread-safe (it keeps comgr state
   * behind the program), so its compiles are serialised; ROCm 6+ runs them
   * concurrently. */
  if (serial != NULL)
    pthread_mutex_lock(serial);
  locked = serial != NULL;
  hiprtc_result r =
      ((create_fn)api->create)(&prog, text, prog_name, 0, NULL, NULL);
  if (r != 0) {
    prog = NULL;
    status = uq__errorf(UQ_ECOMPILE, "hiprtcCreateProgram failed: %s",
                        ((errstr_fn)api->errstr)(r));
    goto cleanup;
  }
  hiprtc_result cr = ((compile_fn)api->compile)(prog, argc, argv);
  size_t log_size = 0;
  if (((size_fn)api->log_size)(prog, &log_size) == 0 && log_size > 0) {
    log = uq__malloc(log_size + 1);
    if (log != NULL) {
      if (((get_fn)api->log)(prog, log) != 0)
        log[0] = '\0';
      log[log_size] = '\0';
    }
  }
  if (cr != 0) {
    status = uq__errorf(UQ_ECOMPILE, "%s failed to compile %s for %s (%s):\n",
                        cc->identity, prog_name, target,
                        ((errstr_fn)api->errstr)(cr));
    uq__error_append(log != NULL && log[0] != '\0' ? log : "(empty log)");
    goto cleanup;
  }
  size_t size = 0;
  r = ((size_fn)api->code_size)(prog, &size);
  if (r != 0 || size == 0) {
    status = uq__errorf(UQ_ECOMPILE, "hiprtcGetCodeSize failed for %s: %s",
                        target, ((errstr_fn)api->errstr)(r));
    goto cleanup;
  }
  code = uq__malloc(size);
  if (code == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory for a %zu-byte code object",
                        size);
    goto cleanup;
  }
  r = ((get_fn)api->code)(prog, code);
  if (r != 0) {
    status = uq__errorf(UQ_ECOMPILE, "hiprtcGetCode failed: %s",
                        ((errstr_fn)api->errstr)(r));
    goto cleanup;
  }
  *obj = code;
  *obj_len = size;
  code = NULL;
cleanup:
  if (prog != NULL)
    ((destroy_fn)api->destroy)(&prog);
  if (locked)
    pthread_mutex_unlock(serial);
  uq__free(text);
  uq__free(log);
  uq__free(code);
  return status;
}

int uq__hiprtc_load(uq__compiler *cc) {
  void *h = NULL;
  int status = uq__dl_open(UQ__ENV_HIPRTC_LIB, candidates, "hipRTC",
                           UQ_ENOCOMPILER, &h);
  if (status != 0)
    return status;
  struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"hiprtcVersion", &cc->api.version},
      {"hiprtcCreateProgram", &cc->api.create},
      {"hiprtcCompileProgram", &cc->api.compile},
      {"hiprtcGetProgramLogSize", &cc->api.log_size},
      {"hiprtcGetProgramLog", &cc->api.log},
      {"hiprtcGetCodeSize", &cc->api.code_size},
      {"hiprtcGetCode", &cc->api.code},
      {"hiprtcDestroyProgram", &cc->api.destroy},
      {"hiprtcGetErrorString", &cc->api.errstr},
  };
  uq__dl_path(h, cc->location, sizeof cc->location);
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    status = uq__dl_sym(h, cc->location, syms[i].name, UQ_ENOCOMPILER,
                        syms[i].slot);
    if (status != 0)
      return status;
  }
  const char *base = strrchr(cc->location, '/');
  base = base != NULL ? base + 1 : cc->location;
  cc->rocm5 = strncmp(base, "libamdhip64", 11) == 0;
  int major = 0, minor = 0;
  hiprtc_result r = ((version_fn)cc->api.version)(&major, &minor);
  if (r != 0)
    return uq__errorf(UQ_ENOCOMPILER, "hiprtcVersion failed in %s: %s",
                      cc->location, ((errstr_fn)cc->api.errstr)(r));
  /* hiprtcVersion alone does not tell ROCm releases apart (5.2 reports
   * 9.0); the resolved file name (libamdhip64.so.5.2.21153) does. */
  snprintf(cc->identity, sizeof cc->identity, "hiprtc %d.%d (%s)", major,
           minor, base);
  cc->options = hiprtc_options;
  cc->compile = hiprtc_compile;
  return 0;
}
