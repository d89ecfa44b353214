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
  UQ__ENV_DISABLE_JIT,   /* UQJIT_DISABLE_JIT: boolean, a safety switch */
  UQ__ENV_QUIET,         /* UQJIT_QUIET: boolean, UQJIT_LOG=error */
  UQ__ENV_LOG,           /* UQJIT_LOG: error | warn | info | debug */
  UQ__ENV_COUNT_
} uq__env_var;

/* The variable's name, e.g. "UQJIT_CLANG". */
const char *uq__env_name(uq__env_var var);
/* Its value, or NULL when unset, empty or invalid. UQ__ENV_VARIANT comes
 * back unchecked: its caller (the layer table) validates and warns. */
const char *uq__env_get(uq__env_var var);
/* Booleans (UQJIT_DISABLE_JIT, UQJIT_QUIET), one rule for all: "1",
 * "true", "yes", "on" (any case) = 1; "0", "false", "no", "off", empty or
 * unset = 0; any other value is the variable's safe side, said once: a
 * safety switch (UQJIT_DISABLE_JIT) is on, UQJIT_QUIET is off (warnings
 * stay visible). */
int uq__env_bool(uq__env_var var);

/* How much uqjit says on stderr (UQJIT_LOG; else UQJIT_QUIET = error). */
typedef enum {
  UQ__LOG_ERROR = 0, /* nothing: failures are returned, not printed */
  UQ__LOG_WARN = 1,  /* the default: setup problems, once each */
  UQ__LOG_INFO = 2,  /* compiles, cache hits and misses with their layer, times */
  UQ__LOG_DEBUG = 3  /* every lookup step */
} uq__log_level;
/* The level in effect: UQJIT_LOG when valid (an invalid one is said once
 * and ignored), else UQ__LOG_ERROR when UQJIT_QUIET is on, else WARN. */
uq__log_level uq__env_log_level(void);

/* Longest install root (ROCM_PATH, CUDA_HOME, CUDA_PATH) accepted; longer
 * ones are invalid, so library paths built under them always fit. */
#define UQ__ENV_ROOT_MAX 400

#endif
