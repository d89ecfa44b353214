#include "lib/base/libs.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/dl.h"
#include "lib/base/error.h"

/* Where a group of names is also looked for, after the bare sonames. */
enum { DIRS_NONE, DIRS_ROCM, DIRS_CUDA };

typedef struct lib_group {
  const char *const *names;
  int dirs;
} lib_group;

typedef struct lib_desc {
  const char *name, *what;
  uq__env_var override;
  lib_group groups[2]; /* tried in order; names NULL = no group */
} lib_desc;

/* The unversioned name first (the install's own development link, so the
 * release the image selected), then each major release newest first. */
static const char *const hip_names[] = {"libamdhip64.so", "libamdhip64.so.7",
                                        "libamdhip64.so.6", "libamdhip64.so.5",
                                        NULL};
static const char *const hiprtc_names[] = {"libhiprtc.so", "libhiprtc.so.7",
                                           "libhiprtc.so.6", NULL};
/* ROCm 5 has no libhiprtc: its hipRTC entry points live in libamdhip64. */
static const char *const hiprtc5_names[] = {"libamdhip64.so.5", NULL};
/* The 2.x soname first: uqjit is built against comgr 2.x's header, and 3.x
 * renumbered parts of the API; 3.x (ROCm 7) serves where 2.x is absent. */
static const char *const comgr_names[] = {"libamd_comgr.so.2",
                                          "libamd_comgr.so.3",
                                          "libamd_comgr.so", NULL};
/* The driver's soname first: libcuda.so is often the toolkit's link stub. */
static const char *const cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const nvrtc_names[] = {"libnvrtc.so", "libnvrtc.so.13",
                                          "libnvrtc.so.12", NULL};

static const lib_desc descs[UQ__LIB_COUNT_] = {
    [UQ__LIB_HIP] = {"hip", "the HIP runtime", UQ__ENV_HIP_LIB,
                     {{hip_names, DIRS_ROCM}}},
    [UQ__LIB_HIPRTC] = {"hiprtc", "hipRTC", UQ__ENV_HIPRTC_LIB,
                        {{hiprtc_names, DIRS_ROCM}, {hiprtc5_names, DIRS_ROCM}}},
    [UQ__LIB_COMGR] = {"comgr", "comgr", UQ__ENV_COMGR_LIB,
                       {{comgr_names, DIRS_ROCM}}},
    [UQ__LIB_CUDA] = {"cuda", "the CUDA driver", UQ__ENV_CUDA_LIB,
                      {{cuda_names, DIRS_NONE}}},
    [UQ__LIB_NVRTC] = {"nvrtc", "NVRTC", UQ__ENV_NVRTC_LIB,
                       {{nvrtc_names, DIRS_CUDA}}},
};

void uq__libs_roots_read(uq__lib_roots *roots) {
  roots->rocm_path = uq__env_get(UQ__ENV_ROCM_PATH);
  roots->cuda_home = uq__env_get(UQ__ENV_CUDA_HOME);
  roots->cuda_path = uq__env_get(UQ__ENV_CUDA_PATH);
}

/* Appends dir/name (dir NULL: the bare name) unless already listed. */
static void add(uq__lib_list *l, const char *dir, const char *sub,
                const char *name) {
  char buf[UQ__LIB_NAME_MAX];
  if (dir == NULL) {
    snprintf(buf, sizeof buf, "%s", name);
  } else {
    /* "/opt/rocm/" and "/opt/rocm" name one directory: drop trailing
     * slashes so that the duplicate check sees it. */
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
      n--;
    if (n == 1)
      n = 0; /* the root itself */
    snprintf(buf, sizeof buf, "%.*s/%s/%s", (int)n, dir, sub, name);
  }
  for (size_t i = 0; i < l->count; i++)
    if (strcmp(l->candidates[i], buf) == 0)
      return;
  if (l->count < UQ__LIB_CANDIDATES_MAX)
    memcpy(l->candidates[l->count++], buf, strlen(buf) + 1);
}

static void add_under(uq__lib_list *l, const char *dir, const char *sub,
                      const char *const *names) {
  if (dir == NULL)
    return;
  for (size_t i = 0; names[i] != NULL; i++)
    add(l, dir, sub, names[i]);
}

void uq__libs_build(uq__lib_id id, const uq__lib_roots *roots,
                    uq__lib_list *out) {
  memset(out, 0, sizeof *out);
  if ((unsigned)id >= UQ__LIB_COUNT_)
    return;
  const lib_desc *d = &descs[id];
  out->id = id;
  out->name = d->name;
  out->what = d->what;
  out->override = d->override;
  for (size_t g = 0; g < 2 && d->groups[g].names != NULL; g++) {
    const char *const *names = d->groups[g].names;
    for (size_t i = 0; names[i] != NULL; i++)
      add(out, NULL, NULL, names[i]);
    if (d->groups[g].dirs == DIRS_ROCM) {
      add_under(out, roots->rocm_path, "lib", names);
      add_under(out, "/opt/rocm", "lib", names);
    } else if (d->groups[g].dirs == DIRS_CUDA) {
      add_under(out, roots->cuda_home, "lib64", names);
      add_under(out, roots->cuda_path, "lib64", names);
      add_under(out, "/usr/local/cuda", "lib64", names);
    }
  }
}

static pthread_once_t lists_once = PTHREAD_ONCE_INIT;
static uq__lib_list lists[UQ__LIB_COUNT_];

static void lists_init(void) {
  uq__lib_roots roots;
  uq__libs_roots_read(&roots);
  for (int id = 0; id < UQ__LIB_COUNT_; id++)
    uq__libs_build((uq__lib_id)id, &roots, &lists[id]);
}

const uq__lib_list *uq__libs_get(uq__lib_id id) {
  if ((unsigned)id >= UQ__LIB_COUNT_)
    return NULL;
  pthread_once(&lists_once, lists_init);
  return &lists[id];
}

const char *uq__libs_attempt(const uq__lib_probe *p, size_t i) {
  if (p->forced != NULL)
    return i == 0 ? p->forced : NULL;
  return i < p->list->count ? p->list->candidates[i] : NULL;
}

int uq__libs_walk(const uq__lib_list *list, const char *forced,
                  uq__lib_probe *p) {
  memset(p, 0, sizeof *p);
  p->loaded = -1;
  p->list = list;
  p->forced = forced;
  const char *name;
  for (size_t i = 0; (name = uq__libs_attempt(p, i)) != NULL; i++) {
    p->tried = i + 1;
    void *h = uq__dl_try(name, p->why[i], sizeof p->why[i]);
    if (h != NULL) {
      p->loaded = (int)i;
      p->handle = h;
      uq__dl_path(h, p->path, sizeof p->path);
      return 0;
    }
  }
  return UQ_ENOENT;
}

int uq__libs_probe(uq__lib_id id, uq__lib_probe *p) {
  const uq__lib_list *list = uq__libs_get(id);
  if (list == NULL) {
    memset(p, 0, sizeof *p);
    p->loaded = -1;
    return UQ_ENOENT;
  }
  /* An explicit choice is never silently replaced by the list. */
  return uq__libs_walk(list, uq__env_get(list->override), p);
}

int uq__libs_open(uq__lib_id id, int fail_status, void **handle) {
  uq__lib_probe *p = uq__calloc(1, sizeof *p);
  if (p == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory loading a library");
  if (uq__libs_probe(id, p) == 0) {
    *handle = p->handle;
    uq__free(p);
    return 0;
  }
  int rc = fail_status;
  if (p->list == NULL) {
    rc = uq__errorf(UQ_EINVAL, "unknown library id %d", (int)id);
    goto done;
  }
  const char *var = uq__env_name(p->list->override);
  if (p->forced != NULL)
    uq__errorf(fail_status, "%s not found: %s=%s could not be loaded:",
               p->list->what, var, p->forced);
  else
    uq__errorf(fail_status, "%s not found (set %s to its path); tried:",
               p->list->what, var);
  uq__buf tried;
  uq__buf_init(&tried);
  for (size_t i = 0; i < p->tried; i++)
    uq__buf_printf(&tried, "\n  %s: %s", uq__libs_attempt(p, i), p->why[i]);
  uq__error_append(tried.status == 0 && tried.data != NULL ? tried.data
                                                           : " (out of memory)");
  uq__buf_free(&tried);
done:
  uq__free(p);
  return rc;
}
