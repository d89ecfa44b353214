/* Prelude for running an NVRTC-route kernel on the host (tests only):
 * takes the place of prelude_nvrtc.hip in a generated source, which is
 * then compiled by the host C++ compiler with contraction off and run by
 * the fiber model of tests/simt/simt_host.h. It defines the NVRTC route
 * marker because the kernel text is the NVRTC route's (the gfx950 layer's
 * emulated primitives require it), and gives every name that prelude
 * defines the same meaning with host operations. */
#define UQ_ROUTE_NVRTC 1
#define UQ_ROUTE_HOST 1

#include <math.h> /* NVRTC predefines the CUDA math functions (ldexp, ...) */

#include "tests/simt/simt_host.h"

typedef unsigned char uq_u8;
typedef unsigned short uq_u16;
typedef unsigned int uq_u32;
typedef int uq_i32;
typedef long long uq_i64;
typedef unsigned long long uq_u64;

#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__
#define __launch_bounds__(n)

#define UQ_WAVE 32
#define UQ_DEV static inline
#define UQ_KERNEL static
#define UQ_LAUNCH_BOUNDS(n)
#define UQ_SHARED static

UQ_DEV int uq_tid() { return (int)threadIdx.x; }
UQ_DEV int uq_bid_x() { return (int)blockIdx.x; }
UQ_DEV int uq_bid_y() { return (int)blockIdx.y; }
UQ_DEV int uq_bid_z() { return (int)blockIdx.z; }
UQ_DEV void uq_barrier() { __syncthreads(); }

UQ_DEV uq_u32 uq_f32_bits(float x) {
  uq_u32 u;
  memcpy(&u, &x, sizeof u);
  return u;
}
UQ_DEV float uq_bits_f32(uq_u32 u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
UQ_DEV float uq_exp2(float x) { return __builtin_exp2f(x); }
UQ_DEV float uq_rint(float x) { return __builtin_rintf(x); }
UQ_DEV float uq_fmax(float a, float b) { return __builtin_fmaxf(a, b); }

/* Compiled with -ffp-contract=off: no operation of the kernel becomes an
 * FMA, these included. */
UQ_DEV float uq_fadd_rn(float a, float b) { return a + b; }
UQ_DEV float uq_fsub_rn(float a, float b) { return a - b; }
UQ_DEV float uq_fmul_rn(float a, float b) { return a * b; }

UQ_DEV uq_u32 uq_lane_xor_u32(uq_u32 v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
UQ_DEV float uq_lane_xor_f32(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}

/* Kernels run one after another here: nothing to overlap or wait for. */
UQ_DEV void uq_grid_dependents() {}
UQ_DEV void uq_grid_wait() {}
