/* Prelude for hipRTC (AMD): the HIP runtime headers are implicitly
 * available, so the templates' portable names map onto HIP's. */
#define UQ_ROUTE_HIPRTC 1

typedef unsigned char uq_u8;
typedef unsigned short uq_u16;
typedef unsigned int uq_u32;
typedef int uq_i32;
typedef long long uq_i64;
typedef unsigned long long uq_u64;

#define UQ_WAVE 64
#define UQ_DEV static __device__ inline __attribute__((always_inline))
#define UQ_KERNEL extern "C" __global__
#define UQ_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define UQ_SHARED __shared__

UQ_DEV int uq_tid() { return (int)threadIdx.x; }
UQ_DEV int uq_bid_x() { return (int)blockIdx.x; }
UQ_DEV int uq_bid_y() { return (int)blockIdx.y; }
UQ_DEV int uq_bid_z() { return (int)blockIdx.z; }
UQ_DEV void uq_barrier() { __syncthreads(); }

UQ_DEV uq_u32 uq_f32_bits(float x) { return __builtin_bit_cast(uq_u32, x); }
UQ_DEV float uq_bits_f32(uq_u32 u) { return __builtin_bit_cast(float, u); }
UQ_DEV float uq_exp2(float x) { return __builtin_exp2f(x); }
UQ_DEV float uq_rint(float x) { return __builtin_rintf(x); }
UQ_DEV float uq_fmax(float a, float b) { return __builtin_fmaxf(a, b); }

/* Explicitly rounded operations (see the clang prelude: the rotation and
 * the encoders have no multiply-add pair for a contraction to fuse). */
UQ_DEV float uq_fadd_rn(float a, float b) {
#pragma clang fp contract(off)
  return a + b;
}
UQ_DEV float uq_fsub_rn(float a, float b) {
#pragma clang fp contract(off)
  return a - b;
}
UQ_DEV float uq_fmul_rn(float a, float b) {
#pragma clang fp contract(off)
  return a * b;
}

/* Lane exchange within a wave. Every lane of the wave must call it. */
UQ_DEV uq_u32 uq_lane_xor_u32(uq_u32 v, int mask) {
  return (uq_u32)__shfl_xor((int)v, mask);
}
UQ_DEV float uq_lane_xor_f32(float v, int mask) {
  return __shfl_xor(v, mask);
}

/* Programmatic dependent launch is NVIDIA's (prelude_nvrtc.hip): here the
 * reduce follows the decode in stream order. */
UQ_DEV void uq_grid_dependents() {}
UQ_DEV void uq_grid_wait() {}
