/* Compilers behind one interface. Each is found at first use (dlopen, or a
 * clang spawned without a shell), never linked. */
#ifndef UQ_COMPILER_H
#define UQ_COMPILER_H

#include <stddef.h>

#include "lib/codegen/emit.h"

typedef struct uq__compiler uq__compiler;

/* The compiler for a canonical target: NVRTC for sm_NN; for gfxNNN hipRTC
 * where it serves that target (Debian's ROCm 5.2 hipRTC: gfx90a) else
 * offline clang; UQJIT_AMD_COMPILER=clang|hiprtc overrides. Compilers are
 * process-wide singletons (never freed). UQ_ENOCOMPILER with what was looked
 * for, and the variable that overrides it, in uq_last_error(); UQ_EIO or
 * UQ_ENOMEM when a compiler was found but could not be run to identify it
 * (for clang: no scratch directory, a failed spawn). */
int uq__compiler_for_target(const char *target, const uq__compiler **out);

/* The route uq__compiler_for_target would pick, without loading anything
 * that is not needed to decide (used to emit a source for dump). */
uq__route uq__route_for_target(const char *target);

uq__route uq__compiler_route(const uq__compiler *cc);
/* Name and full version, e.g. "nvrtc 13.0" or "clang 22.0.0 (/usr/bin/clang-22)". */
const char *uq__compiler_identity(const uq__compiler *cc);
/* The options it passes for `target`, as one string (part of the cache key). */
const char *uq__compiler_options(const uq__compiler *cc, const char *target);

/* The compiler of one route regardless of target (for uq_info_report). */
int uq__compiler_load_route(uq__route route, const uq__compiler **out);
/* Where it was loaded from (library or executable, resolved). */
const char *uq__compiler_location(const uq__compiler *cc);

/* Compiles `src` for `target` into a loadable code object (cubin for NVIDIA,
 * an ELF code object for AMD). *obj (caller frees with uq__free). On
 * UQ_ECOMPILE the log is in uq_last_error(). Thread-safe. */
int uq__compiler_compile(const uq__compiler *cc, const char *target,
                         const char *src, size_t len, const char *name,
                         void **obj, size_t *obj_len);

/* uq__compiler_compile with `extra` options after the compiler's own (not
 * part of any cache key: the caller keeps the code to itself) and the
 * compiler's log in *log (caller frees with uq__free; "" when it wrote
 * none), for tests and tools that read what the compiler says about a
 * kernel (NVRTC with "--ptxas-options=-v": ptxas's resources and
 * performance notes). NVRTC only: UQ_EINVAL for other compilers. */
int uq__compiler_compile_log(const uq__compiler *cc, const char *target,
                             const char *src, size_t len, const char *name,
                             const char *extra, void **obj, size_t *obj_len,
                             char **log);

#endif
