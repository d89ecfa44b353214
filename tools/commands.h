/* One function per uqjit subcommand. Each gets the arguments after
 * "uqjit" (argv[0] is the command's own name), prints requested help to
 * stdout, and returns an exit code: UQ_EXIT_OK, UQ_EXIT_FAILURE or
 * UQ_EXIT_USAGE (tools/cli.h). main() checks that stdout was written.
 *
 * Adding a command: write tools/cmd_<name>.c defining uq_cmd_<name>,
 * declare it here, add the file to uqjit_sources in tools/meson.build and a
 * row to commands[] in tools/uqjit.c. */
#ifndef UQ_TOOLS_COMMANDS_H
#define UQ_TOOLS_COMMANDS_H

/* uqjit plan: the launch plan of a decode shape (tools/cmd_plan.c). */
int uq_cmd_plan(int argc, char **argv);

#endif
