#include "lib/base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/env.h"

/* Long enough for a compiler log's useful head; the rest is cut. */
#define UQ__DETAIL_MAX 16384

static _Thread_local char detail[UQ__DETAIL_MAX];

const char *uq_strerror(int status) {
  switch (status) {
  case 0:
    return "success";
#define UQ__ERRNO_TEXT(name, value, text) \
  case value:                             \
    return text;
    UQ_ERRNO_MAP(UQ__ERRNO_TEXT)
#undef UQ__ERRNO_TEXT
  default:
    return "unknown status";
  }
}

const char *uq_err_name(int status) {
  switch (status) {
  case 0:
    return "UQ_OK";
#define UQ__ERRNO_NAME(name, value, text) \
  case value:                             \
    return "UQ_" #name;
    UQ_ERRNO_MAP(UQ__ERRNO_NAME)
#undef UQ__ERRNO_NAME
  default:
    return "UQ_UNKNOWN";
  }
}

const char *uq_last_error(void) { return detail; }

const char *uq_version_string(void) { return UQ_VERSION_STRING; }

int uq__errorf(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return status;
}

void uq__error_clear(void) { detail[0] = '\0'; }

void uq__error_append(const char *text) {
  size_t used = strlen(detail);
  if (text == NULL || used + 1 >= sizeof detail)
    return;
  snprintf(detail + used, sizeof detail - used, "%s", text);
}

void uq__warn_once(int *flag, const char *fmt, ...) {
  /* An atomic exchange makes "once" hold across threads. */
  if (__atomic_exchange_n(flag, 1, __ATOMIC_ACQ_REL))
    return;
  if (uq__env_log_level() < UQ__LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("uqjit: warning: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
