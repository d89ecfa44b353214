/* Loading the shared libraries uqjit uses at run time (dlopen, never
 * linked). Every failure says what was tried and which variable overrides
 * it. Programs, temporary directories and whole files are lib/base/os.h. */
#ifndef UQ_DL_H
#define UQ_DL_H

#include <stddef.h>

#include "lib/base/env.h"

/* Opens the library named by `override` when that variable is set (and then
 * only it: an explicit choice is never silently replaced), else the first
 * of `candidates` (NULL-terminated; sonames or absolute paths) that loads.
 * On failure returns `fail_status` with every attempt and its dlerror text
 * in the detail, headed by `what` ("NVRTC"). Loaded with RTLD_NOW|RTLD_LOCAL;
 * handles are never closed (the libraries are process-wide singletons). */
int uq__dl_open(uq__env_var override, const char *const *candidates,
                const char *what, int fail_status, void **handle);

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
