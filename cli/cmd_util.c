#include "cli/cmd_util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

int cli_parse_list(const char *cmd, const char *flag, const char *text,
                       int64_t min, int64_t max, int64_t *out, size_t cap,
                       size_t *n) {
  *n = 0;
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item) {
      cli_usage_error(cmd, "%s: '%s' is not a comma-separated list", flag,
                         text);
      return -1;
    }
    if (*n == cap) {
      cli_usage_error(cmd, "%s: more than %zu values", flag, cap);
      return -1;
    }
    memcpy(item, p, len);
    item[len] = '\0';
    if (cli_parse_i64(cmd, flag, item, min, max, &out[*n]) != 0)
      return -1;
    *n += 1;
    if (comma == NULL)
      return 0;
    p = comma + 1;
  }
}

int cli_parse_size(const char *cmd, const char *flag, const char *text,
                       uint64_t *out) {
  size_t len = strlen(text);
  uint64_t mult = 1;
  char digits[32];
  if (len > 0) {
    switch (text[len - 1]) {
    case 'k': case 'K': mult = 1ull << 10; len--; break;
    case 'm': case 'M': mult = 1ull << 20; len--; break;
    case 'g': case 'G': mult = 1ull << 30; len--; break;
    case 't': case 'T': mult = 1ull << 40; len--; break;
    default: break;
    }
  }
  if (len == 0 || len >= sizeof digits) {
    cli_usage_error(cmd, "%s: '%s' is not a size (BYTES, or with K/M/G)",
                       flag, text);
    return -1;
  }
  memcpy(digits, text, len);
  digits[len] = '\0';
  int64_t v;
  if (cli_parse_i64(cmd, flag, digits, 0, INT64_MAX, &v) != 0)
    return -1;
  if ((uint64_t)v > UINT64_MAX / mult) {
    cli_usage_error(cmd, "%s: '%s' is too large", flag, text);
    return -1;
  }
  *out = (uint64_t)v * mult;
  return 0;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *cli_bytes(uint64_t bytes, char *buf, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, n, "%llu B", (unsigned long long)bytes);
  else
    snprintf(buf, n, "%.2f %s", v, units[u]);
  return buf;
}

int cli_compile_context(const char *target, const char *cache_dir,
                            uq_context **out) {
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = target;
  o.cache_dir = cache_dir;
  return uq_context_create(&o, out);
}
