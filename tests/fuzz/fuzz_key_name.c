/* libFuzzer target: uq_key_parse on arbitrary text. A name it accepts must
 * print back (uq_key_name) to a name that parses to the same name again. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uqjit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char text[1024], name[1024], again[1024];
  if (size >= sizeof text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  uq_key key, key2;
  if (uq_key_parse(text, &key) != 0)
    return 0;
  int n = uq_key_name(&key, name, sizeof name);
  if (n <= 0 || (size_t)n >= sizeof name)
    abort();
  if (uq_key_parse(name, &key2) != 0)
    abort();
  n = uq_key_name(&key2, again, sizeof again);
  if (n <= 0 || (size_t)n >= sizeof again || strcmp(name, again) != 0)
    abort();
  return 0;
}
