/* The GPU libraries uqjit loads at first use (dlopen, never linked): one
 * candidate list per library, shared by the loader and by uq_info_report /
 * uq_info_libraries, so the report names exactly what a real run tries.
 *
 * Each list is the sonames (found through the dynamic linker's search path,
 * LD_LIBRARY_PATH included) followed by the same names under the install
 * roots ROCm and CUDA images use: $ROCM_PATH/lib and /opt/rocm/lib for the
 * AMD libraries, $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64
 * for NVRTC. The lists are computed once per process from the environment
 * (read here and nowhere else); the override variables (UQJIT_HIP_LIB, ...)
 * are read at every load, as before, and replace the list when set. */
#ifndef UQ_LIBS_H
#define UQ_LIBS_H

#include <stddef.h>

#include "lib/base/env.h"

typedef enum {
  UQ__LIB_HIP,    /* HIP runtime, libamdhip64 (ROCm 5-7) */
  UQ__LIB_HIPRTC, /* hipRTC: libhiprtc (ROCm 6+), else inside libamdhip64.so.5 */
  UQ__LIB_COMGR,  /* code object manager, libamd_comgr */
  UQ__LIB_CUDA,   /* CUDA driver, libcuda */
  UQ__LIB_NVRTC,  /* NVRTC, libnvrtc (CUDA 12-13) */
  UQ__LIB_COUNT_
} uq__lib_id;

#define UQ__LIB_CANDIDATES_MAX 24
/* An install root (at most UQ__ENV_ROOT_MAX) plus a directory and a name. */
#define UQ__LIB_NAME_MAX (UQ__ENV_ROOT_MAX + 64)

typedef struct uq__lib_list {
  uq__lib_id id;
  const char *name;      /* short id: "hip", "hiprtc", "comgr", "cuda", "nvrtc" */
  const char *what;      /* for messages: "the HIP runtime" */
  uq__env_var override;  /* the variable that replaces the list */
  size_t count;
  char candidates[UQ__LIB_CANDIDATES_MAX][UQ__LIB_NAME_MAX]; /* in order */
} uq__lib_list;

/* The install roots the lists are built under (NULL = unset). */
typedef struct uq__lib_roots {
  const char *rocm_path; /* ROCM_PATH */
  const char *cuda_home; /* CUDA_HOME */
  const char *cuda_path; /* CUDA_PATH */
} uq__lib_roots;

/* Reads ROCM_PATH, CUDA_HOME and CUDA_PATH (through lib/base/env.h: invalid
 * values are warned about and treated as unset). */
void uq__libs_roots_read(uq__lib_roots *roots);

/* Builds the list for `id` under `roots` into *out (a pure function of its
 * arguments; duplicates, e.g. ROCM_PATH=/opt/rocm, appear once). */
void uq__libs_build(uq__lib_id id, const uq__lib_roots *roots,
                    uq__lib_list *out);

/* The process's list for `id`, built from the environment at the first call
 * (thread-safe) and never changed after. NULL for an unknown id. */
const uq__lib_list *uq__libs_get(uq__lib_id id);

/* What one load did: the attempts in order (the override alone when set,
 * else the list's candidates until one loads). */
typedef struct uq__lib_probe {
  const uq__lib_list *list;
  const char *forced;     /* the override's value, NULL when unset */
  size_t tried;           /* attempts made */
  int loaded;             /* index of the attempt that loaded, -1: none */
  void *handle;           /* the loaded library (never closed), or NULL */
  char why[UQ__LIB_CANDIDATES_MAX][256]; /* dlerror of each failed attempt */
  char path[4096];        /* the loaded file, symlinks resolved */
} uq__lib_probe;

/* Attempt `i`'s name: the override's value or the list's candidate. */
const char *uq__libs_attempt(const uq__lib_probe *p, size_t i);

/* The walk itself: `forced` alone when not NULL, else `list`'s candidates
 * in order until one loads. 0 when one loaded, else UQ_ENOENT. */
int uq__libs_walk(const uq__lib_list *list, const char *forced,
                  uq__lib_probe *p);

/* Tries to load `id` the way uq__libs_open does, recording every attempt
 * in *p. Returns 0 when one loaded, else UQ_ENOENT; sets no error detail. */
int uq__libs_probe(uq__lib_id id, uq__lib_probe *p);

/* Loads `id` (see uq__libs_probe). On failure returns `fail_status` with
 * every attempt and its dlerror text in the detail, and the variable that
 * overrides the list. Handles are never closed. */
int uq__libs_open(uq__lib_id id, int fail_status, void **handle);

#endif
