/* uq_code_isa_mix on hand-written llvm-objdump text: every class is
 * recognised by its mnemonic, the outermost loop is found from the
 * backward branch's simm16 (target = address + 4 + 4 * simm16), inner
 * loops are counted, and text without addresses or instructions behaves
 * as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "uqjit_tools.h"

/* Addresses 0x100 .. : a prologue, an outer loop 0x108 .. 0x134 with an
 * inner loop 0x110 .. 0x118, an epilogue. */
static const char text[] =
    "/tmp/x/code.co:\tfile format elf64-amdgpu\n"
    "\n"
    "Disassembly of section .text:\n"
    "\n"
    "0000000000000100 <k>:\n"
    "\ts_load_dwordx2 s[0:1], s[4:5], 0x0 // 000000000100: C0060002 00000000\n"
    "\ts_waitcnt lgkmcnt(0)                // 000000000104: BF8CC07F\n"
    "\tglobal_load_dwordx4 v[0:3], v4, s[0:1] // 000000000108: DC5C8000 00000004\n"
    "\tds_read_b64_tr_b16 v[6:7], v8      // 00000000010C: D9C00000 06000008\n"
    "\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3] // 000000000110: D3E10000 04020D04\n"
    "\tv_add_f32_e32 v1, v2, v3            // 000000000114: 02020702\n"
    "\ts_cbranch_vccnz 65533               // 000000000118: BF87FFFD <k+0x10>\n"
    "\tv_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[8:15], v[16:23], v[0:3], v24, v25 // 00000000011C: D3AD0000 04022108\n"
    "\tv_cvt_scalef32_pk_bf16_fp4 v0, v1, v2 // 000000000124: D2510000 00020501\n"
    "\ts_add_u32 s2, s2, 1                 // 000000000128: 80028102\n"
    "\ts_barrier                           // 00000000012C: BF8A0000\n"
    "\ts_nop 0                             // 000000000130: BF800000\n"
    "\ts_cbranch_scc1 65524                // 000000000134: BF85FFF4 <k+0x8>\n"
    "\ts_branch 1                          // 000000000138: BF820001 <k+0x40>\n"
    "\tbuffer_store_dword v0, off, s[0:3], 0 // 00000000013C: E0700000 80000000\n"
    "\ts_endpgm                            // 000000000140: BF810000\n";

static void every_class_is_counted_over_the_kernel(void **st) {
  (void)st;
  uq_isa_mix m;
  assert_int_equal(uq_code_isa_mix(text, &m), 0);
  assert_int_equal(m.kernel[UQ_ISA_SMEM], 1);
  assert_int_equal(m.kernel[UQ_ISA_WAIT], 3);   /* waitcnt, barrier, nop */
  assert_int_equal(m.kernel[UQ_ISA_VMEM], 2);   /* global_, buffer_ */
  assert_int_equal(m.kernel[UQ_ISA_LDS], 1);
  assert_int_equal(m.kernel[UQ_ISA_MFMA], 2);
  assert_int_equal(m.kernel[UQ_ISA_VALU], 2);   /* v_add, v_cvt */
  assert_int_equal(m.kernel[UQ_ISA_SALU], 1);
  assert_int_equal(m.kernel[UQ_ISA_BRANCH], 4); /* 2 cbranch, branch, endpgm */
  assert_int_equal(m.kernel[UQ_ISA_OTHER], 0);
  assert_string_equal(uq_isa_class_name(UQ_ISA_MFMA), "mfma");
  assert_null(uq_isa_class_name(UQ_ISA_CLASSES));
}

static void the_outermost_loop_is_found_from_its_backward_branch(void **st) {
  (void)st;
  uq_isa_mix m;
  assert_int_equal(uq_code_isa_mix(text, &m), 0);
  assert_int_equal(m.loop_found, 1);
  assert_true(m.loop_begin == 0x108); /* 0x134 + 4 + 4 * (65524 - 65536) */
  assert_true(m.loop_end == 0x134);
  assert_int_equal(m.inner_loops, 1);
  assert_int_equal(m.loop[UQ_ISA_VMEM], 1);
  assert_int_equal(m.loop[UQ_ISA_LDS], 1);
  assert_int_equal(m.loop[UQ_ISA_MFMA], 2);
  assert_int_equal(m.loop[UQ_ISA_VALU], 2);
  assert_int_equal(m.loop[UQ_ISA_SALU], 1);
  assert_int_equal(m.loop[UQ_ISA_WAIT], 2);
  assert_int_equal(m.loop[UQ_ISA_BRANCH], 2);
  assert_int_equal(m.loop[UQ_ISA_SMEM], 0);
}

static void forward_branches_and_missing_addresses_find_no_loop(void **st) {
  (void)st;
  uq_isa_mix m;
  const char *fwd = "\ts_cbranch_scc1 3 // 000000000100: BF850003\n"
                    "\tv_mov_b32_e32 v0, 0 // 000000000104: 7E000280\n";
  assert_int_equal(uq_code_isa_mix(fwd, &m), 0);
  assert_int_equal(m.loop_found, 0);
  assert_int_equal(m.kernel[UQ_ISA_VALU], 1);
  assert_int_equal(m.loop[UQ_ISA_VALU], 0);
  const char *bare = "\ts_cbranch_scc1 65535\n\tv_mov_b32_e32 v0, 0\n";
  assert_int_equal(uq_code_isa_mix(bare, &m), 0);
  assert_int_equal(m.loop_found, 0);
  assert_int_equal(m.kernel[UQ_ISA_BRANCH], 1);
}

static void text_without_instructions_is_refused(void **st) {
  (void)st;
  uq_isa_mix m;
  assert_int_equal(uq_code_isa_mix("; nothing\n0000 <k>:\n", &m), UQ_EINVAL);
  assert_non_null(strstr(uq_last_error(), "no instruction"));
  assert_int_equal(uq_code_isa_mix(NULL, &m), UQ_EINVAL);
  assert_int_equal(uq_code_isa_mix(text, NULL), UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_class_is_counted_over_the_kernel),
      cmocka_unit_test(the_outermost_loop_is_found_from_its_backward_branch),
      cmocka_unit_test(forward_branches_and_missing_addresses_find_no_loop),
      cmocka_unit_test(text_without_instructions_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
