#include "lib/base/dl.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/base/buf.h"
#include "lib/base/error.h"

void *uq__dl_try(const char *name, char *why, size_t n) {
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL && n > 0) {
    /* dlerror() is thread-local in glibc, so reading it right after the
     * failing call is safe under concurrency. */
    const char *e = dlerror();
    snprintf(why, n, "%s", e != NULL ? e : "?");
  }
  return h;
}

int uq__dl_sym(void *handle, const char *libname, const char *symbol,
               int fail_status, void **out) {
  dlerror();
  void *p = dlsym(handle, symbol);
  if (p == NULL) {
    const char *why = dlerror();
    return uq__errorf(fail_status, "%s lacks the symbol %s: %s", libname,
                      symbol, why != NULL ? why : "NULL");
  }
  *out = p;
  return 0;
}

void uq__dl_path(void *handle, char *buf, size_t n) {
  struct link_map *lm = NULL;
  if (n == 0)
    return;
  buf[0] = '\0';
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL ||
      lm->l_name == NULL)
    return;
  char resolved[PATH_MAX];
  const char *p = realpath(lm->l_name, resolved) != NULL ? resolved : lm->l_name;
  snprintf(buf, n, "%s", p);
}
