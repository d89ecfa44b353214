/* A growable byte buffer with a sticky error (libxsmm's generator rule):
 * writers append without checking each call; the owner checks once. */
#ifndef UQ_BUF_H
#define UQ_BUF_H

#include <stddef.h>

#include "lib/base/error.h"

typedef struct uq__buf {
  char *data; /* always NUL-terminated when len > 0 or cap > 0 */
  size_t len;
  size_t cap;
  int status; /* first failure (UQ_ENOMEM), 0 while healthy */
} uq__buf;

void uq__buf_init(uq__buf *b);
void uq__buf_free(uq__buf *b);
void uq__buf_append(uq__buf *b, const void *data, size_t n);
void uq__buf_puts(uq__buf *b, const char *s);
void uq__buf_printf(uq__buf *b, const char *fmt, ...) UQ__PRINTF(2, 3);
/* Hands the data over to the caller (free with uq__free / uq_free) and
 * resets the buffer. Returns NULL when the buffer failed. */
char *uq__buf_take(uq__buf *b, size_t *len);

#endif
