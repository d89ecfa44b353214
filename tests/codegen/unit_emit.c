/* Source emission (lib/codegen/emit.c): determinism, the constants block, the
 * symbol, route checks and the embedded templates. Expected values are
 * derived here from the keys, never from the emitter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/codegen/emit.h"
#include "lib/codegen/target.h"
#include "lib/base/alloc.h"
#include "uqjit.h"

/* Paths under templates/; the embedded name is the base name. */
static const char *const template_names[] = {
    "common/uq_abi.h",          "prelude/prelude_nvrtc.hip",
    "prelude/prelude_hiprtc.hip", "prelude/prelude_clang.hip",
    "common/numerics.hip",      "common/layer_common.hip",
    "portable/layer_portable.hip",
    "portable/decode.hip",      "passes/reduce.hip",
    "passes/prologue.hip",      "passes/store.hip",
};
#define TEMPLATE_COUNT (sizeof template_names / sizeof template_names[0])

static void set_target(uq_key *k, const char *target) {
  memset(k->target, 0, sizeof k->target);
  assert_int_equal(uq__target_parse(target, k->target, sizeof k->target, NULL),
                   0);
}

static uq_key decode_key(const char *target, int qg, int bs, int fuse) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = UQ_KERNEL_DECODE;
  k.dtype = UQ_DTYPE_BF16;
  k.head_dim = 256;
  k.num_kv_heads = 2;
  k.num_partitions = 16;
  k.max_blocks_per_seq = 2048 / bs;
  k.query_group_size = qg;
  k.kv_block_size = bs;
  k.padded_slot = 272;
  k.fuse_qrot = fuse;
  k.tile_groups_per_partition = 1;
  k.scale_e8 = 6250000; /* 0.0625 */
  k.stride_q_head = 256;
  k.stride_q_seq = (int64_t)qg * 2 * 256;
  set_target(&k, target);
  return k;
}

static uq_key small_key(uint32_t kind, const char *target) {
  uq_key k;
  memset(&k, 0, sizeof k);
  k.kind = kind;
  k.dtype = UQ_DTYPE_FP16;
  k.head_dim = 128;
  k.num_kv_heads = 4;
  if (kind == UQ_KERNEL_STORE) {
    k.padded_slot = 136;
  } else {
    k.query_group_size = 6;
    if (kind == UQ_KERNEL_REDUCE)
      k.num_partitions = 8;
  }
  set_target(&k, target);
  return k;
}

static uq__route route_for(const char *target) {
  return strncmp(target, "sm_", 3) == 0 ? UQ__ROUTE_NVRTC : UQ__ROUTE_CLANG;
}

/* The source of key for route (asserts success); caller frees. */
static char *gen(const uq_key *k, uq__route route, size_t *len) {
  uq__buf b;
  uq__buf_init(&b);
  int rc = uq__gen_source(k, route, &b);
  if (rc != 0)
    fail_msg("uq__gen_source: %s", uq_last_error());
  char *s = uq__buf_take(&b, len);
  assert_non_null(s);
  return s;
}

static void emit_source_is_identical_across_calls(void **state) {
  (void)state;
  uq_key k = decode_key("gfx950", 8, 32, 1);
  size_t n1, n2;
  char *a = gen(&k, UQ__ROUTE_CLANG, &n1);
  char *b = gen(&k, UQ__ROUTE_CLANG, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(a, b, n1);
  uq_free(a);
  uq_free(b);
}

static void emit_source_is_identical_across_processes(void **state) {
  (void)state;
  uq_key k = decode_key("sm_90", 16, 64, 0);
  size_t n;
  char *mine = gen(&k, UQ__ROUTE_NVRTC, &n);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    uq__buf b;
    uq__buf_init(&b);
    int rc = uq__gen_source(&k, UQ__ROUTE_NVRTC, &b);
    size_t off = 0;
    while (rc == 0 && off < b.len) {
      ssize_t w = write(fds[1], b.data + off, b.len - off);
      if (w <= 0)
        _exit(2);
      off += (size_t)w;
    }
    _exit(rc == 0 ? 0 : 1);
  }
  close(fds[1]);
  char *theirs = malloc(n + 1);
  assert_non_null(theirs);
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fds[0], theirs + got, n + 1 - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
    if (got == n + 1)
      break;
  }
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(got, n);
  assert_memory_equal(mine, theirs, n);
  free(theirs);
  uq_free(mine);
}

/* The float a "constexpr float NAME = <literal>;" line spells. */
static float constant_float(const char *src, const char *name) {
  char pat[96];
  snprintf(pat, sizeof pat, "constexpr float %s = ", name);
  const char *p = strstr(src, pat);
  if (p == NULL)
    fail_msg("no %s in the source", name);
  return strtof(p + strlen(pat), NULL);
}

static void expect_line(const char *src, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (strstr(src, line) == NULL)
    fail_msg("missing in the source: %s", line);
}

static void emit_source_holds_the_key_constants(void **state) {
  (void)state;
  const int qgs[] = {6, 8, 16};
  const int bss[] = {16, 128};
  for (int a = 0; a < 3; a++) {
    for (int c = 0; c < 2; c++) {
      uq_key k = decode_key(c ? "sm_90" : "gfx942", qgs[a], bss[c], c);
      k.scale_e8 = 8838835 + a; /* about 1/sqrt(128), not a power of two */
      size_t n;
      char *s = gen(&k, route_for(k.target), &n);
      expect_line(s, "constexpr int UQ_HEAD_DIM = %d;\n", k.head_dim);
      expect_line(s, "constexpr int UQ_QG = %d;\n", qgs[a]);
      expect_line(s, "constexpr int UQ_NUM_KV_HEADS = %d;\n", k.num_kv_heads);
      expect_line(s, "constexpr int UQ_NUM_PARTITIONS = %d;\n", k.num_partitions);
      expect_line(s, "constexpr int UQ_TGPP = %d;\n", k.tile_groups_per_partition);
      expect_line(s, "constexpr int UQ_BLOCK_SIZE = %d;\n", bss[c]);
      expect_line(s, "constexpr int UQ_MAX_BLOCKS = %d;\n", 2048 / bss[c]);
      expect_line(s, "constexpr int UQ_PADDED_SLOT = %d;\n", 272);
      expect_line(s, "constexpr bool UQ_FUSE_QROT = %s;\n", c ? "true" : "false");
      expect_line(s, "constexpr long long UQ_Q_STRIDE_SEQ = %lldLL;\n",
                  (long long)k.stride_q_seq);
      expect_line(s, "constexpr int UQ_BLOCK_THREADS = %d;\n", c ? 128 : 64);
      expect_line(s, "constexpr bool UQ_OUT_BF16 = true;\n");
      float want = (float)((double)k.scale_e8 / 1e8);
      assert_true(constant_float(s, "UQ_SCALE") == want);
      assert_true(constant_float(s, "UQ_FWHT_NORM") == 0.0625f);
      char sym[256];
      assert_true(uq__gen_symbol(&k, sym, sizeof sym) > 0);
      expect_line(s, "#define UQ_KERNEL_NAME %s\n", sym);
      uq_free(s);
    }
  }
  /* A power-of-two scale is spelled exactly; D = 128's norm is the fp32
   * rounding of 1/sqrt(128). */
  uq_key k = decode_key("gfx950", 8, 32, 1);
  size_t n;
  char *s = gen(&k, UQ__ROUTE_CLANG, &n);
  expect_line(s, "constexpr float UQ_SCALE = 0x1.000000p-4f;");
  uq_free(s);
  uq_key p = small_key(UQ_KERNEL_PROLOGUE, "gfx950");
  s = gen(&p, UQ__ROUTE_CLANG, &n);
  assert_true(constant_float(s, "UQ_FWHT_NORM") == (float)0.08838834764831845);
  uq_free(s);
}

static void emit_distinct_keys_give_distinct_sources_and_symbols(void **state) {
  (void)state;
  uq_key keys[8];
  keys[0] = decode_key("gfx950", 8, 32, 1);
  keys[1] = decode_key("gfx950", 8, 32, 0);
  keys[2] = decode_key("gfx950", 16, 32, 1);
  keys[3] = decode_key("gfx950", 8, 64, 1);
  keys[4] = decode_key("gfx950", 8, 32, 1);
  keys[4].scale_e8 += 1;
  keys[5] = decode_key("gfx950:sramecc+", 8, 32, 1);
  keys[6] = decode_key("gfx950:sramecc-", 8, 32, 1);
  keys[7] = decode_key("gfx942", 8, 32, 1);
  char *srcs[8];
  size_t lens[8];
  char syms[8][256];
  for (int i = 0; i < 8; i++) {
    srcs[i] = gen(&keys[i], UQ__ROUTE_CLANG, &lens[i]);
    int len = uq__gen_symbol(&keys[i], syms[i], sizeof syms[i]);
    assert_true(len > 0 && (size_t)len == strlen(syms[i]));
    /* A valid C identifier. */
    assert_true(syms[i][0] == '_' || (syms[i][0] >= 'a' && syms[i][0] <= 'z') ||
                (syms[i][0] >= 'A' && syms[i][0] <= 'Z'));
    for (int c = 0; syms[i][c]; c++) {
      char ch = syms[i][c];
      assert_true((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_');
    }
  }
  for (int i = 0; i < 8; i++) {
    for (int j = i + 1; j < 8; j++) {
      assert_false(lens[i] == lens[j] && memcmp(srcs[i], srcs[j], lens[i]) == 0);
      assert_string_not_equal(syms[i], syms[j]);
    }
  }
  for (int i = 0; i < 8; i++)
    uq_free(srcs[i]);
  /* Like snprintf: the needed length even when the buffer is short. */
  char tiny[8];
  int need = uq__gen_symbol(&keys[0], tiny, sizeof tiny);
  assert_int_equal(need, (int)strlen(syms[0]));
  assert_int_equal(strlen(tiny), sizeof tiny - 1);
  assert_memory_equal(tiny, syms[0], sizeof tiny - 1);
}

static void emit_every_kind_and_route(void **state) {
  (void)state;
  static const struct {
    const char *target;
    uq__route route;
    const char *marker;
  } routes[] = {
      {"sm_90", UQ__ROUTE_NVRTC, "#define UQ_ROUTE_NVRTC 1"},
      {"gfx90a", UQ__ROUTE_HIPRTC, "#define UQ_ROUTE_HIPRTC 1"},
      {"gfx950", UQ__ROUTE_CLANG, "#define UQ_ROUTE_CLANG 1"},
  };
  static const struct {
    uint32_t kind;
    const char *tpl;
  } kinds[] = {
      {UQ_KERNEL_DECODE, "/* ---- decode.hip ---- */"},
      {UQ_KERNEL_REDUCE, "/* ---- reduce.hip ---- */"},
      {UQ_KERNEL_PROLOGUE, "/* ---- prologue.hip ---- */"},
      {UQ_KERNEL_STORE, "/* ---- store.hip ---- */"},
  };
  for (size_t r = 0; r < 3; r++) {
    for (size_t c = 0; c < 4; c++) {
      uq_key k = kinds[c].kind == UQ_KERNEL_DECODE
                     ? decode_key(routes[r].target, 6, 16, 1)
                     : small_key(kinds[c].kind, routes[r].target);
      size_t n;
      char *s = gen(&k, routes[r].route, &n);
      assert_int_equal(strlen(s), n);
      assert_non_null(strstr(s, routes[r].marker));
      assert_non_null(strstr(s, kinds[c].tpl));
      assert_non_null(strstr(s, "typedef struct uq_decode_params"));
      assert_non_null(strstr(s, "UQ_DEV float uq_haircut_e4m3"));
      char name[256];
      uq_key_name(&k, name, sizeof name);
      assert_non_null(strstr(s, name));
      assert_non_null(strstr(s, uq__route_name(routes[r].route)));
      /* The decode kernel is the only one with the target layer. */
      assert_true((strstr(s, "/* ---- layer_portable.hip ---- */") != NULL) ==
                  (kinds[c].kind == UQ_KERNEL_DECODE));
      uq_free(s);
    }
  }
}

static void emit_refuses_invalid_keys_and_wrong_routes(void **state) {
  (void)state;
  uq__buf b;
  uq__buf_init(&b);
  uq_key k = decode_key("gfx950", 8, 32, 1);
  k.head_dim = 100;
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  assert_int_equal(uq__gen_block_threads(&k), 0);
  assert_true(uq__gen_symbol(&k, NULL, 0) < 0);

  k = decode_key("gfx950", 8, 32, 1);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &b), UQ_EINVAL);
  assert_true(strlen(uq_last_error()) > 0);
  k = decode_key("sm_90", 8, 32, 1);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_HIPRTC, &b), UQ_EINVAL);
  assert_int_equal(uq__gen_source(&k, (uq__route)99, &b), UQ_EINVAL);
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, NULL), UQ_EINVAL);
  /* Nothing was appended by the refusals. */
  assert_int_equal(b.len, 0);
  uq__buf_free(&b);
}

static void emit_block_threads_follow_the_launch_contract(void **state) {
  (void)state;
  uq_key k = decode_key("gfx950", 8, 32, 1);
  assert_int_equal(uq__gen_block_threads(&k), 64);
  k = decode_key("sm_90", 8, 32, 1);
  assert_int_equal(uq__gen_block_threads(&k), 128);
  k = small_key(UQ_KERNEL_REDUCE, "sm_90");
  assert_int_equal(uq__gen_block_threads(&k), 256);
  k = small_key(UQ_KERNEL_STORE, "gfx942");
  assert_int_equal(uq__gen_block_threads(&k), 128); /* one per element */
  k = small_key(UQ_KERNEL_PROLOGUE, "gfx942");
  assert_int_equal(uq__gen_block_threads(&k), 128);
}

/* Variant 1 is the gfx950 layer on gfx950, the gfx942 layer on gfx942
 * (clang and hipRTC routes alike) and the mma.sync layer on sm_90;
 * variants 3 and 4 are the same gfx950 and gfx942 kernels with the
 * emulated primitives, on NVIDIA sm_90 and newer only. */
static void emit_picks_the_layer_of_variant_and_target(void **state) {
  (void)state;
  static const uq__route amd_routes[] = {UQ__ROUTE_CLANG, UQ__ROUTE_HIPRTC};
  for (size_t r = 0; r < 2; r++) {
    uq_key k = decode_key("gfx950", 16, 64, 1);
    k.variant = UQ_VARIANT_MATRIX;
    size_t n;
    char *s = gen(&k, amd_routes[r], &n);
    assert_non_null(strstr(s, "/* ---- gfx950_maps.hip ---- */"));
    assert_non_null(strstr(s, "/* ---- gfx950_prims_amd.hip ---- */"));
    assert_non_null(strstr(s, "/* ---- decode_gfx950.hip ---- */"));
    assert_null(strstr(s, "/* ---- gfx950_prims_emu.hip ---- */"));
    assert_null(strstr(s, "/* ---- decode.hip ---- */"));
    assert_non_null(strstr(s, "constexpr int UQ_VARIANT = 1;"));
    uq_free(s);
  }
  for (size_t r = 0; r < 2; r++) {
    uq_key k = decode_key("gfx942:sramecc+:xnack-", 8, 32, 1);
    k.variant = UQ_VARIANT_MATRIX;
    size_t n;
    char *s = gen(&k, amd_routes[r], &n);
    const char *at = strstr(s, "/* ---- gfx942_maps.hip ---- */");
    assert_non_null(at);
    at = strstr(at, "/* ---- cdna_prims_amd.hip ---- */");
    assert_non_null(at);
    at = strstr(at, "/* ---- gfx942_prims_amd.hip ---- */");
    assert_non_null(at);
    assert_non_null(strstr(at, "/* ---- decode_gfx942.hip ---- */"));
    assert_null(strstr(s, "/* ---- decode_gfx950.hip ---- */"));
    assert_null(strstr(s, "/* ---- gfx942_prims_emu.hip ---- */"));
    assert_non_null(strstr(s, "constexpr int UQ_BLOCK_THREADS = 64;"));
    uq_free(s);
  }
  {
    uq_key k = decode_key("sm_90a", 8, 32, 1);
    k.variant = UQ_VARIANT_GFX942_EMU;
    size_t n;
    char *s = gen(&k, UQ__ROUTE_NVRTC, &n);
    const char *at = strstr(s, "/* ---- gfx942_maps.hip ---- */");
    assert_non_null(at);
    at = strstr(at, "/* ---- cdna3_layouts.hip ---- */");
    assert_non_null(at);
    at = strstr(at, "/* ---- gfx942_prims_emu.hip ---- */");
    assert_non_null(at);
    assert_non_null(strstr(at, "/* ---- decode_gfx942.hip ---- */"));
    assert_null(strstr(s, "/* ---- gfx942_prims_amd.hip ---- */"));
    assert_null(strstr(s, "/* ---- cdna4_layouts.hip ---- */"));
    assert_non_null(strstr(s, "constexpr int UQ_VARIANT = 4;"));
    assert_int_equal(uq__gen_block_threads(&k), 64);
    uq_free(s);
  }
  uq_key k = decode_key("sm_90", 16, 64, 1);
  k.variant = UQ_VARIANT_GFX950_EMU;
  size_t n;
  char *s = gen(&k, UQ__ROUTE_NVRTC, &n);
  const char *at = strstr(s, "/* ---- gfx950_maps.hip ---- */");
  assert_non_null(at);
  at = strstr(at, "/* ---- cdna4_layouts.hip ---- */");
  assert_non_null(at);
  at = strstr(at, "/* ---- gfx950_prims_emu.hip ---- */");
  assert_non_null(at);
  assert_non_null(strstr(at, "/* ---- decode_gfx950.hip ---- */"));
  assert_null(strstr(s, "/* ---- gfx950_prims_amd.hip ---- */"));
  assert_non_null(strstr(s, "constexpr int UQ_VARIANT = 3;"));
  assert_non_null(strstr(s, "constexpr int UQ_BLOCK_THREADS = 64;"));
  assert_int_equal(uq__gen_block_threads(&k), 64);
  uq_free(s);
  k.variant = UQ_VARIANT_MATRIX;
  s = gen(&k, UQ__ROUTE_NVRTC, &n);
  assert_non_null(strstr(s, "/* ---- decode_mma_sm90.hip ---- */"));
  assert_null(strstr(s, "/* ---- decode_gfx950.hip ---- */"));
  uq_free(s);

  uq__buf b;
  uq__buf_init(&b);
  k = decode_key("gfx950", 16, 64, 1);
  k.variant = UQ_VARIANT_GFX950_EMU; /* the emulation is NVIDIA's */
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "gfx950-emu"));
  k = decode_key("sm_80", 16, 64, 1);
  k.variant = UQ_VARIANT_GFX950_EMU;
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_NVRTC, &b), UQ_EINVAL);
  k = decode_key("gfx90a", 16, 64, 1);
  k.variant = UQ_VARIANT_MATRIX; /* no matrix layer on gfx90a */
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  k = decode_key("gfx942", 16, 64, 1);
  k.variant = UQ_VARIANT_GFX942_EMU; /* the emulation is NVIDIA's */
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "gfx942-emu"));
  k = decode_key("gfx950", 16, 64, 1);
  k.variant = UQ_VARIANT_MATRIX;
  k.head_dim = 128;
  k.stride_q_head = 128;
  assert_int_equal(uq__gen_source(&k, UQ__ROUTE_CLANG, &b), UQ_EINVAL);
  assert_int_equal(b.len, 0);
  uq__buf_free(&b);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n == cap) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    if (r == 0)
      break;
    n += r;
  }
  fclose(f);
  *len = n;
  return buf;
}

static void emit_embedded_templates_equal_the_files(void **state) {
  (void)state;
  const char *root = getenv("UQ_SOURCE_ROOT");
  if (root == NULL)
    skip();
  for (size_t i = 0; i < TEMPLATE_COUNT; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/%s", root, template_names[i]);
    size_t flen = 0;
    char *file = read_file(path, &flen);
    if (file == NULL)
      fail_msg("cannot read %s", path);
    size_t elen = 0;
    const char *base = strrchr(template_names[i], '/') + 1;
    const char *emb = uq__template_text(base, &elen);
    if (emb == NULL)
      fail_msg("%s is not embedded", template_names[i]);
    assert_int_equal(elen, flen);
    assert_memory_equal(emb, file, flen);
    assert_int_equal(emb[elen], '\0');
    free(file);
  }
  assert_null(uq__template_text("no_such.hip", NULL));
  /* A source carries its templates verbatim. */
  uq_key k = decode_key("gfx950", 8, 32, 1);
  size_t n, dlen;
  char *s = gen(&k, UQ__ROUTE_CLANG, &n);
  const char *dec = uq__template_text("decode.hip", &dlen);
  assert_non_null(strstr(s, dec));
  uq_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(emit_source_is_identical_across_calls),
      cmocka_unit_test(emit_source_is_identical_across_processes),
      cmocka_unit_test(emit_source_holds_the_key_constants),
      cmocka_unit_test(emit_distinct_keys_give_distinct_sources_and_symbols),
      cmocka_unit_test(emit_every_kind_and_route),
      cmocka_unit_test(emit_refuses_invalid_keys_and_wrong_routes),
      cmocka_unit_test(emit_block_threads_follow_the_launch_contract),
      cmocka_unit_test(emit_picks_the_layer_of_variant_and_target),
      cmocka_unit_test(emit_embedded_templates_equal_the_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
