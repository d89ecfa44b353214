/* The gfx950-emu primitives (templates/cdna/cdna_prims_emu.hip and
 * templates/gfx950/gfx950_prims_emu.hip on cdna_layouts.hip and
 * cdna4_layouts.hip).
 * compile (no argument): they compile under NVRTC for sm_90 after the
 * route's prelude, uq_abi.h and numerics.hip, as the layer's templates
 * will: a probe kernel calls every primitive of the layer's interface,
 * back to back, with the types' operator[] on both sides of assignments;
 * its static shared memory is the exchange buffer plus the probe's own
 * tile, well inside the budget the decode layer leaves. Skips without
 * NVRTC.
 * gpu (argument "gpu"): the probe runs on the device (one 64-thread block)
 * on random operands and every output equals, bit for bit, the host model
 * built from the same cdna_layouts.hip and cdna4_layouts.hip: the shared-memory exchange,
 * barriers and register packing of the emulation do what the layouts say.
 * Exits 77 without an NVIDIA device of sm_90 or newer. */
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
#include <math.h>

#include "templates/cdna/cdna_layouts.hip"
#include "templates/gfx950/cdna4_layouts.hip"

static const char constants[] =
    "#define UQ_VARIANT 3\n"
    "#define UQ_BLOCK_THREADS 64\n"
    "#define UQ_HEAD_DIM 256\n";

/* Calls each primitive; the 8-byte aligned tile feeds the transposed read.
 * Lane L reads 16 words at in + 16 L (FP4 A 0..3, E4M3 B 4..11, scale
 * words 12, 13, two bf16 pairs 14, 15) and writes 24 words at out + 24 L
 * (the layout host_model below computes). */
static const char probe[] =
    "typedef struct { const uq_u32 *in; uq_u32 *out; } uq_probe_params;\n"
    "UQ_DEV float uq_probe_clamp(float x) { return fminf(448.0f, uq_fmax(-448.0f, x)); }\n"
    "extern \"C\" __global__ void __launch_bounds__(64)\n"
    "uq_g950_emu_probe(uq_probe_params p) {\n"
    "  static_assert(UQ_BLOCK_THREADS == UQ_CDNA_WAVE, \"one wave64\");\n"
    "  __shared__ __align__(8) uq_u16 tile[64 * 4];\n"
    "  const int lane = uq_tid();\n"
    "  const uq_u32 *in = p.in + 16 * lane;\n"
    "  uq_u32 *out = p.out + 24 * lane;\n"
    "  uq_g950_fp4x32 a;\n"
    "  uq_g950_fp8x32 b;\n"
    "  for (int r = 0; r < 4; r++) a[r] = in[r];\n"
    "  for (int r = 0; r < 8; r++) b[r] = in[4 + r];\n"
    "  uq_cdna_f32x4 q1 = uq_g950_mfma_qk(uq_cdna_f32x4_zero(), a, in[12], b);\n"
    "  uq_cdna_f32x4 q2 = uq_g950_mfma_qk(q1, a, in[13], b);\n"
    "  for (int r = 0; r < 4; r++) { out[r] = uq_f32_bits(q1[r]); out[4 + r] = uq_f32_bits(q2[r]); }\n"
    "  uq_cdna_bf16x4 v, pb;\n"
    "  v[0] = uq_g950_cvt_fp4x2_bf16(a[0], uq_pow2i(3), 0);\n"
    "  v[1] = uq_g950_cvt_fp4x2_bf16(a[0], uq_pow2i(-2), 3);\n"
    "  out[8] = v[0];\n"
    "  out[9] = v[1];\n"
    "  out[10] = uq_g950_cvt_fp8x2(uq_probe_clamp(q1[0]), uq_probe_clamp(q1[1]));\n"
    "  out[11] = uq_cdna_swizzle_xor(in[14], 1);\n"
    "  out[12] = uq_cdna_swizzle_xor(in[14], 16);\n"
    "  out[13] = uq_f32_bits(uq_cdna_swizzle_xor_f32(uq_bits_f32(in[15]), 4));\n"
    "  out[14] = uq_f32_bits(uq_cdna_wave_xor_f32(uq_bits_f32(in[15]), 32));\n"
    "  out[15] = uq_f32_bits(uq_cdna_wave_xor_f32(uq_bits_f32(in[15]), 8));\n"
    "  ((uq_u32 *)tile)[2 * lane] = v[0];\n"
    "  ((uq_u32 *)tile)[2 * lane + 1] = v[1];\n"
    "  uq_cdna_bf16x4 t = uq_g950_lds_read_tr16(tile + 4 * (lane ^ 5));\n"
    "  out[16] = t[0];\n"
    "  out[17] = t[1];\n"
    "  pb[0] = in[14];\n"
    "  pb[1] = in[15];\n"
    "  uq_cdna_f32x4 d = uq_cdna_mfma_bf16(q1, t, pb);\n"
    "  for (int r = 0; r < 4; r++) out[18 + r] = uq_f32_bits(d[r]);\n"
    "  out[22] = uq_g950_cvt_fp4x2_bf16(a[1], 1.0f, 1);\n"
    "  out[23] = 0u;\n"
    "}\n";

/* The probe's source: the preludes, a constants block, the layouts, the
 * emulated primitives, then the probe kernel (emu_probe.h). */
static const char *const parts[] = {
    "prelude/prelude_nvrtc.hip", "common/uq_abi.h",        "common/numerics.hip",
    NULL,                        "cdna/cdna_layouts.hip",  "gfx950/cdna4_layouts.hip",
    "cdna/cdna_prims_emu.hip",   "gfx950/gfx950_prims_emu.hip",
};
#define NPARTS (sizeof parts / sizeof parts[0])

static void emu_prims_compile_with_the_preludes_under_nvrtc(void **state) {
  (void)state;
  size_t len = 0, obj_len = 0;
  char *src = emu_probe_source(parts, NPARTS, constants, probe, &len);
  void *obj = emu_probe_compile("sm_90", src, len, "uq_g950_emu_probe", &obj_len);
  free(src);
  int regs, shared, local;
  emu_probe_resources(obj, obj_len, &regs, &shared, &local);
  /* 14 words a lane of exchange buffer + the probe's 512-byte tile, plus
   * at most the 1 KiB per block that sm_90 reserves for the system. */
  assert_true(shared >= 14 * 64 * 4 + 512);
  assert_true(shared <= 14 * 64 * 4 + 512 + 1024);
  assert_int_equal(local, 0);
  uq__free(obj);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uq_u32 rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uq_u32)(rng >> 11);
}

/* A finite bf16 of magnitude below 4. */
static uq_u32 rnd_bf16(void) {
  uq_u32 h = rnd() & 0x7fffu;
  h = (h % (0x4080u - 0x3000u)) + 0x3000u;
  return h | ((rnd() & 1u) << 15);
}

static void random_inputs(uq_u32 *in) {
  for (int l = 0; l < 64; l++) {
    uq_u32 *w = in + 16 * l;
    for (int r = 0; r < 4; r++)
      w[r] = rnd();
    for (int r = 0; r < 8; r++) {
      uq_u32 x = rnd();
      for (int byte = 0; byte < 4; byte++) /* no E4M3 NaN */
        if (((x >> (8 * byte)) & 0x7fu) == 0x7fu)
          x ^= 1u << (8 * byte);
      w[4 + r] = x;
    }
    w[12] = (rnd() & 0xffffff00u) | (118u + rnd() % 12u);
    w[13] = (rnd() & 0xffffff00u) | (118u + rnd() % 12u);
    w[14] = rnd_bf16() | (rnd_bf16() << 16);
    w[15] = rnd_bf16() | (rnd_bf16() << 16);
  }
}

static float clamp448(float x) { return fminf(448.0f, fmaxf(-448.0f, x)); }

/* The probe's outputs computed on the host from the layout files. */
static void host_model(const uq_u32 *in, uq_u32 *out) {
  static uq_u32 a[256], sa1[64], sa2[64], sb[64], b[512], v[128], t[128], pb[128];
  static float q1[64][4];
  for (int l = 0; l < 64; l++) {
    for (int r = 0; r < 4; r++)
      a[4 * l + r] = in[16 * l + r];
    for (int r = 0; r < 8; r++)
      b[8 * l + r] = in[16 * l + 4 + r];
    sa1[l] = in[16 * l + 12];
    sa2[l] = in[16 * l + 13];
    sb[l] = 127u;
    pb[2 * l] = in[16 * l + 14];
    pb[2 * l + 1] = in[16 * l + 15];
    v[2 * l] = uq_cdna4_cvt_scalef32_pk_bf16_fp4(a[4 * l], 8.0f, 0);
    v[2 * l + 1] = uq_cdna4_cvt_scalef32_pk_bf16_fp4(a[4 * l], 0.25f, 3);
  }
  for (int l = 0; l < 64; l++)
    for (int r = 0; r < 4; r++)
      q1[l][r] = uq_cdna4_mfma_scale_f4f8_elem(a, sa1, 0, b, sb, 0, uq_cdna_d_row(l, r),
                                               uq_cdna_d_col(l), 0.0f);
  for (int l = 0; l < 64; l++) {
    uq_u32 h[4];
    for (int e = 0; e < 4; e++) {
      int src = uq_cdna4_tr16_src_lane(l, e) ^ 5; /* lane s points at s ^ 5's row */
      int el = uq_cdna4_tr16_src_elem(l);
      h[e] = (v[2 * src + (el >> 1)] >> (16 * (el & 1))) & 0xffffu;
    }
    t[2 * l] = h[0] | (h[1] << 16);
    t[2 * l + 1] = h[2] | (h[3] << 16);
  }
  for (int l = 0; l < 64; l++) {
    uq_u32 *o = out + 24 * l;
    const uq_u32 *w = in + 16 * l;
    for (int r = 0; r < 4; r++) {
      o[r] = uq_f32_bits(q1[l][r]);
      o[4 + r] = uq_f32_bits(uq_cdna4_mfma_scale_f4f8_elem(
          a, sa2, 0, b, sb, 0, uq_cdna_d_row(l, r), uq_cdna_d_col(l), q1[l][r]));
      o[18 + r] = uq_f32_bits(uq_cdna_mfma_bf16_elem(t, pb, uq_cdna_d_row(l, r),
                                                      uq_cdna_d_col(l), q1[l][r]));
    }
    o[8] = v[2 * l];
    o[9] = v[2 * l + 1];
    o[10] = uq_cdna4_cvt_pk_fp8_f32(clamp448(q1[l][0]), clamp448(q1[l][1]));
    o[11] = in[16 * uq_cdna_swizzle_src(l, uq_cdna_swizzle_xor_offset(1)) + 14];
    o[12] = in[16 * uq_cdna_swizzle_src(l, uq_cdna_swizzle_xor_offset(16)) + 14];
    o[13] = in[16 * uq_cdna_swizzle_src(l, uq_cdna_swizzle_xor_offset(4)) + 15];
    o[14] = in[16 * (l ^ 32) + 15];
    o[15] = in[16 * (l ^ 8) + 15];
    o[16] = t[2 * l];
    o[17] = t[2 * l + 1];
    o[22] = uq_cdna4_cvt_scalef32_pk_bf16_fp4(w[1], 1.0f, 1);
    o[23] = 0u;
  }
}

static const char *mode = "compile";

static void fill_inputs(uint32_t *in, int round) {
  (void)round;
  random_inputs(in);
}

/* Runs the probe on the device over random operands, several rounds. */
static void emu_prims_on_the_device_equal_the_host_model(void **state) {
  (void)state;
  emu_probe_run_on_device(parts, NPARTS, constants, probe, "uq_g950_emu_probe", 64 * 16,
                          64 * 24, 8, fill_inputs, host_model);
}

int main(int argc, char **argv) {
  if (argc > 1)
    mode = argv[1];
  if (strcmp(mode, "gpu") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emu_prims_on_the_device_equal_the_host_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(emu_prims_compile_with_the_preludes_under_nvrtc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
