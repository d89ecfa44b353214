/* Private to the compiler module (compiler.c and compiler_*.c): the
 * compiler object and the backends' constructors. */
#ifndef UQ_COMPILER_IMPL_H
#define UQ_COMPILER_IMPL_H

#include <limits.h>
#include <pthread.h>

#include "lib/base/env.h"
#include "lib/base/libs.h"
#include "lib/compile/compiler.h"

#define UQ__IDENTITY_MAX (PATH_MAX + 512)
#define UQ__OPTIONS_MAX 256

/* The per-target option strings handed out by uq__compiler_options: they
 * must outlive the call, so they are interned on the (immortal) compiler. */
#define UQ__INTERNED_MAX 32
typedef struct uq__interned {
  char target[64];
  char options[UQ__OPTIONS_MAX];
} uq__interned;

/* NVRTC and hipRTC have the same C API shape; their dlsym()ed entry
 * points are kept here and called by compiler_rtc.c. */
typedef struct uq__rtc_api {
  void *version, *create, *compile, *log_size, *log, *code_size, *code,
      *destroy, *errstr;
} uq__rtc_api;

/* What tells the two apart. Entry points are `prefix` + the common suffix
 * ("nvrtc" "CreateProgram"), except the code getters named in full. */
typedef struct uq__rtc_desc {
  const char *prefix;                /* "nvrtc", "hiprtc" */
  const char *code_size, *code;      /* "GetCUBINSize", "GetCUBIN" */
  const char *source_ext;            /* program name suffix: ".cu" */
  const char *code_what;             /* "cubin", for messages */
  uq__lib_id lib;                    /* the library (lib/base/libs.h) */
} uq__rtc_desc;

struct uq__compiler {
  uq__route route;
  char identity[UQ__IDENTITY_MAX];
  char location[PATH_MAX]; /* library or executable, resolved */
  /* The options for one target, space separated: exactly what is passed
   * (the cache key sees this string). */
  void (*options)(const uq__compiler *cc, const char *target, char *buf,
                  size_t n);
  int (*compile)(const uq__compiler *cc, const char *target, const char *src,
                 size_t len, const char *name, void **obj, size_t *obj_len);
  /* `compile` with extra options, keeping the compiler's log; NULL where
   * the backend has none to give (uq__compiler_compile_log). */
  int (*compile_log)(const uq__compiler *cc, const char *target,
                     const char *src, size_t len, const char *name,
                     const char *extra, void **obj, size_t *obj_len,
                     char **log);
  uq__rtc_api api;     /* NVRTC / hipRTC entry points */
  int rocm5;           /* hipRTC embedded in libamdhip64 (ROCm 5): limited targets */
  pthread_mutex_t lock;         /* guards `interned` */
  pthread_mutex_t compile_lock; /* serialises ROCm 5 hipRTC compiles */
  int n_interned;
  uq__interned interned[UQ__INTERNED_MAX];
};

/* Backends: load (dlopen, or find the executable, honouring the backend's
 * override variable), compute the identity and fill *cc (zeroed by the
 * caller, locks initialised). Failures: UQ_ENOCOMPILER with everything
 * tried and the variable that overrides it. */
int uq__nvrtc_load(uq__compiler *cc);
int uq__hiprtc_load(uq__compiler *cc);
int uq__clang_load(uq__compiler *cc);

/* The shared part of the NVRTC and hipRTC backends. uq__rtc_load opens the
 * library, fills cc->location and cc->api and returns the version it
 * reports. uq__rtc_compile is a backend's `compile` with cc->options as the
 * options, then `extra` (or NULL); `serial` (or NULL) is held around the
 * program's whole life; on success the log goes to *log_out (caller frees)
 * unless log_out is NULL. */
int uq__rtc_load(uq__compiler *cc, const uq__rtc_desc *d, int *major,
                 int *minor);
int uq__rtc_compile(const uq__compiler *cc, const uq__rtc_desc *d,
                    pthread_mutex_t *serial, const char *target,
                    const char *src, size_t len, const char *name,
                    const char *extra, void **obj, size_t *obj_len,
                    char **log_out);

/* Splits an options string into argv (at most `max` entries) inside `buf`. */
int uq__compiler_split(char *buf, const char **argv, int max);

/* "gfx950" from "gfx950:sramecc+:xnack-". */
void uq__compiler_arch(const char *target, char *out, size_t n);

#endif
