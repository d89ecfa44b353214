/* AMD comgr (libamd_comgr, loaded with dlopen) as the first reader of AMD
 * code objects: metadata and disassembly. Every failure here is meant to be
 * recoverable: the callers in disasm.c fall back to the built-in ELF note
 * reader and to llvm-objdump. Debian 12's comgr 2.4 (ROCm 5.2) reads the
 * metadata of every code-object version but names the ISA only of v4
 * objects and knows no processor newer than its LLVM (no gfx94x/gfx95x);
 * those cases fail cleanly and fall back. */
#ifndef UQ_COMGR_H
#define UQ_COMGR_H

#include <stddef.h>

#include "lib/base/buf.h"
#include "uqjit_tools.h"

/* Fills the AMD fields of *info (isa, vgprs, sgprs, agprs, registers =
 * vgprs + agprs, lds_bytes, scratch_bytes) for the first kernel of the AMD
 * code object `obj`; fields absent from the metadata are -1, info->compiler
 * is left untouched. On failure *info is untouched and the status is
 * UQ_ENOENT (comgr not found: UQJIT_COMGR_LIB, else the candidates of
 * lib/base/libs.h) or
 * UQ_EINVAL (comgr rejected the object or its metadata), with the reason in
 * uq_last_error(). Serialised process-wide (comgr 2.4 keeps LLVM state
 * that is not thread-safe). */
int uq__comgr_metadata(const void *obj, size_t len, uq_code_info *info);

/* Appends comgr's disassembly of the AMD code object `obj` to *out. The ISA
 * is the object's (comgr's own reading, else the metadata's amdhsa.target,
 * else "amdgcn-amd-amdhsa--" + `target`, which may be NULL). UQ_ENOENT when
 * comgr is not found, UQ_EINVAL when it cannot disassemble the object (an
 * ISA unknown to it, a corrupt object), UQ_ENOMEM; *out is only appended to
 * on success. Serialised like uq__comgr_metadata. */
int uq__comgr_disassemble(const char *target, const void *obj, size_t len,
                          uq__buf *out);

/* "comgr M.m" of the library that would be used now, or "" when none
 * loads (for labelling output after a comgr call succeeded; when none loads
 * the reason is left in uq_last_error()). */
void uq__comgr_identity(char *buf, size_t n);

#endif
