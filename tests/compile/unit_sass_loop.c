/* uq_code_sass_loop on hand-written cuobjdump text: the loop is the
 * narrowest backward span holding every tensor-core instruction (not the
 * wider one an out-of-line block makes by branching back into it), the
 * fast path takes forward branches inside the span and falls through
 * those that leave it and the inner backward ones, and text without a
 * loop or without instructions behaves as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "uqjit_tools.h"

/* A prologue, the loop 0x30 .. 0x110 (a wait whose retry is out of line
 * at 0x200, a rare block 0x80 .. 0x90 skipped by 0x70, an inner retry
 * loop at 0xd0, a forward jump over 0x100), an epilogue, a self loop
 * with no matrix work, and the out-of-line block branching back. Every
 * instruction line carries cuobjdump's encoding comment, and every
 * second line is the encoding alone, as cuobjdump prints them. */
static const char text[] =
    "\t\tFunction : k\n"
    "\t.headerflags\t@\"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;               /* 0x00000a00ff017b82 */\n"
    "                                                                       /* 0x000fe20000000800 */\n"
    "        /*0010*/                   S2R R0, SR_TID.X ;                   /* 0x0000000000007919 */\n"
    "        /*0020*/              @P0 EXIT ;                                /* 0x000000000000094d */\n"
    "        /*0030*/                   LDS R2, [R3] ;                       /* 0x0000000003027984 */\n"
    "        /*0040*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R4], R5 ; /* 0x0 */\n"
    "        /*0050*/             @!P1 BRA 0x200 ;                           /* 0x0 */\n"
    "        /*0060*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;        /* 0x0 */\n"
    "        /*0070*/              @P2 BRA 0xa0 ;                            /* 0x0 */\n"
    "        /*0080*/                   IMAD.SHL.U32 R6, R2, 0x4, RZ ;       /* 0x0 */\n"
    "        /*0090*/                   LOP3.LUT R6, R6, 0x1c, RZ, 0xc0, !PT ; /* 0x0 */\n"
    "        /*00a0*/                   WARPGROUP.ARRIVE ;                   /* 0x0 */\n"
    "        /*00b0*/                   QGMMA.64x16x32.F32.E4M3.E4M3 R8, R12, gdesc[UR4], RZ, !UPT ; /* 0x0 */\n"
    "        /*00c0*/                   LOP3.LUT R7, R2, 0x7, RZ, 0xc0, !PT ; /* 0x0 */\n"
    "        /*00d0*/              @P3 BRA.U.ANY 0xc0 ;                      /* 0x0 */\n"
    "        /*00e0*/                   HGMMA.64x16x16.F32.BF16 R16, R20, gdesc[UR8], R16 ; /* 0x0 */\n"
    "        /*00f0*/              @PT BRA 0x110 ;                           /* 0x0 */\n"
    "        /*0100*/                   FFMA R1, R2, R3, R4 ;                /* 0x0 */\n"
    "        /*0110*/             @!P4 BRA 0x30 ;                            /* 0x0 */\n"
    "        /*0120*/                   STG.E [R2.64], R3 ;                  /* 0x0 */\n"
    "        /*0130*/                   EXIT ;                               /* 0x0 */\n"
    "        /*0140*/                   BRA 0x140;                           /* 0x0 */\n"
    "        /*0200*/                   NANOSLEEP 0x20 ;                     /* 0x0 */\n"
    "        /*0210*/                   BRA 0x40 ;                           /* 0x0 */\n";

static const uq_sass_op *op_named(const uq_sass_loop *l, const char *name) {
  for (int i = 0; i < l->n_ops; i++)
    if (strcmp(l->ops[i].name, name) == 0)
      return &l->ops[i];
  return NULL;
}

/* Reads `t`, which must hold a loop from `begin` to `end` of `body`
 * instructions whose fast path has `path` (and reaches the loop's
 * backward branch when `complete`). */
static void read_loop(const char *t, uq_sass_loop *l, uint64_t begin, uint64_t end, int body,
                      int path, int complete) {
  assert_int_equal(uq_code_sass_loop(t, l), 0);
  assert_int_equal(l->found, 1);
  assert_true(l->begin == begin);
  assert_true(l->end == end);
  assert_int_equal(l->body_total, body);
  assert_int_equal(l->path_total, path);
  assert_int_equal(l->path_complete, complete);
}

static void the_loop_holding_every_matrix_instruction_is_the_narrowest(void **st) {
  (void)st;
  uq_sass_loop l;
  read_loop(text, &l, 0x30, 0x110, 15, 12, 1);
  assert_int_equal(op_named(&l, "LOP3")->body, 2);
  assert_int_equal(op_named(&l, "BRA")->body, 5);
  assert_int_equal(op_named(&l, "IMAD")->body, 1);
  assert_int_equal(op_named(&l, "FFMA")->body, 1);
  assert_null(op_named(&l, "STG"));      /* after the loop */
  assert_null(op_named(&l, "NANOSLEEP")); /* out of line */
  assert_int_equal(l.other_body, 0);
}

static void the_fast_path_skips_what_forward_branches_skip(void **st) {
  (void)st;
  uq_sass_loop l;
  /* 0x30 0x40 0x50 (leaves the span: falls through) 0x60 0x70 (-> 0xa0)
   * 0xa0 0xb0 0xc0 0xd0 (backward: falls through) 0xe0 0xf0 (-> 0x110)
   * 0x110 */
  read_loop(text, &l, 0x30, 0x110, 15, 12, 1);
  assert_int_equal(op_named(&l, "BRA")->path, 5);
  assert_int_equal(op_named(&l, "LOP3")->path, 1);
  assert_int_equal(op_named(&l, "IMAD")->path, 0);
  assert_int_equal(op_named(&l, "FFMA")->path, 0);
  assert_int_equal(op_named(&l, "QGMMA")->path, 1);
  assert_int_equal(op_named(&l, "HGMMA")->path, 1);
  assert_int_equal(op_named(&l, "SYNCS")->path, 1);
  /* Sorted by path count: BRA first. */
  assert_string_equal(l.ops[0].name, "BRA");
}

static void without_matrix_work_the_widest_span_is_the_loop(void **st) {
  (void)st;
  static const char plain[] =
      "        /*0000*/                   MOV R1, R2 ;\n"
      "        /*0010*/                   IADD3 R1, R1, 0x1, RZ ;\n"
      "        /*0020*/              @P0 BRA 0x10 ;\n"
      "        /*0030*/              @P1 BRA 0x0 ;\n"
      "        /*0040*/                   BRA 0x60 ;\n"
      "        /*0050*/                   MOV R3, R4 ;\n"
      "        /*0060*/                   EXIT ;\n";
  uq_sass_loop l;
  read_loop(plain, &l, 0x0, 0x30, 4, 4, 1);
}

static void a_branch_that_leaves_for_good_ends_the_path(void **st) {
  (void)st;
  static const char leaves[] =
      "        /*0000*/                   HMMA.16816.F32.BF16 R0, R4, R8, R0 ;\n"
      "        /*0010*/                   BRA 0x100 ;\n"
      "        /*0020*/                   FADD R1, R1, R2 ;\n"
      "        /*0030*/              @P0 BRA 0x0 ;\n"
      "        /*0100*/                   EXIT ;\n";
  uq_sass_loop l;
  read_loop(leaves, &l, 0x0, 0x30, 4, 2, 0);
}

static void no_loop_or_no_instruction(void **st) {
  (void)st;
  uq_sass_loop l;
  static const char straight[] = "        /*0000*/                   EXIT ;\n";
  assert_int_equal(uq_code_sass_loop(straight, &l), 0);
  assert_int_equal(l.found, 0);
  assert_int_equal(uq_code_sass_loop("no code here\n/* 0x0123 */\n", &l), UQ_EINVAL);
  assert_int_equal(uq_code_sass_loop(NULL, &l), UQ_EINVAL);
  assert_int_equal(uq_code_sass_loop(text, NULL), UQ_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_loop_holding_every_matrix_instruction_is_the_narrowest),
      cmocka_unit_test(the_fast_path_skips_what_forward_branches_skip),
      cmocka_unit_test(without_matrix_work_the_widest_span_is_the_loop),
      cmocka_unit_test(a_branch_that_leaves_for_good_ends_the_path),
      cmocka_unit_test(no_loop_or_no_instruction),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
