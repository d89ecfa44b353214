/* The gfx942-emu primitives (templates/cdna/cdna_prims_emu.hip and
 * templates/gfx942/gfx942_prims_emu.hip on cdna_layouts.hip and
 * cdna3_layouts.hip).
 * compile (no argument): they compile under NVRTC for sm_90 after the
 * route's prelude, uq_abi.h and numerics.hip, as the layer's templates
 * will: a probe kernel calls every primitive of the layer's interface,
 * back to back; its static shared memory is the exchange buffer, no local
 * memory. Skips without NVRTC.
 * gpu (argument "gpu"): the probe runs on the device (one 64-thread block)
 * on random operands and every output equals, bit for bit, the host model
 * built from the same layout files: the shared-memory exchange, barriers
 * and register packing of the emulation do what the layouts say. Exits 77
 * without an NVIDIA device of sm_90 or newer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/alloc.h"

#include "tests/templates/emu_probe.h"
#include "tests/templates/template_host.h"

#include "templates/cdna/cdna_layouts.hip"
#include "templates/gfx942/cdna3_layouts.hip"

static const char constants[] =
    "#define UQ_VARIANT 4\n"
    "#define UQ_BLOCK_THREADS 64\n"
    "#define UQ_HEAD_DIM 256\n";

static const char *const parts[] = {
    "prelude/prelude_nvrtc.hip", "common/uq_abi.h",        "common/numerics.hip",
    NULL,                        "cdna/cdna_layouts.hip",  "gfx942/cdna3_layouts.hip",
    "cdna/cdna_prims_emu.hip",   "gfx942/gfx942_prims_emu.hip",
};
#define NPARTS (sizeof parts / sizeof parts[0])

/* Lane L reads 12 words at in + 12 L (FP8 A 0, 1; FP8 B 2, 3; bf16 pairs
 * 4..7; floats 8, 9 for the FNUZ convert; FNUZ bytes 10; a power-of-two
 * scale 11) and writes 16 words at out + 16 L (the layout host_model
 * below computes). */
enum { IN = 12, OUT = 16 };

static const char probe[] =
    "typedef struct { const uq_u32 *in; uq_u32 *out; } uq_probe_params;\n"
    "extern \"C\" __global__ void __launch_bounds__(64)\n"
    "uq_g942_emu_probe(uq_probe_params p) {\n"
    "  static_assert(UQ_BLOCK_THREADS == UQ_CDNA_WAVE, \"one wave64\");\n"
    "  const int lane = uq_tid();\n"
    "  const uq_u32 *in = p.in + 12 * lane;\n"
    "  uq_u32 *out = p.out + 16 * lane;\n"
    "  uq_g942_fp8x8 a, b;\n"
    "  a[0] = in[0]; a[1] = in[1]; b[0] = in[2]; b[1] = in[3];\n"
    "  uq_cdna_f32x4 d = uq_g942_mfma_fp8(uq_cdna_f32x4_zero(), a, b);\n"
    "  for (int r = 0; r < 4; r++) out[r] = uq_f32_bits(d[r]);\n"
    "  uq_cdna_bf16x4 va, vb;\n"
    "  va[0] = in[4]; va[1] = in[5]; vb[0] = in[6]; vb[1] = in[7];\n"
    "  uq_cdna_f32x4 e = uq_cdna_mfma_bf16(d, va, vb);\n"
    "  for (int r = 0; r < 4; r++) out[4 + r] = uq_f32_bits(e[r]);\n"
    "  out[8] = uq_g942_cvt_fp8x2(uq_bits_f32(in[8]), uq_bits_f32(in[9]));\n"
    "  const uq_g942_f32x2 f0 = uq_g942_cvt_f32x2_fp8(in[10], 0, uq_bits_f32(in[11]));\n"
    "  const uq_g942_f32x2 f1 = uq_g942_cvt_f32x2_fp8(in[10], 1, uq_bits_f32(in[11]));\n"
    "  out[9] = uq_f32_bits(f0[0]);\n"
    "  out[10] = uq_f32_bits(f0[1]);\n"
    "  out[11] = uq_f32_bits(f1[0]);\n"
    "  out[12] = uq_f32_bits(f1[1]);\n"
    "  out[13] = uq_g942_pack_bf16(f0[0], f1[1]);\n"
    "  out[14] = uq_cdna_swizzle_xor(in[10], 2);\n"
    "  out[15] = uq_f32_bits(uq_cdna_wave_xor_f32(uq_bits_f32(in[11]), 16));\n"
    "}\n";

static void emu_prims_compile_with_the_preludes_under_nvrtc(void **state) {
  (void)state;
  size_t len = 0, obj_len = 0;
  char *src = emu_probe_source(parts, NPARTS, constants, probe, &len);
  void *obj = emu_probe_compile("sm_90", src, len, "uq_g942_emu_probe", &obj_len);
  free(src);
  int regs, shared, local;
  emu_probe_resources(obj, obj_len, &regs, &shared, &local);
  /* The exchange buffer (14 words a lane, sized for gfx950's largest
   * operands), plus at most the 1 KiB per block sm_90 reserves. */
  assert_true(shared >= 14 * 64 * 4);
  assert_true(shared <= 14 * 64 * 4 + 1024);
  assert_int_equal(local, 0);
  uq__free(obj);
}

static uint64_t rng = 0xa4093822299f31d0ull;
static uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 11);
}

/* Four FNUZ bytes, none the NaN 0x80 (NaN payloads need not match). */
static uq_u32 rnd_fnuz4(void) {
  uq_u32 x = rnd();
  for (int k = 0; k < 4; k++)
    if (((x >> (8 * k)) & 255u) == 0x80u)
      x ^= 1u << (8 * k);
  return x;
}

/* A finite bf16 of magnitude below 4. */
static uq_u32 rnd_bf16(void) {
  uq_u32 h = rnd() & 0x7fffu;
  h = (h % (0x4080u - 0x3000u)) + 0x3000u;
  return h | ((rnd() & 1u) << 15);
}

static void fill_inputs(uint32_t *in, int round) {
  for (int l = 0; l < 64; l++) {
    uq_u32 *w = in + IN * l;
    for (int r = 0; r < 4; r++)
      w[r] = rnd_fnuz4();
    for (int r = 4; r < 8; r++)
      w[r] = rnd_bf16() | (rnd_bf16() << 16);
    /* within +-224, on and off the FNUZ grid, some tiny */
    for (int r = 8; r < 10; r++) {
      float x = (float)((int)(rnd() % 449u) - 224) / (float)(1u << (rnd() % 14u));
      w[r] = uq_f32_bits(x);
    }
    w[10] = rnd_fnuz4();
    w[11] = uq_f32_bits((float)(1u << (rnd() % 8u)) / 16.0f) | (uq_u32)(round & 1) << 31;
  }
}

static void host_model(const uint32_t *in, uint32_t *out) {
  static uq_u32 a[128], b[128], va[128], vb[128];
  static float d[64][4];
  for (int l = 0; l < 64; l++) {
    const uq_u32 *w = in + IN * l;
    a[2 * l] = w[0];
    a[2 * l + 1] = w[1];
    b[2 * l] = w[2];
    b[2 * l + 1] = w[3];
    va[2 * l] = w[4];
    va[2 * l + 1] = w[5];
    vb[2 * l] = w[6];
    vb[2 * l + 1] = w[7];
  }
  for (int l = 0; l < 64; l++)
    for (int r = 0; r < 4; r++)
      d[l][r] = uq_cdna3_mfma_fp8_elem(a, b, uq_cdna_d_row(l, r), uq_cdna_d_col(l), 0.0f);
  for (int l = 0; l < 64; l++) {
    const uq_u32 *w = in + IN * l;
    uq_u32 *o = out + OUT * l;
    for (int r = 0; r < 4; r++) {
      o[r] = uq_f32_bits(d[l][r]);
      o[4 + r] = uq_f32_bits(
          uq_cdna_mfma_bf16_elem(va, vb, uq_cdna_d_row(l, r), uq_cdna_d_col(l), d[l][r]));
    }
    o[8] = uq_cdna3_cvt_pk_fp8_f32(uq_bits_f32(w[8]), uq_bits_f32(w[9]));
    const float sc = uq_bits_f32(w[11]);
    const float f[4] = {uq_cdna3_cvt_f32_fp8(w[10], 0, 0) * sc, uq_cdna3_cvt_f32_fp8(w[10], 0, 1) * sc,
                        uq_cdna3_cvt_f32_fp8(w[10], 1, 0) * sc, uq_cdna3_cvt_f32_fp8(w[10], 1, 1) * sc};
    for (int k = 0; k < 4; k++)
      o[9 + k] = uq_f32_bits(f[k]);
    o[13] = uq_cdna3_perm_b32(uq_f32_bits(f[3]), uq_f32_bits(f[0]), 0x07060302u);
    o[14] = in[IN * uq_cdna_swizzle_src(l, uq_cdna_swizzle_xor_offset(2)) + 10];
    o[15] = in[IN * (l ^ 16) + 11];
  }
}

/* The host model itself against independent expectations on one input:
 * the swizzle and wave exchanges pick the lanes the ISA says, the pack is
 * the two top halves. */
static void host_model_is_sane(void **state) {
  (void)state;
  static uint32_t in[64 * IN], out[64 * OUT];
  fill_inputs(in, 0);
  host_model(in, out);
  for (int l = 0; l < 64; l++) {
    assert_int_equal(out[OUT * l + 14], in[IN * (l ^ 2) + 10]);
    assert_int_equal(out[OUT * l + 15], in[IN * (l ^ 16) + 11]);
    assert_int_equal(out[OUT * l + 13],
                     (out[OUT * l + 9] >> 16) | (out[OUT * l + 12] & 0xffff0000u));
  }
}

static void emu_prims_on_the_device_equal_the_host_model(void **state) {
  (void)state;
  emu_probe_run_on_device(parts, NPARTS, constants, probe, "uq_g942_emu_probe", 64 * IN,
                          64 * OUT, 8, fill_inputs, host_model);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "gpu") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emu_prims_on_the_device_equal_the_host_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host_model_is_sane),
      cmocka_unit_test(emu_prims_compile_with_the_preludes_under_nvrtc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
