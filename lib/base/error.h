/* Errors: the status list lives in uqjit.h (UQ_ERRNO_MAP); this module keeps
 * the calling thread's last detail message. */
#ifndef UQ_ERROR_H
#define UQ_ERROR_H

#include "uqjit.h"

#if defined(__GNUC__)
#define UQ__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define UQ__PRINTF(f, a)
#endif

/* Records a detail for `status` on this thread and returns `status`, so
 * that callers can write `return uq__errorf(UQ_EINVAL, "...", ...);`. The
 * text is composed apart from the detail, so an argument may point into
 * it; to put words in front of the current detail, use uq__error_wrap. */
int uq__errorf(int status, const char *fmt, ...) UQ__PRINTF(2, 3);
/* Puts "<fmt's text>: " in front of this thread's detail (the text alone
 * when the detail is empty) and returns `status`: how a caller adds what
 * it was doing to the reason a callee left, e.g.
 * `return uq__error_wrap(rc, "cannot run %s --version", path);`. */
int uq__error_wrap(int status, const char *fmt, ...) UQ__PRINTF(2, 3);
/* Clears this thread's detail (start of every public call that can fail). */
void uq__error_clear(void);
/* Appends to the detail (for example a compiler log after the headline). */
void uq__error_append(const char *text);

/* Warns once per `flag` on stderr (unless UQJIT_LOG=error or UQJIT_QUIET). `flag` is a
 * static int owned by the caller. Thread-safe. */
void uq__warn_once(int *flag, const char *fmt, ...) UQ__PRINTF(2, 3);

#endif
