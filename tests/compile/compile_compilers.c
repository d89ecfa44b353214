/* The run-time compilers behind one interface (suite 'compile'): each route
 * builds a real code object from a tiny self-contained kernel, failures
 * carry the compiler log, selection honours the environment per call, and
 * the code-object reader and disassembler see what the compiler produced.
 * A case whose compiler is absent is skipped; the program exits 77 only
 * when no compiler at all is found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "lib/base/alloc.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "lib/base/error.h"

/* Expected values come from the ELF and AMDGPU ABI specifications, not from
 * the code under test: e_machine EM_AMDGPU = 224, EM_CUDA = 190; the low
 * byte of an AMDGPU e_flags is EF_AMDGPU_MACH (gfx90a 0x3f, gfx942 0x4c,
 * gfx950 0x4f). */
#define EM_AMDGPU 224
#define EM_CUDA 190

static const char nvrtc_src[] =
    "extern \"C\" __global__ void uq_test_write(float *p) {\n"
    "  p[threadIdx.x] = 2.0f;\n"
    "}\n";

static const char nvrtc_shared_src[] =
    "extern \"C\" __global__ void uq_test_shared(float *p) {\n"
    "  __shared__ float s[64];\n"
    "  s[threadIdx.x] = p[threadIdx.x];\n"
    "  __syncthreads();\n"
    "  p[threadIdx.x] = s[63 - threadIdx.x];\n"
    "}\n";

/* -nogpuinc: no HIP headers, so the attribute is spelled out. */
static const char clang_src[] =
    "#define __global__ __attribute__((global))\n"
    "extern \"C\" __global__ void uq_test_write(float *p) {\n"
    "  p[__builtin_amdgcn_workitem_id_x()] = 2.0f;\n"
    "}\n";

static const char hiprtc_src[] =
    "extern \"C\" __global__ void uq_test_write(float *p) {\n"
    "  p[threadIdx.x] = 2.0f;\n"
    "}\n";

static const char broken_src[] =
    "extern \"C\" __global__ void uq_test_broken(float *p) {\n"
    "  p[0] = 2.0f +;\n"
    "}\n";

static void clear_env(void) {
  unsetenv("UQJIT_AMD_COMPILER");
  unsetenv("UQJIT_CLANG");
  unsetenv("UQJIT_NVRTC_LIB");
  unsetenv("UQJIT_HIPRTC_LIB");
}

static int setup(void **state) {
  (void)state;
  clear_env();
  return 0;
}

/* The compiler for `target` through the production selection, or skip the
 * case when it is absent (so that a machine without it does not fail). */
static const uq__compiler *want(const char *target, uq__route route) {
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_for_target(target, &cc);
  if (rc == UQ_ENOCOMPILER || (rc == 0 && uq__compiler_route(cc) != route)) {
    print_message("no %d-route compiler for %s: %s\n", (int)route, target,
                  uq_last_error());
    skip();
  }
  assert_int_equal(rc, 0);
  return cc;
}

static uint16_t elf_machine(const uint8_t *p) {
  return (uint16_t)(p[18] | (p[19] << 8));
}

static void assert_elf(const void *obj, size_t len, uint16_t machine) {
  assert_non_null(obj);
  assert_true(len > 64);
  assert_memory_equal(obj, "\x7f" "ELF", 4);
  assert_int_equal(elf_machine(obj), machine);
}

static void compile_ok(const uq__compiler *cc, const char *target,
                       const char *src, void **obj, size_t *len) {
  int rc = uq__compiler_compile(cc, target, src, strlen(src), "uq_test", obj,
                                len);
  if (rc != 0)
    print_message("%s\n", uq_last_error());
  assert_int_equal(rc, 0);
}

/* NVRTC's cubin of `src` for `target` and what the ELF reader says of it;
 * the caller frees the object. */
static void *nvrtc_object_info(const char *target, const char *src, uq_code_info *info) {
  const uq__compiler *cc = want(target, UQ__ROUTE_NVRTC);
  void *obj = NULL;
  size_t len = 0;
  compile_ok(cc, target, src, &obj, &len);
  assert_elf(obj, len, EM_CUDA);
  assert_int_equal(uq__code_info_from_object(target, obj, len, info), 0);
  return obj;
}

static void nvrtc_compiles_sm90_to_a_cubin_with_register_count(void **state) {
  (void)state;
  uq_code_info info;
  void *obj = nvrtc_object_info("sm_90", nvrtc_src, &info);
  assert_string_equal(info.isa, "sm_90");
  /* Any real kernel needs a few registers and no more than the hardware
   * limit of 255; this one has no local arrays, so no stack frame. */
  assert_true(info.registers > 0 && info.registers <= 255);
  assert_int_equal(info.scratch_bytes, 0);
  assert_int_equal(info.lds_bytes, 0);
  uq__free(obj);
}

/* The cubin's ELF flags name only the number (90); the arch-specific
 * target that the warpgroup layer needs shows in the ISA line too. */
static void nvrtc_sm90a_cubin_reports_the_arch_specific_isa(void **state) {
  (void)state;
  uq_code_info info;
  void *obj = nvrtc_object_info("sm_90a", nvrtc_src, &info);
  assert_string_equal(info.isa, "sm_90a");
  uq__free(obj);
}

static void nvrtc_cubin_reports_static_shared_memory(void **state) {
  (void)state;
  uq_code_info info;
  void *obj = nvrtc_object_info("sm_90", nvrtc_shared_src, &info);
  /* 64 floats; the toolchain may add its own reserved bytes on top. */
  assert_true(info.lds_bytes >= 64 * 4);
  uq__free(obj);
}

/* The log entry point: NVRTC with ptxas's report asked for gives a log
 * that names the registers the cubin's own metadata gives; no extra
 * options give the same code with NVRTC's (possibly empty) log; options
 * past the buffer and a compiler without a log are refused. */
static void nvrtc_compile_log_gives_ptxas_report(void **state) {
  (void)state;
  const uq__compiler *cc = want("sm_90a", UQ__ROUTE_NVRTC);
  void *obj = NULL;
  size_t len = 0;
  char *log = NULL;
  int rc = uq__compiler_compile_log(cc, "sm_90a", nvrtc_src, strlen(nvrtc_src), "uq_test",
                                    "--ptxas-options=-v", &obj, &len, &log);
  if (rc != 0)
    print_message("%s\n", uq_last_error());
  assert_int_equal(rc, 0);
  assert_elf(obj, len, EM_CUDA);
  assert_non_null(log);
  uq_code_info info;
  assert_int_equal(uq__code_info_from_object("sm_90a", obj, len, &info), 0);
  const char *used = strstr(log, "Used ");
  assert_non_null(used);
  int registers = -1;
  assert_int_equal(sscanf(used, "Used %d registers", &registers), 1);
  assert_int_equal(registers, info.registers);
  uq__free(obj);
  uq__free(log);

  obj = NULL;
  log = NULL;
  assert_int_equal(uq__compiler_compile_log(cc, "sm_90a", nvrtc_src, strlen(nvrtc_src),
                                            "uq_test", NULL, &obj, &len, &log),
                   0);
  assert_non_null(obj);
  assert_non_null(log);
  assert_null(strstr(log, "Used "));
  uq__free(obj);
  uq__free(log);

  char extra[600];
  memset(extra, 'x', sizeof extra - 1);
  extra[sizeof extra - 1] = '\0';
  obj = NULL;
  log = NULL;
  assert_int_equal(uq__compiler_compile_log(cc, "sm_90a", nvrtc_src, strlen(nvrtc_src),
                                            "uq_test", extra, &obj, &len, &log),
                   UQ_EINVAL);
  assert_null(obj);
  assert_null(log);
  assert_int_equal(uq__compiler_compile_log(cc, "sm_90a", nvrtc_src, strlen(nvrtc_src),
                                            "uq_test", NULL, &obj, &len, NULL),
                   UQ_EINVAL);
}

static void clang_has_no_compile_log(void **state) {
  (void)state;
  const uq__compiler *cc = want("gfx950", UQ__ROUTE_CLANG);
  void *obj = NULL;
  size_t len = 0;
  char *log = NULL;
  assert_int_equal(uq__compiler_compile_log(cc, "gfx950", clang_src, strlen(clang_src),
                                            "uq_test", NULL, &obj, &len, &log),
                   UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "no compile log"));
  assert_null(obj);
  assert_null(log);
}

static void clang_compiles_gfx950_and_gfx942_code_objects(void **state) {
  (void)state;
  static const struct {
    const char *target;
    uint8_t mach;
  } cases[] = {{"gfx950", 0x4f}, {"gfx942", 0x4c}};
  for (size_t i = 0; i < 2; i++) {
    const uq__compiler *cc = want(cases[i].target, UQ__ROUTE_CLANG);
    void *obj = NULL;
    size_t len = 0;
    compile_ok(cc, cases[i].target, clang_src, &obj, &len);
    assert_elf(obj, len, EM_AMDGPU);
    assert_int_equal(((const uint8_t *)obj)[48], cases[i].mach);
    uq__free(obj);
  }
}

static void hiprtc_compiles_gfx90a_by_default(void **state) {
  (void)state;
  const uq__compiler *cc = want("gfx90a", UQ__ROUTE_HIPRTC);
  assert_int_equal(uq__route_for_target("gfx90a"), UQ__ROUTE_HIPRTC);
  void *obj = NULL;
  size_t len = 0;
  compile_ok(cc, "gfx90a", hiprtc_src, &obj, &len);
  assert_elf(obj, len, EM_AMDGPU);
  assert_int_equal(((const uint8_t *)obj)[48], 0x3f);
  uq__free(obj);
}

static void gfx950_is_never_routed_to_hiprtc_by_default(void **state) {
  (void)state;
  assert_int_equal(uq__route_for_target("gfx950"), UQ__ROUTE_CLANG);
  assert_int_equal(uq__route_for_target("gfx942:sramecc+:xnack-"),
                   UQ__ROUTE_CLANG);
  assert_int_equal(uq__route_for_target("sm_90"), UQ__ROUTE_NVRTC);
  assert_int_equal((int)uq__route_for_target("gfx9;rm -rf"), 0);
  const uq__compiler *cc;
  assert_int_equal(uq__compiler_for_target("sm 90", &cc), UQ_EINVAL);
}

static void hiprtc_for_gfx950_is_refused_without_crashing(void **state) {
  (void)state;
  /* Only ROCm 5's hipRTC is known to crash; find out which one is here. */
  const uq__compiler *h = want("gfx90a", UQ__ROUTE_HIPRTC);
  const char *id = uq__compiler_identity(h);
  if (strstr(id, "libamdhip64") == NULL)
    skip();
  setenv("UQJIT_AMD_COMPILER", "hiprtc", 1);
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_for_target("gfx950", &cc);
  clear_env();
  assert_int_equal(rc, UQ_ENOCOMPILER);
  assert_non_null(strstr(uq_last_error(), "gfx950"));
  assert_non_null(strstr(uq_last_error(), "UQJIT_AMD_COMPILER"));
  /* The compile entry point refuses too, whoever hands it the target. */
  void *obj = NULL;
  size_t len = 0;
  rc = uq__compiler_compile(h, "gfx950", hiprtc_src, strlen(hiprtc_src), "x",
                            &obj, &len);
  assert_int_equal(rc, UQ_ENOCOMPILER);
  assert_null(obj);
}

static void syntax_error_gives_ecompile_with_the_log(void **state) {
  (void)state;
  static const struct {
    const char *target;
    uq__route route;
  } cases[] = {{"sm_90", UQ__ROUTE_NVRTC},
               {"gfx950", UQ__ROUTE_CLANG},
               {"gfx90a", UQ__ROUTE_HIPRTC}};
  int ran = 0;
  for (size_t i = 0; i < 3; i++) {
    const uq__compiler *cc = NULL;
    if (uq__compiler_for_target(cases[i].target, &cc) != 0 ||
        uq__compiler_route(cc) != cases[i].route)
      continue;
    void *obj = NULL;
    size_t len = 0;
    int rc = uq__compiler_compile(cc, cases[i].target, broken_src,
                                  strlen(broken_src), "uq_broken", &obj, &len);
    assert_int_equal(rc, UQ_ECOMPILE);
    assert_null(obj);
    /* Every one of these compilers says "error" and points at line 2. */
    const char *log = uq_last_error();
    assert_non_null(strstr(log, "error"));
    assert_non_null(strstr(log, "2"));
    ran++;
  }
  if (ran == 0)
    skip();
}

static void identities_are_non_empty_and_stable(void **state) {
  (void)state;
  static const char *const targets[] = {"sm_90", "gfx950", "gfx90a"};
  /* Indexed by uq__route - 1. */
  static const char *const names[] = {"nvrtc ", "hiprtc ", "clang"};
  int ran = 0;
  for (size_t i = 0; i < 3; i++) {
    const uq__compiler *a = NULL, *b = NULL;
    if (uq__compiler_for_target(targets[i], &a) != 0)
      continue;
    char first[512];
    snprintf(first, sizeof first, "%s", uq__compiler_identity(a));
    assert_true(strlen(first) > 6);
    assert_non_null(strstr(first, names[uq__compiler_route(a) - 1]));
    assert_int_equal(uq__compiler_for_target(targets[i], &b), 0);
    assert_ptr_equal(a, b);
    assert_string_equal(uq__compiler_identity(b), first);
    ran++;
  }
  if (ran == 0)
    skip();
}

static void options_name_the_target_and_are_interned(void **state) {
  (void)state;
  const uq__compiler *cc = want("gfx950", UQ__ROUTE_CLANG);
  const char *o1 = uq__compiler_options(cc, "gfx950");
  const char *o2 = uq__compiler_options(cc, "gfx942");
  assert_non_null(strstr(o1, "--offload-arch=gfx950"));
  assert_non_null(strstr(o2, "--offload-arch=gfx942"));
  assert_ptr_equal(uq__compiler_options(cc, "gfx950"), o1);
  assert_non_null(strstr(o1, "-ffp-contract=fast"));
}

static void missing_clang_names_the_variable(void **state) {
  (void)state;
  setenv("UQJIT_AMD_COMPILER", "clang", 1);
  setenv("UQJIT_CLANG", "/nonexistent/clang", 1);
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_for_target("gfx950", &cc);
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", uq_last_error());
  clear_env();
  assert_int_equal(rc, UQ_ENOCOMPILER);
  assert_non_null(strstr(detail, "UQJIT_CLANG"));
  assert_non_null(strstr(detail, "/nonexistent/clang"));
  /* The override is read per call: with it gone, the default is back. */
  rc = uq__compiler_for_target("gfx950", &cc);
  assert_true(rc == 0 || rc == UQ_ENOCOMPILER);
}

static void missing_nvrtc_names_the_variable(void **state) {
  (void)state;
  setenv("UQJIT_NVRTC_LIB", "/nonexistent.so", 1);
  const uq__compiler *cc = NULL;
  int rc = uq__compiler_for_target("sm_90", &cc);
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", uq_last_error());
  clear_env();
  assert_int_equal(rc, UQ_ENOCOMPILER);
  assert_non_null(strstr(detail, "UQJIT_NVRTC_LIB"));
  assert_non_null(strstr(detail, "/nonexistent.so"));
}

static void disassembly_of_gfx950_shows_s_endpgm_and_no_scratch(void **state) {
  (void)state;
  const uq__compiler *cc = want("gfx950", UQ__ROUTE_CLANG);
  void *obj = NULL;
  size_t len = 0;
  compile_ok(cc, "gfx950", clang_src, &obj, &len);

  uq_code_info info;
  assert_int_equal(uq__code_info_from_object("gfx950", obj, len, &info), 0);
  assert_non_null(strstr(info.isa, "gfx950"));
  assert_int_equal(info.scratch_bytes, 0);
  assert_int_equal(info.lds_bytes, 0);
  /* A store of a constant to a computed address needs at least one VGPR
   * and the kernarg pointer's SGPRs; a wave has at most 512 VGPRs. */
  assert_true(info.vgprs >= 1 && info.vgprs <= 512);
  assert_true(info.sgprs >= 2);
  assert_int_equal(info.agprs, 0);

  char *text = NULL;
  uq_code_info dinfo;
  int rc = uq_code_disassemble("gfx950", obj, len, &text, &dinfo);
  uq__free(obj);
  if (rc == UQ_ENOENT) {
    print_message("%s\n", uq_last_error());
    skip();
  }
  assert_int_equal(rc, 0);
  assert_non_null(strstr(text, "s_endpgm"));
  assert_non_null(strstr(text, "global_store"));
  assert_int_equal(dinfo.scratch_bytes, 0);
  uq_free(text);
}

static void code_info_rejects_non_elf_and_truncated_input(void **state) {
  (void)state;
  uq_code_info info;
  static const char junk[128] = "not an elf";
  assert_int_equal(uq__code_info_from_object(NULL, junk, sizeof junk, &info),
                   UQ_EINVAL);
  uint8_t hdr[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  hdr[18] = EM_AMDGPU;
  hdr[40] = 0xff; /* section headers far past the end */
  hdr[41] = 0xff;
  hdr[58] = 64;
  hdr[60] = 3;
  assert_int_equal(uq__code_info_from_object(NULL, hdr, sizeof hdr, &info),
                   UQ_EINVAL);
  char *text = (char *)"x";
  assert_int_equal(uq_code_disassemble("gfx950", junk, sizeof junk, &text,
                                       NULL),
                   UQ_EINVAL);
  assert_null(text);
}

static void nvidia_disassembly_without_tools_is_enoent(void **state) {
  (void)state;
  const uq__compiler *cc = want("sm_90", UQ__ROUTE_NVRTC);
  void *obj = NULL;
  size_t len = 0;
  compile_ok(cc, "sm_90", nvrtc_src, &obj, &len);
  char *text = NULL;
  int rc = uq_code_disassemble("sm_90", obj, len, &text, NULL);
  uq__free(obj);
  if (rc == 0) {
    /* A CUDA toolkit with cuobjdump is installed: then it must be SASS. */
    assert_non_null(strstr(text, "EXIT"));
    uq_free(text);
    return;
  }
  assert_int_equal(rc, UQ_ENOENT);
  assert_non_null(strstr(uq_last_error(), "cuobjdump"));
}

static void clang_leaves_no_temporary_files(void **state) {
  (void)state;
  const uq__compiler *cc = want("gfx950", UQ__ROUTE_CLANG);
  char tmp[] = "/tmp/uq_test_tmpdir_XXXXXX";
  assert_non_null(mkdtemp(tmp));
  setenv("TMPDIR", tmp, 1);
  void *obj = NULL;
  size_t len = 0;
  int ok = uq__compiler_compile(cc, "gfx950", clang_src, strlen(clang_src),
                                "uq_test", &obj, &len);
  void *none = NULL;
  size_t none_len = 0;
  int bad = uq__compiler_compile(cc, "gfx950", broken_src, strlen(broken_src),
                                 "uq_test", &none, &none_len);
  unsetenv("TMPDIR");
  uq__free(obj);
  assert_null(none);
  /* Only the (empty) private parent "uqjit-<uid>" may remain. */
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s/uqjit-%u", tmp, (unsigned)geteuid());
  int entries = 0;
  DIR *d = opendir(tmp);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      entries++;
  closedir(d);
  int in_parent = 0;
  d = opendir(parent);
  entries -= d != NULL;
  while (d != NULL && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      in_parent++;
  if (d != NULL)
    closedir(d);
  rmdir(parent);
  rmdir(tmp);
  assert_int_equal(in_parent, 0);
  assert_int_equal(ok, 0);
  assert_int_equal(bad, UQ_ECOMPILE);
  assert_int_equal(entries, 0);
}

typedef struct job {
  const uq__compiler *cc;
  const char *target;
  const char *src;
  int rc;
  uint16_t machine;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  void *obj = NULL;
  size_t len = 0;
  j->rc = uq__compiler_compile(j->cc, j->target, j->src, strlen(j->src),
                               "uq_par", &obj, &len);
  j->machine = obj != NULL && len > 64 ? elf_machine(obj) : 0;
  uq__free(obj);
  return NULL;
}

static void compiles_run_concurrently_from_many_threads(void **state) {
  (void)state;
  job jobs[6];
  int n = 0;
  const uq__compiler *cc;
  if (uq__compiler_for_target("sm_90", &cc) == 0)
    for (int i = 0; i < 3; i++)
      jobs[n++] = (job){cc, "sm_90", nvrtc_src, -1, 0};
  if (uq__compiler_for_target("gfx950", &cc) == 0 &&
      uq__compiler_route(cc) == UQ__ROUTE_CLANG)
    for (int i = 0; i < 3; i++)
      jobs[n++] = (job){cc, i ? "gfx950" : "gfx942", clang_src, -1, 0};
  if (n == 0)
    skip();
  pthread_t th[6];
  for (int i = 0; i < n; i++)
    assert_int_equal(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
  for (int i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++) {
    assert_int_equal(jobs[i].rc, 0);
    assert_int_equal(jobs[i].machine,
                     jobs[i].target[0] == 's' ? EM_CUDA : EM_AMDGPU);
  }
}

static void info_report_lists_compilers_and_cache(void **state) {
  (void)state;
  char *text = NULL;
  assert_int_equal(uq_info_report(&text), 0);
  assert_non_null(text);
  assert_non_null(strstr(text, "compilers:"));
  assert_non_null(strstr(text, "libraries:"));
  assert_non_null(strstr(text, "cache:"));
  const uq__compiler *cc;
  if (uq__compiler_for_target("gfx950", &cc) == 0)
    assert_non_null(strstr(text, uq__compiler_identity(cc)));
  uq_free(text);
}

static int any_compiler(void) {
  static const char *const targets[] = {"sm_90", "gfx950", "gfx90a"};
  for (size_t i = 0; i < 3; i++) {
    const uq__compiler *cc;
    if (uq__compiler_for_target(targets[i], &cc) == 0)
      return 1;
  }
  return 0;
}

int main(void) {
  clear_env();
  if (!any_compiler()) {
    fprintf(stderr, "no compiler found: %s\n", uq_last_error());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(nvrtc_compiles_sm90_to_a_cubin_with_register_count, setup),
      cmocka_unit_test_setup(nvrtc_sm90a_cubin_reports_the_arch_specific_isa, setup),
      cmocka_unit_test_setup(nvrtc_cubin_reports_static_shared_memory, setup),
      cmocka_unit_test_setup(nvrtc_compile_log_gives_ptxas_report, setup),
      cmocka_unit_test_setup(clang_has_no_compile_log, setup),
      cmocka_unit_test_setup(clang_compiles_gfx950_and_gfx942_code_objects, setup),
      cmocka_unit_test_setup(hiprtc_compiles_gfx90a_by_default, setup),
      cmocka_unit_test_setup(gfx950_is_never_routed_to_hiprtc_by_default, setup),
      cmocka_unit_test_setup(hiprtc_for_gfx950_is_refused_without_crashing, setup),
      cmocka_unit_test_setup(syntax_error_gives_ecompile_with_the_log, setup),
      cmocka_unit_test_setup(identities_are_non_empty_and_stable, setup),
      cmocka_unit_test_setup(options_name_the_target_and_are_interned, setup),
      cmocka_unit_test_setup(missing_clang_names_the_variable, setup),
      cmocka_unit_test_setup(missing_nvrtc_names_the_variable, setup),
      cmocka_unit_test_setup(disassembly_of_gfx950_shows_s_endpgm_and_no_scratch, setup),
      cmocka_unit_test_setup(code_info_rejects_non_elf_and_truncated_input, setup),
      cmocka_unit_test_setup(nvidia_disassembly_without_tools_is_enoent, setup),
      cmocka_unit_test_setup(clang_leaves_no_temporary_files, setup),
      cmocka_unit_test_setup(compiles_run_concurrently_from_many_threads, setup),
      cmocka_unit_test_setup(info_report_lists_compilers_and_cache, setup),
  };
  return cmocka_run_group_tests_name("compile", tests, NULL, NULL);
}
