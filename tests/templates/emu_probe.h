/* What the emulated-primitive probes (compile_gfx950_emu_prims.c,
 * compile_gfx942_emu_prims.c) share: a probe kernel's NVRTC-route source
 * built from template files and a probe body, its compile, and one run on
 * an NVIDIA device of sm_90 or newer. The probes call a layer's emulated
 * primitives from one 64-thread block and compare every output word with
 * a host model built from the same layout files. */
#ifndef UQ_TEST_EMU_PROBE_H
#define UQ_TEST_EMU_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* The probe's source: the template files `parts` (paths under
 * templates/, read from UQ_SOURCE_ROOT; a NULL entry stands for
 * `constants`) in order, then `probe` (caller frees). Fails the test on a
 * missing file. */
char *emu_probe_source(const char *const *parts, size_t nparts, const char *constants,
                       const char *probe, size_t *len_out);

/* `src` compiled for `target` through the library's NVRTC route, kernel
 * `symbol` (caller frees with uq__free); skips the test without NVRTC. */
void *emu_probe_compile(const char *target, const char *src, size_t len, const char *symbol,
                        size_t *obj_len);

/* The probe's resources on sm_90 (registers, static shared bytes, local
 * bytes), printed; fails without them. */
void emu_probe_resources(const void *obj, size_t obj_len, int *registers, int *shared,
                         int *local);

/* Runs `symbol` of the source (one block of 64 threads, parameters
 * {in, out}) `rounds` times on the first NVIDIA device: before each round
 * `fill(in, round)` writes the inputs and `model(in, want)` the expected
 * words; every output word must equal. Exits 77 without an NVIDIA device
 * of sm_90 or newer. */
void emu_probe_run_on_device(const char *const *parts, size_t nparts, const char *constants,
                             const char *probe, const char *symbol, size_t in_words,
                             size_t out_words, int rounds,
                             void (*fill)(uint32_t *in, int round),
                             void (*model)(const uint32_t *in, uint32_t *want));

#endif
