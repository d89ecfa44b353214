/* Shared command-line plumbing of the uqjit tool: exit codes, messages,
 * option values, strictly validated numbers, the decode-shape flags that
 * plan/dump/warm/bench share, and JSON string output. Uses only uqjit.h. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "uqjit.h"

/* Exit codes of every uqjit command (documented in `uqjit -h`). */
#define CLI_EXIT_OK 0      /* done */
#define CLI_EXIT_FAILURE 1 /* the operation failed (the library said why) */
#define CLI_EXIT_USAGE 2   /* the command line was wrong */

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* "uqjit <cmd>: <message>" plus a pointer to `uqjit <cmd> -h`, on stderr.
 * Returns CLI_EXIT_USAGE so callers can `return cli_usage_error(...)`. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    CLI_PRINTF(2, 3);
/* "uqjit <cmd>: <what>: <status text>: <uq_last_error()>" on stderr.
 * Returns CLI_EXIT_FAILURE. */
int cli_fail(const char *cmd, int status, const char *what);

/* Matches argv[*i] against option `name`, written "--name VALUE" or
 * "--name=VALUE". Returns 1 and sets *value (advancing *i past a separate
 * value), 0 when argv[*i] is another option, -1 when the value is missing
 * (message printed). */
int cli_option(const char *cmd, int argc, char **argv, int *i,
                  const char *name, const char **value);

/* Options whose value is only kept: `name` stores its text into *var (a
 * repeated option keeps the last). */
typedef struct cli_text {
  const char *name;
  const char **var;
} cli_text;

/* cli_option over `opts` (ended by {NULL}): 1 when argv[*i] was one of
 * them (value stored), 0 when none, -1 when the value is missing (message
 * printed). */
int cli_text_option(const char *cmd, int argc, char **argv, int *i,
                       const cli_text *opts);

/* A flag without a value: `name` stores `value` into *var. */
typedef struct cli_flag {
  const char *name;
  int *var;
  int value;
} cli_flag;

/* cli_other_arg's "go on with the next argument". */
#define CLI_NEXT (-1)

/* The end of a command's argument loop, for an argument its options with
 * values did not take: -h/--help prints usage(stdout) and gives
 * CLI_EXIT_OK; a name in `flags` (ended by {NULL}) sets its variable and
 * gives CLI_NEXT; anything else is a usage error (unknown option or
 * unexpected argument, printed) and gives CLI_EXIT_USAGE. */
int cli_other_arg(const char *cmd, const char *arg,
                     const cli_flag *flags, void (*usage)(FILE *out));

/* Decimal integers ([-]digits, nothing else) and finite floats, checked
 * against [min, max]. On failure print which flag was wrong and return -1. */
int cli_parse_i64(const char *cmd, const char *flag, const char *text,
                     int64_t min, int64_t max, int64_t *out);
int cli_parse_i32(const char *cmd, const char *flag, const char *text,
                     int32_t min, int32_t max, int32_t *out);
/* A float in (min_exclusive, max]. */
int cli_parse_float(const char *cmd, const char *flag, const char *text,
                       double min_exclusive, double max, float *out);

/* The decode-shape flags. Usage in a command's argument loop:
 *
 *   cli_shape sh;
 *   cli_shape_init(&sh);
 *   for (int i = 1; i < argc; i++) {
 *     int r = cli_shape_option(cmd, &sh, argc, argv, &i);
 *     if (r < 0) return CLI_EXIT_USAGE;
 *     if (r > 0) continue;
 *     ... the command's own flags ...
 *   }
 *   if (cli_shape_finish(cmd, &sh) != 0) return CLI_EXIT_USAGE;
 *   uq_plan_make_variant(&sh.shape, sh.target, sh.variant, &plan);
 */
typedef struct cli_shape {
  uq_shape shape;     /* uq_shape_init() defaults plus the flags given */
  const char *target; /* --target canonical (target_canon), or NULL (the
                         library's default) */
  char target_canon[UQ_TARGET_MAX];
  const char *variant; /* --variant, or NULL (UQJIT_VARIANT, else the best) */
  unsigned seen;      /* one bit per flag of the table in cli.c */
} cli_shape;

void cli_shape_init(cli_shape *s);
/* 1: argv[*i] was a shape flag (consumed, *i advanced past its value);
 * 0: not a shape flag; -1: malformed or repeated (message printed). */
int cli_shape_option(const char *cmd, cli_shape *s, int argc,
                        char **argv, int *i);
/* The rest of a shape-taking command's argument loop, after its own
 * options with values: `texts` (may be NULL), the shape flags, then
 * cli_other_arg. CLI_NEXT when argv[*i] was taken (*i advanced past
 * any value); otherwise the exit status for the command to return. */
int cli_shape_command_arg(const char *cmd, cli_shape *s,
                             const cli_text *texts,
                             const cli_flag *flags,
                             void (*usage)(FILE *out), int argc, char **argv,
                             int *i);
/* 0 when every required flag was given; -1 (message printed) otherwise. */
int cli_shape_finish(const char *cmd, const cli_shape *s);
/* The shape flags' help lines, for a command's usage text. */
void cli_shape_help(FILE *out);

/* Writes s as a JSON string literal (quotes included, control characters
 * escaped; other bytes pass through, so UTF-8 stays UTF-8). */
void cli_json_string(FILE *out, const char *s);

/* Names used in output. */
const char *cli_kind_name(uint32_t kind);
const char *cli_dtype_name(uint32_t dtype);

#endif
