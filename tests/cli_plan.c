/* The uqjit command as a user runs it: `uqjit plan` output (JSON checked
 * for syntax and values), exit codes (0 ok, 1 failure, 2 usage), help on
 * stdout, misuse on stderr, and a failed stdout write. The binary's path
 * is the first argument (tests/meson.build passes it). */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

static const char *uqjit_path;

typedef struct result {
  int code; /* exit status, or -1 when killed */
  char *out, *err;
} result;

static void append(char **buf, size_t *len, const char *data, size_t n) {
  *buf = realloc(*buf, *len + n + 1);
  assert_non_null(*buf);
  memcpy(*buf + *len, data, n);
  *len += n;
  (*buf)[*len] = '\0';
}

/* Runs uqjit with args (NULL-terminated, without argv[0]). stdout goes to a
 * pipe, or to `stdout_file` when given. No shell is involved. */
static result run_to(const char *stdout_file, const char *const *args) {
  const char *argv[32];
  size_t n = 0;
  argv[n++] = uqjit_path;
  while (*args && n < 31)
    argv[n++] = *args++;
  argv[n] = NULL;

  int out_pipe[2], err_pipe[2];
  assert_int_equal(pipe(out_pipe), 0);
  assert_int_equal(pipe(err_pipe), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (stdout_file)
    posix_spawn_file_actions_addopen(&fa, 1, stdout_file, O_WRONLY, 0);
  else
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, out_pipe[1]);
  posix_spawn_file_actions_addclose(&fa, err_pipe[1]);
  pid_t pid;
  int rc = posix_spawn(&pid, uqjit_path, &fa, NULL, (char *const *)argv,
                       environ);
  posix_spawn_file_actions_destroy(&fa);
  assert_int_equal(rc, 0);
  close(out_pipe[1]);
  close(err_pipe[1]);

  result r = {0, NULL, NULL};
  size_t out_len = 0, err_len = 0;
  append(&r.out, &out_len, "", 0);
  append(&r.err, &err_len, "", 0);
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    assert_true(poll(fds, 2, 10000) > 0);
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char chunk[4096];
      ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
        continue;
      }
      if (i == 0)
        append(&r.out, &out_len, chunk, (size_t)got);
      else
        append(&r.err, &err_len, chunk, (size_t)got);
    }
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

#define RUN(...) run_to(NULL, (const char *const[]){__VA_ARGS__, NULL})

static void result_free(result *r) {
  free(r->out);
  free(r->err);
}

/* ------------------------------------------------------------------ */
/* A strict JSON syntax check (RFC 8259 grammar, no extensions). */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  return p;
}

static const char *json_value(const char *p, int depth);

static const char *json_string(const char *p) {
  if (*p != '"')
    return NULL;
  for (p++; *p != '"'; p++) {
    if ((unsigned char)*p < 0x20)
      return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!strchr("0123456789abcdefABCDEF", p[i]) || p[i] == '\0')
            return NULL;
        p += 4;
      } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
        return NULL;
      }
    }
  }
  return p + 1;
}

static const char *json_number(const char *p) {
  if (*p == '-')
    p++;
  if (*p == '0')
    p++;
  else if (*p >= '1' && *p <= '9')
    while (*p >= '0' && *p <= '9')
      p++;
  else
    return NULL;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return NULL;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    if (*p < '0' || *p > '9')
      return NULL;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  return p;
}

static const char *json_value(const char *p, int depth) {
  if (depth > 32)
    return NULL;
  p = ws(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1);
    if (*p == close)
      return p + 1;
    for (;;) {
      if (close == '}') {
        p = json_string(ws(p));
        if (!p)
          return NULL;
        p = ws(p);
        if (*p != ':')
          return NULL;
        p++;
      }
      p = json_value(p, depth + 1);
      if (!p)
        return NULL;
      p = ws(p);
      if (*p == close)
        return p + 1;
      if (*p != ',')
        return NULL;
      p++;
    }
  }
  if (*p == '"')
    return json_string(p);
  if (!strncmp(p, "true", 4))
    return p + 4;
  if (!strncmp(p, "false", 5))
    return p + 5;
  if (!strncmp(p, "null", 4))
    return p + 4;
  return json_number(p);
}

static void assert_json(const char *text) {
  const char *end = json_value(text, 0);
  if (end == NULL || *ws(end) != '\0')
    fail_msg("not one JSON value:\n%s", text);
  assert_true(*ws(text) == '{');
}

/* The text after `"key":` (whitespace skipped); fails when absent. */
static const char *json_field(const char *json, const char *key) {
  char pat[96];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (p == NULL)
    fail_msg("no key %s in:\n%s", key, json);
  return ws(p + strlen(pat));
}

static long long json_int(const char *json, const char *key) {
  const char *p = json_field(json, key);
  char *end;
  long long v = strtoll(p, &end, 10);
  if (end == p)
    fail_msg("key %s is not a number", key);
  return v;
}

static int json_bool(const char *json, const char *key) {
  const char *p = json_field(json, key);
  if (!strncmp(p, "true", 4))
    return 1;
  if (!strncmp(p, "false", 5))
    return 0;
  fail_msg("key %s is not a bool", key);
  return -1;
}

/* ------------------------------------------------------------------ */

#define SHAPE_4x8x1                                                       \
  "--batch", "4", "--q-heads", "8", "--kv-heads", "1", "--head-dim", "256", \
      "--block-size", "32", "--max-blocks-per-seq", "64"

static void plan_json_reports_sixteen_partitions_one_tile_group(void **state) {
  (void)state;
  result r = RUN("plan", SHAPE_4x8x1, "--json");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_string_equal(r.err, "");
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "eligible"), 1);
  assert_int_equal(json_int(r.out, "num_partitions"), 16);
  assert_int_equal(json_int(r.out, "tile_groups_per_partition"), 1);
  assert_int_equal(json_int(r.out, "query_group_size"), 8);
  assert_int_equal(json_bool(r.out, "fuse_qrot"), 1);
  /* segm_out 4*1*16*8*256*2 = 262144, segm_max and segm_sum 2048 each. */
  assert_int_equal(json_int(r.out, "workspace_bytes"), 266240);
  assert_int_equal(json_int(r.out, "block_threads"), 64);
  assert_true(!strncmp(json_field(r.out, "reason"), "\"\"", 2));
  assert_true(!strncmp(json_field(r.out, "target"), "\"gfx950\"", 8));
  assert_true(!strncmp(json_field(r.out, "decode_grid"), "[4, 1, 16]", 10));
  assert_true(!strncmp(json_field(r.out, "reduce_grid"), "[4, 8, 4]", 9));
  assert_true(!strncmp(json_field(r.out, "scale"), "0.0625", 6));
  assert_non_null(strstr(
      r.out, "\"name\": \"uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0."
             "06250000_qg8_bs32_ps272_fq1_t1_sq2048_sh256\""));
  assert_non_null(
      strstr(r.out, "\"name\": \"uq_reduce_gfx950_bf16_v0_d256_hk1_p16_qg8\""));
  assert_non_null(strstr(r.out, "\"kind\": \"decode\""));
  assert_non_null(strstr(r.out, "\"kind\": \"reduce\""));
  assert_null(strstr(r.out, "\"kind\": \"prologue\""));
  result_free(&r);
}

static void plan_json_lists_prologue_when_not_fused(void **state) {
  (void)state;
  /* sm_90 plans the matrix variant (v1) unless UQJIT_VARIANT=portable. */
  unsetenv("UQJIT_VARIANT");
  result r = RUN("plan", SHAPE_4x8x1, "--q-stride-head=512",
                 "--q-stride-seq", "4096", "--target", "SM90", "--dtype",
                 "fp16", "--scale", "0.1", "--max-kv-splits", "1",
                 "--padded-slot", "288", "--json");
  if (r.code != 0)
    fail_msg("exit %d, stderr: %s", r.code, r.err);
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "fuse_qrot"), 0);
  /* splits=1: P = 8 (see unit_policy). */
  assert_int_equal(json_int(r.out, "num_partitions"), 8);
  assert_int_equal(json_int(r.out, "block_threads"), 128);
  assert_int_equal(json_int(r.out, "padded_slot"), 288);
  assert_true(!strncmp(json_field(r.out, "target"), "\"sm_90\"", 7));
  assert_true(!strncmp(json_field(r.out, "scale"), "0.10000000", 10));
  assert_true(!strncmp(json_field(r.out, "prologue_grid"), "[4, 8, 1]", 9));
  assert_non_null(strstr(
      r.out, "\"name\": \"uq_prologue_sm_90_fp16_v1_d256_hk1_qg8\""));
  result_free(&r);
}

static void plan_text_summarises_the_plan(void **state) {
  (void)state;
  result r = RUN("plan", SHAPE_4x8x1);
  assert_int_equal(r.code, 0);
  assert_string_equal(r.err, "");
  assert_non_null(strstr(r.out, "eligible:          yes"));
  assert_non_null(strstr(r.out, "partitions (P):    16"));
  assert_non_null(strstr(r.out, "workspace:         266240 bytes"));
  assert_non_null(strstr(r.out, "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64"));
  result_free(&r);
}

static void plan_ineligible_shape_exits_zero_with_reason(void **state) {
  (void)state;
  result r = RUN("plan", "--batch", "4", "--q-heads", "8", "--kv-heads", "1",
                 "--head-dim", "128", "--block-size", "32",
                 "--max-blocks-per-seq", "64", "--json");
  assert_int_equal(r.code, 0);
  assert_json(r.out);
  assert_int_equal(json_bool(r.out, "eligible"), 0);
  const char *reason = json_field(r.out, "reason");
  assert_true(reason[0] == '"' && reason[1] != '"');
  assert_true(!strncmp(json_field(r.out, "kernels"), "[]", 2));
  result_free(&r);

  r = RUN("plan", "--batch", "4", "--q-heads", "4", "--kv-heads", "1",
          "--head-dim", "256", "--block-size", "48", "--max-blocks-per-seq",
          "64");
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "eligible:          no"));
  assert_non_null(strstr(r.out, "reason:"));
  result_free(&r);
}

static void expect_usage_error(result r, const char *what) {
  if (r.code != 2)
    fail_msg("%s: exit %d (want 2), stderr: %s", what, r.code, r.err);
  if (r.out[0] != '\0')
    fail_msg("%s: wrote to stdout: %s", what, r.out);
  if (r.err[0] == '\0')
    fail_msg("%s: no message on stderr", what);
  result_free(&r);
}

static void plan_malformed_flags_exit_two(void **state) {
  (void)state;
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--bogus"), "unknown flag");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "extra"), "positional");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--padded-slot"),
                     "missing value");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--batch", "2"), "twice");
  expect_usage_error(RUN("plan", "--q-heads", "8", "--kv-heads", "1",
                         "--head-dim", "256", "--block-size", "32",
                         "--max-blocks-per-seq", "64"),
                     "missing --batch");
  static const char *const bad_batch[] = {"x",  "4x", "",   " 4",  "+4",
                                          "0",  "-1", "0x4", "4.0",
                                          "99999999999"};
  for (size_t i = 0; i < sizeof bad_batch / sizeof *bad_batch; i++)
    expect_usage_error(RUN("plan", "--batch", bad_batch[i], "--q-heads", "8",
                           "--kv-heads", "1", "--head-dim", "256",
                           "--block-size", "32", "--max-blocks-per-seq",
                           "64"),
                       bad_batch[i]);
  static const char *const bad_scale[] = {"-1", "0", "nan", "inf", "1e400",
                                          "0.1x", "1e-60", ""};
  for (size_t i = 0; i < sizeof bad_scale / sizeof *bad_scale; i++)
    expect_usage_error(RUN("plan", SHAPE_4x8x1, "--scale", bad_scale[i]),
                       bad_scale[i]);
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--dtype", "fp32"), "dtype");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--q-stride-seq", "-5"),
                     "negative stride");
  expect_usage_error(RUN("plan", SHAPE_4x8x1, "--target", ""), "empty target");
}

static void plan_refused_shape_exits_one(void **state) {
  (void)state;
  /* Well-formed flags the library refuses: 7 q heads over 2 kv heads, and
   * a target it does not know. */
  result r = RUN("plan", "--batch", "4", "--q-heads", "7", "--kv-heads", "2",
                 "--head-dim", "256", "--block-size", "32",
                 "--max-blocks-per-seq", "64", "--json");
  assert_int_equal(r.code, 1);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "invalid argument"));
  result_free(&r);
  r = RUN("plan", SHAPE_4x8x1, "--target", "gfx9");
  assert_int_equal(r.code, 1);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "gfx9"));
  result_free(&r);
}

static void help_goes_to_stdout_and_exits_zero(void **state) {
  (void)state;
  static const char *const forms[][2] = {
      {"-h", NULL}, {"--help", NULL}, {"help", NULL}};
  for (size_t i = 0; i < 3; i++) {
    result r = RUN(forms[i][0]);
    assert_int_equal(r.code, 0);
    assert_string_equal(r.err, "");
    assert_true(!strncmp(r.out, "usage: uqjit", 12));
    assert_non_null(strstr(r.out, "plan"));
    assert_non_null(strstr(r.out, "version"));
    result_free(&r);
  }
  result r = RUN("plan", "-h");
  assert_int_equal(r.code, 0);
  assert_string_equal(r.err, "");
  assert_non_null(strstr(r.out, "--max-blocks-per-seq"));
  assert_non_null(strstr(r.out, "--json"));
  result_free(&r);
  r = RUN("help", "plan");
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "--max-blocks-per-seq"));
  result_free(&r);
}

static void misuse_goes_to_stderr_and_exits_two(void **state) {
  (void)state;
  result r = run_to(NULL, (const char *const[]){NULL});
  expect_usage_error(r, "no command");
  expect_usage_error(RUN("frobnicate"), "unknown command");
  expect_usage_error(RUN("help", "frobnicate"), "help of unknown command");
  expect_usage_error(RUN("version", "extra"), "version with an argument");
}

static void version_prints_library_version(void **state) {
  (void)state;
  result r = RUN("version");
  assert_int_equal(r.code, 0);
  assert_string_equal(r.out, "uqjit 0.1.0\n");
  assert_string_equal(r.err, "");
  result_free(&r);
}

static void failed_stdout_write_exits_one(void **state) {
  (void)state;
  if (access("/dev/full", W_OK) != 0)
    skip();
  result r = run_to("/dev/full", (const char *const[]){"version", NULL});
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "error writing"));
  result_free(&r);
  r = run_to("/dev/full", (const char *const[]){"plan", SHAPE_4x8x1, NULL});
  assert_int_equal(r.code, 1);
  result_free(&r);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH-TO-UQJIT\n", argv[0]);
    return 1;
  }
  uqjit_path = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plan_json_reports_sixteen_partitions_one_tile_group),
      cmocka_unit_test(plan_json_lists_prologue_when_not_fused),
      cmocka_unit_test(plan_text_summarises_the_plan),
      cmocka_unit_test(plan_ineligible_shape_exits_zero_with_reason),
      cmocka_unit_test(plan_malformed_flags_exit_two),
      cmocka_unit_test(plan_refused_shape_exits_one),
      cmocka_unit_test(help_goes_to_stdout_and_exits_zero),
      cmocka_unit_test(misuse_goes_to_stderr_and_exits_two),
      cmocka_unit_test(version_prints_library_version),
      cmocka_unit_test(failed_stdout_write_exits_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
