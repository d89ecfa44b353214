/* The AMD decode kernels as compiled (suite 'isa': clang 22, no GPU), for
 * the target named by the argument: gfx950 (isa.gfx950) or gfx942
 * (isa.gfx942). For every key of the matrix (QG 6, 8, 16 x block 16 .. 256
 * x fused / strided (QKV slice, still fused) / q_rot query x bf16, fp16),
 * planned by uq_plan_make for the target with the default layer and
 * compiled through the library (UQJIT_AMD_COMPILER=clang, a compile-only
 * context, a private cache), the code object says:
 *  - the planned decode layer is the target's layer (variant 1);
 *  - its metadata is known (no -1 anywhere) and scratch is 0;
 *  - the register and LDS budgets of the layer's design
 *    (docs/KERNELS.md): gfx950 arch + acc VGPRs <= 128 and LDS <= 17216
 *    bytes at QG 16, less at 6 and 8; gfx942 arch + acc VGPRs <= 168
 *    (three waves a SIMD) and LDS <= 16 x 256 + 512 bytes (16 query
 *    rows, the padding ones zero, and the tile's K scales);
 *  - the disassembly holds the layer's instructions: gfx950
 *    v_mfma_scale_f32_16x16x128_f8f6f4, v_cvt_scalef32_pk_bf16_fp4 and
 *    v_mfma_f32_16x16x16_bf16; gfx942 v_mfma_f32_16x16x32_fp8_fp8,
 *    v_mfma_f32_16x16x16_bf16, v_cvt_pk_f32_fp8 and v_cvt_pk_fp8_f32.
 * A decode key of another variant fails ("default layer missing") unless
 * UQ_ISA_ALLOW_PORTABLE=1: then the plumbing (metadata known, scratch 0)
 * is still checked and the layer's budgets and instructions are reported,
 * not asserted. Without clang 22 the program exits 77 (SKIP). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uqjit_tools.h"

#define MAX_CASES 96
#define MAX_WANTED 4
#define LDS_QG16 17216

/* What one target's layer must show. */
typedef struct isa_target {
  const char *name;
  const char *wanted[MAX_WANTED]; /* mnemonics, NULL-padded */
  int max_vgprs;                  /* arch + acc */
  /* "" when the LDS bytes fit the budget at this query group */
  const char *(*lds_problem)(int lds, int qg);
} isa_target;

static const char *gfx950_lds(int lds, int qg) {
  return lds > LDS_QG16 || (qg < 16 && lds >= LDS_QG16) ? "LDS above the budget" : "";
}
static const char *gfx942_lds(int lds, int qg) {
  (void)qg;
  return lds > 16 * 256 + 512 ? "LDS above the budget" : "";
}

static const isa_target targets[] = {
    {"gfx950",
     {"v_mfma_scale_f32_16x16x128_f8f6f4", "v_cvt_scalef32_pk_bf16_fp4",
      "v_mfma_f32_16x16x16_bf16", NULL},
     128,
     gfx950_lds},
    {"gfx942",
     {"v_mfma_f32_16x16x32_fp8_fp8", "v_mfma_f32_16x16x16_bf16", "v_cvt_pk_f32_fp8",
      "v_cvt_pk_fp8_f32"},
     168,
     gfx942_lds},
};
static const isa_target *tgt;

typedef struct isa_case {
  uq_key key;
  char name[512];
  int qg;
  uq_code_info info;
  int has[MAX_WANTED]; /* tgt->wanted[i] in the disassembly */
} isa_case;

static isa_case cases[MAX_CASES];
static size_t ncases;
static int allow_portable;
static char cache_dir[] = "/tmp/uq-isa-XXXXXX";

/* 1 when `text` has an instruction line whose mnemonic is `m`, alone or
 * with an encoding suffix (_e32, _e64, _sdwa, _dpp: the same instruction),
 * not a mention in a comment or a symbol. */
static int has_mnemonic(const char *text, const char *m) {
  static const char *const suffixes[] = {"", "_e32", "_e64", "_sdwa", "_dpp"};
  size_t n = strlen(m);
  for (const char *p = text; p != NULL && *p;) {
    const char *line = p;
    const char *e = strchr(p, '\n');
    p = e != NULL ? e + 1 : NULL;
    if (*line != '\t' && *line != ' ')
      continue;
    while (*line == '\t' || *line == ' ')
      line++;
    if (strncmp(line, m, n) != 0)
      continue;
    for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++) {
      size_t k = strlen(suffixes[s]);
      const char *end = line + n + k;
      if (strncmp(line + n, suffixes[s], k) == 0 &&
          (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\0'))
        return 1;
    }
  }
  return 0;
}

/* The budgets the target's layer must meet; "" when met, else why not.
 * Unknown metadata (-1) never passes. */
static const char *budget_problem(const uq_code_info *i, int qg) {
  if (i->vgprs < 0 || i->agprs < 0 || i->sgprs < 0 || i->lds_bytes < 0 ||
      i->scratch_bytes < 0)
    return "unknown metadata";
  if (i->scratch_bytes != 0)
    return "scratch is not 0";
  if (i->vgprs + i->agprs > tgt->max_vgprs)
    return "arch + acc VGPRs above the budget";
  return tgt->lds_problem(i->lds_bytes, qg);
}

static void add_case(int qg, int bs, int query, uq_dtype dt) {
  const int hk = 2, hq = qg * hk;
  uq_shape s;
  memset(&s, 0, sizeof s);
  s.batch = 16;
  s.num_q_heads = hq;
  s.num_kv_heads = hk;
  s.head_dim = 256;
  s.block_size = bs;
  s.max_blocks_per_seq = 131072 / bs;
  s.q_dtype = dt;
  if (query == 1) /* a QKV projection's slice: strided, still fused */
    s.q_stride_seq = (int64_t)(hq + 2 * hk) * 256;
  if (query == 2) { /* padded heads: the prologue's q_rot path */
    s.q_stride_head = 256 + 64;
    s.q_stride_seq = (int64_t)hq * (256 + 64);
  }
  uq_plan plan;
  if (uq_plan_make(&s, tgt->name, &plan) != 0)
    fail_msg("plan QG %d bs %d: %s", qg, bs, uq_last_error());
  assert_true(plan.eligible);
  assert_int_equal(plan.fuse_qrot, query != 2);
  for (int k = 0; k < plan.num_kernels; k++)
    if (plan.kernels[k].kind == UQ_KERNEL_DECODE) {
      assert_true(ncases < MAX_CASES);
      isa_case *c = &cases[ncases++];
      memset(c, 0, sizeof *c);
      c->key = plan.kernels[k];
      c->qg = qg;
      assert_true(uq_key_name(&c->key, c->name, sizeof c->name) > 0);
    }
}

static int compile_all(void **st) {
  (void)st;
  static const int qgs[3] = {6, 8, 16}, bss[5] = {16, 32, 64, 128, 256};
  static const uq_dtype dts[2] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16};
  const char *allow = getenv("UQ_ISA_ALLOW_PORTABLE");
  allow_portable = allow != NULL && strcmp(allow, "1") == 0;
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 5; b++)
      for (int q = 0; q < 3; q++)
        for (int d = 0; d < 2; d++)
          add_case(qgs[a], bss[b], q, dts[d]);
  if (mkdtemp(cache_dir) == NULL)
    return -1;
  uq_context_options o;
  uq_context_options_init(&o);
  o.device = -1;
  o.target = tgt->name;
  o.cache_dir = cache_dir;
  uq_context *ctx = NULL;
  if (uq_context_create(&o, &ctx) != 0) {
    fprintf(stderr, "isa: no compile context: %s\n", uq_last_error());
    return -1;
  }
  uq_key keys[MAX_CASES];
  for (size_t i = 0; i < ncases; i++)
    keys[i] = cases[i].key;
  int rc = uq_compile_keys(ctx, keys, ncases, 2, NULL, NULL, NULL);
  if (rc == UQ_ENOENT) {
    fprintf(stderr, "isa: SKIP: no %s compiler (%s)\n", tgt->name, uq_last_error());
    uq_context_destroy(ctx);
    exit(77);
  }
  for (size_t i = 0; i < ncases && rc == 0; i++) {
    isa_case *c = &cases[i];
    void *obj = NULL;
    size_t len = 0;
    char *text = NULL;
    uq_code_info dis;
    rc = uq_code_object(ctx, &c->key, &obj, &len, &c->info);
    if (rc == 0)
      rc = uq_code_disassemble(tgt->name, obj, len, &text, &dis);
    if (rc == 0)
      for (int w = 0; w < MAX_WANTED && tgt->wanted[w] != NULL; w++)
        c->has[w] = has_mnemonic(text, tgt->wanted[w]);
    if (rc != 0)
      fprintf(stderr, "isa: %s: %s\n", c->name, uq_last_error());
    uq_free(text);
    uq_free(obj);
  }
  uq_context_destroy(ctx);
  return rc == 0 ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static int cleanup(void **st) {
  (void)st;
  return nftw(cache_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int is_layer(const isa_case *c) {
  return c->key.variant == UQ_VARIANT_MATRIX;
}

static void every_key_plans_the_targets_layer(void **st) {
  (void)st;
  assert_int_equal(ncases, 90);
  for (size_t i = 0; i < ncases; i++)
    if (!is_layer(&cases[i])) {
      if (!allow_portable)
        fail_msg("%s default layer missing: %s plans variant %d", tgt->name,
                 cases[i].name, (int)cases[i].key.variant);
      if (i == 0)
        print_message("isa: UQ_ISA_ALLOW_PORTABLE=1: variant %d planned, "
                      "budgets and instructions reported only\n",
                      (int)cases[i].key.variant);
    }
}

static void metadata_is_known_and_scratch_is_zero(void **st) {
  (void)st;
  for (size_t i = 0; i < ncases; i++) {
    const uq_code_info *f = &cases[i].info;
    if (strstr(f->isa, tgt->name) == NULL || f->vgprs < 0 || f->agprs < 0 ||
        f->sgprs < 0 || f->lds_bytes < 0 || f->scratch_bytes < 0)
      fail_msg("%s: unknown metadata (isa '%s' vgprs %d agprs %d sgprs %d "
               "lds %d scratch %d)", cases[i].name, f->isa, (int)f->vgprs,
               (int)f->agprs, (int)f->sgprs, (int)f->lds_bytes,
               (int)f->scratch_bytes);
    if (f->scratch_bytes != 0)
      fail_msg("%s: %d bytes of scratch", cases[i].name, (int)f->scratch_bytes);
  }
}

static void registers_and_lds_within_the_layer_budget(void **st) {
  (void)st;
  for (size_t i = 0; i < ncases; i++) {
    const isa_case *c = &cases[i];
    const char *why = budget_problem(&c->info, c->qg);
    if (why[0] == '\0')
      continue;
    if (is_layer(c) || !allow_portable)
      fail_msg("%s: %s (VGPRs %d + AGPRs %d, LDS %d)", c->name, why,
               (int)c->info.vgprs, (int)c->info.agprs, (int)c->info.lds_bytes);
    print_message("isa: portable %s: %s (VGPRs %d + AGPRs %d, LDS %d)\n",
                  c->name, why, (int)c->info.vgprs, (int)c->info.agprs,
                  (int)c->info.lds_bytes);
  }
}

static void the_layers_instructions_present(void **st) {
  (void)st;
  for (size_t i = 0; i < ncases; i++)
    for (int w = 0; w < MAX_WANTED && tgt->wanted[w] != NULL; w++)
      if (!cases[i].has[w]) {
        if (is_layer(&cases[i]) || !allow_portable)
          fail_msg("%s: no %s in the disassembly", cases[i].name, tgt->wanted[w]);
      }
}

/* The checks themselves can fail: unknown metadata, each budget, and a
 * mnemonic named only in a comment. */
static void the_checks_reject_unknown_metadata_and_misses(void **st) {
  (void)st;
  const isa_target *was = tgt;
  tgt = &targets[0]; /* gfx950's budgets */
  const uq_code_info ok = {.isa = "amdgcn-amd-amdhsa--gfx950", .vgprs = 100,
                           .sgprs = 40, .agprs = 20, .registers = 120,
                           .lds_bytes = 9000, .scratch_bytes = 0};
  assert_string_equal(budget_problem(&ok, 8), "");
  uq_code_info bad = ok;
  bad.agprs = -1;
  assert_string_equal(budget_problem(&bad, 8), "unknown metadata");
  bad = ok;
  bad.scratch_bytes = 16;
  assert_string_equal(budget_problem(&bad, 8), "scratch is not 0");
  bad = ok;
  bad.agprs = 29;
  assert_string_equal(budget_problem(&bad, 8), "arch + acc VGPRs above the budget");
  bad = ok;
  bad.lds_bytes = LDS_QG16;
  assert_string_equal(budget_problem(&bad, 16), "");
  assert_string_equal(budget_problem(&bad, 8), "LDS above the budget");
  assert_true(has_mnemonic("\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5]\n",
                           "v_mfma_f32_16x16x16_bf16"));
  assert_false(has_mnemonic("; v_mfma_f32_16x16x16_bf16\n\tv_mfma_f32_16x16x16_bf16_x v0\n",
                            "v_mfma_f32_16x16x16_bf16"));
  assert_true(has_mnemonic("\tv_cvt_pk_f32_fp8_sdwa v[6:7], s8 src0_sel:WORD_1\n",
                           "v_cvt_pk_f32_fp8"));
  assert_false(has_mnemonic("\tv_cvt_pk_f32_fp8_sdwax v0\n", "v_cvt_pk_f32_fp8"));
  /* gfx942's budgets: 168 registers, 16 x 256 + 512 bytes of LDS */
  tgt = &targets[1];
  bad = ok;
  bad.lds_bytes = 4608;
  bad.agprs = 60;
  assert_string_equal(budget_problem(&bad, 8), "");
  bad.agprs = 69;
  assert_string_equal(budget_problem(&bad, 8), "arch + acc VGPRs above the budget");
  bad = ok;
  bad.lds_bytes = 4608;
  assert_string_equal(budget_problem(&bad, 8), "");
  bad.lds_bytes = 4609;
  assert_string_equal(budget_problem(&bad, 8), "LDS above the budget");
  tgt = was;
}

int main(int argc, char **argv) {
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++)
    if (argc == 2 && strcmp(argv[1], targets[t].name) == 0)
      tgt = &targets[t];
  if (tgt == NULL) {
    fprintf(stderr, "usage: %s gfx950|gfx942\n", argv[0]);
    return 2;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_checks_reject_unknown_metadata_and_misses),
      cmocka_unit_test(every_key_plans_the_targets_layer),
      cmocka_unit_test(metadata_is_known_and_scratch_is_zero),
      cmocka_unit_test(registers_and_lds_within_the_layer_budget),
      cmocka_unit_test(the_layers_instructions_present),
  };
  return cmocka_run_group_tests(tests, compile_all, cleanup);
}
