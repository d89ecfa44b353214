/* Prelude for offline clang (AMD, -x hip -nogpulib -nogpuinc): no HIP
 * headers and no device library, so the HIP attributes are spelled out and
 * every operation is a builtin that the AMDGPU backend lowers by itself. */
#define UQ_ROUTE_CLANG 1

typedef unsigned char uq_u8;
typedef unsigned short uq_u16;
typedef unsigned int uq_u32;
typedef int uq_i32;
typedef long long uq_i64;
typedef unsigned long long uq_u64;

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))

#define UQ_WAVE 64
#define UQ_DEV static __device__ inline __attribute__((always_inline))
#define UQ_KERNEL extern "C" __global__
#define UQ_LAUNCH_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define UQ_SHARED __shared__

UQ_DEV int uq_tid() { return (int)__builtin_amdgcn_workitem_id_x(); }
UQ_DEV int uq_bid_x() { return (int)__builtin_amdgcn_workgroup_id_x(); }
UQ_DEV int uq_bid_y() { return (int)__builtin_amdgcn_workgroup_id_y(); }
UQ_DEV int uq_bid_z() { return (int)__builtin_amdgcn_workgroup_id_z(); }
UQ_DEV void uq_barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

UQ_DEV uq_u32 uq_f32_bits(float x) { return __builtin_bit_cast(uq_u32, x); }
UQ_DEV float uq_bits_f32(uq_u32 u) { return __builtin_bit_cast(float, u); }
UQ_DEV float uq_exp2(float x) { return __builtin_exp2f(x); }
UQ_DEV float uq_rint(float x) { return __builtin_rintf(x); }
UQ_DEV float uq_fmax(float a, float b) { return __builtin_fmaxf(a, b); }

/* Explicitly rounded operations. The rotation and the encoders contain no
 * multiply whose inexact result feeds an add, and these are compiled with
 * contraction off as well, so no FMA can change their bits. */
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

UQ_DEV int uq_lane_id() {
  return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
/* Lane exchange within a wave (ds_bpermute addresses lanes in bytes).
 * Every lane of the wave must call it. */
UQ_DEV uq_u32 uq_lane_xor_u32(uq_u32 v, int mask) {
  return (uq_u32)__builtin_amdgcn_ds_bpermute((uq_lane_id() ^ mask) << 2, (int)v);
}
UQ_DEV float uq_lane_xor_f32(float v, int mask) {
  return uq_bits_f32(uq_lane_xor_u32(uq_f32_bits(v), mask));
}

/* Programmatic dependent launch is NVIDIA's (prelude_nvrtc.hip): here the
 * reduce follows the decode in stream order. */
UQ_DEV void uq_grid_dependents() {}
UQ_DEV void uq_grid_wait() {}
