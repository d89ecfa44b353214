/* Every environment variable uqjit reads, parsed in one place. An invalid
 * value is warned about once and ignored (treated as unset). Values are read
 * on each call (no caching), so tests can change them; none of these is on a
 * hot path. */
#ifndef UQ_ENV_H
#define UQ_ENV_H

typedef enum {
  UQ__ENV_CACHE_DIR,     /* UQJIT_CACHE_DIR: writable cache directory */
  UQ__ENV_CACHE_PATH,    /* UQJIT_CACHE_PATH: read-only layers, colon separated */
  UQ__ENV_XDG_CACHE_HOME,/* XDG_CACHE_HOME */
  UQ__ENV_HOME,          /* HOME */
  UQ__ENV_CLANG,         /* UQJIT_CLANG: offline clang executable */
  UQ__ENV_AMD_COMPILER,  /* UQJIT_AMD_COMPILER: clang | hiprtc */
  UQ__ENV_VARIANT,       /* UQJIT_VARIANT: portable | matrix | warpgroup */
  UQ__ENV_NVRTC_LIB,     /* UQJIT_NVRTC_LIB: path or soname of libnvrtc */
  UQ__ENV_CUDA_LIB,      /* UQJIT_CUDA_LIB: libcuda */
  UQ__ENV_HIP_LIB,       /* UQJIT_HIP_LIB: libamdhip64 */
  UQ__ENV_HIPRTC_LIB,    /* UQJIT_HIPRTC_LIB: libhiprtc (ROCm 6+) */
  UQ__ENV_COMGR_LIB,     /* UQJIT_COMGR_LIB: libamd_comgr */
  UQ__ENV_OBJDUMP,       /* UQJIT_OBJDUMP: llvm-objdump for AMD disassembly */
  UQ__ENV_ROCM_PATH,     /* ROCM_PATH: ROCm install root (its lib/) */
  UQ__ENV_CUDA_HOME,     /* CUDA_HOME: CUDA toolkit root (its lib64/) */
  UQ__ENV_CUDA_PATH,     /* CUDA_PATH: CUDA toolkit root (its lib64/) */
  UQ__ENV_COUNT_
} uq__env_var;

/* The variable's name, e.g. "UQJIT_CLANG". */
const char *uq__env_name(uq__env_var var);
/* Its value, or NULL when unset, empty or invalid. UQ__ENV_VARIANT comes
 * back unchecked: its caller (the layer table) validates and warns. */
const char *uq__env_get(uq__env_var var);
/* Boolean flags: UQJIT_DISABLE_JIT, UQJIT_QUIET. "1/true/yes/on" = 1,
 * "0/false/no/off"/unset = 0; anything else warns once and counts as 0. */
int uq__env_flag(const char *name);

/* Longest install root (ROCM_PATH, CUDA_HOME, CUDA_PATH) accepted; longer
 * ones are invalid, so library paths built under them always fit. */
#define UQ__ENV_ROOT_MAX 400

#endif
