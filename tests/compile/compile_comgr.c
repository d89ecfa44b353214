/* comgr as the first reader of AMD code objects (suite 'compile'): its
 * metadata agrees with the built-in ELF note reader (each checks the
 * other), it disassembles what its LLVM knows, and everything it cannot do
 * (a processor newer than it, a corrupt object, no library at all) falls
 * back to the ELF reader and llvm-objdump without an error or a crash.
 * Cases needing comgr, a compiler or llvm-objdump skip when it is absent;
 * the program exits 77 when no AMD compiler is found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/compile/comgr.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "lib/base/error.h"

/* 64 floats of LDS: the group segment is at least 256 bytes. */
static const char hiprtc_src[] =
    "extern \"C\" __global__ void uq_test_lds(float *p) {\n"
    "  __shared__ float s[64];\n"
    "  s[threadIdx.x] = p[threadIdx.x];\n"
    "  __syncthreads();\n"
    "  p[threadIdx.x] = s[63 - threadIdx.x];\n"
    "}\n";

/* -nogpuinc: no HIP headers, so attributes and builtins are spelled out. */
static const char clang_src[] =
    "extern \"C\" __attribute__((global)) void uq_test_lds(float *p) {\n"
    "  __attribute__((shared)) static float s[64];\n"
    "  unsigned t = __builtin_amdgcn_workitem_id_x();\n"
    "  s[t] = p[t];\n"
    "  __builtin_amdgcn_s_barrier();\n"
    "  p[t] = s[63 - t];\n"
    "}\n";

typedef struct object {
  const char *what;
  const char *target;
  void *obj;
  size_t len;
} object;

/* gfx90a from the default route (hipRTC on Debian 12: code object v4),
 * gfx90a and gfx950 from clang-22 (code object v5/v6). */
enum { GFX90A_DEFAULT, GFX90A_CLANG, GFX950_CLANG, N_OBJECTS };
static object objects[N_OBJECTS] = {
    {"gfx90a (default compiler)", "gfx90a", NULL, 0},
    {"gfx90a (clang)", "gfx90a", NULL, 0},
    {"gfx950 (clang)", "gfx950", NULL, 0},
};

static void clear_env(void) {
  unsetenv("UQJIT_AMD_COMPILER");
  unsetenv("UQJIT_COMGR_LIB");
}

static void compile_one(object *o, const char *compiler) {
  const uq__compiler *cc = NULL;
  clear_env();
  if (compiler != NULL)
    setenv("UQJIT_AMD_COMPILER", compiler, 1);
  int rc = uq__compiler_for_target(o->target, &cc);
  if (rc == 0) {
    const char *src =
        uq__compiler_route(cc) == UQ__ROUTE_CLANG ? clang_src : hiprtc_src;
    rc = uq__compiler_compile(cc, o->target, src, strlen(src), "uq_test",
                              &o->obj, &o->len);
  }
  if (rc != 0)
    fprintf(stderr, "%s: not compiled: %s\n", o->what, uq_last_error());
  clear_env();
}

static int setup_objects(void **state) {
  (void)state;
  compile_one(&objects[GFX90A_DEFAULT], NULL);
  compile_one(&objects[GFX90A_CLANG], "clang");
  compile_one(&objects[GFX950_CLANG], "clang");
  return 0;
}

static int teardown_objects(void **state) {
  (void)state;
  for (int i = 0; i < N_OBJECTS; i++)
    uq__free(objects[i].obj);
  return 0;
}

static const object *need(int which) {
  const object *o = &objects[which];
  if (o->obj == NULL) {
    print_message("no compiler produced %s\n", o->what);
    skip();
  }
  return o;
}

static void comgr_metadata_or_skip(const object *o, uq_code_info *info) {
  memset(info, 0, sizeof *info);
  int rc = uq__comgr_metadata(o->obj, o->len, info);
  if (rc == UQ_ENOENT) {
    print_message("comgr not found: %s\n", uq_last_error());
    skip();
  }
  if (rc != 0)
    print_message("%s: %s\n", o->what, uq_last_error());
  assert_int_equal(rc, 0);
}

/* The built-in reader alone: comgr made unloadable. */
static void elf_reader_info(const object *o, uq_code_info *info) {
  setenv("UQJIT_COMGR_LIB", "/nonexistent.so", 1);
  int rc = uq__code_info_from_object(o->target, o->obj, o->len, info);
  unsetenv("UQJIT_COMGR_LIB");
  assert_int_equal(rc, 0);
}

static void assert_same_resources(const object *o) {
  uq_code_info by_comgr, by_elf;
  comgr_metadata_or_skip(o, &by_comgr);
  elf_reader_info(o, &by_elf);
  print_message("%s: comgr isa '%s' vgpr %d sgpr %d agpr %d lds %d "
                "scratch %d\n", o->what, by_comgr.isa, by_comgr.vgprs,
                by_comgr.sgprs, by_comgr.agprs, by_comgr.lds_bytes,
                by_comgr.scratch_bytes);
  assert_int_equal(by_comgr.vgprs, by_elf.vgprs);
  assert_int_equal(by_comgr.sgprs, by_elf.sgprs);
  assert_int_equal(by_comgr.agprs, by_elf.agprs);
  assert_int_equal(by_comgr.registers, by_elf.registers);
  assert_int_equal(by_comgr.lds_bytes, by_elf.lds_bytes);
  assert_int_equal(by_comgr.scratch_bytes, by_elf.scratch_bytes);
  /* Agreement alone could be two identical mistakes: the values must also
   * be plausible for this kernel (a 256-byte LDS array, no spills, a
   * loaded pointer, at most 512 VGPRs per lane). */
  assert_true(by_comgr.lds_bytes >= 256);
  assert_int_equal(by_comgr.scratch_bytes, 0);
  assert_true(by_comgr.vgprs >= 1 && by_comgr.vgprs <= 512);
  assert_true(by_comgr.sgprs >= 2);
  assert_true(by_comgr.agprs >= 0); /* gfx90a has accumulation registers */
  assert_non_null(strstr(by_comgr.isa, o->target));
  assert_non_null(strstr(by_elf.isa, o->target));
}

static void comgr_metadata_of_gfx90a_v4_matches_elf_reader(void **state) {
  (void)state;
  assert_same_resources(need(GFX90A_DEFAULT));
}

static void comgr_metadata_of_gfx90a_clang_matches_elf_reader(void **state) {
  (void)state;
  assert_same_resources(need(GFX90A_CLANG));
}

static void comgr_disassembly_or_skip(const object *o, uq__buf *b) {
  uq__buf_init(b);
  int rc = uq__comgr_disassemble(o->target, o->obj, o->len, b);
  if (rc == UQ_ENOENT) {
    print_message("comgr not found: %s\n", uq_last_error());
    skip();
  }
  if (rc != 0)
    print_message("%s: %s\n", o->what, uq_last_error());
  assert_int_equal(rc, 0);
  assert_non_null(b->data);
}

static void assert_gfx90a_disassembly(const object *o) {
  uq__buf b;
  comgr_disassembly_or_skip(o, &b);
  assert_non_null(strstr(b.data, "s_endpgm"));
  assert_non_null(strstr(b.data, "s_barrier"));
  assert_non_null(strstr(b.data, "ds_write"));
  assert_non_null(strstr(b.data, "uq_test_lds"));
  uq__buf_free(&b);

  /* The public call takes the comgr route and says so. */
  char *text = NULL;
  uq_code_info info;
  assert_int_equal(uq_code_disassemble(o->target, o->obj, o->len, &text,
                                       &info),
                   0);
  const char *nl = strchr(text, '\n');
  assert_non_null(nl);
  char head[256];
  snprintf(head, sizeof head, "%.*s", (int)(nl - text), text);
  assert_non_null(strstr(head, "resources read by comgr"));
  assert_non_null(strstr(head, "disassembly by comgr"));
  assert_non_null(strstr(text, "s_endpgm"));
  assert_true(info.lds_bytes >= 256);
  uq_free(text);
}

static void comgr_disassembles_gfx90a_v4(void **state) {
  (void)state;
  assert_gfx90a_disassembly(need(GFX90A_DEFAULT));
}

/* comgr 2.4 cannot name the ISA of a v5/v6 object itself; the metadata's
 * amdhsa.target stands in. */
static void comgr_disassembles_gfx90a_clang(void **state) {
  (void)state;
  assert_gfx90a_disassembly(need(GFX90A_CLANG));
}

static void gfx950_has_metadata_and_disassembly_by_either_route(void **state) {
  (void)state;
  const object *o = need(GFX950_CLANG);
  uq_code_info info;
  assert_int_equal(uq__code_info_from_object("gfx950", o->obj, o->len, &info),
                   0);
  assert_non_null(strstr(info.isa, "gfx950"));
  assert_true(info.lds_bytes >= 256);
  assert_int_equal(info.scratch_bytes, 0);
  assert_true(info.vgprs >= 1 && info.vgprs <= 512);

  uq__buf b;
  uq__buf_init(&b);
  int rc = uq__comgr_disassemble("gfx950", o->obj, o->len, &b);
  print_message("comgr on gfx950: %d %s\n", rc, rc != 0 ? uq_last_error() : "");
  assert_true(rc == 0 || rc == UQ_EINVAL || rc == UQ_ENOENT);
  if (rc == 0)
    assert_non_null(strstr(b.data, "s_endpgm"));
  else
    assert_int_equal(b.len, 0); /* nothing half-written */
  uq__buf_free(&b);

  char *text = NULL;
  uq_code_info dinfo;
  rc = uq_code_disassemble("gfx950", o->obj, o->len, &text, &dinfo);
  if (rc == UQ_ENOENT) {
    print_message("no disassembler: %s\n", uq_last_error());
    skip();
  }
  assert_int_equal(rc, 0);
  assert_non_null(strstr(text, "s_endpgm"));
  assert_non_null(strstr(text, "disassembly by"));
  assert_int_equal(dinfo.lds_bytes, info.lds_bytes);
  assert_int_equal(dinfo.vgprs, info.vgprs);
  uq_free(text);
}

static void missing_comgr_library_falls_back_cleanly(void **state) {
  (void)state;
  const object *o = need(GFX90A_DEFAULT);
  setenv("UQJIT_COMGR_LIB", "/nonexistent.so", 1);
  uq_code_info info;
  memset(&info, 0, sizeof info);
  int rc = uq__comgr_metadata(o->obj, o->len, &info);
  assert_int_equal(rc, UQ_ENOENT);
  assert_non_null(strstr(uq_last_error(), "UQJIT_COMGR_LIB"));
  uq__buf b;
  uq__buf_init(&b);
  assert_int_equal(uq__comgr_disassemble("gfx90a", o->obj, o->len, &b),
                   UQ_ENOENT);
  assert_int_equal(b.len, 0);
  uq__buf_free(&b);

  assert_int_equal(uq__code_info_from_object("gfx90a", o->obj, o->len, &info),
                   0);
  assert_true(info.vgprs >= 1);
  assert_true(info.lds_bytes >= 256);
  char *text = NULL;
  rc = uq_code_disassemble("gfx90a", o->obj, o->len, &text, NULL);
  unsetenv("UQJIT_COMGR_LIB");
  if (rc == UQ_ENOENT) {
    print_message("no llvm-objdump: %s\n", uq_last_error());
    skip();
  }
  assert_int_equal(rc, 0);
  assert_non_null(strstr(text, "resources read by ELF note reader"));
  assert_non_null(strstr(text, "objdump"));
  assert_null(strstr(text, "disassembly by comgr"));
  assert_non_null(strstr(text, "s_endpgm"));
  uq_free(text);
}

/* Every reader on a damaged copy: any of the documented statuses is fine,
 * a crash (or an ASan report) is not. A successful comgr disassembly
 * always yields text. */
static void try_all_readers(const char *target, const void *obj, size_t len,
                            int spawn_tools) {
  uq_code_info info;
  memset(&info, 0, sizeof info);
  int rc = uq__comgr_metadata(obj, len, &info);
  assert_true(rc == 0 || rc == UQ_EINVAL || rc == UQ_ENOENT);
  uq__buf b;
  uq__buf_init(&b);
  rc = uq__comgr_disassemble(target, obj, len, &b);
  assert_true(rc == 0 || rc == UQ_EINVAL || rc == UQ_ENOENT);
  assert_true(rc != 0 || b.data != NULL);
  assert_true(rc == 0 || b.len == 0);
  uq__buf_free(&b);
  rc = uq__code_info_from_object(target, obj, len, &info);
  assert_true(rc == 0 || rc == UQ_EINVAL);
  if (spawn_tools) {
    char *text = NULL;
    rc = uq_code_disassemble(target, obj, len, &text, NULL);
    assert_true(rc == 0 || rc == UQ_EINVAL || rc == UQ_ENOENT ||
                rc == UQ_EIO);
    assert_true((rc == 0) == (text != NULL));
    uq_free(text);
  }
}

static void corrupt_objects_give_errors_or_fallback(void **state) {
  (void)state;
  int tried = 0;
  for (int i = 0; i < N_OBJECTS; i++) {
    const object *o = &objects[i];
    if (o->obj == NULL)
      continue;
    tried++;
    uint8_t *copy = uq__malloc(o->len);
    assert_non_null(copy);
    /* Truncations: inside the ELF header, inside the section table or
     * notes, and just short of the end. */
    const size_t cuts[] = {16, 63, 64, 200, o->len / 4, o->len / 2,
                           o->len - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
      size_t n = cuts[c] < o->len ? cuts[c] : o->len - 1;
      memcpy(copy, o->obj, n);
      try_all_readers(o->target, copy, n, c == 5);
    }
    /* Runs of flipped bytes at 48 places spread over the object (the
     * header fields, the note's msgpack, the code, the section table). */
    for (size_t k = 0; k < 48; k++) {
      memcpy(copy, o->obj, o->len);
      size_t at = 20 + k * (o->len - 40) / 48;
      for (size_t j = 0; j < 8 && at + j < o->len; j++)
        copy[at + j] ^= (uint8_t)(0xa5 + j);
      try_all_readers(o->target, copy, o->len, k % 16 == 3);
    }
    uq__free(copy);
  }
  if (tried == 0)
    skip();
}

static int any_amd_compiler(void) {
  const uq__compiler *cc = NULL;
  return uq__compiler_for_target("gfx90a", &cc) == 0 ||
         uq__compiler_for_target("gfx950", &cc) == 0;
}

int main(void) {
  clear_env();
  if (!any_amd_compiler()) {
    fprintf(stderr, "no AMD compiler found: %s\n", uq_last_error());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(comgr_metadata_of_gfx90a_v4_matches_elf_reader),
      cmocka_unit_test(comgr_metadata_of_gfx90a_clang_matches_elf_reader),
      cmocka_unit_test(comgr_disassembles_gfx90a_v4),
      cmocka_unit_test(comgr_disassembles_gfx90a_clang),
      cmocka_unit_test(gfx950_has_metadata_and_disassembly_by_either_route),
      cmocka_unit_test(missing_comgr_library_falls_back_cleanly),
      cmocka_unit_test(corrupt_objects_give_errors_or_fallback),
  };
  return cmocka_run_group_tests_name("comgr", tests, setup_objects,
                                     teardown_objects);
}
