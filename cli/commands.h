/* One function per uqjit subcommand. Each gets the arguments after
 * "uqjit" (argv[0] is the command's own name), prints requested help to
 * stdout, and returns an exit code: CLI_EXIT_OK, CLI_EXIT_FAILURE or
 * CLI_EXIT_USAGE (cli/cli.h). main() checks that stdout was written.
 *
 * Adding a command: write cli/cmd_<name>.c defining cli_cmd_<name>,
 * declare it here, add the file to uqjit_sources in cli/meson.build and a
 * row to commands[] in cli/main.c. A command's file keeps three steps
 * apart: parse (argv into an options struct; help and usage errors), run
 * (the work, through uqjit.h, into a result struct) and print (text or
 * JSON from the result); cli_cmd_<name> only calls them in turn. Output
 * that streams (cache ls, dump) is printed item by item as the work goes. */
#ifndef CLI_COMMANDS_H
#define CLI_COMMANDS_H

/* uqjit plan: the launch plan of a decode shape (cli/cmd_plan.c). */
int cli_cmd_plan(int argc, char **argv);
/* uqjit dump: kernel sources, disassembly, resources (cli/cmd_dump.c). */
int cli_cmd_dump(int argc, char **argv);
/* uqjit warm: offline cache fill (cli/cmd_warm.c). */
int cli_cmd_warm(int argc, char **argv);
/* uqjit cache: ls, verify, prune, stats (cli/cmd_cache.c). */
int cli_cmd_cache(int argc, char **argv);
/* uqjit info: compilers, runtimes, devices, caches (cli/cmd_info.c). */
int cli_cmd_info(int argc, char **argv);
/* uqjit demo: store, decode and verify one problem (cli/cmd_demo.c). */
int cli_cmd_demo(int argc, char **argv);
/* uqjit bench: GPU decode timings and bandwidth (cli/cmd_bench.c,
 * cli/bench_shape.c). */
int cli_cmd_bench(int argc, char **argv);

#endif
