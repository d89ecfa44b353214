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
};

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

int uq__env_flag(const char *name) {
  const char *v = getenv(name);
  if (v == NULL || v[0] == '\0')
    return 0;
  if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
      !strcasecmp(v, "on"))
    return 1;
  if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
      !strcasecmp(v, "off"))
    return 0;
  /* A flag's warn-once state is shared: flags are few and rarely wrong. */
  static int flag_warned;
  uq__warn_once(&flag_warned, "ignoring invalid %s=%s", name, v);
  return 0;
}
