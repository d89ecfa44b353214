/* uqjit: the command-line front end. This file only dispatches; each
 * command lives in cli/cmd_<name>.c and reaches the library through the
 * public headers (uqjit.h, uqjit_tools.h) alone. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "uqjit.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} command;

/* Add a row per command (see cli/commands.h); keep "help" last. Only
 * commands whose file is built may be listed. */
static const command commands[] = {
    {"plan", cli_cmd_plan,
     "show the launch plan of a decode shape (partitions, grids, workspace, "
     "kernel keys)"},
    {"dump", cli_cmd_dump,
     "print a kernel's generated source, and its ISA and resource usage"},
    {"warm", cli_cmd_warm,
     "compile a deployment's kernels into a cache directory (no GPU needed)"},
    {"cache", cli_cmd_cache, "list, verify, prune or summarise a cache"},
    {"info", cli_cmd_info,
     "report compilers, runtimes, devices and cache directories"},
    {"demo", cli_cmd_demo,
     "plan, store, decode and verify a small problem (GPU, else CPU)"},
    {"bench", cli_cmd_bench,
     "time decodes over a sweep of shapes against the copy bandwidth (GPU)"},
    {"version", cmd_version, "print the version"},
    {"help", cmd_help, "show this help, or a command's help"},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
  fprintf(out, "usage: uqjit <command> [options]\n"
               "       uqjit <command> -h    (help of one command)\n\n"
               "commands:\n");
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
  fprintf(out, "\nexit status: 0 done, 1 failure, 2 wrong usage\n");
}

static const command *find_command(const char *name) {
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static int cmd_version(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: uqjit version\n\nPrints the library version.\n");
    return CLI_EXIT_OK;
  }
  if (argc > 1)
    return cli_usage_error("version", "unexpected argument '%s'", argv[1]);
  printf("uqjit %s\n", uq_version_string());
  return CLI_EXIT_OK;
}

static int cmd_help(int argc, char **argv) {
  if (argc == 1 ||
      (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  const command *c = find_command(argv[1]);
  if (c != NULL && argc > 2)
    return cli_usage_error("help", "unexpected argument '%s' after '%s'",
                           argv[2], argv[1]);
  if (c == NULL || c->run == cmd_help) {
    fprintf(stderr, "uqjit help: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  char name[64];
  char flag[] = "-h";
  snprintf(name, sizeof name, "%s", c->name);
  char *sub[] = {name, flag, NULL};
  return c->run(2, sub);
}

/* Output that never reached its file (a full disk, a closed pipe) must not
 * look like success. */
static int close_stdout(void) {
  errno = 0;
  int bad = fflush(stdout) != 0 || ferror(stdout);
  int err = errno;
  if (fclose(stdout) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  if (bad) {
    fprintf(stderr, "uqjit: error writing standard output%s%s\n",
            err ? ": " : "", err ? strerror(err) : "");
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int rc;
  if (argc < 2) {
    usage(stderr);
    rc = CLI_EXIT_USAGE;
  } else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(stdout);
    rc = CLI_EXIT_OK;
  } else if (!strcmp(argv[1], "--version")) {
    rc = cmd_version(1, argv + 1);
  } else {
    const command *c = find_command(argv[1]);
    if (c == NULL) {
      fprintf(stderr, "uqjit: unknown command '%s'\n\n", argv[1]);
      usage(stderr);
      rc = CLI_EXIT_USAGE;
    } else {
      rc = c->run(argc - 1, argv + 1);
    }
  }
  if (close_stdout() != 0 && rc == CLI_EXIT_OK)
    rc = CLI_EXIT_FAILURE;
  return rc;
}
