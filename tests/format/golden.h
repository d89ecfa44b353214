/* A tiny JSON reader for the golden vectors in $UQ_TESTDATA. It handles
 * what those files use: objects, arrays, strings (simple escapes), integers,
 * true/false/null. No floats: the golden files spell floats as hex bits. */
#ifndef UQ_GOLDEN_H
#define UQ_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

typedef enum golden_type {
  GOLDEN_NULL,
  GOLDEN_BOOL,
  GOLDEN_INT,
  GOLDEN_STRING,
  GOLDEN_ARRAY,
  GOLDEN_OBJECT
} golden_type;

typedef struct golden_value golden_value;
struct golden_value {
  golden_type type;
  long long integer;    /* INT, BOOL */
  char *string;         /* STRING (NUL-terminated) */
  size_t count;         /* ARRAY, OBJECT: number of items */
  golden_value *items;  /* ARRAY, OBJECT */
  char **keys;          /* OBJECT: key of each item */
};

/* Parses text; NULL on malformed input (with a message in err). The
 * result is freed with golden_free. */
golden_value *golden_parse(const char *text, size_t len, char *err,
                           size_t errlen);
/* Reads and parses a file; NULL (message on stderr) on failure. */
golden_value *golden_load_file(const char *path);
/* Loads $UQ_TESTDATA/<name> (tests/meson.build sets UQ_TESTDATA); NULL,
 * with a message on stderr, when it is unset or the file is unreadable. */
golden_value *golden_load_testdata(const char *name);
void golden_free(golden_value *v);

/* Lookups: NULL when absent or of the wrong type. */
const golden_value *golden_get(const golden_value *obj, const char *key);
const golden_value *golden_at(const golden_value *arr, size_t i);
size_t golden_count(const golden_value *arr); /* 0 unless ARRAY/OBJECT */
const char *golden_string(const golden_value *v);
/* 0 on success. */
int golden_int(const golden_value *v, long long *out);
/* A string of 8 hex digits -> uint32 (0 on success). */
int golden_hex_u32(const golden_value *v, uint32_t *out);
/* A string of 2n hex digits -> n bytes (0 on success). */
int golden_hex_bytes(const golden_value *v, uint8_t *out, size_t n);

#endif
