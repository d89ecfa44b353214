/* Prelude for NVRTC (NVIDIA, HIP's NVIDIA platform). NVRTC has no system
 * headers: everything the templates need is either predefined by NVRTC
 * (threadIdx, __syncthreads, __shfl_xor_sync, the CUDA math functions and
 * intrinsics) or defined here under a portable name. */
#define UQ_ROUTE_NVRTC 1

/* Helpers and constants a kernel does not use are expected: keep the
 * compile log for real problems. */
#pragma nv_diag_suppress 177

typedef unsigned char uq_u8;
typedef unsigned short uq_u16;
typedef unsigned int uq_u32;
typedef int uq_i32;
typedef long long uq_i64;
typedef unsigned long long uq_u64;

#define UQ_WAVE 32
#define UQ_DEV static __device__ __forceinline__
#define UQ_KERNEL extern "C" __global__
#define UQ_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define UQ_SHARED __shared__

UQ_DEV int uq_tid() { return (int)threadIdx.x; }
UQ_DEV int uq_bid_x() { return (int)blockIdx.x; }
UQ_DEV int uq_bid_y() { return (int)blockIdx.y; }
UQ_DEV int uq_bid_z() { return (int)blockIdx.z; }
UQ_DEV void uq_barrier() { __syncthreads(); }

UQ_DEV uq_u32 uq_f32_bits(float x) { return __float_as_uint(x); }
UQ_DEV float uq_bits_f32(uq_u32 u) { return __uint_as_float(u); }
UQ_DEV float uq_exp2(float x) { return exp2f(x); }
UQ_DEV float uq_rint(float x) { return rintf(x); }
UQ_DEV float uq_fmax(float a, float b) { return fmaxf(a, b); }

/* Explicitly rounded operations: NVRTC never contracts these into FMAs,
 * whatever --fmad says. The rotation and the encoders use only these. */
UQ_DEV float uq_fadd_rn(float a, float b) { return __fadd_rn(a, b); }
UQ_DEV float uq_fsub_rn(float a, float b) { return __fsub_rn(a, b); }
UQ_DEV float uq_fmul_rn(float a, float b) { return __fmul_rn(a, b); }

/* Lane exchange within a warp. Every lane of the warp must call it. */
UQ_DEV uq_u32 uq_lane_xor_u32(uq_u32 v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
UQ_DEV float uq_lane_xor_f32(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}

/* Programmatic dependent launch (sm_90 and newer; lib/codegen/target.c
 * uq__target_dependent_launch says when the launcher uses it). A decode
 * block lets the reduce be scheduled as soon as it starts (the reduce
 * then sits resident until the decode is done); the reduce waits for the
 * decode grid's completion and memory before reading anything. Both are
 * no-ops in a kernel launched the ordinary way. */
UQ_DEV void uq_grid_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
UQ_DEV void uq_grid_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
