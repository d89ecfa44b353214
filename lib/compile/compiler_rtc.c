/* What NVRTC and hipRTC share: the same C API shape (create a program,
 * compile it with options, fetch the log, fetch the code, destroy it), so
 * one loader and one compile path serve both. Both report success as 0 and
 * their program handles are opaque pointers, which is all this file relies
 * on (the backends check that against their headers where they have them). */
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/dl.h"
#include "lib/base/error.h"
#include "lib/base/libs.h"
#include "lib/compile/compiler_impl.h"

typedef int (*version_fn)(int *, int *);
typedef int (*create_fn)(void **, const char *, const char *, int,
                         const char *const *, const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*get_fn)(void *, char *);
typedef int (*destroy_fn)(void **);
typedef const char *(*errstr_fn)(int);

static const char *errstr(const uq__rtc_api *api, int r) {
  return ((errstr_fn)api->errstr)(r);
}

int uq__rtc_load(uq__compiler *cc, const uq__rtc_desc *d, int *major,
                 int *minor) {
  void *h = NULL;
  int status = uq__libs_open(d->lib, UQ_ENOCOMPILER, &h);
  if (status != 0)
    return status;
  struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"Version", &cc->api.version},
      {"CreateProgram", &cc->api.create},
      {"CompileProgram", &cc->api.compile},
      {"GetProgramLogSize", &cc->api.log_size},
      {"GetProgramLog", &cc->api.log},
      {d->code_size, &cc->api.code_size},
      {d->code, &cc->api.code},
      {"DestroyProgram", &cc->api.destroy},
      {"GetErrorString", &cc->api.errstr},
  };
  uq__dl_path(h, cc->location, sizeof cc->location);
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    char sym[64];
    snprintf(sym, sizeof sym, "%s%s", d->prefix, syms[i].name);
    status = uq__dl_sym(h, cc->location, sym, UQ_ENOCOMPILER, syms[i].slot);
    if (status != 0)
      return status; /* the handle stays open: dlopen handles are immortal */
  }
  int r = ((version_fn)cc->api.version)(major, minor);
  if (r != 0)
    return uq__errorf(UQ_ENOCOMPILER, "%sVersion failed in %s: %s",
                      d->prefix, cc->location, errstr(&cc->api, r));
  return 0;
}

int uq__rtc_compile(const uq__compiler *cc, const uq__rtc_desc *d,
                    pthread_mutex_t *serial, const char *target,
                    const char *src, size_t len, const char *name,
                    const char *extra, void **obj, size_t *obj_len,
                    char **log_out) {
  int status = 0;
  void *prog = NULL;
  char *text = NULL, *log = NULL, *code = NULL;
  char opts[2 * UQ__OPTIONS_MAX], prog_name[256];
  const char *argv[24];
  const uq__rtc_api *api = &cc->api;
  int locked = 0;

  /* Both want a NUL-terminated source; the caller's may not be. */
  text = uq__malloc(len + 1);
  if (text == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory copying a %zu-byte source",
                        len);
    goto cleanup;
  }
  memcpy(text, src, len);
  text[len] = '\0';
  snprintf(prog_name, sizeof prog_name, "%s%s", name, d->source_ext);
  cc->options(cc, target, opts, UQ__OPTIONS_MAX);
  if (extra != NULL && extra[0] != '\0') {
    size_t used = strlen(opts);
    if (used + 1 + strlen(extra) >= sizeof opts) {
      status = uq__errorf(UQ_EINVAL, "compiler options too long: '%s %s'",
                          opts, extra);
      goto cleanup;
    }
    snprintf(opts + used, sizeof opts - used, " %s", extra);
  }
  int argc = uq__compiler_split(opts, argv, 24);

  if (serial != NULL)
    pthread_mutex_lock(serial);
  locked = serial != NULL;
  int r = ((create_fn)api->create)(&prog, text, prog_name, 0, NULL, NULL);
  if (r != 0) {
    prog = NULL;
    status = uq__errorf(UQ_ECOMPILE, "%sCreateProgram failed: %s", d->prefix,
                        errstr(api, r));
    goto cleanup;
  }
  int cr = ((compile_fn)api->compile)(prog, argc, argv);
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
                        cc->identity, prog_name, target, errstr(api, cr));
    uq__error_append(log == NULL      ? "(no log)"
                     : log[0] != '\0' ? log
                                      : "(empty log)");
    goto cleanup;
  }
  size_t size = 0;
  r = ((size_fn)api->code_size)(prog, &size);
  if (r != 0 || size == 0) {
    status = uq__errorf(UQ_ECOMPILE, "%s%s failed for %s: %s", d->prefix,
                        d->code_size, target, errstr(api, r));
    goto cleanup;
  }
  code = uq__malloc(size);
  if (code == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory for a %zu-byte %s", size,
                        d->code_what);
    goto cleanup;
  }
  r = ((get_fn)api->code)(prog, code);
  if (r != 0) {
    status = uq__errorf(UQ_ECOMPILE, "%s%s failed: %s", d->prefix, d->code,
                        errstr(api, r));
    goto cleanup;
  }
  if (log_out != NULL && log == NULL) {
    log = uq__malloc(1);
    if (log == NULL) {
      status = uq__errorf(UQ_ENOMEM, "out of memory for a compiler log");
      goto cleanup;
    }
    log[0] = '\0';
  }
  if (log_out != NULL) {
    *log_out = log;
    log = NULL;
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
