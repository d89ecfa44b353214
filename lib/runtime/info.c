/* uq_info_report: what this process would use, found the same way the
 * library finds it (so the report cannot disagree with a real run). */
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/libs.h"
#include "lib/base/os.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "lib/gpu/platform.h"
#include "uqjit_tools.h"

static const char *route_label(uq__route r) {
  switch (r) {
  case UQ__ROUTE_NVRTC:
    return "nvrtc";
  case UQ__ROUTE_HIPRTC:
    return "hiprtc";
  case UQ__ROUTE_CLANG:
    return "clang";
  default:
    return "none";
  }
}

/* The detail of a failed probe, indented under its line. */
static void put_detail(uq__buf *b) {
  const char *d = uq_last_error();
  uq__buf_puts(b, "    ");
  for (; *d != '\0'; d++) {
    uq__buf_append(b, d, 1);
    if (*d == '\n')
      uq__buf_puts(b, "    ");
  }
  uq__buf_puts(b, "\n");
}

static void report_compilers(uq__buf *b) {
  static const uq__route routes[] = {UQ__ROUTE_NVRTC, UQ__ROUTE_HIPRTC,
                                     UQ__ROUTE_CLANG};
  uq__buf_puts(b, "compilers:\n");
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    const uq__compiler *cc;
    if (uq__compiler_load_route(routes[i], &cc) == 0) {
      uq__buf_printf(b, "  %-7s %s\n          at %s\n", route_label(routes[i]),
                     uq__compiler_identity(cc), uq__compiler_location(cc));
    } else {
      uq__buf_printf(b, "  %-7s not found\n", route_label(routes[i]));
      put_detail(b);
    }
  }
  static const char *const targets[] = {"gfx950", "gfx942", "gfx90a", "sm_90"};
  uq__buf_puts(b, "routes:\n");
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    const uq__compiler *cc;
    if (uq__compiler_for_target(targets[i], &cc) == 0)
      uq__buf_printf(b, "  %-7s %s  [%s]\n", targets[i],
                     route_label(uq__compiler_route(cc)),
                     uq__compiler_options(cc, targets[i]));
    else
      uq__buf_printf(b, "  %-7s no compiler\n", targets[i]);
  }
}

/* dlerror's text without the leading "name: " it usually repeats. */
static const char *why_text(const char *name, const char *why) {
  size_t n = strlen(name);
  if (strncmp(why, name, n) == 0 && why[n] == ':' && why[n + 1] == ' ')
    return why + n + 2;
  return why;
}

/* One library: what overrides it, each candidate in the order the loader
 * tries them (the same uq__libs_probe walk the loader runs) and how each
 * attempt went. */
static void report_library(uq__buf *b, uq__lib_id id, uq__lib_probe *p) {
  int ok = uq__libs_probe(id, p) == 0;
  const uq__lib_list *l = p->list;
  const char *var = uq__env_name(l->override);
  if (p->forced != NULL)
    uq__buf_printf(b, "  %-7s %s (%s=%s: only it is tried)\n", l->name,
                   l->what, var, p->forced);
  else
    uq__buf_printf(b, "  %-7s %s (%s unset)\n", l->name, l->what, var);
  for (size_t i = 0; i < p->tried; i++) {
    const char *name = uq__libs_attempt(p, i);
    if ((int)i == p->loaded)
      uq__buf_printf(b, "    %2zu. %-32s loaded: %s\n", i + 1, name,
                     p->path[0] ? p->path : "(path unknown)");
    else
      uq__buf_printf(b, "    %2zu. %-32s %s\n", i + 1, name,
                     why_text(name, p->why[i]));
  }
  size_t first = p->forced != NULL ? 0 : p->tried;
  for (size_t i = first; i < l->count; i++)
    uq__buf_printf(b, "    %2zu. %-32s %s\n", i + 1, l->candidates[i],
                   p->forced != NULL ? "skipped (override set)" : "not tried");
  if (!ok)
    uq__buf_printf(b, "    not found (set %s to its path)\n", var);
}

static void report_libraries(uq__buf *b) {
  uq__buf_puts(b, "libraries:\n");
  uq__lib_probe *p = uq__calloc(1, sizeof *p);
  if (p == NULL) {
    b->status = UQ_ENOMEM;
    return;
  }
  for (int id = 0; id < UQ__LIB_COUNT_; id++)
    report_library(b, (uq__lib_id)id, p);
  uq__free(p);
}

/* The disassemblers uq_code_disassemble would try: AMD's, then NVIDIA's. */
static void report_tools(uq__buf *b) {
  char path[4096];
  uq__buf_puts(b, "disassemblers:\n");
  const char *forced = uq__env_get(UQ__ENV_OBJDUMP);
  if (forced != NULL)
    uq__buf_printf(b, "  %s=%s: %s\n", uq__env_name(UQ__ENV_OBJDUMP), forced,
                   uq__os_find_program(forced, path, sizeof path) == 0
                       ? path
                       : "not an executable");
  for (int amd = 1; amd >= 0; amd--) {
    const char *const *tools = uq__disasm_candidates(amd);
    for (size_t i = 0; tools[i] != NULL; i++)
      uq__buf_printf(b, "  %-16s %s\n", tools[i],
                     uq__os_find_program(tools[i], path, sizeof path) == 0
                         ? path
                         : "not found");
  }
}

static void report_cache(uq__buf *b) {
  uq__buf_puts(b, "cache:\n");
  char *dir = NULL;
  if (uq_cache_default_dir(&dir) == 0) {
    uq__buf_printf(b, "  writable  %s\n", dir);
    uq_free(dir);
  } else {
    uq__buf_puts(b, "  writable  none\n");
    put_detail(b);
  }
  const char *layers = uq__env_get(UQ__ENV_CACHE_PATH);
  if (layers == NULL) {
    uq__buf_printf(b, "  read-only none (%s unset)\n",
                   uq__env_name(UQ__ENV_CACHE_PATH));
    return;
  }
  const char *p = layers;
  for (;;) {
    size_t n = strcspn(p, ":");
    if (n > 0)
      uq__buf_printf(b, "  read-only %.*s\n", (int)n, p);
    if (p[n] == '\0')
      break;
    p += n + 1;
  }
}

/* Devices: the runtime that serves this machine (CUDA first, then HIP),
 * each device's name and the canonical target uqjit compiles for. */
static void report_devices(uq__buf *b) {
  uq__buf_puts(b, "devices:\n");
  const uq__platform *pf;
  int count = 0;
  if (uq__platform_pick(&pf) != 0 || pf->device_count(&count) != 0 ||
      count == 0) {
    uq__buf_printf(b, "  none (%s)\n", uq_last_error());
    return;
  }
  for (int i = 0; i < count; i++) {
    uq__pdev *dev = NULL;
    char name[128] = "?", arch[UQ_TARGET_MAX] = "?";
    if (pf->device_open(i, &dev) != 0) {
      uq__buf_printf(b, "  %d: %s: cannot open: %s\n", i, pf->name,
                     uq_last_error());
      continue;
    }
    if (pf->make_current(dev) == 0) {
      pf->device_name(dev, name, sizeof name);
      pf->device_arch(dev, arch, sizeof arch);
    }
    uq__buf_printf(b, "  %d: %s (%s, target %s)\n", i, name, pf->name, arch);
    pf->device_close(dev);
  }
}

int uq_info_report(char **text) {
  uq__error_clear();
  if (text == NULL)
    return uq__errorf(UQ_EINVAL, "uq_info_report: text is NULL");
  *text = NULL;
  uq__buf b;
  uq__buf_init(&b);
  uq__buf_printf(&b, "uqjit %s\n", uq_version_string());
  report_compilers(&b);
  report_tools(&b);

  report_libraries(&b);
  report_devices(&b);
  report_cache(&b);
  uq__error_clear();
  if (b.status != 0) {
    uq__buf_free(&b);
    return uq__errorf(UQ_ENOMEM, "out of memory building the report");
  }
  *text = uq__buf_take(&b, NULL);
  if (*text == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory building the report");
  return 0;
}

/* s as a JSON string (quotes, backslashes and control characters escaped);
 * NULL as null. */
static void json_str(uq__buf *b, const char *s) {
  if (s == NULL) {
    uq__buf_puts(b, "null");
    return;
  }
  uq__buf_puts(b, "\"");
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      uq__buf_printf(b, "\\%c", c);
    else if (c < 0x20)
      uq__buf_printf(b, "\\u%04x", c);
    else
      uq__buf_append(b, s, 1);
  }
  uq__buf_puts(b, "\"");
}

static void json_library(uq__buf *b, uq__lib_id id, uq__lib_probe *p) {
  int ok = uq__libs_probe(id, p) == 0;
  const uq__lib_list *l = p->list;
  uq__buf_puts(b, "{\"id\": ");
  json_str(b, l->name);
  uq__buf_puts(b, ", \"what\": ");
  json_str(b, l->what);
  uq__buf_puts(b, ", \"override\": ");
  json_str(b, uq__env_name(l->override));
  uq__buf_puts(b, ", \"override_value\": ");
  json_str(b, p->forced);
  uq__buf_puts(b, ", \"candidates\": [");
  for (size_t i = 0; i < l->count; i++) {
    uq__buf_puts(b, i ? ", " : "");
    json_str(b, l->candidates[i]);
  }
  uq__buf_puts(b, "], \"attempts\": [");
  for (size_t i = 0; i < p->tried; i++) {
    uq__buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
    json_str(b, uq__libs_attempt(p, i));
    if ((int)i == p->loaded) {
      uq__buf_puts(b, ", \"loaded\": ");
      json_str(b, p->path[0] ? p->path : uq__libs_attempt(p, i));
    } else {
      uq__buf_puts(b, ", \"error\": ");
      json_str(b, p->why[i]);
    }
    uq__buf_puts(b, "}");
  }
  uq__buf_puts(b, "], \"loaded\": ");
  json_str(b, ok ? (p->path[0] ? p->path : uq__libs_attempt(p, p->loaded))
                 : NULL);
  uq__buf_puts(b, "}");
}

int uq_info_libraries(char **json) {
  uq__error_clear();
  if (json == NULL)
    return uq__errorf(UQ_EINVAL, "uq_info_libraries: json is NULL");
  *json = NULL;
  uq__lib_probe *p = uq__calloc(1, sizeof *p);
  if (p == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory probing the libraries");
  uq__buf b;
  uq__buf_init(&b);
  uq__buf_puts(&b, "[");
  for (int id = 0; id < UQ__LIB_COUNT_; id++) {
    uq__buf_puts(&b, id ? ", " : "");
    json_library(&b, (uq__lib_id)id, p);
  }
  uq__buf_puts(&b, "]");
  uq__free(p);
  if (b.status == 0)
    *json = uq__buf_take(&b, NULL);
  uq__buf_free(&b);
  if (*json == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory building the library list");
  return 0;
}
