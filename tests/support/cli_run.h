/* Runs the uqjit binary as a user would and checks what it printed: the
 * helpers shared by the command tests (cli_plan.c, cli_tools.c). They fail
 * the current cmocka test on error, so call them only from inside one. */
#ifndef UQ_TEST_CLI_RUN_H
#define UQ_TEST_CLI_RUN_H

typedef struct result {
  int code; /* exit status, or -1 when killed */
  char *out, *err;
} result;

/* Sets the binary every run starts, and how long a run may stay silent
 * (milliseconds) before the test fails instead of hanging. */
void cli_run_init(const char *uqjit, int poll_timeout_ms);

/* Runs uqjit with args (NULL-terminated, without argv[0], at most 46).
 * stdout goes to a pipe, or to `stdout_file` when given. No shell is
 * involved. Free the result with result_free. */
result run_to(const char *stdout_file, const char *const *args);
#define RUN(...) run_to(NULL, (const char *const[]){__VA_ARGS__, NULL})
void result_free(result *r);

/* Fails unless `text` is exactly one JSON object (RFC 8259, no
 * extensions). */
void assert_json(const char *text);
/* The text after `"key":` (whitespace skipped); fails when absent. */
const char *json_field(const char *json, const char *key);
/* The integer or boolean value of `key`; fails when it is not one. */
long long json_int(const char *json, const char *key);
int json_bool(const char *json, const char *key);

/* Checks a misuse: exit 2, nothing on stdout, a message on stderr. Frees
 * r. */
void expect_usage_error(result r, const char *what);

#endif
