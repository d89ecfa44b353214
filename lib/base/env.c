#include "lib/base/env.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/base/error.h"

static const char *const names[UQ__ENV_COUNT_] = {
    [UQ__ENV_CACHE_DIR] = "UQJIT_CACHE_DIR",
    [UQ__ENV_CACHE_PATH] = "UQJIT_CACHE_PATH",
    [UQ__ENV_XDG_CACHE_HOME] = "XDG_CACHE_HOME",
    [UQ__ENV_HOME] = "HOME",
    [UQ__ENV_CLANG] = "UQJIT_CLANG",
    [UQ__ENV_AMD_COMPILER] = "UQJIT_AMD_COMPILER",
    [UQ__ENV_VARIANT] = "UQJIT_VARIANT",
    [UQ__ENV_NVRTC_LIB] = "UQJIT_NVRTC_LIB",
    [UQ__ENV_CUDA_LIB] = "UQJIT_CUDA_LIB",
    [UQ__ENV_HIP_LIB] = "UQJIT_HIP_LIB",
    [UQ__ENV_HIPRTC_LIB] = "UQJIT_HIPRTC_LIB",
    [UQ__ENV_COMGR_LIB] = "UQJIT_COMGR_LIB",
    [UQ__ENV_OBJDUMP] = "UQJIT_OBJDUMP",
    [UQ__ENV_ROCM_PATH] = "ROCM_PATH",
    [UQ__ENV_CUDA_HOME] = "CUDA_HOME",
    [UQ__ENV_CUDA_PATH] = "CUDA_PATH",
    [UQ__ENV_DISABLE_JIT] = "UQJIT_DISABLE_JIT",
    [UQ__ENV_QUIET] = "UQJIT_QUIET",
    [UQ__ENV_LOG] = "UQJIT_LOG",
};

/* The levels of UQJIT_LOG, by uq__log_level. */
static const char *const log_names[] = {"error", "warn", "info", "debug"};

/* One warn-once flag per variable. */
static int warned[UQ__ENV_COUNT_];

const char *uq__env_name(uq__env_var var) {
  return (unsigned)var < UQ__ENV_COUNT_ ? names[var] : "?";
}

static int one_of(const char *v, const char *a, const char *b) {
  return strcmp(v, a) == 0 || strcmp(v, b) == 0;
}

const char *uq__env_get(uq__env_var var) {
  if ((unsigned)var >= UQ__ENV_COUNT_)
    return NULL;
  const char *v = getenv(names[var]);
  if (v == NULL || v[0] == '\0')
    return NULL;
  int ok = 1;
  switch (var) {
  case UQ__ENV_AMD_COMPILER:
    ok = one_of(v, "clang", "hiprtc");
    break;
  /* UQ__ENV_VARIANT names a decode layer: the codegen layer table checks
   * it (lib/codegen/layers.c), since the names are that table's. */
  case UQ__ENV_LOG:
    ok = 0;
    for (size_t i = 0; i < sizeof log_names / sizeof log_names[0]; i++)
      ok |= strcasecmp(v, log_names[i]) == 0;
    break;
  case UQ__ENV_DISABLE_JIT:
  case UQ__ENV_QUIET:
    /* Booleans have their own rule: uq__env_bool. */
    break;
  case UQ__ENV_CACHE_DIR:
  case UQ__ENV_XDG_CACHE_HOME:
  case UQ__ENV_HOME:
    /* Relative cache roots would move with the working directory. */
    ok = v[0] == '/';
    break;
  case UQ__ENV_ROCM_PATH:
  case UQ__ENV_CUDA_HOME:
  case UQ__ENV_CUDA_PATH:
    /* Library candidates are built under these: a relative root would
     * depend on the working directory. */
    ok = v[0] == '/' && strlen(v) <= UQ__ENV_ROOT_MAX;
    break;
  default:
    break;
  }
  if (!ok) {
    uq__warn_once(&warned[var], "ignoring invalid %s=%s", names[var], v);
    return NULL;
  }
  return v;
}

static int word_in(const char *v, const char *const *words, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcasecmp(v, words[i]) == 0)
      return 1;
  return 0;
}

int uq__env_bool(uq__env_var var) {
  static const char *const on[] = {"1", "true", "yes", "on"};
  static const char *const off[] = {"0", "false", "no", "off"};
  if (var != UQ__ENV_DISABLE_JIT && var != UQ__ENV_QUIET)
    return 0;
  const char *v = getenv(names[var]);
  if (v == NULL || v[0] == '\0' || word_in(v, off, 4))
    return 0;
  if (word_in(v, on, 4))
    return 1;
  /* Not a boolean: the safe side. Compiling code where the operator asked
   * for none is the harm a typo must not cause; hiding warnings is not. */
  int safe = var == UQ__ENV_DISABLE_JIT;
  uq__warn_once(&warned[var],
                "%s=%s is not a boolean (1/0, true/false, yes/no, on/off): "
                "taken as %s", names[var], v, safe ? "on" : "off");
  return safe;
}

uq__log_level uq__env_log_level(void) {
  const char *v = uq__env_get(UQ__ENV_LOG);
  if (v != NULL)
    for (size_t i = 0; i < sizeof log_names / sizeof log_names[0]; i++)
      if (strcasecmp(v, log_names[i]) == 0)
        return (uq__log_level)i;
  return uq__env_bool(UQ__ENV_QUIET) ? UQ__LOG_ERROR : UQ__LOG_WARN;
}
