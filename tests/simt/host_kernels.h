/* Generated kernels run on the CPU (tests only): the library's source of a
 * key for an NVIDIA target, with prelude_nvrtc.hip replaced by
 * tests/simt/prelude_host.hip, compiled by the host C++ compiler into a
 * shared object and run by the fiber model of tests/simt/simt_host.h.
 * Only kernels written in portable C++ over the prelude run this way (the
 * portable layer, the gfx950 layer's emulation, the reduce, the prologue
 * and the store);
 * the sm_90 matrix layers are inline PTX. */
#ifndef UQ_TEST_HOST_KERNELS_H
#define UQ_TEST_HOST_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "uqjit.h"

/* Finds the host C++ compiler: $UQ_TEST_CXX, else c++, g++, clang++-22,
 * clang++ on PATH. 0 and its path in out, or UQ_ENOENT. */
int hk_find_compiler(char *out, size_t n);

/* Runs one decode of `shape` as uq_decode does on a device (the prologue
 * when the query rotation is not fused, the decode, the reduce), with
 * every pointer of `args` and `workspace` (the plan's workspace_bytes) in
 * host memory. The plan is made for `target` with the layer `variant`
 * names (uq_plan_make_variant). Kernels are built once per key and kept
 * until hk_shutdown. 0 or a UQ_* status, with the reason on stderr. */
int hk_decode(const uq_shape *shape, const char *target, const char *variant,
              const uq_decode_args *args, void *workspace,
              size_t workspace_bytes);

/* Compiles `cpp` (C++ that includes "tests/simt/prelude_host.hip" and
 * exports extern "C" int uq_host_launch(const unsigned grid[3], const void
 * *params, char *err, size_t errlen), usually through uq_simt_run), once
 * per `name`, and runs it over `grid`. 0; UQ_ECOMPILE; UQ_EDEVICE with the
 * model's message (a barrier that cannot complete) in err. */
int hk_run_source(const char *name, const char *cpp, const uint32_t grid[3],
                  const void *params, char *err, size_t errlen);

/* Runs uq_store's kernel for `target` over `args` (host buffers), as
 * uq_store launches it. 0 or a UQ_* status, with the reason on stderr. */
int hk_store(const uq_store_args *args, const char *target);

/* The variant of the decode kernel the last hk_decode ran (-1: none). */
int hk_last_variant(void);

/* Unloads the kernels and removes their build directory. */
void hk_shutdown(void);

#endif
