/* Finding what uqjit loads or runs at run time: shared libraries (dlopen,
 * never linked) and external programs (spawned without a shell). Every
 * failure says what was tried and which variable overrides it. */
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

/* Looks `symbol` up in `handle`; on failure UQ_ENOCOMPILER-style
 * `fail_status` naming the symbol and the library `libname`. */
int uq__dl_sym(void *handle, const char *libname, const char *symbol,
               int fail_status, void **out);

/* The file a handle was loaded from, resolved through symlinks (so that it
 * carries the full version, e.g. libamdhip64.so.5.2.21153). "" if unknown. */
void uq__dl_path(void *handle, char *buf, size_t n);

/* Resolves a program: a name containing '/' is taken as a path, otherwise it
 * is searched on PATH. 0 and the absolute, symlink-resolved path in `out`
 * when it is an executable regular file; UQ_ENOENT otherwise (no detail set,
 * the caller words the message). */
int uq__dl_find_program(const char *name, char *out, size_t n);

/* A private temporary directory (mode 0700, under $TMPDIR or /tmp). */
int uq__dl_mkdtemp(char *out, size_t n);
/* Removes a directory made by uq__dl_mkdtemp and the plain files in it. */
void uq__dl_rmtree(const char *dir);

/* Runs `argv` (argv[0] an absolute path) with posix_spawn, stdin from
 * `stdin_path` (NULL: /dev/null), stdout and stderr captured through files in
 * a private temporary directory that is removed before returning. *out and
 * *err are NUL-terminated (caller frees with uq__free; either pointer may be
 * NULL when not wanted). *exit_code is the exit status, or 128 + signal.
 * Fails (UQ_EIO, UQ_ENOMEM) only when the program could not be run. */
int uq__dl_run(char *const argv[], const char *stdin_path, char **out,
               size_t *out_len, char **err, int *exit_code);

/* Reads a whole file (NUL-terminated; caller frees with uq__free). */
int uq__dl_read_file(const char *path, char **data, size_t *len);
/* Writes a whole file (created 0600, truncated). */
int uq__dl_write_file(const char *path, const void *data, size_t len);

#endif
