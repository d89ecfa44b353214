/* Bytes a warm wrote into a cache directory, and the bytes of the entries
 * there for the warmed targets: a listing before and after the compile
 * (uq_cache_list), compared by path, size and mtime. Uses only uqjit.h. */
#ifndef CLI_WARM_BYTES_H
#define CLI_WARM_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_cache_file {
  char *path;
  uint64_t size;
  int64_t mtime;
  int valid;
} cli_cache_file;

typedef struct cli_cache_bytes {
  cli_cache_file *before; /* sorted by path */
  size_t nbefore, cap;
  uint64_t written; /* entries new or changed since begin */
  uint64_t total;   /* every entry of the targets after the warm */
} cli_cache_bytes;

/* Lists `dir` (NULL: the default) into b (zeroed first). A directory that
 * does not exist yet, or cannot be listed, counts as empty. */
void cli_cache_bytes_begin(cli_cache_bytes *b, const char *dir);
/* Lists `dir` again and sets written and total, counting only entries of
 * the `ntargets` targets. Counts stay 0 when the listing fails. */
void cli_cache_bytes_end(cli_cache_bytes *b, const char *dir,
                         const char *const *targets, size_t ntargets);
void cli_cache_bytes_free(cli_cache_bytes *b);

#endif
