/* libFuzzer target: the model-config reader behind `uqjit warm
 * --hf-config` (cli/hf_config.c) on arbitrary bytes as config.json, then the
 * per-rank split for a tensor-parallel size from the first byte (1..64:
 * the command accepts only --tp >= 1). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/hf_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || !cli_hf_available())
    return 0;
  int fd = memfd_create("config.json", MFD_CLOEXEC);
  if (fd < 0 ||
      write(fd, data + 1, size - 1) != (ssize_t)(size - 1))
    abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int dtype_override = (data[0] & 0x80) ? (int)(data[0] & 1) : -1;
  cli_hf_model m;
  if (cli_hf_read("warm", path, dtype_override, &m) == CLI_EXIT_OK)
    (void)cli_hf_derive("warm", &m, 1 + (int32_t)(data[0] & 0x3f));
  close(fd);
  return 0;
}
