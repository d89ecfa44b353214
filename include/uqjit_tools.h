/* uqjit tools: what the uqjit command, benchmarks and tests use besides
 * the integrator's API of uqjit.h (which this header includes): a code
 * object's resources and disassembly, the instruction mix of an AMD
 * disassembly and the loop of an NVIDIA one, the report of what uqjit
 * finds (`uqjit info`), and small device utilities (memory, copies,
 * streams, events and graphs). A program that plans, warms, decodes and
 * manages the cache needs only uqjit.h.
 * Part of the same library and ABI; uqjit.h's conventions hold here. */
#ifndef UQJIT_TOOLS_H
#define UQJIT_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Code objects, their disassembly and the uqjit info report.          */

/* Resource usage of a code object, as far as the tools found can tell
 * (-1 = unknown). */
typedef struct uq_code_info {
  char isa[64];
  char compiler[128];    /* identity of the compiler that built it */
  int32_t vgprs, sgprs, agprs, registers;
  int32_t lds_bytes;     /* group segment / static shared memory */
  int32_t scratch_bytes; /* private segment / local memory per thread */
} uq_code_info;

/* The code object of a key (compiled or from cache); caller frees *obj. */
UQ_EXTERN int uq_code_object(uq_context *ctx, const uq_key *key, void **obj,
                             size_t *len, uq_code_info *info);
/* Disassembly of a code object (comgr, else llvm-objdump-22 / cuobjdump);
 * caller frees *text. UQ_ENOENT when no disassembler is found. */
UQ_EXTERN int uq_code_disassemble(const char *target, const void *obj,
                                  size_t len, char **text,
                                  uq_code_info *info);

/* Instruction classes of an AMD GCN/CDNA disassembly (uq_code_isa_mix). */
enum {
  UQ_ISA_VMEM = 0, /* global_, buffer_, flat_, scratch_ */
  UQ_ISA_LDS,      /* ds_ */
  UQ_ISA_MFMA,     /* v_mfma, v_smfmac */
  UQ_ISA_VALU,     /* other v_ */
  UQ_ISA_SALU,     /* other s_ */
  UQ_ISA_SMEM,     /* s_load, s_buffer_load, s_store, s_dcache */
  UQ_ISA_WAIT,     /* s_waitcnt*, s_barrier, s_nop, s_sleep */
  UQ_ISA_BRANCH,   /* s_branch, s_cbranch_*, s_setpc, s_swappc, s_endpgm */
  UQ_ISA_OTHER,
  UQ_ISA_CLASSES
};
/* Static instruction counts by class: of the whole text, and of the
 * outermost loop (the widest span from a backward branch's target to the
 * branch, inner loops counted once). */
typedef struct uq_isa_mix {
  int32_t kernel[UQ_ISA_CLASSES];
  int32_t loop[UQ_ISA_CLASSES]; /* all 0 when loop_found is 0 */
  int32_t loop_found;           /* a backward branch with a readable target */
  int32_t inner_loops;          /* backward branches strictly inside it */
  uint64_t loop_begin, loop_end; /* addresses of its first instruction and
                                    of its backward branch */
} uq_isa_mix;
/* Classifies every instruction of `text` (uq_code_disassemble's output for
 * an AMD code object: llvm-objdump lines with "// <address>:" comments;
 * without addresses no loop is found). A class name for printing:
 * uq_isa_class_name (NULL out of range). UQ_EINVAL (NULL arguments, or no
 * instruction in the text). */
UQ_EXTERN int uq_code_isa_mix(const char *text, uq_isa_mix *mix);
UQ_EXTERN const char *uq_isa_class_name(int cls);

/* The loop of an NVIDIA disassembly (uq_code_disassemble's SASS for an
 * sm_* target) by opcode (the mnemonic up to its first '.'): the loop is
 * the narrowest backward branch's span holding every tensor-core
 * instruction (HMMA, HGMMA, QGMMA, ...), or the widest span when there
 * are none: a decode kernel's chunk loop. Counted over the whole span
 * (body) and over its fast path: the walk from the loop's head to its
 * backward branch that takes every forward branch landing inside the
 * span and falls through the others, so that paths a branch skips (a copy
 * issued by a few threads, the rare softmax and V-limit path, a partial
 * last chunk) are left out and inner loops (a wait's retry) count once.
 * Static counts per warp and pass: no timing. */
#define UQ_SASS_OPS 96
#define UQ_SASS_OP_LEN 16
typedef struct uq_sass_op {
  char name[UQ_SASS_OP_LEN];
  int32_t body, path;
} uq_sass_op;
typedef struct uq_sass_loop {
  int32_t found;            /* a loop (backward branch) was found */
  int32_t path_complete;    /* the fast path reached the backward branch
                               (0: an unconditional branch left the span) */
  uint64_t begin, end;      /* its first instruction and its backward branch */
  int32_t body_total, path_total;
  int32_t other_body, other_path; /* opcodes past UQ_SASS_OPS distinct ones */
  int32_t n_ops;
  uq_sass_op ops[UQ_SASS_OPS]; /* most on the fast path first */
} uq_sass_loop;
/* UQ_EINVAL: NULL arguments, or no SASS instruction line in the text;
 * found stays 0 when there is no backward branch. */
UQ_EXTERN int uq_code_sass_loop(const char *text, uq_sass_loop *loop);

/* A report of compilers, runtimes, devices and cache directories found
 * (caller frees). */
UQ_EXTERN int uq_info_report(char **text);
/* The GPU libraries uqjit loads at first use (HIP runtime, hipRTC, comgr,
 * CUDA driver, NVRTC) as a JSON array, one object per library: "id",
 * "what", "override" (the variable that replaces the list, e.g.
 * UQJIT_HIP_LIB) and "override_value" (null when unset), "candidates" (the
 * names in the order the loader tries them: sonames, then under
 * $ROCM_PATH/lib and /opt/rocm/lib, or $CUDA_HOME/lib64, $CUDA_PATH/lib64
 * and /usr/local/cuda/lib64), "attempts" (each {"name", "loaded": file} or
 * {"name", "error": dlerror text}) and "loaded" (the file, or null). Probing
 * loads the libraries it finds, as a real run would. The caller frees *json
 * with uq_free. UQ_EINVAL (json NULL), UQ_ENOMEM. */
UQ_EXTERN int uq_info_libraries(char **json);

/* ------------------------------------------------------------------ */
/* Device utilities.                                                    */

/* Small device utilities, so that tools and tests need no GPU runtime
 * header. Each works on the context's device (opened on first use): UQ_ENODEV for
 * a compile-only context or no runtime, UQ_EDEVICE with the runtime's
 * message when a runtime call fails, UQ_EINVAL for NULL arguments. Copies
 * and memsets are synchronous. */
/* Devices of the runtime in use; 0 (and status 0) when there is none, the
 * reason left in uq_last_error(). */
UQ_EXTERN int uq_device_count(int *count);
/* Marketing name ("NVIDIA H200"), truncated to n bytes. */
UQ_EXTERN int uq_device_name(uq_context *ctx, char *buf, size_t n);
/* Device memory of `bytes` (> 0); the caller releases it with
 * uq_device_free on the same context. */
UQ_EXTERN int uq_device_alloc(uq_context *ctx, size_t bytes, void **ptr);
/* NULL is ok. */
UQ_EXTERN int uq_device_free(uq_context *ctx, void *ptr);
UQ_EXTERN int uq_memcpy_h2d(uq_context *ctx, void *dst, const void *src,
                            size_t bytes);
UQ_EXTERN int uq_memcpy_d2h(uq_context *ctx, void *dst, const void *src,
                            size_t bytes);
UQ_EXTERN int uq_memcpy_d2d(uq_context *ctx, void *dst, const void *src,
                            size_t bytes);
/* The same copy, asynchronous on `stream` (NULL: the default stream), for
 * timing a copy with events. */
UQ_EXTERN int uq_memcpy_d2d_async(uq_context *ctx, void *dst, const void *src,
                                  size_t bytes, void *stream);
UQ_EXTERN int uq_memset_d8(uq_context *ctx, void *dst, uint8_t value,
                           size_t bytes);
UQ_EXTERN int uq_synchronize(uq_context *ctx);

/* Streams, events and graphs, for benchmarks and graph-capture tests.
 * Streams are CUstream / hipStream_t handles owned by the caller: made by
 * uq_stream_create, released by uq_stream_destroy (NULL is ok) on the same
 * context. Errors as for the device utilities above. */
UQ_EXTERN int uq_stream_create(uq_context *ctx, void **stream);
UQ_EXTERN int uq_stream_destroy(uq_context *ctx, void *stream);
UQ_EXTERN int uq_stream_synchronize(uq_context *ctx, void *stream);

/* A timing event of the context's device; the caller releases it with
 * uq_event_destroy (NULL is ok) before the context. */
typedef struct uq_event uq_event;
UQ_EXTERN int uq_event_create(uq_context *ctx, uq_event **event);
UQ_EXTERN int uq_event_record(uq_event *event, void *stream);
/* Milliseconds between two recorded events (waits for `end`). */
UQ_EXTERN int uq_event_elapsed_ms(uq_event *start, uq_event *end, float *ms);
UQ_EXTERN void uq_event_destroy(uq_event *event);

/* Stream capture into a graph (CUDA graphs / HIP graphs): begin on a
 * created stream (UQ_EINVAL for the default stream), run uq_decode /
 * uq_store on it (their kernels must already be loaded: a first call that
 * compiles or loads must come before the capture), then end to get an
 * instantiated graph that the caller launches any number of times and
 * releases with uq_graph_destroy (NULL is ok) before the context. */
typedef struct uq_graph uq_graph;
UQ_EXTERN int uq_graph_capture_begin(uq_context *ctx, void *stream);
UQ_EXTERN int uq_graph_capture_end(uq_context *ctx, void *stream,
                                   uq_graph **graph);
UQ_EXTERN int uq_graph_launch(uq_graph *graph, void *stream);
UQ_EXTERN void uq_graph_destroy(uq_graph *graph);

#ifdef __cplusplus
}
#endif

#endif /* UQJIT_TOOLS_H */
