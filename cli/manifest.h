/* Kernel key names as a sorted, deduplicated list, and the manifest file
 * of a deployment: one uq_key_name per line, lines starting with '#' are
 * comments. Uses only uqjit.h. */
#ifndef CLI_MANIFEST_H
#define CLI_MANIFEST_H

#include <stddef.h>

#include "uqjit.h"

/* The names of keys[0..n) sorted by strcmp, duplicates dropped, into
 * *names (*count of them; free with cli_names_free). UQ_ENOMEM or a
 * uq_key_name failure's status. */
int cli_key_names(const uq_key *keys, size_t n, char ***names,
                  size_t *count);
void cli_names_free(char **names, size_t count);

/* Writes `header` (one line, written after "# ") and the names, one a
 * line, to `path` the way a cache entry is written: a private temporary
 * file beside it (created with O_EXCL | O_NOFOLLOW, so a link planted
 * there is never followed, and concurrent writers never share one),
 * synced, then renamed over `path`, so a reader never sees half a
 * manifest. `path` must be a regular file or nothing: a symbolic link, a
 * device, a FIFO or a directory there is refused and left alone. "-"
 * writes to standard output. 0, or -1 with a message on stderr. */
int cli_manifest_write(const char *cmd, const char *path, const char *header,
                       char *const *names, size_t count);

/* Reads a manifest: kernel names one a line, blank lines and '#' lines
 * ignored, spaces around a name trimmed. Into *names the canonical names
 * of the kernels it lists, sorted, each once however often it is listed
 * (free with cli_names_free). 0, or -1 with a message on stderr naming the
 * file (and the line): unreadable, larger than 16 MiB, a NUL byte in a
 * line, a malformed kernel name. */
int cli_manifest_read(const char *cmd, const char *path, char ***names,
                      size_t *count);

#endif
