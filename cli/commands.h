/* One function per uqjit subcommand. Each gets the arguments after
 * "uqjit" (argv[0] is the command's own name), prints requested help to
 * stdout, and returns an exit code: CLI_EXIT_OK, CLI_EXIT_FAILURE or
 * CLI_EXIT_USAGE (tools/cli.h). main() checks that stdout was written.
 *
 * Adding a command: write tools/cmd_<name>.c defining cli_cmd_<name>,
 * declare it here, add the file to uqjit_sources in tools/meson.build and a
 * row to commands[] in tools/uqjit.c. */
#ifndef CLI_COMMANDS_H
#define CLI_COMMANDS_H

/* uqjit plan: the launch plan of a decode shape (tools/cmd_plan.c). */
int cli_cmd_plan(int argc, char **argv);
/* uqjit dump: kernel sources, disassembly, resources (tools/cmd_dump.c). */
int cli_cmd_dump(int argc, char **argv);
/* uqjit warm: offline cache fill (tools/cmd_warm.c). */
int cli_cmd_warm(int argc, char **argv);
/* uqjit cache: ls, verify, prune, stats (tools/cmd_cache.c). */
int cli_cmd_cache(int argc, char **argv);
/* uqjit info: compilers, runtimes, devices, caches (tools/cmd_info.c). */
int cli_cmd_info(int argc, char **argv);
/* uqjit demo: store, decode and verify one problem (tools/cmd_demo.c). */
int cli_cmd_demo(int argc, char **argv);
/* uqjit bench: GPU decode timings and bandwidth (tools/cmd_bench.c,
 * tools/bench_shape.c). */
int cli_cmd_bench(int argc, char **argv);

#endif
