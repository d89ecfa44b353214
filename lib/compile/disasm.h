/* What a code object says about itself: ISA and resource usage, read from
 * the ELF directly (AMD: the NT_AMDGPU_METADATA msgpack note; NVIDIA: the
 * cubin's .nv.info attributes and .nv.shared.<kernel> section), so that no
 * tool needs to be installed. Disassembly (uq_code_disassemble) spawns
 * llvm-objdump / cuobjdump / nvdisasm. */
#ifndef UQ_DISASM_H
#define UQ_DISASM_H

#include <stddef.h>

#include "uqjit_tools.h"

/* Fills *info for the first kernel of `obj` (a code object: AMD ELF or
 * cubin). `target` (may be NULL) is only a hint; the object's own ELF
 * header decides. Fields that cannot be read are -1 (isa "" when unknown);
 * info->compiler is left "" (the object does not record it; the caller
 * knows which compiler built it). On AMD, registers = vgprs + agprs (one
 * register file on gfx90a and later); on NVIDIA the vgprs/sgprs/agprs fields
 * are -1, registers is EIATTR_REGCOUNT, lds_bytes the .nv.shared.<kernel>
 * size (on sm_90 it includes the 1 KiB the toolchain reserves per block) and
 * scratch_bytes EIATTR_FRAME_SIZE (local memory per thread).
 * UQ_EINVAL when obj is not a 64-bit little-endian ELF of an AMDGPU or CUDA
 * machine, or is truncated. */
int uq__code_info_from_object(const char *target, const void *obj, size_t len,
                              uq_code_info *info);

/* The disassemblers uq_code_disassemble tries, in order, for an AMD code
 * object (amd non-zero; UQJIT_OBJDUMP, when set, replaces the list) or an
 * NVIDIA one: a NULL-terminated list of names looked up on PATH and
 * absolute paths. The only list: uqjit info reports the same one. */
const char *const *uq__disasm_candidates(int amd);

/* Reads a disassembly line by line: parse(line, length, slot) fills one
 * element of `size` bytes and returns 1 for an instruction line, 0 to
 * skip. *out (caller frees) holds the *count accepted elements in order.
 * UQ_ENOMEM names `what`. */
int uq__disasm_lines(const char *text, size_t size,
                     int (*parse)(const char *line, size_t n, void *slot), void **out,
                     size_t *count, const char *what);

#endif
