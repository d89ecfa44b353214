#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/compile/compiler_impl.h"

/* Compilers are immortal and live in static storage: nothing to free at
 * exit, and nothing that allocation-counting tests would see as a leak.
 * A slot is keyed by route and the value of the route's override variable,
 * so that changing UQJIT_CLANG / UQJIT_NVRTC_LIB / UQJIT_HIPRTC_LIB between
 * calls selects (and loads) the newly named compiler. Only successful loads
 * are kept: a compiler installed later is found by the next call. */
#define UQ__COMPILER_SLOTS 16

typedef struct slot {
  uq__route route;
  char override[PATH_MAX];
  uq__compiler cc;
} slot;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static slot slots[UQ__COMPILER_SLOTS];
static int n_slots;

/* Targets ROCm 5's hipRTC serves by default. It crashes on gfx940 and later,
 * and only targets it demonstrably compiles are handed to it unasked. */
static const char *const hiprtc_default_archs[] = {"gfx906", "gfx908",
                                                   "gfx90a", NULL};

static uq__env_var override_var(uq__route route) {
  switch (route) {
  case UQ__ROUTE_NVRTC:
    return UQ__ENV_NVRTC_LIB;
  case UQ__ROUTE_HIPRTC:
    return UQ__ENV_HIPRTC_LIB;
  default:
    return UQ__ENV_CLANG;
  }
}

static int load_route(uq__route route, const uq__compiler **out) {
  const char *ov = uq__env_get(override_var(route));
  const char *key = ov != NULL ? ov : "";
  int status = 0;
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < n_slots; i++) {
    if (slots[i].route == route && strcmp(slots[i].override, key) == 0) {
      *out = &slots[i].cc;
      goto cleanup;
    }
  }
  if (n_slots == UQ__COMPILER_SLOTS) {
    status = uq__errorf(UQ_ENOCOMPILER,
                        "too many distinct compiler overrides in one process "
                        "(%d); not loading %s=%s",
                        UQ__COMPILER_SLOTS, uq__env_name(override_var(route)),
                        key);
    goto cleanup;
  }
  if (strlen(key) >= sizeof slots[0].override) {
    status = uq__errorf(UQ_ENOCOMPILER, "%s is too long",
                        uq__env_name(override_var(route)));
    goto cleanup;
  }
  slot *s = &slots[n_slots];
  memset(s, 0, sizeof *s);
  s->route = route;
  snprintf(s->override, sizeof s->override, "%s", key);
  pthread_mutex_init(&s->cc.lock, NULL);
  pthread_mutex_init(&s->cc.compile_lock, NULL);
  s->cc.route = route;
  switch (route) {
  case UQ__ROUTE_NVRTC:
    status = uq__nvrtc_load(&s->cc);
    break;
  case UQ__ROUTE_HIPRTC:
    status = uq__hiprtc_load(&s->cc);
    break;
  default:
    status = uq__clang_load(&s->cc);
    break;
  }
  if (status != 0) {
    pthread_mutex_destroy(&s->cc.lock);
    pthread_mutex_destroy(&s->cc.compile_lock);
    goto cleanup;
  }
  n_slots++;
  *out = &s->cc;
cleanup:
  pthread_mutex_unlock(&registry_lock);
  return status;
}

void uq__compiler_arch(const char *target, char *out, size_t n) {
  size_t k = strcspn(target, ":");
  snprintf(out, n, "%.*s", (int)k, target);
}

/* 'N' for sm_NN[a|f], 'A' for gfxXXX[:feature+|-]..., 0 otherwise. The
 * check is local (not codegen's parser) because a target string reaches a
 * compiler's command line: only plain characters may pass. */
static int target_family(const char *target) {
  if (target == NULL || strlen(target) >= UQ_TARGET_MAX)
    return 0;
  if (strncmp(target, "sm_", 3) == 0) {
    const char *p = target + 3;
    if (!isdigit((unsigned char)*p))
      return 0;
    while (isdigit((unsigned char)*p))
      p++;
    if (*p == 'a' || *p == 'f')
      p++;
    return *p == '\0' ? 'N' : 0;
  }
  if (strncmp(target, "gfx", 3) == 0) {
    const char *p = target + 3;
    if (!isxdigit((unsigned char)*p))
      return 0;
    while (isxdigit((unsigned char)*p))
      p++;
    while (*p == ':') {
      p++;
      if (!islower((unsigned char)*p))
        return 0;
      while (islower((unsigned char)*p) || isdigit((unsigned char)*p))
        p++;
      if (*p != '+' && *p != '-')
        return 0;
      p++;
    }
    return *p == '\0' ? 'A' : 0;
  }
  return 0;
}

static int in_list(const char *arch, const char *const *list) {
  for (size_t i = 0; list[i] != NULL; i++)
    if (strcmp(arch, list[i]) == 0)
      return 1;
  return 0;
}

/* ROCm 5's hipRTC aborts the process on gfx94x/gfx95x (its comgr predates
 * them): refuse before it is called. */
static int rocm5_hiprtc_refuses(const char *arch) {
  return strncmp(arch, "gfx94", 5) == 0 || strncmp(arch, "gfx95", 5) == 0;
}

static int check_hiprtc_serves(const uq__compiler *cc, const char *target) {
  char arch[UQ_TARGET_MAX];
  uq__compiler_arch(target, arch, sizeof arch);
  if (cc->rocm5 && rocm5_hiprtc_refuses(arch))
    return uq__errorf(UQ_ENOCOMPILER,
                      "hipRTC from ROCm 5 (%s) cannot compile %s (it crashes "
                      "on gfx940 and later); unset %s or set it to clang, or "
                      "point %s at a ROCm 6+ libhiprtc",
                      cc->location, arch, uq__env_name(UQ__ENV_AMD_COMPILER),
                      uq__env_name(UQ__ENV_HIPRTC_LIB));
  return 0;
}

int uq__compiler_for_target(const char *target, const uq__compiler **out) {
  char arch[UQ_TARGET_MAX];
  int fam = target_family(target);
  if (fam == 0)
    return uq__errorf(UQ_EINVAL, "not a canonical target: '%s'",
                      target != NULL ? target : "(null)");
  if (fam == 'N')
    return load_route(UQ__ROUTE_NVRTC, out);

  uq__compiler_arch(target, arch, sizeof arch);
  const char *forced = uq__env_get(UQ__ENV_AMD_COMPILER);
  if (forced != NULL && strcmp(forced, "clang") == 0)
    return load_route(UQ__ROUTE_CLANG, out);
  if (forced != NULL && strcmp(forced, "hiprtc") == 0) {
    const uq__compiler *cc;
    int status = load_route(UQ__ROUTE_HIPRTC, &cc);
    if (status != 0)
      return status;
    status = check_hiprtc_serves(cc, target);
    if (status != 0)
      return status;
    *out = cc;
    return 0;
  }

  char hiprtc_why[1024] = "";
  if (in_list(arch, hiprtc_default_archs)) {
    const uq__compiler *cc;
    if (load_route(UQ__ROUTE_HIPRTC, &cc) == 0) {
      *out = cc;
      return 0;
    }
    snprintf(hiprtc_why, sizeof hiprtc_why, "%s", uq_last_error());
  }
  int status = load_route(UQ__ROUTE_CLANG, out);
  if (status != 0 && hiprtc_why[0] != '\0') {
    /* Both routes failed: the detail names everything that was tried. */
    char clang_why[2048];
    snprintf(clang_why, sizeof clang_why, "%s", uq_last_error());
    uq__errorf(status, "no compiler for %s:\n%s\n%s", target, hiprtc_why,
               clang_why);
  }
  return status;
}

uq__route uq__route_for_target(const char *target) {
  int fam = target_family(target);
  if (fam == 0)
    return (uq__route)0;
  if (fam == 'N')
    return UQ__ROUTE_NVRTC;
  const char *forced = uq__env_get(UQ__ENV_AMD_COMPILER);
  if (forced != NULL)
    return strcmp(forced, "hiprtc") == 0 ? UQ__ROUTE_HIPRTC : UQ__ROUTE_CLANG;
  char arch[UQ_TARGET_MAX];
  uq__compiler_arch(target, arch, sizeof arch);
  if (!in_list(arch, hiprtc_default_archs))
    return UQ__ROUTE_CLANG;
  /* Whether hipRTC loads decides the route; the probe must not disturb the
   * caller's error detail. */
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", uq_last_error());
  const uq__compiler *cc;
  uq__route r = load_route(UQ__ROUTE_HIPRTC, &cc) == 0 ? UQ__ROUTE_HIPRTC
                                                       : UQ__ROUTE_CLANG;
  uq__errorf(0, "%s", saved);
  return r;
}

uq__route uq__compiler_route(const uq__compiler *cc) { return cc->route; }

int uq__compiler_load_route(uq__route route, const uq__compiler **out) {
  return load_route(route, out);
}

const char *uq__compiler_location(const uq__compiler *cc) {
  return cc->location;
}

const char *uq__compiler_identity(const uq__compiler *cc) {
  return cc->identity;
}

const char *uq__compiler_options(const uq__compiler *cc, const char *target) {
  /* Past the interning capacity (more targets in one process than anyone
   * deploys) the string lives until this thread's next call. */
  static _Thread_local char spill[UQ__OPTIONS_MAX];
  uq__compiler *m = (uq__compiler *)cc;
  const char *result = NULL;
  if (target == NULL)
    target = "";
  pthread_mutex_lock(&m->lock);
  for (int i = 0; i < m->n_interned && result == NULL; i++)
    if (strcmp(m->interned[i].target, target) == 0)
      result = m->interned[i].options;
  if (result == NULL && m->n_interned < UQ__INTERNED_MAX &&
      strlen(target) < sizeof m->interned[0].target) {
    uq__interned *e = &m->interned[m->n_interned];
    snprintf(e->target, sizeof e->target, "%s", target);
    cc->options(cc, target, e->options, sizeof e->options);
    m->n_interned++;
    result = e->options;
  }
  pthread_mutex_unlock(&m->lock);
  if (result == NULL) {
    cc->options(cc, target, spill, sizeof spill);
    result = spill;
  }
  return result;
}

int uq__compiler_split(char *buf, const char **argv, int max) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, " ", &save); t != NULL && n < max;
       t = strtok_r(NULL, " ", &save))
    argv[n++] = t;
  return n;
}

/* What a compile's arguments must satisfy for `cc`; 0 or the error. */
static int check_compile_args(const uq__compiler *cc, const char *target,
                              const char *src, void **obj, size_t *obj_len) {
  if (cc == NULL || src == NULL || obj == NULL || obj_len == NULL)
    return uq__errorf(UQ_EINVAL, "uq__compiler_compile: NULL argument");
  int fam = target_family(target);
  if (fam == 0)
    return uq__errorf(UQ_EINVAL, "not a canonical target: '%s'",
                      target != NULL ? target : "(null)");
  if ((fam == 'N') != (cc->route == UQ__ROUTE_NVRTC))
    return uq__errorf(UQ_EINVAL, "%s cannot compile for %s", cc->identity,
                      target);
  if (cc->route == UQ__ROUTE_HIPRTC)
    return check_hiprtc_serves(cc, target);
  return 0;
}

int uq__compiler_compile(const uq__compiler *cc, const char *target,
                         const char *src, size_t len, const char *name,
                         void **obj, size_t *obj_len) {
  int status = check_compile_args(cc, target, src, obj, obj_len);
  if (status != 0)
    return status;
  if (name == NULL || name[0] == '\0')
    name = "uqjit_kernel";
  *obj = NULL;
  *obj_len = 0;
  return cc->compile(cc, target, src, len, name, obj, obj_len);
}

int uq__compiler_compile_log(const uq__compiler *cc, const char *target,
                             const char *src, size_t len, const char *name,
                             const char *extra, void **obj, size_t *obj_len,
                             char **log) {
  int status = check_compile_args(cc, target, src, obj, obj_len);
  if (status != 0)
    return status;
  if (log == NULL)
    return uq__errorf(UQ_EINVAL, "uq__compiler_compile_log: NULL log");
  if (cc->compile_log == NULL)
    return uq__errorf(UQ_EINVAL, "%s hands back no compile log",
                      cc->identity);
  if (name == NULL || name[0] == '\0')
    name = "uqjit_kernel";
  *obj = NULL;
  *obj_len = 0;
  *log = NULL;
  return cc->compile_log(cc, target, src, len, name, extra, obj, obj_len, log);
}
