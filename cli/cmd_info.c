/* uqjit info: what this machine offers uqjit (compilers, runtimes,
 * devices, cache directories), as the library sees it. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "uqjit.h"

#define CMD "info"

static void info_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit info [--json]\n\n"
          "Reports the compilers (clang, hipRTC, NVRTC, comgr) and GPU "
          "runtimes\n"
          "found, with versions, the devices, and the cache directories in "
          "use.\n\n"
          "options:\n"
          "  --json                     {\"version\", \"devices\", "
          "\"cache_dir\", \"report\"}\n"
          "  -h, --help                 this help\n");
}

int cli_cmd_info(int argc, char **argv) {
  int json = 0;
  const cli_flag flags[] = {{"--json", &json, 1}, {NULL, NULL, 0}};
  for (int i = 1; i < argc; i++) {
    int r = cli_other_arg(CMD, argv[i], flags, info_usage);
    if (r != CLI_NEXT)
      return r;
  }
  char *report = NULL;
  int rc = uq_info_report(&report);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot build the report");
  if (!json) {
    fputs(report, stdout);
    uq_free(report);
    return CLI_EXIT_OK;
  }
  /* A missing runtime is information here, not a failure. */
  int devices = 0;
  if (uq_device_count(&devices) != 0)
    devices = 0;
  char *dir = NULL;
  if (uq_cache_default_dir(&dir) != 0)
    dir = NULL;
  printf("{\"version\": ");
  cli_json_string(stdout, uq_version_string());
  printf(", \"devices\": %d, \"cache_dir\": ", devices);
  if (dir != NULL)
    cli_json_string(stdout, dir);
  else
    printf("null");
  printf(", \"report\": ");
  cli_json_string(stdout, report);
  printf("}\n");
  uq_free(dir);
  uq_free(report);
  return CLI_EXIT_OK;
}
