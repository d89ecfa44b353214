/* The operating system's side of running external programs: finding them
 * on PATH, spawning them without a shell, private temporary directories and
 * whole-file reads and writes. */
#ifndef UQ_OS_H
#define UQ_OS_H

#include <limits.h>
#include <stddef.h>

/* Resolves a program: a name containing '/' is taken as a path, otherwise it
 * is searched on PATH. 0 and the absolute, symlink-resolved path in `out`
 * when it is an executable regular file; UQ_ENOENT otherwise (no detail set,
 * the caller words the message). */
int uq__os_find_program(const char *name, char *out, size_t n);

/* A private scratch directory, and the lock that tells other processes
 * its owner is alive. */
typedef struct uq__os_scratch {
  char path[PATH_MAX];
  int lock_fd; /* holds an flock on <path>/.uqjit-owner while it exists */
} uq__os_scratch;

/* Makes a private scratch directory "<pid>-XXXXXX" (mode 0700) in
 * "$TMPDIR/uqjit-<uid>" ($TMPDIR unset or relative: /tmp), which must be a
 * directory of ours that nobody else can write. When something else
 * stands at that name (another user can squat it in a shared /tmp), the
 * directory is "$TMPDIR/uqjit-<uid>-<pid>-XXXXXX" instead, made by
 * mkdtemp and so ours alone, and the library warns once naming why. The
 * directory holds a file the owner keeps locked (flock) until
 * uq__os_scratch_remove; a directory a sweep took over before the owner
 * held its lock is given up for another. The first call of a process
 * sweeps abandoned directories (uq__os_sweep_scratch). 0, or UQ_EIO
 * naming what failed. */
int uq__os_scratch_make(uq__os_scratch *s);
/* Removes the directory and everything in it (never following a link),
 * then drops the lock. Does nothing for one that was not made. */
void uq__os_scratch_remove(uq__os_scratch *s);
/* Removes the scratch directories whose owner's lock can be taken (the
 * owner died, in whatever PID namespace), and those without the lock file
 * whose pid is gone here or that are older than a day: what killed
 * compiles left, in "$TMPDIR/uqjit-<uid>" and, as
 * "uqjit-<uid>-<pid>-XXXXXX", in $TMPDIR. A held lock is never broken. */
void uq__os_sweep_scratch(void);

/* Removes `name` under the directory open on dirfd (AT_FDCWD: a path):
 * a file, link, FIFO or device, or a directory with everything in it at
 * any depth. Never follows a symbolic link (the link goes, its target
 * stays), never enters another file system mounted below, and holds a
 * bounded number of descriptors however deep the tree. 0 (also when
 * nothing is there), or -1 with errno set. */
int uq__os_remove_at(int dirfd, const char *name);
/* Removes the scratch directories of dead processes, and any older than a
 * day, from "$TMPDIR/uqjit-<uid>": what a killed compile left. */
void uq__os_sweep_scratch(void);

/* Runs `argv` (argv[0] an absolute path) with posix_spawn, stdin from
 * `stdin_path` (NULL: /dev/null), stdout and stderr captured through files in
 * a private temporary directory that is removed before returning. *out and
 * *err are NUL-terminated (caller frees with uq__free; either pointer may be
 * NULL when not wanted). *exit_code is the exit status, or 128 + signal.
 * Fails (UQ_EIO, UQ_ENOMEM) only when the program could not be run. */
int uq__os_run(char *const argv[], const char *stdin_path, char **out,
               size_t *out_len, char **err, int *exit_code);

/* uq__os_run with TMPDIR set to `tmpdir` for the program (stdin from
 * /dev/null), so that its own scratch files land in a directory we remove. */
int uq__os_run_in(char *const argv[], const char *tmpdir, char **out,
                  size_t *out_len, char **err, int *exit_code);

/* Reads a whole file (NUL-terminated; caller frees with uq__free). */
int uq__os_read_file(const char *path, char **data, size_t *len);
/* Writes a whole file (created 0600, truncated). */
int uq__os_write_file(const char *path, const void *data, size_t len);

#endif
