#include "lib/base/log.h"

#include <stdarg.h>
#include <stdio.h>

int uq__log_on(uq__log_level level) { return uq__env_log_level() >= level; }

void uq__log(uq__log_level level, const char *fmt, ...) {
  static const char *const words[] = {"error", "warning", "info", "debug"};
  if (!uq__log_on(level) || (unsigned)level > UQ__LOG_DEBUG)
    return;
  char line[1024];
  int n = snprintf(line, sizeof line, "uqjit: %s: ", words[level]);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}
