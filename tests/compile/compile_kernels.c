/* Every kernel kind compiles for every target family with the compiler
 * uqjit would use (NVRTC for sm_90 and sm_90a, offline clang for
 * gfx950/gfx942, hipRTC for gfx90a), over a matrix that covers each GQA
 * factor with each block size (fusion and the (P, TGPP) pair alternating),
 * plus the reduce, prologue and store kernels; sm_90 and gfx950 also with
 * the matrix layer, sm_90a with a smaller set of warpgroup-layer keys. gfx950 objects
 * must use no scratch, and warpgroup-layer decode kernels neither spill
 * nor pass 128 registers; for them ptxas's own report (NVRTC's log) must
 * give the registers read from the cubin, and its note that a kernel's
 * wgmma are serialized is listed; where an NVIDIA disassembler is found,
 * their chunk loop (uq_code_sass_loop) holds every wgmma of the kernel on
 * its fast path, and its warp instructions per token and kv head are
 * printed. Targets whose compiler is missing are reported
 * and left out; with none at all the program exits 77 (SKIP). Two worker
 * threads: the machine is small. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/codegen/emit.h"
#include "lib/codegen/layers.h"
#include "lib/codegen/target.h"
#include "lib/base/alloc.h"
#include "lib/compile/compiler.h"
#include "lib/compile/disasm.h"
#include "uqjit_tools.h"

#define MAX_JOBS 256
#define WORKERS 2

typedef struct job {
  uq_key key;
  const uq__compiler *cc;
  int status;
  double seconds;
  int scratch; /* -1 unknown */
  int lds;
  int registers;
  int ptxas_registers;  /* warpgroup decode: "Used N registers" in NVRTC's log, -1 none */
  int wgmma_serialized; /* ... and ptxas's note C7512 */
  int sass;             /* warpgroup decode: 1 loop checked, 0 no disassembler */
  char sass_problem[128]; /* what the loop check found wrong, "" if nothing */
  int sass_path;        /* its fast path's instructions per warp and chunk */
  char log[512];
} job;

static job jobs[MAX_JOBS];
static size_t njobs;
static size_t next_job;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void base_key(uq_key *k, uint32_t kind, const char *target) {
  memset(k, 0, sizeof *k);
  k->kind = kind;
  k->dtype = UQ_DTYPE_BF16;
  k->head_dim = 256;
  k->num_kv_heads = 1;
  if (uq__target_parse(target, k->target, sizeof k->target, NULL) != 0)
    fail_msg("target %s: %s", target, uq_last_error());
}

static void add(const uq_key *k, const uq__compiler *cc) {
  if (njobs == MAX_JOBS)
    fail_msg("too many jobs");
  if (uq_key_validate(k) != 0)
    fail_msg("test key invalid: %s", uq_last_error());
  memset(&jobs[njobs], 0, sizeof jobs[njobs]);
  jobs[njobs].key = *k;
  jobs[njobs].cc = cc;
  jobs[njobs].scratch = -1;
  jobs[njobs].lds = -1;
  jobs[njobs].registers = -1;
  jobs[njobs].ptxas_registers = -1;
  njobs++;
}

static void add_decode(const char *target, const uq__compiler *cc, int qg,
                       int bs, int fuse, int parts, int tgpp, uq_dtype dt) {
  uq_key k;
  base_key(&k, UQ_KERNEL_DECODE, target);
  k.dtype = dt;
  k.num_kv_heads = 2;
  k.num_partitions = parts;
  k.tile_groups_per_partition = tgpp;
  k.max_blocks_per_seq = 2048 / bs;
  k.query_group_size = qg;
  k.kv_block_size = bs;
  k.padded_slot = 272;
  k.fuse_qrot = fuse;
  k.scale_e8 = 6250000;
  k.stride_q_head = 256;
  k.stride_q_seq = (int64_t)qg * 2 * 256 + (fuse ? 0 : 512);
  add(&k, cc);
}

static void add_others(const char *target, const uq__compiler *cc, int full) {
  static const uq_dtype dts[2] = {UQ_DTYPE_BF16, UQ_DTYPE_FP16};
  for (int i = 0; i < 2; i++) {
    uq_key k;
    base_key(&k, UQ_KERNEL_REDUCE, target);
    k.dtype = dts[i];
    k.num_kv_heads = 2;
    k.num_partitions = i ? 4 : 16;
    k.query_group_size = i ? 6 : 8;
    add(&k, cc);
    base_key(&k, UQ_KERNEL_PROLOGUE, target);
    k.dtype = dts[i];
    k.num_kv_heads = 2;
    k.query_group_size = i ? 16 : 8;
    add(&k, cc);
    base_key(&k, UQ_KERNEL_STORE, target);
    k.dtype = dts[i];
    k.num_kv_heads = 8;
    k.padded_slot = i ? 272 : 288;
    add(&k, cc);
  }
  if (full) {
    uq_key k;
    base_key(&k, UQ_KERNEL_STORE, target);
    k.dtype = UQ_DTYPE_FP32;
    k.num_kv_heads = 1;
    k.padded_slot = 272;
    add(&k, cc);
  }
}

static void build_matrix(const char *target, const uq__compiler *cc,
                         int full) {
  static const int qgs[3] = {6, 8, 16};
  static const int bss[5] = {16, 32, 64, 128, 256};
  int n = 0;
  for (int a = 0; a < 3; a++) {
    for (int b = 0; b < 5; b++, n++) {
      if (!full && b % 2 == 1)
        continue;
      int pair = n % 2;
      add_decode(target, cc, qgs[a], bss[b], (n + a) % 2, pair ? 4 : 16,
                 pair ? 2 : 1, (n % 3 == 2) ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16);
    }
  }
  add_others(target, cc, full);
}

/* The matrix layer (variant MATRIX: mma.sync on sm_90, the default gfx950
 * and gfx942 layers on gfx950 and gfx942): every decode key of the target
 * again with the matrix variant, plus a padded slot that is not a multiple
 * of 16 (4-byte aligned slots). */
static void add_matrix_variants(const char *target, const uq__compiler *cc) {
  size_t n = njobs;
  for (size_t i = 0; i < n; i++) {
    if (jobs[i].key.kind != UQ_KERNEL_DECODE ||
        strcmp(jobs[i].key.target, target) != 0)
      continue;
    uq_key k = jobs[i].key;
    k.variant = UQ_VARIANT_MATRIX;
    add(&k, cc);
    if (k.query_group_size == 16 && k.kv_block_size == 16) {
      k.padded_slot = 276;
      add(&k, cc);
    }
  }
}

/* The sm_90a warpgroup layer (variant WARPGROUP): each GQA factor with a
 * small, a middle and the largest block size, fusion alternating, bf16 and
 * fp16, one padded slot that is not a multiple of 16, one kv head with
 * the dense and a padded slot, and the plan's reduce and prologue
 * kernels, which carry the variant too. None may spill. */
/* The gfx942 layer's emulation (variant GFX942_EMU) under NVRTC: the sm_90
 * decode keys of QG 6 and 16 (the CPU model runs the same source through
 * the host compiler; this is NVRTC's view of it). */
static void add_gfx942_emu_variants(const uq__compiler *cc) {
  size_t n = njobs;
  for (size_t i = 0; i < n; i++) {
    uq_key k = jobs[i].key;
    if (k.kind != UQ_KERNEL_DECODE || strcmp(k.target, "sm_90") != 0 ||
        k.variant != UQ_VARIANT_PORTABLE || k.query_group_size == 8 || k.kv_block_size != 16)
      continue;
    k.variant = UQ_VARIANT_GFX942_EMU;
    add(&k, cc);
  }
}

static void add_warpgroup_variants(const uq__compiler *cc) {
  static const int qgs[3] = {6, 8, 16};
  static const int bss[3] = {16, 64, 256};
  int n = 0;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++, n++) {
      size_t at = njobs;
      add_decode("sm_90a", cc, qgs[a], bss[b], n % 2, n % 4 == 3 ? 4 : 16,
                 n % 4 == 3 ? 2 : 1,
                 n % 3 == 2 ? UQ_DTYPE_FP16 : UQ_DTYPE_BF16);
      jobs[at].key.variant = UQ_VARIANT_WARPGROUP;
    }
  uq_key k = jobs[njobs - 1].key; /* qg 16, block size 256 */
  k.kv_block_size = 16;
  k.max_blocks_per_seq = 2048 / 16;
  k.padded_slot = 276;
  add(&k, cc);
  /* One kv head: the copy's dense path (padded slot 272, the benchmarks'
   * case) and its general path (288), with long partitions. */
  k.num_kv_heads = 1;
  k.kv_block_size = 64;
  k.max_blocks_per_seq = 2048;
  k.num_partitions = 128;
  k.tile_groups_per_partition = 4;
  k.padded_slot = 272;
  k.stride_q_seq = 16 * 256;
  add(&k, cc);
  k.padded_slot = 288;
  add(&k, cc);
  base_key(&k, UQ_KERNEL_REDUCE, "sm_90a");
  k.variant = UQ_VARIANT_WARPGROUP;
  k.num_kv_heads = 2;
  k.num_partitions = 16;
  k.query_group_size = 8;
  add(&k, cc);
  base_key(&k, UQ_KERNEL_PROLOGUE, "sm_90a");
  k.variant = UQ_VARIANT_WARPGROUP;
  k.num_kv_heads = 2;
  k.query_group_size = 16;
  add(&k, cc);
}

/* The warpgroup decode kernel's chunk loop in its SASS, where a
 * disassembler is found: the loop and its fast path hold every wgmma of
 * the kernel (eight QK and sixteen PV products a chunk), so that the fast
 * path counts the chunk's work. */
static void check_sass_loop(job *j, const void *obj, size_t len) {
  char *text = NULL;
  j->sass_problem[0] = '\0';
  if (uq_code_disassemble(j->key.target, obj, len, &text, NULL) != 0) {
    j->sass = 0;
    return;
  }
  j->sass = 1;
  int gmma = 0;
  for (const char *p = text; (p = strstr(p, "GMMA.")) != NULL; p++)
    gmma++;
  uq_sass_loop l;
  if (uq_code_sass_loop(text, &l) != 0) {
    snprintf(j->sass_problem, sizeof j->sass_problem, "no loop read: %s", uq_last_error());
  } else if (!l.found || !l.path_complete) {
    snprintf(j->sass_problem, sizeof j->sass_problem, "no chunk loop (found %d, path %d)",
             (int)l.found, (int)l.path_complete);
  } else {
    int on_path = 0;
    for (int i = 0; i < l.n_ops; i++)
      if (strcmp(l.ops[i].name, "QGMMA") == 0 || strcmp(l.ops[i].name, "HGMMA") == 0)
        on_path += l.ops[i].path;
    if (gmma != 24 || on_path != gmma)
      snprintf(j->sass_problem, sizeof j->sass_problem,
               "%d wgmma in the kernel, %d on the loop's fast path (24 expected)", gmma,
               on_path);
    j->sass_path = l.path_total;
  }
  uq_free(text);
}

static void run_job(job *j) {
  uq__buf src;
  uq__buf_init(&src);
  char name[256];
  double t0 = now();
  int rc = uq__gen_source(&j->key, uq__compiler_route(j->cc), &src);
  if (rc == 0)
    rc = uq__gen_symbol(&j->key, name, sizeof name) > 0 ? 0 : UQ_EINVAL;
  void *obj = NULL;
  size_t len = 0;
  /* Warpgroup decode kernels are compiled with ptxas's report in the log:
   * its register count must be the one read back from the cubin, and its
   * note C7512 (every wgmma of the kernel serialized: too few registers
   * for the accumulators in flight, which takes away the overlap of
   * dequantization and tensor-core work the layer is built on, and shows
   * nowhere else) is listed. */
  const int wg = j->key.kind == UQ_KERNEL_DECODE && j->key.variant == UQ_VARIANT_WARPGROUP;
  if (rc == 0 && wg) {
    char *log = NULL;
    rc = uq__compiler_compile_log(j->cc, j->key.target, src.data, src.len, name,
                                  "--ptxas-options=-v", &obj, &len, &log);
    if (rc == 0) {
      const char *used = strstr(log, "Used ");
      if (used == NULL || sscanf(used, "Used %d registers", &j->ptxas_registers) != 1)
        j->ptxas_registers = -1;
      j->wgmma_serialized = strstr(log, "C7512") != NULL;
    }
    uq__free(log);
  } else if (rc == 0) {
    rc = uq__compiler_compile(j->cc, j->key.target, src.data, src.len, name,
                              &obj, &len);
  }
  j->seconds = now() - t0;
  if (rc == 0 && wg)
    check_sass_loop(j, obj, len);
  j->status = rc;
  if (rc != 0) {
    snprintf(j->log, sizeof j->log, "%s", uq_last_error());
  } else {
    uq_code_info info;
    memset(&info, 0, sizeof info);
    if (uq__code_info_from_object(j->key.target, obj, len, &info) == 0) {
      j->scratch = info.scratch_bytes;
      j->lds = info.lds_bytes;
      j->registers = info.registers;
    }
  }
  uq__free(obj);
  uq__buf_free(&src);
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    size_t i = next_job < njobs ? next_job++ : njobs;
    pthread_mutex_unlock(&lock);
    if (i == njobs)
      return NULL;
    run_job(&jobs[i]);
  }
}

/* LLVM inside the compilers installs its own per-thread alternate signal
 * stack; AddressSanitizer would then try to unmap that one at thread exit
 * and abort. Its own alternate stack is not needed here. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "use_sigaltstack=0"; }

static const char *const kind_names[5] = {"?", "decode", "reduce",
                                          "prologue", "store"};

static void every_kernel_compiles_for_every_target(void **state) {
  (void)state;
  pthread_t th[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
  for (int i = 0; i < WORKERS; i++)
    pthread_join(th[i], NULL);

  int failed = 0;
  /* Compile time per (target, kind), for the cold-start cost of each. */
  for (size_t i = 0; i < njobs; i++) {
    job *j = &jobs[i];
    char name[256];
    uq_key_name(&j->key, name, sizeof name);
    if (j->status != 0) {
      failed++;
      print_error("FAILED %s (%s): %s\n", name, uq_err_name(j->status), j->log);
      continue;
    }
    if (strncmp(j->key.target, "gfx950", 6) == 0 && j->scratch != 0) {
      failed++;
      print_error("%s uses scratch: %d bytes\n", name, j->scratch);
    }
    /* The gfx950 layer keeps arch + acc VGPRs within 128 (four waves a
     * SIMD where LDS allows), the gfx942 layer within 168 (three), with no
     * scratch. */
    if (j->key.kind == UQ_KERNEL_DECODE && j->key.variant == UQ_VARIANT_MATRIX &&
        strncmp(j->key.target, "gfx950", 6) == 0 && (j->registers < 0 || j->registers > 128)) {
      failed++;
      print_error("%s: %d VGPRs + AGPRs, more than 128 or unknown\n", name, j->registers);
    }
    if (j->key.kind == UQ_KERNEL_DECODE && j->key.variant == UQ_VARIANT_MATRIX &&
        strncmp(j->key.target, "gfx942", 6) == 0 &&
        (j->registers < 0 || j->registers > 168 || j->scratch != 0)) {
      failed++;
      print_error("%s: %d VGPRs + AGPRs (at most 168), %d bytes of scratch\n", name,
                  j->registers, j->scratch);
    }
    /* The warpgroup decode layer is sized for 128 registers (four blocks
     * a multiprocessor): a spill costs local-memory traffic in the chunk
     * loop and can serialize the wgmma pipeline. What it keeps on the
     * stack is bounded: 8 bytes where the Tensor Memory Accelerator
     * copies the chunks (a bulk copy a run for one kv head with 272-byte
     * slots, a tensor copy a run for other slots 16-byte aligned: two loop
     * invariants, reloaded once a 64-token chunk) and 48 on the piecewise
     * path (slots a multiple of 4 bytes only), whose copy state stays
     * live through the loop. Those bytes bought the V-limit path that
     * serves every scale byte (a spill-free arrangement measured 8%
     * slower on the H200: docs/BENCHMARKS.md). */
    const int tma = (j->key.num_kv_heads == 1 && j->key.padded_slot == 272) ||
                    uq__warpgroup_tensor_copy(&j->key);
    if (j->key.kind == UQ_KERNEL_DECODE && j->key.variant == UQ_VARIANT_WARPGROUP &&
        (j->scratch > (tma ? 8 : 48) || j->registers > 128)) {
      failed++;
      print_error("%s spills or exceeds 128 registers: %d registers, %d bytes of stack\n",
                  name, j->registers, j->scratch);
    }
    if (j->key.kind == UQ_KERNEL_DECODE && j->key.variant == UQ_VARIANT_WARPGROUP) {
      if (j->ptxas_registers < 0 || j->ptxas_registers != j->registers) {
        failed++;
        print_error("%s: ptxas reports %d registers (-1: no report in NVRTC's log), the "
                    "cubin %d\n",
                    name, j->ptxas_registers, j->registers);
      }
      if (j->wgmma_serialized)
        print_message("note: %s: ptxas serializes its wgmma (C7512)\n", name);
      if (j->sass && j->sass_problem[0] != '\0') {
        failed++;
        print_error("%s: chunk loop: %s\n", name, j->sass_problem);
      } else if (j->sass) {
        print_message("%s: chunk loop fast path %d instructions, %.1f a token and kv head\n",
                      name, j->sass_path, j->sass_path / 16.0);
      }
    }
  }
  const char *seen[8];
  int nseen = 0;
  for (size_t i = 0; i < njobs; i++) {
    int dup = 0;
    for (int s = 0; s < nseen; s++)
      dup |= strcmp(seen[s], jobs[i].key.target) == 0;
    if (dup)
      continue;
    seen[nseen++] = jobs[i].key.target;
    for (uint32_t kind = 1; kind <= 4; kind++) {
      int count = 0;
      double sum = 0, max = 0;
      int maxreg = -1, maxlds = -1, maxscratch = -1;
      for (size_t m = 0; m < njobs; m++) {
        job *j = &jobs[m];
        if (j->key.kind != kind || strcmp(j->key.target, seen[nseen - 1]) != 0)
          continue;
        count++;
        sum += j->seconds;
        max = j->seconds > max ? j->seconds : max;
        maxreg = j->registers > maxreg ? j->registers : maxreg;
        maxlds = j->lds > maxlds ? j->lds : maxlds;
        maxscratch = j->scratch > maxscratch ? j->scratch : maxscratch;
      }
      if (count > 0)
        printf("%-8s %-9s %-40s n=%2d mean %.2fs max %.2fs | max regs %d, "
               "lds %d B, scratch %d B\n",
               seen[nseen - 1], kind_names[kind],
               uq__compiler_identity(jobs[i].cc), count, sum / count, max,
               maxreg, maxlds, maxscratch);
    }
  }
  assert_int_equal(failed, 0);
}

int main(void) {
  static const struct {
    const char *target;
    int full;
  } targets[] = {
      {"sm_90", 1}, {"gfx950", 1}, {"gfx942", 1}, {"gfx90a", 0}};
  int usable = 0;
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
    const uq__compiler *cc = NULL;
    if (uq__compiler_for_target(targets[t].target, &cc) != 0) {
      printf("skipping %s: %s\n", targets[t].target, uq_last_error());
      continue;
    }
    usable++;
    build_matrix(targets[t].target, cc, targets[t].full);
    if (strncmp(targets[t].target, "sm_", 3) == 0 ||
        strcmp(targets[t].target, "gfx950") == 0 || strcmp(targets[t].target, "gfx942") == 0)
      add_matrix_variants(targets[t].target, cc);
    if (strcmp(targets[t].target, "sm_90") == 0)
      add_gfx942_emu_variants(cc);
  }
  const uq__compiler *nv = NULL;
  if (uq__compiler_for_target("sm_90a", &nv) == 0) {
    usable++;
    add_warpgroup_variants(nv);
  } else {
    printf("skipping sm_90a: %s\n", uq_last_error());
  }
  if (usable == 0) {
    printf("no compiler found for any target\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_kernel_compiles_for_every_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
