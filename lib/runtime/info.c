/* uq_info_report: what this process would use, found the same way the
 * library finds it (so the report cannot disagree with a real run). */
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/dl.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/os.h"
#include "lib/compile/compiler.h"
#include "lib/gpu/platform.h"

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

static void report_library(uq__buf *b, const char *label, uq__env_var var,
                           const char *const *names) {
  void *h;
  if (uq__dl_open(var, names, label, UQ_ENODEV, &h) == 0) {
    char path[4096];
    uq__dl_path(h, path, sizeof path);
    uq__buf_printf(b, "  %-7s %s\n", label, path[0] ? path : "(loaded)");
  } else {
    uq__buf_printf(b, "  %-7s not found\n", label);
    put_detail(b);
  }
}

static void report_tools(uq__buf *b) {
  static const char *const tools[] = {"llvm-objdump-22", "llvm-objdump",
                                      "cuobjdump", "nvdisasm", NULL};
  char path[4096];
  uq__buf_puts(b, "disassemblers:\n");
  const char *forced = uq__env_get(UQ__ENV_OBJDUMP);
  if (forced != NULL)
    uq__buf_printf(b, "  %s=%s: %s\n", uq__env_name(UQ__ENV_OBJDUMP), forced,
                   uq__os_find_program(forced, path, sizeof path) == 0
                       ? path
                       : "not an executable");
  for (size_t i = 0; tools[i] != NULL; i++)
    uq__buf_printf(b, "  %-16s %s\n", tools[i],
                   uq__os_find_program(tools[i], path, sizeof path) == 0
                       ? path
                       : "not found");
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

  /* Runtimes: whether they load; report_devices asks the one that serves
   * this machine for its devices. */
  static const char *const cuda[] = {"libcuda.so.1", NULL};
  static const char *const hip[] = {"libamdhip64.so.6", "libamdhip64.so.5",
                                    "libamdhip64.so", NULL};
  static const char *const comgr[] = {"libamd_comgr.so.3", "libamd_comgr.so.2",
                                      "libamd_comgr.so", NULL};
  uq__buf_puts(&b, "runtimes:\n");
  report_library(&b, "cuda", UQ__ENV_CUDA_LIB, cuda);
  report_library(&b, "hip", UQ__ENV_HIP_LIB, hip);
  report_library(&b, "comgr", UQ__ENV_COMGR_LIB, comgr);

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
