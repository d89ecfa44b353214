/* uqjit info: what this machine offers uqjit (compilers, runtimes,
 * devices, cache directories), as the library sees it. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "uqjit_tools.h"

#define CMD "info"

static void info_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit info [--json]\n\n"
          "Reports the compilers (clang, hipRTC, NVRTC, comgr) and GPU "
          "runtimes\n"
          "found, with versions, the devices, and the cache directories in "
          "use.\n"
          "For each library: the variable that overrides it, every candidate "
          "in the\n"
          "order the loader tries them, and which one loaded (or why none "
          "did).\n\n"
          "options:\n"
          "  --json                     {\"version\", \"devices\", "
          "\"cache_dir\", \"libraries\",\n"
          "                             \"report\"}\n"
          "  -h, --help                 this help\n");
}

/* What the report says: the library's text, and for --json the device
 * count and default cache directory as well. */
typedef struct info_result {
  char *report;
  int devices;
  char *dir; /* NULL when there is none */
  char *libraries; /* JSON array from uq_info_libraries */
} info_result;

/* argv -> *json. CLI_NEXT when the command should run; otherwise the exit
 * status (help printed, or a usage error printed). */
static int info_parse(int argc, char **argv, int *json) {
  *json = 0;
  const cli_flag flags[] = {{"--json", json, 1}, {NULL, NULL, 0}};
  for (int i = 1; i < argc; i++) {
    int r = cli_other_arg(CMD, argv[i], flags, info_usage);
    if (r != CLI_NEXT)
      return r;
  }
  return CLI_NEXT;
}

/* Fills *res (info_result_free releases it). The text output needs only
 * the report, so only --json asks for the devices and the directory. */
static int info_run(int json, info_result *res) {
  memset(res, 0, sizeof *res);
  int rc = uq_info_report(&res->report);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot build the report");
  if (!json)
    return CLI_EXIT_OK;
  /* A missing runtime is information here, not a failure. */
  if (uq_device_count(&res->devices) != 0)
    res->devices = 0;
  if (uq_cache_default_dir(&res->dir) != 0)
    res->dir = NULL;
  rc = uq_info_libraries(&res->libraries);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot list the libraries");
  return CLI_EXIT_OK;
}

static void info_result_free(info_result *res) {
  uq_free(res->dir);
  uq_free(res->report);
  uq_free(res->libraries);
}

static void info_print_json(const info_result *res) {
  printf("{\"version\": ");
  cli_json_string(stdout, uq_version_string());
  printf(", \"devices\": %d, \"cache_dir\": ", res->devices);
  if (res->dir != NULL)
    cli_json_string(stdout, res->dir);
  else
    printf("null");
  printf(", \"libraries\": %s, \"report\": ", res->libraries);
  cli_json_string(stdout, res->report);
  printf("}\n");
}

int cli_cmd_info(int argc, char **argv) {
  int json;
  int code = info_parse(argc, argv, &json);
  if (code != CLI_NEXT)
    return code;
  info_result res;
  code = info_run(json, &res);
  if (code == CLI_EXIT_OK) {
    if (json)
      info_print_json(&res);
    else
      fputs(res.report, stdout);
  }
  info_result_free(&res);
  return code;
}
