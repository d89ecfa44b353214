/* Loading the shared libraries uqjit uses at run time (dlopen, never
 * linked); which library is looked for where is lib/base/libs.h. Programs, temporary directories and whole files are lib/base/os.h. */
#ifndef UQ_DL_H
#define UQ_DL_H

#include <stddef.h>

#include "lib/base/env.h"

/* One attempt: dlopen(name, RTLD_NOW|RTLD_LOCAL). Returns the handle, or
 * NULL with dlerror's text copied into why[n]. Sets no error detail. */
void *uq__dl_try(const char *name, char *why, size_t n);

/* Looks `symbol` up in `handle`; on failure UQ_ENOCOMPILER-style
 * `fail_status` naming the symbol and the library `libname`. */
int uq__dl_sym(void *handle, const char *libname, const char *symbol,
               int fail_status, void **out);

/* The file a handle was loaded from, resolved through symlinks (so that it
 * carries the full version, e.g. libamdhip64.so.5.2.21153). "" if unknown. */
void uq__dl_path(void *handle, char *buf, size_t n);

#endif
