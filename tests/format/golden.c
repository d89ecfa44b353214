#include "tests/format/golden.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_MAX_DEPTH 64

typedef struct parser {
  const char *p, *end;
  char *err;
  size_t errlen;
  int failed;
} parser;

static void fail(parser *ps, const char *fmt, ...) {
  if (ps->failed)
    return;
  ps->failed = 1;
  if (ps->err != NULL && ps->errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err, ps->errlen, fmt, ap);
    va_end(ap);
  }
}

static void skip_ws(parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' ||
                             *ps->p == '\r' || *ps->p == '\t'))
    ps->p++;
}

static void free_value(golden_value *v) {
  if (v == NULL)
    return;
  free(v->string);
  for (size_t i = 0; i < v->count; i++) {
    free_value(&v->items[i]);
    if (v->keys != NULL)
      free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  memset(v, 0, sizeof *v);
}

static char *parse_string(parser *ps) {
  if (ps->p >= ps->end || *ps->p != '"') {
    fail(ps, "expected a string");
    return NULL;
  }
  ps->p++;
  const char *start = ps->p;
  size_t n = 0;
  /* Escapes only shrink the text, so the raw length bounds the result. */
  while (ps->p < ps->end && *ps->p != '"') {
    if (*ps->p == '\\')
      ps->p++;
    ps->p++;
  }
  if (ps->p >= ps->end) {
    fail(ps, "unterminated string");
    return NULL;
  }
  char *s = malloc((size_t)(ps->p - start) + 1);
  if (s == NULL) {
    fail(ps, "out of memory");
    return NULL;
  }
  for (const char *q = start; q < ps->p; q++) {
    char c = *q;
    if (c == '\\') {
      c = *++q;
      switch (c) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case '"': case '\\': case '/': break;
      default:
        free(s);
        fail(ps, "unsupported escape \\%c", c);
        return NULL;
      }
    }
    s[n++] = c;
  }
  s[n] = '\0';
  ps->p++; /* closing quote */
  return s;
}

static int parse_value(parser *ps, golden_value *out, int depth);

static int append_item(parser *ps, golden_value *v, size_t *cap, char *key) {
  if (v->count == *cap) {
    size_t ncap = *cap ? *cap * 2 : 8;
    golden_value *items = realloc(v->items, ncap * sizeof *items);
    if (items == NULL) {
      fail(ps, "out of memory");
      return -1;
    }
    v->items = items;
    if (v->type == GOLDEN_OBJECT) {
      char **keys = realloc(v->keys, ncap * sizeof *keys);
      if (keys == NULL) {
        fail(ps, "out of memory");
        return -1;
      }
      v->keys = keys;
    }
    *cap = ncap;
  }
  memset(&v->items[v->count], 0, sizeof v->items[0]);
  if (v->type == GOLDEN_OBJECT)
    v->keys[v->count] = key;
  v->count++;
  return 0;
}

static int parse_container(parser *ps, golden_value *out, int depth) {
  int is_object = *ps->p == '{';
  char close = is_object ? '}' : ']';
  out->type = is_object ? GOLDEN_OBJECT : GOLDEN_ARRAY;
  size_t cap = 0;
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    return 0;
  }
  for (;;) {
    char *key = NULL;
    skip_ws(ps);
    if (is_object) {
      key = parse_string(ps);
      if (key == NULL)
        return -1;
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') {
        free(key);
        fail(ps, "expected ':' after key");
        return -1;
      }
      ps->p++;
    }
    if (append_item(ps, out, &cap, key) != 0) {
      free(key);
      return -1;
    }
    if (parse_value(ps, &out->items[out->count - 1], depth + 1) != 0)
      return -1;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ps->p++;
      return 0;
    }
    fail(ps, "expected ',' or '%c'", close);
    return -1;
  }
}

static int parse_value(parser *ps, golden_value *out, int depth) {
  if (depth > GOLDEN_MAX_DEPTH) {
    fail(ps, "nesting too deep");
    return -1;
  }
  skip_ws(ps);
  if (ps->p >= ps->end) {
    fail(ps, "unexpected end of input");
    return -1;
  }
  char c = *ps->p;
  if (c == '{' || c == '[')
    return parse_container(ps, out, depth);
  if (c == '"') {
    out->type = GOLDEN_STRING;
    out->string = parse_string(ps);
    return out->string ? 0 : -1;
  }
  static const struct {
    const char *word;
    golden_type type;
    long long value;
  } words[] = {{"true", GOLDEN_BOOL, 1},
               {"false", GOLDEN_BOOL, 0},
               {"null", GOLDEN_NULL, 0}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t n = strlen(words[i].word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i].word, n) == 0) {
      out->type = words[i].type;
      out->integer = words[i].value;
      ps->p += n;
      return 0;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    int neg = c == '-';
    if (neg)
      ps->p++;
    unsigned long long v = 0;
    int digits = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
      if (v > (unsigned long long)(9223372036854775807LL / 10)) {
        fail(ps, "integer too large");
        return -1;
      }
      v = v * 10 + (unsigned)(*ps->p - '0');
      ps->p++;
      digits++;
    }
    if (digits == 0 || (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' ||
                                            *ps->p == 'E'))) {
      fail(ps, "not an integer (floats are not supported)");
      return -1;
    }
    out->type = GOLDEN_INT;
    out->integer = neg ? -(long long)v : (long long)v;
    return 0;
  }
  fail(ps, "unexpected character '%c'", c);
  return -1;
}

golden_value *golden_parse(const char *text, size_t len, char *err,
                           size_t errlen) {
  parser ps = {text, text + len, err, errlen, 0};
  golden_value *v = calloc(1, sizeof *v);
  if (v == NULL)
    return NULL;
  if (parse_value(&ps, v, 0) == 0) {
    skip_ws(&ps);
    if (ps.p != ps.end)
      fail(&ps, "trailing data");
  } else {
    fail(&ps, "parse error");
  }
  if (ps.failed) {
    golden_free(v);
    return NULL;
  }
  return v;
}

golden_value *golden_load_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "golden: cannot open %s\n", path);
    return NULL;
  }
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      char *t = realloc(text, cap);
      if (t == NULL) {
        free(text);
        fclose(f);
        return NULL;
      }
      text = t;
    }
    size_t got = fread(text + len, 1, cap - len, f);
    len += got;
    if (got == 0)
      break;
  }
  int read_error = ferror(f);
  fclose(f);
  if (read_error) {
    fprintf(stderr, "golden: error reading %s\n", path);
    free(text);
    return NULL;
  }
  char err[160] = "";
  golden_value *v = golden_parse(text, len, err, sizeof err);
  free(text);
  if (v == NULL)
    fprintf(stderr, "golden: %s: %s\n", path, err);
  return v;
}

golden_value *golden_load_testdata(const char *name) {
  const char *dir = getenv("UQ_TESTDATA");
  if (dir == NULL || dir[0] == '\0') {
    fprintf(stderr, "golden: UQ_TESTDATA is not set\n");
    return NULL;
  }
  size_t n = strlen(dir) + strlen(name) + 2;
  char *path = malloc(n);
  if (path == NULL)
    return NULL;
  snprintf(path, n, "%s/%s", dir, name);
  golden_value *v = golden_load_file(path);
  free(path);
  return v;
}

void golden_free(golden_value *v) {
  free_value(v);
  free(v);
}

const golden_value *golden_get(const golden_value *obj, const char *key) {
  if (obj == NULL || obj->type != GOLDEN_OBJECT)
    return NULL;
  for (size_t i = 0; i < obj->count; i++)
    if (strcmp(obj->keys[i], key) == 0)
      return &obj->items[i];
  return NULL;
}

const golden_value *golden_at(const golden_value *arr, size_t i) {
  if (arr == NULL || arr->type != GOLDEN_ARRAY || i >= arr->count)
    return NULL;
  return &arr->items[i];
}

size_t golden_count(const golden_value *arr) {
  if (arr == NULL ||
      (arr->type != GOLDEN_ARRAY && arr->type != GOLDEN_OBJECT))
    return 0;
  return arr->count;
}

const char *golden_string(const golden_value *v) {
  return v != NULL && v->type == GOLDEN_STRING ? v->string : NULL;
}

int golden_int(const golden_value *v, long long *out) {
  if (v == NULL || v->type != GOLDEN_INT)
    return -1;
  *out = v->integer;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int golden_hex_bytes(const golden_value *v, uint8_t *out, size_t n) {
  const char *s = golden_string(v);
  if (s == NULL || strlen(s) != 2 * n)
    return -1;
  for (size_t i = 0; i < n; i++) {
    int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

int golden_hex_u32(const golden_value *v, uint32_t *out) {
  uint8_t b[4];
  if (golden_hex_bytes(v, b, 4) != 0)
    return -1;
  *out = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
         b[3];
  return 0;
}
