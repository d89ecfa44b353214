/* GPU runtimes behind one interface: the CUDA driver (lib/gpu/platform_cuda.c)
 * and the HIP runtime (lib/gpu/platform_hip.c), both dlopen()ed at first use.
 *
 * Every call checks the runtime's status and turns a failure into
 * UQ_EDEVICE with the call's name and the driver's own message in
 * uq_last_error(); a missing library or driver is UQ_ENODEV naming what was
 * looked for and the variable that overrides it.
 *
 * Threads: all functions are thread-safe. Calls that touch device state take
 * the device handle and make its context current on the calling thread
 * first (CUDA: the retained primary context, cuCtxSetCurrent; HIP:
 * hipSetDevice), because a context is per thread and the caller may be any
 * host thread. */
#ifndef UQ_PLATFORM_H
#define UQ_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* One opened device: owned by the platform that opened it. */
typedef struct uq__pdev uq__pdev;

typedef struct uq__platform {
  const char *name; /* "cuda", "hip" */
  /* Loads the library and initialises the runtime once per process.
   * UQ_ENODEV (with what was tried) when either is missing. */
  int (*init)(void);
  /* Devices visible to the runtime (0 is not an error). */
  int (*device_count)(int *count);
  /* Opens an ordinal: retains its primary context. */
  int (*device_open)(int ordinal, uq__pdev **out);
  void (*device_close)(uq__pdev *dev);
  /* Marketing name ("NVIDIA H200") and canonical target ("sm_90",
   * "gfx942:sramecc+:xnack-"). */
  int (*device_name)(uq__pdev *dev, char *buf, size_t n);
  int (*device_arch)(uq__pdev *dev, char *buf, size_t n);
  /* Makes the device's context current on the calling thread. Cheap. */
  int (*make_current)(uq__pdev *dev);

  /* Code objects (cubin / AMD ELF) from memory; the image may be freed
   * after loading. The function handle lives as long as its module. */
  int (*module_load)(uq__pdev *dev, const void *image, size_t len,
                     void **module);
  void (*module_unload)(uq__pdev *dev, void *module);
  int (*module_function)(uq__pdev *dev, void *module, const char *symbol,
                         void **function);
  /* Launches `function` with ONE by-value parameter block `params` of
   * `params_size` bytes (kernelParams = {params}), no dynamic shared memory,
   * asynchronously on `stream` (NULL = default stream). Does not make the
   * context current: the caller did (hot path). */
  int (*launch)(void *function, const uint32_t grid[3], uint32_t block,
                void *params, void *stream);
  /* As launch, as a programmatic dependent of the kernel before it on the
   * stream where the platform has that (CUDA on sm_90 and newer): the
   * kernel may start while its predecessor still runs (from when every
   * block of that one has started), so it MUST wait for it in device
   * code (griddepcontrol.wait, uq_grid_wait in the templates) before
   * reading its results. NULL where the platform has no such launch. */
  int (*launch_dependent)(void *function, const uint32_t grid[3],
                          uint32_t block, void *params, void *stream);

  /* Describes a KV cache to the Tensor Memory Accelerator for tensor
   * copies of one kv head's slots (templates/sm90/sm90_chunks.hip): a 3-D
   * tensor of 32-bit words, (slot word, kv head, cache row) with
   * padded_slot / 4, kv_heads and rows elements, padded_slot and
   * kv_heads * padded_slot bytes apart (multiples of 16; cache 16-byte
   * aligned), copied in boxes of box_words x 1 x box_rows. Writes the 128
   * bytes of `map` (64-byte aligned). A host call: no device, context or
   * stream is touched, so it may run under graph capture. NULL where the
   * platform has no tensor copies. */
  int (*tensor_map_slots)(void *map, const void *cache, int64_t rows,
                          int32_t kv_heads, int32_t padded_slot,
                          int32_t box_words, int32_t box_rows);

  int (*mem_alloc)(uq__pdev *dev, size_t bytes, void **ptr);
  int (*mem_free)(uq__pdev *dev, void *ptr);
  int (*memcpy_h2d)(uq__pdev *dev, void *dst, const void *src, size_t bytes);
  int (*memcpy_d2h)(uq__pdev *dev, void *dst, const void *src, size_t bytes);
  /* Asynchronous on `stream` (NULL: the default stream). */
  int (*memcpy_d2d)(uq__pdev *dev, void *dst, const void *src, size_t bytes,
                    void *stream);
  int (*memset_d8)(uq__pdev *dev, void *dst, uint8_t value, size_t bytes);
  int (*synchronize)(uq__pdev *dev);

  /* Streams and graph capture (tests and benchmarks; not on a hot path). */
  int (*stream_create)(uq__pdev *dev, void **stream);
  int (*stream_destroy)(uq__pdev *dev, void *stream);
  int (*stream_synchronize)(uq__pdev *dev, void *stream);
  /* Begins a capture on a non-default stream (global mode). */
  int (*capture_begin)(uq__pdev *dev, void *stream);
  /* Ends the capture and instantiates it: *exec is launched by graph_launch
   * and released by graph_destroy. */
  int (*capture_end)(uq__pdev *dev, void *stream, void **exec);
  int (*graph_launch)(uq__pdev *dev, void *exec, void *stream);
  int (*graph_destroy)(uq__pdev *dev, void *exec);

  /* Timing events (benchmarks). elapsed waits for `end` to complete. */
  int (*event_create)(uq__pdev *dev, void **event);
  int (*event_record)(uq__pdev *dev, void *event, void *stream);
  int (*event_elapsed_ms)(uq__pdev *dev, void *start, void *end, float *ms);
  int (*event_destroy)(uq__pdev *dev, void *event);
} uq__platform;

/* The runtimes compiled in (either may fail to init at run time). */
extern const uq__platform uq__platform_cuda;
extern const uq__platform uq__platform_hip;

/* The platform that serves this machine: the first of CUDA, HIP whose
 * runtime initialises and sees at least one device. UQ_ENODEV with every
 * runtime's reason otherwise. The result is remembered (process-wide). */
int uq__platform_pick(const uq__platform **out);

#endif
