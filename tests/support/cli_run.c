/* Running the uqjit binary with pipes (no shell) and a strict JSON check,
 * shared by the command tests. */
#include "tests/support/cli_run.h"

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
static int quiet_ms;

void cli_run_init(const char *uqjit, int poll_timeout_ms) {
  uqjit_path = uqjit;
  quiet_ms = poll_timeout_ms;
}

static void append(char **buf, size_t *len, const char *data, size_t n) {
  *buf = realloc(*buf, *len + n + 1);
  assert_non_null(*buf);
  memcpy(*buf + *len, data, n);
  *len += n;
  (*buf)[*len] = '\0';
}

result run_to(const char *stdout_file, const char *const *args) {
  const char *argv[48];
  size_t n = 0;
  argv[n++] = uqjit_path;
  while (*args && n < 47)
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
    assert_true(poll(fds, 2, quiet_ms) > 0);
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

void result_free(result *r) {
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

void assert_json(const char *text) {
  const char *end = json_value(text, 0);
  if (end == NULL || *ws(end) != '\0')
    fail_msg("not one JSON value:\n%s", text);
  assert_true(*ws(text) == '{');
}

const char *json_field(const char *json, const char *key) {
  char pat[96];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (p == NULL)
    fail_msg("no key %s in:\n%s", key, json);
  return ws(p + strlen(pat));
}

long long json_int(const char *json, const char *key) {
  const char *p = json_field(json, key);
  char *end;
  long long v = strtoll(p, &end, 10);
  if (end == p)
    fail_msg("key %s is not a number", key);
  return v;
}

int json_bool(const char *json, const char *key) {
  const char *p = json_field(json, key);
  if (!strncmp(p, "true", 4))
    return 1;
  if (!strncmp(p, "false", 5))
    return 0;
  fail_msg("key %s is not a bool", key);
  return -1;
}

void expect_usage_error(result r, const char *what) {
  if (r.code != 2)
    fail_msg("%s: exit %d (want 2), stderr: %s", what, r.code, r.err);
  if (r.out[0] != '\0')
    fail_msg("%s: wrote to stdout: %s", what, r.out);
  if (r.err[0] == '\0')
    fail_msg("%s: no message on stderr", what);
  result_free(&r);
}
