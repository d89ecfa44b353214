/* What the three files of test_wgmma_maps share (unit_wgmma_maps.c, the
 * wgmma model, QK, PV, the maps and main; unit_wgmma_convert.c, the K and
 * V conversions and scales; unit_wgmma_layout.c, the chunk's token order,
 * bank conflicts, scale tables and schedule): the warpgroup layer's
 * helpers (templates/sm90/wgmma_sm90_maps.hip, after
 * templates/sm90/mma_sm90_maps.hip) compiled here as host C, and the
 * models they are checked against, written from the PTX ISA and
 * FORMAT.md. Include after <cmocka.h>. */
#ifndef UQ_TESTS_TEMPLATES_WGMMA_HOST_H
#define UQ_TESTS_TEMPLATES_WGMMA_HOST_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tests/templates/template_host.h"
#define UQ_MMA_HOST_MODEL 1

#include "templates/sm90/mma_sm90_maps.hip"
/* wgmma_sm90_maps.hip declares its two constants `constexpr int` at file
 * scope: C++, and C23, but not C11 (this project's -std). As static const
 * ints they are the same values; the helpers only read them. */
#define constexpr static const
#include "templates/sm90/wgmma_sm90_maps.hip"
#undef constexpr

#if !UQ_MMA_SUBNORMAL_OPERANDS
#error "the expectations below are those of the default (shift) conversions"
#endif

/* FORMAT.md section 2 (the -0 of code 8 included; the encoder never
 * writes code 8, section 3 step 5). */
static const double fp4_value[16] = {0,  0.5,  1,  1.5,  2,  3,  4,  6,
                                     -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

/* FP8 E4M3 (the FN variant of the PTX .e4m3 type): sign bit 7, exponent
 * bits 6..3 with bias 7, mantissa bits 2..0; exponent field 0 is
 * subnormal (m / 8 * 2^-6); S.1111.111 is NaN. */
UQ_DEV double e4m3_value(uq_u32 b) {
  uq_u32 e = (b >> 3) & 15u, m = b & 7u;
  if (e == 15u && m == 7u)
    return NAN;
  double v = e == 0 ? ldexp((double)m, -9) : ldexp((double)(8u + m), (int)e - 10);
  return (b & 0x80u) ? -v : v;
}

/* bfloat16: sign bit 15, exponent bits 14..7 with bias 127, mantissa
 * bits 6..0; exponent field 0 is subnormal (m / 128 * 2^-126); 255 is
 * Inf / NaN (never expected here: NaN). */
UQ_DEV double bf16_value(uq_u32 h) {
  uq_u32 e = (h >> 7) & 255u, m = h & 127u;
  if (e == 255u)
    return NAN;
  double v = e == 0 ? ldexp((double)m, -133) : ldexp((double)(128u + m), (int)e - 134);
  return (h & 0x8000u) ? -v : v;
}

/* One xorshift stream for the whole program (unit_wgmma_maps.c): the tests
 * draw from it in main's order. */
uq_u32 rnd(void);
uq_u32 rnd32(void);

UQ_DEV uq_u32 load32(const uq_u8 *p) {
  return (uq_u32)p[0] | (uq_u32)p[1] << 8 | (uq_u32)p[2] << 16 | (uq_u32)p[3] << 24;
}

/* Code j (0..7) of a 32-bit code word: nibble j (FORMAT.md: byte b =
 * code[2b] | code[2b + 1] << 4, bytes little-endian in the word). */
UQ_DEV uq_u32 nib(uq_u32 w, int j) { return (w >> (4 * j)) & 15u; }

/* The shared-memory picture of the kernel the tests replay. */
enum {
  THREADS = 128,
  SLOT = 272,     /* FORMAT.md: D = 256 */
  KCODE = 0,      /* K codes: bytes 0..127 */
  VCODE = 136,    /* V codes: bytes 136..263 */
  SMEM = 48 * 1024,
  /* Where the operands sit in the simulated shared memory: a 128-aligned
   * address well past 0, as in the kernel (after the double-buffered
   * chunk), so that the descriptor's start field is not trivially 0. */
  QT_ADDR = 2 * 64 * SLOT,
  PT_ADDR = QT_ADDR + 4096,
};

/* The chunk's 64 slots and the simulated shared memory
 * (unit_wgmma_maps.c). */
extern uq_u8 slots[64][SLOT];
extern uq_u8 smem[SMEM];

/* The tests of unit_wgmma_convert.c. */
void fp4x8_to_e4m3_is_value_times_2_pow_minus_6_even_odd_split(void **st);
void fp4x8x2_to_bf16_pairs_code_n_of_x_low_of_y_high_times_2_pow_minus_126(void **st);
void v_scale_pairs_scale_each_token_by_its_own_byte(void **st);
void v_limit_raise_rescale_and_unscale(void **st);
void v_limit_fold_over_chunks_gives_the_scaled_sum(void **st);
void kscale_bits_give_byte_j_as_fp32_power_of_two(void **st);

/* The tests of unit_wgmma_layout.c. */
void qk_tokens_permute_each_warps_sixteen_and_pv_reads_them_back(void **st);
void pv_step_offsets_give_each_lanes_four_tokens(void **st);
void k_and_v_word_reads_are_free_of_bank_conflicts(void **st);
void a_threads_two_p_values_of_a_query_are_one_aligned_word(void **st);
void k_scale_table_is_filled_by_the_warp_that_reads_it(void **st);
void v_scale_lo_x2_matches_the_per_byte_lo(void **st);
void v_factor_table_gives_each_k_pair_its_two_tokens_lo(void **st);
void chunk_schedule_covers_each_chunk_once(void **st);

#endif
