/* The gfx950-emu primitives (templates/gfx950/gfx950_prims_emu.hip on
 * cdna4_layouts.hip) compile under NVRTC for sm_90 after the route's
 * prelude, uq_abi.h and numerics.hip, as the layer's templates will: a
 * probe kernel calls every primitive of the layer's interface, back to
 * back, with the types' operator[] on both sides of assignments. Its
 * static shared memory is the exchange buffer plus the probe's own tile,
 * well inside the budget the decode layer leaves. Skips without NVRTC. */
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

static const char constants[] =
    "#define UQ_VARIANT 3\n"
    "#define UQ_BLOCK_THREADS 64\n"
    "#define UQ_HEAD_DIM 256\n";

/* Calls each primitive; the 8-byte aligned tile feeds the transposed read. */
static const char probe[] =
    "extern \"C\" __global__ void __launch_bounds__(64)\n"
    "uq_g950_emu_probe(const uq_u32 *in, float *out, uq_u32 *bits) {\n"
    "  static_assert(UQ_BLOCK_THREADS == UQ_G950_WAVE, \"one wave64\");\n"
    "  __shared__ __align__(8) uq_u16 tile[64 * 4];\n"
    "  const int lane = uq_tid();\n"
    "  uq_g950_fp4x32 a;\n"
    "  uq_g950_fp8x32 b;\n"
    "  for (int r = 0; r < 4; r++) a[r] = in[16 * lane + r];\n"
    "  for (int r = 0; r < 8; r++) b[r] = in[16 * lane + 4 + r];\n"
    "  uq_g950_f32x4 acc = uq_g950_f32x4_zero();\n"
    "  acc = uq_g950_mfma_qk(acc, a, in[16 * lane + 12], b);\n"
    "  acc = uq_g950_mfma_qk(acc, a, in[16 * lane + 13], b);\n"
    "  uq_g950_bf16x4 v, p;\n"
    "  v[0] = uq_g950_cvt_fp4x2_bf16(a[0], uq_pow2i(3), 0);\n"
    "  v[1] = uq_g950_cvt_fp4x2_bf16(a[0], uq_pow2i(-2), 3);\n"
    "  p[0] = uq_g950_cvt_fp8x2(acc[0], acc[1]);\n"
    "  p[1] = uq_g950_cvt_fp8x2(acc[2], acc[3]);\n"
    "  ((uq_u32 *)tile)[2 * lane] = v[0];\n"
    "  ((uq_u32 *)tile)[2 * lane + 1] = v[1];\n"
    "  uq_barrier();\n"
    "  uq_g950_bf16x4 t = uq_g950_lds_read_tr16(tile + 4 * (lane ^ 5));\n"
    "  acc = uq_g950_mfma_pv(acc, t, p);\n"
    "  float m = uq_g950_wave_xor_f32(acc[0], 32);\n"
    "  m = uq_fmax(m, uq_g950_wave_xor_f32(m, 16));\n"
    "  float s = uq_g950_swizzle_xor_f32(acc[1], 4);\n"
    "  uq_u32 w = uq_g950_swizzle_xor(p[0], 16) ^ uq_g950_swizzle_xor(p[1], 1);\n"
    "  for (int r = 0; r < 4; r++) out[4 * lane + r] = acc[r] + m + s;\n"
    "  bits[lane] = w;\n"
    "}\n";

static void emu_prims_compile_with_the_preludes_under_nvrtc(void **state) {
  (void)state;
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_for_target("sm_90", &cc);
  if (rc == UQ_ENOCOMPILER) {
    print_message("no NVRTC: %s\n", uq_last_error());
    skip();
  }
  assert_int_equal(rc, 0);
  static const char *const parts[] = {
      "prelude/prelude_nvrtc.hip", "common/uq_abi.h", "common/numerics.hip", NULL,
      "gfx950/cdna4_layouts.hip",  "gfx950/gfx950_prims_emu.hip",
  };
  size_t cap = 1 << 20, len = 0;
  char *src = malloc(cap);
  assert_non_null(src);
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
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
  len += n;

  void *obj = NULL;
  size_t obj_len = 0;
  rc = uq__compiler_compile(cc, "sm_90", src, len, "uq_g950_emu_probe", &obj, &obj_len);
  if (rc != 0)
    print_message("%s\n", uq_last_error());
  assert_int_equal(rc, 0);
  uq_code_info info;
  assert_int_equal(uq__code_info_from_object("sm_90", obj, obj_len, &info), 0);
  print_message("emu probe: %d registers, %d bytes shared, %d bytes local\n",
                info.registers, info.lds_bytes, info.scratch_bytes);
  /* 14 words a lane of exchange buffer + the probe's 512-byte tile, plus
   * at most the 1 KiB per block that sm_90 reserves for the system. */
  assert_true(info.lds_bytes >= 14 * 64 * 4 + 512);
  assert_true(info.lds_bytes <= 14 * 64 * 4 + 512 + 1024);
  assert_int_equal(info.scratch_bytes, 0);
  uq__free(obj);
  free(src);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(emu_prims_compile_with_the_preludes_under_nvrtc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
