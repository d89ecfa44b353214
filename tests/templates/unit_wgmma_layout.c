/* The warpgroup layer's chunk layout (part of test_wgmma_maps,
 * wgmma_host.h): the token order of the chunk, the PV step offsets, shared
 * memory reads free of bank conflicts, P values paired in aligned words,
 * the K and V scale tables filled by the warps that read them, and the
 * chunk schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tests/templates/wgmma_host.h"

/* ---- 6. the token order of the chunk ---- */

void qk_tokens_permute_each_warps_sixteen_and_pv_reads_them_back(void **st) {
  (void)st;
  for (int w = 0; w < 4; w++) {
    int seen[64] = {0};
    for (int grp = 0; grp < 8; grp++)
      for (int h = 0; h < 2; h++) {
        int t = uq_wg_qk_token(w, grp, h);
        assert_in_range(t, 16 * w, 16 * w + 15);
        seen[t]++;
        /* The kernel reads row grp + 8 at k0 + 8 slots. */
        assert_int_equal(uq_wg_qk_token(w, grp, 1), uq_wg_qk_token(w, grp, 0) + 8);
        /* P of this row goes to K index uq_wg_p_k, which PV step w reads
         * back as the same token. */
        int k = uq_wg_p_k(w, grp, h);
        assert_in_range(k, 16 * w, 16 * w + 15);
        assert_int_equal(uq_wg_pv_token(w, k - 16 * w), t);
      }
    for (int t = 16 * w; t < 16 * w + 16; t++)
      assert_int_equal(seen[t], 1);
  }
}

/* The kernel reads a thread's four V rows of PV step ks at one per-thread
 * offset (token uq_wg_pv_token(0, 2 tig)) plus uq_wg_pv_step(ks, j): the
 * same tokens as uq_wg_pv_token for K indices 2 tig, + 1, + 8, + 9, for
 * every lane and step. */
void pv_step_offsets_give_each_lanes_four_tokens(void **st) {
  (void)st;
  const int k_of[4] = {0, 1, 8, 9};
  for (int ks = 0; ks < 4; ks++)
    for (int tig = 0; tig < 4; tig++)
      for (int j = 0; j < 4; j++)
        assert_int_equal(uq_wg_pv_token(0, 2 * tig) + uq_wg_pv_step(ks, j),
                         uq_wg_pv_token(ks, 2 * tig + k_of[j]));
}

/* Shared-memory bank (4-byte words, 32 banks) of a byte offset. */
static int bank_of(int off) { return (off / 4) % 32; }

/* The 32 lanes of one load hit 32 different banks, or the same word. */
static void assert_conflict_free(const int off[32], const char *what) {
  for (int a = 0; a < 32; a++)
    for (int b = a + 1; b < 32; b++)
      if (off[a] / 4 != off[b] / 4 && bank_of(off[a]) == bank_of(off[b]))
        fail_msg("%s: lanes %d and %d share bank %d", what, a, b, bank_of(off[a]));
}

void k_and_v_word_reads_are_free_of_bank_conflicts(void **st) {
  (void)st;
  int off[32];
  for (int w = 0; w < 4; w++) {
    /* QK: code word tig of group g of rows grp and grp + 8. */
    for (int g = 0; g < 8; g++)
      for (int h = 0; h < 2; h++) {
        for (int lane = 0; lane < 32; lane++)
          off[lane] = uq_wg_qk_token(w, lane / 4, h) * SLOT + uq_wg_k_word_offset(g, lane % 4);
        assert_conflict_free(off, "K word");
      }
    /* PV: V word 8 w + grp of the tokens of K indices 2 tig + j. */
    for (int ks = 0; ks < 4; ks++)
      for (int j = 0; j < 10; j++) {
        if (j == 2)
          j = 8;
        for (int lane = 0; lane < 32; lane++)
          off[lane] = uq_wg_pv_token(ks, 2 * (lane % 4) + j) * SLOT + VCODE +
                      4 * uq_wg_v_word(w, lane / 4);
        assert_conflict_free(off, "V word");
      }
  }
}

void a_threads_two_p_values_of_a_query_are_one_aligned_word(void **st) {
  (void)st;
  for (int w = 0; w < 4; w++)
    for (int grp = 0; grp < 8; grp++)
      for (int tig = 0; tig < 4; tig++) {
        int k = uq_wg_p_k(w, grp, 0);
        for (int i = 0; i < 4; i++) {
          int n = (i & 1) + 2 * tig + 8 * (i >> 1);
          int lo = uq_wg_p_offset(n, k);
          assert_int_equal(lo % 4, 0);
          assert_int_equal(uq_wg_p_offset(n, uq_wg_p_k(w, grp, 1)), lo + 2);
          /* The kernel's address: that of query 2 tig, plus 16 bytes for
           * the odd query and the stride-dimension offset for + 8. */
          assert_int_equal(lo, uq_wg_p_offset(2 * tig, k) + 16 * (i & 1) + UQ_WG_SBO * (i >> 1));
        }
      }
}

/* The K scale table: the lanes of each warp fill every (half, token) of
 * the warp's sixteen tokens once, and the tokens its QK rows read (tq and
 * tq + 8, the kernel's two rows) are among them: a warp barrier suffices. */
void k_scale_table_is_filled_by_the_warp_that_reads_it(void **st) {
  (void)st;
  for (int w = 0; w < 4; w++) {
    int filled[64][2];
    memset(filled, 0, sizeof filled);
    for (int lane = 0; lane < 32; lane++) {
      int t = uq_wg_kscale_token(w, lane), h = uq_wg_kscale_half(lane);
      assert_in_range(t, 16 * w, 16 * w + 15);
      assert_in_range(h, 0, 1);
      filled[t][h]++;
    }
    for (int t = 16 * w; t < 16 * w + 16; t++)
      for (int h = 0; h < 2; h++)
        assert_int_equal(filled[t][h], 1);
    for (int grp = 0; grp < 8; grp++) {
      int tq = uq_wg_qk_token(w, grp, 0);
      assert_int_equal(uq_wg_qk_token(w, grp, 1), tq + 8);
      assert_int_equal(filled[tq][0] + filled[tq + 8][1], 2);
    }
  }
}

/* The factor table's two-at-once form equals the per-byte one for every
 * pair of bytes under every limit, and flags exactly the pairs with a
 * byte over the limit (the kernel's limit-raising path). */
void v_scale_lo_x2_matches_the_per_byte_lo(void **st) {
  (void)st;
  static const uq_u32 lims[] = {128u, 129u, 131u, 160u, 200u, 253u, 254u};
  for (size_t li = 0; li < sizeof lims / sizeof lims[0]; li++) {
    uq_u32 lim = lims[li];
    for (uq_u32 a = 0; a < 256u; a++)
      for (uq_u32 b = 0; b < 256u; b++) {
        bool over;
        uq_u32 lo = uq_wg_vscale_lo_x2(a | b << 16, uq_wg_vlim_x2(lim), uq_wg_vlim_offset_x2(lim), &over);
        if (lo != uq_wg_vscale_lo2(a, b, lim) || over != (a > lim || b > lim))
          fail_msg("limit %u bytes %u %u: lo %08x (want %08x), over %d", lim, a, b, lo,
                   uq_wg_vscale_lo2(a, b, lim), (int)over);
      }
  }
}

/* The kernel's V factor table: thread tid reads the two tokens
 * uq_wg_vfac_token(tid, 0 / 1) of its K index pair uq_wg_vfac_k(tid) and
 * writes the words of groups uq_wg_vfac_group(tid) and + 1, each
 * uq_wg_vscale_lo_x2 of the two tokens' bytes under the group's limit;
 * PV reads the words of K indices 2 tig (+ 1) and 2 tig + 8 (+ 9) of step
 * ks in its V word's group. Every (group, K index) is written once, every
 * read gives uq_wg_vscale_lo2 of the two tokens' bytes,
 * and the reads are free of bank conflicts. */
void v_factor_table_gives_each_k_pair_its_two_tokens_lo(void **st) {
  (void)st;
  enum { TABLE = 8 * 144 }; /* 8 rows of UQ_WG_VFAC_ROW bytes */
  assert_int_equal(UQ_WG_VFAC_ROW, 144);
  static uq_u8 table[TABLE];
  static int written[TABLE];
  uq_u8 bytes[64][8];
  for (int trial = 0; trial < 4; trial++) {
    uq_u32 lims[8];
    for (int g = 0; g < 8; g++)
      lims[g] = UQ_WG_VLIM_MIN + rnd() % (UQ_WG_VLIM_MAX - UQ_WG_VLIM_MIN + 1u);
    for (int t = 0; t < 64; t++)
      for (int g = 0; g < 8; g++)
        bytes[t][g] = (uq_u8)rnd();
    memset(table, 0xee, sizeof table);
    memset(written, 0, sizeof written);
    for (int tid = 0; tid < THREADS; tid++) {
      int t0 = uq_wg_vfac_token(tid, 0), t1 = uq_wg_vfac_token(tid, 1);
      assert_in_range(t0, 0, 63);
      assert_in_range(t1, 0, 63);
      /* the kernel reads the second token 8 slots after the first */
      assert_int_equal(t1, t0 + 8);
      int g0 = uq_wg_vfac_group(tid);
      assert_in_range(g0, 0, 6);
      /* the 16-bit loads of groups g0, g0 + 1 (little-endian) */
      uq_u32 x0 = bytes[t0][g0] | (uq_u32)bytes[t0][g0 + 1] << 8;
      uq_u32 x1 = bytes[t1][g0] | (uq_u32)bytes[t1][g0 + 1] << 8;
      for (int j = 0; j < 2; j++) {
        int g = g0 + j;
        int off = uq_wg_vfac_offset(g, uq_wg_vfac_k(tid));
        assert_in_range(off, 0, (int)sizeof table - 4);
        assert_int_equal(off % 4, 0);
        bool over;
        uq_u32 lo = uq_wg_vscale_lo_x2(uq_wg_vfac_pair(x0, x1, j), uq_wg_vlim_x2(lims[g]),
                                       uq_wg_vlim_offset_x2(lims[g]), &over);
        for (int b = 0; b < 4; b++) {
          table[off + b] = (uq_u8)(lo >> (8 * b));
          written[off + b]++;
        }
      }
    }
    for (int i = 0; i < (int)sizeof table; i++)
      assert_in_range(written[i], 0, 1);
    for (int ks = 0; ks < 4; ks++)
      for (int w = 0; w < 4; w++)
        for (int half = 0; half < 2; half++) {
          int off[32];
          for (int lane = 0; lane < 32; lane++) {
            int grp = lane / 4, tig = lane % 4, g = uq_wg_v_word(w, grp) / 4;
            int k = 16 * ks + 2 * tig + 8 * half;
            off[lane] = uq_wg_vfac_offset(g, k);
            assert_int_equal(off[lane] % 4, 0);
            uq_u32 word = load32(table + off[lane]);
            uq_u32 want = uq_wg_vscale_lo2(bytes[uq_wg_pv_token(ks, k - 16 * ks)][g],
                                           bytes[uq_wg_pv_token(ks, k + 1 - 16 * ks)][g], lims[g]);
            if (word != want)
              fail_msg("step %d warp %d lane %d: table word %08x, want %08x", ks, w, lane, word,
                       want);
          }
          assert_conflict_free(off, "V factor word");
        }
  }
}

/* The layer's chunk schedule covers every 64-token chunk of a sequence
 * exactly once, within the plan's P x TGPP tile groups, and a partition's
 * chunks are ascending (the running softmax needs no order, but the
 * kernel's masking assumes only the sequence's last chunk is partial). */
void chunk_schedule_covers_each_chunk_once(void **st) {
  (void)st;
  static int seen[4096];
  static const int parts_list[] = {2, 4, 16, 32, 64, 128, 256, 512};
  for (size_t pi = 0; pi < sizeof parts_list / sizeof parts_list[0]; pi++)
    for (int tgpp = 1; tgpp <= 8; tgpp *= 2) {
      int parts = parts_list[pi];
      if ((long)parts * tgpp * 4 > 4096)
        continue;
      for (int trial = 0; trial < 40; trial++) {
        /* Lengths within the window P TGPP 256, edges included. */
        uq_u32 window = (uq_u32)parts * (uq_u32)tgpp * 256u;
        uq_u32 len = trial == 0 ? 0u : trial == 1 ? window : trial == 2 ? 1u : rnd32() % (window + 1u);
        uq_u32 total = (len + 63u) / 64u;
        memset(seen, 0, sizeof seen);
        for (int part = 0; part < parts; part++) {
          int n = uq_wg_chunks(part, len, parts, tgpp);
          assert_in_range(n, 0, 4 * tgpp);
          for (int k = 0; k < n; k++) {
            uq_u32 tok = uq_wg_chunk_token(part, k, parts);
            assert_int_equal(tok % 64u, 0);
            assert_true(tok < len);
            if (k > 0)
              assert_true(tok > uq_wg_chunk_token(part, k - 1, parts));
            seen[tok / 64u]++;
          }
        }
        for (uq_u32 c = 0; c < total; c++)
          if (seen[c] != 1)
            fail_msg("P=%d TGPP=%d len=%u: chunk %u seen %d times", parts, tgpp, len, c, seen[c]);
      }
    }
}
