/* uqjit: run-time specialized decode attention for the UltraQuant 4-bit KV
 * cache (see docs/FORMAT.md for the contract this library honours).
 *
 * Conventions: every function that can fail returns 0 on success or a
 * negative UQ_E* status; uq_strerror() names it and uq_last_error() gives
 * the detail of the calling thread's last failure (a compiler log, a
 * dlerror text, which argument was refused). Pointers a function returns
 * are owned by the caller and released with uq_free() unless the comment
 * says otherwise. A call refused for a bad argument writes nothing to the
 * caller's buffers, except that a result it hands back through a pointer
 * argument (a plan, a context or buffer pointer, an instruction mix) is
 * cleared (zeroed or NULL) once that pointer is known to be non-NULL.
 *
 * This header is what an integrator uses: the format, plans and keys,
 * contexts, compiling and the cache, decode and store. The tools' part of
 * the same library (code objects and disassembly, instruction mix, the
 * info report, device memory, streams, events and graphs) is declared in
 * uqjit_tools.h. */
#ifndef UQJIT_H
#define UQJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(UQ_BUILDING_LIBRARY) && defined(__GNUC__)
#define UQ_EXTERN __attribute__((visibility("default")))
#else
#define UQ_EXTERN /* nothing */
#endif

#define UQ_VERSION_MAJOR 0
#define UQ_VERSION_MINOR 1
#define UQ_VERSION_PATCH 0
#define UQ_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ */
/* Status codes: one list generates the enum, uq_strerror, uq_err_name. */

#define UQ_ERRNO_MAP(XX)                                                     \
  XX(EINVAL, -1, "invalid argument")                                         \
  XX(ENOMEM, -2, "out of memory")                                            \
  XX(EOVERFLOW, -3, "size overflows")                                        \
  XX(EALIGN, -4, "misaligned pointer")                                       \
  XX(EUNSUPPORTED, -5, "shape not eligible for the UltraQuant decode path")  \
  XX(ENOCOMPILER, -6, "no compiler found for the target")                    \
  XX(ECOMPILE, -7, "kernel compilation failed")                              \
  XX(ENOJIT, -8, "kernel not in cache and UQJIT_DISABLE_JIT is set")         \
  XX(EIO, -9, "input/output error")                                          \
  XX(ECORRUPT, -10, "corrupt cache entry")                                   \
  XX(EPERM, -11, "refused: a cache directory breaks the trust rule")         \
  XX(ENODEV, -12, "no GPU device or runtime found")                          \
  XX(EDEVICE, -13, "GPU runtime call failed")                                \
  XX(ENOENT, -14, "not found")                                               \
  XX(ENOSPC, -15, "no space left on device")

typedef enum {
#define UQ__ERRNO_ENUM(name, value, text) UQ_##name = value,
  UQ_ERRNO_MAP(UQ__ERRNO_ENUM)
#undef UQ__ERRNO_ENUM
  UQ_OK = 0
} uq_status;

/* Static text for a status ("invalid argument"); never NULL. */
UQ_EXTERN const char *uq_strerror(int status);
/* Static name for a status ("UQ_EINVAL"); never NULL. */
UQ_EXTERN const char *uq_err_name(int status);
/* Detail of the calling thread's last failure ("" if none). Valid until the
 * thread's next uqjit call. */
UQ_EXTERN const char *uq_last_error(void);

/* Static "MAJOR.MINOR.PATCH" of the library loaded (UQ_VERSION_STRING of
 * the build); never NULL. */
UQ_EXTERN const char *uq_version_string(void);

/* Release memory returned by uqjit (sources, names, reports). NULL is ok. */
UQ_EXTERN void uq_free(void *ptr);

/* ------------------------------------------------------------------ */
/* The format (FORMAT.md sections 1-4).                                 */

typedef enum {
  UQ_DTYPE_BF16 = 1,
  UQ_DTYPE_FP16 = 2,
  UQ_DTYPE_FP32 = 3
} uq_dtype;

/* Byte offsets inside one slot for head_dim D (a multiple of 32). */
typedef struct uq_slot_layout {
  uint32_t head_dim;
  uint32_t k_codes;  /* 0 */
  uint32_t k_scales; /* D/2 */
  uint32_t v_codes;  /* D/2 + D/32 */
  uint32_t v_scales; /* D + D/32 */
  uint32_t size;     /* D + 2*D/32 */
} uq_slot_layout;

/* Fills *out for head_dim (a positive multiple of 32). UQ_EINVAL otherwise. */
UQ_EXTERN int uq_slot_layout_get(int head_dim, uq_slot_layout *out);
/* Slot size in bytes, or 0 when head_dim is not a positive multiple of 32. */
UQ_EXTERN size_t uq_slot_size(int head_dim);

/* FP4 E2M1 code (0..15) -> value. */
UQ_EXTERN float uq_fp4_value(unsigned code);
/* UE8M0 byte -> 2^(byte-127); byte 0 -> 0. */
UQ_EXTERN float uq_ue8m0_value(uint8_t byte);

/* Encodes one group of 32 fp32 values (FORMAT.md section 3): writes the
 * UE8M0 byte and 16 packed code bytes (even element in the low nibble). */
UQ_EXTERN void uq_encode_group(const float x[32], uint8_t *scale_byte,
                               uint8_t packed[16]);

/* In-place fast Walsh-Hadamard transform of n = 2^k >= 1 fp32 values with
 * unnormalised butterflies in stage order 1, 2, 4, ... then one multiply by
 * (float)(1/sqrt(n)). UQ_EINVAL when n is not a power of two. */
UQ_EXTERN int uq_fwht(float *x, int n);

/* fp32 -> FP8 E4M3FN (round to nearest even, saturating at +-448) -> fp32.
 * NaN stays NaN. */
UQ_EXTERN float uq_haircut_e4m3(float x);

/* Scalar conversions used by every host path (round to nearest even). */
UQ_EXTERN float uq_bf16_to_float(uint16_t h);
UQ_EXTERN uint16_t uq_float_to_bf16(float f);
UQ_EXTERN float uq_fp16_to_float(uint16_t h);
UQ_EXTERN uint16_t uq_float_to_fp16(float f);

/* Encodes one token of one kv head: K (rotated first) and V rows of
 * head_dim elements of `dtype` into the slot (at least uq_slot_size bytes).
 * head_dim must be a power of two >= 32. */
UQ_EXTERN int uq_encode_slot(int head_dim, uq_dtype dtype, const void *k,
                             const void *v, uint8_t *slot);

/* Decodes a slot: k_rot = dequantized rotated K, v = dequantized V
 * (head_dim floats each; either may be NULL). */
UQ_EXTERN int uq_decode_slot(int head_dim, const uint8_t *slot, float *k_rot,
                             float *v);

/* ------------------------------------------------------------------ */
/* Decode shapes, the launcher policy (FORMAT.md section 6) and keys.  */

/* A decode shape. Fill with uq_shape_init() then set fields; 0 means the
 * default where one is stated. Strides are in elements. */
typedef struct uq_shape {
  int32_t batch;              /* B: sequences in this call (and the workspace's max) */
  int32_t num_q_heads;        /* Hq */
  int32_t num_kv_heads;       /* Hk */
  int32_t head_dim;           /* D */
  int32_t block_size;         /* tokens per cache block */
  int32_t max_blocks_per_seq; /* block table row length */
  int32_t padded_slot;        /* bytes per slot in the cache; 0 = slot size rounded up to 4 */
  int32_t max_num_kv_splits;  /* 0 = 32 */
  float scale;                /* softmax scale; 0 = 1/sqrt(D) */
  int32_t has_sinks;          /* attention sinks: refused */
  int32_t sliding_window;     /* > 0: refused */
  uq_dtype q_dtype;           /* query and output dtype: bf16 (default) or fp16 */
  int64_t q_stride_seq;       /* 0 = Hq * D */
  int64_t q_stride_head;      /* 0 = D */
  int64_t q_stride_dim;       /* between a head's elements; 0 = 1. Any
                               * other value (a query viewed with a step,
                               * as vLLM's launcher allows) is read by the
                               * query prologue, never fused */
} uq_shape;

/* Zeroes *shape (every default) with q_dtype bf16. NULL is ignored. */
UQ_EXTERN void uq_shape_init(uq_shape *shape);

typedef enum {
  UQ_KERNEL_DECODE = 1,   /* decode over one (seq, kv head, partition) */
  UQ_KERNEL_REDUCE = 2,   /* partition reduce */
  UQ_KERNEL_PROLOGUE = 3, /* query rotation + haircut into the workspace */
  UQ_KERNEL_STORE = 4     /* K/V rows -> slots */
} uq_kernel_kind;

/* Targets. Wherever a target string is accepted (plans, keys, contexts,
 * the uqjit command) it is an AMD "gfxNNN" with optional features
 * ("gfx942:sramecc+:xnack-"), an NVIDIA "sm_NN" or "sm_NNa", or a GPU name,
 * any case: "mi355x" = "gfx950", "mi300x" and "mi325x" = "gfx942",
 * "mi250x", "mi250" and "mi210" = "gfx90a", "h100" and "h200" = "sm_90a".
 * An AMD GPU name stands for the bare architecture, whose code objects
 * ROCm loads in every SRAM ECC and XNACK mode; a Hopper name for the
 * arch-specific sm_90a the device reports. A context on a device that
 * reports features ("gfx950:sramecc+:xnack-") finds in the cache an entry
 * built for its exact target first, then one built for fewer of its
 * features, down to the bare architecture: kernels warmed for "gfx950" or
 * "mi355x" serve an MI355X however it is set up, while kernels warmed for
 * "gfx950:sramecc+:xnack-" serve only devices in that mode. Every target is
 * canonicalised (lower case, features sorted) before use; an unknown one is
 * UQ_EINVAL with the accepted forms in uq_last_error(). At most
 * UQ_TARGET_MAX bytes with the NUL. */
#define UQ_TARGET_MAX 48
/* The target taken where none is named: by uq_plan_make,
 * uq_plan_make_variant and uq_store_key for a NULL target, and by the
 * uqjit command's --target. */
#define UQ_DEFAULT_TARGET "gfx950"

/* The canonical form of a target (a GPU name resolved, lower case,
 * features sorted) into out (n bytes, UQ_TARGET_MAX is enough). UQ_EINVAL
 * for an unknown or malformed target (the accepted forms in
 * uq_last_error()) or a NULL argument; out is untouched then. */
UQ_EXTERN int uq_target_canonical(const char *target, char *out, size_t n);

/* The target layer inside the decode kernel. A key's name spells it as
 * v0 / v1 / v2 / v3 / v4; uq_plan_make_variant says which one a plan gets,
 * and its variant argument, uq_context_options.variant, UQJIT_VARIANT and
 * the command's --variant name one: "portable", "matrix", "warpgroup",
 * "gfx950-emu", "gfx942-emu", or "auto" for the best. */
typedef enum {
  UQ_VARIANT_PORTABLE = 0,  /* scalar FMA: correct on any GPU */
  UQ_VARIANT_MATRIX = 1,    /* the target's matrix units: mma.sync on NVIDIA sm_90+,
                               scaled FP4 MFMA on gfx950, FNUZ FP8 and bf16 MFMA on
                               gfx942; no other target has one */
  UQ_VARIANT_WARPGROUP = 2, /* Hopper warpgroup matrix layer (wgmma): NVIDIA sm_90a only */
  UQ_VARIANT_GFX950_EMU = 3, /* the gfx950 layer run on NVIDIA sm_90+ with every AMD
                               instruction emulated exactly: a test vehicle, only
                               when asked for by name ("gfx950-emu") */
  UQ_VARIANT_GFX942_EMU = 4 /* the gfx942 layer likewise ("gfx942-emu") */
} uq_kernel_variant;

/* A kernel specialization key: byte-reproducible (memset then fill), so it
 * can be hashed and compared as bytes. Fields a kind does not use are 0. */
typedef struct uq_key {
  uint32_t kind;                 /* uq_kernel_kind */
  uint32_t dtype;                /* uq_dtype of query/output (decode, reduce, prologue) or K/V rows (store) */
  int32_t head_dim;
  int32_t num_kv_heads;
  int32_t num_partitions;
  int32_t max_blocks_per_seq;
  int32_t query_group_size;
  int32_t kv_block_size;
  int32_t padded_slot;
  int32_t fuse_qrot;
  int32_t tile_groups_per_partition;
  int32_t variant;               /* uq_kernel_variant: which target layer (0..3) */
  int64_t scale_e8;              /* round(scale, 8) as llround(scale * 1e8) */
  int64_t stride_q_seq;
  int64_t stride_q_head;
  char target[UQ_TARGET_MAX];    /* canonical target, e.g. "gfx950", "sm_90a" */
  int64_t stride_q_dim;          /* prologue only: the query's element stride
                                    when not 1 (>= 2; 0 = 1); named "_se<n>" */
} uq_key;

/* Readable name spelling out every field, e.g.
 * "uq_decode_gfx950_bf16_v0_d256_hk1_p16_mb64_s0.06250000_qg8_bs32_ps272_fq1_t1_sq2048_sh256"
 * (the target's ':' feature separators are spelled '.').
 * Writes at most n bytes (NUL included); returns the length it needed. */
UQ_EXTERN int uq_key_name(const uq_key *key, char *buf, size_t n);
/* Inverse of uq_key_name. UQ_EINVAL on a malformed name. */
UQ_EXTERN int uq_key_parse(const char *name, uq_key *key);
/* Checks that a key is one uqjit can generate. UQ_EINVAL otherwise. */
UQ_EXTERN int uq_key_validate(const uq_key *key);

#define UQ_PLAN_MAX_KERNELS 3
#define UQ_REASON_MAX 160

/* What a decode of a shape needs: eligibility, sizing, kernels, grids and
 * the workspace. A plain value; nothing to free. */
typedef struct uq_plan {
  int32_t eligible;
  char reason[UQ_REASON_MAX];      /* why not eligible ("" when eligible) */
  int32_t num_partitions;          /* P */
  int32_t tile_groups_per_partition;
  int32_t query_group_size;        /* QG */
  int32_t fuse_qrot;
  int32_t padded_slot;             /* resolved */
  float scale;                     /* resolved */
  uint32_t decode_grid[3];         /* (B, Hk, P) */
  uint32_t reduce_grid[3];         /* (B, Hq, D/64) */
  uint32_t prologue_grid[3];       /* (B, Hq, 1) when not fused, else 0 */
  uint32_t block_threads;          /* threads per block of the decode kernel */
  /* Workspace layout in bytes (offsets 256-byte aligned). */
  size_t ws_segm_out;              /* bf16 [B, Hk, P, QG, D] */
  size_t ws_segm_max;              /* fp32 [B, Hk, P, QG] */
  size_t ws_segm_sum;              /* fp32 [B, Hk, P, QG] */
  size_t ws_q_rot;                 /* fp32 [B, Hq, D] when not fused; else 0 */
  size_t workspace_bytes;
  int32_t num_kernels;             /* decode, reduce[, prologue] */
  uq_key kernels[UQ_PLAN_MAX_KERNELS];
} uq_plan;

/* Plans a decode of `shape` for `target` (e.g. "gfx950", "sm_90a"; NULL =
 * UQ_DEFAULT_TARGET) with the layer UQJIT_VARIANT asks for (read at every call):
 * uq_plan_make_variant(shape, target, NULL, plan). */
UQ_EXTERN int uq_plan_make(const uq_shape *shape, const char *target,
                           uq_plan *plan);

/* Plans a decode of `shape` for `target` with the layer `variant` asks for.
 * The decode kernel's variant is the best layer the target has that serves
 * the shape's head_dim and query group size (docs/FORMAT.md lists what
 * each layer serves): UQ_VARIANT_WARPGROUP on NVIDIA sm_90a (the
 * arch-specific Hopper target a compute capability 9.0 device reports),
 * UQ_VARIANT_MATRIX on other NVIDIA sm_90 and newer targets (plain sm_90,
 * sm_100a, ...) and on gfx950 (the MI355X layer), for head_dim 256 and
 * query groups of 6, 8 or 16; UQ_VARIANT_PORTABLE for every other shape
 * it serves (head_dim 64, 128 or 256, query groups of 1 to 16) and on
 * every other target.
 * `variant` NULL takes UQJIT_VARIANT (an invalid value is warned about
 * once and ignored); "auto" asks for the best layer; a layer name asks for
 * the highest layer at or below it that the target has and that serves
 * the shape: "portable" always gets UQ_VARIANT_PORTABLE, "matrix" gets
 * UQ_VARIANT_MATRIX where the target has that layer, "warpgroup" is the
 * sm_90a default spelled out, "gfx950-emu" gets UQ_VARIANT_GFX950_EMU on
 * NVIDIA sm_90 and newer (never chosen otherwise). The reduce and
 * prologue keys carry the decode key's variant (so the layers' kernels
 * stay apart in one cache) but behave the same for every variant.
 * A shape no layer serves is not an error: returns 0 with plan->eligible
 * = 0 and the reason. UQ_EINVAL / UQ_EOVERFLOW for malformed shapes
 * (non-positive sizes, Hq % Hk != 0, a bad padded_slot, dtype or scale,
 * overflowing sizes, query strides that do not address two sequences with
 * 64-bit byte offsets), an unknown target or an unknown variant name. */
UQ_EXTERN int uq_plan_make_variant(const uq_shape *shape, const char *target,
                                   const char *variant, uq_plan *plan);

/* Key of the store kernel for rows of `dtype`. */
UQ_EXTERN int uq_store_key(int head_dim, int num_kv_heads, int padded_slot,
                           uq_dtype dtype, const char *target, uq_key *key);

/* ------------------------------------------------------------------ */
/* The CPU reference (double precision) and CPU store: the golden model. */

/* Host (or device, for uq_decode) buffers of one decode call. */
typedef struct uq_decode_args {
  const void *query;          /* [B, Hq, D] of q_dtype, strides from the shape */
  const uint8_t *kv_cache;    /* [num_blocks, block_size, Hk, padded_slot] */
  int64_t num_blocks;         /* blocks in kv_cache (bounds for the block table) */
  const int32_t *block_table; /* [B, max_blocks_per_seq] */
  const int32_t *seq_lens;    /* [B], 1 <= seq_len <= max_blocks_per_seq*block_size
                               * (uq_decode cannot check it: see there) */
  void *out;                  /* [B, Hq, D] of q_dtype, contiguous */
} uq_decode_args;

/* Computes the decode on the CPU in double precision from the encoded
 * cache, with the query rotated and haircut, and writes `out` in the query
 * dtype. Refuses (and writes nothing) on bad input. Does not require the
 * shape to be eligible for the fast path (any D that is a power of 2). */
UQ_EXTERN int uq_reference_decode(const uq_shape *shape,
                                  const uq_decode_args *args);
/* Same, writing fp64 [B, Hq, D] to out64 instead of args->out (may be NULL). */
UQ_EXTERN int uq_reference_decode_f64(const uq_shape *shape,
                                      const uq_decode_args *args,
                                      double *out64);

/* K/V rows of one store call. Row t, head h starts at element
 * t*stride_token + h*stride_head. */
typedef struct uq_store_args {
  const void *k;              /* [T, Hk, D] of dtype */
  const void *v;
  int64_t k_stride_token, k_stride_head; /* 0 = Hk*D, D */
  int64_t v_stride_token, v_stride_head;
  const int64_t *slot_mapping; /* [T]: slot = block * block_size + row; < 0 = skip */
  int64_t num_tokens;
  uint8_t *kv_cache;          /* [num_blocks, block_size, Hk, padded_slot] */
  int64_t num_blocks;
  int32_t block_size;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t padded_slot;        /* 0 = slot size rounded up to 4 */
  uq_dtype dtype;
} uq_store_args;

/* Encodes rows into slots on the CPU. Skipped slots are untouched. */
UQ_EXTERN int uq_reference_store(const uq_store_args *args);

/* ------------------------------------------------------------------ */
/* Contexts, kernel sources, compilation and the code-object cache.    */

typedef struct uq_context uq_context;

/* ABI: the library reads every field, and fields are only added at the
 * end (`variant` is the newest), so a program compiled against a uqjit.h
 * without a field passes a smaller struct and must be recompiled before it
 * runs with a library that has it. Source that fills the struct with
 * uq_context_options_init, then sets fields, needs no change. */
typedef struct uq_context_options {
  const char *target;    /* NULL: the device's target; required when device < 0 */
  int device;            /* GPU ordinal; -1: no device (generate and compile only) */
  const char *cache_dir; /* writable cache directory; NULL: UQJIT_CACHE_DIR, XDG, ~/.cache */
  int use_disk_cache;    /* 1 (default): read and write the on-disk cache */
  const char *variant;   /* the decode layer, as uq_plan_make_variant takes it;
                          * NULL: UQJIT_VARIANT, read once, when the context
                          * is created */
} uq_context_options;

/* Defaults: device 0, its own target, the default cache directory, disk
 * cache on, the layer UQJIT_VARIANT asks for. NULL is ignored. */
UQ_EXTERN void uq_context_options_init(uq_context_options *opts);
/* Creates a context (opts NULL = defaults with device 0). With a target
 * nothing is loaded until first use (a target the device cannot run is
 * refused then, UQ_EINVAL); without one the device is opened now to read
 * its target. The layer its plans use is fixed now: opts->variant, or
 * UQJIT_VARIANT as it is set now (uq_decode reads no environment). An
 * unusable cache directory is not an error: the context degrades to fewer
 * cache layers and warns once. The caller destroys it.
 * UQ_EINVAL (device < -1, no target for device -1, unknown target or
 * variant name),
 * UQ_ENODEV / UQ_EDEVICE (no runtime or device), UQ_ENOMEM. One context
 * may serve many threads. */
UQ_EXTERN int uq_context_create(const uq_context_options *opts,
                                uq_context **out);
/* Unloads every kernel and releases the context (NULL is ok). No call on it
 * may be running; device buffers, streams, events and graphs made with it
 * are the caller's to release first. */
UQ_EXTERN void uq_context_destroy(uq_context *ctx);
/* The context's canonical target string (owned by the context). */
UQ_EXTERN const char *uq_context_target(const uq_context *ctx);
/* The plan uq_decode makes for `shape` on this context: its target and
 * the layer fixed when it was created (uq_plan_make_variant's rules).
 * Size the workspace with its workspace_bytes. Reads no environment
 * variable. Errors as uq_plan_make_variant's; UQ_EINVAL for NULL. */
UQ_EXTERN int uq_context_plan(const uq_context *ctx, const uq_shape *shape,
                              uq_plan *plan);

/* Generated source of a key (NUL-terminated; caller frees with uq_free). */
UQ_EXTERN int uq_kernel_source(const uq_key *key, char **src, size_t *len);

/* Progress of uq_compile_keys: called once per key, from any thread but
 * never concurrently. `from_cache` is 1 for a disk or memory hit. */
typedef void (*uq_progress_fn)(void *user, size_t done, size_t total,
                               const uq_key *key, int status, int from_cache);

typedef struct uq_compile_summary {
  uint64_t keys;      /* distinct keys asked for */
  uint64_t compiled;  /* compiled now */
  uint64_t hits;      /* found on disk or in memory */
  uint64_t failed;
  double seconds;     /* wall time of the call */
} uq_compile_summary;

/* Compiles (or finds in the cache) every key for its target with `jobs`
 * threads (0 = number of CPUs). Does not need a device. Returns the first
 * failure's status; the rest are still attempted. With the disk cache on,
 * a kernel compiled but not stored there (disk full, read-only or
 * untrusted directory) counts as failed with the store's status
 * (UQ_ENOSPC, UQ_EPERM, UQ_EIO); it still runs from this context. */
UQ_EXTERN int uq_compile_keys(uq_context *ctx, const uq_key *keys, size_t n,
                              int jobs, uq_progress_fn progress, void *user,
                              uq_compile_summary *summary);

/* Counters of a context's specialization table. */
typedef struct uq_stats {
  uint64_t hits;         /* table hits */
  uint64_t misses;       /* table misses */
  uint64_t disk_hits;    /* misses served from the disk cache */
  uint64_t compiles;     /* misses that ran a compiler */
  double compile_seconds;
} uq_stats;
UQ_EXTERN int uq_get_stats(const uq_context *ctx, uq_stats *stats);

/* Cache maintenance on one directory (NULL = the default writable one).
 * Entries live in <dir>/v2/<target>/<2 hex>/<30 hex>.<16 hex>.co: the
 * kernel's digest (format version, target, symbol, generated source), then
 * the compiler's (identity and options); directories of older formats
 * (v1) are ignored (uq_cache_legacy_dirs lists them). */
typedef struct uq_cache_entry {
  const char *path;      /* valid during the callback only, like every string */
  const char *target;
  uint64_t size;
  int64_t mtime;
  int valid;             /* header and payload verified */
  /* Provenance recorded in the entry ("" / 0 when it did not parse). */
  const char *key_name;  /* uq_key_name of the kernel */
  const char *compiler;  /* identity of the compiler that built it */
  const char *options;   /* its options */
  const char *route;     /* "nvrtc", "clang" or "hiprtc" */
  int64_t created;       /* unix seconds */
  const char *layer;     /* the cache directory (layer root) it lies in */
  /* Why it is bad, naming the one rule it broke (docs/RELIABILITY.md,
   * "Trust model"): e.g. "a symbolic link", "a file writable by its group
   * (mode 0664)", "a directory (mode 0700) owned by uid 1000, not this
   * user (uid 0) or root", "corrupt: ..."; "" when valid. A directory the
   * loader refuses is listed as one bad entry with its own path. */
  const char *problem;
} uq_cache_entry;
typedef int (*uq_cache_visit_fn)(void *user, const uq_cache_entry *entry);
/* The directories a context with cache directory `dir` searches, in that
 * order (the cache's layers). A system layer under the install prefix,
 * <prefix>/share/uqjit/cache (found relative to the loaded libuqjit, so a
 * moved prefix keeps it), comes last without configuration: an image or
 * package can ship warmed kernels there. */
typedef struct uq_cache_layer {
  const char *path;   /* absolute; valid during the callback only */
  int writable;       /* 1: the writable directory, 0: a read-only layer */
  const char *origin; /* where it was named: "argument" (dir),
                         "UQJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME",
                         "UQJIT_CACHE_PATH" or "system" */
  int exists;         /* 1 when it is a directory now */
} uq_cache_layer;
typedef int (*uq_cache_layer_fn)(void *user, const uq_cache_layer *layer);
/* Calls visit (stops when it returns non-zero) for the writable directory
 * (`dir`, NULL: the default; left out when none can be named), each
 * absolute UQJIT_CACHE_PATH layer not already listed, then the system
 * layer. Creates nothing. UQ_EINVAL (visit NULL), UQ_ENOMEM. */
UQ_EXTERN int uq_cache_layers(const char *dir, uq_cache_layer_fn visit,
                              void *user);
/* Makes the cache directory `dir` (NULL: the default) readable by every
 * user, for an image whose serving user is not the one that warmed it:
 * the root and every directory of the layout 0755, every entry 0644
 * (never group- or world-writable: the loader's trust rule still holds,
 * docs/RELIABILITY.md). Only what the caller owns can change; links and
 * other files are left alone (the loader refuses them). *changed (may be
 * NULL) counts the modes changed. UQ_ENOENT (no such directory), UQ_EPERM
 * (a level the caller does not own is not readable by all), UQ_EIO. */
UQ_EXTERN int uq_cache_share(const char *dir, uint64_t *changed);
/* Finds the cached code object of `key` without compiling or loading any
 * compiler, the way a context with UQJIT_DISABLE_JIT=1 would: in `dir`
 * (NULL: the default writable directory) then in each UQJIT_CACHE_PATH
 * layer and the system layer (uq_cache_layers), under the key's target and
 * then each target with fewer features a device reporting it loads,
 * taking the first valid entry of the kernel whatever compiler built it.
 * 0 and one call of `visit` (may be NULL) with that entry (its layer
 * set); UQ_ENOENT when no valid entry exists; UQ_EINVAL for an invalid
 * key; UQ_ENOMEM. Creates, changes and removes nothing. */
UQ_EXTERN int uq_cache_find(const char *dir, const uq_key *key,
                            uq_cache_visit_fn visit, void *user);
/* Calls visit for each entry (stops when it returns non-zero). */
UQ_EXTERN int uq_cache_list(const char *dir, uq_cache_visit_fn visit,
                            void *user);
/* Verifies every entry; counts valid and bad ones. Bad ones are kept. */
UQ_EXTERN int uq_cache_verify(const char *dir, uint64_t *good, uint64_t *bad);
/* Removes bad entries and stale temporary files, then the least recently
 * used entries until the total is <= max_bytes. */
UQ_EXTERN int uq_cache_prune(const char *dir, uint64_t max_bytes,
                             uint64_t *removed, uint64_t *bytes_left);
/* The writable cache directory in effect (caller frees). */
UQ_EXTERN int uq_cache_default_dir(char **dir);
/* A directory of an older cache format under a cache directory: `path`
 * (dir/v1, ...; valid during the callback only) of format
 * `format_version`. This version never reads its entries (their names and
 * digests differ), so removing it loses nothing this version can use. */
typedef int (*uq_cache_legacy_fn)(void *user, const char *path,
                                  int format_version);
/* Calls visit (stops when it returns non-zero) for each directory of an
 * older cache format under the cache directory `dir` (one layer's root;
 * NULL: the default writable one), oldest first. Reads nothing inside
 * them and creates, changes and removes nothing. 0 (also when there is
 * none, or no directory `dir`); UQ_EINVAL (visit NULL); UQ_ENOENT (dir
 * NULL and no default can be named); UQ_ENOMEM. */
UQ_EXTERN int uq_cache_legacy_dirs(const char *dir, uq_cache_legacy_fn visit,
                                   void *user);

/* ------------------------------------------------------------------ */
/* Launching on the GPU. Buffers in uq_decode_args / uq_store_args are   */
/* device pointers here. `stream` is a CUstream / hipStream_t (NULL =   */
/* the default stream).                                                 */

/* Runs the query prologue (when not fused), the decode and the reduce,
 * asynchronously on `stream`; the caller owns every buffer and keeps them
 * alive until the stream has run. workspace: at least plan.workspace_bytes,
 * 256-byte aligned (uq_context_plan's plan says how much). The layer is the
 * context's; no environment variable is read. Validates every argument
 * host-side first and launches
 * nothing on bad input: UQ_EINVAL (NULL pointers, too small a workspace,
 * num_blocks <= 0), UQ_EALIGN (out, kv_cache, a fused query and its rows
 * 16 bytes; a query the prologue reads, its element size; block_table,
 * seq_lens 4; workspace 256), UQ_EOVERFLOW,
 * UQ_EUNSUPPORTED (shape not eligible: uq_plan_make's reason), UQ_ENODEV
 * (compile-only context), compile and load failures (UQ_ECOMPILE, ...), and
 * UQ_EDEVICE from the launches. What lives in device memory cannot be
 * checked: a seq_lens[b] above max_blocks_per_seq * block_size is clamped
 * by the kernels to the block table's span, and block table entries are
 * trusted to be < num_blocks. On a repeated shape it allocates nothing and
 * makes no synchronous runtime call (graph capture is safe). */
UQ_EXTERN int uq_decode(uq_context *ctx, const uq_shape *shape,
                        const uq_decode_args *args, void *workspace,
                        size_t workspace_bytes, void *stream);
/* Encodes K/V rows into the device cache, asynchronously on `stream`;
 * negative slots are skipped. Validated host-side first (UQ_EINVAL,
 * UQ_EALIGN: k and v to their element size, slot_mapping 8, kv_cache 16;
 * UQ_EOVERFLOW; UQ_ENODEV for a compile-only context). slot_mapping lives
 * in device memory: the kernel skips slots at or past num_blocks *
 * block_size like negative ones. num_tokens 0 launches nothing. */
UQ_EXTERN int uq_store(uq_context *ctx, const uq_store_args *args,
                       void *stream);

#ifdef __cplusplus
}
#endif

#endif /* UQJIT_H */
