#include "lib/base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"

void uq__buf_init(uq__buf *b) { memset(b, 0, sizeof *b); }

void uq__buf_free(uq__buf *b) {
  uq__free(b->data);
  uq__buf_init(b);
}

static int reserve(uq__buf *b, size_t extra) {
  if (b->status != 0)
    return -1;
  if (extra > ((size_t)-1) / 2 - b->len) {
    b->status = UQ_EOVERFLOW;
    return -1;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need)
    cap *= 2;
  char *d = uq__realloc(b->data, cap);
  if (d == NULL) {
    b->status = UQ_ENOMEM;
    return -1;
  }
  b->data = d;
  b->cap = cap;
  return 0;
}

void uq__buf_append(uq__buf *b, const void *data, size_t n) {
  if (reserve(b, n) != 0)
    return;
  if (n != 0)
    memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void uq__buf_puts(uq__buf *b, const char *s) { uq__buf_append(b, s, strlen(s)); }

void uq__buf_printf(uq__buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    if (b->status == 0)
      b->status = UQ_EINVAL;
  } else if (reserve(b, (size_t)n) == 0) {
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    b->len += (size_t)n;
  }
  va_end(ap2);
}

char *uq__buf_take(uq__buf *b, size_t *len) {
  if (b->status != 0) {
    uq__buf_free(b);
    return NULL;
  }
  if (reserve(b, 0) != 0) {
    uq__buf_free(b);
    return NULL;
  }
  char *d = b->data;
  if (len != NULL)
    *len = b->len;
  uq__buf_init(b);
  return d;
}
