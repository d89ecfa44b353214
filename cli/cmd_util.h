/* Helpers shared by the dump, warm, cache, info, demo and bench commands:
 * list and size parsing, a monotonic clock, a compile-only context and byte
 * counts. The synthetic problems of demo and bench come from synth/
 * (synth/synth.h), which the tests share. Uses only uqjit.h. */
#ifndef CLI_CMD_UTIL_H
#define CLI_CMD_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

/* "1,2,4": at most `cap` integers in [min, max]. Usage error printed and -1
 * returned when malformed. */
int cli_parse_list(const char *cmd, const char *flag, const char *text,
                       int64_t min, int64_t max, int64_t *out, size_t cap,
                       size_t *n);
/* "1048576", "512K", "64M", "2G" (powers of 1024). -1 when malformed. */
int cli_parse_size(const char *cmd, const char *flag, const char *text,
                       uint64_t *out);

/* Seconds on the monotonic clock. */
double cli_now(void);

/* A context that only compiles (no device) for `target`, caching under
 * `cache_dir` (NULL: the default). UQ_* status from uq_context_create. */
int cli_compile_context(const char *target, const char *cache_dir,
                            uq_context **out);

/* "1.50 GiB" style, into buf. */
const char *cli_bytes(uint64_t bytes, char *buf, size_t n);

#endif
