/* The emulated-primitive probes' shared harness (emu_probe.h). */
#include "tests/templates/emu_probe.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "lib/gpu/platform.h"

/* The text of a template file under the source root (UQ_SOURCE_ROOT). */
static char *read_template(const char *rel) {
  const char *root = getenv("UQ_SOURCE_ROOT");
  assert_non_null(root);
  char path[4096];
  snprintf(path, sizeof path, "%s/templates/%s", root, rel);
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
  text[n] = '\0';
  fclose(f);
  return text;
}

char *emu_probe_source(const char *const *parts, size_t nparts, const char *constants,
                       const char *probe, size_t *len_out) {
  size_t cap = 1 << 20, len = 0;
  char *src = malloc(cap);
  assert_non_null(src);
  for (size_t i = 0; i < nparts; i++) {
    char *text = parts[i] ? read_template(parts[i]) : NULL;
    const char *piece = text ? text : constants;
    size_t n = strlen(piece);
    assert_true(len + n + 2 < cap);
    memcpy(src + len, piece, n);
    len += n;
    src[len++] = '\n';
    free(text);
  }
  size_t n = strlen(probe);
  assert_true(len + n + 1 < cap);
  memcpy(src + len, probe, n + 1);
  *len_out = len + n;
  return src;
}

void *emu_probe_compile(const char *target, const char *src, size_t len, const char *symbol,
                        size_t *obj_len) {
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_for_target(target, &cc);
  if (rc == UQ_ENOCOMPILER) {
    print_message("no NVRTC: %s\n", uq_last_error());
    skip();
  }
  assert_int_equal(rc, 0);
  void *obj = NULL;
  rc = uq__compiler_compile(cc, target, src, len, symbol, &obj, obj_len);
  if (rc != 0)
    print_message("%s\n", uq_last_error());
  assert_int_equal(rc, 0);
  return obj;
}

void emu_probe_resources(const void *obj, size_t obj_len, int *registers, int *shared,
                         int *local) {
  uq_code_info info;
  assert_int_equal(uq__code_info_from_object("sm_90", obj, obj_len, &info), 0);
  print_message("emu probe: %d registers, %d bytes shared, %d bytes local\n", info.registers,
                info.lds_bytes, info.scratch_bytes);
  *registers = info.registers;
  *shared = info.lds_bytes;
  *local = info.scratch_bytes;
}

void emu_probe_run_on_device(const char *const *parts, size_t nparts, const char *constants,
                             const char *probe, const char *symbol, size_t in_words,
                             size_t out_words, int rounds,
                             void (*fill)(uint32_t *in, int round),
                             void (*model)(const uint32_t *in, uint32_t *want)) {
  const uq__platform *pl = NULL;
  uq__pdev *dev = NULL;
  char arch[64] = "";
  if (uq__platform_pick(&pl) != 0 || strcmp(pl->name, "cuda") != 0 ||
      pl->device_open(0, &dev) != 0 || pl->device_arch(dev, arch, sizeof arch) != 0 ||
      strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) < 90) {
    fprintf(stderr, "no NVIDIA device of sm_90 or newer (%s): %s\n", arch, uq_last_error());
    exit(77);
  }
  size_t len = 0, obj_len = 0;
  char *src = emu_probe_source(parts, nparts, constants, probe, &len);
  void *obj = emu_probe_compile(arch, src, len, symbol, &obj_len);
  free(src);
  void *module = NULL, *fn = NULL;
  assert_int_equal(pl->make_current(dev), 0);
  assert_int_equal(pl->module_load(dev, obj, obj_len, &module), 0);
  uq__free(obj);
  assert_int_equal(pl->module_function(dev, module, symbol, &fn), 0);
  uint32_t *in = calloc(in_words, 4), *out = calloc(out_words, 4), *want = calloc(out_words, 4);
  assert_true(in != NULL && out != NULL && want != NULL);
  void *d_in = NULL, *d_out = NULL;
  assert_int_equal(pl->mem_alloc(dev, in_words * 4, &d_in), 0);
  assert_int_equal(pl->mem_alloc(dev, out_words * 4, &d_out), 0);
  for (int round = 0; round < rounds; round++) {
    fill(in, round);
    model(in, want);
    assert_int_equal(pl->memcpy_h2d(dev, d_in, in, in_words * 4), 0);
    assert_int_equal(pl->memset_d8(dev, d_out, 0xff, out_words * 4), 0);
    struct {
      const void *in;
      void *out;
    } params = {d_in, d_out};
    const uint32_t grid[3] = {1, 1, 1};
    assert_int_equal(pl->launch(fn, grid, 64, &params, NULL), 0);
    assert_int_equal(pl->synchronize(dev), 0);
    assert_int_equal(pl->memcpy_d2h(dev, out, d_out, out_words * 4), 0);
    for (size_t i = 0; i < out_words; i++)
      if (out[i] != want[i])
        fail_msg("round %d word %zu (lane %zu): device 0x%08x, host 0x%08x", round, i,
                 i / (out_words / 64), out[i], want[i]);
  }
  pl->mem_free(dev, d_in);
  pl->mem_free(dev, d_out);
  pl->module_unload(dev, module);
  pl->device_close(dev);
  free(in);
  free(out);
  free(want);
}
