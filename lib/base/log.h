/* Messages on stderr at the level UQJIT_LOG asks for (lib/base/env.h,
 * uq__env_log_level): what a run did (compiles, cache hits and misses with
 * their layer, times) for whoever has to find out why a kernel was slow to
 * come or missing. Warnings go through uq__warn_once (lib/base/error.h),
 * which honours the same level. */
#ifndef UQ_LOG_H
#define UQ_LOG_H

#include "lib/base/env.h"
#include "lib/base/error.h"

/* 1 when messages of `level` are printed: callers skip building costly
 * ones otherwise. */
int uq__log_on(uq__log_level level);

/* One line "uqjit: <level>: <message>" on stderr when `level` is on,
 * written with a single call so that threads' lines do not interleave. */
void uq__log(uq__log_level level, const char *fmt, ...) UQ__PRINTF(2, 3);

#endif
