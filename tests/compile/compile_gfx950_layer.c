/* The gfx950 decode layer (variant 1 on gfx950) compiles with the
 * library's AMD compiler to code objects that use what the design needs
 * and stay within its resources: the disassembly holds the scaled FP4 x
 * E4M3 MFMA, the hardware FP4 -> bf16 convert, the transposed LDS read and
 * the bf16 MFMA; no scratch; arch + acc VGPRs <= 128; LDS <= 17216 bytes
 * at QG 16 and less at QG 8 and 6. A representative subset by default
 * (each QG with each query mode: fused, strided QKV slice, q_rot; block
 * sizes and dtypes alternating); `--full` compiles the whole matrix (QG 6,
 * 8, 16 x block 16..256 x the three query modes x bf16/fp16). Metadata
 * that cannot be read fails. Without an AMD compiler it exits 77 (SKIP). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/codegen/emit.h"
#include "lib/codegen/target.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "uqjit.h"

#define LDS_MAX_QG16 17216

static const uq__compiler *amd_cc;
static int full;

enum { FUSED, STRIDED, QROT, MODES };
static const char *const mode_names[MODES] = {"fused", "strided", "q_rot"};

static uq_key layer_key(int qg, int bs, int mode, uq_dtype dt) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_DECODE;
  k.variant = UQ_VARIANT_MATRIX;
  k.dtype = dt;
  k.head_dim = 256;
  k.num_kv_heads = 2;
  k.num_partitions = bs == 64 ? 4 : 16;
  k.tile_groups_per_partition = bs == 64 ? 2 : 1;
  k.max_blocks_per_seq = 2048 / bs;
  k.query_group_size = qg;
  k.kv_block_size = bs;
  k.padded_slot = 272;
  k.fuse_qrot = mode != QROT;
  k.scale_e8 = 6250000;
  k.stride_q_head = 256;
  /* strided: a slice of a fused QKV projection (q, k, v heads per row) */
  k.stride_q_seq = (int64_t)qg * 2 * 256 + (mode == STRIDED ? 2 * 2 * 256 : 0);
  snprintf(k.target, sizeof k.target, "gfx950");
  return k;
}

typedef struct result {
  int ok;
  uq_code_info info;
  int has_scale_mfma, has_fp4_cvt, has_bf16_mfma, has_tr_read;
} result;

static result compile_key(const uq_key *k) {
  result r;
  memset(&r, 0, sizeof r);
  char name[256];
  uq_key_name(k, name, sizeof name);
  uq__buf src;
  uq__buf_init(&src);
  char symbol[256];
  void *obj = NULL;
  size_t len = 0;
  char *text = NULL;
  int rc = uq__gen_source(k, uq__compiler_route(amd_cc), &src);
  if (rc == 0 && uq__gen_symbol(k, symbol, sizeof symbol) < 0)
    rc = UQ_EINVAL;
  if (rc == 0)
    rc = uq__compiler_compile(amd_cc, k->target, src.data, src.len, symbol, &obj, &len);
  if (rc == 0)
    rc = uq_code_disassemble(k->target, obj, len, &text, &r.info);
  if (rc != 0) {
    print_error("%s: %s\n", name, uq_last_error());
  } else {
    r.ok = 1;
    r.has_scale_mfma = strstr(text, "v_mfma_scale_f32_16x16x128_f8f6f4") != NULL;
    r.has_fp4_cvt = strstr(text, "v_cvt_scalef32_pk_bf16_fp4") != NULL;
    r.has_bf16_mfma = strstr(text, "v_mfma_f32_16x16x16_bf16") != NULL;
    r.has_tr_read = strstr(text, "ds_read_b64_tr_b16") != NULL;
  }
  uq__free(text);
  uq__free(obj);
  uq__buf_free(&src);
  return r;
}

/* One key's checks; returns the number of failures and the LDS bytes. */
static int check_key(const uq_key *k, int *lds) {
  char name[256];
  uq_key_name(k, name, sizeof name);
  result r = compile_key(k);
  if (!r.ok)
    return 1;
  int bad = 0;
  const uq_code_info *i = &r.info;
  if (!r.has_scale_mfma || !r.has_fp4_cvt || !r.has_bf16_mfma || !r.has_tr_read) {
    print_error("%s: missing instructions (scaled MFMA %d, FP4 convert %d, bf16 MFMA %d, "
                "transposed read %d)\n",
                name, r.has_scale_mfma, r.has_fp4_cvt, r.has_bf16_mfma, r.has_tr_read);
    bad++;
  }
  if (i->vgprs < 0 || i->agprs < 0 || i->lds_bytes < 0 || i->scratch_bytes < 0) {
    print_error("%s: unreadable metadata (vgprs %d agprs %d lds %d scratch %d)\n", name,
                (int)i->vgprs, (int)i->agprs, (int)i->lds_bytes, (int)i->scratch_bytes);
    return bad + 1;
  }
  if (i->scratch_bytes != 0 || i->vgprs + i->agprs > 128 || i->lds_bytes > LDS_MAX_QG16) {
    print_error("%s: scratch %d B, VGPRs %d + AGPRs %d, LDS %d B\n", name,
                (int)i->scratch_bytes, (int)i->vgprs, (int)i->agprs, (int)i->lds_bytes);
    bad++;
  }
  printf("%-110s VGPR %3d AGPR %3d LDS %5d scratch %d\n", name, (int)i->vgprs, (int)i->agprs,
         (int)i->lds_bytes, (int)i->scratch_bytes);
  *lds = i->lds_bytes;
  return bad;
}

static void gfx950_layer_keys_use_the_design_instructions_within_budget(void **state) {
  (void)state;
  static const int qgs[3] = {6, 8, 16};
  static const int bss[5] = {16, 32, 64, 128, 256};
  int failed = 0, n = 0;
  int lds_by_qg[3] = {0, 0, 0};
  for (int a = 0; a < 3; a++)
    for (int mode = 0; mode < MODES; mode++)
      for (int b = 0; b < 5; b++)
        for (int d = 0; d < 2; d++, n++) {
          /* the subset: one block size and dtype per (QG, mode), turning */
          if (!full && (b != (a + 2 * mode) % 5 || d != (a + mode) % 2))
            continue;
          uq_key k = layer_key(qgs[a], bss[b], mode, d ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16);
          int lds = 0;
          int bad = check_key(&k, &lds);
          if (bad)
            print_error("  (QG %d, block %d, %s, %s)\n", qgs[a], bss[b], mode_names[mode],
                        d ? "fp16" : "bf16");
          failed += bad;
          if (lds > lds_by_qg[a])
            lds_by_qg[a] = lds;
        }
  (void)n;
  assert_int_equal(failed, 0);
  /* Less LDS at the smaller query groups. */
  assert_true(lds_by_qg[0] < lds_by_qg[1]);
  assert_true(lds_by_qg[1] < lds_by_qg[2]);
}

/* The emitted source reaches the AMD primitives and the layer kernel, and
 * the default gfx950 plan's block is one wave64. */
static void gfx950_layer_source_is_the_layer(void **state) {
  (void)state;
  uq_key k = layer_key(8, 16, FUSED, UQ_DTYPE_BF16);
  uq__buf src;
  uq__buf_init(&src);
  assert_int_equal(uq__gen_source(&k, uq__compiler_route(amd_cc), &src), 0);
  assert_non_null(strstr(src.data, "---- gfx950_prims_amd.hip ----"));
  assert_non_null(strstr(src.data, "---- decode_gfx950.hip ----"));
  assert_null(strstr(src.data, "---- decode.hip ----"));
  assert_int_equal(uq__gen_block_threads(&k), 64);
  uq__buf_free(&src);
}

int main(int argc, char **argv) {
  full = argc > 1 && strcmp(argv[1], "--full") == 0;
  if (uq__compiler_for_target("gfx950", &amd_cc) != 0) {
    printf("skipping: no compiler for gfx950: %s\n", uq_last_error());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gfx950_layer_source_is_the_layer),
      cmocka_unit_test(gfx950_layer_keys_use_the_design_instructions_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
