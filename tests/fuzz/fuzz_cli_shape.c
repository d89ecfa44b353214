/* libFuzzer target: the command line's shape option parser (cli/cli.c),
 * as `uqjit plan` drives it, on arbitrary argument vectors (the input split
 * at NUL and newline bytes), then uq_plan_make on what it accepted. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tests/fuzz/fuzz_plan_check.h"
#include "uqjit.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096)
    return 0;
  char *buf = malloc(size + 1);
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[MAX_ARGS + 1];
  int argc = 0;
  argv[argc++] = "plan";
  char *p = buf, *end = buf + size;
  while (argc < MAX_ARGS && p <= end) {
    argv[argc++] = p;
    while (p < end && *p != '\0' && *p != '\n')
      p++;
    *p++ = '\0';
  }
  argv[argc] = NULL;
  cli_shape sh;
  cli_shape_init(&sh);
  int ok = 1;
  for (int i = 1; i < argc && ok; i++) {
    int r = cli_shape_option("plan", &sh, argc, argv, &i);
    if (r < 0)
      ok = 0;
    if (i > argc)
      abort(); /* ran past the vector */
  }
  if (ok && cli_shape_finish("plan", &sh) == 0) {
    uq_plan plan;
    if (uq_plan_make(&sh.shape, sh.target, &plan) == 0)
      fuzz_check_plan(&sh.shape, &plan);
  }
  free(buf);
  return 0;
}
